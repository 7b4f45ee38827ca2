"""What the generators and autoencoders of every family share: validation of rows and codes,
end points, interpolation weights, the score, and transform / inverse_transform / reconstruct
in batches."""

import math

import numpy as np
import torch
from sklearn.base import TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data
from torch import nn

from ..exceptions import DataRangeWarning
from ..models import frozen
from .torch import iter_batches, to_numpy, to_tensor
from .validation import check_image_shape, check_scalar_param, preserved_dtype
from .warn import warn_user

_BOUNDS_TOL = 1e-6


def check_unit_interval(X, bounds=(0.0, 1.0), what="likelihood='bernoulli'",
                        advice="Scale X to [0,1] (MinMaxScaler) or use likelihood='gaussian'.",
                        clip=False):
    """``X`` within ``bounds`` (up to rounding), or a ValueError; with ``clip``, clip and warn.

    Training data outside the bounds is an error. Data the fitted model only
    scores or encodes is clipped instead (one warning a call), so that held-out
    folds of min-max scaled data, which stray past the training range, still get
    a score in a cross-validation.
    """
    lo, hi = bounds
    if X.size and (X.min() < lo - _BOUNDS_TOL or X.max() > hi + _BOUNDS_TOL):
        if not clip:
            raise ValueError(f"{what} needs X in [{lo:g}, {hi:g}]; got values in "
                             f"[{X.min():g}, {X.max():g}]. {advice}")
        outside = int(np.count_nonzero((X < lo - _BOUNDS_TOL) | (X > hi + _BOUNDS_TOL)))
        warn_user(f"{what} is defined on [{lo:g}, {hi:g}]: {outside} of {X.size} values "
                  f"(range [{X.min():g}, {X.max():g}]) were clipped to it. {advice}", DataRangeWarning)
        X = np.clip(X, lo, hi)
    return X


def check_codes(Z, width, name):
    """Latent codes as float32 ``(n, width)``; a clear error naming the parameter ``name``."""
    Z = np.asarray(Z, dtype=np.float32)
    if Z.ndim != 2 or Z.shape[1] != width:
        raise ValueError(f"Z must have shape (n_samples, {width}) ({name}); got {Z.shape}.")
    if not np.all(np.isfinite(Z)):
        raise ValueError("Z contains NaN or infinity.")
    return Z


def validate_rows(estimator, X, reset):
    """Validate flat rows or images (flattened C-order) into float32 ``(n, D)``.

    Images ``(n, H, W)`` / ``(n, C, H, W)`` are checked against the ``image_shape``
    parameter (``reset``) or the fitted ``image_shape_``; flat rows against the number of
    values of ``image_shape``. With ``reset`` it sets ``image_shape_`` (None for plain
    vectors) and ``n_features_in_``.
    """
    ndim = getattr(X, "ndim", None)
    if ndim is None and isinstance(X, (list, tuple)):
        ndim = np.ndim(X)
    if ndim is not None and ndim >= 3:
        X = np.asarray(X)
        shape = check_image_shape(X.shape[1:], name="the images' shape")
        expected = getattr(estimator, "image_shape_", None) if not reset else (
            check_image_shape(estimator.image_shape)
            if estimator.image_shape is not None else None)
        if expected is not None and shape != tuple(expected):
            name = "image_shape" if reset else "image_shape_"
            raise ValueError(f"X holds images of shape {X.shape[1:]} but {name}={expected}.")
        if expected is None and 1 in shape[1:]:
            # (n, d, 1) is far more often a column of vectors than d x 1 images
            raise ValueError(f"X has shape {X.shape}: images with a side of length 1 are "
                             "refused unless image_shape says so; pass flat rows "
                             "X.reshape(len(X), -1), or set image_shape.")
        X = X.reshape(len(X), -1)
    elif reset:
        shape = (check_image_shape(estimator.image_shape)
                 if estimator.image_shape is not None else None)
    X = validate_data(estimator, X, reset=reset, dtype=np.float32,
                      ensure_min_samples=2 if reset else 1)
    if reset:
        if shape is not None and math.prod(shape) != X.shape[1]:
            raise ValueError(f"image_shape={estimator.image_shape!r} holds {math.prod(shape)} "
                             f"values but X has {X.shape[1]} features per row.")
        estimator.image_shape_ = shape
    return X


def mlp(sizes, activation=nn.ReLU):
    """Linear layers of widths ``sizes``, each followed by ``activation``."""
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), activation()]
    return nn.Sequential(*layers)


def check_endpoints(x_a, x_b, n_features, validate):
    """``(2, D)`` float32 rows from two samples (vectors, ``(1, D)`` rows or images).

    ``validate(X)`` is the estimator's validation of prediction-time rows (finite
    values, range); ``n_features`` the fitted input width.
    """
    rows = []
    for name, x in (("x_a", x_a), ("x_b", x_b)):
        x = np.asarray(x, dtype=np.float64)
        if x.size != n_features:
            raise ValueError(f"{name} must be one sample of {n_features} values (a vector, a "
                             f"(1, {n_features}) row or one image); got shape {x.shape}.")
        rows.append(x.reshape(1, -1))
    return validate(np.concatenate(rows))


def interpolation_weights(n_steps):
    """``lambda`` of the interpolation, ``(n_steps, 1)`` from 0 (``x_a``) to 1 (``x_b``)."""
    check_scalar_param(n_steps, "n_steps", kind="integer", low=2)
    return np.linspace(0.0, 1.0, n_steps)[:, None]


class LatentInterpolationMixin:
    """``interpolate``: linear in the latent space of ``transform``, decoded back."""

    def interpolate(self, x_a, x_b, n_steps=8):
        """Decode the straight latent segment between the codes of ``x_a`` and ``x_b``.

        Parameters
        ----------
        x_a, x_b : array-like
            One sample each: a vector of ``n_features_in_`` values or one image.
        n_steps : int, default=8
            Points on the segment, end points included (at least 2).

        Returns
        -------
        X : ndarray of shape (n_steps, n_features)
            ``inverse_transform((1 - lambda) z_a + lambda z_b)``, ``z = transform(x)``.
        """
        check_is_fitted(self)
        lam = interpolation_weights(n_steps)
        ends = check_endpoints(x_a, x_b, self.n_features_in_,
                               lambda X: self._validate_X(X, reset=False))
        Z = self._encode(ends).astype(np.float64)
        return self._decode(((1 - lam) * Z[0] + lam * Z[1]).astype(np.float32))


class ReconstructionScoreMixin:
    """``score``: the negative mean squared reconstruction error (greater is better)."""

    def score(self, X, y=None):
        """Negative mean squared error of ``inverse_transform(transform(X))``.

        The mean runs over samples and features; reconstructions use the latent means
        (and, for a chart autoencoder, the evaluation rule).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or image array
        y : ignored

        Returns
        -------
        score : float
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        return -float(np.mean((X - self._decode(self._encode(X))) ** 2))


class ImageOutputMixin:
    """The decoders' output activation, fixed by the data: a sigmoid for images, else none."""

    @property
    def output_activation(self):
        """'sigmoid' for images (the conv decoders' output), else 'identity'."""
        return "identity" if getattr(self, "image_shape_", None) is None else "sigmoid"


class CodecMixin(TransformerMixin):
    """``transform``, ``inverse_transform`` and ``reconstruct`` of a fitted autoencoder.

    A ``TransformerMixin``, so that ``set_output`` wraps the ``transform`` defined here.

    The estimator defines ``_encode(X) -> codes`` and ``_decode(codes) -> rows`` on
    validated float32 arrays (both through :meth:`_apply`), ``_validate_X``,
    ``_n_features_out`` and ``_codes_param``, the parameter that sets the codes' width
    (named in errors). Work runs in chunks of ``batch_size`` rows on ``device_``, in
    evaluation mode, so a row's result depends on that row only.
    """

    @torch.no_grad()
    def _apply(self, fn, X):
        """``fn`` on chunks of ``X`` (float32 rows) on ``device_``, as one float64 array."""
        with frozen(self.module_):
            return np.concatenate([to_numpy(fn(to_tensor(X[sl], device=self.device_)))
                                   for sl in iter_batches(len(X), self.batch_size)]
                                  ).astype(np.float64)

    def transform(self, X):
        """The codes of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images (n, C, H, W)

        Returns
        -------
        codes : ndarray of shape (n_samples, n_features_out)
            float32 for float32 ``X`` (the network computes in float32), else float64.
        """
        check_is_fitted(self)
        return self._encode(self._validate_X(X, reset=False)).astype(preserved_dtype(X),
                                                                      copy=False)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def inverse_transform(self, codes):
        """Decode codes (as :meth:`transform` gives them) to flat rows.

        Parameters
        ----------
        codes : array-like of shape (n_samples, n_features_out)

        Returns
        -------
        X : ndarray of shape (n_samples, n_features), float64
        """
        check_is_fitted(self)
        return self._decode(check_codes(codes, self._n_features_out, self._codes_param))

    def reconstruct(self, X):
        """``inverse_transform(transform(X))``: flat rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images (n, C, H, W)

        Returns
        -------
        X_rec : ndarray of shape (n_samples, n_features), float64
        """
        check_is_fitted(self)
        return self._decode(self._encode(self._validate_X(X, reset=False)))
