"""Distances between images and their inpaintings, on the [0, 1] data scale (LMD, 2.2.2)."""

import numpy as np
import torch
import torch.nn.functional as F

from ..models import as_model

#: Stabilisers of SSIM for data range 1 (Wang et al. 2004; skimage's K1 = 0.01, K2 = 0.03).
_C1, _C2 = 0.01**2, 0.03**2

_LPIPS_OFFLINE = (
    "distance='lpips' needs the optional 'lpips' package and its pretrained AlexNet weights "
    "(torchvision downloads them on first use, which cannot happen offline); install lpips "
    "and place the weights in torch's cache, or use distance='mse', 'ssim', 'feature' (with a "
    "feature_extractor) or a callable.")


def ssim_distance(X, Y, win_size=7):
    """``1 - SSIM(x, y)`` per image pair, SSIM with a uniform window, data range 1.

    The window is ``win_size`` x ``win_size`` (the largest odd size <= ``min(H, W)`` on
    smaller images), with sample covariances (``N / (N - 1)``); the SSIM map is averaged
    over the window positions inside the image and over channels: skimage's
    ``structural_similarity(x, y, data_range=1, win_size=7)`` per channel.

    Parameters
    ----------
    X, Y : tensor of shape (n, C, H, W)
        Images in [0, 1].
    win_size : int, default=7

    Returns
    -------
    d : float64 tensor of shape (n,)

    Examples
    --------
    >>> import torch
    >>> from geolearn.ood._distances import ssim_distance
    >>> X = torch.rand(2, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    >>> ssim_distance(X, X).tolist()
    [0.0, 0.0]
    """
    X, Y = X.double(), Y.double()
    w = min(win_size, X.shape[-2], X.shape[-1])
    w -= 1 - w % 2
    n_px = w * w
    cov_norm = n_px / (n_px - 1) if n_px > 1 else 1.0

    def pool(z):
        return F.avg_pool2d(z, w, stride=1)

    mx, my = pool(X), pool(Y)
    vx = cov_norm * (pool(X * X) - mx * mx)
    vy = cov_norm * (pool(Y * Y) - my * my)
    vxy = cov_norm * (pool(X * Y) - mx * my)
    ssim = ((2 * mx * my + _C1) * (2 * vxy + _C2)
            / ((mx * mx + my * my + _C1) * (vx + vy + _C2)))
    return 1 - ssim.mean(dim=(1, 2, 3))


def mse_distance(X, Y):
    """Mean over C, H, W of ``(x - y)^2`` (images on the [0, 1] scale), float64 ``(n,)``.

    Examples
    --------
    >>> import torch
    >>> from geolearn.ood._distances import mse_distance
    >>> mse_distance(torch.zeros(1, 1, 2, 2), torch.ones(1, 1, 2, 2)).tolist()
    [1.0]
    """
    return ((X.double() - Y.double()) ** 2).flatten(1).mean(1)


def cosine_distance(F1, F2):
    """``1 - <f1, f2> / (|f1| |f2|)`` per row of two feature arrays (flattened), float64.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.ood._distances import cosine_distance
    >>> cosine_distance(np.array([[1.0, 0.0]]), np.array([[0.0, 2.0]])).tolist()
    [1.0]
    """
    F1 = np.asarray(F1, dtype=np.float64).reshape(len(F1), -1)
    F2 = np.asarray(F2, dtype=np.float64).reshape(len(F2), -1)
    norms = np.linalg.norm(F1, axis=1) * np.linalg.norm(F2, axis=1)
    cos = np.einsum("ij,ij->i", F1, F2) / np.where(norms > 0, norms, 1.0)
    return 1 - cos


def lpips_model(device):
    """The AlexNet LPIPS model, or an ImportError explaining why it is unavailable offline."""
    try:
        import lpips
    except ImportError as exc:
        raise ImportError(_LPIPS_OFFLINE) from exc
    try:
        model = lpips.LPIPS(net="alex", verbose=False)
    except Exception as exc:  # a download attempted offline: URLError, OSError, ...
        raise ImportError(_LPIPS_OFFLINE) from exc
    return model.to(device).eval()


class ImageDistance:
    """``distance(u, u_rec)`` for one of the detector's ``distance`` settings.

    ``u`` and ``u_rec`` are ``(n, C, H, W)`` tensors on the [0, 1] scale; the result is a
    float64 numpy array ``(n,)``. Built once per ``fit`` (LPIPS loads its network then).
    """

    def __init__(self, distance, feature_extractor=None, device="cpu"):
        self.distance = distance
        self.device = device
        if distance == "lpips":
            self.model = lpips_model(device)
        elif distance == "feature":
            self.model = as_model(feature_extractor)

    def __call__(self, u, u_rec):
        d = self.distance
        if d == "mse":
            return mse_distance(u, u_rec).cpu().numpy()
        if d == "ssim":
            return ssim_distance(u, u_rec).cpu().numpy()
        if d == "lpips":
            def rgb(z):  # LPIPS takes RGB in [-1, 1]
                z = (2 * z - 1).float().to(self.device)
                return z.expand(-1, 3, -1, -1) if z.shape[1] == 1 else z

            out = self.model(rgb(u), rgb(u_rec))
            return out.reshape(len(u)).double().cpu().numpy()
        if d == "feature":
            feats = self.model.forward(torch.cat([u, u_rec]).float().cpu().numpy())
            return cosine_distance(feats[:len(u)], feats[len(u):])
        out = np.asarray(d(u.double().cpu().numpy(), u_rec.double().cpu().numpy()),
                         dtype=np.float64)
        if out.shape != (len(u),):
            raise ValueError(f"the distance callable must return one value per image, shape "
                             f"({len(u)},); got shape {out.shape}.")
        return out
