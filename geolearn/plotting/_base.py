"""Shared plotting plumbing."""


def check_matplotlib(caller="plotting"):
    """Import matplotlib.pyplot, or raise an ImportError naming the ``plot`` extra."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            f"{caller} needs matplotlib: pip install \"geolearn[plot]\"."
        ) from exc
    return plt


def axes_or_new(ax=None, **subplots_kw):
    """Return ``(figure, ax)``: the given axes' figure, or a new figure and axes."""
    plt = check_matplotlib()
    if ax is None:
        fig, ax = plt.subplots(**subplots_kw)
        return fig, ax
    return ax.figure, ax
