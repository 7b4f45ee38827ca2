"""Demo section: one adversarial detector shared by two digits networks through a linear map.

Also holds the digits CNN / FFNN pair of the linear-mapping paper's MNIST
experiment at 8x8 scale (both with 128-d penultimate layers), reused by the
reproduction tests, the benchmark and the gallery example.
"""

from ._plots import headless_pyplot

TITLE = "Representations: a detector in one network's space screens another's adversarial inputs"
SECONDS = (1, 2)  # quick, --full: measured CPU seconds (one thread; the idle wall time)


def digits_cnn():
    """Conv(1->16)-ReLU-Conv(16->32)-ReLU-MaxPool-Flatten-Linear(512->128)-ReLU-Linear(128->10)."""
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(512, 128), nn.ReLU(),
        nn.Linear(128, 10),
    )


def digits_ffnn():
    """Flatten-Linear(64->256)-ReLU-Linear(256->128)-ReLU-Linear(128->10)."""
    from torch import nn

    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(64, 256), nn.ReLU(),
        nn.Linear(256, 128), nn.ReLU(),
        nn.Linear(128, 10),
    )


def train_digits_net(builder, X, y, *, seed=0, max_epochs=40, device="cpu"):
    """Train ``builder()`` on digits images with skorch (Adam, lr 1e-3, batch 64, shuffled)."""
    import torch
    from skorch import NeuralNetClassifier

    torch.manual_seed(seed)
    net = NeuralNetClassifier(
        builder(), criterion=torch.nn.CrossEntropyLoss, optimizer=torch.optim.Adam, lr=1e-3,
        batch_size=64, max_epochs=max_epochs, train_split=None, iterator_train__shuffle=True,
        device=device, verbose=0,
    )
    return net.fit(X, y)


def digits_experiment_data(seed=0):
    """Digits as (n, 1, 8, 8) images in [0, 1], split 50/50 (stratified) into train and test."""
    from sklearn.model_selection import train_test_split

    from geolearn.datasets import load_digits_images

    X, y = load_digits_images(return_X_y=True)
    return train_test_split(X, y, test_size=0.5, stratify=y, random_state=seed)


def run(outdir=None, *, full=False):
    from geolearn.representations import cross_model_detection

    X_train, X_test, y_train, y_test = digits_experiment_data(seed=0)
    epochs = 10 if full else 4
    nets = {}
    for name, builder in (("CNN", digits_cnn), ("FFNN", digits_ffnn)):
        print(f"  training the digits {name} ({epochs} epochs) ...")
        nets[name] = train_digits_net(builder, X_train, y_train, seed=0, max_epochs=epochs)
    print("  FGSM (one gradient-sign step, eps 0.2) attacks each net; a detector of those "
          "inputs is trained in the CNN's penultimate space, and the FFNN's space is mapped "
          "into it by a linear map (R^2: how well the map fits; AUROC: 1 = perfect detection, "
          "0.5 = chance)")
    res = cross_model_detection(nets, "CNN", X_test, y_test, epsilon=0.2, random_state=0)
    src = res.sources["FFNN"]
    print(f"  clean / FGSM accuracy: CNN {res.accuracy_clean['CNN']:.2f} / "
          f"{res.accuracy_adv['CNN']:.2f}, FFNN {res.accuracy_clean['FFNN']:.2f} / "
          f"{res.accuracy_adv['FFNN']:.2f}")
    print(f"  detector in CNN space: native AUROC {res.auroc_native:.3f}; FFNN mapped in "
          f"(R^2 {src['r2']:.2f}): AUROC {src['auroc_mapped']:.3f}")
    plt = headless_pyplot(outdir)
    if plt is not None:
        from pathlib import Path

        from geolearn.plotting import CanonicalSpaceDisplay

        disp = CanonicalSpaceDisplay.from_results(res)
        disp.figure_.savefig(Path(outdir) / "representations_canonical_space.png", dpi=100)
        plt.close(disp.figure_)
