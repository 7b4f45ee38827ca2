"""What the demo sections share: matplotlib, headless, when plots are asked for."""


def headless_pyplot(outdir):
    """``matplotlib.pyplot`` on the non-interactive Agg backend, or None.

    None when ``outdir`` is None (no plots asked for) or matplotlib is not installed.
    """
    if outdir is None:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt
