"""CIDM fit and out-of-sample transform against pyDiffMap (and datafold where it imports).

Data: random points on the flat (Clifford) torus in R^4, 20 eigenpairs, the kNN
kernel with k = ceil(ln(N)^2) neighbours for every method. Peers (the ``bench``
extra): ``pydiffmap`` (with ``numexpr``) as ``DiffusionMap.from_sklearn(alpha=1,
epsilon="bgh", k=k)``; ``datafold`` as ``PCManifold.optimize_parameters`` +
``GaussianKernel`` with cut-off + ``DiffusionMaps``.

Run::

    PYTHONPATH=<peers> python -m benchmarks.bench_manifold --n 5000 20000 --n-new 20000
"""

import argparse
import math

from benchmarks._runner import compare, header
from geolearn.datasets import make_torus_points
from geolearn.manifold import CIDM

N_EIGENPAIRS = 20


def _pydiffmap(k):
    from pydiffmap.diffusion_map import DiffusionMap

    return DiffusionMap.from_sklearn(alpha=1.0, epsilon="bgh", k=k, n_evecs=N_EIGENPAIRS - 1)


def _datafold():
    """datafold's DiffusionMaps, or the reason it cannot be imported here."""
    try:
        from datafold.dynfold import DiffusionMaps
        from datafold.pcfold import GaussianKernel, PCManifold
    except Exception as exc:  # an ImportError of datafold's own imports, e.g. of old sklearn
        return None, f"{type(exc).__name__}: {exc}"

    def fit(X):
        pcm = PCManifold(X)
        pcm.optimize_parameters()
        return DiffusionMaps(kernel=GaussianKernel(epsilon=pcm.kernel.epsilon),
                             n_eigenpairs=N_EIGENPAIRS,
                             dist_kwargs={"cut_off": pcm.cut_off}).fit(pcm)

    return fit, None


def main(sizes, n_new, repeat):
    header("CIDM (geolearn.manifold) vs pyDiffMap / datafold: fit and Nyström transform")
    datafold_fit, why = _datafold()
    if why:
        print(f"# datafold skipped: {why}")
    X_new = make_torus_points(n_new, R=1.0, r=1.0, random_state=1)
    for n in sizes:
        X = make_torus_points(n, R=1.0, r=1.0, random_state=0)
        k = math.ceil(math.log(n) ** 2)
        ours = CIDM(n_eigenpairs=N_EIGENPAIRS, n_neighbors=k, random_state=0)
        peer = _pydiffmap(k)
        compare(f"fit n={n} k={k} vs pydiffmap", lambda: ours.fit(X), lambda: peer.fit(X),
                repeat=repeat, warmup=0)
        compare(f"transform {n_new} new points, n={n}, vs pydiffmap",
                lambda: ours.transform(X_new), lambda: peer.transform(X_new),
                repeat=repeat, warmup=0)
        if datafold_fit is not None:
            fitted = {}

            def fit_df():
                fitted["dm"] = datafold_fit(X)

            compare(f"fit n={n} vs datafold", lambda: ours.fit(X), fit_df, repeat=repeat,
                    warmup=0)
            compare(f"transform {n_new} new points, n={n}, vs datafold",
                    lambda: ours.transform(X_new), lambda: fitted["dm"].transform(X_new),
                    repeat=repeat, warmup=0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--n-new", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    main(args.n, args.n_new, args.repeat)
