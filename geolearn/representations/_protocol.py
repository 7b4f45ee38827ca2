"""Algorithm 1 of the linear-mapping paper: cross-network adversarial mapping and detection."""

from functools import partial

import numpy as np
import torch
from sklearn.metrics import r2_score, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.utils import Bunch, check_random_state

from .._utils import check_choice, check_labels, check_model_inputs, to_numpy, to_tensor
from ..adversarial import carlini_wagner_l2, fgsm, pgd
from ..models import as_model
from ._detector import CanonicalAdversarialDetector
from ._embedding import FourierEmbedding, embed, final_linear
from ._linear_map import LinearEmbeddingMap
from .metrics import embedding_mse

_ATTACKS = {"fgsm": fgsm, "pgd": pgd, "cw": carlini_wagner_l2}
_REPRESENTATIONS = ("raw", "fourier_magnitude", "fourier_phase")


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
    parts : Bunch
        ``map``, ``svm`` and ``val``: sorted index arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.representations import split_indices
    >>> parts = split_indices(np.repeat([0, 1], 10), random_state=0)
    >>> [len(parts[k]) for k in ("map", "svm", "val")]
    [8, 6, 6]
    """
    fractions = _check_split(split)
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
    parts = Bunch(map=np.sort(map_idx), svm=np.sort(svm_idx), val=np.sort(val_idx))
    _check_parts(parts, y, classes, split)
    return parts


def _check_split(split):
    """The three fractions of ``split`` as an array, or a ``ValueError``."""
    try:
        fractions = np.asarray(split, dtype=float).reshape(3)
    except (TypeError, ValueError):
        raise ValueError(f"split must be three fractions (map, svm, val); got {split!r}.") from None
    if not (np.all(np.isfinite(fractions)) and np.all(fractions > 0)
            and abs(fractions.sum() - 1) < 1e-9):
        raise ValueError(
            f"split must be three positive fractions (map, svm, val) summing to 1; got {split!r}."
        )
    return fractions


def _check_parts(parts, y, classes, split):
    """Every part holds at least 2 rows of every class, or a ``ValueError``."""
    for part, rows in parts.items():
        present, n = np.unique(y[rows], return_counts=True)
        short = [c for c in classes if c not in present] or present[n < 2].tolist()
        if short:
            raise ValueError(
                f"the {part} part of split={split!r} has fewer than 2 rows of a class "
                f"({short[0]!r}); use more samples or larger fractions."
            )


def _accuracy(adapter, head, E, y):
    """Accuracy of the network's final linear layer applied to embeddings ``E``."""
    with torch.no_grad():
        logits = head(to_tensor(E, device=adapter.device, dtype=adapter.dtype))
    return float(np.mean(to_numpy(logits.argmax(1)) == y))


def cross_model_detection(nets, target, X, y, *, epsilon, attack="fgsm", attack_kwargs=None,
                          split=(0.4, 0.3, 0.3), map_rows="org+adv", eval_rows="mapped",
                          representation="raw", detector=None, alpha=0.0, random_state=None):
    """Algorithm 1 of the linear-mapping paper: one detector, in the target's space, for all nets.

    Every network is attacked (white-box) and embedded (its final linear layer's input). The
    detector, fitted on the target's clean and adversarial svm rows, scores each source's val
    rows mapped into the target's space by a :class:`LinearEmbeddingMap` fitted on map rows.

    Parameters
    ----------
    nets : dict of str to torch.nn.Module or fitted skorch classifier
        Trained classifiers outputting logits, all taking ``X`` as it is.
    target : str
        The key of the canonical network in ``nets``.
    X, y : array-like of shape (n, ...) and int labels of shape (n,)
        Clean inputs in the attack's box (default [0, 1]) and true labels.
    epsilon : float
        Attack budget (ignored by ``attack="cw"``).
    attack, attack_kwargs : {"fgsm", "pgd", "cw"} or callable, default="fgsm"; dict, optional
        A callable is called as ``attack(net, X, y, epsilon=epsilon, **attack_kwargs)``
        and returns the adversarial inputs (or a tuple starting with them).
    split : (float, float, float), default=(0.4, 0.3, 0.3)
        Fractions of the map, svm and val parts (stratified by ``y``).
    map_rows : {"org+adv", "adv", "org"}, default="org+adv"
        Map rows: clean and adversarial (Algorithm 1), adversarial (Sec. 5.3), clean.
    eval_rows : {"mapped", "mapped_adv_vs_native_clean"}, default="mapped"
        Val rows all mapped, or mapped adversarial ones vs the target's clean (Sec. 5.3).
    representation : {"raw", "fourier_magnitude", "fourier_phase"}, default="raw"
        Embeddings, or their Fourier spectra (the Sec. 6 baseline).
    detector, alpha : classifier, optional; float, default=0.0
        The template of :class:`CanonicalAdversarialDetector`'s detector (default:
        its LinearSVC), and the ridge penalty of the maps.
    random_state : int, RandomState instance or None, default=None
        Seeds the split and the default detector.

    Returns
    -------
    result : Bunch
        ``target``, ``auroc_native``, ``sources`` (per source: ``auroc_native``,
        ``auroc_mapped``, ``mse_adv``, ``mse_all``, ``r2``, ``mapped_head_accuracy_adv``
        and ``_clean``), ``accuracy_clean``, ``accuracy_adv``, ``detector``,
        ``embeddings``, ``splits``: see the user guide.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.representations import cross_model_detection
    >>> nets = {k: torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(),
    ...                                torch.nn.Linear(8, 2)) for k in ("a", "b")}
    >>> X = np.random.default_rng(0).random((120, 6)).astype(np.float32)
    >>> res = cross_model_detection(nets, "a", X, (X[:, 0] > 0.5).astype(int),
    ...                             epsilon=0.1)
    >>> sorted(res.sources), 0 <= res.sources["b"]["auroc_mapped"] <= 1
    (['b'], True)
    """
    options = {"map_rows": map_rows, "eval_rows": eval_rows, "representation": representation}
    run_attack, kwargs = _check_protocol(nets, target, attack, attack_kwargs, epsilon,
                                        **options)
    return _run_protocol(nets, target, X, y, run_attack, kwargs, split=split, detector=detector,
                         alpha=alpha, random_state=random_state, **options)


def _run_protocol(nets, target, X, y, run_attack, kwargs, *, split, map_rows, eval_rows,
                  representation, detector, alpha, random_state):
    """The body of :func:`cross_model_detection` once its options are checked."""
    X = check_model_inputs(X)
    y = check_labels(y, len(X))
    rng = check_random_state(random_state)
    parts = split_indices(y, split, random_state=rng.randint(2**31 - 1))
    adapters = {name: as_model(net) for name, net in nets.items()}  # the one door, once each
    custom = run_attack not in _ATTACKS.values()
    runs = {name: _attack_and_embed(adapters[name], net if custom else adapters[name],
                                    run_attack, X, y, kwargs) for name, net in nets.items()}
    emb = _represent({name: run[0] for name, run in runs.items()}, representation)
    det = CanonicalAdversarialDetector(detector=detector, mapper=LinearEmbeddingMap(alpha=alpha),
                                       random_state=rng.randint(2**31 - 1))
    svm, val = parts["svm"], parts["val"]
    det.fit(_stack(emb, target, svm), _clean_then_adv(len(svm)))
    auroc_native = float(det.score(_stack(emb, target, val), _clean_then_adv(len(val))))
    head_accuracy = (partial(_accuracy, adapters[target], final_linear(adapters[target]))
                     if representation == "raw" else None)
    sources = {name: {"auroc_native": auroc_native,
                      **_score_source(det, emb, name, target, parts, y, map_rows=map_rows,
                                      eval_rows=eval_rows, head_accuracy=head_accuracy)}
               for name in nets if name != target}
    return Bunch(target=target, auroc_native=auroc_native, sources=sources,
                 accuracy_clean={name: run[1][0] for name, run in runs.items()},
                 accuracy_adv={name: run[1][1] for name, run in runs.items()}, detector=det,
                 embeddings=emb, splits=parts)


def _check_protocol(nets, target, attack, attack_kwargs, epsilon, *, map_rows, eval_rows,
                    representation):
    """Validate the options of :func:`cross_model_detection`; the attack and its arguments."""
    if target not in nets:
        raise ValueError(f"target={target!r} is not a key of nets: {sorted(nets)}.")
    if len(nets) < 2:
        raise ValueError("nets must hold the target and at least one source network.")
    check_choice(map_rows, "map_rows", ("org+adv", "adv", "org"))
    check_choice(eval_rows, "eval_rows", ("mapped", "mapped_adv_vs_native_clean"))
    check_choice(representation, "representation", _REPRESENTATIONS)
    if not callable(attack):
        attack = _ATTACKS[check_choice(attack, "attack", tuple(_ATTACKS))]
    kwargs = dict(attack_kwargs or {})
    if attack is not carlini_wagner_l2:
        kwargs["epsilon"] = epsilon
    return attack, kwargs


def _attack_and_embed(adapter, attacked, run_attack, X, y, kwargs):
    """``((clean, adversarial) embeddings, (clean, adversarial) accuracies)`` of one network.

    ``attacked`` is what the attack receives: the adapter for geolearn's attacks
    (no second conversion), the user's network for a callable.
    """
    X_adv = run_attack(attacked, X, y, **kwargs)
    X_adv = check_model_inputs(X_adv[0] if isinstance(X_adv, tuple) else X_adv, name="X_adv")
    if X_adv.shape != X.shape:
        raise ValueError(f"the attack returned inputs of shape {X_adv.shape}; expected "
                         f"{X.shape}, the shape of X.")
    E = embed(adapter, X), embed(adapter, X_adv)
    head = final_linear(adapter)
    return E, (_accuracy(adapter, head, E[0], y), _accuracy(adapter, head, E[1], y))


def _represent(raw, representation):
    """The embeddings in the chosen representation: as they are, or Fourier spectra."""
    if representation == "raw":
        return raw
    fourier = FourierEmbedding(part=representation.split("_")[1])
    return {k: (fourier.transform(E0), fourier.transform(E1)) for k, (E0, E1) in raw.items()}


def _stack(emb, name, rows, which=("org", "adv")):
    """Clean and/or adversarial embeddings of ``rows`` of network ``name``, clean first."""
    by_kind = dict(zip(("org", "adv"), emb[name]))
    return np.vstack([by_kind[w][rows] for w in which])


def _clean_then_adv(n):
    """Detector labels of ``n`` clean rows followed by ``n`` adversarial ones."""
    return np.r_[np.zeros(n, int), np.ones(n, int)]


def _score_source(det, emb, name, target, parts, y, *, map_rows, eval_rows, head_accuracy):
    """Fit the map of source ``name`` into the target's space and score its mapped val rows."""
    mp, val, n_val = parts["map"], parts["val"], len(parts["val"])
    which = tuple(map_rows.split("+"))
    det.fit_source(name, _stack(emb, name, mp, which), _stack(emb, target, mp, which))
    mapped = det.maps_[name].predict(_stack(emb, name, val))
    Z_val = _stack(emb, target, val)
    # mapped rows are canonical already: score them with the canonical detector
    rows = mapped if eval_rows == "mapped" else np.r_[Z_val[:n_val], mapped[n_val:]]
    scores = det.detector_.decision_function(rows)
    entry = {
        "auroc_mapped": float(roc_auc_score(_clean_then_adv(n_val), scores)),
        "mse_adv": embedding_mse(Z_val[n_val:], mapped[n_val:]),
        "mse_all": embedding_mse(Z_val, mapped),
        "r2": float(r2_score(Z_val, mapped)),
        "mapped_head_accuracy_adv": None,
        "mapped_head_accuracy_clean": None,
    }
    if head_accuracy is not None:
        entry["mapped_head_accuracy_adv"] = head_accuracy(mapped[n_val:], y[val])
        entry["mapped_head_accuracy_clean"] = head_accuracy(mapped[:n_val], y[val])
    return entry
