"""Every public function refuses bad arrays clearly or returns finite results.

The functions are discovered: every function in the ``__all__`` of every public
``geolearn`` module (``pkgutil.walk_packages``, private and demo modules left out). Each
is either called by :data:`CALLS` or skipped by :data:`SKIPS` with the reason, and
:func:`test_every_public_function_is_called_or_skipped` fails when a new public function
is in neither, so the table cannot fall behind the package.

Each call poisons one array argument (the parameter named in :data:`CALLS`) four ways: a
NaN entry, an infinite entry, no rows, and every value times ``1e300`` (whose squares
overflow float64 and which float32 cannot hold). NaN and infinities must raise a
``ValueError`` or ``TypeError`` naming the parameter; no rows and ``1e300`` may instead
give a finite result. An error must be the package's own (or scikit-learn's validation):
raised in ``geolearn`` or ``sklearn.utils``, not inside numpy, scipy or torch ("cost
matrix is infeasible", ``LinAlgError``, "cannot reshape array of size 0"). Never a silent
NaN or infinity, never another exception type (``FloatingPointError``, torch's
``RuntimeError``, an ``IndexError``).
"""

import importlib
import inspect
import pkgutil
import re
import traceback
import warnings

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.utils import Bunch

import geolearn
from geolearn import (
    adversarial,
    diffeo,
    disentanglement,
    invariance,
    ood,
    polytopes,
    representations,
    subspaces,
    topology,
)
from geolearn.datasets import bond_lengths, make_cyclooctane
from geolearn.disentanglement import metrics as dmetrics
from geolearn.generative import grid_codes
from geolearn.generative import metrics as gmetrics
from geolearn.manifold import SphereManifold, local_pca_tangent_basis
from geolearn.meta_learning import metrics as mmetrics
from geolearn.models import fit_or_use
from geolearn.riemannian import analytic

RNG = np.random.default_rng(0)
N = 12
TABLE = RNG.random((N, 4))
LABELS = np.arange(N) % 2
POINTS2 = np.c_[np.cos(np.linspace(0, 6, N)), np.sin(np.linspace(0, 6, N))]  # on a circle
IMAGES = RNG.random((N, 1, 8, 8))
SETS = np.stack([np.linalg.qr(RNG.normal(size=(6, 2)))[0] for _ in range(N)])
RDM = representations.compute_rdm(TABLE)
DIAGRAM = np.array([[0.0, 1.0], [0.2, 0.5], [0.1, 0.9]])
ATTRIBUTES = np.c_[LABELS, (np.arange(N) // 2) % 3]
FACTORS = np.c_[np.arange(N) % 3, (np.arange(N) // 3) % 2]
MOLECULES = make_cyclooctane(N, random_state=0)
torch.manual_seed(0)
NET = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))
NET2 = torch.nn.Sequential(torch.nn.Linear(2, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))
CONV = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 2))
NET.double(), NET2.double(), CONV.double()
CLF = LogisticRegression().fit(TABLE, LABELS)
CIRCLE = SphereManifold(ambient_dim=2)
FEW = {"n_boot": 10, "n_permutations": 10, "random_state": 0}

# name: (the poisoned parameter, its clean value, a call of the function with it)
CALLS = {
    # adversarial: attacks on NET / NET2 (a circle of 2-D points for the manifold attacks)
    "carlini_wagner_l2": ("X", TABLE, lambda X: adversarial.carlini_wagner_l2(
        NET, X, LABELS[:len(X)], n_steps=2)),
    "fgsm": ("X", TABLE, lambda X: adversarial.fgsm(NET, X, LABELS[:len(X)], 0.1)),
    "pgd": ("X", TABLE, lambda X: adversarial.pgd(NET, X, LABELS[:len(X)], 0.1, n_steps=2)),
    "in_manifold_attack": ("X", POINTS2, lambda X: adversarial.in_manifold_attack(
        NET2, X, LABELS[:len(X)], manifold=CIRCLE, epsilon=0.1, n_steps=2, random_state=0)),
    "normal_attack": ("X", POINTS2, lambda X: adversarial.normal_attack(
        NET2, X, LABELS[:len(X)], manifold=CIRCLE, epsilon=0.1, n_steps=2, random_state=0)),
    "risk_curve": ("X", POINTS2, lambda X: adversarial.risk_curve(
        NET2, X, LABELS[:len(X)], manifold=CIRCLE, epsilons=[0.1], n_steps=2,
        random_state=0)),
    "risk_decomposition": ("X", POINTS2, lambda X: adversarial.risk_decomposition(
        NET2, X, LABELS[:len(X)], manifold=CIRCLE, n_steps=2, n_nnr_probes=2,
        random_state=0)),
    "patch_attack": ("X", TABLE, lambda X: adversarial.patch_attack(
        NET, X, LABELS[:len(X)], np.array([True, True, False, False]), n_steps=2,
        random_state=0)),
    # datasets and topology
    "bond_lengths": ("X", MOLECULES, bond_lengths),
    "bond_length_error": ("X", MOLECULES, topology.bond_length_error),
    "betti_curve": ("diagram", DIAGRAM, lambda D: topology.betti_curve(D, [0.3, 0.6])),
    "betti_numbers": ("diagrams", DIAGRAM, lambda D: topology.betti_numbers([D])),
    "diagram_bottleneck": ("D1", DIAGRAM, lambda D: topology.diagram_bottleneck(D, DIAGRAM)),
    "diagram_wasserstein": ("D1", DIAGRAM,
                            lambda D: topology.diagram_wasserstein(D, DIAGRAM)),
    "density_coverage": ("real", TABLE, lambda X: topology.density_coverage(X, TABLE, k=2)),
    "empirical_wasserstein2": ("X", TABLE, lambda X: topology.empirical_wasserstein2(X, TABLE)),
    "frechet_distance": ("F1", TABLE, lambda X: topology.frechet_distance(X, TABLE)),
    "persistence_diagrams": ("X", POINTS2, topology.persistence_diagrams),
    "wasserstein2_protocol": ("X_ref", TABLE, lambda X: topology.wasserstein2_protocol(
        lambda n, rs: TABLE[:n], X, n=min(len(X), 5), n_repeats=2, random_state=0)),
    # diffeo
    "deform": ("X", IMAGES, lambda X: diffeo.deform(X, np.zeros((len(X), 2, 8, 8)))),
    "deformation_grid": ("image", IMAGES[0, 0], lambda X: diffeo.deformation_grid(
        X, cutoffs=(1,), temperatures=[1e-3], random_state=0)),
    "diffeo_augment": ("X", IMAGES, lambda X: diffeo.diffeo_augment(
        X, T=0.005, c=2, random_state=0)),
    "log_average": ("values", TABLE[:, 0] + 0.5, diffeo.log_average),
    "log_std": ("values", TABLE[:, 0] + 0.5, diffeo.log_std),
    "max_xi": ("fields", RNG.normal(size=(N, 2, 8, 8)), diffeo.max_xi),
    "relative_stability": ("X", IMAGES, lambda X: diffeo.relative_stability(
        CONV, X, c=2, delta=1.0, random_state=0)),
    "subspace_relative_stability": ("X", TABLE, lambda X: diffeo.subspace_relative_stability(
        CLF, X, parallel_dims=0, random_state=0)),
    # disentanglement
    "knn_graph_statistic": ("X0", TABLE,
                            lambda X: disentanglement.knn_graph_statistic(X, TABLE + 0.5)),
    "knn_permutation_pvalue": ("X0", TABLE, lambda X: disentanglement.knn_permutation_pvalue(
        X, TABLE + 0.5, n_permutations=10, random_state=0)),
    "smoothed_knn_statistic": ("X0", TABLE, lambda X: disentanglement.smoothed_knn_statistic(
        X, TABLE + 0.5, 0.5)),
    "dcimig": ("codes", TABLE, lambda Z: dmetrics.dcimig(FACTORS[:len(Z)], Z)),
    "disentanglement_report": ("codes", TABLE, lambda Z: dmetrics.disentanglement_report(
        FACTORS[:len(Z)], Z)),
    "jemmig": ("codes", TABLE, lambda Z: dmetrics.jemmig(FACTORS[:len(Z)], Z)),
    "mig": ("codes", TABLE, lambda Z: dmetrics.mig(FACTORS[:len(Z)], Z)),
    "mig_sup": ("codes", TABLE, lambda Z: dmetrics.mig_sup(FACTORS[:len(Z)], Z)),
    "psnr": ("X", TABLE, lambda X: dmetrics.psnr(X, TABLE[:len(X)])),
    # generative
    "grid_codes": ("Z", TABLE[:, :1], lambda Z: grid_codes(Z, (np.linspace(0, 1, 5),))),
    "attribute_neighbor_kl": ("embedding", TABLE,
                              lambda E: gmetrics.attribute_neighbor_kl(E, LABELS[:len(E), None])),
    "cluster_accuracy": ("y_true", LABELS.astype(float),
                         lambda y: gmetrics.cluster_accuracy(y, LABELS[:len(y)])),
    "cluster_purity": ("y_true", LABELS.astype(float),
                       lambda y: gmetrics.cluster_purity(y, LABELS[:len(y)])),
    "disentangled_accuracy": ("attributes", ATTRIBUTES.astype(float),
                              lambda a: gmetrics.disentangled_accuracy(a, ATTRIBUTES[:len(a)])),
    "positional_disentanglement": ("attributes", ATTRIBUTES.astype(float),
                                   lambda a: gmetrics.positional_disentanglement(
                                       a, ATTRIBUTES[:len(a)])),
    "topographic_similarity": ("attributes", ATTRIBUTES.astype(float),
                               lambda a: gmetrics.topographic_similarity(
                                   a, ATTRIBUTES[:len(a)], random_state=0)),
    # invariance: CONV on 8 x 8 images, "rot4" for the groups
    "distribution_invariance": ("X", IMAGES, lambda X: invariance.distribution_invariance(
        CONV, X, "rot4")),
    "logit_invariance": ("X", IMAGES, lambda X: invariance.logit_invariance(CONV, X, "rot4")),
    "normalized_logit_invariance": ("X", IMAGES, lambda X: invariance.normalized_logit_invariance(
        CONV, X, "rot4")),
    "saliency_invariance": ("X", IMAGES, lambda X: invariance.saliency_invariance(
        CONV, X, "rot4", steps=2)),
    "integrated_gradients": ("X", IMAGES, lambda X: invariance.integrated_gradients(
        CONV, X, LABELS[:len(X)], steps=2)),
    "saliency_map": ("X", IMAGES, lambda X: invariance.saliency_map(
        CONV, X, LABELS[:len(X)], steps=2)),
    "jacobian_sigma_max": ("X", TABLE, lambda X: invariance.jacobian_sigma_max(NET, X)),
    # manifold and meta-learning
    "local_pca_tangent_basis": ("X_ref", POINTS2, lambda X: local_pca_tangent_basis(
        X, POINTS2, 1, n_neighbors=3)),
    "knn_spectral_distance": ("X_ref", TABLE, lambda X: mmetrics.knn_spectral_distance(
        X, TABLE, n_neighbors=3)),
    "persistence_wasserstein": ("X_ref", POINTS2, lambda X: mmetrics.persistence_wasserstein(
        X, POINTS2)),
    # models, ood, polytopes
    "fit_or_use": ("X", TABLE, lambda X: fit_or_use(LogisticRegression(), X,
                                                    LABELS[:len(X)]).coef_),
    "ood_roc_auc": ("scores_in", TABLE[:, 0], lambda s: ood.ood_roc_auc(s, TABLE[:, 1] + 1)),
    "describe": ("values", TABLE[:, 0], polytopes.describe),
    "local_rows": ("X", TABLE, lambda X: polytopes.local_rows(NET, X)),
    "nn_agreement": ("F", TABLE, lambda F: polytopes.nn_agreement(
        F, LABELS[:len(F)], metric="euclidean")),
    "segment_region_counts": ("XA", TABLE, lambda XA: polytopes.segment_region_counts(
        NET, XA, TABLE[:len(XA)])),
    # representations
    "bootstrap_compare_rdms": ("R1", RDM, lambda R: representations.bootstrap_compare_rdms(
        R, RDM, n_boot=10, random_state=0)),
    "compare_rdms": ("R1", RDM, lambda R: representations.compare_rdms(R, RDM)),
    "compute_rdm": ("X", TABLE, representations.compute_rdm),
    "condense_rdm": ("R", RDM, representations.condense_rdm),
    "embedding_mse": ("Y_true", TABLE, lambda Y: representations.embedding_mse(Y, TABLE[:len(Y)])),
    "fiedler_accuracy": ("R", RDM, lambda R: representations.fiedler_accuracy(
        R, LABELS[:len(R)], random_state=0)),
    "fiedler_pairwise": ("R", RDM, lambda R: representations.fiedler_pairwise(
        R, LABELS[:len(R)], **FEW)),
    "fiedler_vector": ("R", RDM, representations.fiedler_vector),
    "mean_rdm": ("rdms", RDM[None], lambda R: representations.mean_rdm(R, nan_policy="raise")),
    "squareform_rdm": ("r", representations.condense_rdm(RDM), representations.squareform_rdm),
    "stack_condensed": ("rdms", RDM[None], representations.stack_condensed),
    # riemannian
    "conformal_rbf_log_volume": ("X", TABLE, lambda X: analytic.conformal_rbf_log_volume(
        X, TABLE[:3], 0.5, 1.0)),
    "nngp_log_volume": ("X", TABLE, analytic.nngp_log_volume),
    "nngp_metric": ("X", TABLE, analytic.nngp_metric),
    "nngp_ricci_scalar": ("X", TABLE, analytic.nngp_ricci_scalar),
    "projection_metric_quantities": ("X", TABLE, lambda X: analytic.projection_metric_quantities(
        np.ones(len(X)), np.zeros(len(X)), np.zeros(len(X)), X)),
    # subspaces
    "flag_mean": ("X", SETS, lambda X: subspaces.flag_mean(X, 2)),
    "make_subspace_sets": ("X", TABLE, lambda X: subspaces.make_subspace_sets(
        X, LABELS[:len(X)], 2, random_state=0)),
    "principal_angles": ("X", SETS, lambda X: subspaces.principal_angles(X, SETS[0])),
    "schubert_distance": ("X", SETS, lambda X: subspaces.schubert_distance(X, SETS[0])),
    "working_dimension": ("scores", TABLE[:5, 0], lambda s: subspaces.working_dimension(
        s, np.arange(1, len(s) + 1))),
}

# name: why it is not called here
SKIPS = {
    # no array argument: factories of scorers, kernels and maps, and dataset makers/loaders
    **{name: "makes a scorer, a kernel or a map; takes no data" for name in [
        "make_risk_scorer", "make_stability_scorer", "make_disentanglement_scorer",
        "make_invariance_scorer", "make_manifold_scorer", "make_ood_auroc_scorer",
        "make_rdm_scorer", "make_diagram_distance_scorer", "fixed_bandwidth_diffusion_map",
        "erf_nngp_kernel", "laplacian_kernel", "linear_kernel", "mahalanobis_rbf_kernel",
        "polynomial_kernel", "rbf_kernel", "refit_best_subject_to"]},
    **{name: "makes or loads a data set from scalar parameters (tests/datasets)"
       for name in ["load_3dshapes", "load_cyclooctane", "load_digits_images",
                    "load_mnist_5k", "load_natural_patches", "make_circle_classification",
                    "make_circle_points", "make_cyclooctane", "make_klein_bottle_points",
                    "make_planted_variety", "make_point_shapes", "make_rotating_shape_images",
                    "make_shape_images", "make_shapes3d_like",
                    "make_sine_plane_classification", "make_sinusoid_boundary",
                    "make_sphere_images", "make_sphere_points", "make_stripes",
                    "make_torus_ellipse_images", "make_torus_points", "make_transforming_mnist",
                    "make_two_digit_composites", "make_xor", "make_pessimistic_example",
                    "rectangular_patch_mask", "inpainting_mask"]},
    **{name: "takes scalars, validated by check_scalar_param (tests/test_param_validation.py)"
       for name in ["displacement_delta", "temperature_for_delta", "temperature_range",
                    "sample_displacement_fields", "diffusion_schedule", "make_beta_schedule",
                    "respaced_grid", "relative_reduction"]},
    **{name: "takes a model or an estimator, not data (tests/models)" for name in [
        "affine_to_torch", "as_model", "forward_ad_lock", "frozen", "linear_to_torch",
        "mlp_to_torch",
        "resolve_response", "as_relu_network", "check_matplotlib", "unet_noise_model",
        "noise_model_factory", "denoiser_kind", "geometry_report", "register_measure"]},
    # labels, not measurements: any hashable is a category (NaN included), as in sklearn
    "categorical_rdm": "labels are categories of any type, not numbers",
    "category_rdms": "labels are categories of any type, not numbers",
    "split_indices": "labels are categories of any type, not numbers",
    "dual_distances": "takes a polytope enumeration built from a validated network",
    # torch building blocks run on every training or sampling step, on tensors the
    # estimators validated once (DiffusionGenerator, DisentangledAttributeAutoencoder,
# RDMRegularizedClassifier):
    # a finiteness check per step would synchronise the GPU each time
    **{name: "a torch step inside a fit or sample loop of validated tensors" for name in [
        "ancestral_sample", "check_noise_shape", "denoising_objective", "inpaint_sample",
        "q_sample", "time_features", "latent_regularization", "differentiable_rdm"]},
    "cross_model_detection": "trains networks and attacks; its X is checked by the attacks "
                             "(pgd, fgsm above) and by LinearEmbeddingMap (registered)",
}

# results that are NaN by their documentation, not silently
DOCUMENTED_NAN = {
    "describe": "sd is NaN for fewer than 2 values, every statistic for none",
}


# numpy's own messages, raised from a line of the package that did not check its input
RAW = re.compile("cannot reshape|could not be broadcast|out of bounds|unsupported operand|"
                 "not supported between|must have the same dtype|cost matrix is infeasible")


def _public_functions():
    found = {}
    for info in pkgutil.walk_packages(geolearn.__path__, "geolearn."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts) or "demo" in parts or "tests" in parts:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                assert found.get(name, obj) is obj, f"two public functions named {name}"
                found[name] = obj
    return found


PUBLIC = _public_functions()


def test_every_public_function_is_called_or_skipped():
    assert not set(CALLS) & set(SKIPS)
    assert set(PUBLIC) - set(CALLS) - set(SKIPS) == set(), "add to CALLS or SKIPS"
    assert set(CALLS) | set(SKIPS) <= set(PUBLIC), "stale entries"
    for name, (param, _, _) in CALLS.items():
        assert param in inspect.signature(PUBLIC[name]).parameters, name


def _values(out):
    """Every number in a result (arrays, tensors, Bunches, tuples, scalars)."""
    if isinstance(out, torch.Tensor):
        return out.detach().double().numpy().ravel()
    if isinstance(out, (dict, Bunch)):
        out = list(out.values())
    if out is None:
        return np.empty(0)
    if isinstance(out, (list, tuple)):
        parts = [_values(o) for o in out]
        return np.concatenate(parts) if parts else np.empty(0)
    try:
        values = np.asarray(out, dtype=float).ravel()
    except (TypeError, ValueError):
        return np.empty(0)  # strings, objects
    return values


def _poison(clean, kind):
    A = np.array(clean, dtype=float)
    if kind == "empty":
        return A[:0]
    if kind == "huge":
        return A * 1e300
    A.flat[0] = np.nan if kind == "nan" else np.inf
    return A


@pytest.mark.parametrize("kind", ["nan", "inf", "empty", "huge"])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_public_function_refuses_or_is_finite(name, kind):
    param, clean, call = CALLS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        call(np.array(clean))  # the clean call works
        A = _poison(clean, kind)
        try:
            out = call(A)
        except (ValueError, TypeError) as exc:
            message = str(exc)
            where = traceback.extract_tb(exc.__traceback__)[-1].filename
            assert re.search(r"[/\\](geolearn|sklearn[/\\]utils)[/\\]", where), \
                f"raised in {where}: {type(exc).__name__}: {message}"
            assert not RAW.search(message), f"numpy's message: {message}"
            if kind in ("nan", "inf"):
                assert param in message, f"the error does not name {param}: {message}"
            return
    assert kind not in ("nan", "inf"), f"{kind} in {param} accepted"
    if name not in DOCUMENTED_NAN:
        assert np.isfinite(_values(out)).all(), f"silent NaN or inf from {kind} {param}"


# name: (k, f(c), the function at inputs scaled by c): f(1e300) == 1e300**k * f(1) for
# these scale-covariant functions, so a finite result at 1e300 is also the right one
OTHER = DIAGRAM[:2] + 0.05
HOMOGENEOUS = {
    "compare_rdms": (0, lambda c: representations.compare_rdms(c * RDM, RDM ** 2)),
    "bootstrap_compare_rdms": (0, lambda c: representations.bootstrap_compare_rdms(
        c * RDM, RDM ** 2, n_boot=10, random_state=0).statistic),
    "diagram_wasserstein": (1, lambda c: topology.diagram_wasserstein(c * DIAGRAM, c * OTHER)),
    "diagram_bottleneck": (1, lambda c: topology.diagram_bottleneck(c * DIAGRAM, c * OTHER)),
    "knn_graph_statistic": (0, lambda c: disentanglement.knn_graph_statistic(
        c * TABLE, c * (TABLE + 0.5))),
    "compute_rdm": (0, lambda c: representations.compute_rdm(c * TABLE)),
    "log_average": (1, lambda c: diffeo.log_average(c * (TABLE[:, 0] + 0.5))),
    "log_std": (0, lambda c: diffeo.log_std(c * (TABLE[:, 0] + 0.5))),
}


@pytest.mark.parametrize("name", sorted(HOMOGENEOUS))
def test_huge_values_give_the_scaled_result(name):
    """diagram_wasserstein and bootstrap_compare_rdms failed at 1e300 ("cost matrix is
    infeasible", "every bootstrap resample gave a constant RDM vector")."""
    k, f = HOMOGENEOUS[name]
    np.testing.assert_allclose(np.asarray(f(1e300), float) / 1e300**k,
                               np.asarray(f(1.0), float), rtol=1e-12, atol=1e-12)
