"""VAEGenerator: the Gaussian-prior VAE baseline of the topology study."""

import functools
import numbers

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._utils import check_hidden_sizes, check_scalar_param
from .._utils.autoencoder import (
    ImageOutputMixin,
    LatentInterpolationMixin,
    ReconstructionScoreMixin,
)
from .._utils.torch_estimator import EPOCH_CONSTRAINTS, NET_CONSTRAINTS
from ._base import BaseVAE, VAEObjective
from ._modules import build_generator_module


class VAEGenerator(ImageOutputMixin, LatentInterpolationMixin, ReconstructionScoreMixin, BaseVAE):
    """Variational autoencoder with a standard normal prior, as a sampler (the baseline).

    The latent-variable generator of "Implications of data topology for deep generative
    models" (Jin et al. 2024, Section 2.1.1): ``x = D(z)``, ``z ~ N(0, I)``, trained on
    the negative ELBO ``-log p(x | z) + beta KL(q(z | x) || N(0, I))``. A continuous
    decoder of a Euclidean latent cannot reproduce a support with holes (a circle, a
    torus), so it puts mass in them; compare :class:`DiffusionGenerator` and
    :class:`ChartAutoencoder`.

    Parameters
    ----------
    n_latent : int, default=2
    hidden_layer_sizes : sequence of int, default=(128, 128)
        Widths of the SiLU MLP encoder (the decoder mirrors them); unused with images.
    image_shape : tuple of int, default=None
        ``(H, W)`` or ``(C, H, W)`` to fold flat rows. Images (given so or as
        ``(n, C, H, W)`` arrays) use conv stacks: Conv(C->32, 4, 2, 1), Conv(32->64, 4, 2, 1),
        FC 256, FC to the latent, mirrored with transposed convs, sigmoid output (H and W
        divisible by 4).
    beta : float, default=1.0
        Weight of the KL term.
    likelihood : {'gaussian', 'bernoulli'}, default='gaussian'
        'gaussian': fixed standard deviation ``sigma`` on the data scale; 'bernoulli':
        X in [0, 1].
    sigma : float, default=0.05
    max_epochs : int, default=200
    batch_size : int, default=128
    lr : float, default=1e-3
        Adam learning rate.
    callbacks : list of skorch callbacks, default=None
    warm_start : bool, default=False
        True: a second ``fit`` trains the fitted net ``max_epochs`` more epochs.
    device : str or torch.device, default='auto'
        'auto' uses CUDA when available.
    random_state : int, RandomState instance or None, default=None
        Seeds initialisation, batch order and the reparameterisation noise.
    verbose : int, default=0
    **net_params
        skorch settings (``module__*``, ``optimizer__*``, ``iterator_train__*``, ...).

    Attributes
    ----------
    net_ : geolearn.models.ObjectiveNet
        The trained skorch net; ``module_`` is its torch module.
    history_ : skorch.history.History
        The net's training history, one row per epoch: ``train_loss``, ``recon`` and
        ``kl``, e.g. ``history_[:, "kl"]``.
    n_features_in_, image_shape_, device_, n_iter_
        Input width, image shape (or None), device and the number of epochs run.

    See Also
    --------
    ChartAutoencoder : several latent charts.
    DiffusionGenerator : a DDPM, no latent space.

    Examples
    --------
    >>> from geolearn.datasets import make_circle_points
    >>> from geolearn.generative import VAEGenerator
    >>> X = make_circle_points(200, noise=0.05, random_state=0)
    >>> vae = VAEGenerator(hidden_layer_sizes=(16,), max_epochs=2, random_state=0).fit(X)
    >>> vae.sample(5, random_state=0).shape, vae.transform(X).shape
    ((5, 2), (200, 2))
    >>> vae.interpolate(X[0], X[1], n_steps=4).shape
    (4, 2)
    """

    _parameter_constraints = {  # noqa: RUF012
        **NET_CONSTRAINTS,
        "max_epochs": EPOCH_CONSTRAINTS["max_epochs"],  # no weight_decay parameter
        "n_latent": [Interval(numbers.Integral, 1, None, closed="left")],
        "image_shape": ["array-like", None],
        "beta": [Interval(numbers.Real, 0, None, closed="left")],
        "likelihood": [StrOptions({"bernoulli", "gaussian"})],
        "sigma": [Interval(numbers.Real, 0, None, closed="neither")],
    }

    # what BaseVAE reads besides the parameters
    architecture = "mlp"
    prior_std = 1.0
    weight_decay = 0.0
    n_mc_score = 16

    def __init__(self, n_latent=2, hidden_layer_sizes=(128, 128), image_shape=None, beta=1.0,
                 likelihood="gaussian", sigma=0.05, max_epochs=200, batch_size=128, lr=1e-3,
                 callbacks=None, warm_start=False, device="auto", random_state=None, verbose=0,
                 **net_params):
        self.n_latent = n_latent
        self.hidden_layer_sizes = hidden_layer_sizes
        self.image_shape = image_shape
        self.beta = beta
        self.likelihood = likelihood
        self.sigma = sigma
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self._set_net_params(net_params)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Train the VAE on the negative ELBO.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images (n, H, W) / (n, C, H, W)
        y : ignored
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights of the negative ELBO: each batch's loss is the weighted mean
            ``sum_i w_i l_i / sum_i w_i`` of the rows' losses, so integer weights equal
            repeated rows and a weight 0 drops a row.

        Returns
        -------
        self : VAEGenerator
        """
        warm = self._warm()
        sizes = check_hidden_sizes(self.hidden_layer_sizes)
        X = self._validate_X(X, reset=not warm)
        objective = VAEObjective(prior=None, kl_estimator="sample", likelihood=self.likelihood,
                                 sigma=self.sigma, output_activation=self.output_activation,
                                 beta=self.beta)
        module = functools.partial(build_generator_module, n_features=X.shape[1],
                                   n_latent=self.n_latent, image_shape=self.image_shape_,
                                   hidden_layer_sizes=tuple(sizes))
        return self._train_vae(X, None, objective, module=module, sample_weight=sample_weight)

    def sample(self, n_samples=1, random_state=None):
        """Decode ``z ~ N(0, I)``: the mean of ``p(x | z)`` for each draw.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=None

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
        Z = check_random_state(random_state).standard_normal((n_samples, self.n_latent))
        return self._decode(Z.astype(np.float32))
