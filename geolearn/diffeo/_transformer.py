"""Maximum-entropy deformations as data augmentation: a transformer and a torch module."""

import numbers

import numpy as np
import torch
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils import check_images, check_scalar_param, row_seeds, to_tensor, warn_user
from ._exceptions import StabilityWarning
from ._images import check_fitted_shape, image_side, tabular_check_failures
from ._sampler import (
    _check_c,
    _check_n,
    _coefficients,
    _default_range,
    _fields_from_coefficients,
    _max_xi_from_coefficients,
    _remap,
    temperature_for_delta,
)

_MAX_REDRAWS = 20


def _check_sampling(T, c, delta, delta_formula, p, n=None):
    """Validate the sampling parameters shared by the transformer and the module."""
    if isinstance(c, tuple):
        if len(c) != 2 or c[0] > c[1]:
            raise ValueError(f"c must be an integer or a range (c_min, c_max); got {c!r}.")
        for ci in c:
            _check_c(ci, n)
    else:
        _check_c(c, n)
    if isinstance(T, tuple):
        ok = len(T) == 2 and all(isinstance(t, numbers.Real) and np.isfinite(t) for t in T)
        if not ok or not 0 < T[0] <= T[1]:
            raise ValueError(f"T range must be (low, high) with 0 < low <= high; got {T!r}.")
    elif T is not None and not isinstance(T, str):
        if not isinstance(T, numbers.Real) or not np.isfinite(T) or T < 0:
            raise ValueError(f"T must be None, 'auto', a number >= 0 or a range; got {T!r}.")
    elif isinstance(T, str) and T != "auto":
        raise ValueError(f"T must be None, 'auto', a number >= 0 or a range; got {T!r}.")
    if T is None and (not isinstance(delta, numbers.Real) or not delta > 0):
        raise ValueError(f"delta must be a number > 0 (pixels); got {delta!r}.")
    if delta_formula not in ("exact", "asymptotic"):
        raise ValueError(f"delta_formula must be 'exact' or 'asymptotic'; got {delta_formula!r}.")
    if not isinstance(p, numbers.Real) or not 0 <= p <= 1:
        raise ValueError(f"p must be a probability in [0, 1]; got {p!r}.")


def _range_for(n, c):
    """``T_range_``: for a range of cut-offs, that of the largest (the most restrictive T_max)."""
    return _default_range(n, max(c) if isinstance(c, tuple) else c)


def _draw_fields(rngs, n, *, T, c, delta, delta_formula, reject_non_diffeo, device):
    """One pixel displacement field per generator of ``rngs``, ``(len(rngs), 2, n, n)`` float64.

    Each field is drawn from its own generator (cut-off, temperature, then the mode
    amplitudes), so it does not depend on the other fields of the batch.
    """
    c_max = max(c) if isinstance(c, tuple) else c
    cs = np.array([g.integers(c[0], c[1] + 1) if isinstance(c, tuple) else c for g in rngs])
    if T is None:
        Ts = np.array([temperature_for_delta(delta, ci, n, delta_formula) for ci in cs])
    elif isinstance(T, str):  # "auto": log-uniform in the range of each image's cut-off
        Ts = np.array([np.exp(g.uniform(*np.log(_default_range(n, ci))))
                       for g, ci in zip(rngs, cs)])
    elif isinstance(T, tuple):
        Ts = np.array([np.exp(g.uniform(np.log(T[0]), np.log(T[1]))) for g in rngs])
    else:
        Ts = np.full(len(rngs), float(T))
    z = np.stack([g.standard_normal((2, c_max, c_max)) for g in rngs])
    if reject_non_diffeo:
        for _ in range(_MAX_REDRAWS):
            bad = _max_xi_from_coefficients(_coefficients(z, Ts, cs), n).numpy() >= 1
            if not bad.any():
                break
            for i in np.flatnonzero(bad):
                z[i] = rngs[i].standard_normal((2, c_max, c_max))
        else:
            warn_user(f"{int(bad.sum())} fields are still not diffeomorphisms after "
                      f"{_MAX_REDRAWS} redraws: lower T or c, or upsample the images.",
                      StabilityWarning)
    return _fields_from_coefficients(_coefficients(z, Ts, cs, device=device), n)


def _deform_rows(X, rngs, params):
    """Deform each image of the tensor ``X`` (N, C, n, n) with probability ``params.p``.

    ``rngs`` holds one generator per image: whether and how image ``i`` is deformed
    depends on ``rngs[i]`` only. ``params`` is a :class:`MaxEntropyDiffeo` or a
    :class:`DiffeoAugment`: both hold the sampling parameters under the same names.
    """
    rows = [i for i, g in enumerate(rngs) if params.p >= 1 or g.uniform() < params.p]
    out = X.clone()
    if rows:
        fields = _draw_fields([rngs[i] for i in rows], X.shape[-1], T=params.T, c=params.c,
                              delta=params.delta, delta_formula=params.delta_formula,
                              reject_non_diffeo=params.reject_non_diffeo, device=X.device)
        idx = torch.as_tensor(rows, device=X.device)
        out[idx] = _remap(X[idx], fields, params.interp)
    return out


def _generators(seeds):
    return [np.random.default_rng(seed) for seed in seeds]


class MaxEntropyDiffeo(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Deform images by random smooth diffeomorphisms of the maximum-entropy ensemble.

    Each image gets its own field (Petrini et al., Eq. 2) at temperature ``T``
    and cut-off ``c``. By default only ``fit_transform`` deforms, so in a
    Pipeline the deformations augment training data while predictions are
    made on clean images.

    Parameters
    ----------
    image_shape : tuple of int, optional
        ``(n, n)`` or ``(C, n, n)``; required for flat ``X``.
    T : float, (low, high), "auto" or None, default=None
        Temperature; a range draws log-uniformly per image; ``"auto"`` draws
        log-uniformly in :func:`temperature_range` of each image's ``c``;
        ``None`` uses ``delta``.
    c : int or (c_min, c_max), default=3
        Cut-off; a range draws an integer uniformly per image.
    delta : float, default=1.0
        Typical displacement in pixels when ``T`` is None.
    delta_formula : {"exact", "asymptotic"}, default="exact"
    interp : {"bilinear", "gaussian"}, default="bilinear"
    p : float, default=1.0
        Probability that a given image is deformed.
    apply_on : {"fit", "always"}, default="fit"
        ``"fit"``: ``fit_transform`` deforms and ``transform`` returns a copy of
        ``X``; ``"always"``: both deform.
    reject_non_diffeo : bool, default=False
        Redraw fields with ``max Xi >= 1`` (at most 20 times, then warn). The
        paper does not reject.
    random_state : int, RandomState instance or None
        Each image's field is drawn from a generator keyed on ``random_state`` and the
        image's values, so an image is deformed the same way whatever the other rows,
        their order or number. An int gives the same fields at every call, so
        ``fit(X).transform(X)`` equals ``fit_transform(X)`` with ``apply_on="always"``;
        a RandomState gives fresh fields at each call (identical images in one call are
        deformed alike).

    Attributes
    ----------
    image_shape_ : tuple of int
        ``(C, n, n)``.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.
    T_range_ : tuple of float
        ``(T_min, T_max)`` for ``c`` (the largest ``c`` of a range).

    See Also
    --------
    DiffeoAugment : the same deformations as a torch module, for skorch training.
    diffeo_augment : expand a training set with deformed copies.

    Examples
    --------
    >>> from geolearn.datasets import load_digits_images
    >>> from geolearn.diffeo import MaxEntropyDiffeo
    >>> X, _ = load_digits_images(upsample=2, return_X_y=True)
    >>> aug = MaxEntropyDiffeo(T=0.005, c=3, random_state=0)
    >>> X_train = aug.fit_transform(X[:10])
    >>> X_train.shape, bool((X_train != X[:10]).any())
    ((10, 1, 16, 16), True)
    >>> bool((aug.transform(X[:10]) == X[:10]).all())   # test-time images pass through
    True
    """

    _expected_failed_checks = tabular_check_failures(
        "check_fit2d_1sample",
        "check_transformer_data_not_an_array",
        "check_transformer_general",
        "check_transformer_preserve_dtypes",
    )

    _parameter_constraints = {
        "image_shape": [tuple, list, None],
        "T": [Interval(numbers.Real, 0, None, closed="left"), tuple, StrOptions({"auto"}), None],
        "c": [Interval(numbers.Integral, 1, None, closed="left"), tuple],
        "delta": [Interval(numbers.Real, 0, None, closed="neither")],
        "delta_formula": [StrOptions({"exact", "asymptotic"})],
        "interp": [StrOptions({"bilinear", "gaussian"})],
        "p": [Interval(numbers.Real, 0, 1, closed="both")],
        "apply_on": [StrOptions({"fit", "always"})],
        "reject_non_diffeo": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(self, image_shape=None, *, T=None, c=3, delta=1.0, delta_formula="exact",
                 interp="bilinear", p=1.0, apply_on="fit", reject_non_diffeo=False,
                 random_state=None):
        self.image_shape = image_shape
        self.T = T
        self.c = c
        self.delta = delta
        self.delta_formula = delta_formula
        self.interp = interp
        self.p = p
        self.apply_on = apply_on
        self.reject_non_diffeo = reject_non_diffeo
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Validate the parameters and learn the image shape.

        Parameters
        ----------
        X : array-like of shape (N, C, n, n), (N, n, n) or (N, C*n*n)
        y : ignored

        Returns
        -------
        self : MaxEntropyDiffeo
        """
        images, _ = self._check_X(X, reset=True)
        n = images.shape[-1]
        _check_sampling(self.T, self.c, self.delta, self.delta_formula, self.p, n)
        if self.T is None:  # raises for delta_formula="asymptotic" with c = 1
            for ci in np.atleast_1d(self.c):
                temperature_for_delta(self.delta, int(ci), n, self.delta_formula)
        self.T_range_ = _range_for(n, self.c)
        return self

    def fit_transform(self, X, y=None):
        """Fit, then deform ``X`` (in both ``apply_on`` modes).

        Returns
        -------
        X_new : ndarray of the shape and dtype of ``X``
        """
        return self.fit(X)._deform(X)

    def transform(self, X):
        """Deform ``X`` (``apply_on="always"``) or return a validated copy (``"fit"``).

        Returns
        -------
        X_new : ndarray of the shape and dtype of ``X``
        """
        check_is_fitted(self)
        if self.apply_on == "always":
            return self._deform(X)
        return np.array(self._check_X(X, reset=False)[1], copy=True)

    def _check_X(self, X, reset):
        """``(images (N, C, n, n), X as validated, in its own layout)``."""
        X = X if hasattr(X, "ndim") else np.asarray(X)
        dtypes = [np.float64, np.float32]
        if X.ndim == 2:
            X = validate_data(self, X, reset=reset, dtype=dtypes)
            images = check_images(X, self.image_shape if reset else self.image_shape_,
                                  dtype=dtypes, estimator=self)
        else:
            images = check_images(X, self.image_shape if reset else None, dtype=dtypes,
                                  estimator=self)
            X = images.reshape(X.shape)
            if reset:
                self.n_features_in_ = int(np.prod(images.shape[1:]))
                if hasattr(self, "feature_names_in_"):
                    del self.feature_names_in_
        if reset:
            _check_n(image_side(images.shape), name="image side")
            self.image_shape_ = images.shape[1:]
        else:
            check_fitted_shape(self, images)
        return images, X

    def _deform(self, X):
        images, X = self._check_X(X, reset=False)
        # keyed on the image's values (as float64, so float32 and float64 inputs agree)
        seeds = row_seeds(images.astype(np.float64), self.random_state, "MaxEntropyDiffeo")
        out = _deform_rows(to_tensor(images, dtype=None),
                           _generators(seeds), self)
        return out.numpy().reshape(X.shape)


class DiffeoAugment(torch.nn.Module):
    """Random maximum-entropy deformations as a torch layer (training mode only).

    Put it first in a skorch module so that every epoch sees fresh
    deformations; in eval mode it is the identity. Fields are drawn per
    sample on the input's device.

    Parameters
    ----------
    image_shape : tuple of int, optional
        ``(n, n)`` or ``(C, n, n)``; required for flat ``(B, C*n*n)`` inputs.
    T, c, delta, delta_formula, interp, p, reject_non_diffeo, random_state
        As in :class:`MaxEntropyDiffeo`.

    Examples
    --------
    >>> import torch
    >>> from geolearn.diffeo import DiffeoAugment
    >>> net = torch.nn.Sequential(DiffeoAugment(T=0.005, c=3, random_state=0),
    ...                           torch.nn.Flatten(), torch.nn.Linear(256, 10))
    >>> x = torch.rand(8, 1, 16, 16)
    >>> bool(torch.equal(net[0](x), x)), bool(torch.equal(net.eval()[0](x), x))
    (False, True)
    """

    def __init__(self, image_shape=None, *, T=None, c=3, delta=1.0, delta_formula="exact",
                 interp="bilinear", p=1.0, reject_non_diffeo=False, random_state=None):
        super().__init__()
        if interp not in ("bilinear", "gaussian"):
            raise ValueError(f"interp must be 'bilinear' or 'gaussian'; got {interp!r}.")
        _check_sampling(T, c, delta, delta_formula, p)
        self.image_shape = image_shape
        self.T = T
        self.c = c
        self.delta = delta
        self.delta_formula = delta_formula
        self.interp = interp
        self.p = p
        self.reject_non_diffeo = reject_non_diffeo
        self.random_state = random_state
        self._rng = check_random_state(random_state)

    def extra_repr(self):
        return f"T={self.T!r}, c={self.c!r}, delta={self.delta!r}, interp={self.interp!r}"

    def forward(self, x):
        if not self.training:
            return x
        if x.ndim == 2:
            if self.image_shape is None:
                raise ValueError("flat inputs need image_shape=(C, n, n) or (n, n).")
            images = x.reshape(len(x), -1, *tuple(self.image_shape)[-2:])
        elif x.ndim in (3, 4):
            images = x.reshape(len(x), -1, *x.shape[-2:])
        else:
            raise ValueError(f"x must be (B, C, n, n), (B, n, n) or (B, C*n*n); got "
                             f"{tuple(x.shape)}.")
        image_side(images.shape)
        seeds = self._rng.randint(0, 2**63 - 1, size=len(images), dtype=np.int64)
        out = _deform_rows(images, _generators(seeds.tolist()), self)
        return out.reshape(x.shape)


def diffeo_augment(X, y=None, n_copies=1, include_original=True, **params):
    """Expand a training set with deformed copies (a Pipeline cannot change ``n_samples``).

    Parameters
    ----------
    X : array-like of shape (N, C, n, n), (N, n, n) or (N, C*n*n)
    y : array-like of shape (N,), optional
    n_copies : int, default=1
        Deformed copies of each image.
    include_original : bool, default=True
        Keep the original images first.
    **params
        Parameters of :class:`MaxEntropyDiffeo` (``image_shape``, ``T``, ``c``,
        ``delta``, ``random_state``, ...).

    Returns
    -------
    X_aug : ndarray of shape ((include_original + n_copies) * N, ...)
    y_aug : ndarray or None

    Examples
    --------
    >>> from geolearn.datasets import load_digits_images
    >>> from geolearn.diffeo import diffeo_augment
    >>> X, y = load_digits_images(upsample=2, return_X_y=True)
    >>> X_aug, y_aug = diffeo_augment(X[:50], y[:50], n_copies=2, T=0.005, random_state=0)
    >>> X_aug.shape, y_aug.shape
    ((150, 1, 16, 16), (150,))
    """
    check_scalar_param(n_copies, "n_copies", kind="integer", low=1)
    rng = check_random_state(params.pop("random_state", None))
    params.pop("apply_on", None)
    transformer = MaxEntropyDiffeo(apply_on="always", random_state=rng, **params).fit(X)
    X_valid = transformer._check_X(X, reset=False)[1]
    if y is not None and len(y) != len(X_valid):
        raise ValueError(f"y must have one label per image: X has {len(X_valid)} images, y has "
                         f"{len(y)} labels.")
    parts = [X_valid] if include_original else []
    parts += [transformer.transform(X_valid) for _ in range(n_copies)]
    X_aug = np.concatenate(parts)
    if y is None:
        return X_aug, None
    return X_aug, np.tile(np.asarray(y), len(parts))
