"""Time datafold's DiffusionMaps on arrays saved by ``bench_manifold`` (run in datafold's own env).

datafold 2.0 needs numpy < 2 and scikit-learn < 1.3, so it lives in a separate
virtual environment; ``bench_manifold`` runs this file with that environment's
interpreter on the same data, in the same benchmark run, and reads one JSON line
back. Settings as in the spec: ``PCManifold.optimize_parameters`` then a
Gaussian kernel with the tuned epsilon and cut-off, then ``DiffusionMaps``.

Usage: ``<datafold python> benchmarks/_datafold_peer.py data.npz n_eigenpairs [repeats]``
(the transform time is the best of ``repeats`` calls, 1 by default).
"""

import json
import sys
import time

import numpy as np
from datafold.dynfold import DiffusionMaps
from datafold.pcfold import GaussianKernel, PCManifold


def main(path, n_eigenpairs, repeats=1):
    data = np.load(path)
    X, X_new = data["X"], data["X_new"]
    t0 = time.perf_counter()
    pcm = PCManifold(X)
    pcm.optimize_parameters(random_state=0)
    kernel = GaussianKernel(epsilon=pcm.kernel.epsilon, distance={"cut_off": pcm.cut_off})
    dmap = DiffusionMaps(kernel=kernel, n_eigenpairs=n_eigenpairs).fit(pcm)
    t1 = time.perf_counter()
    transform = []
    for _ in range(repeats):
        t2 = time.perf_counter()
        dmap.transform(X_new)
        transform.append(time.perf_counter() - t2)
    print(json.dumps({"fit": t1 - t0, "transform": min(transform),
                      "eigenvalues": np.asarray(dmap.eigenvalues_)[:4].tolist()}))


if __name__ == "__main__":
    main(sys.argv[1], *map(int, sys.argv[2:4]))
