"""Progress bars for long work: one tqdm bar, shown only when the user asks (``verbose``)."""


def progress_bar(iterable=None, *, total=None, desc=None, unit="it", verbose=0):
    """A tqdm bar over ``iterable`` (or to ``update`` by hand), disabled unless ``verbose``.

    A disabled tqdm passes the items through, so callers need no second code path.

    Parameters
    ----------
    iterable : iterable, optional
    total : int, optional
        Number of items, when ``iterable`` has no length (a generator).
    desc : str, optional
        What the bar counts, shown before it.
    unit : str, default="it"
    verbose : int, default=0
        ``> 0`` shows the bar (on stderr).

    Returns
    -------
    bar : tqdm.tqdm
    """
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, disable=not verbose)
