"""What the generators and autoencoders share: end points, interpolation weights, the
score, and transform / inverse_transform / reconstruct in batches."""

import numpy as np
import torch
from sklearn.base import TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._utils import check_scalar_param, iter_batches, preserved_dtype, to_numpy, to_tensor
from ..models import frozen
from ._base import check_codes


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
