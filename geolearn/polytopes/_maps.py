"""Bit strings, local affine maps and H-representations of a :class:`ReLUNet` (float64)."""

import numpy as np
import torch

from .._utils import iter_batches, thread_map
from ._conv import ConvReLUNet, conv_forward_bits, conv_local_maps


def _layer_slices(net):
    edges = np.cumsum((0, *net.hidden_sizes))
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:])]


def forward_bits(net, X, *, device="cpu", batch_size=8192, n_jobs=None):
    """Bit strings and pre-activations of ``X`` (float64; a unit exactly at 0 is off).

    Batches run through ``thread_map``: in ``n_jobs`` threads, one torch (and, with more
    than one worker, one BLAS) thread each; each batch writes its own rows.

    Returns
    -------
    bits : ndarray of shape (n, h), bool
    z : ndarray of shape (n, h)
        Pre-activations ``z_ij(x)``, layer-major.
    logits : ndarray of shape (n, o)
    """
    if isinstance(net, ConvReLUNet):
        return conv_forward_bits(net, X, batch_size=batch_size, n_jobs=n_jobs)
    n, h = len(X), net.n_hidden_units
    bits, z_all, out = np.empty((n, h), bool), np.empty((n, h)), np.empty((n, net.n_outputs))
    slices = _layer_slices(net)
    if torch.device(device).type == "cpu":  # numpy: no per-call torch overhead on small batches
        def batch(sl):
            u = np.asarray(X[sl], float)
            for W, b, ls in zip(net.weights[:-1], net.biases[:-1], slices):
                z_all[sl, ls] = u @ W.T + b
                u = np.maximum(z_all[sl, ls], 0)
            out[sl] = u @ net.weights[-1].T + net.biases[-1]
    else:
        params = net.torch_params(device)

        @torch.no_grad()
        def batch(sl):
            u = torch.as_tensor(X[sl], dtype=torch.float64, device=device)
            for (W, b), ls in zip(params[:-1], slices):
                z = u @ W.T + b
                z_all[sl, ls] = z.cpu().numpy()
                u = torch.relu(z)
            W, b = params[-1]
            out[sl] = (u @ W.T + b).cpu().numpy()
    thread_map(batch, iter_batches(n, batch_size), n_jobs)
    np.greater(z_all, 0, out=bits)
    return bits, z_all, out


def _recurrence(params, slices, patterns):
    """Yield ``(What_i, bhat_i)`` per hidden layer for a batch of patterns, then the output map.

    Works on numpy arrays and torch tensors alike; the first layer's map is
    shared by all patterns (a leading axis of size 1 that broadcasts).
    """
    What, bhat = params[0][0][None], params[0][1][None, :, None]
    for i in range(1, len(params)):
        yield What, bhat[..., 0]
        W, b = params[i]
        Ws = W[None] * patterns[:, None, slices[i - 1]]  # W_i D_{i-1}
        What, bhat = Ws @ What, Ws @ bhat + b[:, None]
    yield What, bhat[..., 0]


def _params(net, device):
    """Weights as numpy arrays (CPU: no torch overhead) or float64 tensors on ``device``."""
    if torch.device(device).type == "cpu":
        return list(zip(net.weights, net.biases)), np.asarray
    return net.torch_params(device), lambda a: torch.as_tensor(a, device=device)


def local_maps(net, patterns, *, device="cpu", batch_size=8192, row_norms=False):
    """Affine maps ``G(x) = W_s x + b_s`` of the regions with the given bit strings.

    Parameters
    ----------
    net : ReLUNet
    patterns : ndarray of shape (R, h), bool
    row_norms : bool, default=False
        Also return ``||row k of What||`` per region, the scale that turns
        a pre-activation into a distance to the unit's hyperplane.

    Returns
    -------
    W : ndarray of shape (R, o, m)
    b : ndarray of shape (R, o)
    norms : ndarray of shape (R, h), only if ``row_norms``
    """
    if isinstance(net, ConvReLUNet):
        return conv_local_maps(net, patterns, batch_size=batch_size, row_norms=row_norms)
    params, to_array = _params(net, device)
    slices = _layer_slices(net)
    R, h, m, o = len(patterns), net.n_hidden_units, net.n_inputs, net.n_outputs
    W_out, b_out = np.empty((R, o, m)), np.empty((R, o))
    norms = np.empty((R, h))
    # memory: batch * max_i h_i * m doubles
    step = max(1, int(batch_size * 64 // max(1, max(net.layer_sizes[1:]) * m)))
    with torch.no_grad():
        for sl in iter_batches(R, step):
            layers = list(_recurrence(params, slices, to_array(patterns[sl].astype(float))))
            if row_norms:
                for (What, _), ls in zip(layers[:-1], slices):
                    norms[sl, ls] = _to_numpy((What * What).sum(-1)) ** 0.5
            W_out[sl], b_out[sl] = _to_numpy(layers[-1][0]), _to_numpy(layers[-1][1])
    return (W_out, b_out, norms) if row_norms else (W_out, b_out)


def _to_numpy(a):
    return a.cpu().numpy() if isinstance(a, torch.Tensor) else a


def hrep(net, pattern):
    """H-representation ``P(s) = {x : A x <= c}`` of one region (paper 1, eq. 5).

    Row ``k`` belongs to hidden unit ``k``; on units give ``-z_k(x) <= 0``,
    off units ``z_k(x) <= 0``.

    Returns
    -------
    A : ndarray of shape (h, m)
    c : ndarray of shape (h,)
    """
    pattern = np.asarray(pattern, bool)
    hidden = list(_recurrence(list(zip(net.weights, net.biases)), _layer_slices(net),
                              pattern[None].astype(float)))[:-1]
    if not hidden:
        return np.zeros((0, net.n_inputs)), np.zeros(0)
    What = np.concatenate([W[0] for W, _ in hidden])
    bhat = np.concatenate([b[0] for _, b in hidden])
    sign = np.where(pattern, -1.0, 1.0)
    return sign[:, None] * What, -sign * bhat


def pack(bits):
    """Rows of a bool array as hashable bytes."""
    return [row.tobytes() for row in np.packbits(bits, axis=1)]


def unique_patterns(bits):
    """Distinct rows of ``bits`` (in order of first appearance), each row's label, the counts."""
    n, h = bits.shape
    if h == 0:
        return np.zeros((min(n, 1), 0), bool), np.zeros(n, int), np.array([n] if n else [])
    _, first, inverse, counts = np.unique(np.packbits(bits, axis=1), axis=0, return_index=True,
                                          return_inverse=True, return_counts=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return bits[first[order]], rank[inverse.ravel()], counts[order]
