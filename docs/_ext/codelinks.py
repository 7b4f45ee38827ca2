"""Link inline code that names a documented geolearn object to its API page.

The user guide writes names as code (```DiffeoStability```, ```make_stability_scorer()```,
```CIDM.transform```, ```geolearn.diffeo```). Once every page is read, the Python domain
knows each documented object; this extension then turns each such literal into a link to it,
so the prose needs no roles, and a name that is no longer documented simply stays plain code
instead of breaking the ``-W`` build.

A short name exported by two families (``patch_attack`` is in ``geolearn.adversarial`` and
``geolearn.generative``) links to the family of the page it is written on, else to the family
that defines it.
"""

import importlib
import re
from collections import defaultdict

from docutils import nodes
from sphinx import addnodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

# a dotted name, optionally called with no arguments: `CIDM`, `CIDM.transform`, `deform()`
_NAME = re.compile(r"[A-Za-z_][\w.]*")
_LEAF_TYPES = {"class", "function", "exception", "data"}
_NO_LINK_INSIDE = (nodes.reference, addnodes.pending_xref, addnodes.desc_signature, nodes.title)


def _family(fullname):
    """``geolearn.<family>....`` -> ``<family>``."""
    return fullname.split(".")[1]


def _defined_in(fullname):
    """Return the module that defines the object ``fullname`` (``None`` if not importable)."""
    module, _, name = fullname.rpartition(".")
    try:
        return getattr(getattr(importlib.import_module(module), name), "__module__", None)
    except (ImportError, AttributeError):
        return None


def _collect_targets(app, env):
    """Map each way the guide writes a name to ``[(fullname, docname, anchor)]``.

    Classes and functions are found by their bare name and their full name; methods and
    attributes by ``Class.member`` and their full name; a family (``geolearn.diffeo``) and a
    public submodule (``geolearn.disentanglement.metrics``) by their dotted name.
    """
    targets = defaultdict(list)
    for fullname, entry in env.get_domain("py").objects.items():
        if not fullname.startswith("geolearn.") or entry.aliased:
            continue
        target = (fullname, entry.docname, entry.node_id)
        targets[fullname].append(target)
        parts = fullname.split(".")
        if entry.objtype in _LEAF_TYPES:
            targets[parts[-1]].append(target)
        elif entry.objtype in {"method", "attribute", "property", "classmethod",
                               "staticmethod"}:
            targets[".".join(parts[-2:])].append(target)
    for fullname in [name for name, hits in targets.items() if name == hits[0][0]]:
        family = ".".join(fullname.split(".")[:2])
        page = f"api/{_family(fullname)}"
        if page not in env.found_docs:
            continue
        targets.setdefault(family, [(family, page, "")])
        module = fullname.rpartition(".")[0]
        if module.count(".") == 2 and module not in targets:
            # a public submodule's section on its family's page
            targets[module] = [(module, page, nodes.make_id(module))]
    app.geolearn_code_targets = dict(targets)


def _choose(hits, docname):
    """Pick one target among ``hits`` for a literal written on ``docname``."""
    if len(hits) == 1:
        return hits[0]
    # user_guide/<family>, api/<family> or api/generated/geolearn.<family>.<name>
    page = docname.rpartition("/")[2]
    page_family = page.split(".")[1] if page.startswith("geolearn.") else page
    same_page = [h for h in hits if _family(h[0]) == page_family]
    if same_page:
        return same_page[0]
    defining = [h for h in hits
                if (_defined_in(h[0]) or "").startswith(h[0].rpartition(".")[0])]
    return (defining or sorted(hits))[0]


def _link_code(app, doctree, docname):
    targets = app.geolearn_code_targets
    for literal in list(doctree.findall(nodes.literal)):
        # already a link, or in a signature or a heading (whose links would clutter the TOC)
        if any(isinstance(a, _NO_LINK_INSIDE) for a in _ancestors(literal)):
            continue
        text = literal.astext().strip()
        name = text[:-2] if text.endswith("()") else text
        if not _NAME.fullmatch(name) or name not in targets:
            continue
        fullname, target_doc, anchor = _choose(targets[name], docname)
        if target_doc == docname:
            continue
        uri = app.builder.get_relative_uri(docname, target_doc)
        if anchor:
            uri += "#" + anchor
        new = literal.deepcopy()
        new["classes"] += ["xref", "py", "py-obj"]
        ref = nodes.reference("", "", new, internal=True, refuri=uri, reftitle=fullname)
        literal.replace_self(ref)
        app.geolearn_code_links += 1


def _ancestors(node):
    node = node.parent
    while node is not None:
        yield node
        node = node.parent


def _reset(app, env):
    """Once every page is read (each build), index the documented objects anew."""
    _collect_targets(app, env)
    app.geolearn_code_links = 0


def _report(app, exception):
    if exception is None:
        logger.info("codelinks: %d inline code names linked to the API reference",
                    getattr(app, "geolearn_code_links", 0))


def setup(app):
    app.connect("env-updated", _reset)
    app.connect("doctree-resolved", _link_code)
    app.connect("build-finished", _report)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
