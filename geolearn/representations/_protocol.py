"""Algorithm 1 of the linear-mapping paper: cross-network adversarial mapping and detection."""

import numpy as np
import torch
from sklearn.metrics import r2_score, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.utils import Bunch, check_random_state

from .._utils import to_tensor
from ..adversarial import carlini_wagner_l2, fgsm, pgd
from .._utils import check_labels, check_model_inputs
from ..models import as_model
from ._detector import CanonicalAdversarialDetector
from ._embedding import FourierEmbedding, TorchEmbedder, final_linear
from ._linear_map import LinearEmbeddingMap
from .metrics import embedding_mse

_ATTACKS = {"fgsm": fgsm, "pgd": pgd, "cw": carlini_wagner_l2}
_REPRESENTATIONS = ("raw", "fourier_magnitude", "fourier_phase")


def _check_choice(value, name, options):
    if value not in options:
        raise ValueError(f"{name} must be one of {list(options)}; got {value!r}.")


def split_indices(y, split=(0.4, 0.3, 0.3), *, random_state=None):
    """Stratified, seeded split of sample indices into disjoint map / svm / val parts.

    Parameters
    ----------
    y : array-like of shape (n,)
        Class labels to stratify by.
    split : (float, float, float), default=(0.4, 0.3, 0.3)
        Positive fractions of the map, svm and val parts, summing to 1.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    parts : dict with keys ``"map"``, ``"svm"``, ``"val"`` of sorted index arrays

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.representations import split_indices
    >>> parts = split_indices(np.repeat([0, 1], 10), random_state=0)
    >>> [len(parts[k]) for k in ("map", "svm", "val")]
    [8, 6, 6]
    """
    try:
        fractions = np.asarray(split, dtype=float).reshape(3)
    except (TypeError, ValueError):
        raise ValueError(f"split must be three fractions (map, svm, val); got {split!r}.") from None
    if not (np.all(np.isfinite(fractions)) and np.all(fractions > 0)
            and abs(fractions.sum() - 1) < 1e-9):
        raise ValueError(
            f"split must be three positive fractions (map, svm, val) summing to 1; got {split!r}."
        )
    y = np.asarray(y)
    rng = check_random_state(random_state)
    idx = np.arange(len(y))
    classes, counts = np.unique(y, return_counts=True)
    if counts.min() < 6:
        raise ValueError(
            f"class {classes[counts.argmin()]!r} has {counts.min()} samples; a stratified "
            "map/svm/val split needs at least 2 of each class in every part (6 in all)."
        )
    try:
        rest, map_idx = train_test_split(idx, test_size=fractions[0], stratify=y,
                                         random_state=rng.randint(2**31 - 1))
        svm_idx, val_idx = train_test_split(rest, test_size=fractions[2] / fractions[1:].sum(),
                                            stratify=y[rest], random_state=rng.randint(2**31 - 1))
    except ValueError as exc:
        raise ValueError(
            f"split={split!r} leaves a part with fewer than 2 rows of a class ({exc}); use more "
            "samples or larger fractions."
        ) from exc
    parts = {"map": np.sort(map_idx), "svm": np.sort(svm_idx), "val": np.sort(val_idx)}
    for part, rows in parts.items():
        present, n = np.unique(y[rows], return_counts=True)
        short = [c for c in classes if c not in present] or present[n < 2].tolist()
        if short:
            raise ValueError(
                f"the {part} part of split={split!r} has fewer than 2 rows of a class "
                f"({short[0]!r}); use more samples or larger fractions."
            )
    return parts


def _accuracy(adapter, head, E, y):
    """Accuracy of the network's final linear layer applied to embeddings ``E``."""
    with torch.no_grad():
        logits = head(to_tensor(E, device=adapter.device, dtype=adapter.dtype))
    return float(np.mean(logits.argmax(1).cpu().numpy() == y))


def cross_model_detection(nets, target, X, y, *, eps, attack="fgsm", attack_kwargs=None,
                          split=(0.4, 0.3, 0.3), map_rows="org+adv", eval_rows="mapped",
                          representation="raw", detector=None, alpha=0.0, random_state=None):
    """Run the paper's Algorithm 1: detect adversarial inputs of every source network
    with one detector trained in the target network's embedding space.

    Each network is attacked separately (white-box); embeddings are the inputs
    of each network's final linear layer. The indices are split into disjoint
    map / svm / val parts. The detector is fitted on the target's clean and
    adversarial svm rows; each source gets a :class:`LinearEmbeddingMap` fitted
    on its map rows paired with the target's; the source's val rows, mapped,
    are scored by the target's detector.

    Parameters
    ----------
    nets : dict of str to torch.nn.Module or fitted skorch classifier
        Trained classifiers outputting logits, all taking ``X`` as it is.
    target : str
        The key of the canonical network in ``nets``.
    X : array-like of shape (n, ...)
        Clean inputs in the attack's box (default [0, 1]).
    y : array-like of int, shape (n,)
        True labels.
    eps : float
        Attack budget (ignored by ``attack="cw"``).
    attack : {"fgsm", "pgd", "cw"} or callable, default="fgsm"
        A callable is called as ``attack(net, X, y, eps=eps, **attack_kwargs)``
        and returns the adversarial inputs (or a tuple starting with them).
    attack_kwargs : dict, optional
        Extra arguments of the attack (e.g. ``steps``, ``random_state``).
    split : (float, float, float), default=(0.4, 0.3, 0.3)
        Fractions of the map, svm and val parts (stratified by ``y``).
    map_rows : {"org+adv", "adv", "org"}, default="org+adv"
        Rows the maps are fitted on: clean and adversarial (Algorithm 1),
        adversarial only (the paper's Sec. 5.3), or clean only (a control).
    eval_rows : {"mapped", "mapped_adv_vs_native_clean"}, default="mapped"
        ``"mapped"``: clean and adversarial val rows both mapped from the
        source; ``"mapped_adv_vs_native_clean"``: mapped adversarial rows
        against the target's own clean rows (the wording of Sec. 5.3).
    representation : {"raw", "fourier_magnitude", "fourier_phase"}, default="raw"
        Embeddings, or their Fourier spectra (the Sec. 6 baseline).
    detector : classifier, optional
        Template for :class:`CanonicalAdversarialDetector` (``None``: the
        standardised, class-balanced LinearSVC).
    alpha : float, default=0.0
        Ridge penalty of the maps.
    random_state : int, RandomState instance or None, default=None
        Seeds the split and the default detector.

    Returns
    -------
    result : Bunch
        ``target``; ``auroc_native``; ``sources``, a dict mapping each source to
        a dict with ``auroc_native``, ``auroc_mapped``, ``mse_adv``, ``mse_all``
        (elementwise MSE of the mapped val rows against the target's), ``r2``
        (uniform R^2 of all mapped val rows), ``mapped_head_accuracy_adv`` and
        ``mapped_head_accuracy_clean`` (the target's final layer on the mapped
        val rows; ``None`` for Fourier representations); ``accuracy_clean`` and
        ``accuracy_adv`` of every network on all of ``X``; the fitted
        ``detector`` (with ``maps_``); ``embeddings`` (network to ``(clean,
        adversarial)`` arrays in the chosen representation) and ``splits``
        (index arrays), for further controls.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.representations import cross_model_detection
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> nets = {k: torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(),
    ...                                torch.nn.Linear(8, 2)) for k in ("a", "b")}
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((120, 6)).astype(np.float32); y = (X[:, 0] > 0.5).astype(int)
    >>> res = cross_model_detection(nets, "a", X, y, eps=0.1, random_state=0)
    >>> sorted(res.sources), 0 <= res.sources["b"]["auroc_mapped"] <= 1
    (['b'], True)
    """
    if target not in nets:
        raise ValueError(f"target={target!r} is not a key of nets: {sorted(nets)}.")
    if len(nets) < 2:
        raise ValueError("nets must hold the target and at least one source network.")
    _check_choice(map_rows, "map_rows", ("org+adv", "adv", "org"))
    _check_choice(eval_rows, "eval_rows", ("mapped", "mapped_adv_vs_native_clean"))
    _check_choice(representation, "representation", _REPRESENTATIONS)
    if not callable(attack):
        _check_choice(attack, "attack", tuple(_ATTACKS))
    run_attack = _ATTACKS.get(attack, attack)
    kwargs = dict(attack_kwargs or {})
    if run_attack is not carlini_wagner_l2:
        kwargs["eps"] = eps

    X = check_model_inputs(X)
    y = check_labels(y, len(X))
    rng = check_random_state(random_state)
    parts = split_indices(y, split, random_state=rng.randint(2**31 - 1))

    adapters = {name: as_model(net) for name, net in nets.items()}
    raw, acc_clean, acc_adv = {}, {}, {}
    for name, net in nets.items():
        X_adv = run_attack(net, X, y, **kwargs)
        X_adv = X_adv[0] if isinstance(X_adv, tuple) else X_adv
        embedder = TorchEmbedder(adapters[name].module).fit(X)
        raw[name] = embedder.transform(X), embedder.transform(X_adv)
        head = final_linear(adapters[name])
        acc_clean[name] = _accuracy(adapters[name], head, raw[name][0], y)
        acc_adv[name] = _accuracy(adapters[name], head, raw[name][1], y)

    if representation == "raw":
        emb = raw
    else:
        fourier = FourierEmbedding(part=representation.split("_")[1])
        emb = {k: (fourier.transform(E0), fourier.transform(E1)) for k, (E0, E1) in raw.items()}

    def stack(name, rows, which=("org", "adv")):
        """Clean and/or adversarial embeddings of ``rows``, clean first."""
        by_kind = dict(zip(("org", "adv"), emb[name]))
        return np.vstack([by_kind[w][rows] for w in which])

    svm, val, mp = parts["svm"], parts["val"], parts["map"]
    labels = np.r_[np.zeros(len(val), int), np.ones(len(val), int)]
    det = CanonicalAdversarialDetector(detector=detector, mapper=LinearEmbeddingMap(alpha=alpha),
                                       random_state=rng.randint(2**31 - 1))
    det.fit(stack(target, svm), np.r_[np.zeros(len(svm), int), np.ones(len(svm), int)])
    Z_val = stack(target, val)
    auroc_native = float(det.score(Z_val, labels))
    head = final_linear(adapters[target])

    sources = {}
    which = tuple(map_rows.split("+"))
    for name in nets:
        if name == target:
            continue
        det.fit_source(name, stack(name, mp, which), stack(target, mp, which))
        mapped = det.maps_[name].predict(stack(name, val))
        n_val = len(val)
        # mapped rows are canonical already: score them with the canonical detector
        rows = mapped if eval_rows == "mapped" else np.r_[Z_val[:n_val], mapped[n_val:]]
        scores = det.detector_.decision_function(rows)
        entry = {
            "auroc_native": auroc_native,
            "auroc_mapped": float(roc_auc_score(labels, scores)),
            "mse_adv": embedding_mse(Z_val[n_val:], mapped[n_val:]),
            "mse_all": embedding_mse(Z_val, mapped),
            "r2": float(r2_score(Z_val, mapped)),
            "mapped_head_accuracy_adv": None,
            "mapped_head_accuracy_clean": None,
        }
        if representation == "raw":
            entry["mapped_head_accuracy_adv"] = _accuracy(adapters[target], head,
                                                          mapped[n_val:], y[val])
            entry["mapped_head_accuracy_clean"] = _accuracy(adapters[target], head,
                                                            mapped[:n_val], y[val])
        sources[name] = entry

    return Bunch(target=target, auroc_native=auroc_native, sources=sources,
                 accuracy_clean=acc_clean, accuracy_adv=acc_adv, detector=det,
                 embeddings=emb, splits=parts)
