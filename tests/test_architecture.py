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


def _imports(root):
    """``(file, its subpackage, imported parts, plain)`` of every ``geolearn`` import under root.

    ``parts`` is the absolute dotted path of each imported name (``from ..x import y`` in
    ``geolearn/z/m.py`` gives ``["geolearn", "x", "y"]``); ``plain`` marks ``import a.b``.
    """
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        own = rel.parts[0] if len(rel.parts) > 1 else None
        package = ["geolearn", *rel.parts[:-1]]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    target = [*base, *(node.module.split(".") if node.module else [])]
                else:
                    target = (node.module or "").split(".")
                names, plain = [[*target, a.name] for a in node.names], False
            elif isinstance(node, ast.Import):
                names, plain = [a.name.split(".") for a in node.names], True
            else:
                continue
            for parts in names:
                if parts[0] == "geolearn":
                    yield str(rel), own, parts, plain


def _private_imports():
    """``(module, imported)`` for every import of another subpackage's private module."""
    found = []
    for rel, own, parts, _ in _imports(ROOT):
        if len(parts) < 3:
            continue
        other = parts[1]
        if other == own or other in SHARED:
            continue
        public = parts[3:] if tuple(parts[1:3]) in SHARED_MODULES else parts[2:]
        if any(p.startswith("_") for p in public):
            found.append((rel, ".".join(parts)))
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


# Families built on the generative core, which reach it only through its public names.
BUILT_ON_GENERATIVE = {"ood", "disentanglement", "meta_learning"}


def _declared_all(root, module):
    """The ``__all__`` of ``geolearn.<module>`` (a list of parts), read from its source."""
    base = root.joinpath(*module[1:])
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    if not path.exists():
        return set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def _generative_imports(root):
    """``(module, imported)`` for every import that breaks the one-way rule with generative.

    ood, disentanglement and meta_learning import ``geolearn.generative`` only as
    ``from geolearn.generative[.<public module>] import <a name of its __all__>``;
    generative imports none of them.
    """
    found = []
    for rel, own, parts, plain in _imports(root):
        if len(parts) < 2:
            continue
        if own == "generative" and parts[1] in BUILT_ON_GENERATIVE:
            found.append((rel, ".".join(parts)))
        elif own in BUILT_ON_GENERATIVE and parts[1] == "generative":
            module, name = parts[:-1], parts[-1]
            if plain or name not in _declared_all(root, module):
                found.append((rel, ".".join(parts)))
    return found


def test_generative_is_reached_one_way_through_its_public_names():
    """The families built on the generative core use its public names; it never uses them."""
    assert _generative_imports(ROOT) == []


def test_the_generative_rule_catches_violations(tmp_path):
    pkg = tmp_path / "geolearn"
    for sub in ("generative", "ood"):
        (pkg / sub).mkdir(parents=True)
    (pkg / "generative" / "__init__.py").write_text('__all__ = ["GridVAE"]\n')
    (pkg / "generative" / "ddpm.py").write_text('__all__ = ["q_sample"]\n')
    (pkg / "generative" / "core.py").write_text("from ..ood import Detector\n")
    (pkg / "ood" / "mod.py").write_text(
        "from ..generative import GridVAE, _hidden\n"
        "from ..generative.ddpm import q_sample, time_grid\n"
        "from geolearn.generative._ddpm import q_sample\n"
        "import geolearn.generative.ddpm\n")
    assert _generative_imports(pkg) == [
        ("generative/core.py", "geolearn.ood.Detector"),
        ("ood/mod.py", "geolearn.generative._hidden"),
        ("ood/mod.py", "geolearn.generative.ddpm.time_grid"),
        ("ood/mod.py", "geolearn.generative._ddpm.q_sample"),
        ("ood/mod.py", "geolearn.generative.ddpm"),
    ]


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
