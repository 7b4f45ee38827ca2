"""InpaintingOODDetector: unsupervised OOD detection by diffusion inpainting (LMD).

"Leveraging diffusion models for unsupervised out-of-distribution detection on image
manifold" (Lift, Map, Detect): mask part of an image, inpaint it with a DDPM trained on
the in-distribution images, and score the image by the distance between it and its
inpainting (median over attempts with alternating checkerboard masks). Built on the
generative family's DDPM core, :mod:`geolearn.generative.ddpm` (schedule, noise predictors,
respaced grid, replacement inpainting sampler, masks), trained through
:class:`geolearn.models.ObjectiveNet` like :class:`~geolearn.generative.DiffusionDensity`.
"""

import functools
import math
import numbers

import numpy as np
import torch
from sklearn.base import BaseEstimator, OutlierMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_consistent_length, check_is_fitted, column_or_1d

from .._utils import (
    check_scalar_param,
    fitted_on_success,
    iter_batches,
    progress_bar,
    resolve_device,
    resolve_n_jobs,
    row_seeds,
    thread_map,
    to_numpy,
    torch_threads,
    warn_user,
)
from .._utils.autoencoder import validate_rows
from .._utils.row_noise import RowNoise
from .._utils.torch_estimator import NET_CONSTRAINTS, ObjectiveTrainingMixin, check_max_epochs
from ..exceptions import DataRangeWarning, GeolearnWarning
from ..generative.ddpm import (
    EMAWeights,
    check_noise_shape,
    denoiser_kind,
    denoising_objective,
    diffusion_schedule,
    inpaint_sample,
    inpainting_mask,
    noise_model_factory,
    q_sample,
    respaced_grid,
)
from ..models import frozen
from ._distances import ImageDistance, lpips_model

__all__ = ["InpaintingOODDetector"]

MASKS = ("checkerboard_alt", "checkerboard", "center", "random_patch")
#: At most this many held-out rows score the offset.
_MAX_VALIDATION = 500
_MIN_INLIERS = 10
_RANGE_TOL = 1e-6


def _adam(params, **kwargs):
    """Adam; a parameter-free denoiser (an exact predictor) gets an empty stand-in parameter."""
    params = list(params)
    return torch.optim.Adam(params or [torch.nn.Parameter(torch.zeros(0))], **kwargs)


class InpaintingOODDetector(ObjectiveTrainingMixin, OutlierMixin, BaseEstimator):
    """Out-of-distribution detection by diffusion inpainting (LMD: Lift, Map, Detect).

    Trains a DDPM on the in-distribution images only (``fit`` drops rows labelled
    ``y == -1``). An image ``x`` is scored by
    ``s(x) = median_a d(x, Inpaint(x, M_a))`` over ``n_reconstructions`` attempts:
    attempt ``a`` masks part of the image with ``M_a`` (the alternating checkerboard
    swaps the kept and inpainted halves every attempt), inpaints the masked part with the
    replacement sampler from ``x_T ~ N(0, I)`` (the kept pixels of every reconstruction
    equal the input), and ``d`` compares on the [0, 1] data scale. In-distribution images
    come back close to themselves; out-of-distribution images are pulled toward the
    training manifold and change more (paper Algorithm 1).

    Images are mapped from ``data_range`` to [-1, 1] for the diffusion model. All the
    attempts of ``inference_batch_size`` images are one tensor per reverse step; the
    sampling noise of each (row, attempt) comes from its own generator, seeded by
    ``random_state`` and the row's values, so a row's score depends only on that row,
    the fitted model and ``random_state`` (not on the other rows, nor on batching).

    Parameters
    ----------
    image_shape : (H, W) or (C, H, W), default=None
        How flat rows fold into images (C-order). None: image arrays ``(n, H, W)`` /
        ``(n, C, H, W)`` give their shape; flat rows of ``s * s`` values are ``(1, s, s)``.
    data_range : 'auto' or (float, float), default='auto'
        The data interval mapped to [-1, 1]: 'auto' is the (global) min and max of the
        training images; e.g. ``(0, 16)`` for ``load_digits``. Test images outside it are
        scored as they are (OOD images may be), with a :class:`DataRangeWarning`.
    mask : {'checkerboard_alt', 'checkerboard', 'center', 'random_patch'} or array-like, \
default='checkerboard_alt'
        The masks (see :func:`~geolearn.generative.ddpm.inpainting_mask`), or one fixed
        0/1 mask of shape ``(H, W)`` or ``(C, H, W)`` (1 = kept) for every attempt.
    n_blocks : int, default=8
        Checkerboard blocks per side, in ``1..min(H, W)`` (4 scores better than 8 on
        8 x 8 digits, where 8 gives one-pixel checkers).
    patch_size : int, default=4
        Patch side for 'random_patch'; must divide H and W.
    n_reconstructions : int, default=10
        Attempts ``r`` per image.
    aggregate : {'median', 'mean'}, default='median'
    distance : {'mse', 'ssim', 'lpips', 'feature'} or callable, default='mse'
        'mse': mean squared difference over C, H, W on the [0, 1] scale; 'ssim':
        ``1 - SSIM`` (uniform 7 x 7 window, data range 1); 'lpips': AlexNet LPIPS (needs the
        optional ``lpips`` package and its pretrained weights, else ImportError);
        'feature': cosine distance between ``feature_extractor`` outputs; a callable
        ``f(X, X_rec) -> (n,)`` on ``(n, C, H, W)`` float arrays in [0, 1]. MSE fails when
        the OOD images are simpler than the training images (paper Table 3: CIFAR10 vs
        SVHN 0.155): pass a feature distance there.
    feature_extractor : torch module or model, default=None
        For ``distance='feature'``: maps ``(n, C, H, W)`` images in [0, 1] to features
        (any model :func:`geolearn.models.as_model` takes).
    lift : {'inpaint', 'diffuse'}, default='inpaint'
        'diffuse': diffuse the whole image to ``diffusion_t`` and denoise it (the paper's
        Table 4 alternative; masks unused).
    clip_output : bool, default=True
        Clip the inpainted pixels to the model range [-1, 1] (the paper's behaviour; off
        only for unbounded analytic data).
    diffusion_t : int, default=500
        The step ``lift='diffuse'`` diffuses to, in ``1..n_timesteps``.
    n_timesteps : int, default=1000
        ``T``.
    beta_start, beta_end : float, default=1e-4, 0.02
        Ends of the linear schedule for ``T = 1000`` (the DDPM core rescales
        them by ``1000 / T`` for other ``T``).
    n_inference_steps : int, default=None
        ``S``: reverse steps of the respaced chain (Nichol and Dhariwal 2021); None is
        all ``T``. 100 loses little on small images; below 50 inpainting degrades.
    denoiser : {'auto', 'mlp', 'unet'} or torch module, default='auto'
        'mlp': SiLU layers of ``hidden_layer_sizes`` on the flattened image
        and a 64-dim sinusoidal time embedding (32 sines, 32 cosines, frequencies
        ``10000^(-i/32)``); 'unet': a 2-level UNet of ``unet_channels`` (GroupNorm(8),
        time embedding in each residual block; H and W divisible by 4); 'auto': the MLP
        when its narrowest hidden layer holds the image's ``C*H*W`` values and ``C*H*W <=
        1024``, else the UNet (the paper's architecture; e.g. 28 x 28 images with the
        default widths). An MLP narrower than the image cannot predict the full-rank noise
        (its inpaintings stay noise: AUROC at chance on 28 x 28 MNIST); 'auto' warns when the
        shape leaves it no other choice. A module with ``forward(x, t)`` (``x`` flat
        rows ``(n, C*H*W)`` in [-1, 1], ``t`` an integer tensor in ``1..T``) returning
        the predicted noise of ``x``'s shape is copied and used as is (``max_epochs=0``
        keeps it untrained, e.g. an exact predictor).
    hidden_layer_sizes : sequence of int, default=(256, 256, 256)
        Widths of the 'mlp' denoiser's hidden layers ('auto' takes the MLP only when
        each is at least ``C*H*W``).
    unet_channels : (int, int), default=(32, 64)
    max_epochs : int, default=400
        At least 1, unless ``denoiser`` is a module (0 uses it untrained).
    batch_size : int, default=128
    lr : float, default=1e-3
        Adam learning rate.
    ema_decay : float, default=None
        Use the exponential moving average of the weights (:class:`EMAWeights`; the
        paper's configurations use 0.9999 over far more steps).
    contamination : float, default=0.05
        In (0, 0.5]: the fraction of held-out inliers ``predict`` flags.
    validation_fraction : float, default=0.1
        In [0, 1): rows (at most 500) held out of training to set ``offset_``. 0 sets it
        from the training rows, with a warning (memorisation biases it).
    inference_batch_size : int, default=256
        Images whose attempts are reconstructed together (memory: this times
        ``n_reconstructions`` images plus activations).
    n_jobs : int, default=None
        Threads over the mask attempts (joblib); each runs one torch thread. On the CPU the
        MLP and custom denoisers always run one torch thread (their many small operations
        are fastest so, and collapse when threads spin against other processes); the
        caller's setting is restored afterwards.
    device : str or torch.device, default='auto'
    random_state : int, RandomState instance or None, default=None
        Seeds the split, training and the sampling noise of the scores (part of the
        score): an int makes scores reproducible.
    verbose : int, default=0
        1 prints the training epochs and shows a progress bar while scoring.
    callbacks : list of skorch callbacks, default=None
    **net_params
        skorch settings (``optimizer__*``, ``iterator_train__*``, ...).

    Attributes
    ----------
    net_ : geolearn.models.ObjectiveNet
        The trained skorch net (the denoising objective in ``get_loss``).
    denoiser_ : torch.nn.Module
        The noise model, ``eps(x_t, t)``.
    betas_ : ndarray of shape (n_timesteps,)
    alphas_cumprod_ : ndarray of shape (n_timesteps + 1,)
        ``alpha_bar_t``, index 0 = 1.
    image_shape_ : tuple (C, H, W)
    n_features_in_ : int
    data_min_, data_scale_ : float
        Data ``x`` maps to ``(x - data_min_) / data_scale_`` in [0, 1].
    offset_ : float
        ``decision_function = score_samples - offset_``.
    validation_scores_ : ndarray of shape (n_validation,)
        ``ood_score`` of the held-out rows (of the training rows when
        ``validation_fraction=0``).
    history_ : skorch.history.History
        The net's training history, one row per epoch: ``history_[:, "train_loss"]`` is
        the mean squared noise error per pixel.
    device_ : torch.device

    See Also
    --------
    geolearn.ood.make_ood_auroc_scorer : AUROC scorer for GridSearchCV.

    Notes
    -----
    Cost: training is ``O(max_epochs * n)`` network evaluations; scoring is
    ``O(n * n_reconstructions * S)``, the method's main expense (``S =
    n_inference_steps``). On a GPU, bit-for-bit reproducible scores also need torch's
    deterministic algorithms (``torch.use_deterministic_algorithms(True)``), which the
    estimator does not force.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.ood import InpaintingOODDetector
    >>> X = np.random.default_rng(0).random((40, 4, 4))
    >>> det = InpaintingOODDetector(n_blocks=2, n_timesteps=50, n_inference_steps=5,
    ...                             hidden_layer_sizes=(16,), max_epochs=2,
    ...                             n_reconstructions=2, random_state=0).fit(X)
    >>> det.ood_score(X[:3]).shape, det.predict(X[:3]).shape, det.reconstruct(X[:2]).shape
    ((3,), (3,), (2, 4, 4))
    """

    _expected_failed_checks = {  # noqa: RUF012
        **dict.fromkeys((
            "check_fit_score_takes_y", "check_estimators_overwrite_params",
            "check_dont_overwrite_parameters", "check_estimators_fit_returns_self",
            "check_readonly_memmap_input", "check_estimators_dtypes", "check_dtype_object",
            "check_pipeline_consistency", "check_estimators_nan_inf", "check_estimators_pickle",
            "check_f_contiguous_array_estimator", "check_classifier_data_not_an_array",
            "check_methods_sample_order_invariance", "check_methods_subset_invariance",
            "check_dict_unchanged", "check_fit_idempotent", "check_fit_check_is_fitted",
            "check_n_features_in", "check_fit2d_predict1d"),
            "the check's data has 3 to 5 features per row, which fold into no square image: "
            "without image_shape, fit refuses it by design (ValueError); "
            "tests/ood/test_ood.py runs every check on row images"),
        **dict.fromkeys(("check_outliers_train", "check_outliers_fit_predict"),
                        "offset_ flags the contamination fraction of held-out rows "
                        "(validation_fraction), not of the training rows the check counts"),
    }

    _parameter_constraints = {  # noqa: RUF012
        # it has no warm start
        **{k: v for k, v in NET_CONSTRAINTS.items() if k != "warm_start"},
        "image_shape": ["array-like", None],
        "data_range": [StrOptions({"auto"}), "array-like"],
        "mask": [StrOptions(set(MASKS)), "array-like"],
        "n_blocks": [Interval(numbers.Integral, 1, None, closed="left")],
        "patch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_reconstructions": [Interval(numbers.Integral, 1, None, closed="left")],
        "aggregate": [StrOptions({"median", "mean"})],
        "distance": [StrOptions({"mse", "ssim", "lpips", "feature"}), callable],
        "feature_extractor": "no_validation",
        "lift": [StrOptions({"inpaint", "diffuse"})],
        "clip_output": ["boolean"],
        "diffusion_t": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_timesteps": [Interval(numbers.Integral, 1, None, closed="left")],
        "beta_start": [Interval(numbers.Real, 0, 1, closed="neither")],
        "beta_end": [Interval(numbers.Real, 0, 1, closed="neither")],
        "n_inference_steps": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "denoiser": [StrOptions({"auto", "mlp", "unet"}), callable],
        "unet_channels": ["array-like"],
        "max_epochs": [Interval(numbers.Integral, 0, None, closed="left")],
        "ema_decay": [Interval(numbers.Real, 0, 1, closed="left"), None],
        "contamination": [Interval(numbers.Real, 0, 0.5, closed="right")],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="left")],
        "inference_batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_jobs": [numbers.Integral, None],
    }

    def __init__(self, image_shape=None, data_range="auto", mask="checkerboard_alt", n_blocks=8,
                 patch_size=4, n_reconstructions=10, aggregate="median", distance="mse",
                 feature_extractor=None, lift="inpaint", clip_output=True, diffusion_t=500,
                 n_timesteps=1000, beta_start=1e-4, beta_end=0.02, n_inference_steps=None,
                 denoiser="auto", hidden_layer_sizes=(256, 256, 256), unet_channels=(32, 64),
                 max_epochs=400, batch_size=128, lr=1e-3, ema_decay=None, contamination=0.05,
                 validation_fraction=0.1, inference_batch_size=256, n_jobs=None,
                 device="auto", random_state=None, verbose=0, callbacks=None, **net_params):
        self.image_shape = image_shape
        self.data_range = data_range
        self.mask = mask
        self.n_blocks = n_blocks
        self.patch_size = patch_size
        self.n_reconstructions = n_reconstructions
        self.aggregate = aggregate
        self.distance = distance
        self.feature_extractor = feature_extractor
        self.lift = lift
        self.clip_output = clip_output
        self.diffusion_t = diffusion_t
        self.n_timesteps = n_timesteps
        self.beta_start = beta_start
        self.beta_end = beta_end
        self.n_inference_steps = n_inference_steps
        self.denoiser = denoiser
        self.hidden_layer_sizes = hidden_layer_sizes
        self.unet_channels = unet_channels
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.ema_decay = ema_decay
        self.contamination = contamination
        self.validation_fraction = validation_fraction
        self.inference_batch_size = inference_batch_size
        self.n_jobs = n_jobs
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.callbacks = callbacks
        self._set_net_params(net_params)

    # -- validation -----------------------------------------------------------------------

    def _validate_X(self, X, reset):
        """Flat float32 rows ``(n, C*H*W)`` and the number of dimensions ``X`` came in."""
        ndim = getattr(X, "ndim", None)
        if ndim is None and isinstance(X, (list, tuple)):
            ndim = np.ndim(X)
        X = validate_rows(self, X, reset)
        if reset and self.image_shape_ is None:
            self.image_shape_ = self._infer_image_shape(X.shape[1])
        return X, (ndim if ndim is not None and ndim >= 3 else 2)

    @staticmethod
    def _infer_image_shape(n_features):
        """``(1, s, s)`` for flat rows of ``s * s`` values; other widths need ``image_shape``."""
        side = math.isqrt(n_features)
        if side * side != n_features:
            raise ValueError(f"X has {n_features} features per row, not a square number: pass "
                             "image_shape=(H, W) or (C, H, W), or image arrays (n, C, H, W).")
        return (1, side, side)

    def _check_geometry(self):
        C, H, W = self.image_shape_
        where = f"images of shape {self.image_shape_} (n_features = {C * H * W})"
        if self.lift == "inpaint" and isinstance(self.mask, str):
            if self.mask.startswith("checkerboard") and self.n_blocks > min(H, W):
                raise ValueError(f"n_blocks={self.n_blocks} must be at most min(H, W) = "
                                 f"{min(H, W)} for {where}.")
            if self.mask == "random_patch" and (H % self.patch_size or W % self.patch_size):
                raise ValueError(f"patch_size={self.patch_size} must divide H and W for "
                                 f"mask='random_patch' on {where}.")
        if not isinstance(self.mask, str):
            mask = np.asarray(self.mask)
            if mask.shape not in ((H, W), (C, H, W)) or not np.isin(mask, (0, 1)).all():
                raise ValueError(f"mask must be one of {list(MASKS)} or a 0/1 array of shape "
                                 f"(H, W) or (C, H, W) for {where}; got an array of shape "
                                 f"{mask.shape}.")
        for name in ("diffusion_t", "n_inference_steps"):
            value = getattr(self, name)
            if name == "diffusion_t" and self.lift != "diffuse":
                continue
            if value is not None and value > self.n_timesteps:
                raise ValueError(f"{name}={value} must be at most n_timesteps="
                                 f"{self.n_timesteps}.")
        if self.distance == "feature" and self.feature_extractor is None:
            raise ValueError("distance='feature' needs a feature_extractor (a torch module "
                             "mapping (n, C, H, W) images in [0, 1] to features).")

    def _set_data_range(self, X):
        if isinstance(self.data_range, str):
            lo, hi = float(X.min()), float(X.max())
            if not hi > lo:
                raise ValueError(f"the training images are constant ({lo:g}): "
                                 "data_range='auto' cannot map them to [-1, 1]; pass "
                                 "data_range=(low, high).")
        else:
            rng = np.asarray(self.data_range, dtype=np.float64)
            if rng.shape != (2,) or not np.all(np.isfinite(rng)) or not rng[1] > rng[0]:
                raise ValueError(f"data_range must be 'auto' or a finite (low, high) pair with "
                                 f"low < high; got {self.data_range!r}.")
            lo, hi = float(rng[0]), float(rng[1])
        self.data_min_, self.data_scale_ = lo, hi - lo

    def _to_unit(self, X, warn=True):
        """Rows on the [0, 1] scale (float64); values outside it warned about, not clipped."""
        U = (X.astype(np.float64) - self.data_min_) / self.data_scale_
        if warn and U.size and (U.min() < -_RANGE_TOL or U.max() > 1 + _RANGE_TOL):
            lo, hi = self.data_min_, self.data_min_ + self.data_scale_
            warn_user(f"X has values in [{X.min():g}, {X.max():g}], outside the data range "
                      f"[{lo:g}, {hi:g}] the diffusion model was fitted on; they are scored "
                      "as they are (not clipped).", DataRangeWarning)
        return U

    # -- training -------------------------------------------------------------------------

    def _denoiser_kind(self):
        """'custom', 'mlp' or 'unet' (``denoiser_kind``: 'auto' takes the MLP only where it
        can carry the noise)."""
        return denoiser_kind(self.denoiser, self.n_features_in_, self.image_shape_,
                             hidden_layer_sizes=self.hidden_layer_sizes,
                             unet_channels=self.unet_channels)

    def _module_factory(self):
        """The noise model for skorch (built under the seed at ``initialize``)."""
        return noise_model_factory(self.denoiser, self.alphas_cumprod_,
                                   n_features=self.n_features_in_, image_shape=self.image_shape_,
                                   hidden_layer_sizes=self.hidden_layer_sizes,
                                   unet_channels=self.unet_channels, n_freq=32)

    def _threads(self):
        """Torch threads per worker: 1 for small ops on the CPU or shared cores, else unchanged.

        Small ops: the MLP or a custom module on the CPU; the UNet keeps the caller's
        setting unless ``n_jobs`` workers share the cores. Not :func:`small_ops_threads`:
        its count is also the per-worker count of ``thread_map``, which must hold one
        thread whenever workers share the cores, whatever the denoiser.
        """
        parallel = resolve_n_jobs(self.n_jobs) > 1
        small = self._denoiser_kind() != "unet" and resolve_device(self.device).type == "cpu"
        return 1 if small or parallel else None

    @_fit_context(prefer_skip_nested_validation=True)
    @fitted_on_success
    def fit(self, X, y=None):
        """Train the diffusion model on the inliers and set the threshold ``offset_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), (n, H, W) or (n, C, H, W)
        y : array-like of shape (n_samples,), default=None
            Rows with ``y == -1`` (outliers, in scikit-learn's convention) are dropped,
            so that GridSearchCV on labelled mixtures trains on inliers only.

        Returns
        -------
        self : InpaintingOODDetector
        """
        check_max_epochs(self.max_epochs, self.denoiser)
        X, self._input_ndim = self._validate_X(X, reset=True)
        if y is not None:
            y = column_or_1d(y, warn=True)
            check_consistent_length(X, y)
            X = X[y != -1]
        if len(X) < _MIN_INLIERS:
            raise ValueError(f"InpaintingOODDetector needs at least {_MIN_INLIERS} inlier rows "
                             f"(y != -1); got n_samples = {len(X)}.")
        self._check_geometry()
        if self.distance == "lpips":
            lpips_model("cpu")
        self.betas_, self.alphas_cumprod_ = diffusion_schedule(
            self.n_timesteps, "linear", self.beta_start, self.beta_end)
        self._set_data_range(X)
        rng = check_random_state(self.random_state)
        n_val = min(_MAX_VALIDATION, round(self.validation_fraction * len(X)))
        if self.validation_fraction > 0 and (n_val < 2 or n_val > len(X) - 2):
            raise ValueError(f"validation_fraction={self.validation_fraction} of {len(X)} "
                             f"inlier rows holds out {n_val} rows; it must hold out at least 2 "
                             "and leave at least 2 for training (pass more rows or change "
                             "validation_fraction).")
        order = rng.permutation(len(X))
        X_val, X_train = X[order[:n_val]], X[order[n_val:]]
        x0 = torch.from_numpy(np.ascontiguousarray(
            2 * self._to_unit(X_train, warn=False) - 1, dtype=np.float32))
        if not isinstance(self.data_range, str):
            self._to_unit(X)  # one warning for training images outside a given range
        callbacks = [("ema", EMAWeights(self.ema_decay))] if self.ema_decay is not None else []
        with torch_threads(self._threads()):
            self._train(self._module_factory(),
                        functools.partial(denoising_objective, reduction="mean"), x0,
                        seed=rng, max_epochs=self.max_epochs, default_callbacks=callbacks,
                        optimizer=_adam)
        self.denoiser_ = self.net_.module_
        if n_val == 0:
            warn_user("validation_fraction=0: offset_ is set from the training rows, "
                      "whose scores memorisation biases low (more test inliers are "
                      "flagged than contamination says).", GeolearnWarning)
            X_val = X_train
        self.validation_scores_ = self._ood_score(X_val, self.random_state, warn=False)
        self.offset_ = float(np.quantile(-self.validation_scores_, self.contamination))
        return self

    # -- reconstruction -------------------------------------------------------------------

    def _key(self, random_state):
        """The integer key of a call's draws (a fresh one per call when not an int)."""
        rs = self.random_state if random_state is None else random_state
        if isinstance(rs, numbers.Integral):
            return int(rs)
        return int(check_random_state(rs).randint(0, 2**63 - 1, dtype=np.int64))

    def _masks(self, attempts, key):
        """Kept-pixel masks, bool ``(len(attempts), C*H*W)``."""
        if self.lift == "diffuse":
            return np.zeros((len(attempts), self.n_features_in_), dtype=bool)
        if not isinstance(self.mask, str):
            fixed = np.broadcast_to(np.asarray(self.mask) == 1, self.image_shape_)
            return np.tile(fixed.reshape(1, -1), (len(attempts), 1))
        return np.stack([inpainting_mask(self.mask, self.image_shape_, a, self.n_blocks,
                                         self.patch_size, random_state=[key, a]).ravel()
                         for a in attempts])

    def _eps(self, x, t):
        out = self.denoiser_.eps(x, torch.full((len(x),), t, dtype=torch.long, device=x.device))
        check_noise_shape(out, x)
        return out

    def _reconstruct_unit(self, U, seeds, masks, threads):
        """Reconstructions of rows ``U`` ([0, 1] scale) for each mask: ``(A, m, D)`` float64.

        ``seeds[a][i]`` seeds the chain of row ``i``, attempt ``a``.
        """
        A, (m, D) = len(masks), U.shape
        dev = self.device_
        u = torch.as_tensor(U, dtype=torch.float64)
        known = (2 * u - 1).float().to(dev).repeat(A, 1)
        mask = torch.as_tensor(masks, device=dev).repeat_interleave(m, dim=0)
        noise = RowNoise([s for row in seeds for s in row], D, dev)
        if self.lift == "diffuse":
            grid = respaced_grid(self.n_timesteps, self.n_inference_steps, self.diffusion_t)
            x = q_sample(known, self.diffusion_t, self.alphas_cumprod_, noise.get(0))
        else:
            grid = respaced_grid(self.n_timesteps, self.n_inference_steps)
            x = noise.get(0)
        with torch_threads(threads), torch.inference_mode():
            x = inpaint_sample(self._eps, x, known, mask, self.alphas_cumprod_, grid,
                               lambda k: noise.get(k + 1),
                               clip=(-1.0, 1.0) if self.clip_output else None)
        rec = (x.double().cpu() + 1) / 2
        out = torch.where(mask.cpu(), u.repeat(A, 1), rec)  # kept pixels: the input itself
        return out.reshape(A, m, D)

    def _run(self, X, attempts, key, per_unit, desc, warn=True):
        """Apply ``per_unit(U, rec, masks)`` to the reconstructions of every batch of rows.

        Units (a batch of rows, a group of attempts) run on ``n_jobs`` threads; returns the
        per-unit results in the order of the attempt groups, then of the batches.
        """
        U = self._to_unit(X, warn=warn)
        masks = self._masks(attempts, key)
        seeds = np.array([row_seeds(X, key, stream=f"InpaintingOODDetector/{a}")
                          for a in attempts], dtype=object)
        n_jobs = resolve_n_jobs(self.n_jobs)
        groups = np.array_split(np.arange(len(attempts)), min(n_jobs, len(attempts)))
        units = [(sl, g) for sl in iter_batches(len(X), self.inference_batch_size)
                 for g in groups]
        threads = self._threads()

        def work(unit):
            sl, g = unit
            rec = self._reconstruct_unit(U[sl], seeds[g][:, sl].tolist(), masks[g], threads)
            return per_unit(U[sl], rec, masks[g])

        def progress(jobs):
            return progress_bar(jobs, total=len(units), desc=desc, unit="batch",
                                verbose=self.verbose)

        with frozen(self.denoiser_):
            results = thread_map(work, units, n_jobs, torch_threads_per_worker=threads,
                                 progress=progress)
        return units, results

    def _ood_score(self, X, random_state, warn=True):
        attempts = list(range(self.n_reconstructions))
        C, H, W = self.image_shape_
        dist = ImageDistance(self.distance, self.feature_extractor, self.device_)

        def per_unit(U, rec, masks):
            u = torch.as_tensor(U).reshape(-1, C, H, W)
            return np.stack([dist(u, r.reshape(-1, C, H, W)) for r in rec], axis=1)

        units, results = self._run(X, attempts, self._key(random_state), per_unit,
                                   "ood_score", warn)
        d = np.empty((len(X), len(attempts)))
        for (sl, g), res in zip(units, results):
            d[sl, g] = res
        agg = np.median if self.aggregate == "median" else np.mean
        return agg(d, axis=1)

    # -- public API -----------------------------------------------------------------------

    def ood_score(self, X, random_state=None):
        """The OOD score ``s(x)``: median (or mean) distance to the inpaintings; higher = more OOD.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), (n, H, W) or (n, C, H, W)
        random_state : int, RandomState instance or None, default=None
            Seeds the sampling noise; None uses the estimator's ``random_state``.

        Returns
        -------
        scores : ndarray of shape (n_samples,), float64
        """
        check_is_fitted(self)
        X, _ = self._validate_X(X, reset=False)
        return self._ood_score(X, random_state)

    def score_samples(self, X):
        """``-ood_score(X)``: higher is more normal (scikit-learn's convention).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), (n, H, W) or (n, C, H, W)

        Returns
        -------
        scores : ndarray of shape (n_samples,)
        """
        return -self.ood_score(X)

    def decision_function(self, X):
        """``score_samples(X) - offset_``: negative for outliers.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), (n, H, W) or (n, C, H, W)

        Returns
        -------
        decision : ndarray of shape (n_samples,)
        """
        return self.score_samples(X) - self.offset_

    def predict(self, X):
        """+1 for inliers, -1 for outliers (``decision_function < 0``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), (n, H, W) or (n, C, H, W)

        Returns
        -------
        labels : ndarray of shape (n_samples,), int
        """
        return np.where(self.decision_function(X) < 0, -1, 1)

    def fit_predict(self, X, y=None):
        """``fit(X, y).predict(X)``: rows with ``y == -1`` are left out of training.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), (n, H, W) or (n, C, H, W)
        y : array-like of shape (n_samples,), default=None

        Returns
        -------
        labels : ndarray of shape (n_samples,), +1 inlier / -1 outlier
        """
        return self.fit(X, y).predict(X)

    def reconstruct(self, X, attempt=0, random_state=None):
        """The inpaintings of attempt ``attempt`` (the ones ``ood_score`` measures), in data units.

        Kept pixels equal the input; the layout is the input's (flat rows or images).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), (n, H, W) or (n, C, H, W)
        attempt : int, default=0
        random_state : int, RandomState instance or None, default=None
            None uses the estimator's ``random_state``.

        Returns
        -------
        X_rec : ndarray like X, float64
        """
        check_is_fitted(self)
        attempt = check_scalar_param(attempt, "attempt", kind="integer", low=0)
        X_in = X
        X, ndim = self._validate_X(X, reset=False)
        X_in = np.asarray(X_in, dtype=np.float64)  # kept pixels: the input, not its float32

        def per_unit(U, rec, masks):
            return rec[0].numpy()

        key = self._key(random_state)
        _, results = self._run(X, [attempt], key, per_unit, "reconstruct")
        U = np.concatenate(results)
        out = np.where(self._masks([attempt], key)[0], X_in.reshape(X.shape),
                       U * self.data_scale_ + self.data_min_)
        return out.reshape(X_in.shape)

    def masks(self, attempt=0):
        """The mask of attempt ``attempt``: 1 = kept pixel, 0 = inpainted.

        Parameters
        ----------
        attempt : int, default=0

        Returns
        -------
        mask : ndarray of shape (C, H, W), float32
            For ``mask='random_patch'`` the draw of ``random_state`` (a new one per call
            unless it is an int); for ``lift='diffuse'`` all zeros.
        """
        check_is_fitted(self)
        attempt = check_scalar_param(attempt, "attempt", kind="integer", low=0)
        m = self._masks([attempt], self._key(None))[0]
        return m.reshape(self.image_shape_).astype(np.float32)

    def sample(self, n_samples=1, random_state=None):
        """Unconditional samples of the diffusion model (ancestral, respaced), in data units.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=None

        Returns
        -------
        X : ndarray of shape (n_samples, n_features) or images, as the training X
        """
        check_is_fitted(self)
        check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
        gen = torch.Generator().manual_seed(
            int(check_random_state(random_state).randint(0, 2**31 - 1)))
        D, dev = self.n_features_in_, self.device_

        def draw(k=None):
            return torch.randn(n_samples, D, generator=gen).to(dev)

        grid = respaced_grid(self.n_timesteps, self.n_inference_steps)
        zeros = torch.zeros(n_samples, D, device=dev)
        with frozen(self.denoiser_), torch_threads(self._threads()), torch.inference_mode():
            x = inpaint_sample(self._eps, draw(), zeros, torch.zeros(D, dtype=torch.bool,
                                                                     device=dev),
                               self.alphas_cumprod_, grid, draw,
                               clip=(-1.0, 1.0) if self.clip_output else None)
        out = (to_numpy(x).astype(np.float64) + 1) / 2 * self.data_scale_ + self.data_min_
        shape = {2: (D,), 3: self.image_shape_[1:], 4: self.image_shape_}[self._input_ndim]
        return out.reshape(n_samples, *shape)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags

