"""Demo section: the adapter layer on a digits MLP."""

import numpy as np

TITLE = "Adapter layer: one interface to torch, skorch and scikit-learn models"
SECONDS = (1, 1)  # quick, --full: measured CPU seconds (one thread; the idle wall time)


def run(outdir=None, *, full=False):
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from geolearn.datasets import load_digits_images
    from geolearn.models import as_model

    X, y = load_digits_images(return_X_y=True)
    X = X.reshape(len(X), -1)
    pipe = make_pipeline(StandardScaler(), MLPClassifier((32,), max_iter=60, random_state=0))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(X, y)
    m = as_model(pipe)
    err = np.abs(m.forward(X) - pipe.predict_proba(X)).max()
    J = m.jacobian(X[:200])
    print(f"  digits MLP pipeline -> torch ({m.kind}); layers: {', '.join(m.layer_names)}")
    print(f"  max |torch - predict_proba| = {err:.1e}; input Jacobians {J.shape}, "
          f"mean spectral norm {np.linalg.norm(J, ord=2, axis=(1, 2)).mean():.3f}")
