"""The documentation's promises: numpydoc sections on every public object, an API page for every
public name, and references in ``docs/`` that point at files of the repository."""

import dataclasses
import importlib.util
import inspect
import re
from pathlib import Path

import pytest
from numpydoc.docscrape import ClassDoc, FunctionDoc

import geolearn

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _apigen():
    spec = importlib.util.spec_from_file_location("apigen", DOCS / "apigen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


apigen = _apigen()
PUBLIC = [(modname, name) for sub in geolearn.__all__
          for modname, names in apigen.public_modules(sub) for name in names]
CALLABLE = [(modname, name) for modname, name in PUBLIC
            if callable(getattr(importlib.import_module(modname), name))]


def _named_parameters(obj):
    """The named parameters a caller passes (not ``self``, not bare ``*args``/``**kwargs``)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]


def _sections(obj):
    doc = ClassDoc(obj, config={"show_class_members": False}) if inspect.isclass(obj) \
        else FunctionDoc(obj)
    documented = {name.strip() for p in doc["Parameters"] for name in p.name.split(",")}
    if dataclasses.is_dataclass(obj):  # a dataclass's fields are its parameters
        documented |= {name.strip() for p in doc["Attributes"] for name in p.name.split(",")}
    return doc, documented


@pytest.mark.parametrize("modname, name", CALLABLE, ids=[f"{m}.{n}" for m, n in CALLABLE])
def test_public_docstring_sections(modname, name):
    obj = getattr(importlib.import_module(modname), name)
    doc, documented = _sections(obj)
    missing = [p for p in _named_parameters(obj) if p not in documented]
    assert not missing, f"{modname}.{name}: parameters not in its Parameters section: {missing}"
    if not inspect.isclass(obj):
        assert doc["Returns"] or doc["Yields"] or doc["Raises"], \
            f"{modname}.{name} has no Returns (or Yields) section"
    assert any(">>>" in line for line in doc["Examples"]), \
        f"{modname}.{name} has no Examples section with a doctest"


def test_every_public_name_in_api_reference():
    pages = apigen.api_pages(DOCS)
    for sub in geolearn.__all__:
        assert f"   {sub}" in pages["api/index.rst"].splitlines()
        listed = set(re.findall(r"^   (\w+)$", pages[f"api/{sub}.rst"], flags=re.M))
        for modname, name in PUBLIC:
            if modname.split(".")[1] == sub:
                assert name in listed, f"{modname}.{name} missing from api/{sub}.rst"
    # the family's own names and its public submodules' names are all listed, once
    assert sum(len(re.findall(r"^   \w+$", pages[f"api/{s}.rst"], flags=re.M))
               for s in geolearn.__all__) == len(PUBLIC)


MARKDOWN = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")
# a repository path in code: `benchmarks/RESULTS.md`, `tests/helpers.py` (no placeholders)
CODE_PATH = re.compile(r"`([\w.-]+(?:/[\w.-]+)+\.(?:md|py|rst|toml|txt))`")


def _dead_references(path):
    text = path.read_text()
    dead = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a web address, or an anchor of this page
        if not (path.parent / target.split("#")[0]).exists():
            dead.append(target)
    for target in CODE_PATH.findall(text):
        if not (ROOT / target).exists() and not (path.parent / target).exists():
            dead.append(target)
    return dead


@pytest.mark.parametrize("path", MARKDOWN, ids=[str(p.relative_to(ROOT)) for p in MARKDOWN])
def test_docs_references_resolve(path):
    assert not _dead_references(path), f"{path.relative_to(ROOT)} refers to missing files"


def test_dead_reference_detected(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("[a](missing.md), [b](https://x.org), [c](#here), [d](here.md#part), "
                    "`benchmarks/nothing.md`, `../outside/notes.md`, `tests/test_docs.py`")
    (tmp_path / "here.md").write_text("")
    assert _dead_references(page) == ["missing.md", "benchmarks/nothing.md", "../outside/notes.md"]
