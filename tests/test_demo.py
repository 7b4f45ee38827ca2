"""``python -m geolearn.demo``: the command line, the stated times, quick sections."""

import inspect
import re

import pytest
import torch

from geolearn.demo.__main__ import main, sections

NAMES = [m.__name__.rsplit(".", 1)[1] for m in sections()]


def test_every_section_states_its_quick_and_full_times():
    for mod in sections():
        quick, full = mod.SECONDS
        assert 0 < quick <= full, mod.__name__
        assert "full" in inspect.signature(mod.run).parameters, mod.__name__
    # the quick default fits in a minute on two idle cores (the times are measured ones)
    assert sum(mod.SECONDS[0] for mod in sections()) < 60


def test_list_names_every_section_and_runs_none(capsys):
    main(["--list"])
    out = capsys.readouterr().out
    listed = [line.split()[0] for line in out.splitlines()[1:]]
    assert listed == NAMES
    assert "done in" not in out


def test_unknown_section_is_a_clear_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--only", "rdm", "nope"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unknown section(s) nope" in err and "rdm" in err and "--list" in err


def test_only_runs_the_named_sections_in_quick_mode_on_one_thread(tmp_path, capsys):
    threads = torch.get_num_threads()
    main(["--out", str(tmp_path), "--no-plots", "--only", "subspaces", "rdm"])
    out = capsys.readouterr().out
    assert re.search(r"2 section\(s\), quick mode: about \d+ s on two idle cores", out)
    assert "--full takes about" in out
    # in the package's order, each header with its expected time, and nothing else run
    assert re.findall(r"^\[(\d)/2\] (\w+):.*\(about \d+ s\)$", out, re.MULTILINE) == [
        ("1", "rdm"), ("2", "subspaces")]
    assert "MM iterations (majorise-minimise" in out
    assert not list(tmp_path.iterdir())  # --no-plots
    assert torch.get_num_threads() == threads  # the demo's one thread is given back


@pytest.mark.slow
def test_the_whole_quick_demo_runs_with_plots(tmp_path, capsys):
    main(["--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert f"[{len(NAMES)}/{len(NAMES)}]" in out and "done in" in out
    assert {"polytopes_partition.png", "invariance_saliency_orbit_DA.png", "disentanglement.png",
            "subspaces.png", "diffeo_grid.png"} <= {p.name for p in tmp_path.iterdir()}
