"""Paper 2: local affine maps as points of a dual space; network reduction by k-means and
linear maps between the local linear functions of two networks."""

from numbers import Integral, Real

import numpy as np
import torch
from scipy import linalg
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils import (
    check_numeric_array,
    fitted_on_success,
    iter_batches,
    resolve_device,
    small_ops_threads,
    warn_user,
)
from ..exceptions import GeolearnWarning, NumericalWarning
from ..models import as_model
from ..models._internal import BinaryProba, fit_router, route_fit_params
from ._maps import forward_bits, local_maps, unique_patterns
from ._network import (
    _OUTPUT_ACTIVATIONS,
    ReLUNet,
    _classes_of,
    as_relu_network,
    fitted_network,
    needs_fit,
)

_PIECEWISE_LINEAR = (torch.nn.ReLU, torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d,
                     torch.nn.Conv3d, torch.nn.MaxPool1d, torch.nn.MaxPool2d, torch.nn.AvgPool1d,
                     torch.nn.AvgPool2d, torch.nn.AdaptiveAvgPool2d, torch.nn.BatchNorm1d,
                     torch.nn.BatchNorm2d, torch.nn.Flatten, torch.nn.Identity, torch.nn.Dropout,
                     torch.nn.LeakyReLU, torch.nn.Sequential)


def _autograd_model(network, batch_size):
    """``(adapter, layer)``: the network in float64 and the layer whose output is ``G(x)``.

    ``layer`` is None (the output), or the last layer before a trailing output
    activation of an ``nn.Sequential`` (the logits).
    """
    model = as_model(network, batch_size=batch_size, dtype=torch.float64)
    if model.module is None:
        raise ValueError(f"network is a {model.name}, seen only as a black box; local "
                         "affine maps need a torch module, a skorch net or an MLP.")
    # the local maps are float64 (the spec's precision) and geolearn never casts a user's
    # module: a module in another dtype is copied once
    model = model.to(dtype=torch.float64)
    kept, layer = [model.module], None
    if isinstance(model.module, torch.nn.Sequential) and len(model.module):
        names, kept = zip(*model.module.named_children())
        keep = len(kept)
        while keep and isinstance(kept[keep - 1], (BinaryProba, *_OUTPUT_ACTIVATIONS)):
            keep -= 1
        if keep == 0:
            raise ValueError("network has no layer before its output activation.")
        kept, layer = kept[:keep], (names[keep - 1] if keep < len(kept) else None)
    other = sorted({type(m).__name__ for top in kept for m in top.modules()
                    if not isinstance(m, _PIECEWISE_LINEAR) and len(list(m.children())) == 0})
    if other:
        warn_user(f"network contains {', '.join(other)} layers that may not be piecewise "
                  "linear: the local rows are tangent maps (Jacobians), not exact local "
                  "affine maps.", GeolearnWarning)
    return model, layer


def _local_form(network, batch_size=1024):
    """How the local maps of ``network`` are computed: a :class:`ReLUNet` (exact recurrence)
    or, for any other torch module, ``(adapter, layer)`` (autograd)."""
    try:
        return as_relu_network(network)
    except ValueError:
        return _autograd_model(network, batch_size)


def _form_rows(form, X, *, image_shape=None, batch_size=1024, device="cpu"):
    """:func:`local_rows` of a network resolved once by :func:`_local_form`."""
    if isinstance(form, ReLUNet):
        bits = forward_bits(form, X, device=device, batch_size=batch_size)[0]
        patterns, labels, _ = unique_patterns(bits)
        W, b = local_maps(form, patterns, device=device, batch_size=batch_size)
        return W[labels], b[labels]
    model, layer = form
    Xs = X if image_shape is None else X.reshape(len(X), *image_shape)
    out = model.features(Xs, layer).reshape(len(X), -1)
    J = model.jacobian(Xs, layer).reshape(len(X), out.shape[1], -1)
    return J, out - np.einsum("nom,nm->no", J, X)


def local_rows(network, X, *, image_shape=None, batch_size=1024, device="auto"):
    """Local affine map ``G(x) = W(x) x + b(x)`` of a network at each sample.

    Exact recurrence for ReLU MLPs (:func:`as_relu_network`); autograd
    (``b = G(x) - J(x) x``, float64) for any other torch module, as paper 2's
    code did for conv nets.

    Parameters
    ----------
    network : ReLUNet, torch.nn.Module or fitted MLP
        A network :func:`as_relu_network` converts, or any torch module.
    X : array-like of shape (n, m) or (n, ...)
        The samples; images are flattened to ``m`` features.
    image_shape : tuple of int, optional
        How the module (not a :class:`ReLUNet`) wants one sample shaped.
    batch_size : int, default=1024
        Samples per chunk.
    device : str or torch.device, default="auto"
        ``"auto"``: CUDA when available, else the CPU.

    Returns
    -------
    W : ndarray of shape (n, o, m)
    b : ndarray of shape (n, o)

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.polytopes import local_rows
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> net = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))
    >>> X = np.random.RandomState(0).randn(4, 3)
    >>> W, b = local_rows(net, X)
    >>> G = net(torch.as_tensor(X, dtype=torch.float32)).detach().numpy()
    >>> W.shape, bool(np.allclose(np.einsum("nom,nm->no", W, X) + b, G, atol=1e-5))
    ((4, 2, 3), True)
    """
    device = resolve_device(device)
    X = check_numeric_array(X, "X", allow_nd=True)
    return _form_rows(_local_form(network, batch_size), X, image_shape=image_shape,
                     batch_size=batch_size, device=device)


def _classes(network, n_outputs):
    classes = _classes_of(network)
    if classes is not None:
        return classes
    return np.arange(2 if n_outputs == 1 else n_outputs)


def _rows(W, b, include_bias):
    return np.concatenate([W, b[..., None]], axis=2) if include_bias else W


def _evaluate(rows, X, include_bias):
    """``y_j = [x; 1] . row_j`` (or ``x . w_j``) per sample and output."""
    Xa = np.column_stack([X, np.ones(len(X))]) if include_bias else X
    return np.einsum("nod,nd->no", rows, Xa)


class LocalLinearMap(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Per-output linear maps between the local affine maps of two networks (paper 2, eq. 8).

    For output ``j`` the local rows ``c_j(x) = [w_j(x), b_j(x)]`` of the source
    network at the fit samples are stacked into ``C_j^(1)`` (eq. 7), those of the
    target into ``C_j^(2)``, and ``M_j = argmin ||C_j^(1) M - C_j^(2)||_F`` (least
    squares without intercept, minimum norm when rank-deficient). At a new
    ``x``, the mapped row ``c_j^(1)(x) M_j`` evaluated at ``x`` gives output ``j``
    (a function that is no longer continuous).

    Parameters
    ----------
    source, target : object, default=None
        Networks with the same input and output sizes: ReLU MLPs (exact
        local maps) or any torch module / skorch net (autograd). Unfitted
        scikit-learn / skorch networks are fitted on ``(X, y)``.
    include_bias : bool, default=True
        Map ``[w, b]`` rows (paper's Table 2); False maps weights only.
    alpha : float, default=0.0
        Ridge penalty (0: minimum-norm least squares).
    image_shape : tuple of int, default=None
        Shape each flat row is reshaped to before calling a torch module.
    max_memory : float, default=2e9
        Bytes for the local maps of both networks and the arrays computed from them
        (``8·o·d`` float64 numbers per sample); above it the normal equations are
        accumulated in batches of samples that fit it (squared conditioning, warned).
    batch_size : int, default=1024
    device : str, default='auto'

    Attributes
    ----------
    maps_ : ndarray of shape (o, d, d)
        ``d = m + 1`` (or ``m`` without bias).
    rank_ : ndarray of shape (o,)
    r2_fit_ : ndarray of shape (o,)
        Coefficient R^2 of the mapped rows on the fit set.
    classes_ : ndarray
    n_features_in_ : int
    n_outputs_ : int

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.neural_network import MLPClassifier
    >>> from geolearn.polytopes import LocalLinearMap
    >>> X, y = load_iris(return_X_y=True)
    >>> a = MLPClassifier((16,), max_iter=2000, random_state=0).fit(X, y)
    >>> llm = LocalLinearMap(source=a, target=a).fit(X)
    >>> bool((llm.predict(X) == a.predict(X)).all())
    True
    """

    _parameter_constraints = {  # noqa: RUF012
        "source": "no_validation",  # any network, or None
        "target": "no_validation",
        "include_bias": ["boolean"],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "image_shape": ["array-like", None],
        "max_memory": [Interval(Real, 0, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "device": "no_validation",
    }

    def __init__(self, source=None, target=None, *, include_bias=True, alpha=0.0,
                 image_shape=None, max_memory=2e9, batch_size=1024, device="auto"):
        self.source = source
        self.target = target
        self.include_bias = include_bias
        self.alpha = alpha
        self.image_shape = image_shape
        self.max_memory = max_memory
        self.batch_size = batch_size
        self.device = device

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        # float64 only: the affine maps of the regions are solved exactly in float64
        tags.transformer_tags.preserves_dtype = ["float64"]
        tags.target_tags.required = needs_fit(self.source) or needs_fit(self.target)
        return tags

    def _local(self, which, X):
        return _form_rows(self._forms[which], X, image_shape=self.image_shape,
                         batch_size=self.batch_size, device=self._device)

    def get_metadata_routing(self):
        """The metadata routing of this object: ``fit`` routes to the networks' ``fit``.

        Returns
        -------
        routing : sklearn.utils.metadata_routing.MetadataRouter
        """
        return fit_router(self, source=self.source, target=self.target)

    @fitted_on_success
    @_fit_context(prefer_skip_nested_validation=False)  # unfitted networks are fitted here
    def fit(self, X, y=None, **fit_params):
        """Fit one map per output from the local rows of both networks at ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, m)
        y : array-like, optional
            Used only to fit unfitted scikit-learn / skorch networks (on ``X, y``
            as given).
        **fit_params : dict
            Metadata (``sample_weight``, ...) routed to the networks' ``fit`` as
            it requested (``set_fit_request``); only with
            ``sklearn.set_config(enable_metadata_routing=True)``.

        Returns
        -------
        self : LocalLinearMap
        """
        routed = route_fit_params(self, fit_params, names=("source", "target"))
        self._device = resolve_device(self.device)
        X_given, X = X, validate_data(self, X, dtype=np.float64)
        self.source_ = fitted_network(self.source, X_given, y, "source", **routed["source"])
        self.target_ = fitted_network(self.target, X_given, y, "target", **routed["target"])
        self._forms = {"source": _local_form(self.source_, self.batch_size),
                       "target": _local_form(self.target_, self.batch_size)}
        o = self._check_networks(X)
        n, m = X.shape
        d = m + 1 if self.include_bias else m
        if n < d:
            warn_user(f"{n} samples for maps of size {d} x {d}: the least-squares problem "
                      "is underdetermined (minimum-norm solution).", NumericalWarning)
        # per sample, o x d numbers each: the local maps of both networks as computed and as
        # gathered per sample, their rows, and the temporaries of the sums over samples
        per_row = 8 * o * d * 8
        if n * per_row <= self.max_memory:
            C1 = _rows(*self._local("source", X), self.include_bias)
            C2 = _rows(*self._local("target", X), self.include_bias)
            # one small least-squares problem per output: on one BLAS thread, 40-60x faster
            # than two on a shared machine (benchmarks/RESULTS.md); C order: a pickle round
            # trip must not change the einsum path (bitwise outputs)
            with small_ops_threads(blas=True):
                self.maps_ = np.ascontiguousarray([self._solve(C1[:, j], C2[:, j])
                                                   for j in range(o)])
                self.rank_ = np.array([np.linalg.matrix_rank(C1[:, j]) for j in range(o)])
            self.r2_fit_ = self._r2(C1, C2)
        else:
            self._fit_normal_equations(X, o, d, max(1, min(self.batch_size,
                                                          int(self.max_memory // per_row))))
        self.n_outputs_ = o
        self.classes_ = _classes(self.target_, o)
        self._is_classifier = _classes_of(self.target_) is not None
        return self

    def _check_networks(self, X):
        """The number of outputs ``o``, once both networks are checked to map ``m -> o``."""
        m = X.shape[1]
        for name, form in self._forms.items():
            if isinstance(form, ReLUNet) and form.n_inputs != m:
                raise ValueError(f"X has {m} features but the {name} network expects "
                                 f"{form.n_inputs} inputs; source and target must have the same "
                                 "inputs and outputs.")
        W1, _ = self._local("source", X[:1])
        W2, _ = self._local("target", X[:1])
        if W1.shape != W2.shape:
            raise ValueError(f"source and target must have the same inputs and outputs: source "
                             f"maps {W1.shape[2]} -> {W1.shape[1]}, target {W2.shape[2]} -> "
                             f"{W2.shape[1]}.")
        if W1.shape[2] != m:
            raise ValueError(f"X has {m} features but the networks expect {W1.shape[2]} inputs.")
        return W1.shape[1]

    def _solve(self, C1, C2):
        if self.alpha == 0:
            return linalg.lstsq(C1, C2, lapack_driver="gelsd")[0]
        d = C1.shape[1]
        return linalg.solve(C1.T @ C1 + self.alpha * np.eye(d), C1.T @ C2, assume_a="pos")

    def _fit_normal_equations(self, X, o, d, chunk):
        warn_user("local rows exceed max_memory: solving the normal equations accumulated "
                  "in batches (squared conditioning).", NumericalWarning)
        G, K = np.zeros((o, d, d)), np.zeros((o, d, d))
        for sl in iter_batches(len(X), chunk):
            C1 = _rows(*self._local("source", X[sl]), self.include_bias)
            C2 = _rows(*self._local("target", X[sl]), self.include_bias)
            G += np.einsum("noa,nob->oab", C1, C1)
            K += np.einsum("noa,nob->oab", C1, C2)
        eye = self.alpha * np.eye(d)
        with small_ops_threads(blas=True):  # one small problem per output, as in fit
            self.maps_ = np.ascontiguousarray([linalg.lstsq(G[j] + eye, K[j])[0]
                                               for j in range(o)])
            self.rank_ = np.array([np.linalg.matrix_rank(G[j]) for j in range(o)])
        self.r2_fit_ = self._streamed_r2(X, chunk)

    def _streamed_r2(self, X, chunk):
        """:meth:`coefficient_r2` of all of ``X``, its sums accumulated chunk by chunk.

        r2_score's definition per column (a constant column scores 1 when fitted exactly,
        else 0), averaged over the ``d`` columns of each output; the squares are taken
        about the first chunk's means, so that a constant column sums to exactly 0.
        """
        shift, n, res, s1, s2 = None, 0, 0.0, 0.0, 0.0
        for sl in iter_batches(len(X), chunk):
            C1 = _rows(*self._local("source", X[sl]), self.include_bias)
            C2 = _rows(*self._local("target", X[sl]), self.include_bias)
            res = res + ((C2 - np.einsum("noa,oab->nob", C1, self.maps_)) ** 2).sum(axis=0)
            shift = C2.mean(axis=0) if shift is None else shift
            s1, s2 = s1 + (C2 - shift).sum(axis=0), s2 + ((C2 - shift) ** 2).sum(axis=0)
            n += len(C2)
        tot = s2 - s1**2 / n
        exact = np.where(res == 0, 1.0, 0.0)
        return np.where(tot > 0, 1 - res / np.where(tot > 0, tot, 1.0), exact).mean(axis=1)

    def _r2(self, C1, C2):
        mapped = np.einsum("noa,oab->nob", C1, self.maps_)
        return np.array([r2_score(C2[:, j], mapped[:, j]) for j in range(C1.shape[1])])

    def _check(self, X):
        check_is_fitted(self, "maps_")
        return validate_data(self, X, dtype=np.float64, reset=False)

    @property
    def _n_features_out(self):
        return self.maps_.shape[0] * self.maps_.shape[2]

    def transform(self, X):
        """Mapped local rows ``c_j^(1)(x) M_j``, flattened to ``(n, o * d)``."""
        X = self._check(X)
        C1 = _rows(*self._local("source", X), self.include_bias)
        return np.einsum("noa,oab->nob", C1, self.maps_).reshape(len(X), -1)

    def decision_function(self, X):
        """Mapped outputs ``y_j(x) = [x; 1] . c_j`` of shape (n, o)."""
        X = self._check(X)
        rows = self.transform(X).reshape(len(X), self.n_outputs_, -1)
        return _evaluate(rows, X, self.include_bias)

    def predict(self, X):
        """``classes_[argmax_j y_j]`` (one output: ``classes_[1]`` iff ``y > 0``); the
        outputs themselves when the target is not a classifier."""
        out = self.decision_function(X)
        if not self._is_classifier:
            return out.ravel() if out.shape[1] == 1 else out
        if out.shape[1] == 1:
            return self.classes_[(out[:, 0] > 0).astype(int)]
        return self.classes_[np.argmax(out, axis=1)]

    def score(self, X, y):
        """Accuracy against ``y`` (R^2 of the outputs when the target is not a classifier)."""
        pred = self.predict(X)
        if self._is_classifier:
            return accuracy_score(y, pred)
        return r2_score(y, pred)

    def coefficient_r2(self, X):
        """R^2 between the mapped rows and the target's own rows at ``X``, per output."""
        X = self._check(X)
        C1 = _rows(*self._local("source", X), self.include_bias)
        C2 = _rows(*self._local("target", X), self.include_bias)
        return self._r2(C1, C2)


class LocalLinearClustering(ClassifierMixin, BaseEstimator):
    """Network reduction by k-means on local affine maps (paper 2, Section 2.4.1).

    Per output ``j``, k-means with ``n_clusters`` centres runs on the local rows
    ``[w_j(x), b_j(x)]`` of the fit samples. At prediction the network's own
    row at ``x`` is replaced by its nearest centre ``(w, b)``, the output is
    ``w . x + b`` and the class the argmax over outputs. ``n_clusters=1`` is one
    global linear model; accuracy against ``n_clusters`` measures how few
    affine pieces the network really uses.

    Parameters
    ----------
    network : object, default=None
        A ReLU MLP (exact rows) or any torch module / skorch net (autograd);
        unfitted scikit-learn / skorch networks are fitted on ``(X, y)``.
    n_clusters : int, default=10
    include_bias : bool, default=True
        Cluster ``[w, b]`` rows; False clusters weights only (outputs ``w . x``).
    algorithm : {'kmeans', 'minibatch'}, default='kmeans'
        ``'minibatch'``: the paper's ``MiniBatchKMeans(init_size=max(300, 3k))``.
    n_init : 'auto' or int, default='auto'
    random_state : int, RandomState or None, default=None
    image_shape : tuple of int, default=None
    batch_size : int, default=1024
    device : str, default='auto'

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (o, n_clusters, d)
    inertia_ : ndarray of shape (o,)
    n_distinct_maps_ : ndarray of shape (o,)
        Distinct local rows per output among the fit samples.
    classes_ : ndarray
    n_features_in_ : int
    network_ : object
        The (fitted) network.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.neural_network import MLPClassifier
    >>> from geolearn.polytopes import LocalLinearClustering
    >>> X, y = load_iris(return_X_y=True)
    >>> mlp = MLPClassifier((16,), max_iter=2000, random_state=0).fit(X, y)
    >>> red = LocalLinearClustering(mlp, n_clusters=3, random_state=0).fit(X)
    >>> red.cluster_centers_.shape
    (3, 3, 5)
    >>> bool(red.score(X, y) > 0.9)
    True
    """

    _parameter_constraints = {  # noqa: RUF012
        "network": "no_validation",  # any network, or None
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "include_bias": ["boolean"],
        "algorithm": [StrOptions({"kmeans", "minibatch"})],
        "n_init": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "image_shape": ["array-like", None],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "device": "no_validation",
    }

    def __init__(self, network=None, *, n_clusters=10, include_bias=True, algorithm="kmeans",
                 n_init="auto", random_state=None, image_shape=None, batch_size=1024,
                 device="auto"):
        self.network = network
        self.n_clusters = n_clusters
        self.include_bias = include_bias
        self.algorithm = algorithm
        self.n_init = n_init
        self.random_state = random_state
        self.image_shape = image_shape
        self.batch_size = batch_size
        self.device = device

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags

    def _rows(self, X):
        W, b = _form_rows(self._form, X, image_shape=self.image_shape,
                         batch_size=self.batch_size, device=self._device)
        return _rows(W, b, self.include_bias)

    def get_metadata_routing(self):
        """The metadata routing of this object: ``fit`` routes to the network's ``fit``.

        Returns
        -------
        routing : sklearn.utils.metadata_routing.MetadataRouter
        """
        return fit_router(self, network=self.network)

    @fitted_on_success
    @_fit_context(prefer_skip_nested_validation=False)  # an unfitted network is fitted here
    def fit(self, X, y=None, **fit_params):
        """Cluster the local rows of the network at ``X``, output by output.

        Parameters
        ----------
        X : array-like of shape (n_samples, m)
        y : array-like, optional
            Used only to fit an unfitted scikit-learn / skorch ``network`` (on
            ``X, y`` as given).
        **fit_params : dict
            Metadata (``sample_weight``, ...) routed to the network's ``fit`` as
            it requested (``set_fit_request``); only with
            ``sklearn.set_config(enable_metadata_routing=True)``.

        Returns
        -------
        self : LocalLinearClustering
        """
        routed = route_fit_params(self, fit_params, names=("network",))
        self._device = resolve_device(self.device)
        X_given, X = X, validate_data(self, X, dtype=np.float64)
        if self.n_clusters > len(X):
            raise ValueError(f"n_clusters={self.n_clusters} exceeds the number of samples "
                             f"({len(X)}).")
        self.network_ = fitted_network(self.network, X_given, y, **routed["network"])
        self._form = _local_form(self.network_, self.batch_size)
        C = self._rows(X)
        if C.shape[2] - int(self.include_bias) != X.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features, but the network is expecting "
                             f"{C.shape[2] - int(self.include_bias)} features as input.")
        rng = check_random_state(self.random_state)
        centers, inertia, distinct = [], [], []
        for j in range(C.shape[1]):
            k = self.n_clusters
            if self.algorithm == "kmeans":
                km = KMeans(k, n_init=self.n_init, random_state=rng)
            else:
                km = MiniBatchKMeans(k, n_init=self.n_init, init_size=max(300, 3 * k),
                                     random_state=rng)
            km.fit(C[:, j])
            centers.append(km.cluster_centers_)
            inertia.append(km.inertia_)
            scale = max(float(np.abs(C[:, j]).max()), np.finfo(float).tiny)
            distinct.append(len(np.unique(np.round(C[:, j] / scale * 1e9), axis=0)))
        self.cluster_centers_ = np.ascontiguousarray(centers)
        self.inertia_ = np.array(inertia)
        self.n_distinct_maps_ = np.array(distinct)
        self.classes_ = _classes(self.network_, C.shape[1])
        return self

    def decision_function(self, X):
        """Outputs of the reduced network, ``w . x + b`` with the nearest centre (n, o)."""
        check_is_fitted(self, "cluster_centers_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        C = self._rows(X)
        # nearest centre per sample and output (squared Euclidean distance)
        d2 = ((C[:, :, None, :] - self.cluster_centers_[None]) ** 2).sum(axis=3)
        nearest = np.take_along_axis(self.cluster_centers_[None],
                                     d2.argmin(axis=2)[:, :, None, None], axis=2)[:, :, 0]
        out = _evaluate(nearest, X, self.include_bias)
        return out[:, 0] if out.shape[1] == 1 else out

    def predict(self, X):
        """``classes_[argmax_j]`` of the reduced outputs (one output: sign rule)."""
        out = self.decision_function(X)
        if out.ndim == 1:
            return self.classes_[(out > 0).astype(int)]
        return self.classes_[np.argmax(out, axis=1)]
