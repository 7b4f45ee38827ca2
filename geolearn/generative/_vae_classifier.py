"""VAEClassifier: a VAE with a classification head on the latent code (Eq. 29)."""

import numbers

import numpy as np
import torch
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_consistent_length, check_is_fitted, column_or_1d

from .._utils import to_numpy
from ..models import frozen
from ._base import BaseVAE, VAEObjective
from ._grid import check_grid
from ._losses import GridPrior


class VAEClassifier(ClassifierMixin, BaseVAE):
    """VAE trained jointly with a softmax head on z: ELBO + weighted cross-entropy (Eq. 29).

    Maximises ``E_q[log p(x|z)] - KL(q(z|x) || p(z)) + classification_weight *
    E_q[y^T log h(z)]``. Predictions use ``z = mu(x)``. Together with
    :class:`ELBOPurifier` one model both purifies and classifies, the test-time
    defence of "Probabilistic and semantic descriptions of image manifolds and
    their applications" (Section 4).

    Parameters
    ----------
    n_latent : int, default=16
    classification_weight : float, default=8.0
        ``lambda`` of Eq. 29 (per-sample weight of the cross-entropy).
    prior : {'normal', 'grid'}, default='normal'
        ``N(0, I)`` (closed-form KL) or the grid mixture of :class:`GridVAE`.
    grid_values : sequence of float or list of sequences, default=(0, 1)
        Grid of the 'grid' prior.
    prior_std : float, default=1/3
        Component std of the 'grid' prior.
    kl_estimator : {'sample', 'batch', 'nearest'}, default='sample'
        KL estimator of the 'grid' prior (see :class:`GridVAE`).
    likelihood : {'bernoulli', 'gaussian'}, default='bernoulli'
    sigma : float, default=1/sqrt(2)
        Standard deviation of the Gaussian decoder.
    output_activation : {'sigmoid', 'identity'}, default='sigmoid'
    architecture : {'mlp', 'conv', 'resnet'} or callable, default='mlp'
    hidden_layer_sizes : sequence of int, default=(256, 128)
    conv_channels : int, default=32
    image_shape : tuple of int, default=None
    max_epochs : int, default=100
    batch_size : int, default=128
    lr : float, default=1e-3
    weight_decay : float, default=0.0
    n_mc_score : int, default=16
    callbacks : list of skorch callbacks, default=None
    warm_start : bool, default=False
        True: a second ``fit`` continues training the fitted net (same classes).
    device : str or torch.device, default='auto'
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
    **net_params
        skorch settings of the net (``module__*``, ``optimizer__*``,
        ``iterator_train__*``, ...), as in :class:`GridVAE`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    net_ : geolearn.models.ObjectiveNet
        The trained skorch net; ``module_`` is its torch module (with ``head``):
        ``module_(x)`` returns ``(logits, mu, logvar)`` with ``logits = h(mu(x))``, so
        :func:`geolearn.models.as_model` sees the class logits and every attack of
        :mod:`geolearn.adversarial` takes the fitted classifier itself.
    n_features_in_, image_shape_, device_, n_iter_
    history_ : skorch.history.History
        The net's training history, one row per epoch: ``train_loss``, ``recon``,
        ``kl`` and ``ce``, e.g. ``history_[:, "ce"]``.

    See Also
    --------
    GridVAE, ELBOPurifier, patch_attack

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.generative import VAEClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((60, 10)); y = (X[:, 0] > 0.5).astype(int)
    >>> clf = VAEClassifier(n_latent=4, hidden_layer_sizes=(16,), max_epochs=3, random_state=0)
    >>> clf.fit(X, y).predict_proba(X[:2]).shape
    (2, 2)
    """

    _parameter_constraints = {
        **BaseVAE._parameter_constraints,
        "classification_weight": [Interval(numbers.Real, 0, None, closed="left")],
        "prior": [StrOptions({"normal", "grid"})],
        "grid_values": ["array-like"],
    }

    def __init__(self, n_latent=16, classification_weight=8.0, prior="normal",
                 grid_values=(0, 1), prior_std=1 / 3, kl_estimator="sample",
                 likelihood="bernoulli", sigma=0.7071067811865476,
                 output_activation="sigmoid", architecture="mlp", hidden_layer_sizes=(256, 128),
                 conv_channels=32, image_shape=None, max_epochs=100, batch_size=128, lr=1e-3,
                 weight_decay=0.0, n_mc_score=16, callbacks=None, warm_start=False,
                 device="auto", random_state=None, verbose=0, **net_params):
        self.n_latent = n_latent
        self.classification_weight = classification_weight
        self.prior = prior
        self.grid_values = grid_values
        self.prior_std = prior_std
        self.kl_estimator = kl_estimator
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

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Train the VAE and its head.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images (n, H, W) / (n, C, H, W)
        y : array-like of shape (n_samples,)
            Class labels (at least 2 classes).
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights of the objective (negative ELBO plus weighted cross-entropy): each batch's loss is the weighted mean
            ``sum_i w_i l_i / sum_i w_i`` of the rows' losses, so integer weights equal
            repeated rows and a weight 0 drops a row.

        Returns
        -------
        self : VAEClassifier
        """
        warm = self._warm()
        self._check_common_params()
        X = self._validate_X(X, reset=not warm)
        y_t = torch.as_tensor(self._encode_labels(X, y, warm), dtype=torch.long)
        prior = None
        if self.prior == "grid":
            prior = GridPrior(check_grid(self.grid_values, self.n_latent), self.prior_std)
        objective = VAEObjective(
            prior=prior, kl_estimator=self.kl_estimator, likelihood=self.likelihood,
            sigma=self.sigma, output_activation=self.output_activation,
            classification_weight=self.classification_weight)
        return self._train_vae(X, y_t, objective, n_classes=len(self.classes_),
                               parts=("recon", "kl", "ce"),
                               drop_last=prior is not None and self.kl_estimator == "batch",
                               sample_weight=sample_weight)

    def _encode_labels(self, X, y, warm):
        """``y`` as indices into ``classes_`` (set here unless the fit continues a warm net)."""
        if y is None:
            raise ValueError("VAEClassifier requires y to be passed, but the target y is None.")
        y = column_or_1d(y, warn=True)
        check_consistent_length(X, y)
        check_classification_targets(y)
        encoder = LabelEncoder()
        if warm:
            encoder.classes_ = self.classes_
            return encoder.transform(y)
        self.classes_ = encoder.fit(y).classes_
        if len(self.classes_) < 2:
            raise ValueError(f"y has {len(self.classes_)} class; VAEClassifier needs at least 2 "
                             "classes.")
        return encoder.transform(y)

    def predict_proba(self, X):
        """Class probabilities ``softmax(h(mu(x)))``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or image array

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes), float64
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        with frozen(self.module_), torch.no_grad():
            proba = [self.module_(x)[0].double().softmax(-1) for x in self._batches(X)]
        return np.concatenate([to_numpy(p) for p in proba])

    def predict(self, X):
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or image array

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        proba = self.predict_proba(X)
        return self.classes_[proba.argmax(axis=1)]
