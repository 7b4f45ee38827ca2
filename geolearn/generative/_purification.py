"""ELBO purification (Eq. 30): move an input up the ELBO of a fitted VAE before classifying it."""

import numbers

import numpy as np
import torch
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils import check_mask, iter_batches, preserved_dtype, to_numpy
from .._utils.autoencoder import check_unit_interval
from .._utils.row_noise import row_draws, row_seeds
from ..models import as_model, fit_or_use
from ..models._internal import fit_router, route_fit_params


class ELBOPurifier(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Test-time purification: ``x + argmax_{delta in C} ELBO(x + delta)`` (Eq. 30).

    ``C`` keeps ``x + delta`` inside ``clip`` and, when ``epsilon`` is set,
    ``||delta||_p <= epsilon``. The maximisation is projected signed-gradient ascent from
    ``delta = 0`` with a fresh reparameterised ``z`` at every step. Further restarts begin
    at ``U[-epsilon, epsilon]`` (``U[-1/8, 1/8]`` when unbounded), alternate the step
    between ``step_size`` and ``2 * step_size``, and each sample keeps the restart with the
    highest final ELBO at ``z = mu``. The model is frozen (eval mode, no parameter
    gradients; every submodule's mode restored afterwards).

    Parameters
    ----------
    estimator : GridVAE or VAEClassifier
        A fitted VAE is used as it is; an unfitted one is cloned and fitted on
        ``(X, y)`` by :meth:`fit` (:func:`geolearn.models.fit_or_use`). ``clone`` and
        ``GridSearchCV`` unfit a fitted estimator: wrap it in
        ``sklearn.frozen.FrozenEstimator`` to keep it as trained.
    n_steps : int, default=256
    step_size : float, default=1/255
    norm : {'linf', 'l2'}, default='linf'
        The bound on ``delta`` ('l2' rescales ``delta`` onto the ball, then clips to the
        box: an approximate projection).
    epsilon : float, default=None
        Norm bound; None removes it (the patch setting of Section 4.2).
    n_restarts : int, default=1
    mask : array-like of bool, default=None
        Restricts the update to these features (shape ``(n_features,)`` or the image
        shape); e.g. the patch support when the defender knows it.
    clip : (float, float), default=(0.0, 1.0)
        The box of valid inputs.
    batch_size : int, default=256
    random_state : int, RandomState instance or None, default=None
        Seeds the restarts and the reparameterisation noise. Each sample draws them
        from its own generator, seeded by ``random_state`` and the sample's values, so
        a sample's purification does not depend on the other samples, their order or
        ``batch_size``, nor on torch's global RNG.

    Attributes
    ----------
    estimator_ : estimator
        The VAE used: ``estimator`` itself when it was fitted, else a fitted clone.
    n_features_in_ : int

    Notes
    -----
    With a weak likelihood an unbounded ascent drifts towards a prototype image: a
    Gaussian (``sigma=1/sqrt(2)``) VAE on 8x8 digits makes clean images
    unrecognisable after 256 steps, while the Bernoulli likelihood keeps them.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.generative import ELBOPurifier, VAEClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((40, 16)); y = (X[:, 0] > 0.5).astype(int)
    >>> clf = VAEClassifier(n_latent=2, hidden_layer_sizes=(8,), max_epochs=2, random_state=0)
    >>> pfy = ELBOPurifier(clf.fit(X, y), n_steps=8, random_state=0).fit(X)
    >>> X_pfy = pfy.transform(X)
    >>> X_pfy.shape, bool(X_pfy.min() >= 0 and X_pfy.max() <= 1)
    ((40, 16), True)
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "_torch_neg_elbo"])],
        "n_steps": [Interval(numbers.Integral, 1, None, closed="left")],
        "step_size": [Interval(numbers.Real, 0, None, closed="neither")],
        "norm": [StrOptions({"linf", "l2"})],
        "epsilon": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "n_restarts": [Interval(numbers.Integral, 1, None, closed="left")],
        "mask": ["array-like", None],
        "clip": [tuple, list],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator, *, n_steps=256, step_size=1 / 255, norm="linf",
                 epsilon=None, n_restarts=1, mask=None, clip=(0.0, 1.0), batch_size=256,
                 random_state=None):
        self.estimator = estimator
        self.n_steps = n_steps
        self.step_size = step_size
        self.norm = norm
        self.epsilon = epsilon
        self.n_restarts = n_restarts
        self.mask = mask
        self.clip = clip
        self.batch_size = batch_size
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, **fit_params):
        """Fit the VAE unless it is already fitted, and check the data against it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), default=None
            Passed to ``estimator.fit`` (needed by a VAEClassifier).
        **fit_params : dict
            Metadata (``sample_weight``, ...) routed to the estimator's ``fit`` as
            it requested (``set_fit_request``); only with
            ``sklearn.set_config(enable_metadata_routing=True)``.

        Returns
        -------
        self : ELBOPurifier
        """
        routed = route_fit_params(self, fit_params)
        self.estimator_ = fit_or_use(self.estimator, X, y, **routed["estimator"])
        X = validate_data(self, X, dtype=np.float32, reset=True)
        if X.shape[1] != self.estimator_.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features but the estimator expects "
                             f"{self.estimator_.n_features_in_}.")
        if self.mask is not None:
            check_mask(self.mask, X.shape[1])
        return self

    def get_metadata_routing(self):
        """The metadata routing of this object: ``fit`` routes to the estimator's ``fit``.

        Returns
        -------
        routing : sklearn.utils.metadata_routing.MetadataRouter
        """
        return fit_router(self, estimator=self.estimator)

    def _project(self, delta, x):
        """Onto the norm ball (if bounded), then onto the box ``clip``."""
        if self.epsilon is not None:
            if self.norm == "linf":
                delta = delta.clamp(-self.epsilon, self.epsilon)
            else:
                norms = delta.norm(dim=1, keepdim=True).clamp_min(1e-12)
                delta = delta * (self.epsilon / norms).clamp(max=1.0)
        lo, hi = self.clip
        return (x + delta).clamp(lo, hi) - x

    def transform(self, X):
        """Purify X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs inside ``clip``.

        Returns
        -------
        X_purified : ndarray of shape (n_samples, n_features)
            float32 for float32 ``X`` (the VAE computes in float32), else float64.
        """
        check_is_fitted(self)
        dtype = preserved_dtype(X)
        X = validate_data(self, X, dtype=np.float32, reset=False)
        check_unit_interval(X, bounds=self.clip, what=f"ELBOPurifier with clip={self.clip}",
                            advice="Scale X like the training data or change clip.")
        est = self.estimator_
        model = as_model(est)
        # the gradient of the negative ELBO (a function of the input) with respect to the
        # input, at the reparameterisation draw of the current step (noise[0])
        noise = [None]
        grad_fn = as_model(lambda x: est._torch_neg_elbo(x, noise=noise[0])).input_gradient_fn()
        support = (torch.ones(X.shape[1], device=model.device) if self.mask is None else
                   torch.as_tensor(check_mask(self.mask, X.shape[1]), dtype=torch.float32,
                                   device=model.device))
        # two per-row streams (restart starts, z draws), each extended, never changed, by
        # more restarts: restart r is the same for any n_restarts > r
        seeds = [row_seeds(X, self.random_state, stream=f"ELBOPurifier.transform/{what}")
                 for what in ("starts", "z")]
        out = np.empty(X.shape, dtype=dtype)
        with model.frozen():
            for sl in iter_batches(len(X), self.batch_size):
                x = model.to_tensor(X[sl])
                out[sl] = to_numpy(self._purify(est, grad_fn, noise, x, support, [s[sl] for s in seeds]))
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def _purify(self, est, grad_fn, noise, x, support, seeds):
        """Per sample, the restart whose end point has the lowest negative ELBO at ``z = mu``."""
        radius = self.epsilon if self.epsilon is not None else 1 / 8
        n_latent = est._n_features_out  # the VAE's code size
        # per row: the restarts' starts in U[-1, 1] and every step's standard normal z draw
        (starts,) = row_draws(seeds[0], [("uniform", (self.n_restarts, x.shape[1]))],
                              dtype=x.dtype, device=x.device)
        (z_noise,) = row_draws(seeds[1], [("normal", (self.n_restarts, self.n_steps, n_latent))],
                               dtype=x.dtype, device=x.device)
        best, best_loss = x, torch.full((len(x),), np.inf, device=x.device)
        for r in range(self.n_restarts):
            step = self.step_size * (1 + r % 2)
            delta = torch.zeros_like(x) if r == 0 else starts[:, r] * radius * support
            delta = self._project(delta, x)
            for i in range(self.n_steps):
                noise[0] = z_noise[:, r, i]
                grad = grad_fn(x + delta)
                delta = self._project(delta - step * grad.sign() * support, x)
            with torch.no_grad():
                final = est._torch_neg_elbo(x + delta, stochastic=False)
            better = final < best_loss
            best = torch.where(better[:, None], x + delta, best)
            best_loss = torch.where(better, final, best_loss)
        return best
