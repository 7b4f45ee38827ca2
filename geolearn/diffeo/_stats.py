"""Per-probe statistics of a block of probes: the map step of a blockwise ``R_f``."""

from itertools import pairwise

import numpy as np


class StabilityStats:
    """What :class:`DiffeoStability` measured on a block of consecutive probe rows.

    The map step of a blockwise measurement: :meth:`DiffeoStability.partial_stats`
    makes one per block of probes, :meth:`merge` joins blocks, and
    :meth:`DiffeoStability.stability_from_stats` reduces them to the Bunch that
    :meth:`DiffeoStability.stability` gives for all the probes at once. A block
    holds only per-probe quantities (the medians and the pair normaliser need
    every probe, so they wait for the reduce step), which makes the blockwise
    result equal to the in-memory one.

    Parameters
    ----------
    row_offset : int
        Index of the block's first probe among all the probes.
    outputs : dict of str to ndarray of shape (n, K)
        ``f(x)`` at the block's probes, per probed layer (``"output"`` first).
    num, den : dict of str to ndarray of shape (n_repeats, n_diffeo, n) or \
(n_repeats, n_diffeo, n, K)
        Squared changes of ``f`` under deformation and under noise, per probe
        (per unit for ``average="median_per_unit"``).
    sq_disp : ndarray of shape (n_repeats, n_diffeo, n)
        Mean squared pixel displacement of each sampled field.
    non_diffeo : ndarray of shape (n_repeats, n_diffeo, n)
        Whether each sampled field is not a diffeomorphism (``max Xi >= 1``).
    settings : tuple
        The measurement's settings; blocks of one measurement share them.
    entropy : int
        The seed drawn from ``random_state``; blocks of one measurement share it.

    Attributes
    ----------
    n_samples : int
        Probes in the block.

    See Also
    --------
    DiffeoStability.partial_stats : make the statistics of a block.
    DiffeoStability.stability_from_stats : reduce them to ``R_f``, ``D_f``, ``G_f``.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.diffeo import DiffeoStability
    >>> X = np.random.default_rng(0).random((120, 1, 12, 12))
    >>> net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(144, 3)).double()
    >>> est = DiffeoStability(net, c=2, batch_size=20, random_state=0).fit(X)
    >>> blocks = [est.partial_stats(X[i:i + 40], row_offset=i) for i in (80, 0, 40)]
    >>> merged = blocks[0].merge(*blocks[1:])
    >>> merged.row_offset, merged.n_samples
    (0, 120)
    >>> est.stability_from_stats(merged).R == est.stability(X).R
    True
    """

    def __init__(self, row_offset, outputs, num, den, sq_disp, non_diffeo, settings, entropy):
        self.row_offset = row_offset
        self.outputs = outputs
        self.num = num
        self.den = den
        self.sq_disp = sq_disp
        self.non_diffeo = non_diffeo
        self.settings = settings
        self.entropy = entropy

    @property
    def n_samples(self):
        """Probes in the block."""
        return len(self.outputs["output"])

    def __repr__(self):
        return (f"StabilityStats(rows {self.row_offset}..{self.row_offset + self.n_samples}, "
                f"layers={list(self.outputs)})")

    def merge(self, *others):
        """These statistics and ``others`` as one block, in row order.

        Parameters
        ----------
        *others : StabilityStats
            Blocks of the same measurement, in any order; together with this
            one they must cover consecutive rows, without overlap.

        Returns
        -------
        merged : StabilityStats
            The statistics of the rows of all the blocks.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.linear_model import LinearRegression
        >>> from geolearn.diffeo import DiffeoStability
        >>> X = np.random.default_rng(0).random((60, 144))
        >>> est = DiffeoStability(LinearRegression(), image_shape=(12, 12), c=2,
        ...                       random_state=0).fit(X, X.sum(1))
        >>> a, b = est.partial_stats(X[:25]), est.partial_stats(X[25:], row_offset=25)
        >>> b.merge(a).n_samples
        60
        """
        for s in others:
            if not isinstance(s, StabilityStats):
                raise TypeError(f"merge takes StabilityStats; got {type(s).__name__}.")
        blocks = sorted((self, *others), key=lambda s: s.row_offset)
        for s in blocks:
            if s.settings != self.settings or s.entropy != self.entropy:
                raise ValueError(
                    "the blocks come from different measurements (other settings, or other "
                    "random draws): measure every block with the same fitted DiffeoStability "
                    "and an int random_state.")
        for prev, s in pairwise(blocks):
            end = prev.row_offset + prev.n_samples
            if s.row_offset != end:
                what = "overlap" if s.row_offset < end else "leave a gap"
                raise ValueError(f"the blocks {what}: one ends at row {end}, the next starts "
                                 f"at row_offset={s.row_offset}; give each block the index "
                                 "of its first row among all the probes.")

        def cat(dicts, axis):
            return {name: np.concatenate([d[name] for d in dicts], axis=axis)
                    for name in dicts[0]}

        return StabilityStats(
            blocks[0].row_offset, cat([s.outputs for s in blocks], 0),
            cat([s.num for s in blocks], 2), cat([s.den for s in blocks], 2),
            np.concatenate([s.sq_disp for s in blocks], axis=2),
            np.concatenate([s.non_diffeo for s in blocks], axis=2), self.settings, self.entropy)
