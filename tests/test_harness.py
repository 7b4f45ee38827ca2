"""The shared harnesses must themselves catch what they are meant to catch."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.decomposition import PCA
from sklearn.utils.validation import check_is_fitted, validate_data

from benchmarks._runner import compare, timeit
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle


class _Lax(TransformerMixin, BaseEstimator):
    """Accepts NaN and any shape: the harness must flag it."""

    def fit(self, X, y=None):
        self.mean_ = np.nanmean(np.asarray(X, dtype=float))
        return self

    def transform(self, X):
        return np.asarray(X, dtype=float) - self.mean_


class _Random(TransformerMixin, BaseEstimator):
    """Ignores random_state: refits differ, which the integration check must catch."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y=None):
        X = validate_data(self, X)
        self.w_ = np.random.rand(X.shape[1])
        return self

    def transform(self, X):
        check_is_fitted(self)
        return validate_data(self, X, reset=False) * self.w_


X = np.random.RandomState(0).rand(20, 4)


def test_bad_input_helper_passes_a_strict_estimator():
    check_bad_inputs(PCA(2), X, cases=("nan", "inf", "ndim", "unfitted"))


@pytest.mark.parametrize("case", ["nan", "inf"])
def test_bad_input_helper_catches_a_lax_estimator(case):
    with pytest.raises(pytest.fail.Exception):
        check_bad_inputs(_Lax(), X, cases=(case,))


def test_integration_helper_passes_a_good_estimator():
    search = check_pipeline_gridsearch_pickle(PCA(), X, param_grid={"n_components": [1, 2]})
    assert search.best_params_["n_components"] in (1, 2)


def test_integration_helper_catches_irreproducible_fits():
    with pytest.raises(AssertionError, match="differs|changes"):
        check_pipeline_gridsearch_pickle(_Random(), X, param_grid={"alpha": [1.0]})


def test_benchmark_runner_reports_a_ratio(capsys):
    t = timeit(lambda: sum(range(1000)), repeat=3)
    assert t > 0
    ours, peer, ratio = compare("toy", lambda: None, lambda: sum(range(20000)), repeat=3)
    assert ratio == pytest.approx(peer / ours)
    assert "toy, ours=" in capsys.readouterr().out


def test_demo_sections_have_a_title_and_run():
    from geolearn.demo.__main__ import sections

    mods = sections()
    assert any(m.__name__.endswith(".models") for m in mods)
    for mod in mods:
        assert isinstance(mod.TITLE, str) and callable(mod.run)


def test_demo_runs_the_adapter_section(tmp_path, capsys):
    from geolearn.demo.__main__ import main

    main(["--out", str(tmp_path), "--only", "models"])
    out = capsys.readouterr().out
    assert "max |torch - predict_proba|" in out and "done in" in out


def test_bench_contention_passes_each_quick_script_flags_it_reads():
    # a renamed script or a lost flag would only fail minutes into the --benches table
    from pathlib import Path

    from benchmarks.bench_contention import QUICK_BENCHES

    here = Path(__file__).resolve().parent.parent / "benchmarks"
    for script, (args, _) in QUICK_BENCHES.items():
        source = (here / script).read_text()
        for flag in args.split():
            assert f'"{flag}"' in source, f"{script} does not read {flag}"


def test_bench_contention_skips_a_script_whose_peer_is_missing(monkeypatch, capsys):
    import importlib.util

    from benchmarks import bench_contention

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torchvision" else find_spec(name, *a))
    monkeypatch.setattr(bench_contention, "time_script", lambda *a: pytest.fail("ran"))
    bench_contention.main(["--benches", "bench_torchvision.py"])
    assert "bench_torchvision.py --quick skipped: torchvision is not installed" in " ".join(
        capsys.readouterr().out.split())


def test_bench_contention_reports_a_failed_script_and_goes_on(monkeypatch, capsys):
    import subprocess

    from benchmarks import bench_contention

    def time_script(script, args, k):
        if script == "bench_models.py":
            raise subprocess.CalledProcessError(1, script)
        return 1.0 + k, 1.0

    monkeypatch.setattr(bench_contention, "time_script", time_script)
    bench_contention.main(["--benches", "bench_models.py", "bench_diffeo.py"])
    out = capsys.readouterr().out
    assert "bench_models.py" in out and "failed (exit status 1)" in out
    assert any(line.startswith("bench_diffeo.py --quick") and "2.00" in line
               for line in out.splitlines())
