"""The code of ``docs/user_guide/own_models.md`` runs as written, section by section.

Each ``## `` section's python blocks run in order in one fresh namespace; a section whose code
imports an optional package that is absent is skipped.
"""

import importlib.util
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "user_guide" / "own_models.md"
SECTIONS = {title.strip(): body for title, body in
            re.findall(r"^## (.*?)\n(.*?)(?=^## |\Z)", PAGE.read_text(), flags=re.M | re.S)}


def test_the_page_has_its_sections():
    assert {"scikit-learn models and pipelines", "skorch nets and plain torch modules"} \
        <= set(SECTIONS)


@pytest.mark.parametrize("title", sorted(SECTIONS))
def test_section_code_runs(title):
    blocks = re.findall(r"```python\n(.*?)```", SECTIONS[title], flags=re.S)
    for package in ("torchvision",):
        if any(re.search(rf"^\s*(from|import) {package}\b", b, flags=re.M) for b in blocks) \
                and importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed")
    namespace = {"__name__": "own_models"}
    for code in blocks:
        exec(compile(code, str(PAGE), "exec"), namespace)  # noqa: S102  (the docs page)
