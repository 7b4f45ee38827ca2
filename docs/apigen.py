"""Write the API reference from the package's ``__all__`` lists (run by ``conf.py`` at build time).

One page per family (``geolearn.<sub>``) and one for ``geolearn.exceptions``, listing every
name of its ``__all__`` and then the names that only its public submodules
(``geolearn.<sub>.metrics`` and the like) export. A new public name therefore appears in the
docs with no edit here. ``tests/test_docs.py`` imports this module to check that every public
name is listed.
"""

import importlib
import inspect
import pkgutil
from pathlib import Path

import geolearn

# The families, then the public modules that are not one (the warnings, which every family
# emits): each gets an API page.
API_MODULES = [*geolearn.__all__, "exceptions"]
# The user-guide page of each (datasets and warnings are described with the adapter layer).
USER_GUIDE = {sub: f"user_guide/{sub}" for sub in geolearn.__all__} | {
    "datasets": "user_guide/models", "exceptions": "user_guide/models"}


def user_guide_pages(docs_dir):
    """Return ``{family: docname}`` for the families that have a user-guide page."""
    return {sub: page for sub, page in USER_GUIDE.items()
            if (Path(docs_dir) / f"{page}.md").exists()}


def public_modules(sub):
    """Return ``[(module name, names)]`` for ``geolearn.<sub>`` and its public submodules.

    A submodule's names already exported by the family are not repeated.
    """
    family = importlib.import_module(f"geolearn.{sub}")
    # a submodule named in __all__ (``riemannian.analytic``) gets its own section below
    names = [n for n in family.__all__ if not inspect.ismodule(getattr(family, n))]
    out = [(family.__name__, names)]
    seen = set(family.__all__)
    for info in pkgutil.iter_modules(getattr(family, "__path__", [])):  # a module has none
        if info.name.startswith("_") or info.name == "__main__":
            continue
        mod = importlib.import_module(f"{family.__name__}.{info.name}")
        names = [n for n in getattr(mod, "__all__", []) if n not in seen]
        if names:
            out.append((mod.__name__, names))
            seen.update(names)
    return out


def _page(sub, user_guide):
    family = importlib.import_module(f"geolearn.{sub}")
    title = f"``geolearn.{sub}``"
    lines = [title, "=" * len(title), ""]
    summary = (family.__doc__ or "").strip().split("\n\n")[0]
    if summary:
        lines += [summary, ""]
    if user_guide:
        lines += [f"User guide: :doc:`/{user_guide}`.", ""]
    for modname, names in public_modules(sub):
        if modname != family.__name__:
            lines += [f"``{modname}``", "-" * (len(modname) + 4), ""]
        lines += [f".. currentmodule:: {modname}", "", ".. autosummary::",
                  "   :toctree: generated/", "   :template: object.rst", ""]
        lines += [f"   {name}" for name in names] + [""]
    return "\n".join(lines)


def api_pages(docs_dir):
    """Return ``{relative path: rst text}`` of the API reference (index and one page per family)."""
    docs_dir = Path(docs_dir)
    pages = {}
    index = ["API reference", "=============", "",
             "Every public name of each family, generated from its ``__all__``.", "",
             ".. toctree::", "   :maxdepth: 1", ""]
    guides = user_guide_pages(docs_dir)
    for sub in API_MODULES:
        pages[f"api/{sub}.rst"] = _page(sub, guides.get(sub))
        index.append(f"   {sub}")
    pages["api/index.rst"] = "\n".join(index) + "\n"
    return pages


def write_api_pages(docs_dir):
    """Write :func:`api_pages` under ``docs_dir``, touching only files whose text changed.

    Stubs that autosummary generated for names no longer public are removed.
    """
    public = {f"{mod}.{name}.rst" for sub in API_MODULES
              for mod, names in public_modules(sub) for name in names}
    for stub in (Path(docs_dir) / "api" / "generated").glob("*.rst"):
        if stub.name not in public:
            stub.unlink()
    for rel, text in api_pages(docs_dir).items():
        path = Path(docs_dir) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
