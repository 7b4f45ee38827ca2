"""Every ```python block of README.md runs as pasted, in a fresh interpreter.

A block must define everything it uses, print something, and run in well under a minute on
2 cores. All of them take about 40 s on an idle 2-core machine (4-13 s each, a fresh
interpreter's imports included), so they run in the fast suite.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.DOTALL)


def _param(i, block):
    first = next(line for line in block.splitlines()   # the first line past the imports
                 if line and not line.startswith(("import", "from", " ")))
    return pytest.param(block, id=f"block{i}:{first[:40]}")


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize("block", [_param(i, b) for i, b in enumerate(BLOCKS, 1)])
def test_readme_block_runs_as_pasted(block, tmp_path):
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    # a fresh interpreter in an empty directory: nothing defined, nothing on disk beforehand
    proc = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, env=env, check=False,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip(), "the block prints nothing"
    assert "\x1b[" not in proc.stdout, "the block prints coloured tables (verbose=0?)"
    # no warning for the reader to puzzle over (the package's, sklearn's convergence, ...)
    assert "Warning" not in proc.stderr, proc.stderr[-3000:]
