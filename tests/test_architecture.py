"""Architecture rules that keep the families independent (see docs/contributing.md)."""

import ast
import pathlib
import sys

import geolearn

ROOT = pathlib.Path(geolearn.__file__).parent
SHARED = {"_utils"}  # private by name, shared by design
# The adapter layer's plumbing for the families (training pieces, the response reader): shared
# without being public API, through this one module only (docs/contributing.md).
SHARED_MODULES = {("models", "_internal")}


def _private_imports():
    """``(module, imported)`` for every import of another subpackage's private module."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        own = rel.parts[0] if len(rel.parts) > 1 else None
        package = ["geolearn", *rel.parts[:-1]]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    target = [*base, *(node.module.split(".") if node.module else [])]
                else:
                    target = (node.module or "").split(".")
                names = [[*target, a.name] for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name.split(".") for a in node.names]
            else:
                continue
            for parts in names:
                if len(parts) < 3 or parts[0] != "geolearn":
                    continue
                other = parts[1]
                if other == own or other in SHARED:
                    continue
                public = parts[3:] if tuple(parts[1:3]) in SHARED_MODULES else parts[2:]
                if any(p.startswith("_") for p in public):
                    found.append((str(rel), ".".join(parts)))
    return found


def test_no_family_imports_another_subpackages_private_module():
    """A family reaches another subpackage only through its public names."""
    assert _private_imports() == []


def test_the_rule_catches_a_private_import(tmp_path, monkeypatch):
    """The walk sees relative and absolute private imports (a check that cannot pass blindly)."""
    pkg = tmp_path / "geolearn"
    (pkg / "alpha").mkdir(parents=True)
    (pkg / "alpha" / "mod.py").write_text(
        "from ..beta._hidden import x\nfrom geolearn.gamma._secret import y\n"
        "from .._utils import z\nfrom ..beta import public\n"
        "from ..models._internal import shared, _hidden\nfrom ..models._training import t\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", pkg)
    assert _private_imports() == [("alpha/mod.py", "geolearn.beta._hidden.x"),
                                  ("alpha/mod.py", "geolearn.gamma._secret.y"),
                                  ("alpha/mod.py", "geolearn.models._internal._hidden"),
                                  ("alpha/mod.py", "geolearn.models._training.t")]


MODEL_TYPES = {"Module", "NeuralNet", "NeuralNetClassifier", "NeuralNetRegressor",
               "MLPClassifier", "MLPRegressor", "Pipeline", "FrozenEstimator"}


def _model_type_branches(root):
    """``file:line`` of every ``isinstance(..., <model type>)`` outside ``geolearn.models``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] == "models":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance"
                    and len(node.args) == 2):
                types = {getattr(n, "attr", getattr(n, "id", None))
                         for n in ast.walk(node.args[1])}
                if types & MODEL_TYPES:
                    found.append(f"{rel}:{node.lineno}")
    return found


def test_only_the_adapter_branches_on_model_type():
    """``as_model`` is the one place that tells torch, skorch and scikit-learn models apart."""
    assert _model_type_branches(ROOT) == []


def _joblib_pools(root):
    """``(module, name)`` for every use of joblib's ``Parallel``/``effective_n_jobs`` under root."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "joblib":
                found += [(str(rel), a.name) for a in node.names
                          if a.name in ("Parallel", "effective_n_jobs")]
    return found


def test_internal_pools_go_through_thread_map():
    """Every internal pool names its backend and its threads (``_utils.thread_map``): a pool of
    its own would run on a caller's Dask or Ray backend and on oversubscribed threads."""
    assert _joblib_pools(ROOT) == [("_utils/parallel.py", "Parallel"),
                                   ("_utils/parallel.py", "effective_n_jobs")]


def test_the_pool_rule_catches_a_pool(tmp_path):
    (tmp_path / "fam.py").write_text("from joblib import Parallel, delayed\n")
    assert _joblib_pools(tmp_path) == [("fam.py", "Parallel")]
