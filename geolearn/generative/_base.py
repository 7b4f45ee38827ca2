"""What the encoder/decoder estimators share: validation, training, inference, the ELBO."""

import functools
import numbers

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from .._utils import (
    check_hidden_sizes,
    iter_batches,
    preserved_dtype,
    to_numpy,
    to_tensor,
)
from .._utils.autoencoder import check_codes, check_unit_interval, validate_rows
from .._utils.torch_estimator import (
    EPOCH_CONSTRAINTS,
    NET_CONSTRAINTS,
    ObjectiveTrainingMixin,
)
from ..models import frozen
from ..models._internal import weighted_mean
from ._losses import (
    decoded_mean,
    kl_batch,
    kl_gaussian_dims,
    kl_normal,
    kl_sample_dims,
    neg_entropy_dims,
    reconstruction_nll,
)
from ._modules import build_vae_module


class VAEObjective:
    """Per-sample negative ELBO (+ guidance, + weighted cross-entropy) for training and scoring.

    Parameters
    ----------
    prior : GridPrior or None
        None is the standard normal prior.
    kl_estimator : {'sample', 'batch', 'nearest'}
        Estimator on the unguided dimensions of a grid prior (spec section 2.4).
    guided_dims : sequence of int
        Dimensions whose KL targets the given grid code (Eq. 28 with ``mu_gt``).
    """

    def __init__(self, *, prior, kl_estimator, likelihood, sigma, output_activation,
                 beta=1.0, kl_warmup_epochs=0, guided_dims=(), classification_weight=0.0):
        self.prior = prior
        self.kl_estimator = kl_estimator
        self.likelihood = likelihood
        self.sigma = sigma
        self.output_activation = output_activation
        self.beta = beta
        self.kl_warmup_epochs = kl_warmup_epochs
        self.guided_dims = list(guided_dims)
        self.classification_weight = classification_weight

    def recon(self, module, z, x):
        return reconstruction_nll(module.decode(z), x, self.likelihood, self.sigma,
                                  self.output_activation)

    def kl(self, mu, logvar, z, codes=None, estimator=None, sample_weight=None):
        """Per-sample KL term; ``codes`` are the guided dimensions' codes (NaN = missing).

        ``sample_weight`` weighs the rows of the batch estimator's aggregate posterior.
        """
        if self.prior is None:
            return kl_normal(mu, logvar)
        estimator = estimator or self.kl_estimator
        prior = self.prior
        guided = self.guided_dims if codes is not None else []
        free = [m for m in range(mu.shape[1]) if m not in guided]
        total = mu.new_zeros(len(mu))
        nearest = prior.nearest(mu) if (guided or estimator == "nearest") else None
        if guided:
            missing = torch.isnan(codes)
            target = prior.values(torch.nan_to_num(codes).long(), dims=guided)
            target = torch.where(missing, nearest[:, guided], target)
            total = total + kl_gaussian_dims(mu[:, guided], logvar[:, guided], target,
                                             prior.std).sum(-1)
        if not free:
            return total
        if estimator == "nearest":
            return total + kl_gaussian_dims(mu[:, free], logvar[:, free], nearest[:, free],
                                            prior.std).sum(-1)
        if estimator == "batch":
            log_p = prior.log_prob_dims(z)[:, free].sum(-1)
            return total + kl_batch(mu[:, free], logvar[:, free], z[:, free], log_p,
                                    sample_weight=sample_weight)
        return total + kl_sample_dims(logvar, z, prior)[:, free].sum(-1)

    def __call__(self, module, y_pred, x, y, epoch=0, sample_weight=None):
        mu, logvar = y_pred[-2:]  # a classifier's module outputs (logits, mu, logvar)
        z = mu + torch.exp(0.5 * logvar) * torch.randn_like(mu)
        recon = self.recon(module, z, x)
        codes = y if (self.guided_dims and y.numel()) else None
        kl = self.kl(mu, logvar, z, codes, sample_weight=sample_weight)
        warm = min(1.0, epoch / self.kl_warmup_epochs) if self.kl_warmup_epochs else 1.0
        loss = recon + self.beta * warm * kl
        parts = {"recon": weighted_mean(recon, sample_weight).detach(),
                 "kl": weighted_mean(kl, sample_weight).detach()}
        if module.head is not None:
            ce = torch.nn.functional.cross_entropy(module.head(z), y.long(), reduction="none")
            loss = loss + self.classification_weight * ce
            parts["ce"] = weighted_mean(ce, sample_weight).detach()
        return weighted_mean(loss, sample_weight), parts

    def neg_elbo(self, module, x, stochastic=True, noise=None):
        """One-sample negative ELBO per sample; never the batch estimator (it couples samples).

        ``noise`` (shape of the codes) is the reparameterisation draw; None draws it from
        torch's global RNG.
        """
        mu, logvar = module.encode(x)
        if stochastic and noise is None:
            noise = torch.randn_like(mu)
        z = mu + torch.exp(0.5 * logvar) * noise if stochastic else mu
        estimator = "sample" if self.kl_estimator == "batch" else self.kl_estimator
        return self.recon(module, z, x) + self.kl(mu, logvar, z, estimator=estimator)

    def elbo(self, module, x, xi):
        """ELBO with the full prior, averaged over shared standard-normal draws ``xi`` (S, d)."""
        mu, logvar = module.encode(x)
        std = torch.exp(0.5 * logvar)
        log_lik = torch.zeros(len(x), dtype=torch.float64, device=x.device)
        log_prior = torch.zeros_like(log_lik)
        for e in xi:
            z = mu + std * e
            log_lik -= self.recon(module, z, x).double()
            if self.prior is not None:
                log_prior += self.prior.log_prob(z).double()
        S = len(xi)
        if self.prior is None:
            kl = kl_normal(mu, logvar).double()
        else:
            kl = neg_entropy_dims(logvar).sum(-1).double() - log_prior / S
        return log_lik / S - kl


class LatentModel(ObjectiveTrainingMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                  BaseEstimator):
    """An encoder/decoder estimator: input folding, validation, transform and its inverse.

    Its module has ``encode(x) -> (mu, logvar)`` and ``decode(z) -> raw output``; the
    estimator has (as parameters or class attributes) ``n_latent``, ``image_shape``,
    ``architecture``, ``likelihood``, ``output_activation``, ``hidden_layer_sizes``,
    ``max_epochs``, ``batch_size`` and ``weight_decay``. Shared by
    the VAEs (:class:`BaseVAE`) and :class:`ChartAutoencoder` (not public).
    """

    _expected_failed_checks = {  # noqa: RUF012
        "check_sample_weight_equivalence_on_dense_data": (
            "the reparameterisation noise is drawn per training row, so a row repeated k times "
            "gets k draws where a row of weight k gets one (and the minibatches differ): the "
            "fits agree only in expectation; tests/test_sample_weight.py checks that integer "
            "weights equal repeated rows with the noise held fixed and full batches, and that "
            "a weight 0 equals dropping the row exactly"
        ),
    }

    # -- validation -----------------------------------------------------------------------

    def _validate_X(self, X, reset):
        """Flatten image arrays and validate; returns float32 ``(n, D)``."""
        X = validate_rows(self, X, reset)
        if (reset and self.image_shape_ is None and not callable(self.architecture)
                and self.architecture != "mlp"):
            raise ValueError(f"architecture={self.architecture!r} needs image arrays "
                             "(n, C, H, W) or flat X with image_shape=(C, H, W).")
        if self.likelihood == "bernoulli":
            X = check_unit_interval(X, clip=not reset)
        return X

    # -- training -------------------------------------------------------------------------

    def _train_vae(self, X, y, objective, *, n_classes=0, parts=("recon", "kl"),
                   drop_last=False, module=None, sample_weight=None):
        """Train the backbone (plus a head when ``n_classes``), or ``module``, on ``objective``.

        ``sample_weight`` (the user's, unchecked) weighs each row's term of the objective.
        """
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                                 ensure_non_negative=True)
        module = module or functools.partial(
            build_vae_module, architecture=self.architecture, n_features=X.shape[1],
            n_latent=self.n_latent, image_shape=self.image_shape_,
            hidden_layer_sizes=self.hidden_layer_sizes, conv_channels=self.conv_channels,
            n_classes=n_classes)
        self._train(module, objective, torch.from_numpy(np.ascontiguousarray(X)), y,
                    seed=self.random_state, max_epochs=self.max_epochs, parts=parts,
                    optimizer__weight_decay=self.weight_decay,
                    iterator_train__drop_last=drop_last, sample_weight=sample_weight)
        self.n_iter_ = len(self.history_)
        return self

    # -- inference ------------------------------------------------------------------------

    @property
    def _n_features_out(self):
        return self.n_latent

    def _batches(self, X):
        """Yield float32 tensors of ``batch_size`` rows on ``device_``."""
        for sl in iter_batches(len(X), self.batch_size):
            yield to_tensor(X[sl], device=self.device_)

    @torch.no_grad()
    def _encode(self, X):
        with frozen(self.module_):
            return np.concatenate([to_numpy(self.module_.encode(x)[0])
                                   for x in self._batches(X)])

    @torch.no_grad()
    def _decode(self, Z):
        with frozen(self.module_):
            out = [to_numpy(decoded_mean(self.module_.decode(z), self.likelihood,
                                         self.output_activation)) for z in self._batches(Z)]
        return np.concatenate(out).astype(np.float64)

    def transform(self, X):
        """Latent means ``mu(x)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or image array

        Returns
        -------
        Z : ndarray of shape (n_samples, n_latent)
            float32 for float32 ``X`` (the network computes in float32), else float64.
        """
        check_is_fitted(self)
        return self._encode(self._validate_X(X, reset=False)).astype(preserved_dtype(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def inverse_transform(self, Z):
        """Decode latent points to the mean of ``p(x|z)`` (probabilities for 'bernoulli').

        Parameters
        ----------
        Z : array-like of shape (n_samples, n_latent)

        Returns
        -------
        X : ndarray of shape (n_samples, n_features), float64
        """
        check_is_fitted(self)
        return self._decode(check_codes(Z, self.n_latent, "n_latent"))

    def as_images(self, X):
        """Reshape flat rows to ``(n, *image_shape_)`` images.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        images : ndarray of shape (n_samples, C, H, W)
        """
        check_is_fitted(self)
        if self.image_shape_ is None:
            raise ValueError("as_images needs image_shape_: fit on image arrays or pass "
                             "image_shape.")
        return np.asarray(X).reshape(len(X), *self.image_shape_)


class BaseVAE(LatentModel):
    """What the VAEs (GridVAE, VAEClassifier, VAEGenerator) share: the ELBO, the parameters."""

    _parameter_constraints = {
        **NET_CONSTRAINTS,
        **EPOCH_CONSTRAINTS,
        "n_latent": [Interval(numbers.Integral, 1, None, closed="left")],
        "prior_std": [Interval(numbers.Real, 0, None, closed="neither")],
        "kl_estimator": [StrOptions({"sample", "batch", "nearest"})],
        "likelihood": [StrOptions({"bernoulli", "gaussian"})],
        "sigma": [Interval(numbers.Real, 0, None, closed="neither")],
        "output_activation": [StrOptions({"sigmoid", "identity"})],
        "architecture": [StrOptions({"mlp", "conv", "resnet"}), callable],
        "conv_channels": [Interval(numbers.Integral, 1, None, closed="left")],
        "image_shape": ["array-like", None],
        "n_mc_score": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def _check_common_params(self):
        if not np.isfinite(self.prior_std):
            raise ValueError(f"prior_std must be a positive finite number; got {self.prior_std!r}.")
        check_hidden_sizes(self.hidden_layer_sizes)

    def score_samples(self, X):
        """Per-sample ELBO in nats, with the model's full prior.

        Both expectations use the same ``n_mc_score`` reparameterised draws, shared by
        all samples and seeded by ``random_state`` (0 when not an int), so repeated
        calls agree and each sample's score does not depend on the batch it is in.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or image array

        Returns
        -------
        elbo : ndarray of shape (n_samples,), float64
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        seed = self.random_state if isinstance(self.random_state, numbers.Integral) else 0
        gen = torch.Generator().manual_seed(int(seed))
        xi = torch.randn(self.n_mc_score, self.n_latent, generator=gen).to(self.device_)
        with frozen(self.module_), torch.no_grad():
            out = [to_numpy(self.net_.objective.elbo(self.module_, x, xi))
                   for x in self._batches(X)]
        return np.concatenate(out)

    # -- hooks for purification and attacks ----------------------------------------------

    def _torch_neg_elbo(self, x, stochastic=True, noise=None):
        """Per-sample negative ELBO of a float32 tensor on ``device_`` (differentiable in x).

        ``noise``: the standard-normal reparameterisation draw, shape ``(len(x), n_latent)``
        (None: drawn from torch's global RNG).
        """
        return self.net_.objective.neg_elbo(self.module_, x, stochastic=stochastic, noise=noise)
