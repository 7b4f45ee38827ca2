"""Manifold decomposition of adversarial risk: standard, normal, in-manifold and nearby-normal.

"Manifold-driven decomposition for adversarial robustness" (Frontiers in
Computer Science, 2024; first as "A manifold view of adversarial risk",
AISTATS 2022), Theorem 1: for ``eps`` below the reach of ``M``,
``R_adv(eps) <= R_std + R_nor(eps) + R_in(2 eps) + NNR(eps)``, sample by sample.
Every risk is an empirical mean of per-sample indicators; attack-based
indicators are lower estimates (an attack can miss), grids exact up to their step.
"""

import functools
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._utils import check_choice, check_scalar_param, check_squares_finite, progress_bar, warn_user
from ..exceptions import GeolearnWarning
from ._manifold_attacks import (
    MAX_GRID,
    ChartGrid,
    _wrong_np,
    chart_grid_size,
    check_codim,
    check_grid_size,
    check_tangent_bases,
    disk_offsets,
    disk_size,
    grid_offsets_attack,
    grid_step_default,
    has_chart,
    in_manifold_core,
    is_latent,
    normal_core,
    predictions,
    random_manifold_probes,
    random_plane_probes,
    resolve_in_method,
    tangent_pgd,
)
from ._pgd import (
    LOSSES,
    NORMS,
    Classifier,
    check_attack_params,
    flat_inputs,
    label_indices,
    run_attack,
)

ATTACKS = ("auto", "grid", "pgd", "tangent_pgd", "project", "latent")
NNR_METHODS = ("probe", "sample", "none")
#: on-manifold tolerance of analytic manifolds, relative to their scale
ON_MANIFOLD_TOL = 1e-4
#: iterates of the in-manifold attack at 2 eps kept as NNR probes (besides random ones)
PATH_PROBES = 8


def _check_params(epsilon, norm, in_manifold_factor, attack, n_steps, step_size, n_restarts, loss,
                  nnr, n_nnr_probes, nnr_a_radius_factor, grid_step, batch_size):
    step = check_attack_params(epsilon, norm, n_steps, step_size, n_restarts, loss, batch_size)
    check_scalar_param(in_manifold_factor, "in_manifold_factor", low=0, closed="neither")
    check_scalar_param(nnr_a_radius_factor, "nnr_a_radius_factor", low=0, closed="neither")
    check_choice(attack, "attack", ATTACKS)
    check_choice(nnr, "nnr", NNR_METHODS)
    check_scalar_param(n_nnr_probes, "n_nnr_probes", kind="integer", low=1)
    if grid_step is not None:
        check_scalar_param(grid_step, "grid_step", low=0, closed="neither")
    return step


def _check_manifold(manifold, X):
    """Tangent bases of ``X`` (checked) and the flags/warnings of the manifold's fit to ``X``."""
    D = X.shape[1]
    if manifold is None or not hasattr(manifold, "tangent_basis") or not hasattr(manifold,
                                                                                 "project"):
        raise TypeError("manifold must be a manifold object with project and tangent_basis "
                        "(e.g. geolearn.manifold.SphereManifold); got "
                        f"{type(manifold).__name__}.")
    if manifold.ambient_dim != D:
        raise ValueError(f"manifold.ambient_dim={manifold.ambient_dim} but X has {D} features "
                         "(flattened).")
    T = check_tangent_bases(manifold.tangent_basis(X), len(X), D,
                            name="the manifold's tangent bases")
    reach = manifold.reach
    dist = np.linalg.norm(manifold.project(X) - X, axis=1).max() if len(X) else 0.0
    scale = max(1.0, float(reach) if reach is not None and np.isfinite(reach)
                else float(np.abs(X).max()))
    if dist > ON_MANIFOLD_TOL * scale:
        if reach is not None:  # analytic manifolds: the definitions need x on M
            raise ValueError(f"X must lie on the manifold (a point is {dist:.3g} away); project "
                             "it first or use a LatentManifold/LocalPCAManifold.")
        warn_user(f"X lies up to {dist:.3g} off the {type(manifold).__name__}: in-manifold "
                  "perturbations use the offset convention x + pi(x') - pi(x).", GeolearnWarning)
    return T


def _ambient(clf, X, t, std, *, epsilon, norm, step, n_steps, n_restarts, loss, grid, grid_step,
             batch_size, random_state):
    """Ambient attack: PGD, united with a ball grid when ``grid`` (D <= 2)."""
    X_adv, ok = X.astype(np.float32), std.copy()
    if clf.differentiable:
        A, hit = run_attack(clf, X, t, epsilon=epsilon, norm=norm, step_size=step,
                            n_steps=n_steps, n_restarts=n_restarts, loss=loss,
                            batch_size=batch_size, random_state=random_state, stream="ambient")
        X_adv[hit], ok = A[hit], ok | hit
    if grid:
        offs = _ball_offsets(X.shape[1], epsilon, norm, grid_step)
        A, hit = grid_offsets_attack(clf, X, t, np.broadcast_to(offs, (len(X), *offs.shape)),
                                     batch_size)
        new = hit & ~ok
        X_adv[new], ok = A[new], ok | hit
    return X_adv, ok


def _ball_offsets(D, epsilon, norm, step):
    """Grid offsets of the open L2 ball (or the L-infinity box) of ``epsilon`` in ``R^D``."""
    if norm == "l2":
        return disk_offsets(D, epsilon * (1 - 1e-7), step) if D <= 2 else None
    a = np.arange(-epsilon, epsilon + step / 2, step).clip(-epsilon, epsilon)
    pts = np.stack(np.meshgrid(*[a] * D), -1).reshape(-1, D)
    return pts[np.any(pts != 0, axis=1)]


def risk_decomposition(estimator, X, y, *, manifold, epsilon=0.1, norm="l2",
                       in_manifold_factor=2.0, attack="auto", n_steps=40, step_size=None,
                       n_restarts=1, loss="ce", nnr="probe", n_nnr_probes=16,
                       nnr_a_radius_factor=1.0, grid_step=None, image_shape=None,
                       batch_size=512, device="auto", random_state=None, return_examples=False,
                       verbose=0, tangent_bases=None):
    """Decompose a classifier's adversarial risk into standard, normal, in-manifold and NNR parts.

    Per sample (Theorem 1, checked pointwise): ``adv => std or nor(eps) or
    in(2 eps) or nnr(eps)``, where ``nor`` searches the normal disk
    ``x + N_x M`` of radius ``eps``, ``in`` the on-manifold ball
    ``{x' in M : ||x' - x|| <= 2 eps}``, and ``nnr = A and B and C`` with
    ``A``: no normal adversarial point (radius ``nnr_a_radius_factor * eps``),
    ``C``: no in-manifold adversarial point at ``2 eps``, ``B``: a point of
    ``M`` within ``2 eps`` of ``x`` whose own prediction flips along its normal
    disk of radius ``eps``. ``adv`` is the union of everything found inside
    the (open) eps-ball: ambient PGD, normal and in-manifold hits.

    Parameters
    ----------
    estimator : torch.nn.Module, fitted skorch net or differentiable sklearn model
        Returns logits ``(n, C)``, or binary scores read as logits ``(0, z)``.
        Seen through :func:`geolearn.models.as_model`; black boxes only with
        ``attack="grid"`` and ``D <= 2``.
    X : array-like of shape (n, D) or (n, C, H, W)
    y : array-like of shape (n,)
        The estimator's ``classes_`` when it has them, else class indices.
    manifold : manifold object
        :class:`~geolearn.manifold.SphereManifold`,
        :class:`~geolearn.manifold.AffineManifold`,
        :class:`~geolearn.manifold.LocalPCAManifold`,
        :class:`~geolearn.manifold.LatentManifold`, or anything with
        ``ambient_dim, intrinsic_dim, reach, project, tangent_basis``.
    epsilon : float, default=0.1
    norm : {"l2", "linf"}, default="l2"
        Of the ambient attack (the theorem's balls are L2: with "linf" the
        bound check is flagged heuristic).
    in_manifold_factor : float, default=2.0
        The in-manifold budget of the bound is ``in_manifold_factor * eps``.
    attack : {"auto", "grid", "pgd", "tangent_pgd", "project", "latent"}, default="auto"
        The in-manifold method (see :func:`in_manifold_attack`; ``"pgd"``:
        tangent or latent PGD, never a grid). ``"grid"`` also enumerates the
        normal disks (codimension <= 2) and, for ``D <= 2``, the ambient balls.
    n_steps : int, default=40
    step_size : float, optional
        Default ``2.5 * eps / n_steps``.
    n_restarts : int, default=1
    loss : {"ce", "margin"}, default="ce"
    nnr : {"probe", "sample", "none"}, default="probe"
        ``"probe"``: normal attacks at on-manifold probes within ``2 eps`` (the
        chart grid, else in-manifold iterates and ``n_nnr_probes`` random
        points), united with ``"sample"``: the Corollary 1 plug-in (a correct,
        normally vulnerable sample within ``2 eps``). ``"none"``: not estimated.
    n_nnr_probes : int, default=16
    nnr_a_radius_factor : float, default=1.0
        Radius of condition ``A`` in units of ``eps`` (the printed paper's 2
        breaks the bound; see the user guide).
    grid_step : float, optional
        Grid resolution in ambient units; default ``eps / 20``.
    image_shape : tuple of int, optional
        ``(C, H, W)`` the model takes when ``X`` is flat.
    batch_size : int, default=512
    device : str, default="auto"
        Checked against the model's device.
    random_state : int, RandomState instance or None
        Seeds restarts and probes per row.
    return_examples : bool, default=False
    verbose : int, default=0
        ``> 0`` shows a progress bar over the stages.
    tangent_bases : array-like of shape (n, D, d), optional
        Known orthonormal tangent bases, with ``manifold=None``: ``M`` is then
        linearised at each sample (in-manifold perturbations stay in the tangent
        plane ``x + T_x M``; flagged "linearised manifold").

    Returns
    -------
    result : Bunch
        The risks at this budget, with per-sample indicators:

        epsilon : float
            The budget.
        norm : str
            The ambient attack's norm.
        std_risk : float
            ``R_std``: misclassified (ties count).
        adv_risk : float
            ``R_adv(eps)``: the union of every point found inside the eps-ball.
        normal_risk : float
            ``R_nor(eps)``: misclassified, or a normal perturbation flips.
        normal_only_risk : float
            Correct, and a normal perturbation flips (the set ``Z_nor``).
        in_manifold_risk : float
            ``R_in(in_manifold_factor * eps)`` (the bound's term).
        in_manifold_risk_eps : float
            ``R_in(eps)``.
        nnr : float
            The nearby-normal risk (0 when not estimated).
        rhs : float
            ``std + normal + in_manifold + nnr`` (Theorem 1's sum).
        rhs_without_nnr : float
            ``std + normal + in_manifold`` (the paper's Table 3 sum).
        rhs_pointwise : float
            Mean of ``std | nor | in2 | nnr``.
        bound_holds : bool
            ``adv_risk <= rhs``.
        pointwise_violations : int
            Samples with ``adv`` but none of ``std, nor, in2, nnr``.
        flags : list of str
            Any of "nnr not estimated", "linf heuristic", "eps >= reach",
            "linearised manifold".
        indicators : dict of str to ndarray of bool
            ``std, adv, ambient, nor, in_eps, in2, A, B, C, nnr`` per sample.
        examples : dict of str to ndarray or None
            The points found (``ambient, normal, in_eps, in2``), with
            ``return_examples=True``.

        The scalar risks are every entry but ``indicators`` and ``examples``.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.adversarial import risk_decomposition
    >>> from geolearn.manifold import AffineManifold
    >>> net = torch.nn.Linear(2, 1, bias=False)       # score x2: the boundary is x2 = 0
    >>> with torch.no_grad():
    ...     _ = net.weight.copy_(torch.tensor([[0.0, 1.0]]))
    >>> X = np.c_[np.zeros(4), [-0.5, -0.05, 0.05, 0.5]]
    >>> line = AffineManifold([[0.0], [1.0]])          # M is the x2 axis: all risk is tangent
    >>> r = risk_decomposition(net, X, [0, 0, 1, 1], manifold=line, epsilon=0.1)
    >>> r.adv_risk, r.normal_risk, r.in_manifold_risk, r.pointwise_violations
    (0.5, 0.0, 0.5, 0)
    """
    step = _check_params(epsilon, norm, in_manifold_factor, attack, n_steps, step_size,
                         n_restarts, loss, nnr, n_nnr_probes, nnr_a_radius_factor, grid_step,
                         batch_size)
    X, shape = flat_inputs(X, image_shape)
    check_squares_finite(X)  # the manifold's projections and the NNR take squared distances
    clf = Classifier(estimator, X.shape[1], shape, device)
    t = label_indices(getattr(clf.model, "estimator", estimator), y, len(X), clf.n_classes)
    if manifold is None and tangent_bases is not None:
        T = check_tangent_bases(tangent_bases, len(X), X.shape[1])
        if attack not in ("auto", "pgd", "grid"):
            raise ValueError(f"attack={attack!r} needs a manifold; tangent_bases allow 'auto', "
                             "'pgd' or 'grid' (normal disks only).")
    else:
        T = _check_manifold(manifold, X)
    D, d = T.shape[1], T.shape[2]
    rho2 = in_manifold_factor * epsilon
    h = grid_step_default(epsilon, grid_step)
    use_grid = attack == "grid"
    flags = _flags(manifold, epsilon, norm, nnr)
    if use_grid:
        check_codim(T)
        check_grid_size(len(X) * ((disk_size(D, epsilon, h) if D <= 2 else 0)
                                  + disk_size(D - d, epsilon, h)))
    in_method = "plane" if manifold is None else _in_method(attack, manifold, X, rho2, h)
    if manifold is None:
        flags.append("linearised manifold")
    if not (use_grid and in_method == "grid" and D <= 2):  # else every search is a grid
        clf.require_gradients(f"attack={attack!r} (D={D})")
    common = dict(n_steps=n_steps, step_size=step, n_restarts=n_restarts, loss=loss,
                  grid_step=h, batch_size=batch_size, random_state=random_state)
    stages = progress_bar(total=5, desc="risk decomposition", verbose=verbose)

    std = _wrong_np(clf, X, t, batch_size)
    amb_adv, amb = _ambient(clf, X, t, std, epsilon=epsilon, norm=norm, step=step,
                            n_steps=n_steps, n_restarts=n_restarts, loss=loss,
                            grid=use_grid and D <= 2, grid_step=h, batch_size=batch_size,
                            random_state=random_state)
    stages.update()
    nor_method = "grid" if use_grid else "pgd"
    nor_adv, nor_hit = normal_core(clf, X, t, T, epsilon=epsilon, method=nor_method, **common)
    nor = std | nor_hit
    stages.update()
    grid = (ChartGrid(clf, manifold, X, max(rho2, epsilon), h, batch_size)
            if in_method == "grid" else None)
    in_kw = dict(method=in_method, grid=grid, T=T, **common)
    in1_adv, in1 = in_manifold_core(clf, manifold, X, t, std, rho=epsilon, **in_kw)
    in2_adv, in2 = in_manifold_core(clf, manifold, X, t, std, rho=rho2, **in_kw)
    stages.update()
    if nnr_a_radius_factor == 1.0:
        A = ~nor
    else:
        A = ~(std | normal_core(clf, X, t, T, epsilon=nnr_a_radius_factor * epsilon,
                                method=nor_method, **common)[1])
    C = ~in2
    B = np.zeros(len(X), bool)
    active = A & C
    if nnr != "none" and active.any():
        B[active] = _nnr_b(clf, manifold, X, t, active, nor & ~std, rho2=rho2, epsilon=epsilon,
                           method=nnr, grid=grid, nor_method=nor_method,
                           n_nnr_probes=n_nnr_probes, T=T, in2_adv=in2_adv, **common)
    stages.update()
    nnr_ind = A & B & C
    adv = std | amb | nor_hit | in1
    covered = std | nor | in2 | nnr_ind
    stages.update()
    stages.close()
    result = _result(epsilon, norm, std, adv, nor, in1, in2, nnr_ind, covered, flags,
                     dict(std=std, adv=adv, ambient=amb, nor=nor, in_eps=in1, in2=in2, A=A, B=B,
                          C=C, nnr=nnr_ind))
    if return_examples:
        result.examples = dict(ambient=amb_adv, normal=nor_adv, in_eps=in1_adv, in2=in2_adv)
    return result


def _in_method(attack, manifold, X, rho2, h):
    if attack in ("pgd", "tangent_pgd", "project", "latent", "grid"):
        method = {"pgd": "latent" if is_latent(manifold) else "tangent_pgd"}.get(attack, attack)
        return resolve_in_method(method, manifold)
    n_grid = chart_grid_size(manifold, X, rho2, h) if has_chart(manifold) else MAX_GRID + 1
    return resolve_in_method("auto", manifold, n_grid)


def _flags(manifold, epsilon, norm, nnr):
    flags = []
    if nnr == "none":
        flags.append("nnr not estimated")
        warn_user("nnr='none': the NNR term is not estimated, so the right-hand side "
                  "underestimates Theorem 1's bound.", GeolearnWarning)
    if norm == "linf":
        flags.append("linf heuristic")
        warn_user("norm='linf': the ambient L-infinity ball is larger than the theorem's L2 "
                  "ball, so the bound check is heuristic.", GeolearnWarning)
    reach = getattr(manifold, "reach", None)
    if reach is not None and epsilon >= reach:
        flags.append("eps >= reach")
        warn_user(f"epsilon={epsilon:g} >= the manifold's reach {reach:g}: Theorem 1's bound "
                  "is not guaranteed.", GeolearnWarning)
    return flags


def _nnr_b(clf, manifold, X, t, active, z_nor, *, rho2, epsilon, method, grid, nor_method,
           n_nnr_probes, T, in2_adv, n_steps, step_size, n_restarts, loss, grid_step,
           batch_size, random_state):
    """Event ``B`` for the ``active`` rows (``A and C``)."""
    rows = np.flatnonzero(active)
    B = np.zeros(len(rows), bool)
    Z = np.flatnonzero(z_nor)
    if len(Z):  # Corollary 1's plug-in: a correct, normally vulnerable sample within 2 eps
        nn = NearestNeighbors().fit(X[Z])
        B |= np.array([len(i) > 0 for i in nn.radius_neighbors(X[rows], rho2,
                                                                return_distance=False)])
    if method == "sample":
        return B
    nor_kw = dict(epsilon=epsilon, method=nor_method, n_steps=n_steps, step_size=step_size,
                  n_restarts=n_restarts, loss=loss, grid_step=grid_step, batch_size=batch_size,
                  random_state=random_state, require_move=False)
    if grid is not None:
        nbrs = grid.neighbours(X[rows], rho2)[1]
        used = np.unique(np.concatenate(nbrs)) if len(nbrs) else np.array([], int)
        flip = np.zeros(len(grid.points), bool)
        if len(used):
            P = grid.points[used]
            flip[used] = normal_core(clf, P, grid.pred[used], manifold.tangent_basis(P),
                                     **nor_kw)[1]
        return B | np.array([flip[nb].any() for nb in nbrs])
    if manifold is None:  # tangent planes: the in-plane attack's point and random ones
        path = in2_adv[None, rows].astype(np.float64)
        rand = random_plane_probes(X[rows], T[rows], rho2, n_nnr_probes, random_state)
    else:
        path = tangent_pgd(clf, manifold, X[rows], t[rows], rho=rho2, n_steps=n_steps,
                           step_size=step_size, loss=loss, batch_size=batch_size,
                           std=np.zeros(len(rows), bool), path_steps=PATH_PROBES)[2]
        rand = random_manifold_probes(manifold, X[rows], rho2, n_nnr_probes, random_state)
    probes = np.concatenate([path, rand]).reshape(-1, X.shape[1])
    pred = predictions(clf, probes, batch_size)
    # the probes are one flat batch (a batch_size per sample's probes)
    nor_kw["batch_size"] = batch_size * (len(path) + n_nnr_probes)
    bases = (np.tile(T[rows], (len(path) + n_nnr_probes, 1, 1)) if manifold is None
             else manifold.tangent_basis(probes))
    flip = normal_core(clf, probes, pred, bases, **nor_kw)[1]
    return B | flip.reshape(-1, len(rows)).any(0)


def _result(epsilon, norm, std, adv, nor, in1, in2, nnr, covered, flags, indicators):
    m = (lambda a: float(a.mean()) if len(a) else 0.0)
    rhs_wo = m(std) + m(nor) + m(in2)
    rhs = rhs_wo + m(nnr)
    return Bunch(
        epsilon=float(epsilon), norm=norm, std_risk=m(std), adv_risk=m(adv),
        normal_risk=m(nor), normal_only_risk=m(nor & ~std), in_manifold_risk=m(in2),
        in_manifold_risk_eps=m(in1), nnr=m(nnr), rhs=rhs, rhs_without_nnr=rhs_wo,
        rhs_pointwise=m(covered), bound_holds=bool(m(adv) <= rhs + 1e-12),
        pointwise_violations=int((adv & ~covered).sum()), flags=flags, indicators=indicators,
        examples=None)


def risk_curve(estimator, X, y, *, manifold, epsilons, **kwargs):
    """:func:`risk_decomposition` at each budget (the paper's tables).

    Parameters
    ----------
    estimator, X, y, manifold
        As in :func:`risk_decomposition`.
    epsilons : sequence of float
    **kwargs
        Further :func:`risk_decomposition` options.

    Returns
    -------
    results : list of Bunch
        The :func:`risk_decomposition` result at each budget.

    Examples
    --------
    >>> import torch
    >>> from geolearn.adversarial import risk_curve
    >>> from geolearn.datasets import make_circle_classification
    >>> from geolearn.manifold import SphereManifold
    >>> X, y = make_circle_classification(200, random_state=0)
    >>> net = torch.nn.Linear(2, 1, bias=False)       # score x1: the Bayes boundary
    >>> with torch.no_grad():
    ...     _ = net.weight.copy_(torch.tensor([[1.0, 0.0]]))
    >>> curve = risk_curve(net, X, y, manifold=SphereManifold(), epsilons=[0.05, 0.1],
    ...                    nnr="sample", n_steps=10)
    >>> [r.bound_holds for r in curve]
    [True, True]
    """
    try:
        epsilons = [float(e) for e in epsilons]
    except (TypeError, ValueError):
        raise ValueError(f"epsilons must be a sequence of numbers; got {epsilons!r}.") from None
    return [risk_decomposition(estimator, X, y, manifold=manifold, epsilon=e, **kwargs)
            for e in epsilons]


class RiskDecomposition(BaseEstimator):
    """The manifold decomposition of a prefit classifier's adversarial risk, as an estimator.

    Holds the options of :func:`risk_decomposition`; ``fit(X, y)`` computes it
    on ``(X, y)``. For configuration management (clone, get_params, pickle);
    for model selection use :func:`make_risk_scorer`.

    Parameters
    ----------
    estimator : prefit model
        As in :func:`risk_decomposition`; never refitted.
    manifold : manifold object
    epsilon, norm, in_manifold_factor, attack, n_steps, step_size, n_restarts, loss, nnr, \
n_nnr_probes, nnr_a_radius_factor, grid_step, image_shape, batch_size, device, random_state, \
verbose
        As in :func:`risk_decomposition`.

    Attributes
    ----------
    result_ : Bunch
        The :func:`risk_decomposition` result.
    std_risk_, adv_risk_, normal_risk_, in_manifold_risk_, nnr_, rhs_ : float
        The result's risks.
    n_features_in_ : int

    Examples
    --------
    >>> import torch
    >>> from geolearn.adversarial import RiskDecomposition
    >>> from geolearn.datasets import make_circle_classification
    >>> from geolearn.manifold import SphereManifold
    >>> X, y = make_circle_classification(100, random_state=0)
    >>> net = torch.nn.Linear(2, 1, bias=False)
    >>> with torch.no_grad():
    ...     _ = net.weight.copy_(torch.tensor([[1.0, 0.0]]))
    >>> rd = RiskDecomposition(net, SphereManifold(), epsilon=0.1, nnr="sample").fit(X, y)
    >>> rd.std_risk_, rd.result_.bound_holds
    (0.0, True)
    """

    _parameter_constraints = {
        "estimator": "no_validation",
        "manifold": "no_validation",
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "norm": [StrOptions(set(NORMS))],
        "in_manifold_factor": [Interval(Real, 0, None, closed="neither")],
        "attack": [StrOptions(set(ATTACKS))],
        "n_steps": [Interval(Integral, 1, None, closed="left")],
        "step_size": [Interval(Real, 0, None, closed="neither"), None],
        "n_restarts": [Interval(Integral, 1, None, closed="left")],
        "loss": [StrOptions(set(LOSSES))],
        "nnr": [StrOptions(set(NNR_METHODS))],
        "n_nnr_probes": [Interval(Integral, 1, None, closed="left")],
        "nnr_a_radius_factor": [Interval(Real, 0, None, closed="neither")],
        "grid_step": [Interval(Real, 0, None, closed="neither"), None],
        "image_shape": ["array-like", None],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "device": "no_validation",
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, estimator, manifold, *, epsilon=0.1, norm="l2", in_manifold_factor=2.0,
                 attack="auto", n_steps=40, step_size=None, n_restarts=1, loss="ce",
                 nnr="probe", n_nnr_probes=16, nnr_a_radius_factor=1.0, grid_step=None,
                 image_shape=None, batch_size=512, device="auto", random_state=None, verbose=0):
        self.estimator = estimator
        self.manifold = manifold
        self.epsilon = epsilon
        self.norm = norm
        self.in_manifold_factor = in_manifold_factor
        self.attack = attack
        self.n_steps = n_steps
        self.step_size = step_size
        self.n_restarts = n_restarts
        self.loss = loss
        self.nnr = nnr
        self.n_nnr_probes = n_nnr_probes
        self.nnr_a_radius_factor = nnr_a_radius_factor
        self.grid_step = grid_step
        self.image_shape = image_shape
        self.batch_size = batch_size
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Compute the decomposition on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n, D) or (n, C, H, W)
        y : array-like of shape (n,)

        Returns
        -------
        self : RiskDecomposition
        """
        params = self.get_params(deep=False)
        estimator, manifold = params.pop("estimator"), params.pop("manifold")
        result = risk_decomposition(estimator, X, y, manifold=manifold, **params)
        self.result_ = result
        self.n_features_in_ = int(np.prod(np.shape(X)[1:]))
        for name in ("std_risk", "adv_risk", "normal_risk", "in_manifold_risk", "rhs"):
            setattr(self, name + "_", getattr(result, name))
        self.nnr_ = result.nnr
        return self

    def score(self, X, y):
        """``1 - R_adv(eps)`` on ``(X, y)`` (greater is better).

        Parameters
        ----------
        X : array-like of shape (n, D) or (n, C, H, W)
        y : array-like of shape (n,)

        Returns
        -------
        score : float
        """
        check_is_fitted(self)
        params = self.get_params(deep=False)
        estimator, manifold = params.pop("estimator"), params.pop("manifold")
        params["nnr"] = "none"
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "nnr='none'", GeolearnWarning)
            return 1.0 - risk_decomposition(estimator, X, y, manifold=manifold,
                                            **params).adv_risk


SCORER_KINDS = {"standard": "std_risk", "adversarial": "adv_risk", "normal": "normal_risk",
                "in_manifold": "in_manifold_risk", "rhs": "rhs"}


def _risk_score(estimator, X, y, *, kind, manifold, epsilon, **kwargs):
    """``1 - risk`` of ``kind``: the scorer :func:`make_risk_scorer` makes."""
    if kind != "rhs":  # only the bound's sum needs the NNR term
        kwargs["nnr"] = "none"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "nnr='none'", GeolearnWarning)
        r = risk_decomposition(estimator, X, y, manifold=manifold, epsilon=epsilon, **kwargs)
    return 1.0 - getattr(r, SCORER_KINDS[kind])


def make_risk_scorer(kind, *, manifold, epsilon, **kwargs):
    """A scorer ``(estimator, X, y) -> 1 - risk`` for GridSearchCV and cross_validate.

    Parameters
    ----------
    kind : {"standard", "adversarial", "normal", "in_manifold", "rhs"}
        The risk: ``R_std``, ``R_adv(eps)``, ``R_nor(eps)``, ``R_in(2 eps)`` or
        Theorem 1's right-hand side (the only one computing the NNR).
    manifold : manifold object
    epsilon : float
    **kwargs
        Further :func:`risk_decomposition` options.

    Returns
    -------
    scorer : callable ``scorer(estimator, X, y) -> float``
        Greater is better. It measures the fitted estimator itself (attacks
        need its gradients), so it is a scikit-learn scorer callable rather
        than a ``make_scorer`` of predictions; it pickles.

    Examples
    --------
    Use it as ``GridSearchCV(..., scoring=make_risk_scorer(...))``, or in a dict
    of scorers; here on a fixed model, the circle's Bayes classifier:

    >>> import torch
    >>> from geolearn.adversarial import make_risk_scorer
    >>> from geolearn.datasets import make_circle_classification
    >>> from geolearn.manifold import SphereManifold
    >>> X, y = make_circle_classification(200, random_state=0)
    >>> net = torch.nn.Linear(2, 1, bias=False)
    >>> with torch.no_grad():
    ...     _ = net.weight.copy_(torch.tensor([[1.0, 0.0]]))
    >>> normal = make_risk_scorer("normal", manifold=SphereManifold(), epsilon=0.1, n_steps=5)
    >>> normal(net, X, y)  # radial moves never flip the Bayes classifier
    1.0
    """
    check_choice(kind, "kind", tuple(SCORER_KINDS))
    return functools.partial(_risk_score, kind=kind, manifold=manifold, epsilon=epsilon,
                             **kwargs)
