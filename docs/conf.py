"""Sphinx configuration of the geolearn documentation.

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (add
``-D plot_gallery=0`` to skip running the gallery). The API reference (``docs/api/``) is
written at build time from each subpackage's ``__all__`` (see ``apigen.py``).

Intersphinx links to numpy, scipy, scikit-learn, torch and skorch need the network, so the
inventories are fetched only when ``GEOLEARN_DOCS_INTERSPHINX=1`` is set: an offline build
(CI has no internet) must not fail on an unreachable inventory under ``-W``.
"""

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))  # this checkout's geolearn, not an installed copy
sys.path.insert(0, str(DOCS))
sys.path.insert(0, str(DOCS / "_ext"))  # codelinks: inline code names -> API pages

import geolearn  # noqa: E402
from apigen import user_guide_pages, write_api_pages  # noqa: E402

# The gallery runs on the CPU with a non-interactive backend.
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("MPLBACKEND", "Agg")

project = "geolearn"
author = "the geolearn developers"
copyright = "the geolearn developers"
release = version = geolearn.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "codelinks",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip", "auto_examples/*.json"]
templates_path = ["_templates"]

write_api_pages(DOCS)
autosummary_generate = True
# each object's page links to its family's user-guide page (see _templates/object.rst)
autosummary_context = {"user_guide": user_guide_pages(DOCS)}
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"  # numpydoc's Parameters sections already give the types
numpydoc_show_class_members = False  # autodoc's :members: lists them once
numpydoc_class_members_toctree = False

myst_heading_anchors = 3
# $...$ and $$...$$ are maths; amsmath environments (align, ...) may stand alone
myst_enable_extensions = ["dollarmath", "amsmath"]

intersphinx_mapping = {}
if os.environ.get("GEOLEARN_DOCS_INTERSPHINX") == "1":
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable/", None),
        "scipy": ("https://docs.scipy.org/doc/scipy/", None),
        "sklearn": ("https://scikit-learn.org/stable/", None),
        "torch": ("https://docs.pytorch.org/docs/stable/", None),
        "skorch": ("https://skorch.readthedocs.io/en/stable/", None),
    }

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "plot_gallery": "True",
    "download_all_examples": False,
    "reference_url": {"geolearn": None},
}

html_theme = "pydata_sphinx_theme"
html_title = f"geolearn {version}"
# The top bar lists the entries of index.md's toctree; the left bar of a page lists the pages
# of its entry: user_guide/index.md's toctree on every guide page, the families on API pages.
html_theme_options = {"navigation_with_keys": False, "header_links_before_dropdown": 6}


def _skip_metadata_requests(app, what, name, obj, skip, options):
    """Skip scikit-learn's generated ``set_{fit,score,...}_request`` methods.

    scikit-learn writes them on every estimator for metadata routing; their docstrings are
    scikit-learn's and cross-reference its own glossary (``metadata_routing``,
    ``meta-estimator``), which do not exist here: third-party text, not ours to fix.
    """
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return skip


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_requests)
