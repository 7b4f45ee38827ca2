"""Shared plotting plumbing."""

import numpy as np


def check_matplotlib(caller="plotting"):
    """Import matplotlib.pyplot, or raise an ImportError naming the ``plot`` extra.

    Parameters
    ----------
    caller : str, default="plotting"
        Who needs matplotlib, named in the error.

    Returns
    -------
    plt : module
        ``matplotlib.pyplot``.

    Examples
    --------
    >>> from geolearn.plotting import check_matplotlib
    >>> check_matplotlib("my display").__name__
    'matplotlib.pyplot'
    """
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


def axes_row(axes, n, caller, panel_size=(4, 4)):
    """``(figure, flat array of Axes)``: the given ones, or a new row of ``n`` panels."""
    if axes is None:
        plt = check_matplotlib(caller)
        _, axes = plt.subplots(1, n, figsize=(panel_size[0] * n, panel_size[1]), squeeze=False)
    axes = np.asarray(axes, dtype=object).ravel()
    return axes[0].figure, axes
