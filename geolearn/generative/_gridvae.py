"""GridVAE: a VAE whose prior is an equal-weight Gaussian mixture centred on a Cartesian grid."""

import numbers

import numpy as np
import torch
from sklearn.base import ClusterMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._utils import check_scalar_param, warn_user
from .._utils.torch_estimator import MeanScoreMixin
from ..exceptions import GeolearnWarning
from ._base import BaseVAE, VAEObjective
from ._grid import (
    MAX_DENSE_COMPONENTS,
    check_codes,
    check_grid,
    flat_index,
    grid_codes,
    grid_sizes,
    n_grid_components,
)
from ._losses import GridPrior


class GridVAE(MeanScoreMixin, ClusterMixin, BaseVAE):
    """Variational autoencoder with a grid mixture-of-Gaussians prior (GridVAE).

    The prior is ``p(z) = (1/K) sum_k N(z | c_k, prior_std^2 I)`` over the ``K``
    points ``c_k`` of a Cartesian grid (Eq. 25 of "Probabilistic and semantic
    descriptions of image manifolds and their applications"). It factorises per
    latent dimension, so it costs O(d L) and never enumerates the ``K`` cells.
    Each latent dimension becomes a discrete symbol (its nearest grid value): the
    codes are the clusters (``predict``) and the message of the emergent-language view
    (``predict_codes``). Guided training ties chosen dimensions to given attribute codes.

    Parameters
    ----------
    n_latent : int, default=2
        Latent dimension ``d``.
    grid_values : sequence of float or list of sequences, default=(-2, -1, 0, 1, 2, 3)
        Grid values shared by all dimensions, or one sequence per dimension. Values
        are sorted; duplicates are an error. ``(0.0,)`` with ``prior_std=1`` is the
        standard normal prior (a plain VAE).
    prior_std : float, default=1/3
        Shared standard deviation ``sigma_0`` of the mixture components (as in the
        relaxed loss).
    kl_estimator : {'sample', 'batch', 'nearest'}, default='sample'
        Training estimate of the KL term on unguided dimensions. 'sample': Monte-Carlo
        ``E_q[log q] - log p(z)`` with the exact mixture (an unbiased negative ELBO).
        'batch': the minibatch aggregate posterior against the prior (the "large batch"
        reading of Eq. 26; biased, not an ELBO). 'nearest': the relaxed loss of Eq. 27-28,
        KL to the nearest component only, for high-dimensional grids.
    beta : float, default=1.0
        Weight of the KL term (the beta-VAE weight).
    kl_warmup_epochs : int, default=0
        Epochs of linear KL warm-up (0 reproduces the paper).
    guidance : {'none', 'full', 'partial'}, default='none'
        'full': ``y`` holds one grid code per latent dimension; 'partial': codes for
        ``guided_dims`` only. With 'none', ``y`` is ignored, so a Pipeline ending in a
        classifier never guides the latent silently.
    guided_dims : sequence of int, default=None
        Latent dimensions matching the columns of ``y`` for 'partial' (default: the
        first ``y.shape[1]``).
    missing_guidance : {'raise', 'round'}, default='raise'
        'round': NaN codes in a float ``y`` fall back to the nearest grid value.
    likelihood : {'bernoulli', 'gaussian'}, default='bernoulli'
        'bernoulli' needs X in [0, 1] (for grey levels it is the usual pseudo-likelihood,
        not a normalised density); 'gaussian' has std ``sigma``.
    sigma : float, default=1/sqrt(2)
        Standard deviation of the Gaussian decoder; ``1/sqrt(2)`` makes the data term
        the sum of squares.
    output_activation : {'sigmoid', 'identity'}, default='sigmoid'
        Applied to the decoder output to get the Gaussian mean.
    architecture : {'mlp', 'conv', 'resnet'} or callable, default='mlp'
        Network family, or ``callable(n_features, n_latent, image_shape)`` returning a
        module with ``encode(x) -> (mu, logvar)`` and ``decode(z) -> raw output`` (logits
        for 'bernoulli'; passed through ``output_activation`` for 'gaussian').
    hidden_layer_sizes : sequence of int, default=(256, 128)
        MLP widths (the decoder mirrors them).
    conv_channels : int, default=32
        Base width of 'conv' and 'resnet'.
    image_shape : tuple of int, default=None
        ``(H, W)`` or ``(C, H, W)`` to fold flat X for 'conv'/'resnet'.
    max_epochs : int, default=100
    batch_size : int, default=256
        Training and inference batch size.
    lr : float, default=1e-3
        Adam learning rate.
    weight_decay : float, default=0.0
    n_mc_score : int, default=16
        Reparameterised draws per sample in ``score_samples``.
    callbacks : list of skorch callbacks, default=None
        Added to the training net (e.g. ``EarlyStopping(monitor='train_loss')``,
        ``Checkpoint``, ``LRScheduler``).
    warm_start : bool, default=False
        True: a second ``fit`` continues training the fitted net (with the grid and
        input width of the first fit) instead of starting again.
    device : str or torch.device, default='auto'
        'auto' uses CUDA when available.
    random_state : int, RandomState instance or None, default=None
        Seeds initialisation, batch order and the reparameterisation noise.
    verbose : int, default=0
        1 prints the epoch log, 2 adds a progress bar.
    **net_params
        skorch settings of the net, e.g. ``module__logvar_range=(-10.0, 5.0)``,
        ``optimizer__betas=(0.5, 0.9)``, ``iterator_train__num_workers=2``; they
        take precedence over the matching parameters (``weight_decay``).

    Attributes
    ----------
    net_ : geolearn.models.ObjectiveNet
        The trained skorch net; ``module_`` is its torch module.
    grid_ : tuple of ndarray
        Sorted grid values per dimension.
    n_components_ : int
        Number of grid cells ``K``.
    cluster_centers_ : ndarray of shape (K, n_latent) or None
        Grid points in C order; None when ``K > 4096``.
    labels_ : ndarray of shape (n_samples,)
        Flat cell index of each training sample.
    guided_dims_ : list of int
        Dimensions tied to codes in ``y``.
    history_ : skorch.history.History
        The net's training history, one row per epoch: ``train_loss``, ``recon`` and
        ``kl``, e.g. ``history_[:, "kl"]``.
    n_features_in_, image_shape_, device_, n_iter_
        Input width, image shape (or None), device and the number of epochs run.

    See Also
    --------
    VAEClassifier : VAE with a classification head (Eq. 29).
    ELBOPurifier : test-time purification by ELBO ascent (Eq. 30).

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.generative import GridVAE
    >>> X = np.random.default_rng(0).random((64, 16))
    >>> vae = GridVAE(n_latent=2, hidden_layer_sizes=(32,), max_epochs=2, random_state=0).fit(X)
    >>> vae.transform(X).shape, vae.predict(X[:3]).dtype.name, vae.n_components_
    ((64, 2), 'int64', 36)
    >>> vae.sample(4, random_state=0)[0].shape
    (4, 16)
    """

    _expected_failed_checks = {  # noqa: RUF012
        **BaseVAE._expected_failed_checks,
        "check_clustering": "labels are grid-cell indices fixed by the grid (not consecutive "
                            "from 0), and a 2-epoch model does not separate sklearn's blobs",
    }

    _parameter_constraints = {
        **BaseVAE._parameter_constraints,
        "grid_values": ["array-like"],
        "beta": [Interval(numbers.Real, 0, None, closed="left")],
        "kl_warmup_epochs": [Interval(numbers.Integral, 0, None, closed="left")],
        "guidance": [StrOptions({"none", "full", "partial"})],
        "guided_dims": ["array-like", None],
        "missing_guidance": [StrOptions({"raise", "round"})],
    }

    def __init__(self, n_latent=2, grid_values=(-2, -1, 0, 1, 2, 3), prior_std=1 / 3,
                 kl_estimator="sample", beta=1.0, kl_warmup_epochs=0, guidance="none",
                 guided_dims=None, missing_guidance="raise", likelihood="bernoulli",
                 sigma=0.7071067811865476, output_activation="sigmoid", architecture="mlp",
                 hidden_layer_sizes=(256, 128), conv_channels=32, image_shape=None, max_epochs=100,
                 batch_size=256, lr=1e-3, weight_decay=0.0, n_mc_score=16, callbacks=None,
                 warm_start=False, device="auto", random_state=None, verbose=0, **net_params):
        self.n_latent = n_latent
        self.grid_values = grid_values
        self.prior_std = prior_std
        self.kl_estimator = kl_estimator
        self.beta = beta
        self.kl_warmup_epochs = kl_warmup_epochs
        self.guidance = guidance
        self.guided_dims = guided_dims
        self.missing_guidance = missing_guidance
        self.likelihood = likelihood
        self.sigma = sigma
        self.output_activation = output_activation
        self.architecture = architecture
        self.hidden_layer_sizes = hidden_layer_sizes
        self.conv_channels = conv_channels
        self.image_shape = image_shape
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.n_mc_score = n_mc_score
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self._set_net_params(net_params)

    # -- fitting --------------------------------------------------------------------------

    def _check_guidance(self, y, n):
        """Return ``(guided_dims, codes as float32 tensor or None)``."""
        if self.guidance == "none":
            return [], None
        if y is None:
            raise ValueError(f"guidance={self.guidance!r} needs y: integer grid codes of shape "
                             "(n_samples, n_guided_dims).")
        y = np.asarray(y)
        if y.ndim == 1:
            y = y[:, None]
        if y.ndim != 2 or len(y) != n:
            raise ValueError(f"y must have shape (n_samples={n}, n_guided_dims); got {y.shape}.")
        if self.guidance == "full":
            dims = list(range(self.n_latent))
            if y.shape[1] != self.n_latent:
                raise ValueError(f"guidance='full' needs y of shape (n_samples, n_latent="
                                 f"{self.n_latent}); got {y.shape}.")
        else:
            dims = (list(range(y.shape[1])) if self.guided_dims is None
                    else np.atleast_1d(self.guided_dims).tolist())
            if (not all(isinstance(m, int) and 0 <= m < self.n_latent for m in dims)
                    or len(set(dims)) != len(dims)):
                raise ValueError(f"guided_dims must be distinct integers in [0, {self.n_latent}); "
                                 f"got {self.guided_dims!r}.")
            if len(dims) != y.shape[1]:
                raise ValueError(f"guided_dims has {len(dims)} entries but y has {y.shape[1]} "
                                 "columns; give one guided dimension per column of y.")
        codes = check_codes(y, tuple(self.grid_[m] for m in dims), name="y",
                            allow_nan=self.missing_guidance == "round")
        return dims, torch.as_tensor(codes, dtype=torch.float32)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Train the GridVAE.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images (n, H, W) / (n, C, H, W)
            Training data; in [0, 1] for ``likelihood='bernoulli'``.
        y : array-like of shape (n_samples, n_guided_dims), default=None
            Integer grid codes for guided training; ignored when ``guidance='none'``.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights of the negative ELBO (and of the batch estimator's aggregate
            posterior): each batch's loss is the weighted mean
            ``sum_i w_i l_i / sum_i w_i`` of the rows' losses, so integer weights equal
            repeated rows and a weight 0 drops a row.

        Returns
        -------
        self : GridVAE
        """
        warm = self._warm()
        self._check_common_params()
        X = self._validate_X(X, reset=not warm)
        if not warm:
            self.grid_ = check_grid(self.grid_values, self.n_latent)
            self.n_components_ = n_grid_components(self.grid_)
        self.guided_dims_, codes = self._check_guidance(y, len(X))
        if self.kl_estimator == "batch" and len(X) < 64:
            warn_user(f"kl_estimator='batch' with only {len(X)} samples: the aggregate "
                      "posterior estimate is strongly biased for small batches.", GeolearnWarning)
        objective = VAEObjective(
            prior=GridPrior(self.grid_, self.prior_std), kl_estimator=self.kl_estimator,
            likelihood=self.likelihood, sigma=self.sigma,
            output_activation=self.output_activation, beta=self.beta,
            kl_warmup_epochs=self.kl_warmup_epochs, guided_dims=self.guided_dims_)
        self._train_vae(X, codes, objective, drop_last=self.kl_estimator == "batch",
                        sample_weight=sample_weight)
        codes_train = grid_codes(self._encode(X), self.grid_)
        self.labels_ = (flat_index(codes_train, self.grid_) if self.n_components_ < 2**63
                        else None)
        self.cluster_centers_ = None
        if self.n_components_ <= MAX_DENSE_COMPONENTS:
            mesh = np.meshgrid(*self.grid_, indexing="ij")
            self.cluster_centers_ = np.stack(mesh, axis=-1).reshape(-1, self.n_latent)
        return self

    # -- clustering -----------------------------------------------------------------------

    def predict_codes(self, X):
        """Nearest grid code per latent dimension of ``mu(x)`` (the "message" of x).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or image array

        Returns
        -------
        codes : ndarray of shape (n_samples, n_latent), int64
        """
        return grid_codes(self.transform(X), self.grid_)

    def predict(self, X):
        """Flat grid cell of ``mu(x)``: ``ravel_multi_index(codes)`` in C order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or image array

        Returns
        -------
        labels : ndarray of shape (n_samples,), int64
        """
        check_is_fitted(self)
        return flat_index(self.predict_codes(X), self.grid_)

    def predict_proba(self, X):
        """Responsibilities of the grid cells for ``mu(x)`` (only when K <= 4096).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or image array

        Returns
        -------
        proba : ndarray of shape (n_samples, ``n_components_``)
        """
        check_is_fitted(self)
        if self.n_components_ > MAX_DENSE_COMPONENTS:
            raise ValueError(f"predict_proba builds all {self.n_components_} cells, more than "
                             f"{MAX_DENSE_COMPONENTS}; use predict_codes instead.")
        Z = self.transform(X)
        proba = np.ones((len(Z), 1))
        for m, g in enumerate(self.grid_):
            logits = -0.5 * ((Z[:, m, None] - g) / self.prior_std) ** 2
            r = np.exp(logits - logits.max(axis=1, keepdims=True))
            r /= r.sum(axis=1, keepdims=True)
            proba = (proba[:, :, None] * r[:, None, :]).reshape(len(Z), -1)
        return proba

    # -- generation -----------------------------------------------------------------------

    def sample(self, n_samples=1, random_state=None):
        """Draw from the model: a uniform grid cell, ``z = c + prior_std * xi``, decoded mean.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=None

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
        labels : ndarray of shape (n_samples,)
            Flat index of each sample's cell.
        """
        check_is_fitted(self)
        check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
        rng = check_random_state(random_state)
        codes = np.stack([rng.randint(L, size=n_samples) for L in grid_sizes(self.grid_)], 1)
        Z = self._centres(codes) + self.prior_std * rng.standard_normal(codes.shape)
        return self._decode(Z.astype(np.float32)), flat_index(codes, self.grid_)

    def _centres(self, codes):
        return np.stack([g[c] for g, c in zip(self.grid_, codes.T)], axis=1)

    def decode_codes(self, codes):
        """Decode grid centres exactly (no noise), as in Fig. 10A/B.

        Parameters
        ----------
        codes : array-like of shape (n, n_latent)
            Integer codes, ``codes[:, m]`` in ``[0, len(grid_[m]))``.

        Returns
        -------
        X : ndarray of shape (n, n_features)
        """
        check_is_fitted(self)
        codes = check_codes(codes, self.grid_).astype(np.int64)
        return self._decode(self._centres(codes).astype(np.float32))

    def traverse(self, X, dim, values):
        """Encode X, set latent ``dim`` to each of ``values``, and decode (Fig. 10C/D, 13).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or image array
        dim : int
            Latent dimension to move.
        values : sequence of float
            Values given to ``mu_dim``.

        Returns
        -------
        X_traversed : ndarray of shape (n_samples, len(values), n_features)
        """
        Z = self.transform(X)
        check_scalar_param(dim, "dim", kind="integer", low=0, high=self.n_latent)
        values = np.asarray(values, dtype=np.float64).ravel()
        if values.size == 0 or not np.all(np.isfinite(values)):
            raise ValueError("values must be a non-empty sequence of finite numbers.")
        Zt = np.repeat(Z[:, None], len(values), axis=1)
        Zt[:, :, dim] = values
        out = self._decode(Zt.reshape(-1, self.n_latent).astype(np.float32))
        return out.reshape(len(Z), len(values), -1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # ClusterMixin clears it; transform is BaseVAE's latent mean, float32 for float32 X
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
