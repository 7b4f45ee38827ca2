"""Supervised disentanglement metrics (MIG, MIG-sup, DCIMIG, JEMMIG) and PSNR.

The four information metrics that the DAE-OG paper ("Orthogonality and graph divergence
losses promote disentanglement in generative models") reports, with the definitions of
the supervised-metric suite of Carbonneau et al. (ubisoft-laforge-disentanglement-metrics)
restated. Inputs are ground-truth factors ``V`` of shape ``(n, K)`` (discrete) and codes
``C`` of shape ``(n, J)`` (continuous). Each code column is min-max scaled to [0, 1] and
cut into ``n_bins`` equal-width bins (the value 1 goes to the last bin, a constant column
to bin 0); factors are used as given, or binned the same way with
``continuous_factors=True``. Entropies and mutual informations are plug-in estimates from
contingency tables, in bits; the tables of all pairs come from one ``np.bincount`` per
factor on combined indices, ``O(n K J)``.
"""

import functools

import numpy as np
from sklearn.metrics import make_scorer
from sklearn.utils import Bunch
from sklearn.utils.validation import check_array, check_consistent_length

from .._utils import check_choice, check_scalar_param, check_squares_finite, warn_user
from ..exceptions import GeolearnWarning

__all__ = [
    "ConstantFactorWarning",
    "dcimig",
    "disentanglement_report",
    "jemmig",
    "make_disentanglement_scorer",
    "mig",
    "mig_sup",
    "psnr",
]

_METRICS = ("mig", "mig_sup", "dcimig", "jemmig")
# combined indices held at once by the contingency counting (int64 each)
_CHUNK_ENTRIES = 2**23
# mutual informations closer than this (bits) count as tied
_TIE_TOL = 1e-12


class ConstantFactorWarning(GeolearnWarning):
    """A factor takes a single value (zero entropy): its term of a metric is skipped.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from geolearn.disentanglement.metrics import ConstantFactorWarning, mig
    >>> v = np.repeat(np.arange(4), 25)[:, None]
    >>> factors = np.c_[v, np.zeros(100)]                 # the second factor never varies
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     score = mig(factors, np.c_[v * 0.3, np.zeros(100)])
    >>> score, any(issubclass(w.category, ConstantFactorWarning) for w in caught)
    (1.0, True)
    """


# ------------------------------------------------------------------------- validation
def _check_n_bins(n_bins):
    return check_scalar_param(n_bins, "n_bins", kind="integer", low=2)


def _bin_columns(A, n_bins):
    """Column-wise min-max scaling to [0, 1] and ``n_bins`` equal-width bins (int indices).

    Bin ``b`` holds the scaled values in ``[b / n_bins, (b + 1) / n_bins)``; the value 1
    goes to the last bin; a constant column goes to bin 0.
    """
    low, high = A.min(axis=0), A.max(axis=0)
    span = high - low
    constant = span <= 0
    scaled = (A - low) / np.where(constant, 1.0, span)
    bins = np.minimum(np.floor(scaled * n_bins), n_bins - 1).astype(np.intp)
    bins[:, constant] = 0
    return bins


def _check_codes(codes):
    C = np.asarray(codes)
    if C.dtype.kind not in "biuf":
        raise ValueError(f"codes must be a numeric array of shape (n_samples, n_codes); got "
                         f"dtype {C.dtype}.")
    C = C.astype(np.float64, copy=False)
    if C.ndim == 1:
        C = C[:, None]
    if C.ndim != 2:
        raise ValueError(f"codes must be 2-D (n_samples, n_codes); got shape {C.shape}.")
    if np.isnan(C).any():
        raise ValueError("codes contain NaN; the metrics need a finite code for every sample.")
    if not np.isfinite(C).all():
        raise ValueError("codes contain infinity; the metrics need finite codes (min-max "
                         "scaling is undefined otherwise).")
    return C


def _check_factors(factors, continuous_factors, n_bins):
    """Factors as 0-based integer levels ``(n, K)`` (binned when ``continuous_factors``)."""
    V = np.asarray(factors)
    if V.ndim == 1:
        V = V[:, None]
    if V.ndim != 2:
        raise ValueError(f"factors must be 2-D (n_samples, n_factors); got shape {V.shape}.")
    if V.dtype.kind not in "biuf":
        raise ValueError(f"factors must be numeric (integer levels, or continuous values "
                         f"with continuous_factors=True); got dtype {V.dtype}.")
    if V.dtype.kind == "f" and not np.isfinite(V).all():
        raise ValueError("factors contain NaN or infinity.")
    if continuous_factors:
        return _bin_columns(V.astype(np.float64), n_bins)
    if V.dtype.kind == "f" and np.any(V != np.round(V)):
        raise ValueError("factors must hold integer levels when continuous_factors=False; "
                         "got non-integer values. Pass continuous_factors=True to bin "
                         "continuous factors like the codes.")
    levels = np.empty(V.shape, dtype=np.intp)
    for i in range(V.shape[1]):
        levels[:, i] = np.unique(V[:, i], return_inverse=True)[1].ravel()
    return levels


def _check_inputs(factors, codes, n_bins, continuous_factors, *, min_factors=1, min_codes=1,
                  what="this metric"):
    n_bins = _check_n_bins(n_bins)
    if not isinstance(continuous_factors, (bool, np.bool_)):
        raise ValueError(f"continuous_factors must be True or False; got "
                         f"{continuous_factors!r}.")
    C = _check_codes(codes)
    V = _check_factors(factors, bool(continuous_factors), n_bins)
    check_consistent_length(V, C)
    if len(C) < 2:
        raise ValueError(f"factors and codes need at least 2 samples; got {len(C)}.")
    if V.shape[1] < min_factors:
        raise ValueError(f"{what} needs at least {min_factors} factors (columns of factors); "
                         f"got {V.shape[1]}.")
    if C.shape[1] < min_codes:
        raise ValueError(f"{what} needs at least {min_codes} codes (columns of codes); got "
                         f"{C.shape[1]}.")
    return V, _bin_columns(C, n_bins), n_bins


# ---------------------------------------------------------------- information tables
def _entropy_bits(counts, n, axis=-1):
    p = counts / n
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    return -terms.sum(axis=axis)


def _information_tables(V, Cb, n_bins):
    """Plug-in ``I(v_i; c_j)``, ``H(v_i)``, ``H(c_j)`` and ``H(v_i, c_j)`` in bits.

    One ``np.bincount`` per factor (and chunk of codes) on the combined index
    ``j * L_i * B + v_i * B + c_j`` counts all ``(v_i, c_j)`` tables at once.
    """
    n, K = V.shape
    J = Cb.shape[1]
    B = n_bins
    H_code = _entropy_bits(
        np.stack([np.bincount(Cb[:, j], minlength=B) for j in range(J)]), n)
    H_factor = np.empty(K)
    H_joint = np.empty((K, J))
    for i in range(K):
        L = int(V[:, i].max()) + 1
        H_factor[i] = _entropy_bits(np.bincount(V[:, i], minlength=L), n)
        step = max(1, _CHUNK_ENTRIES // n)
        for lo in range(0, J, step):
            hi = min(J, lo + step)
            idx = (V[:, i, None] * B + Cb[:, lo:hi]) + np.arange(hi - lo) * (L * B)
            counts = np.bincount(idx.ravel(), minlength=(hi - lo) * L * B)
            H_joint[i, lo:hi] = _entropy_bits(counts.reshape(hi - lo, L * B), n)
    MI = H_factor[:, None] + H_code[None, :] - H_joint
    # plug-in identities hold exactly; clip the rounding of the sums
    MI = np.clip(MI, 0.0, np.minimum(H_factor[:, None], H_code[None, :]))
    return MI, H_factor, H_code, H_joint


def _constant_factors(H_factor, what):
    constant = H_factor <= 0
    if constant.all():
        raise ValueError("every factor is constant (zero entropy); the disentanglement "
                         "metrics need at least one factor that varies.")
    if constant.any():
        warn_user(f"factor(s) {np.flatnonzero(constant).tolist()} are constant (zero "
                  f"entropy); their terms are skipped in {what}.", ConstantFactorWarning)
    return constant


def _top_two(A, axis):
    """Largest and second largest entries along ``axis``."""
    S = np.sort(A, axis=axis)
    return np.take(S, -1, axis=axis), np.take(S, -2, axis=axis)


def _normalised(MI, H_factor, H_code, normalization):
    """``I_ij / H(v_i)`` ("factor") or ``I_ij / H(c_j)`` ("code"); 0 where the entropy is 0."""
    H = H_factor[:, None] if normalization == "factor" else H_code[None, :]
    H = np.broadcast_to(H, MI.shape)
    return np.divide(MI, H, out=np.zeros_like(MI), where=H > 0)


def _mig(MI, H_factor, H_code, constant, normalization):
    first, second = _top_two(_normalised(MI, H_factor, H_code, normalization), axis=1)
    return float(np.mean((first - second)[~constant]))


def _mig_sup(MI, H_factor, H_code, normalization):
    first, second = _top_two(_normalised(MI, H_factor, H_code, normalization), axis=0)
    return float(np.mean(first - second))


def _dcimig(MI, H_factor):
    first, second = _top_two(MI, axis=0)
    best = np.argmax(MI, axis=0)
    credit = np.zeros_like(MI)
    credit[best, np.arange(MI.shape[1])] = first - second
    return float(credit.max(axis=1).sum() / H_factor.sum())


def _jemmig(MI, H_factor, H_joint, constant, n_bins):
    first, second = _top_two(MI, axis=1)
    # j* = the code of largest MI; among codes tied for it (to rounding), the one of least
    # joint entropy, so that the score does not depend on the order of the codes
    tied = MI >= first[:, None] - _TIE_TOL
    joint_best = np.where(tied, H_joint, np.inf).min(axis=1)
    gap = joint_best - first + second
    score = 1.0 - gap / (H_factor + np.log2(n_bins))
    return float(np.mean(score[~constant]))


# ----------------------------------------------------------------------- public metrics
_PARAMS_DOC = """\
    factors : array-like of shape (n_samples, n_factors)
        Ground-truth factors: integer levels (any integers; floats holding integers are
        accepted), or continuous values with ``continuous_factors=True``.
    codes : array-like of shape (n_samples, n_codes)
        Continuous codes (e.g. ``estimator.transform(X)``); no NaN or infinity."""


def mig(factors, codes, n_bins=10, normalization="factor", continuous_factors=False):
    """Mutual information gap: mean over factors of the gap between their two best codes.

    ``MIG = (1/K) sum_i (Itilde_i,(1) - Itilde_i,(2))`` where ``Itilde_i,(1) >=
    Itilde_i,(2)`` are the two largest normalised mutual informations of factor ``i`` with
    the codes (Chen et al., 2018). Mutual informations are plug-in estimates in bits
    after binning each code column into ``n_bins`` equal-width bins of its range.

    Parameters
    ----------
%(params)s
    n_bins : int, default=10
        Equal-width bins of each min-max scaled code column (and factor column when
        ``continuous_factors=True``); at least 2.
    normalization : {"factor", "code"}, default="factor"
        ``"factor"`` divides ``I(v_i; c_j)`` by ``H(v_i)`` (Chen et al.'s definition);
        ``"code"`` divides by ``H(c_j)`` (what the ubisoft-laforge suite computes; a
        constant code then has normalised MI 0).
    continuous_factors : bool, default=False
        Bin the factors like the codes instead of using them as levels.

    Returns
    -------
    score : float in [0, 1]
        A constant factor (zero entropy) is left out of the mean, with a
        :class:`ConstantFactorWarning`.

    Raises
    ------
    ValueError
        Fewer than 2 codes, NaN or infinity in ``codes``, non-integer ``factors`` with
        ``continuous_factors=False``, every factor constant, or a bad parameter.

    See Also
    --------
    mig_sup, dcimig, jemmig, disentanglement_report

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.disentanglement.metrics import mig
    >>> v = np.repeat(np.arange(4), 25)[:, None]          # one factor, 4 levels
    >>> noise = np.random.RandomState(0).uniform(size=(100, 1))
    >>> mig(v, np.c_[v * 0.3, np.zeros(100)])             # code 0 copies the factor
    1.0
    >>> round(mig(v, np.c_[noise, noise]), 6)             # two equally informative codes
    0.0
    """
    check_choice(normalization, "normalization", ("factor", "code"))
    V, Cb, B = _check_inputs(factors, codes, n_bins, continuous_factors, min_codes=2,
                             what="mig")
    MI, H_factor, H_code, _ = _information_tables(V, Cb, B)
    constant = _constant_factors(H_factor, "mig")
    return _mig(MI, H_factor, H_code, constant, normalization)


def mig_sup(factors, codes, n_bins=10, normalization="factor", continuous_factors=False):
    """MIG-sup: mean over codes of the gap between their two best factors.

    ``MIG-sup = (1/J) sum_j (Itilde_(1),j - Itilde_(2),j)`` with the two largest
    normalised mutual informations of code ``j`` with the factors (Li et al., 2020): a code
    that mixes several factors scores low, a code that carries no information scores 0.

    Parameters
    ----------
%(params)s
    n_bins : int, default=10
    normalization : {"factor", "code"}, default="factor"
        ``"factor"``: ``I(v_i; c_j) / H(v_i)``; ``"code"``: ``I(v_i; c_j) / H(c_j)``.
    continuous_factors : bool, default=False

    Returns
    -------
    score : float in [0, 1]
        A constant factor has normalised MI 0 with every code (its row is skipped in
        effect), with a :class:`ConstantFactorWarning`.

    Raises
    ------
    ValueError
        Fewer than 2 factors, NaN or infinity in ``codes``, non-integer ``factors`` with
        ``continuous_factors=False``, every factor constant, or a bad parameter.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.disentanglement.metrics import mig_sup
    >>> V = np.array([[a, b] for a in range(3) for b in range(4)] * 5)
    >>> mig_sup(V, V * 1.0)                                # each code copies one factor
    1.0
    >>> mig_sup(V, np.c_[V[:, 0] * 4 + V[:, 1], V[:, 0] * 4 + V[:, 1]]) < 0.5  # mixed
    True
    """
    check_choice(normalization, "normalization", ("factor", "code"))
    V, Cb, B = _check_inputs(factors, codes, n_bins, continuous_factors, min_factors=2,
                             what="mig_sup")
    MI, H_factor, H_code, _ = _information_tables(V, Cb, B)
    _constant_factors(H_factor, "mig_sup")
    return _mig_sup(MI, H_factor, H_code, normalization)


def dcimig(factors, codes, n_bins=10, continuous_factors=False):
    """DCIMIG: per-code information gaps credited to their best factor, over total entropy.

    For each code ``j`` the gap ``g_j = I_(1),j - I_(2),j`` between its two largest
    (unnormalised) mutual informations with the factors is credited to its best factor;
    ``R_i`` is the largest gap credited to factor ``i`` (0 if none), and
    ``DCIMIG = sum_i R_i / sum_i H(v_i)`` (Sepliarskaia et al., 2019).

    Parameters
    ----------
%(params)s
    n_bins : int, default=10
    continuous_factors : bool, default=False

    Returns
    -------
    score : float in [0, 1]
        A constant factor adds 0 to both sums (skipped), with a
        :class:`ConstantFactorWarning`.

    Raises
    ------
    ValueError
        Fewer than 2 factors, NaN or infinity in ``codes``, non-integer ``factors`` with
        ``continuous_factors=False``, every factor constant, or a bad parameter.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.disentanglement.metrics import dcimig
    >>> V = np.array([[a, b] for a in range(3) for b in range(4)] * 5)
    >>> dcimig(V, V[:, ::-1] * 2.0)
    1.0
    """
    V, Cb, B = _check_inputs(factors, codes, n_bins, continuous_factors, min_factors=2,
                             what="dcimig")
    MI, H_factor, _, _ = _information_tables(V, Cb, B)
    _constant_factors(H_factor, "dcimig")
    return _dcimig(MI, H_factor)


def jemmig(factors, codes, n_bins=10, continuous_factors=False):
    """JEMMIG: joint-entropy minus mutual-information gap, normalised (Do and Tran, 2020).

    ``JEMMIG = (1/K) sum_i [1 - (H(v_i, c_j*) - I(v_i; c_j*) + I(v_i; c_j')) /
    (H(v_i) + log2 n_bins)]`` where ``j*`` and ``j'`` are the codes with the largest and
    second largest ``I(v_i; c_j)`` (among codes tied for the largest, ``j*`` is the one of
    least joint entropy, so the score does not depend on the order of the codes). Unlike
    MIG it also penalises a best code that carries more than its factor
    (``H(c_j* | v_i) > 0``).

    Parameters
    ----------
%(params)s
    n_bins : int, default=10
    continuous_factors : bool, default=False

    Returns
    -------
    score : float in [0, 1]
        A constant factor is left out of the mean, with a :class:`ConstantFactorWarning`.

    Raises
    ------
    ValueError
        Fewer than 2 codes, NaN or infinity in ``codes``, non-integer ``factors`` with
        ``continuous_factors=False``, every factor constant, or a bad parameter.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.disentanglement.metrics import jemmig
    >>> V = np.array([[a, b] for a in range(3) for b in range(4)] * 5)
    >>> jemmig(V, V * 1.0)
    1.0
    """
    V, Cb, B = _check_inputs(factors, codes, n_bins, continuous_factors, min_codes=2,
                             what="jemmig")
    MI, H_factor, _, H_joint = _information_tables(V, Cb, B)
    constant = _constant_factors(H_factor, "jemmig")
    return _jemmig(MI, H_factor, H_joint, constant, B)


def disentanglement_report(factors, codes, n_bins=10, normalization="factor",
                           continuous_factors=False):
    """All four metrics from one set of contingency tables.

    Parameters
    ----------
%(params)s
    n_bins : int, default=10
    normalization : {"factor", "code"}, default="factor"
        Used by ``mig`` and ``mig_sup`` (``dcimig`` and ``jemmig`` are not normalised per
        pair); say which one a reported number used.
    continuous_factors : bool, default=False

    Returns
    -------
    report : Bunch
        ``{"mig": float, "mig_sup": float, "dcimig": float, "jemmig": float}``, each
        equal to the function of that name with the same arguments.

    Raises
    ------
    ValueError
        Fewer than 2 factors or 2 codes, or any error of the four metrics.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.disentanglement.metrics import disentanglement_report
    >>> V = np.array([[a, b] for a in range(3) for b in range(4)] * 5)
    >>> disentanglement_report(V, V * 1.0)
    {'mig': 1.0, 'mig_sup': 1.0, 'dcimig': 1.0, 'jemmig': 1.0}
    """
    check_choice(normalization, "normalization", ("factor", "code"))
    V, Cb, B = _check_inputs(factors, codes, n_bins, continuous_factors, min_factors=2,
                             min_codes=2, what="disentanglement_report")
    MI, H_factor, H_code, H_joint = _information_tables(V, Cb, B)
    constant = _constant_factors(H_factor, "disentanglement_report")
    return Bunch(mig=_mig(MI, H_factor, H_code, constant, normalization),
                 mig_sup=_mig_sup(MI, H_factor, H_code, normalization),
                 dcimig=_dcimig(MI, H_factor),
                 jemmig=_jemmig(MI, H_factor, H_joint, constant, B))


for _f in (mig, mig_sup, dcimig, jemmig, disentanglement_report):
    _f.__doc__ = _f.__doc__ % {"params": _PARAMS_DOC}


# ------------------------------------------------------------------------------- PSNR
def psnr(X, X_rec, data_range=1.0):
    """Peak signal-to-noise ratio in dB, the mean of per-image values.

    ``PSNR = mean_i 10 log10(data_range^2 / MSE_i)`` with ``MSE_i`` the mean squared error
    of image ``i`` over all its pixels and channels (images are flattened). This is the
    paper's (Table 2) reading: the mean of per-image PSNRs, not the PSNR of the mean MSE.

    Parameters
    ----------
    X, X_rec : array-like of shape (n_samples, ...)
        Reference and reconstructed images, flat ``(n, C*H*W)`` or ``(n, C, H, W)``; the
        same shape. Values are expected in ``[0, data_range]``.
    data_range : float, default=1.0
        Peak value of the images.

    Returns
    -------
    psnr : float
        In dB. An image reconstructed exactly (``MSE_i = 0``) has infinite PSNR, so the
        mean is ``inf`` when any image is exact (as ``skimage.metrics.
        peak_signal_noise_ratio`` gives for one exact image); no warning is raised.

    Raises
    ------
    ValueError
        Shapes that differ or are not ``(n_samples, ...)``, NaN or infinity, no samples,
        or ``data_range <= 0``.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.disentanglement.metrics import psnr
    >>> X = np.full((2, 3, 4, 4), 0.5)
    >>> round(psnr(X, X + 0.1), 6)                       # MSE 0.01 everywhere
    20.0
    >>> psnr(X, X)
    inf
    """
    data_range = check_scalar_param(data_range, "data_range", kind="real", low=0,
                                    closed="neither")
    X = check_array(X, allow_nd=True, dtype=np.float64, input_name="X")
    X_rec = check_array(X_rec, allow_nd=True, dtype=np.float64, input_name="X_rec")
    if X.shape != X_rec.shape:
        raise ValueError(f"X and X_rec must have the same shape; got {X.shape} and "
                         f"{X_rec.shape}.")
    X, X_rec = X.reshape(len(X), -1), X_rec.reshape(len(X_rec), -1)
    check_squares_finite(X, "X", what="squared errors")
    check_squares_finite(X_rec, "X_rec", what="squared errors")
    mse = np.mean((X - X_rec) ** 2, axis=1)
    with np.errstate(divide="ignore"):
        values = 10.0 * np.log10(data_range**2 / mse)
    return float(np.mean(values))


# ------------------------------------------------------------------------------ scorer
def _disentanglement_score(y_true, codes, *, metric, factors, **params):
    """``metric(factors, codes)``, the factors being ``y_true`` or the fixed ``factors``."""
    if y_true is None:
        if factors is None:
            raise ValueError(
                "the disentanglement scorer needs the ground-truth factors: pass them "
                "as y (e.g. GridSearchCV(...).fit(X, factors), cross_val_score(est, X, "
                "factors, scoring=scorer)) or as make_disentanglement_scorer(..., "
                "factors=...) for a fixed X.")
        y_true = factors
    codes = np.asarray(codes)
    codes = codes.reshape(len(codes), -1)
    if len(np.asarray(y_true)) != len(codes):
        raise ValueError(f"the factors have {len(np.asarray(y_true))} samples but the codes "
                         f"of X have {len(codes)}; factors given to "
                         "make_disentanglement_scorer must match the X being scored "
                         "(in cross-validation pass the factors as y instead).")
    if metric == "all":
        return disentanglement_report(y_true, codes, **params)
    func = {"mig": mig, "mig_sup": mig_sup, "dcimig": dcimig, "jemmig": jemmig}
    return func[metric](y_true, codes, **params)


def _report_score(estimator, X, y=None, *, response_method, **kwargs):
    """The dict of :func:`disentanglement_report`: a multi-metric scorer callable."""
    if not hasattr(estimator, response_method):
        raise AttributeError(f"{type(estimator).__name__} has none of the following "
                             f"attributes: {response_method}.")
    codes = getattr(estimator, response_method)(X)
    return _disentanglement_score(y, codes, metric="all", **kwargs)


def make_disentanglement_scorer(metric="mig", *, factors=None, n_bins=10,
                                normalization="factor", continuous_factors=False,
                                response_method="transform"):
    """A scorer ``metric(y, estimator.transform(X))`` for GridSearchCV and cross-validation.

    The codes are what the fitted estimator's ``transform`` (or ``response_method``)
    returns for ``X``; the ground-truth factors are ``y``, an ``(n_samples, n_factors)``
    array of integer levels (multi-output ``y``), so ``search.fit(X, factors)`` scores each
    held-out fold against its own factors. Estimators that ignore ``y`` in ``fit``
    (autoencoders, PCA, ...) are fitted as usual; greater is better.

    Parameters
    ----------
    metric : {"mig", "mig_sup", "dcimig", "jemmig", "all"}, default="mig"
        ``"all"`` returns the dict of :func:`disentanglement_report` (a multi-metric
        scorer for ``cross_validate`` and ``GridSearchCV(..., refit="mig")``).
    factors : array-like of shape (n_samples, n_factors), default=None
        Factors of the one ``X`` that will be scored, used when the scorer is called with
        ``y=None`` (e.g. ``scorer(fitted_estimator, X_test, None)`` for an estimator that
        must not see ``y``); in cross-validation pass the factors as ``y`` instead.
    n_bins : int, default=10
    normalization : {"factor", "code"}, default="factor"
        Used by "mig", "mig_sup" and "all".
    continuous_factors : bool, default=False
    response_method : str, default="transform"
        Name of the estimator's method that maps ``X`` to codes (e.g. ``"encode"``).

    Returns
    -------
    scorer : callable ``scorer(estimator, X, y) -> float`` (a dict for "all")
        :func:`sklearn.metrics.make_scorer` of the metric with ``response_method``
        (for "all", a scorer callable returning the report's dict).

    Raises
    ------
    ValueError
        An unknown metric or bad parameter (checked here); at call time, no factors
        (``y`` and ``factors`` both None), or factors and codes of different lengths.
    AttributeError
        At call time, an estimator without ``response_method``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.decomposition import PCA
    >>> from sklearn.model_selection import cross_val_score
    >>> from geolearn.disentanglement.metrics import make_disentanglement_scorer
    >>> rng = np.random.RandomState(0)
    >>> V = rng.randint(0, 4, size=(300, 2))                   # two factors
    >>> X = np.c_[V[:, 0], 3 * V[:, 1], rng.normal(0, 0.01, (300, 2))]
    >>> scorer = make_disentanglement_scorer("mig")
    >>> scores = cross_val_score(PCA(n_components=2), X, V, scoring=scorer, cv=3)
    >>> bool(scores.min() > 0.9)                               # PCA finds the factor axes
    True
    """
    check_choice(metric, "metric", (*_METRICS, "all"))
    if not isinstance(response_method, str):
        raise ValueError(f"response_method must be the name of a method; got "
                         f"{response_method!r}.")
    _check_n_bins(n_bins)
    if not isinstance(continuous_factors, (bool, np.bool_)):
        raise ValueError(f"continuous_factors must be True or False; got "
                         f"{continuous_factors!r}.")
    params = {"n_bins": n_bins, "continuous_factors": continuous_factors}
    if metric in ("mig", "mig_sup", "all"):
        check_choice(normalization, "normalization", ("factor", "code"))
        params["normalization"] = normalization
    if factors is not None:
        factors = np.asarray(factors)
    if metric == "all":  # make_scorer's scorers return numbers, not dicts
        return functools.partial(_report_score, response_method=response_method,
                                 factors=factors, **params)
    # a one-method tuple: make_scorer takes any method name in a tuple, only three alone
    return make_scorer(_disentanglement_score, response_method=(response_method,),
                       metric=metric, factors=factors, **params)

