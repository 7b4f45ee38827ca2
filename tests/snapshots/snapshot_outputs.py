"""Record the outputs of every public geolearn estimator and function, to check refactors.

This is a script, not a test module: importing it does nothing but define functions
(pytest collects ``tests/`` with ``--doctest-modules``, so the import must stay cheap).

Each named *case* builds small data with fixed seeds, fits estimators with a fixed
``random_state`` and records a flat dict ``{key: ndarray}`` of outputs (predict,
predict_proba, decision_function, transform, score_samples, score, ...), important
fitted attributes and the return values of the public functions. Torch runs on one
thread and every case starts from ``torch.manual_seed(0)`` / ``np.random.seed(0)``,
so two runs of the same code give bit-identical arrays (``save`` also hides GPUs with
``CUDA_VISIBLE_DEVICES=""``: ``device="auto"`` estimators run on the CPU everywhere).
A call that raises is recorded as a string ``"!error <Type>: <message>"`` in place of
its array; a case that raises outside such a call is recorded as a case error.

Usage, from anywhere (the ``geolearn`` package next to this ``tests/`` folder is the
one imported, not an installed copy; ``save --repo DIR`` imports DIR's instead)::

    # before the refactor
    python tests/snapshots/snapshot_outputs.py save /tmp/before.pkl
    # after the refactor
    python tests/snapshots/snapshot_outputs.py save /tmp/after.pkl
    python tests/snapshots/snapshot_outputs.py compare /tmp/before.pkl /tmp/after.pkl

    # a few cases only (names or prefixes, e.g. a family), and the list of cases
    python tests/snapshots/snapshot_outputs.py save /tmp/d.pkl --only diffeo. models.as_model
    python tests/snapshots/snapshot_outputs.py list

``compare`` prints, per case and per array, ``identical`` / ``within tol`` (with the
max abs difference) / ``DIFFERENT``, then the summary line
``N arrays bit-identical, M within tol, K different, E cases errored/missing``, and
exits with status 1 when any array differs (or is missing after, or a case is missing,
or a case's error changed). Arrays only present in AFTER are listed as ``new`` and do
not fail the comparison. ``--rtol`` / ``--atol`` (default 1e-12 each) set the
tolerance of ``numpy.allclose``; a dtype change is always reported as different.
``--quiet`` prints only the arrays that are not bit-identical.

Keys are ``<label>.<method or attribute>[.<field>...]``; ``<est>.attr.<name_>`` are
fitted attributes (torch modules as their ``state_dict``, nested scikit-learn
estimators by their own fitted attributes, skorch histories without the ``dur`` clock
fields). Arrays over 200,000 entries are stored as ``#sha256`` + ``#head`` + ``#shape``.
Besides the public API, the VAEClassifier case calls the ``_torch_logits`` /
``_torch_neg_elbo`` hooks that ``patch_attack`` and ``ELBOPurifier`` rely on.
"""

import argparse
import contextlib
import os
import re
import sys
import time

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_ERROR = "!error "
_MAX_FULL = 200_000  # arrays larger than this are stored as head + sha256 digest
_MAX_DEPTH = 12


def _is_clock_key(k):
    """Wall-clock fields (skorch's per-epoch ``dur``): never reproducible, never recorded."""
    return isinstance(k, str) and (k == "dur" or k.endswith("_dur"))

CASES = {}
_THREAD_LIMITS = None


def case(name):
    """Register ``fn(rec)`` as the case ``name``."""
    def register(fn):
        if name in CASES:
            raise ValueError(f"duplicate case {name!r}")
        CASES[name] = fn
        return fn
    return register


# ----------------------------------------------------------------------------- recording
def _error_array(exc):
    import numpy as np

    msg = str(exc).strip().splitlines()
    msg = re.sub(r"0x[0-9a-fA-F]+", "0x?", msg[0] if msg else "")  # no memory addresses
    return np.asarray(f"{_ERROR}{type(exc).__name__}: {msg[:300]}")


def _store_array(a, key, out):
    import hashlib

    import numpy as np

    a = np.array(a, copy=True)
    if a.dtype == object:
        if a.size <= 64:
            for i, v in enumerate(a.ravel().tolist()):
                _flatten(v, f"{key}[{i}]", out, 1)
            out[f"{key}#shape"] = np.asarray(a.shape)
        else:
            out[key] = np.asarray(repr(a.tolist())[:2000])
        return
    if a.size > _MAX_FULL:
        c = np.ascontiguousarray(a)
        out[f"{key}#sha256"] = np.frombuffer(hashlib.sha256(c.tobytes()).digest(), np.uint8)
        out[f"{key}#shape"] = np.asarray(a.shape)
        out[f"{key}#head"] = c.ravel()[:2000].copy()
        out[f"{key}#dtype"] = np.asarray(str(a.dtype))
        return
    out[key] = a


def _flatten(obj, key, out, depth=0, stack=None):
    """Store ``obj`` in ``out`` as numpy arrays under ``key`` (recursing into containers).

    Class names of torch modules and of other objects are not recorded (a refactor may
    rename internal classes); scikit-learn estimators nested in fitted attributes get a
    ``#type`` entry, and their own fitted attributes.
    """
    import dataclasses
    import numbers

    import numpy as np
    import scipy.sparse as sp
    import torch
    from sklearn.base import BaseEstimator

    stack = set() if stack is None else stack  # ids of the containers above obj: cycles
    if depth > _MAX_DEPTH:
        out[key] = np.asarray("<too deep>")
        return
    if obj is None:
        out[key] = np.asarray("None")
        return
    if isinstance(obj, (bool, np.bool_, numbers.Number, np.generic, str, bytes)):
        out[key] = np.asarray(obj)
        return
    if isinstance(obj, np.ndarray):
        _store_array(obj, key, out)
        return
    if isinstance(obj, torch.Tensor):
        _store_array(obj.detach().cpu().resolve_conj().resolve_neg().numpy(), key, out)
        return
    if isinstance(obj, (torch.dtype, torch.device, np.dtype)):
        out[key] = np.asarray(str(obj))
        return
    if isinstance(obj, type):
        out[key] = np.asarray(f"<class> {obj.__name__}")
        return
    if sp.issparse(obj):
        _store_array(obj.toarray(), key, out)
        return
    if id(obj) in stack:
        out[key] = np.asarray("<cycle>")
        return
    stack.add(id(obj))
    try:
        if isinstance(obj, torch.nn.Module):
            for k, v in obj.state_dict().items():
                _flatten(v, f"{key}.{k}", out, depth + 1, stack)
        elif isinstance(obj, dict) or (hasattr(obj, "keys") and hasattr(obj, "__getitem__")):
            for k in list(obj.keys()):
                if not _is_clock_key(k):
                    _flatten(obj[k], f"{key}.{k}", out, depth + 1, stack)
        elif dataclasses.is_dataclass(obj):
            for f in dataclasses.fields(obj):
                _flatten(getattr(obj, f.name), f"{key}.{f.name}", out, depth + 1, stack)
        elif isinstance(obj, tuple) and hasattr(obj, "_asdict"):
            _flatten(obj._asdict(), key, out, depth, stack)
        elif isinstance(obj, (list, tuple)):
            if len(obj) and all(isinstance(v, (numbers.Number, np.generic)) for v in obj):
                out[key] = np.asarray(obj)
                return
            out[f"{key}#len"] = np.asarray(len(obj))
            for i, v in enumerate(obj):
                _flatten(v, f"{key}[{i}]", out, depth + 1, stack)
        elif isinstance(obj, BaseEstimator):
            if _public_class(type(obj)):
                out[f"{key}#type"] = np.asarray(type(obj).__name__)
            _flatten(fitted_attributes(obj), key, out, depth + 1, stack)
        elif callable(obj):
            out[key] = np.asarray("<callable>")
        else:
            out[key] = np.asarray("<object>")
    finally:
        stack.discard(id(obj))


def _public_class(cls):
    """Whether ``cls`` is scikit-learn's, skorch's or in a geolearn family's ``__all__``."""
    import importlib

    top = cls.__module__.split(".")
    if top[0] in ("sklearn", "skorch"):
        return True
    if top[0] != "geolearn" or len(top) < 2:
        return False
    family = importlib.import_module(".".join(top[:2]))
    return cls.__name__ in getattr(family, "__all__", ())


def fitted_attributes(est):
    """The public fitted attributes (``name_``) of an estimator, skorch internals left out."""
    skip = {"callbacks_", "optimizer_", "criterion_", "_modules", "prefix_", "initialized_",
            "virtual_params_", "history_"}
    out = {}
    for k, v in sorted(vars(est).items()):
        if k.endswith("_") and not k.startswith("_") and k not in skip:
            out[k] = v
    hist = getattr(est, "history_", None)
    if hist is not None:
        out["history_"] = _history(hist)
    return out


def _history(hist):
    """A training history (skorch History or list of dicts) without wall-clock fields."""
    rows = []
    for row in list(hist):
        if isinstance(row, dict):
            rows.append({k: v for k, v in row.items() if k != "batches" and not _is_clock_key(k)})
        else:
            rows.append(row)
    return rows


class Recorder:
    """Collects the arrays of one case."""

    OUTPUT_METHODS = ("predict", "predict_proba", "decision_function", "transform",
                      "score_samples")

    def __init__(self):
        self.out = {}

    def add(self, key, value):
        _flatten(value, key, self.out)
        return value

    @contextlib.contextmanager
    def guard(self, key):
        """Record an exception raised in the block as ``key#error``; the case goes on."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001
            self.out[f"{key}#error"] = _error_array(exc)

    def call(self, key, fn, *args, **kwargs):
        """``fn(*args, **kwargs)`` recorded under ``key``; an exception is recorded instead."""
        try:
            value = fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - any failure is an output to compare
            self.out[key] = _error_array(exc)
            return None
        self.add(key, value)
        return value

    def estimator(self, key, est, X, y=None, *, fit=True, fit_kwargs=None, X_eval=None,
                  y_eval=None, methods=None, score=True, attrs=True):
        """Fit ``est`` (unless ``fit=False``) and record its outputs and fitted attributes."""
        if fit:
            try:
                est.fit(X, y, **(fit_kwargs or {})) if y is not None else \
                    est.fit(X, **(fit_kwargs or {}))
            except Exception as exc:  # noqa: BLE001
                self.out[f"{key}.fit"] = _error_array(exc)
                return None
        X_eval = X if X_eval is None else X_eval
        y_eval = y if y_eval is None else y_eval
        for m in (self.OUTPUT_METHODS if methods is None else methods):
            if hasattr(est, m):
                self.call(f"{key}.{m}", getattr(est, m), X_eval)
        if score and hasattr(est, "score"):
            if y_eval is not None:
                self.call(f"{key}.score", est.score, X_eval, y_eval)
            else:
                self.call(f"{key}.score", est.score, X_eval)
        if attrs:
            self.add(f"{key}.attr", fitted_attributes(est))
        return est


def _seed_everything(seed=0):
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def run_cases(names):
    """Run the named cases; returns ``{name: {"arrays": {...}, "error": str|None, "time": s}}``."""
    import warnings

    results = {}
    for name in names:
        rec = Recorder()
        _seed_everything(0)
        t0 = time.perf_counter()
        error = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                CASES[name](rec)
            except Exception as exc:  # noqa: BLE001
                error = str(_error_array(exc))
        dt = time.perf_counter() - t0
        results[name] = {"arrays": rec.out, "error": error, "time": dt}
        status = "ERROR " + error if error else f"{len(rec.out)} arrays"
        print(f"  {name:<48s} {dt:7.2f}s  {status}", flush=True)
    return results


# ============================================================================== shared data
def _digits(n=200, upsample=2):
    from geolearn.datasets import load_digits_images

    X, y = load_digits_images(upsample=upsample, return_X_y=True)
    return X[:n], y[:n]


def _small_cnn(bn=False, seed=0):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    layers = [nn.Conv2d(1, 4, 3, padding=1)]
    if bn:
        layers.append(nn.BatchNorm2d(4))
    layers += [nn.ReLU(), nn.Dropout(0.5), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
               nn.Linear(16, 10)]
    return nn.Sequential(*layers)


def _gaussian_net(sizes, seed, bias=True):
    """ReLU ``nn.Sequential`` (float64) with N(0, 1) weights: the polytopes test nets."""
    import numpy as np
    import torch
    from torch import nn

    rng = np.random.default_rng(seed)
    Ws = [rng.normal(size=(b, a)) for a, b in zip(sizes[:-1], sizes[1:])]
    bs = [rng.normal(size=b) if bias else np.zeros(b) for b in sizes[1:]]
    layers = []
    for i, (W, b) in enumerate(zip(Ws, bs)):
        layer = nn.Linear(W.shape[1], W.shape[0], dtype=torch.float64)
        with torch.no_grad():
            layer.weight.copy_(torch.as_tensor(W))
            layer.bias.copy_(torch.as_tensor(b))
        layers.append(layer)
        if i < len(Ws) - 1:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _quiet_call(fn, *args, **kwargs):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _quiet_fit(est, *args, **kwargs):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(*args, **kwargs)


# ================================================================================= datasets
@case("datasets.images")
def _datasets_images(rec):
    from geolearn import datasets as D

    rec.call("load_digits_images", D.load_digits_images, n_class=5, upsample=2, return_X_y=True)
    rec.call("load_digits_images.bunch", D.load_digits_images, n_class=3)
    rec.call("load_mnist_5k", D.load_mnist_5k, return_X_y=True)
    rec.call("make_transforming_mnist.rot4", D.make_transforming_mnist, group="rot4",
             random_state=0, return_X_y=True)
    rec.call("make_transforming_mnist.xtrans3", D.make_transforming_mnist, group="xtrans3",
             random_state=0)
    rec.call("make_two_digit_composites", D.make_two_digit_composites, n_train=60, n_test=20,
             random_state=0)


@case("datasets.synthetic")
def _datasets_synthetic(rec):
    from geolearn import datasets as D

    rec.call("make_circle_points", D.make_circle_points, 50, noise=0.05, random_state=0,
             return_params=True)
    rec.call("make_circle_points.grid", D.make_circle_points, 20, grid=True, return_params=True)
    rec.call("make_sphere_points", D.make_sphere_points, 50, noise=0.05, random_state=0,
             return_params=True)
    rec.call("make_sphere_points.grid", D.make_sphere_points, 30, grid=True)
    rec.call("make_torus_points", D.make_torus_points, 50, noise=0.05, random_state=0,
             return_params=True)
    rec.call("make_torus_points.r3", D.make_torus_points, 40, embedding="r3",
             random_state=0)
    rec.call("make_planted_variety", D.make_planted_variety, n_sets=6, n_features=10,
             noise=0.1, random_state=0)
    rec.call("make_point_shapes", D.make_point_shapes, n_samples=120, random_state=0)
    rec.call("make_sinusoid_boundary", D.make_sinusoid_boundary, 60, random_state=0)
    rec.call("make_stripes", D.make_stripes, 80, n_features=6, label_noise=0.1, random_state=0)
    rec.call("make_xor", D.make_xor)


# =================================================================================== diffeo
@case("diffeo.sampler")
def _diffeo_sampler(rec):
    import numpy as np

    from geolearn import diffeo as G

    rec.add("GAUSSIAN_SIGMA", G.GAUSSIAN_SIGMA)
    d = rec.call("sample_displacement_fields", G.sample_displacement_fields, 12, 0.01, 3,
                 size=5, random_state=0)
    rec.call("sample_displacement_fields.c1_f32", G.sample_displacement_fields, 10, 0.05, 1,
             size=2, random_state=3, dtype=__import__("torch").float32)
    X = np.random.RandomState(0).rand(5, 2, 12, 12)
    rec.call("deform.bilinear", G.deform, X, d)
    rec.call("deform.gaussian", G.deform, X, d, interp="gaussian")
    rec.call("deform.float32_3d", G.deform, X[:, 0].astype(np.float32), d)
    rec.call("max_xi", G.max_xi, d)
    for formula in ("exact", "asymptotic"):
        rec.call(f"displacement_delta.{formula}", G.displacement_delta, 0.01, 3, 16, formula)
        rec.call(f"temperature_for_delta.{formula}", G.temperature_for_delta, 1.0, 3, 16,
                 formula)
    rec.call("temperature_range", G.temperature_range, 32, 3)
    rec.call("temperature_range.empirical", G.temperature_range, 16, 1, method="empirical",
             n_samples=100)
    rec.call("log_average", G.log_average, [0.01, 1.0, 3.0])
    rec.call("log_average.axis", G.log_average, np.arange(1.0, 7.0).reshape(2, 3), axis=0)
    rec.call("log_std", G.log_std, [0.01, 1.0, 3.0])
    rec.call("log_std.error", G.log_std, [0.0, 1.0])


@case("diffeo.MaxEntropyDiffeo")
def _diffeo_maxent(rec):
    from geolearn.diffeo import MaxEntropyDiffeo

    X, _ = _digits(60)
    Xf = X.reshape(len(X), -1).astype("float64")
    aug = MaxEntropyDiffeo(T=0.005, random_state=0)
    rec.call("fit_transform", aug.fit_transform, X)
    rec.call("transform", aug.transform, X)
    rec.add("attr", fitted_attributes(aug))
    always = MaxEntropyDiffeo((16, 16), T=0.005, apply_on="always", random_state=0)
    rec.call("always.fit_transform", always.fit_transform, Xf)
    rec.call("always.transform", always.transform, Xf)
    rec.call("always.get_feature_names_out", always.get_feature_names_out)
    rec.call("p_half", MaxEntropyDiffeo(T=0.005, p=0.5, random_state=0).fit_transform, X)
    rec.call("ranges", MaxEntropyDiffeo(T=(1e-4, 1e-2), c=(1, 4), random_state=1).fit_transform,
             X)
    rec.call("auto_T_reject", MaxEntropyDiffeo(reject_non_diffeo=True, interp="gaussian",
                                               random_state=2).fit_transform, X[:20])


@case("diffeo.diffeo_augment")
def _diffeo_augment(rec):
    import torch

    from geolearn.diffeo import DiffeoAugment, diffeo_augment

    X, y = _digits(30)
    rec.call("with_y", diffeo_augment, X, y, n_copies=2, T=0.005, random_state=0)
    rec.call("no_original", diffeo_augment, X, include_original=False, T=0.005, random_state=0)
    x = torch.as_tensor(X[:16])
    layer = DiffeoAugment(T=0.005, random_state=0)
    rec.call("module.train.1", layer, x)
    rec.call("module.train.2", layer, x)
    rec.call("module.eval", layer.eval(), x)
    flat = DiffeoAugment((16, 16), T=0.005, random_state=0)
    rec.call("module.flat", flat, x.reshape(16, -1))


def _prefit(cls):
    """``{"prefit": True}`` where ``cls`` still has the parameter (removed by the one fitting
    policy, under which a fitted model is used as is): the same call on old and new code."""
    import inspect

    return {"prefit": True} if "prefit" in inspect.signature(cls).parameters else {}


@case("diffeo.DiffeoStability.mlp")
def _diffeo_stability_mlp(rec):
    from sklearn.neural_network import MLPClassifier

    from geolearn.diffeo import DiffeoStability

    X, y = _digits(200)
    Xf = X.reshape(len(X), -1)
    mlp = _quiet_fit(MLPClassifier((16,), max_iter=30, random_state=0), Xf, y)
    rec.add("mlp.predict_proba", mlp.predict_proba(Xf))
    kw = dict(image_shape=(16, 16), random_state=0)
    est = DiffeoStability(mlp, **_prefit(DiffeoStability), **kw)
    rec.estimator("prefit", est, Xf[:120], X_eval=Xf[120:200])
    rec.call("prefit.stability", est.stability, Xf[120:200])
    est = DiffeoStability(mlp, **_prefit(DiffeoStability), layers=["act_0", "linear_1"], n_repeats=2, **kw)
    rec.estimator("prefit.layers", est, Xf[:120], X_eval=Xf[120:200])
    rec.call("prefit.layers.stability", est.stability, Xf[120:200])
    est = DiffeoStability(MLPClassifier((8,), max_iter=20, random_state=0), c=2, **kw)
    rec.estimator("fit", est, Xf, y, X_eval=Xf[:120])
    rec.call("fit.stability", est.stability, Xf[:120])
    est = DiffeoStability(mlp, **_prefit(DiffeoStability), response="predict_proba", average="mean",
                          noise_norm="average", n_diffeo=2, interp="gaussian", **kw)
    rec.estimator("prefit.options", est, Xf[:120], X_eval=Xf[120:200])


@case("diffeo.DiffeoStability.torch")
def _diffeo_stability_torch(rec):
    from geolearn.diffeo import DiffeoStability, relative_stability

    X, _ = _digits(160)
    net = _small_cnn()
    est = DiffeoStability(net, random_state=0)
    rec.estimator("module", est, X[:120], X_eval=X[120:160])
    rec.call("module.stability", est.stability, X[120:160])
    est = DiffeoStability(net, layers=["0", "4"], n_repeats=3, random_state=0)
    rec.estimator("module.layers", est, X[:120], X_eval=X[120:160])
    rec.call("module.layers.stability", est.stability, X[120:160])
    rec.call("relative_stability", relative_stability, net, X[:120], random_state=0,
             batch_size=13, n_repeats=2)
    rec.call("relative_stability.T_c", relative_stability, net, X[:120], T=0.01, c=2,
             random_state=1, delta_formula="asymptotic")
    bn = _small_cnn(bn=True)
    bn.train()
    import torch

    bn(torch.as_tensor(X[:64]))
    rec.call("relative_stability.bn_eval", relative_stability, bn, X[:120], random_state=0)
    rec.call("relative_stability.bn_batch", relative_stability, bn, X[:120], random_state=0,
             bn_mode="batch")
    rec.call("relative_stability.median_per_unit", relative_stability, net, X[:120],
             random_state=0, average="median_per_unit")


@case("diffeo.DiffeoStability.sklearn")
def _diffeo_stability_sklearn(rec):
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from geolearn.diffeo import (
        DiffeoStability,
        make_stability_scorer,
        relative_stability,
    )

    X, y = _digits(200)
    Xf = X.reshape(len(X), -1)
    kw = dict(image_shape=(16, 16), random_state=0)
    est = DiffeoStability(LogisticRegression(max_iter=50), **kw)
    rec.estimator("logreg", est, Xf[:150], y[:150], X_eval=Xf[150:])
    pipe = _quiet_fit(make_pipeline(StandardScaler(), LogisticRegression(max_iter=100)), Xf, y)
    rec.call("pipeline.layers", relative_stability, pipe, Xf[:120], layers=["standardscaler"],
             **kw)
    knn = KNeighborsRegressor().fit(Xf, y.astype(float))
    rec.call("knn.predict", relative_stability, knn, Xf[:120], **kw)
    for q in ("R", "D", "G"):
        scorer = make_stability_scorer(q, image_shape=(16, 16), c=3, delta=1.0)
        rec.call(f"scorer.{q}", scorer, pipe, Xf[:120])


@case("diffeo.DiffeoStability.skorch")
def _diffeo_stability_skorch(rec):
    from skorch import NeuralNetClassifier

    from geolearn.diffeo import relative_stability

    X, y = _digits(160)
    net = NeuralNetClassifier(_small_cnn(), max_epochs=1, lr=0.01, train_split=None, verbose=0)
    net.fit(X, y)
    rec.add("net.predict_proba", net.predict_proba(X[:40]))
    rec.call("relative_stability", relative_stability, net, X[:120], random_state=0)


@case("diffeo.subspace_relative_stability")
def _diffeo_subspace(rec):
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    from geolearn.diffeo import subspace_relative_stability

    X = np.random.RandomState(0).randn(80, 5)
    clf = LogisticRegression().fit(X, X[:, 0] > 0)
    rec.call("logreg", subspace_relative_stability, clf, X, [0, 1], random_state=0)
    rec.call("logreg.int", subspace_relative_stability, clf, X, 2, radius=0.5, average="mean",
             random_state=1)
    mlp = _quiet_fit(MLPClassifier((6,), max_iter=50, random_state=0), X, X[:, 1] > 0)
    rec.call("mlp", subspace_relative_stability, mlp, X, [1], random_state=0)


# ================================================================================ invariance
def _rot_data(n=240):
    from geolearn.datasets import make_transforming_mnist

    X, y = make_transforming_mnist(group="rot4", random_state=0, return_X_y=True)
    return X[:n], y[:n]


_INV_FAST = dict(hidden_layer_sizes=(16,), max_epochs=3, batch_size=64, device="cpu",
                 random_state=0)


def _invariant_classifier_outputs(rec, key, clf, X, y, steps):
    with rec.guard(key):
        _invariant_classifier_outputs_inner(rec, key, clf, X, y, steps)


def _invariant_classifier_outputs_inner(rec, key, clf, X, y, steps):
    rec.estimator(key, clf, X, y)
    if not hasattr(clf, "module_"):
        return
    rec.call(f"{key}.logit_invariance", clf.logit_invariance, X)
    rec.call(f"{key}.distribution_invariance", clf.distribution_invariance, X)
    rec.call(f"{key}.normalized_logit_invariance", clf.normalized_logit_invariance, X)
    rec.call(f"{key}.jacobian_sigma_max", clf.jacobian_sigma_max, X[:40])
    rec.call(f"{key}.saliency_invariance", clf.saliency_invariance, X[:12], y[:12],
             return_details=True, steps=steps)
    rec.call(f"{key}.saliency_maps", clf.saliency_maps, X[:6], y[:6], steps=steps)
    rec.call(f"{key}.invariance_report", clf.invariance_report, X[:12], y[:12], steps=steps)
    rec.call(f"{key}.layer_spectral_norms", clf.layer_spectral_norms)
    rec.call(f"{key}.transformed_score", clf.transformed_score, X, y, random_state=0)


@case("invariance.InvariantClassifier")
def _inv_classifier(rec):
    from geolearn.invariance import InvariantClassifier

    X, y = _rot_data()
    clf = InvariantClassifier(**_INV_FAST)
    _invariant_classifier_outputs(rec, "default", clf, X, y, steps=8)
    flat = InvariantClassifier(image_shape=(12, 12), **_INV_FAST)
    rec.estimator("flat", flat, X.reshape(len(X), -1), y)


@case("invariance.InvariantClassifier.variants")
def _inv_classifier_variants(rec):
    import numpy as np

    from geolearn.invariance import FiniteGroup, InvariantClassifier

    X, y = _rot_data()
    kw = dict(_INV_FAST)
    tied = InvariantClassifier(weight_tying=True, **kw)
    _invariant_classifier_outputs(rec, "weight_tying", tied, X, y, steps=4)
    rec.estimator("weight_tying.mean_pool",
                  InvariantClassifier(weight_tying=True, group_pool="mean", **kw), X, y)
    rec.estimator("nu.li", InvariantClassifier(nu=1.0, **kw), X, y)
    rec.estimator("nu.nli", InvariantClassifier(nu=1.0, invariance_loss="nli", reg_elements=1,
                                                **kw), X, y)
    rec.estimator("nu.di.no_augment", InvariantClassifier(nu=1.0, invariance_loss="di",
                                                          augment=False, normalize=None,
                                                          **kw), X, y)
    rec.estimator("validation", InvariantClassifier(validation_fraction=0.25,
                                                    **dict(kw, max_epochs=4)), X, y)
    names = np.array(list("abcdefghi"))[y]
    rec.estimator("string_labels", InvariantClassifier(**kw), X, names)

    def identity(x):
        return x

    def flip_lr(x):
        return x.flip(-1)

    group = FiniteGroup([identity, flip_lr], name="flip-lr")
    rec.estimator("user_group", InvariantClassifier(group=group, augment=False, **kw), X, y)
    rec.estimator("xtrans3", InvariantClassifier(group="xtrans3", **kw), X, y)


@case("invariance.FiniteGroup")
def _inv_group(rec):
    import torch

    from geolearn.invariance import FiniteGroup

    x = torch.arange(2 * 36, dtype=torch.float64).reshape(2, 1, 6, 6)
    rot = FiniteGroup.rot4().check((1, 6, 6), check_group=True)
    rec.add("rot4.order", rot.order)
    rec.add("rot4.non_identity", rot.non_identity)
    rec.add("rot4.identity_index", getattr(rot, "identity_index", None))
    rec.add("rot4.repr", repr(rot))
    for k in range(rot.order):
        rec.call(f"rot4[{k}]", rot[k], x)
        rec.call(f"rot4.inverse({k})", rot.inverse(k), x)
    rec.call("rot4.apply_random", rot.apply_random, x.repeat(4, 1, 1, 1),
             generator=torch.Generator().manual_seed(0))
    sh = FiniteGroup.xtrans3(6).check((1, 6, 6), check_group=True)
    for k in range(sh.order):
        rec.call(f"xtrans3[{k}]", sh[k], x)
        rec.call(f"xtrans3.inverse({k})", sh.inverse(k), x)

    def rot(k):
        return lambda z: torch.rot90(z, k, dims=(-2, -1))

    user = FiniteGroup([rot(2), rot(1), rot(0), rot(3)], name="user").check((1, 6, 6),
                                                                             check_group=True)
    rec.add("user.identity_index", getattr(user, "identity_index", None))
    for k in range(user.order):
        rec.call(f"user.inverse({k})", user.inverse(k), x)
    rec.call("unclosed", FiniteGroup([rot(0), rot(1)]).check, (1, 4, 4), check_group=True)


def _inv_small_net(d=36, k=3, seed=0):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(d, 8), nn.Tanh(), nn.Linear(8, k))


@case("invariance.metrics")
def _inv_metrics(rec):
    import numpy as np

    from geolearn.invariance import (
        distribution_invariance,
        jacobian_sigma_max,
        logit_invariance,
        normalized_logit_invariance,
    )

    X = np.random.default_rng(0).random((7, 1, 6, 6), dtype=np.float32)
    net = _inv_small_net()
    for name, fn in [("logit_invariance", logit_invariance),
                     ("distribution_invariance", distribution_invariance),
                     ("normalized_logit_invariance", normalized_logit_invariance)]:
        rec.call(f"{name}.mean", fn, net, X, "rot4")
        rec.call(f"{name}.none", fn, net, X, "rot4", reduction="none", batch_size=3)
        rec.call(f"{name}.xtrans3", fn, net, X, "xtrans3")
        rec.call(f"{name}.flat", fn, net, X.reshape(7, -1), "rot4", image_shape=(6, 6))
        rec.call(f"{name}.callable", fn, lambda x: net(x), X, "rot4")
    rec.call("jacobian_sigma_max.none", jacobian_sigma_max, net.double(), X.astype(np.float64),
             reduction="none", batch_size=3)
    rec.call("jacobian_sigma_max.mean", jacobian_sigma_max, net, X)
    rec.call("jacobian_sigma_max.median", jacobian_sigma_max, net, X, reduction="median")


@case("invariance.metrics.sklearn")
def _inv_metrics_sklearn(rec):
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from skorch import NeuralNetClassifier

    from geolearn.invariance import (
        distribution_invariance,
        jacobian_sigma_max,
        logit_invariance,
        saliency_invariance,
    )

    X = np.random.default_rng(0).random((20, 1, 6, 6), dtype=np.float32)
    y = np.arange(20) % 3
    flat = X.reshape(20, -1)
    lr = LogisticRegression().fit(flat, y)
    rec.call("logreg.logit_invariance", logit_invariance, lr, flat, "rot4", image_shape=(6, 6),
             reduction="none")
    rec.call("logreg.distribution_invariance", distribution_invariance, lr, flat, "rot4",
             image_shape=(6, 6))
    rec.call("logreg.saliency_invariance", saliency_invariance, lr, flat, "rot4", y,
             image_shape=(6, 6))
    rec.call("logreg.jacobian_sigma_max", jacobian_sigma_max, lr, flat)
    mlp = _quiet_fit(MLPClassifier((5,), max_iter=5, random_state=0), flat, y)
    rec.call("mlp.saliency_invariance", saliency_invariance, mlp, flat, "rot4", y,
             image_shape=(6, 6), steps=4, return_details=True)
    rec.call("mlp.logit_invariance", logit_invariance, mlp, flat, "rot4", image_shape=(6, 6))
    rec.call("mlp.jacobian_sigma_max", jacobian_sigma_max, mlp, flat, reduction="none")
    sk = NeuralNetClassifier(_inv_small_net, max_epochs=1, train_split=None, verbose=0)
    sk.fit(X, y)
    rec.call("skorch.logit_invariance", logit_invariance, sk, X, "rot4")


@case("invariance.saliency")
def _inv_saliency(rec):
    import numpy as np
    import torch
    from torch import nn

    from geolearn.invariance import (
        integrated_gradients,
        saliency_invariance,
        saliency_map,
    )

    torch.manual_seed(0)
    lin = nn.Linear(12, 4).double()
    Xl = np.random.default_rng(1).normal(size=(5, 12))
    rec.call("integrated_gradients.linear", integrated_gradients, lin, Xl, [0, 1, 2, 3, 0],
             steps=3, image_shape=(3, 4))

    def sq(x):
        return (x.flatten(1) ** 2).sum(1, keepdim=True)

    Xq = np.random.default_rng(2).normal(size=(3, 1, 2, 2))
    rec.call("integrated_gradients.baseline", integrated_gradients, sq, Xq, 0, steps=2,
             baseline=np.full((1, 2, 2), 0.3))
    rec.call("integrated_gradients.scalar_baseline", integrated_gradients, sq, Xq, 0, steps=2,
             baseline=0.3)
    X = np.random.default_rng(0).random((7, 1, 6, 6), dtype=np.float32)
    net = _inv_small_net()
    y = np.arange(7) % 3
    rec.call("integrated_gradients.net", integrated_gradients, net, X, y, steps=5)
    rec.call("saliency_map", saliency_map, net, X, y, steps=5)
    rec.call("saliency_map.options", saliency_map, net, X, 1, threshold=0.5, sigma=0.5,
             kernel_size=5, padding="circular_x", steps=3, baseline=0.1)
    rec.call("saliency_invariance", saliency_invariance, net, X, "rot4", y, steps=5,
             return_details=True)
    rec.call("saliency_invariance.pred", saliency_invariance, net, X, "xtrans3", steps=4)
    W = torch.randn(36, 3, generator=torch.Generator().manual_seed(0))

    def invariant(x):
        return torch.stack([torch.rot90(x, k, dims=(-2, -1)).flatten(1) @ W
                            for k in range(4)]).amax(0)

    rec.call("saliency_invariance.invariant", saliency_invariance, invariant, X, "rot4", y,
             steps=5)


@case("invariance.scorers")
def _inv_scorers(rec):
    import numpy as np

    from geolearn.invariance import make_invariance_scorer, refit_best_subject_to

    X = np.random.default_rng(0).random((7, 1, 6, 6), dtype=np.float32)
    y = np.arange(7) % 3
    net = _inv_small_net()
    for metric in ("LI", "DI", "NLI", "SI"):
        scorer = make_invariance_scorer(metric, group="rot4", **({"steps": 4}
                                                                 if metric == "SI" else {}))
        rec.call(f"scorer.{metric}", scorer, net, X, y)
    rec.call("scorer.sigma_max", make_invariance_scorer("sigma_max"), net, X)
    rec.call("scorer.no_group", make_invariance_scorer("LI"), net, X, y)
    pick = refit_best_subject_to("acc", "SI", 0.95)
    rec.call("refit_best_subject_to", pick,
             {"mean_test_acc": [0.99, 0.9, 0.95], "mean_test_SI": [0.2, 0.97, 0.96]})
    rec.call("refit_best_subject_to.none", pick, {"mean_test_acc": [0.9],
                                                  "mean_test_SI": [0.5]})


# ================================================================================ riemannian
def _riem_seq(seed=0, d=2):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d, 12), nn.Tanh(), nn.Linear(12, 8), nn.Sigmoid(),
                         nn.Linear(8, 2))


def _riem_mlp(d, m, seed=0):
    import torch

    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(d, 7), torch.nn.Tanh(),
                               torch.nn.Linear(7, m), torch.nn.Sigmoid()).double()


def _geometry_outputs(rec, key, make, X):
    """``make()`` returns a fitted RiemannianFeatureGeometry; its outputs on ``X``."""
    with rec.guard(key):
        _geometry_outputs_inner(rec, key, _quiet_call(make), X)


def _geometry_outputs_inner(rec, key, geo, X):
    for m in ("transform", "feature_jacobian", "metric_tensor", "metric_eigenvalues",
              "volume_element", "log_volume_element", "ricci_scalar"):
        rec.call(f"{key}.{m}", getattr(geo, m), X)
    rec.call(f"{key}.get_feature_names_out", geo.get_feature_names_out)
    rec.call(f"{key}.along_path", geo.along_path, X[0], X[1], n_steps=5)
    if X.shape[1] == 2:
        rec.call(f"{key}.on_grid", geo.on_grid, bounds=(-1, 1), resolution=5)
    rec.call(f"{key}.on_plane", geo.on_plane, X[0], X[1], X[2], resolution=4)
    rec.call(f"{key}.on_plane.affine", geo.on_plane, X[0], X[1], X[2], resolution=4,
             hull="affine", extent=2.0)
    rec.add(f"{key}.attr", fitted_attributes(geo))


@case("riemannian.RiemannianFeatureGeometry.mlp")
def _riem_rfg_mlp(rec):
    from sklearn.neural_network import MLPClassifier

    from geolearn.datasets import make_sinusoid_boundary
    from geolearn.riemannian import RiemannianFeatureGeometry as RFG

    X, y = make_sinusoid_boundary(60, random_state=0)
    mlp = _quiet_fit(MLPClassifier((9,), activation="tanh", max_iter=50, random_state=0), X, y)
    quantities = ("log_volume", "rank", "ricci_scalar", "log_metric_eigvals")
    _geometry_outputs(rec, "fitted_mlp", lambda: RFG(mlp, layer="act_0", scale="none",
                                                     quantities=quantities).fit(X), X[:20])
    _geometry_outputs(rec, "fitted_mlp.width", lambda: RFG(mlp, layer="act_0").fit(X), X[:20])
    _geometry_outputs(rec, "fitted_mlp.output", lambda: RFG(mlp).fit(X), X[:10])
    # an unfitted MLP is refused (only skorch nets are trained in fit: see the torch case)
    unfitted = MLPClassifier((7,), activation="logistic", max_iter=40, random_state=0)
    rec.call("unfitted_mlp.fit", RFG(unfitted, layer="act_0").fit, X, y)


@case("riemannian.RiemannianFeatureGeometry.torch")
def _riem_rfg_torch(rec):
    import numpy as np
    import torch
    from skorch import NeuralNetClassifier
    from torch import nn

    from geolearn.datasets import make_sinusoid_boundary
    from geolearn.riemannian import RiemannianFeatureGeometry as RFG
    from geolearn.riemannian import ShallowNet

    X, y = make_sinusoid_boundary(60, random_state=0)
    quantities = ("log_volume", "rank", "ricci_scalar", "log_metric_eigvals")
    _geometry_outputs(rec, "seq.layer3",
                      lambda: RFG(_riem_seq(), layer=3, quantities=quantities).fit(X), X[:20])
    _geometry_outputs(rec, "seq.layer1.fd",
                      lambda: RFG(_riem_seq(), layer="1", jacobian="fd",
                                  volume_method="cholesky").fit(X), X[:10])
    with rec.guard("seq.callable_layer"):
        geo = RFG(_riem_seq(), layer=lambda module, x: module[:2](x), dtype="float32").fit(X)
        rec.call("seq.callable_layer.transform", geo.transform, X[:10])
        rec.call("seq.callable_layer.ricci_scalar", geo.ricci_scalar, X[:5])
    torch.manual_seed(0)
    img = nn.Sequential(nn.Flatten(), nn.Linear(12, 20), nn.Sigmoid())
    Xi = np.random.default_rng(0).uniform(size=(4, 1, 3, 4))
    rec.call("images.transform", lambda: RFG(img).fit(Xi).transform(Xi))
    rec.call("tanh.transform", lambda: RFG(nn.Tanh()).fit(X).transform(X[:10]))
    relu = nn.Sequential(nn.Linear(2, 10), nn.ReLU())
    rec.call("relu.transform", lambda: RFG(relu).fit(X).transform(X[:10]))
    # an unfitted skorch net: fit(X, y) trains it (fit_feature_map="auto")
    net = NeuralNetClassifier(ShallowNet, module__n_features=2, module__width=10,
                              module__n_classes=2, criterion=nn.CrossEntropyLoss, max_epochs=2,
                              train_split=None, verbose=0)
    _geometry_outputs(rec, "unfitted_skorch", lambda: RFG(net, layer="features").fit(X, y),
                      X[:10])


@case("riemannian.RiemannianFeatureGeometry.kernel")
def _riem_rfg_kernel(rec):
    import numpy as np

    from geolearn.riemannian import RiemannianFeatureGeometry

    X = np.random.default_rng(0).uniform(-1, 1, (6, 3))
    for kernel, params in [("rbf", {"gamma": 0.5}), ("poly", {"degree": 2}),
                           ("erf_nngp", {}), ("linear", {}),
                           ("mahalanobis_rbf", {"M": np.diag([1.0, 2.0, 3.0])})]:
        geo = RiemannianFeatureGeometry(kernel=kernel, kernel_params=params, quantities=(
            "log_volume", "rank", "ricci_scalar", "log_metric_eigvals"))
        rec.estimator(f"{kernel}", geo, X)
        rec.call(f"{kernel}.metric_tensor", geo.metric_tensor, X)
        rec.call(f"{kernel}.ricci_scalar", geo.ricci_scalar, X)
    rec.call("laplacian", RiemannianFeatureGeometry(kernel="laplacian").fit, X)


@case("riemannian.engines")
def _riem_engines(rec):
    import torch

    from geolearn.riemannian import MetricField, PullbackMetric

    F64 = torch.float64
    g = torch.Generator().manual_seed(0)
    for d, m in [(2, 5), (3, 3)]:
        net = _riem_mlp(d, m)
        X = torch.randn(6, d, dtype=F64, generator=g)
        k = f"pullback.{d}x{m}"
        for mode in ("auto", "fwd", "rev", "fd"):
            rec.call(f"{k}.jacobian.{mode}", PullbackMetric(net, jacobian=mode).jacobian, X)
        rec.call(f"{k}.jacobian.loop", PullbackMetric(net, vectorize=False).jacobian, X)
        rec.call(f"{k}.jacobian.tiny", PullbackMetric(net, max_memory=1, batch_size=2).jacobian,
                 X)
        for scale in ("none", "width", 0.25):
            pm = PullbackMetric(net, scale=scale)
            kk = f"{k}.scale_{scale}"
            rec.call(f"{kk}.metric", pm.metric, X)
            rec.call(f"{kk}.metric_eigvals", pm.metric_eigvals, X)
            rec.call(f"{kk}.log_volume", pm.log_volume, X, return_rank=True)
            rec.call(f"{kk}.log_volume.cholesky", pm.log_volume, X, method="cholesky")
            rec.call(f"{kk}.log_volume.rank1", pm.log_volume, X, rank=1)
            rec.call(f"{kk}.ricci_scalar", pm.ricci_scalar, X)
            rec.call(f"{kk}.scale_value", pm.scale_value, X)
        pm = PullbackMetric(net)
        rec.call(f"{k}.hessian", pm.hessian, X[:3])
        rec.call(f"{k}.christoffel", pm.christoffel, X[:3])
        rec.call(f"{k}.metric_derivative", pm.metric_derivative, X[:3])
        rec.call(f"{k}.n_outputs", pm.n_outputs, X)
        rec.call(f"{k}.ricci_scalar.christoffel", pm.ricci_scalar, X[:3], method="christoffel")
    A = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1e-3, 0.0]], dtype=F64)
    pm = PullbackMetric(lambda Z: Z @ A.T, scale="none")
    rec.call("rank_rtol", pm.log_volume, torch.zeros(2, 3, dtype=F64), rtol=1e-2,
             return_rank=True)

    def round_metric(x):
        return torch.diag(torch.stack([torch.ones_like(x[0]), x[0].sin() ** 2]))

    field = MetricField(round_metric)
    Xs = torch.tensor([[0.9, 0.3], [1.2, -0.4], [0.5, 2.0]], dtype=F64)
    for m in ("metric", "metric_eigvals", "log_volume", "ricci_scalar", "christoffel",
              "metric_derivative"):
        rec.call(f"metric_field.{m}", getattr(field, m), Xs)


@case("riemannian.kernels")
def _riem_kernels(rec):
    import torch

    from geolearn.riemannian import (
        KernelMetric,
        erf_nngp_kernel,
        laplacian_kernel,
        linear_kernel,
        mahalanobis_rbf_kernel,
        polynomial_kernel,
        rbf_kernel,
    )

    X = torch.randn(4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    M = torch.tensor([[2.0, 0.5, 0.0], [0.5, 1.0, 0.1], [0.0, 0.1, 1.5]], dtype=torch.float64)
    kernels = {"rbf": rbf_kernel(2.0), "mahalanobis_rbf": mahalanobis_rbf_kernel(M, 0.5),
               "poly": polynomial_kernel(0.5, 1.0, 3), "linear": linear_kernel(),
               "erf_nngp": erf_nngp_kernel(1.5, 0.5)}
    for name, kern in kernels.items():
        rec.add(f"{name}.repr", repr(kern))
        km = KernelMetric(kern)
        for m in ("metric", "metric_eigvals", "log_volume", "ricci_scalar", "christoffel",
                  "metric_derivative"):
            rec.call(f"{name}.{m}", getattr(km, m), X)
        rec.call(f"{name}.check_smooth", km.check_smooth, X[0])
        if callable(kern):
            rec.call(f"{name}.call", kern, X[0], X[1])
    rec.call("laplacian_kernel", laplacian_kernel, 1.0)


@case("riemannian.shallow")
def _riem_shallow(rec):
    import numpy as np
    import torch

    from geolearn.riemannian import Erf, ShallowNet, ShallowNetworkGeometry

    torch.manual_seed(0)
    X = torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    for act in ("sigmoid", "tanh", "erf"):
        torch.manual_seed(0)
        net = ShallowNet(3, 11, 2, activation=act)
        rec.add(f"{act}.state", net)
        with torch.no_grad():
            rec.call(f"{act}.forward", net, X)
            rec.call(f"{act}.features", net.features, X)
        geo = ShallowNetworkGeometry.from_module(net)
        for m in ("jacobian", "metric", "log_volume", "ricci_scalar", "ricci_scalar_2d_minors",
                  "det_cauchy_binet"):
            rec.call(f"{act}.geometry.{m}", getattr(geo, m), X)
        rec.add(f"{act}.geometry.scale_value", geo.scale_value)
    rng = np.random.default_rng(0)
    W, b = rng.standard_normal((50, 2)), rng.standard_normal(50)
    geo = ShallowNetworkGeometry(W, b, "sigmoid", scale="none")
    X2 = torch.tensor([[0.3, -0.7], [1.2, 0.1]], dtype=torch.float64)
    for m in ("jacobian", "metric", "log_volume", "ricci_scalar", "ricci_scalar_2d_minors",
              "det_cauchy_binet"):
        rec.call(f"numpy_weights.{m}", getattr(geo, m), X2)
    with torch.no_grad():
        rec.call("Erf", Erf(), torch.linspace(-3, 3, 13, dtype=torch.float64))


@case("riemannian.analytic")
def _riem_analytic(rec):
    import numpy as np

    from geolearn.riemannian import analytic

    X = np.random.default_rng(0).uniform(-2, 2, (5, 2))
    for act, deg in [("erf", None), ("sigmoid", None), ("monomial", 2)]:
        kw = dict(activation=act, degree=deg) if deg else dict(activation=act)
        rec.call(f"nngp_metric.{act}", analytic.nngp_metric, X, **kw)
        rec.call(f"nngp_log_volume.{act}", analytic.nngp_log_volume, X, **kw)
        rec.call(f"nngp_ricci_scalar.{act}", analytic.nngp_ricci_scalar, X, **kw)
    rec.call("nngp_metric.sigma", analytic.nngp_metric, X, sigma_w=2.0, sigma_b=0.5)
    rec.call("conformal_rbf_log_volume", analytic.conformal_rbf_log_volume, X, X[:3], 0.7, 0.5)
    u = (X ** 2).sum(1)
    rec.call("projection_metric_quantities", analytic.projection_metric_quantities,
             1 + u, np.ones(5), np.zeros(5), X)


@case("riemannian.ConformalKernelSVC")
def _riem_conformal(rec):
    from sklearn.datasets import make_blobs

    from geolearn.datasets import make_sinusoid_boundary
    from geolearn.riemannian import ConformalKernelSVC

    X, y = make_sinusoid_boundary(100, random_state=0)

    def extras(key, clf, Z):
        for m in ("conformal_factor", "log_conformal_factor", "log_volume_element",
                  "kernel_matrix"):
            rec.call(f"{key}.{m}", getattr(clf, m), Z)
        rec.call(f"{key}.kernel_matrix.XY", clf.kernel_matrix, Z[:5], Z[5:9])

    clf = ConformalKernelSVC(gamma=2.0, n_refits=2)
    rec.estimator("rbf", clf, X, y)
    extras("rbf", clf, X[:30])
    clf = ConformalKernelSVC(tau=[0.3, 0.2], n_refits=2, probability=True, random_state=0)
    rec.estimator("tau_list.proba", clf, X, y)
    clf = ConformalKernelSVC(kernel="poly", degree=2, gamma=0.5, coef0=1.0, n_refits=1)
    rec.estimator("poly", clf, X, y)
    extras("poly", clf, X[:20])
    Xb, yb = make_blobs(90, centers=3, cluster_std=1.0, random_state=0)
    clf = ConformalKernelSVC(n_refits=1, decision_function_shape="ovo")
    rec.estimator("blobs.ovo", clf, Xb, yb)
    rec.estimator("blobs.ovr", ConformalKernelSVC(n_refits=1, class_weight="balanced"), Xb, yb)


# ================================================================================== manifold
def _cidm_outputs(rec, key, cidm, X, Q):
    with rec.guard(key):
        _cidm_outputs_inner(rec, key, cidm, X, Q)


def _cidm_outputs_inner(rec, key, cidm, X, Q):
    rec.estimator(key, cidm, X, X_eval=Q)
    for m in ("nystrom_project", "project", "gradient", "projection_jacobian", "tangent_basis"):
        rec.call(f"{key}.{m}", getattr(cidm, m), Q)
    rec.call(f"{key}.nystrom_project.n_iter2", cidm.nystrom_project, Q, n_iter=2)
    rec.call(f"{key}.inverse_transform", cidm.inverse_transform, cidm.transform(Q))
    rec.call(f"{key}.get_feature_names_out", cidm.get_feature_names_out)


@case("manifold.CIDM")
def _manifold_cidm(rec):
    import numpy as np
    import torch

    from geolearn.datasets import make_circle_points
    from geolearn.manifold import CIDM

    X = make_circle_points(150, noise=0.05, random_state=0)
    Q = 1.2 * X[:7] + 0.01
    cidm = CIDM(n_eigenpairs=8, random_state=0)
    _cidm_outputs(rec, "dense", cidm, X, Q)
    rec.call("dense.fit_transform", CIDM(n_eigenpairs=6, diffusion_time=2.0,
                                         random_state=0).fit_transform, X)
    F = np.random.default_rng(0).standard_normal((150, 2))
    rec.call("dense.extend", cidm.extend, F, Q)
    rec.call("dense.to_torch.projection",
             lambda: cidm.to_torch(dtype=torch.float64, device="cpu")(torch.tensor(Q)))
    rec.call("dense.to_torch.embedding",
             lambda: cidm.to_torch("embedding", dtype=torch.float64, device="cpu")(
                 torch.tensor(Q)))
    M = cidm.as_manifold()
    rec.add("CIDMManifold.ambient_dim", M.ambient_dim)
    rec.add("CIDMManifold.intrinsic_dim", M.intrinsic_dim)
    rec.call("CIDMManifold.project", M.project, Q)
    rec.call("CIDMManifold.tangent_basis", M.tangent_basis, Q)
    _cidm_outputs(rec, "knn", CIDM(n_eigenpairs=8, n_neighbors=20, random_state=0), X, Q)
    _cidm_outputs(rec, "kth.components", CIDM(n_eigenpairs=8, n_components=4,
                                              bandwidth_statistic="kth", k_bandwidth=5,
                                              diffusion_time=1.0, tangent="local_pca",
                                              random_state=0), X, Q)
    _cidm_outputs(rec, "fixed", CIDM(n_eigenpairs=6, bandwidth="fixed", epsilon=0.1,
                                     alpha=0.5, random_state=0), X, Q)


@case("manifold.CIDM.solvers")
def _manifold_cidm_solvers(rec):
    from geolearn.datasets import make_torus_points
    from geolearn.manifold import CIDM, fixed_bandwidth_diffusion_map

    X = make_torus_points(300, R=1, r=1, noise=0.01, random_state=0)
    for solver in ("dense", "arpack", "lobpcg"):
        cidm = CIDM(n_eigenpairs=6, n_neighbors=20, eigen_solver=solver, random_state=0)
        rec.estimator(f"{solver}", cidm, X, X_eval=X[:10], methods=("transform",))
    cidm = CIDM(n_eigenpairs=6, n_neighbors=20, nn_backend="ann", random_state=0)
    rec.estimator("ann", cidm, X, X_eval=X[:10], methods=("transform",))
    dm = fixed_bandwidth_diffusion_map(n_eigenpairs=5, random_state=0)
    rec.add("fixed_bandwidth_diffusion_map.params", dm.get_params())
    rec.estimator("fixed_bandwidth_diffusion_map", dm, X, X_eval=X[:10])
    imgs = X.reshape(300, 1, 2, 2)
    rec.estimator("images", CIDM(n_eigenpairs=4, random_state=0), imgs, X_eval=imgs[:10],
                  methods=("transform", "nystrom_project"))


@case("manifold.SECVectorFields")
def _manifold_sec(rec):
    import numpy as np

    from geolearn.datasets import make_circle_points
    from geolearn.manifold import CIDM, SECVectorFields, local_pca_tangent_basis

    X = make_circle_points(150, grid=True)
    sec = SECVectorFields(CIDM(n_eigenpairs=16, random_state=0), n_frame=5)
    rec.estimator("circle", sec, X, X_eval=X[::10])
    rec.call("circle.vector_fields", sec.vector_fields, X[::10], 2)
    rec.call("circle.tangent_basis", sec.tangent_basis, X[::10])
    rec.call("circle.tangent_basis.n_fields", sec.tangent_basis, X[::10], dim=1, n_fields=3)
    cidm = CIDM(n_eigenpairs=12, random_state=0).fit(X)
    again = SECVectorFields.from_cidm(cidm, n_frame=4, n_products=10, order="signed")
    rec.add("from_cidm.attr", fitted_attributes(again))
    rec.call("from_cidm.vector_fields", again.vector_fields, X[::15], 3)
    rng = np.random.default_rng(0)
    plane = np.c_[rng.standard_normal((100, 2)), np.zeros(100)] @ np.linalg.qr(
        rng.standard_normal((3, 3)))[0].T
    rec.call("local_pca_tangent_basis", local_pca_tangent_basis, plane, plane[:5], dim=2,
             n_neighbors=10)


def _cut_net():
    import torch

    net = torch.nn.Linear(2, 2)
    with torch.no_grad():
        net.weight.copy_(torch.tensor([[-1.0, 0.0], [1.0, 0.0]]))
        net.bias.copy_(torch.tensor([0.5, -0.5]))
    return net


def _rings(n=100):
    import numpy as np

    from geolearn.datasets import make_circle_points

    X1, t1 = make_circle_points(n, grid=True, return_params=True)
    X2, t2 = make_circle_points(n, radius=2.0, grid=True, return_params=True)
    return (np.r_[X1, X2], np.r_[np.zeros(n, int), np.ones(n, int)], np.r_[t1, t2])


@case("manifold.OnManifoldPGD")
def _manifold_pgd(rec):
    import numpy as np

    from geolearn.manifold import OnManifoldPGD

    X, y, t = _rings()
    ts = np.array([1.8, 2.3, -1.8, -2.3])
    starts = np.c_[np.cos(ts), np.sin(ts)]
    fast = {"cidm_params": {"n_eigenpairs": 12}, "random_state": 0, "n_steps": 25}
    for name, params in [
        ("jacobian", {"tangent": "jacobian", "intrinsic_dim": 1}),
        ("local_pca", {"tangent": "local_pca", "intrinsic_dim": 1}),
        ("sec", {"tangent": "sec", "sec_params": {"n_frame": 4}}),
        ("pullback", {"tangent": "jacobian", "intrinsic_dim": 1, "direction": "pullback"}),
        ("update_tangent", {"tangent": "jacobian", "intrinsic_dim": 1, "update_tangent": True,
                            "n_projection_iter": 2}),
        ("local_patch_clip", {"tangent": "sec", "local_patch": 40, "clip": (-0.9, 0.9),
                              "sec_params": {"n_frame": 4}}),
        ("fixed_step", {"tangent": "jacobian", "intrinsic_dim": 1, "step_size": 0.2,
                        "normalize_gradient": False}),
    ]:
        attack = OnManifoldPGD(_cut_net(), **fast, **params)
        rec.estimator(name, attack, X, y, X_eval=starts, y_eval=np.zeros(4, int))
        rec.call(f"{name}.generate", attack.generate, starts, y=np.zeros(4, int))
    attack = OnManifoldPGD(_cut_net(), tangent="jacobian", intrinsic_dim=1, **fast)
    attack.fit(X, y, intrinsic_params=np.c_[np.cos(t), np.sin(t)])
    rec.call("intrinsic.generate", attack.generate, starts, y=np.zeros(4, int))
    rec.call("default_labels.generate", attack.generate, np.array([[-2.0, 0.0], [0.0, -2.0]]))


@case("manifold.OnManifoldPGD.sklearn")
def _manifold_pgd_sklearn(rec):
    import numpy as np
    import torch
    from sklearn.neural_network import MLPClassifier
    from skorch import NeuralNetClassifier

    from geolearn.manifold import OnManifoldPGD

    X, y, _ = _rings()
    ts = np.array([1.8, 2.3])
    starts = np.c_[np.cos(ts), np.sin(ts)]
    labels = (X[:, 0] > 0.5).astype(np.int64)
    fast = {"cidm_params": {"n_eigenpairs": 12}, "random_state": 0, "n_steps": 20}
    mlp = _quiet_fit(MLPClassifier((8,), max_iter=200, random_state=0), X, labels)
    attack = OnManifoldPGD(mlp, loss="nll", tangent="jacobian", intrinsic_dim=1, **fast)
    rec.estimator("mlp", attack, X, y, X_eval=starts, y_eval=[0, 0])
    rec.call("mlp.generate", attack.generate, starts, y=[0, 0])
    net = NeuralNetClassifier(_cut_net(), max_epochs=0, train_split=None, verbose=0,
                              criterion=torch.nn.CrossEntropyLoss)
    net.fit(X.astype(np.float32), labels)
    attack = OnManifoldPGD(net, tangent="jacobian", intrinsic_dim=1, **fast)
    rec.estimator("skorch", attack, X, y, X_eval=starts, y_eval=[0, 0])
    rec.call("skorch.generate", attack.generate, starts, y=[0, 0])


# ================================================================================= polytopes
def _poly_data():
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(150, 3))
    return X, (X[:, 0] * X[:, 1] > 0).astype(int)


def _relu_polytopes_outputs(rec, key, est, X, y=None):
    with rec.guard(key):
        _relu_polytopes_outputs_inner(rec, key, est, X, y)


def _relu_polytopes_outputs_inner(rec, key, est, X, y=None):
    import numpy as np

    rec.estimator(key, est, X, y, X_eval=X[:40])
    if not hasattr(est, "labels_"):
        return
    rec.call(f"{key}.region_index", est.region_index, X[:40])
    rec.call(f"{key}.region_index.far", est.region_index, np.full((1, X.shape[1]), 50.0))
    rec.call(f"{key}.local_affine_map", est.local_affine_map, X[:40])
    rec.call(f"{key}.get_feature_names_out", est.get_feature_names_out)
    rec.call(f"{key}.margin", est.margin, X[:40])
    rec.call(f"{key}.chebyshev", est.chebyshev, X[:10])
    rec.call(f"{key}.hamming_distances", est.hamming_distances, X[:10])
    rec.call(f"{key}.hamming_distances.XY", est.hamming_distances, X[:10], X[10:25])
    rec.call(f"{key}.hamming_distances.paired", est.hamming_distances, X[:10], X[10:20],
             paired=True)
    rec.call(f"{key}.hamming_at_radius", est.hamming_at_radius, X[:40], 0.3, n_directions=4,
             random_state=3)
    rec.call(f"{key}.neighbours", est.neighbours, est.patterns_[0])
    rec.call(f"{key}.segment_regions", est.segment_regions, X[0], X[1])
    rec.call(f"{key}.segment_region_counts", est.segment_region_counts, X[:10], X[10:20])
    rec.call(f"{key}.summary_table.margin", est.summary_table,
             {"a": X[:20], "b": X[20:40]}, "margin")
    rec.call(f"{key}.summary_table.segment_regions", est.summary_table,
             {"p": (X[:5], X[5:10])}, "segment_regions")
    rec.call(f"{key}.summary_table.hamming_at_radius", est.summary_table, {"a": X[:20]},
             "hamming_at_radius", radius=0.2, random_state=0)
    rec.call(f"{key}.summary_table.n_active", est.summary_table, {"a": X[:5]}, "n_active")
    P = rec.call(f"{key}.polytope", est.polytope, x=X[0])
    if P is not None:
        for m in ("active_bits", "chebyshev", "facets", "is_bounded", "reduced"):
            rec.call(f"{key}.polytope.{m}", getattr(P, m))
        rec.call(f"{key}.polytope.contains", P.contains, X[:20])
        rec.add(f"{key}.polytope.n_units", P.n_units)


@case("polytopes.ReLUPolytopes.torch")
def _poly_relu_torch(rec):
    from geolearn.polytopes import ReLUPolytopes

    X, _ = _poly_data()
    est = ReLUPolytopes(_gaussian_net((3, 8, 6, 2), seed=0), random_state=0)
    _relu_polytopes_outputs(rec, "global_range", est, X)
    est = ReLUPolytopes(_gaussian_net((3, 8, 6, 2), seed=0),
                        region_stats=("chebyshev", "facets", "boundedness"), random_state=0)
    rec.estimator("region_stats", est, X[:30])
    est = ReLUPolytopes(_gaussian_net((3, 8, 6, 2), seed=0), region_stats=("chebyshev",),
                        max_lp_regions=3, random_state=0)
    rec.estimator("max_lp_regions", est, X)
    est = ReLUPolytopes(_gaussian_net((3, 5, 1), seed=1), bounds=(-0.5, 0.5), facet_method="lp",
                        random_state=0)
    _relu_polytopes_outputs(rec, "box.lp", est, X[:60])
    est = ReLUPolytopes(_gaussian_net((3, 4, 1), seed=0).float(), bounds=None)
    rec.estimator("float32.no_bounds", est, X[:40])


@case("polytopes.ReLUPolytopes.mlp")
def _poly_relu_mlp(rec):
    from sklearn.neural_network import MLPClassifier, MLPRegressor

    from geolearn.polytopes import ReLUPolytopes

    X, y = _poly_data()
    mlp = _quiet_fit(MLPClassifier((6,), max_iter=200, random_state=0), X, y)
    _relu_polytopes_outputs(rec, "fitted_mlp", ReLUPolytopes(mlp, random_state=0), X)
    est = ReLUPolytopes(MLPClassifier((5, 4), max_iter=100, random_state=0), random_state=0)
    _relu_polytopes_outputs(rec, "unfitted_mlp", est, X, y)
    est = ReLUPolytopes(network=MLPRegressor(hidden_layer_sizes=(6,), max_iter=30,
                                             random_state=0))
    _quiet_fit(est, X, X[:, 0])
    rec.estimator("mlp_regressor", est, X, fit=False)
    rec.call("unfitted_mlp_no_y", ReLUPolytopes(MLPClassifier((3,))).fit, X)


@case("polytopes.enumeration")
def _poly_enumeration(rec):
    import numpy as np
    from sklearn.utils import Bunch

    from geolearn.polytopes import ReLUPolytopes, dual_distances

    X2 = np.random.default_rng(0).uniform(-1, 1, size=(20, 2))
    for key, sizes, seed, bounds in [("hyperplanes", (2, 5, 1), 0, None),
                                     ("deep.box", (2, 5, 5, 1), 0, (-1, 1)),
                                     ("deep.box2", (2, 4, 4, 1), 2, (-1, 1))]:
        with rec.guard(key):
            est = ReLUPolytopes(_gaussian_net(sizes, seed), bounds=bounds, random_state=0).fit(X2)
            methods = ("auto",) if bounds is None else ("traversal", "subdivision")
            for method in methods:
                enum = rec.call(f"{key}.{method}", est.enumerate_regions, method=method)
                if enum is not None:
                    rec.call(f"{key}.{method}.dual_distances", dual_distances, enum)
                    rec.call(f"{key}.{method}.dual_distances.0", dual_distances, enum, 0)
            if bounds is not None:
                P = est.polytope(x=X2[0])
                rec.call(f"{key}.polygon", P.polygon)
                rec.call(f"{key}.polytope.pattern", est.polytope, pattern=est.patterns_[1])
    # the XOR net of the paper: three regions
    xor = _gaussian_net((2, 2, 1), 0)
    import torch

    with torch.no_grad():
        xor[0].weight.copy_(torch.tensor([[1.0, 1.0], [1.0, 1.0]]))
        xor[0].bias.copy_(torch.tensor([1.0, 0.0]))
        xor[2].weight.copy_(torch.tensor([[2.0, -4.0]]))
        xor[2].bias.copy_(torch.tensor([-1.0]))
    rec.call("xor", ReLUPolytopes(xor, bounds=None).fit(X2).enumerate_regions)
    # the results of enumerate_regions / segment_regions
    est = ReLUPolytopes(_gaussian_net((2, 4, 1), 1), random_state=0).fit(X2)
    rec.add("RegionEnumeration.isinstance",
            isinstance(est.enumerate_regions(), Bunch))
    seg = rec.call("SegmentRegions", est.segment_regions, X2[0], X2[1])
    rec.add("SegmentRegions.isinstance", isinstance(seg, Bunch))


@case("polytopes.functions")
def _poly_functions(rec):
    import numpy as np
    import torch
    from sklearn.neural_network import MLPClassifier
    from torch import nn

    from geolearn.polytopes import (
        Polytope,
        as_relu_network,
        describe,
        local_rows,
        nn_agreement,
    )

    net = _gaussian_net((4, 6, 5, 3), seed=0)
    relu = rec.call("as_relu_network.sequential", as_relu_network, net)
    rec.add("ReLUNet.hidden_sizes", relu.hidden_sizes)
    rec.add("ReLUNet.n_hidden_units", relu.n_hidden_units)
    rec.call("ReLUNet.torch_params", relu.torch_params, "cpu")
    X = np.random.default_rng(1).normal(size=(30, 4))
    rec.call("local_rows.sequential", local_rows, net, X)

    class Wrapped(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x)

    rec.call("local_rows.autograd", local_rows, Wrapped(net), X)
    torch.manual_seed(0)
    conv = nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(48, 4), nn.Softmax(dim=1))
    Xc = np.random.default_rng(0).normal(size=(6, 100))
    rec.call("local_rows.conv", local_rows, conv, Xc, image_shape=(1, 10, 10))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0)
    mlp = _quiet_fit(MLPClassifier((7, 5), max_iter=100, random_state=0), X, y)
    rec.call("as_relu_network.mlp", as_relu_network, mlp)
    rec.call("local_rows.mlp", local_rows, mlp, X)
    torch.manual_seed(0)
    bn = nn.BatchNorm1d(6).double()
    with torch.no_grad():
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.5, 2)
    folded = nn.Sequential(nn.Sequential(nn.Linear(3, 6), bn), nn.ReLU(), nn.Dropout(0.5),
                           nn.Linear(6, 4, bias=False), nn.Identity(), nn.Linear(4, 5),
                           nn.ReLU(), nn.Linear(5, 2), nn.Softmax(dim=1)).double().eval()
    rec.call("as_relu_network.folded", as_relu_network, folded)
    # the simplex region of spec A2, as a Polytope built by hand
    m = 3
    A = np.vstack([-np.eye(m), np.ones((1, m))])
    c = np.r_[np.zeros(m), 1.0]
    for method in ("clarkson", "lp"):
        P = Polytope(np.ones(4, dtype=np.uint8), A, c, np.ones((1, m)), np.zeros(1),
                     facet_method=method)
        for name in ("chebyshev", "facets", "is_bounded", "reduced", "active_bits"):
            rec.call(f"Polytope.{method}.{name}", getattr(P, name))
    rng = np.random.default_rng(0)
    F = rng.integers(0, 2, size=(40, 12))
    labels = rng.integers(0, 3, size=40)
    rec.call("nn_agreement.hamming", nn_agreement, F, labels)
    rec.call("nn_agreement.euclidean", nn_agreement, rng.normal(size=(40, 3)), labels,
             metric="euclidean")
    rec.call("describe", describe, [1, 2, 3, 10])
    rec.call("describe.one", describe, [4.0])


def _iris_mlps():
    from sklearn.datasets import load_iris
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    a = _quiet_fit(MLPClassifier((16,), max_iter=300, random_state=0), X, y)
    b = _quiet_fit(MLPClassifier((12, 12), max_iter=300, random_state=1), X, y)
    return X, y, a, b


@case("polytopes.LocalLinearMap")
def _poly_llm(rec):
    from sklearn.neural_network import MLPClassifier

    from geolearn.polytopes import LocalLinearMap

    X, y, a, b = _iris_mlps()
    for key, est in [("self", LocalLinearMap(source=a, target=a)),
                     ("cross", LocalLinearMap(source=a, target=b)),
                     ("no_bias", LocalLinearMap(source=a, target=b, include_bias=False)),
                     ("ridge", LocalLinearMap(source=a, target=b, alpha=2.0)),
                     ("batched", LocalLinearMap(source=a, target=b, max_memory=1000,
                                                batch_size=40))]:
        rec.estimator(key, est, X, y)
        rec.call(f"{key}.coefficient_r2", est.coefficient_r2, X)
    est = LocalLinearMap(source=MLPClassifier((8,), max_iter=100, random_state=0),
                         target=MLPClassifier((6,), max_iter=100, random_state=1))
    _quiet_fit(est, X, y)
    rec.estimator("unfitted_mlps", est, X, y, fit=False)


@case("polytopes.LocalLinearClustering")
def _poly_llc(rec):
    from sklearn.neural_network import MLPClassifier

    from geolearn.polytopes import LocalLinearClustering

    X, y, a, _ = _iris_mlps()
    for key, est in [("k3", LocalLinearClustering(a, n_clusters=3, random_state=0)),
                     ("k1", LocalLinearClustering(a, n_clusters=1, random_state=0)),
                     ("k150", LocalLinearClustering(a, n_clusters=150, random_state=0)),
                     ("minibatch", LocalLinearClustering(a, n_clusters=5, algorithm="minibatch",
                                                         random_state=0)),
                     ("no_bias", LocalLinearClustering(a, n_clusters=4, include_bias=False,
                                                       random_state=0))]:
        rec.estimator(key, est, X, y)
    est = LocalLinearClustering(MLPClassifier((8,), max_iter=100, random_state=0), n_clusters=3,
                                random_state=0)
    _quiet_fit(est, X, y)
    rec.estimator("unfitted_mlp", est, X, y, fit=False)
    est = LocalLinearClustering(_gaussian_net((4, 6, 3), 0), n_clusters=3, random_state=0)
    rec.estimator("torch", est, X, y)


# ================================================================================= subspaces
def _orth(M):
    import numpy as np

    return np.linalg.qr(M)[0]


def _common_line_sets(n=12, r=10, l=3, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    u = rng.standard_normal(n)
    u /= np.linalg.norm(u)
    return np.stack([_orth(np.column_stack([u, rng.standard_normal((n, l - 1))]))
                     for _ in range(r)])


def _haar_sets(n=10, r=12, l=3, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    return np.stack([_orth(rng.standard_normal((n, l))) for _ in range(r)])


def _planted_classes(n=12, per_class=10, l=3, n_classes=3, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    X, y = [], []
    for j in range(n_classes):
        for _ in range(per_class):
            X.append(_orth(np.column_stack([np.eye(n)[j], rng.standard_normal((n, l - 1))])))
            y.append(j)
    return np.stack(X), np.array(y)


@case("subspaces.SVBF")
def _sub_svbf(rec):
    import numpy as np

    from geolearn.subspaces import SVBF

    X = _common_line_sets()
    Xt = _haar_sets(12, 6, 3, seed=5)
    for key, est in [
        ("random_init", SVBF(2, init="random", n_init=1, tol=1e-14, random_state=0)),
        ("flag_mean_init.cos", SVBF(2, objective="cos", random_state=0)),
        ("intersection2", SVBF(3, 2, n_init=2, transform_output="angles", random_state=0)),
        ("adam", SVBF(1, solver="adam", init="uniform", max_iter=50, lr=0.01,
                      random_state=0)),
        ("angles", SVBF(2, transform_output="angles", n_init=1, random_state=0)),
        ("cosines", SVBF(2, transform_output="cosines", n_init=1, random_state=0)),
        ("change_of_basis", SVBF(2, transform_output="change_of_basis", n_init=1,
                                 random_state=0)),
        ("float32", SVBF(2, dtype="float32", n_init=1, random_state=0)),
    ]:
        rec.estimator(key, est, X, X_eval=Xt)
        if hasattr(est, "basis_"):
            rec.call(f"{key}.distance", est.distance, Xt)
            rec.call(f"{key}.distance.geodesic", est.distance, Xt, metric="geodesic", p=1)
            rec.call(f"{key}.inverse_transform",
                     lambda e=est: e.inverse_transform(e.transform(Xt)))
    w = np.array([1, 2, 1, 3, 1, 1, 1, 2, 1, 1])
    rec.estimator("weighted", SVBF(2, n_init=3, random_state=0), X, X_eval=Xt,
                  fit_kwargs={"sample_weight": w})
    rows = np.random.default_rng(0).standard_normal((40, 6)) * np.array([3, 2, 1.5, 1, .5, .2])
    rec.estimator("rows", SVBF(3, init="random", n_init=1, random_state=0), rows)
    rec.estimator("raw_data", SVBF(2, input_type="data", subspace_dim=2, n_init=1,
                                   random_state=0), X * 3.0, X_eval=Xt)


@case("subspaces.SVBFClassifier")
def _sub_svbf_classifier(rec):
    import numpy as np

    from geolearn.subspaces import SVBFClassifier

    X, y = _planted_classes()
    Xt, yt = _planted_classes(seed=1)
    clf = SVBFClassifier(n_components=1, n_init=1, random_state=0)
    rec.estimator("chordal", clf, X, y, X_eval=Xt, y_eval=yt)
    for metric in ("geodesic", "cos2", "cos"):
        clf.set_params(metric=metric)
        for m in ("predict", "predict_proba", "decision_function"):
            rec.call(f"{metric}.{m}", getattr(clf, m), Xt)
    X2, y2 = _planted_classes(n_classes=2)
    labels = np.array(["cat", "dog"])[y2]
    clf = SVBFClassifier(n_components=2, n_init=1, metric="cos2", temperature=0.1,
                         random_state=0)
    rec.estimator("binary.strings", clf, X2, labels)
    w = (np.arange(len(X2)) % 3 + 1).astype(float)
    rec.estimator("weighted", SVBFClassifier(n_components=1, n_init=2, random_state=0), X2, y2,
                  fit_kwargs={"sample_weight": w})


@case("subspaces.SVBFNetClassifier")
def _sub_svbf_net(rec):
    import numpy as np

    from geolearn.subspaces import SVBFNetClassifier

    X, y = _planted_classes(n=6, per_class=10, n_classes=2)
    labels = np.array(["a", "b"])[y]
    net = SVBFNetClassifier(n_components=2, lr=0.05, max_epochs=15, verbose=0, random_state=0)
    rec.estimator("parametrize", net, X, labels)
    if hasattr(net, "module_"):
        rec.call("parametrize.K", lambda: net.module_.node.K)
        rec.add("parametrize.history", _history(net.history_))
        rec.call("parametrize.partial_fit",
                 lambda: net.set_params(warm_start=True).fit(X, labels).predict_proba(X))
    net = SVBFNetClassifier(n_components=2, orthogonality="penalty", detach=False,
                            objective="cos", lr=0.05, max_epochs=8, batch_size=16, verbose=0,
                            random_state=0)
    rec.estimator("penalty", net, X, y)
    if hasattr(net, "module_"):
        rec.add("penalty.history", _history(net.history_))


@case("subspaces.SVBFNode")
def _sub_node(rec):
    import torch

    from geolearn.subspaces import SVBFNode

    X = _common_line_sets(n=10, r=20, l=3)
    Xt = torch.from_numpy(X)
    for orth in ("parametrize", "penalty"):
        torch.manual_seed(0)
        node = SVBFNode(10, 2, orthogonality=orth, detach=False).double()
        opt = torch.optim.Adam(node.parameters(), lr=0.05)
        for _ in range(20):
            opt.zero_grad()
            node(Xt)
            (node.fit_loss_ + 10.0 * node.orth_loss_).backward()
            opt.step()
        with torch.no_grad():
            rec.call(f"{orth}.forward", node, Xt)
        rec.add(f"{orth}.K", node.K)
        rec.add(f"{orth}.fit_loss_", node.fit_loss_)
        rec.add(f"{orth}.orth_loss_", node.orth_loss_)
        rec.add(f"{orth}.state", node)
    torch.manual_seed(0)
    node = SVBFNode(10, 3, objective="cos").double()
    rec.call("cos.forward", node, Xt)
    rec.add("cos.fit_loss_", node.fit_loss_)


@case("subspaces.CentroidSoftmaxClassifier")
def _sub_centroid(rec):
    import numpy as np
    from sklearn.pipeline import make_pipeline

    from geolearn.subspaces import SVBF, CentroidSoftmaxClassifier

    rng = np.random.default_rng(0)
    angle = rng.uniform(-0.3, 0.3, 60) + np.repeat([0.0, np.pi / 2], 30)
    B = np.column_stack([np.cos(angle), np.sin(angle)]) * rng.choice([-1, 1], (60, 1))
    y = np.repeat([0, 1], 30)
    rec.estimator("directions", CentroidSoftmaxClassifier(max_epochs=100, random_state=0), B, y)
    rec.estimator("temperature", CentroidSoftmaxClassifier(temperature=0.5, max_epochs=50,
                                                           lr=0.1, random_state=1),
                  B, y)
    X, yy = _planted_classes(n_classes=2, per_class=15)
    pipe = make_pipeline(SVBF(n_components=2, random_state=0),
                         CentroidSoftmaxClassifier(max_epochs=100, random_state=0))
    rec.estimator("svbf_pipeline", pipe, X, yy, attrs=False)
    rec.add("svbf_pipeline.attr", fitted_attributes(pipe[-1]))


@case("subspaces.functions")
def _sub_functions(rec):
    import numpy as np

    from geolearn.subspaces import (
        SubspaceEmbedding,
        flag_mean,
        make_subspace_sets,
        principal_angles,
        schubert_distance,
        working_dimension,
    )

    X = _haar_sets(10, 15, 3, seed=1)
    for k in (1, 2, 4):
        rec.call(f"flag_mean.{k}", flag_mean, X, k)
    K = _orth(np.random.default_rng(0).standard_normal((10, 2)))
    rec.call("principal_angles", principal_angles, X, K)
    rec.call("principal_angles.raw", principal_angles,
             np.random.default_rng(1).standard_normal((3, 10, 4)),
             np.random.default_rng(2).standard_normal((10, 3)))
    e = np.eye(5)
    rec.call("principal_angles.ragged", principal_angles, [e[:, :1], e[:, 1:4]], e[:, :3])
    for metric in ("chordal", "geodesic", "cos2", "cos"):
        for c in (1, 2):
            rec.call(f"schubert_distance.{metric}.{c}", schubert_distance, X, K, c,
                     metric=metric)
    rec.call("schubert_distance.p1", schubert_distance, X, K, 2, "geodesic", p=1)
    Xv = np.arange(46.0)[:, None] * np.ones((1, 3))
    yv = np.array([0] * 20 + [1] * 26)
    rec.call("make_subspace_sets", make_subspace_sets, Xv, yv, 4, random_state=0)
    rec.call("working_dimension.a", working_dimension, [0.37, 0.73, 1.0, 1.0, 0.9995, 1.0],
             range(1, 7))
    rec.call("working_dimension.b", working_dimension, [0.5, 0.6, 0.7], [3, 1, 2])
    rec.call("working_dimension.tol", working_dimension, [0.5, 0.6, 0.7], [1, 2, 3],
             rel_tol=0.2)
    rng = np.random.default_rng(0)
    R = rng.standard_normal((4, 7, 3))
    rec.estimator("SubspaceEmbedding", SubspaceEmbedding(n_dims=2), R)
    low = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 4))
    rec.call("SubspaceEmbedding.ragged_rank", SubspaceEmbedding().fit_transform,
             [low, rng.standard_normal((6, 4))])
    x0, d = rng.standard_normal(6), rng.standard_normal(6)
    pts = x0[:, None] + d[:, None] * rng.standard_normal(5)[None, :]
    rec.call("SubspaceEmbedding.center", SubspaceEmbedding(center=True).fit_transform,
             pts[None])
    rec.call("SubspaceEmbedding.rank_tol", SubspaceEmbedding(rank_tol=0.5).fit_transform, R)


# =========================================================================== representations
def _paired(m=60, d_a=8, d_b=5, noise=0.1, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d_a))
    M = rng.normal(size=(d_b, d_a))
    return X, X @ M.T + noise * rng.normal(size=(m, d_b))


@case("representations.LinearEmbeddingMap")
def _rep_linear_map(rec):
    import numpy as np

    from geolearn.representations import LinearEmbeddingMap, embedding_mse

    X, Y = _paired()
    Xt, Yt = _paired(seed=1)
    for key, est in [("default", LinearEmbeddingMap()),
                     ("ridge_intercept", LinearEmbeddingMap(alpha=1.0, fit_intercept=True)),
                     ("svd_batched", LinearEmbeddingMap(alpha=0.5, solver="svd", batch_size=7)),
                     ("cholesky", LinearEmbeddingMap(alpha=0.1, solver="cholesky"))]:
        rec.estimator(key, est, X, Y, X_eval=Xt, y_eval=Yt)
        if hasattr(est, "coef_"):
            rec.call(f"{key}.inverse_transform", est.inverse_transform, Yt)
    w = np.linspace(0.5, 2.0, len(X))
    rec.estimator("weighted", LinearEmbeddingMap(fit_intercept=True), X, Y,
                  fit_kwargs={"sample_weight": w}, X_eval=Xt, y_eval=Yt)
    A, B = _paired(20, 4, 4, seed=2)
    rec.call("embedding_mse", embedding_mse, A, B)
    rec.call("embedding_mse.per_sample_sum", embedding_mse, A, B, reduction="per_sample_sum")
    rec.call("embedding_mse.bad", embedding_mse, A, B, reduction="sum")


def _canonical(n=80, d=6, shift=1.5, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(2 * n, d))
    Z[n:, 0] += shift
    return Z, np.r_[np.zeros(n, int), np.ones(n, int)]


def _source_of(Z, d_s=9, seed=1):
    import numpy as np

    rng = np.random.default_rng(seed)
    A = rng.normal(size=(Z.shape[1], d_s))
    return Z @ A + 0.01 * rng.normal(size=(len(Z), d_s))


@case("representations.CanonicalAdversarialDetector")
def _rep_detector(rec):
    import numpy as np
    from sklearn.linear_model import LogisticRegression, Ridge

    from geolearn.representations import (
        CanonicalAdversarialDetector,
        LinearEmbeddingMap,
    )

    Z, t = _canonical()
    X_s = _source_of(Z)
    det = CanonicalAdversarialDetector(random_state=0)
    rec.estimator("default", det, Z, t)
    det.fit_source("a", X_s, Z)
    rec.call("default.source.decision_function", det.decision_function, X_s, source="a")
    rec.call("default.source.predict", det.predict, X_s, source="a")
    rec.call("default.source.score", det.score, X_s, t, source="a")
    rec.call("default.source_linear_detector", det.source_linear_detector, "a")
    rec.add("default.maps_", det.maps_)
    names = np.array(["clean", "fgsm"])[t]
    rec.estimator("string_labels", CanonicalAdversarialDetector(random_state=0), Z, names)
    det = CanonicalAdversarialDetector(detector=LogisticRegression(), mapper=Ridge(alpha=1e-6),
                                       C=123.0)
    rec.estimator("custom", det, Z, t)
    det.fit_source("a", X_s, Z)
    rec.call("custom.source.predict_proba", det.predict_proba, X_s, source="a")
    rec.call("custom.source_linear_detector", det.source_linear_detector, "a")
    for standardize in (True, False):
        det = CanonicalAdversarialDetector(standardize=standardize, C=0.5,
                                           mapper=LinearEmbeddingMap(fit_intercept=True),
                                           random_state=0).fit(Z, t)
        det.fit_source("s", X_s, Z, sample_weight=np.linspace(1, 2, len(Z)))
        rec.call(f"standardize_{standardize}.decision_function", det.decision_function, X_s,
                 source="s")
        rec.call(f"standardize_{standardize}.source_linear_detector",
                 det.source_linear_detector, "s")


def _rep_cnn(seed=0):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(48, 5), nn.Tanh(), nn.Dropout(0.5), nn.Linear(5, 3))


@case("representations.embedders")
def _rep_embedders(rec):
    import numpy as np
    from skorch import NeuralNetClassifier
    from torch import nn

    from geolearn.representations import FourierEmbedding, TorchEmbedder

    X = np.random.default_rng(0).random((20, 1, 4, 4)).astype(np.float32)
    rec.estimator("TorchEmbedder.penultimate", TorchEmbedder(_rep_cnn().train()), X)
    rec.estimator("TorchEmbedder.layer1.flat", TorchEmbedder(_rep_cnn(), layer="1",
                                                             image_shape=(1, 4, 4),
                                                             batch_size=7),
                  X.reshape(20, -1))
    y = np.arange(20) % 3
    net = NeuralNetClassifier(_rep_cnn(), criterion=nn.CrossEntropyLoss, max_epochs=1,
                              train_split=None, verbose=0).fit(X, y)
    rec.estimator("TorchEmbedder.skorch", TorchEmbedder(net), X)
    Xf = np.random.default_rng(1).normal(size=(5, 9))
    rec.estimator("FourierEmbedding.magnitude", FourierEmbedding(), Xf)
    rec.estimator("FourierEmbedding.phase", FourierEmbedding(part="phase"), Xf)


def _tanh_net(seed):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))


def _toy(n=150, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    return rng.random((n, 6)).astype(np.float32), np.arange(n) % 3


@case("representations.cross_model_detection")
def _rep_cross_model(rec):
    import numpy as np

    from geolearn.representations import cross_model_detection, split_indices

    y = np.repeat([0, 1, 2], [40, 30, 20])
    rec.call("split_indices", split_indices, y, random_state=0)
    rec.call("split_indices.custom", split_indices, y, (0.5, 0.25, 0.25), random_state=1)
    X, yy = _toy()
    net = _tanh_net(0)
    rec.call("self", cross_model_detection, {"a": net, "b": net}, "a", X, yy, epsilon=0.3,
             random_state=0)
    for key, kwargs in [
        ("fgsm", {}),
        ("pgd", {"attack": "pgd", "attack_kwargs": {"n_steps": 3, "random_state": 0}}),
        ("cw", {"attack": "cw", "attack_kwargs": {"n_steps": 3}}),
        ("adv_rows", {"map_rows": "adv", "eval_rows": "mapped_adv_vs_native_clean",
                      "alpha": 1.0}),
        ("fourier_phase", {"representation": "fourier_phase"}),
    ]:
        rec.call(key, cross_model_detection, {"a": _tanh_net(0), "b": _tanh_net(1)}, "a", X,
                 yy, epsilon=0.3, random_state=0, **kwargs)
    rec.call("callable_attack", cross_model_detection, {"a": _tanh_net(0), "b": _tanh_net(1)},
             "a", X, yy, epsilon=0.0, random_state=0,
             attack=lambda net, X, y, epsilon: (np.clip(X + 0.5, 0, 1), None))


# =============================================================================== adversarial
def _adv_net(seed=0, d=12, k=3, dropout=False):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    layers = [nn.Linear(d, 16), nn.ReLU()] + ([nn.Dropout(0.5)] if dropout else [])
    return nn.Sequential(*layers, nn.Linear(16, k))


def _adv_data(n=40, d=12, k=3, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    return rng.random((n, d)).astype(np.float32), rng.integers(0, k, n)


@case("adversarial.attacks")
def _adv_attacks(rec):
    import numpy as np
    import torch
    from torch import nn

    from geolearn.adversarial import carlini_wagner_l2, fgsm, pgd

    X, y = _adv_data()
    net = _adv_net(dropout=True).train()
    rec.call("fgsm", fgsm, net, X, y, 0.1)
    rec.call("fgsm.batch7.noclip", fgsm, net, X, y, 0.1, batch_size=7, clip=None)
    rec.call("pgd", pgd, net, X, y, 0.1, random_state=0)
    rec.call("pgd.no_random_start", pgd, net, X, y, 0.1, step_size=0.02, n_steps=5,
             random_start=False, batch_size=7)
    rec.call("cw", carlini_wagner_l2, net, X, y, n_steps=5)
    rec.call("cw.search", carlini_wagner_l2, net, X[:10], y[:10], c=0.5, kappa=0.1, n_steps=5,
             lr=0.05, binary_search_steps=2)
    torch.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.Flatten(), nn.Linear(32, 3))
    Xi = np.random.default_rng(0).random((5, 16))
    yi = np.arange(5) % 3
    rec.call("fgsm.image_shape", fgsm, cnn, Xi, yi, 0.05, image_shape=(1, 4, 4))
    rec.call("pgd.image_shape", pgd, cnn, Xi.reshape(5, 1, 4, 4), yi, 0.05, n_steps=3,
             random_state=1)
    rec.call("cw.image_shape", carlini_wagner_l2, cnn, Xi, yi, n_steps=3, image_shape=(1, 4, 4))


@case("adversarial.attacks.sklearn")
def _adv_attacks_sklearn(rec):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from geolearn.adversarial import carlini_wagner_l2, fgsm, pgd

    X, y = _adv_data(60)
    X = X.astype("float64")
    mlp = _quiet_fit(MLPClassifier((10,), max_iter=100, random_state=0), X, y)
    pipe = _quiet_fit(make_pipeline(StandardScaler(), MLPClassifier((10,), max_iter=100,
                                                                   random_state=0)), X, y)
    for key, model in [("mlp", mlp), ("pipeline", pipe)]:
        rec.call(f"{key}.fgsm", fgsm, model, X, y, 0.1)
        rec.call(f"{key}.pgd", pgd, model, X, y, 0.1, n_steps=4, random_state=0)
        rec.call(f"{key}.cw", carlini_wagner_l2, model, X[:10], y[:10], n_steps=4)
    rf = RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    rec.call("random_forest.fgsm", fgsm, rf, X, y, 0.1)


@case("adversarial.patch_attack")
def _adv_patch(rec):
    import numpy as np
    import torch

    from geolearn.adversarial import patch_attack
    from geolearn.generative import rectangular_patch_mask

    torch.manual_seed(0)
    net = torch.nn.Linear(4, 2)
    X = np.full((3, 4), 0.5)
    y = net(torch.as_tensor(X, dtype=torch.float32)).argmax(1).numpy()
    mask = np.array([True, True, False, False])
    rec.call("linear", patch_attack, net, X, y, mask, n_steps=50, step_size=0.05,
             random_start=False)
    rec.call("linear.nag", patch_attack, net, X, y, mask, method="nag", n_steps=20,
             step_size=0.05, random_state=0)
    torch.manual_seed(0)
    cnn = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 8), torch.nn.Tanh(),
                              torch.nn.Linear(8, 3))
    Xi = np.random.default_rng(0).random((6, 16))
    yi = np.arange(6) % 3
    m = rectangular_patch_mask((4, 4), 1, 1, 2, 2)
    rec.call("mlp.pgd", patch_attack, cnn, Xi, yi, m, n_steps=30, step_size=0.02,
             random_state=0)
    rec.call("mlp.momentum", patch_attack, cnn, Xi, yi, m, n_steps=30, momentum=0.5,
             clip=(-1.0, 2.0), batch_size=4, random_state=1)
    rec.call("bad_mask", patch_attack, cnn, Xi, yi, np.zeros(16, bool))


# ================================================================================ generative
_VAE_TINY = dict(hidden_layer_sizes=(16,), max_epochs=2, batch_size=32, random_state=0,
                 device="cpu")


def _vae_outputs(rec, key, vae, X):
    with rec.guard(key):
        _vae_outputs_inner(rec, key, vae, X)


def _vae_outputs_inner(rec, key, vae, X):
    for m in ("predict_codes", "as_images", "get_feature_names_out"):
        if hasattr(vae, m):
            args = () if m == "get_feature_names_out" else (X,)
            rec.call(f"{key}.{m}", getattr(vae, m), *args)
    if hasattr(vae, "transform"):
        rec.call(f"{key}.inverse_transform", lambda: vae.inverse_transform(vae.transform(X)))
    if hasattr(vae, "sample"):
        rec.call(f"{key}.sample", vae.sample, 5, random_state=0)
    if hasattr(vae, "traverse"):
        rec.call(f"{key}.traverse", vae.traverse, X[:3], 1, [-1.0, 0.5, 2.0])
    if hasattr(vae, "decode_codes"):
        rec.call(f"{key}.decode_codes", vae.decode_codes, [[0, 0], [5, 5], [2, 3]])


@case("generative.GridVAE")
def _gen_gridvae(rec):
    import numpy as np

    from geolearn.generative import GridVAE

    X = np.random.default_rng(0).random((80, 12))
    vae = GridVAE(**_VAE_TINY)
    rec.estimator("default", vae, X)
    _vae_outputs(rec, "default", vae, X)
    rec.call("default.fit_predict", GridVAE(**_VAE_TINY).fit_predict, X)
    codes = np.stack([np.arange(80) % 6, (np.arange(80) // 6) % 6], 1)
    vae = GridVAE(kl_estimator="nearest", guidance="full", **_VAE_TINY)
    rec.estimator("guided_full", vae, X, codes)
    y = (np.arange(80) % 6).astype(float)
    y[::5] = np.nan
    vae = GridVAE(guidance="partial", guided_dims=[1], missing_guidance="round", **_VAE_TINY)
    rec.estimator("guided_partial", vae, X, y)
    vae = GridVAE(kl_estimator="batch", kl_warmup_epochs=1, beta=0.5, **_VAE_TINY)
    rec.estimator("batch_kl", vae, X)
    vae = GridVAE(n_latent=3, grid_values=(0, 1), prior_std=0.25, likelihood="gaussian",
                  output_activation="identity", **_VAE_TINY)
    rec.estimator("gaussian", vae, X * 4 - 2)
    vae = GridVAE(n_latent=40, grid_values=(0, 1), prior_std=1 / 16, kl_estimator="nearest",
                  **_VAE_TINY)
    rec.estimator("huge_grid", vae, X, methods=("predict",))
    rec.call("huge_grid.predict_codes", vae.predict_codes, X)


@case("generative.GridVAE.conv")
def _gen_gridvae_conv(rec):
    import numpy as np

    from geolearn.generative import GridVAE

    images = np.random.default_rng(1).random((40, 1, 8, 8)).astype(np.float32)
    vae = GridVAE(architecture="conv", conv_channels=4, **_VAE_TINY)
    rec.estimator("conv", vae, images)
    _vae_outputs(rec, "conv", vae, images[:10])
    vae = GridVAE(architecture="resnet", conv_channels=2, image_shape=(8, 8), **_VAE_TINY)
    rec.estimator("resnet", vae, images.reshape(40, -1), methods=("predict", "transform"))


def _digits3():
    import numpy as np
    from sklearn.datasets import load_digits

    X, y = load_digits(n_class=3, return_X_y=True)
    return X[:240] / 16.0, np.array(["zero", "one", "two"])[y[:240]]


_VAEC_TINY = dict(n_latent=4, hidden_layer_sizes=(32,), max_epochs=8, batch_size=32, random_state=0,
                  device="cpu")


@case("generative.VAEClassifier")
def _gen_vae_classifier(rec):
    import torch

    from geolearn.generative import VAEClassifier

    X, y = _digits3()
    clf = VAEClassifier(**_VAEC_TINY)
    rec.estimator("default", clf, X, y)
    _vae_outputs(rec, "default", clf, X[:20])
    with torch.no_grad():
        x = torch.as_tensor(X[:10], dtype=torch.float32)
        # the logits: a private hook on old code, the adapter's forward pass on new code
        if hasattr(clf, "_torch_logits"):
            logits = clf._torch_logits
        else:
            from geolearn.models import as_model

            logits = as_model(clf).feature_fn(None)
        rec.call("default._torch_logits", logits, x)
        rec.call("default._torch_neg_elbo", clf._torch_neg_elbo, x, stochastic=False)
    clf = VAEClassifier(prior="grid", grid_values=(0, 1), prior_std=0.25, kl_estimator="nearest",
                        **dict(_VAEC_TINY, max_epochs=2))
    rec.estimator("grid_prior", clf, X, y)
    clf = VAEClassifier(n_latent=2, likelihood="gaussian", output_activation="identity",
                        classification_weight=1.0, hidden_layer_sizes=(8,), max_epochs=3,
                        batch_size=32, random_state=0, device="cpu")
    rec.estimator("gaussian", clf, X * 2 - 1, y)


@case("generative.ELBOPurifier")
def _gen_purifier(rec):
    import numpy as np

    from geolearn.generative import (
        ELBOPurifier,
        GridVAE,
        VAEClassifier,
        rectangular_patch_mask,
    )

    X, y = _digits3()
    clf = VAEClassifier(**_VAEC_TINY).fit(X, y)
    rng = np.random.default_rng(0)
    noisy = np.clip(X[:30] + rng.normal(scale=0.3, size=X[:30].shape), 0, 1)
    params = dict(**_prefit(ELBOPurifier), n_steps=8, step_size=0.01, epsilon=0.1, random_state=0)
    rec.estimator("linf", ELBOPurifier(clf, **params), noisy, methods=("transform",))
    mask = rectangular_patch_mask((8, 8), 0, 0, 8, 2)
    rec.estimator("mask", ELBOPurifier(clf, mask=mask, **params), noisy, methods=("transform",),
                  attrs=False)
    rec.estimator("l2", ELBOPurifier(clf, **{**params, "norm": "l2", "epsilon": 0.5}), noisy,
                  methods=("transform",), attrs=False)
    rec.estimator("restarts", ELBOPurifier(clf, n_restarts=3, **params), noisy,
                  methods=("transform",), attrs=False)
    rec.estimator("no_eps", ELBOPurifier(clf, **_prefit(ELBOPurifier), n_steps=4, random_state=0),
                  noisy,
                  methods=("transform",), attrs=False)
    pfy = ELBOPurifier(VAEClassifier(**dict(_VAEC_TINY, max_epochs=2)), n_steps=4,
                       random_state=0)
    rec.estimator("not_prefit", pfy, X, y, X_eval=noisy, methods=("transform",))
    rec.call("not_prefit.get_feature_names_out", pfy.get_feature_names_out)
    grid = GridVAE(hidden_layer_sizes=(8,), max_epochs=1, random_state=0, device="cpu").fit(X)
    rec.estimator("gridvae", ELBOPurifier(grid, **_prefit(ELBOPurifier), n_steps=2,
                                          random_state=0), X,
                  X_eval=X[:5], methods=("transform",), attrs=False)


@case("generative.patch_attack")
def _gen_patch(rec):
    from geolearn.generative import VAEClassifier, patch_attack, rectangular_patch_mask

    X, y = _digits3()
    clf = VAEClassifier(**_VAEC_TINY).fit(X, y)
    mask = rectangular_patch_mask((8, 8), 0, 0, 8, 3)
    rec.add("mask", mask)
    rec.call("mask.3d", rectangular_patch_mask, (2, 4, 5), top=1, left=2, height=2, width=3)
    rec.call("mask.outside", rectangular_patch_mask, (8, 8), 0, 7, 8, 2)
    for method in ("pgd", "nag"):
        X_adv = rec.call(f"{method}", patch_attack, clf, X[:30], y[:30], mask, method=method,
                         n_steps=15, step_size=0.05, random_state=0)
        if X_adv is not None:
            rec.call(f"{method}.predict", clf.predict, X_adv)


@case("generative.FlowDensity")
def _gen_flow(rec):
    import numpy as np

    from geolearn.generative import FlowDensity

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)) @ np.array([[1.0, 0.3, 0.0], [0, 2.0, 0.5], [0, 0, 0.5]])
    flow = FlowDensity(n_layers=2, hidden_layer_sizes=(16,), max_epochs=3, batch_size=64,
                       random_state=0, device="cpu")
    rec.estimator("default", flow, X)
    rec.call("default.inverse_transform", lambda: flow.inverse_transform(flow.transform(X)))
    rec.call("default.log_prob_components", flow.log_prob_components, X[:10])
    rec.call("default.sample", flow.sample, 7, random_state=0)
    rec.call("default.get_feature_names_out", flow.get_feature_names_out)
    # max_epochs >= 1; lr=1e-12 keeps the initial weights to within 1e-12
    flow = FlowDensity(n_layers=3, hidden_layer_sizes=(8,), max_epochs=1, lr=1e-12, random_state=0,
                       device="cpu")
    rec.estimator("untrained", flow, X)
    flow = FlowDensity(n_layers=2, hidden_layer_sizes=(8,), max_epochs=2, dequantize=0.1,
                       weight_decay=0.0, lr=1e-2, batch_size=50, random_state=1, device="cpu")
    rec.estimator("dequantize", flow, X)


@case("generative.DiffusionDensity")
def _gen_diffusion(rec):
    import numpy as np

    from geolearn.generative import DiffusionDensity

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)) @ np.array([[1.0, 0.3, 0.0], [0, 2.0, 0.5], [0, 0, 0.5]])
    kw = dict(n_timesteps=30, hidden_layer_sizes=(16,), max_epochs=10, batch_size=64, n_rounds=2,
              random_state=0, device="cpu")
    est = DiffusionDensity(**kw)
    rec.estimator("default", est, X[:100], X_eval=X[:20])
    rec.call("default.score_samples_rounds", est.score_samples_rounds, X[:10], n_rounds=3,
             step=5, random_state=1)
    rec.call("default.sample", est.sample, 5, step=5, random_state=0)
    est.set_params(reverse_variance="posterior")
    rec.call("posterior.score_samples", est.score_samples, X[:10])
    est = DiffusionDensity(beta_schedule="cosine", standardize=False, likelihood_step=3,
                           **dict(kw, n_timesteps=20))
    rec.estimator("cosine", est, X[:100], X_eval=X[:20])


@case("generative.grid_codes")
def _gen_grid_codes(rec):
    import numpy as np

    from geolearn.generative import grid_codes

    grid = (np.arange(-2.0, 4.0),)
    Z = np.array([[-1.5 + 1e-6], [-1.5], [0.5], [0.5 + 1e-9], [-100.0], [100.0]])
    rec.call("1d", grid_codes, Z, grid)
    Z2 = np.random.default_rng(0).normal(size=(10, 2)) * 2
    rec.call("2d", grid_codes, Z2, (np.arange(-2.0, 4.0), np.array([0.0, 1.0])))


# ==================================================================================== models
def _adapter_outputs(rec, key, make, X, layers=(), jac=True):
    with rec.guard(key):
        _adapter_outputs_inner(rec, key, make(), X, layers, jac)


def _adapter_outputs_inner(rec, key, m, X, layers, jac):
    import torch

    rec.add(f"{key}.kind", m.kind)
    rec.add(f"{key}.differentiable", m.differentiable)
    rec.add(f"{key}.layer_names", list(m.layer_names))
    rec.add(f"{key}.dtype", getattr(m, "dtype", None))
    rec.call(f"{key}.forward", m.forward, X)
    rec.call(f"{key}.forward.batch3", m.forward, X, batch_size=3)
    for layer in layers:
        rec.call(f"{key}.features.{layer}", m.features, X, layer=layer)
    if jac:
        rec.call(f"{key}.jacobian", m.jacobian, X[:5])
        for mode in ("rev", "fwd"):
            rec.call(f"{key}.jacobian.{mode}", m.jacobian, X[:5], mode=mode)
        for layer in layers[:2]:
            rec.call(f"{key}.jacobian.{layer}", m.jacobian, X[:5], layer=layer)

        def through_feature_fn():
            with (m.frozen() if hasattr(m, "frozen") else m.eval_mode()):
                return m.feature_fn()(m.to_tensor(X[:5]))

        rec.call(f"{key}.feature_fn", through_feature_fn)
    with torch.no_grad():
        rec.call(f"{key}.to_tensor", m.to_tensor, X[:3])


@case("models.as_model")
def _models_as_model(rec):
    import torch
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from torch import nn

    from geolearn.models import as_model

    X, y = make_classification(60, 6, n_informative=4, n_classes=3, random_state=0)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    _adapter_outputs(rec, "sequential", lambda: as_model(net, batch_size=7),
                     X.astype("float32"), layers=("0", "1", "2"))
    _adapter_outputs(rec, "sequential.f64", lambda: as_model(net.double()), X, layers=("1",))
    mlp = _quiet_fit(MLPClassifier((5, 4), max_iter=30, random_state=0), X, y)
    _adapter_outputs(rec, "mlp.f64", lambda: as_model(mlp, dtype=torch.float64), X,
                     layers=("act_0", "linear_2", "out_activation"))
    _adapter_outputs(rec, "mlp.f32", lambda: as_model(mlp), X.astype("float32"),
                     layers=("act_1",))
    pipe = _quiet_fit(make_pipeline(StandardScaler(), MLPClassifier((5,), max_iter=30,
                                                                   random_state=0)), X, y)
    _adapter_outputs(rec, "pipeline", lambda: as_model(pipe, dtype=torch.float64), X,
                     layers=("standardscaler", "mlpclassifier.act_0"))
    lr = LogisticRegression().fit(X, y)
    _adapter_outputs(rec, "logreg", lambda: as_model(lr), X)
    _adapter_outputs(rec, "logreg.decision_function",
                     lambda: as_model(lr, response="decision_function"), X, jac=False)
    _adapter_outputs(rec, "logreg.predict", lambda: as_model(lr, response="predict"), X,
                     jac=False)
    black = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    _adapter_outputs(rec, "black_box_pipeline", lambda: as_model(black), X,
                     layers=("standardscaler", "logisticregression"), jac=False)


@case("models.skorch_and_converters")
def _models_converters(rec):
    import numpy as np
    import torch
    from sklearn.datasets import make_classification, make_regression
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler
    from skorch import NeuralNetClassifier
    from torch import nn

    from geolearn.models import ModelAdapter, affine_to_torch, as_model, mlp_to_torch

    X, y = make_classification(60, 6, n_informative=4, n_classes=3, random_state=0)
    X32 = X.astype(np.float32)
    torch.manual_seed(0)
    net = NeuralNetClassifier(nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)),
                              criterion=nn.CrossEntropyLoss, max_epochs=2, train_split=None,
                              verbose=0).fit(X32, y)
    _adapter_outputs(rec, "skorch", lambda: as_model(net), X32, layers=("1",))
    for act in ("relu", "tanh", "logistic", "identity"):
        mlp = _quiet_fit(MLPClassifier((7, 4), activation=act, max_iter=30, random_state=0),
                         X, y)
        module = mlp_to_torch(mlp, dtype=torch.float64)
        rec.add(f"mlp_to_torch.{act}.state", module)
        with torch.no_grad():
            rec.call(f"mlp_to_torch.{act}.forward", module, torch.as_tensor(X))
    Xr, yr = make_regression(40, 4, n_targets=2, random_state=0)
    reg = _quiet_fit(MLPRegressor(hidden_layer_sizes=(6,), max_iter=50, random_state=0), Xr, yr)
    with torch.no_grad():
        rec.call("mlp_to_torch.regressor", mlp_to_torch(reg), torch.as_tensor(Xr).float())
    rec.call("mlp_to_torch.bad", mlp_to_torch, StandardScaler().fit(X))
    for scaler in (StandardScaler(), MinMaxScaler(), MaxAbsScaler(), MinMaxScaler(clip=True)):
        scaler.fit(X)
        module = affine_to_torch(scaler, dtype=torch.float64)
        name = type(scaler).__name__ + ("_clip" if getattr(scaler, "clip", False) else "")
        if module is None:
            rec.add(f"affine_to_torch.{name}", None)
            continue
        with torch.no_grad():
            rec.call(f"affine_to_torch.{name}", module, torch.as_tensor(X))
    torch.manual_seed(0)
    body = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 2))
    _adapter_outputs(rec, "ModelAdapter.torch",
                     lambda: ModelAdapter(kind="torch", module=body, name="body"), X32,
                     layers=("1",))
    lr_like = MLPClassifier((3,), max_iter=5, random_state=0)
    _quiet_fit(lr_like, X, y)
    _adapter_outputs(rec, "ModelAdapter.black_box",
                     lambda: ModelAdapter(kind="black-box", predict=lr_like.predict_proba,
                                          name="bb"), X, jac=False)
    from sklearn.linear_model import LogisticRegression

    from geolearn.models import GradientsUnavailableError

    rec.add("GradientsUnavailableError.bases",
            [c.__name__ for c in GradientsUnavailableError.__mro__[1:]])
    black_box = as_model(LogisticRegression().fit(X, y))
    rec.call("black_box.require_gradients", black_box.require_gradients, "snapshot")
    try:
        black_box.jacobian(X[:2])
    except GradientsUnavailableError as exc:
        rec.add("GradientsUnavailableError.raised", str(exc)[:120])


@case("diffeo.StabilityWarning")
def _diffeo_warnings(rec):
    import warnings

    import torch
    from torch import nn

    from geolearn.diffeo import StabilityWarning, relative_stability

    X, _ = _digits(120)

    class Zero(nn.Module):
        def forward(self, x):
            return torch.zeros(len(x), 3)

    rec.add("is_warning", issubclass(StabilityWarning, Warning))
    for key, fn in [("few_probes", lambda: relative_stability(_small_cnn(), X[:20],
                                                              random_state=0)),
                    ("constant_model", lambda: relative_stability(Zero(), X, random_state=0)),
                    ("bn_batch_without_bn", lambda: relative_stability(
                        _small_cnn(), X, bn_mode="batch", random_state=0))]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", StabilityWarning)
            rec.call(key, fn)
        rec.add(f"{key}.warnings", sorted(f"{w.category.__name__}: {str(w.message)[:80]}"
                                          for w in caught
                                          if issubclass(w.category, StabilityWarning)))


# ======================================================================================= CLI
def _select(only):
    if not only:
        return list(CASES)
    names = [n for n in CASES if any(n.startswith(o) for o in only)]
    unknown = [o for o in only if not any(n.startswith(o) for n in CASES)]
    if unknown:
        raise SystemExit(f"unknown case(s): {unknown}; run `list` to see the names.")
    return names


def _metadata():
    import platform
    import subprocess

    import numpy
    import scipy
    import sklearn
    import torch

    import geolearn

    try:
        repo = os.path.dirname(os.path.dirname(os.path.abspath(geolearn.__file__)))
        commit = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", repo, "status", "--porcelain", "geolearn"],
                                    capture_output=True, text=True, check=False).stdout.strip())
    except OSError:
        commit, dirty = "", None
    return {"geolearn": geolearn.__file__, "geolearn_version": geolearn.__version__,
            "commit": commit, "geolearn_dirty": dirty, "python": platform.python_version(),
            "numpy": numpy.__version__, "scipy": scipy.__version__,
            "sklearn": sklearn.__version__, "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(), "machine": platform.machine(),
            "created": time.strftime("%Y-%m-%d %H:%M:%S")}


def _setup_determinism(repo=_REPO):
    """One thread everywhere, ``repo``'s geolearn first on sys.path."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        os.environ[var] = "1"
    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # CPU only, even where a GPU exists
    repo = os.path.abspath(repo)
    if not os.path.isfile(os.path.join(repo, "geolearn", "__init__.py")):
        raise SystemExit(f"no geolearn package in {repo}")
    sys.path.insert(0, repo)
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    torch.use_deterministic_algorithms(True, warn_only=True)
    return threadpool_limits(1)


def cmd_save(args):
    import pickle

    global _THREAD_LIMITS
    _THREAD_LIMITS = _setup_determinism(args.repo)  # kept alive for the whole run
    names = _select(args.only)
    meta = _metadata()
    print(f"geolearn from {meta['geolearn']} (commit {meta['commit'][:10] or '?'}"
          f"{', modified' if meta['geolearn_dirty'] else ''}); {len(names)} cases", flush=True)
    t0 = time.perf_counter()
    results = run_cases(names)
    total = time.perf_counter() - t0
    meta["total_time"] = total
    with open(args.out, "wb") as f:
        pickle.dump({"format": 1, "meta": meta, "cases": results}, f,
                    protocol=pickle.HIGHEST_PROTOCOL)
    n_arrays = sum(len(r["arrays"]) for r in results.values())
    n_err = sum(r["error"] is not None for r in results.values())
    n_call_err = sum(1 for r in results.values() for v in r["arrays"].values()
                     if v.dtype.kind == "U" and v.ndim == 0 and str(v).startswith(_ERROR))
    print(f"saved {len(results)} cases, {n_arrays} arrays ({n_call_err} of them recorded "
          f"exceptions), {n_err} cases errored, to {args.out} in {total:.1f}s")
    return 0


def _compare_arrays(a, b, rtol, atol):
    """``("identical" | "within" | "different", detail)``."""
    import numpy as np

    if a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes():
        return "identical", ""
    def describe(x):
        if x.dtype.kind in "US" and x.ndim == 0:
            return repr(str(x)[:160])
        return f"array {x.dtype}{list(x.shape)}"

    if any(x.dtype.kind in "US" and x.ndim == 0 and str(x).startswith(_ERROR) for x in (a, b)):
        return "different", f"{describe(a)} -> {describe(b)}"
    if a.shape != b.shape:
        return "different", f"shape {a.shape} -> {b.shape}"
    kinds = (a.dtype.kind, b.dtype.kind)
    if a.dtype != b.dtype and not (set(kinds) <= set("biufc") and kinds[0] == kinds[1]):
        sa = str(a)[:120] if a.dtype.kind in "US" else f"{a.dtype}"
        sb = str(b)[:120] if b.dtype.kind in "US" else f"{b.dtype}"
        return "different", f"{sa} -> {sb}"
    if a.dtype.kind in "USbO" or not set(kinds) <= set("biufc"):
        if a.dtype.kind in "US" and a.ndim == 0:
            return "different", f"{str(a)[:120]!r} -> {str(b)[:120]!r}"
        n = int(np.sum(a != b)) if a.shape == b.shape else -1
        return "different", f"{n} of {a.size} entries differ"
    a64 = a.astype(np.complex128 if "c" in kinds else np.float64)
    b64 = b.astype(a64.dtype)
    nan_a, nan_b = np.isnan(a64), np.isnan(b64)
    if np.any(nan_a != nan_b):
        return "different", f"NaN pattern changed ({int(np.sum(nan_a != nan_b))} entries)"
    finite = ~nan_a
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a64[finite] - b64[finite])
        inf_ok = np.array_equal(a64[finite][~np.isfinite(diff)],
                                b64[finite][~np.isfinite(diff)])
        diff = diff[np.isfinite(diff)]
    max_diff = float(diff.max()) if diff.size else 0.0
    dtype_note = "" if a.dtype == b.dtype else f", dtype {a.dtype} -> {b.dtype}"
    if inf_ok and np.allclose(a64[finite], b64[finite], rtol=rtol, atol=atol) and not dtype_note:
        return "within", f"max abs diff {max_diff:.3g}"
    return "different", f"max abs diff {max_diff:.3g}{dtype_note}"


def cmd_compare(args):
    import pickle

    with open(args.before, "rb") as f:
        before = pickle.load(f)
    with open(args.after, "rb") as f:
        after = pickle.load(f)
    for tag, d in (("before", before), ("after", after)):
        m = d.get("meta", {})
        print(f"{tag}: {m.get('geolearn')} commit {str(m.get('commit'))[:10]} "
              f"torch {m.get('torch')} numpy {m.get('numpy')} sklearn {m.get('sklearn')} "
              f"({m.get('created')})")
    cb, ca = before["cases"], after["cases"]
    n_same = n_within = n_diff = n_case_err = n_new = 0
    failed = False
    for name in list(cb) + [n for n in ca if n not in cb]:
        rb, ra = cb.get(name), ca.get(name)
        if rb is None or ra is None:
            n_case_err += 1
            failed = True
            print(f"[{name}] MISSING in {'before' if rb is None else 'after'}")
            continue
        if rb["error"] or ra["error"]:
            n_case_err += 1
            changed = rb["error"] != ra["error"]
            failed = failed or changed
            print(f"[{name}] ERRORED before: {rb['error']}\n{'':<{len(name) + 3}}after:  "
                  f"{ra['error']}{'  (CHANGED)' if changed else ''}")
            if not (rb["arrays"] or ra["arrays"]):
                continue
        lines = []
        ab, aa = rb["arrays"], ra["arrays"]
        for key in list(ab) + [k for k in aa if k not in ab]:
            if key not in aa:
                n_diff += 1
                lines.append(f"  DIFFERENT  {key}: missing after")
                continue
            if key not in ab:
                n_new += 1
                lines.append(f"  new        {key}: only after (not counted as different)")
                continue
            status, detail = _compare_arrays(ab[key], aa[key], args.rtol, args.atol)
            if status == "identical":
                n_same += 1
                if not args.quiet:
                    lines.append(f"  identical  {key}")
            elif status == "within":
                n_within += 1
                lines.append(f"  within tol {key}: {detail}")
            else:
                n_diff += 1
                lines.append(f"  DIFFERENT  {key}: {detail}")
        if lines or not args.quiet:
            print(f"[{name}] {len(ab)} arrays before, {len(aa)} after")
            print("\n".join(lines)) if lines else None
    failed = failed or n_diff > 0
    if n_new:
        print(f"({n_new} arrays only in {args.after}: new outputs, not compared)")
    print(f"{n_same} arrays bit-identical, {n_within} within tol, {n_diff} different, "
          f"{n_case_err} cases errored/missing")
    return 1 if failed else 0


def cmd_list(args):
    for name in CASES:
        print(name)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Record (save) and compare the outputs of geolearn's public API.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("save", help="run the cases and pickle their outputs")
    p.add_argument("out", help="output .pkl path")
    p.add_argument("--only", nargs="+", metavar="NAME",
                   help="case names or name prefixes (e.g. 'diffeo.' or 'models.as_model')")
    p.add_argument("--repo", default=_REPO,
                   help="checkout whose geolearn/ is imported (default: the one holding "
                        "this script)")
    p.set_defaults(func=cmd_save)
    p = sub.add_parser("compare", help="compare two saved snapshots")
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--rtol", type=float, default=1e-12)
    p.add_argument("--atol", type=float, default=1e-12)
    p.add_argument("--quiet", action="store_true",
                   help="print only the arrays that are not bit-identical")
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("list", help="print the case names")
    p.set_defaults(func=cmd_list)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
