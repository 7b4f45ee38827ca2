"""Demo section: the manifold decomposition of adversarial risk on the paper's circle."""

from ._plots import headless_pyplot

TITLE = ("Manifold risk decomposition: adversarial risk <= standard + normal + in-manifold (2 eps) "
         "+ NNR, on the circle")
SECONDS = (3, 3)  # quick, --full: measured CPU seconds (one thread; the idle wall time)


def circle_mlp():
    """The paper's two-layer network for the circle: 2-64-64-2, ReLU."""
    import torch

    return torch.nn.Sequential(torch.nn.Linear(2, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                               torch.nn.ReLU(), torch.nn.Linear(64, 2))


def circle_classifier(boundary="double", *, n_samples=1000, max_epochs=1000, seed=0, **params):
    """The paper's classifier ``f`` trained on the circle, and a test set of the same size.

    Returns ``(clf, X_test, y_test)``: a fitted
    :class:`~geolearn.adversarial.ManifoldAdversarialClassifier` (full-batch SGD, lr 0.1, the
    paper's settings; ``params`` such as ``adversary`` override them) trained on
    ``make_circle_classification(n_samples, boundary, random_state=seed)``, and a test set
    drawn with ``random_state=seed + 1`` (float32, as the model sees it).
    """
    import numpy as np

    from geolearn._utils import torch_threads
    from geolearn.adversarial import ManifoldAdversarialClassifier
    from geolearn.datasets import make_circle_classification

    X, y = make_circle_classification(n_samples, boundary=boundary, random_state=seed)
    X_te, y_te = make_circle_classification(n_samples, boundary=boundary, random_state=seed + 1)
    with torch_threads(1):  # a small MLP: one thread is fastest
        clf = ManifoldAdversarialClassifier(circle_mlp, max_epochs=max_epochs,
                                            random_state=seed, **params).fit(X, y)
    return clf, X_te.astype(np.float32), y_te


def _stop_at_training_accuracy(accuracy=0.99, min_epochs=20):
    """A skorch callback ending training at ``accuracy`` after ``min_epochs`` (the paper's rule)."""
    from skorch.callbacks import Callback

    class StopAtTrainingAccuracy(Callback):
        def on_epoch_end(self, net, **kwargs):
            row = net.history[-1]
            if row["epoch"] >= min_epochs and row["train_acc"] >= accuracy:
                raise KeyboardInterrupt  # skorch's way to end training (as EarlyStopping)

    return StopAtTrainingAccuracy()


def digits_setup(seed=0):
    """The reduced Table 3 on scikit-learn's digits: data, autoencoder manifold, classifier.

    Digits scaled to [0, 1] (D = 64), a stratified 75/25 split; a plain autoencoder
    64-128-10-128-64 (:class:`~geolearn.meta_learning.MetaManifoldAutoencoder` without
    episodes: summed MSE, Adam 1e-3, batch 128, 150 epochs) whose decoder, ended by a
    sigmoid, spans a :class:`~geolearn.manifold.LatentManifold`; an MLP 64-128-128-10
    (ReLU, Adam 1e-3, batch 64) trained until 99% training accuracy after 20 epochs.

    Returns a dict with ``X_train, X_test, y_train, y_test, autoencoder, classifier,
    manifold``.
    """
    import numpy as np
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from skorch import NeuralNetClassifier
    from skorch.callbacks import EpochScoring

    from geolearn._utils import torch_threads
    from geolearn.manifold import LatentManifold
    from geolearn.meta_learning import MetaManifoldAutoencoder

    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, stratify=y,
                                              random_state=seed)
    with torch_threads(1):
        ae = MetaManifoldAutoencoder(
            n_latent=10, architecture="mlp", hidden_layer_sizes=(128,), episodic_strategy=None,
            loss="mse", reduction="sum", lr=1e-3, batch_size=128,
            max_epochs=150 * -(-len(X_tr) // 128), log_every=100, random_state=seed).fit(X_tr)
        torch.manual_seed(seed)
        clf = NeuralNetClassifier(
            torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10)),
            criterion=torch.nn.CrossEntropyLoss, optimizer=torch.optim.Adam, lr=1e-3,
            batch_size=64, max_epochs=200, train_split=None, verbose=0,
            callbacks=[("train_acc", EpochScoring("accuracy", on_train=True, name="train_acc",
                                                  lower_is_better=False)),
                       _stop_at_training_accuracy()]).fit(X_tr, y_tr)
    # the estimator applies a sigmoid to its decoder's logits: so does the manifold
    manifold = LatentManifold(ae.module_.encoder,
                              torch.nn.Sequential(ae.module_.decoder, torch.nn.Sigmoid()))
    return {"X_train": X_tr, "X_test": X_te, "y_train": y_tr, "y_test": y_te,
            "autoencoder": ae, "classifier": clf, "manifold": manifold}


def run(outdir=None, *, full=False):
    import warnings

    import numpy as np
    import torch

    from geolearn.adversarial import risk_curve
    from geolearn.manifold import SphereManifold

    eps = (0.05, 0.1, 0.2)
    print("  training the paper's MLP on the double-boundary circle and attacking it at "
          f"eps = {', '.join(map(str, eps))} ...")
    # Adam reaches the paper's SGD accuracy in far fewer epochs: a few seconds
    clf, X, y = circle_classifier("double", n_samples=500, max_epochs=100,
                                  optimizer=torch.optim.Adam, lr=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's own deprecation notes
        results = risk_curve(clf, X, y, manifold=SphereManifold(), epsilons=eps, nnr="sample",
                             random_state=0)
    print("  double-boundary circle, 500 test points; the paper's MLP (Adam, 100 epochs). Risks "
          "are fractions of test points; RHS: the bound's right-hand side; R_in at 2 eps; "
          "Bayes R_adv = (4/pi) arcsin eps. R_std: misclassified; R_nor / R_in: attackable "
          "along the normal / within the circle; NNR: attackable only along the normal of a "
          "nearby point of the circle. See "
          "docs/user_guide/manifold_risk.md.")
    for r in results:
        bayes = 4 / np.pi * np.arcsin(r.epsilon)
        print(f"  eps {r.epsilon:4}: R_adv {r.adv_risk:.3f} (Bayes {bayes:.3f}) <= RHS "
              f"{r.rhs:.3f} = R_std {r.std_risk:.3f} + R_nor {r.normal_risk:.3f} + R_in "
              f"{r.in_manifold_risk:.3f} + NNR {r.nnr:.3f}; bound holds: {r.bound_holds}")
    plt = headless_pyplot(outdir)
    if plt is not None:
        from pathlib import Path

        from geolearn.plotting import AdversarialExamplesDisplay, RiskCurveDisplay

        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
        RiskCurveDisplay.from_results(results, ax=axes[0])
        axes[0].plot(eps, 4 / np.pi * np.arcsin(eps), ":", color="C3", label="Bayes $R_{adv}$")
        axes[0].legend(fontsize="small")
        AdversarialExamplesDisplay.from_estimator(clf, X, y, manifold=SphereManifold(),
                                                  epsilon=0.2, nnr="sample", random_state=0,
                                                  ax=axes[1])
        axes[1].set_title("adversarial examples at eps = 0.2")
        fig.tight_layout()
        fig.savefig(Path(outdir) / "manifold_risk_circle.png", dpi=100)
        plt.close(fig)
