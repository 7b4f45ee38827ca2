"""Conv ReLU networks: bit strings, local affine maps, segments and 2-D slices (float64 torch).

A network of ``Conv2d``, ``ReLU``, ``MaxPool2d``, ``AvgPool2d``, ``Flatten``,
``Unflatten`` and ``Linear`` layers is piecewise affine like an MLP, on
regions fixed by the sign of every ReLU unit and the argmax of every max-pool
window (the input of a max-pool window is affine on a region, and the window's
output is its argmax entry). A bit string is the ReLU bits, layer-major, with,
at each max-pool layer, the one-hot argmax of every window (channel-major,
then window, then position in the window): a change of argmax flips two bits.
"""

import copy
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._utils import iter_batches, thread_map

CONV_LAYERS = (nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d, nn.Unflatten)
_AFFINE = (nn.Conv2d, nn.AvgPool2d, nn.Linear, nn.Flatten, nn.Unflatten, nn.Identity, nn.Dropout)
SUPPORTED = ("Conv2d", "ReLU", "MaxPool2d", "AvgPool2d", "Flatten", "Linear",
             "Unflatten (first layer)", "Identity", "Dropout")


@dataclass(frozen=True, eq=False)
class ConvReLUNet:
    """A conv ReLU network in canonical form: its layers as float64 torch modules in eval mode.

    Built by :func:`~geolearn.polytopes.as_relu_network` for networks with
    ``Conv2d``, pooling or ``Unflatten`` layers; the input is a flat row of
    ``n_inputs = prod(image_shape)`` features, folded into ``image_shape``.

    Attributes
    ----------
    layers : tuple of torch.nn.Module
        Float64 copies of the layers, a leading ``Unflatten`` dropped.
    image_shape : tuple of int
        ``(C, H, W)`` of the input.
    layer_sizes : tuple of int
        ``(m, bits of each ReLU and MaxPool2d layer..., o)``.
    block_names : tuple of str
        ``'relu{i}'`` or ``'maxpool{i}'`` (``i``: the layer's index) for each
        block of bits.
    n_inputs, n_outputs : int
    classes : ndarray or None
    output_activation : str or None

    Examples
    --------
    >>> from torch import nn
    >>> from geolearn.polytopes import as_relu_network
    >>> cnn = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
    ...                     nn.Linear(2, 1))
    >>> net = as_relu_network(cnn, image_shape=(1, 4, 4))
    >>> net.layer_sizes, net.block_names
    ((16, 8, 8, 1), ('relu1', 'maxpool2'))
    """

    layers: tuple
    image_shape: tuple
    layer_sizes: tuple
    block_names: tuple
    n_inputs: int
    n_outputs: int
    classes: object = None
    output_activation: object = None

    @property
    def hidden_sizes(self):
        """Bits of each ReLU and MaxPool2d layer."""
        return self.layer_sizes[1:-1]

    @property
    def n_hidden_units(self):
        """The length ``h`` of a bit string."""
        return int(sum(self.hidden_sizes))


def conv_relu_network(layers, image_shape, classes=None, output_activation=None):
    """The :class:`ConvReLUNet` of a flat list of layers (checked, copied to float64)."""
    layers = list(layers)
    if layers and isinstance(layers[0], nn.Unflatten):
        if layers[0].dim not in (1, -3):
            raise ValueError(f"network starts with {layers[0]!r}; only an Unflatten of dim 1 "
                             "(flat rows into (C, H, W)) is supported.")
        shape = tuple(int(s) for s in layers[0].unflattened_size)
        if image_shape is not None and tuple(image_shape) != shape:
            raise ValueError(f"image_shape={tuple(image_shape)} does not match the network's "
                             f"Unflatten to {shape}.")
        image_shape, layers = shape, layers[1:]
    if image_shape is None:
        raise ValueError("network has Conv2d or pooling layers: pass image_shape=(C, H, W), the "
                         "layout of the flat rows of X, or start the network with nn.Unflatten.")
    image_shape = tuple(int(s) for s in image_shape)
    for layer in layers:
        _check_layer(layer)
    layers = tuple(copy.deepcopy(layer).double().eval() for layer in layers)
    u = torch.zeros((1, *image_shape), dtype=torch.float64)
    sizes, names = [], []
    with torch.no_grad():
        for i, layer in enumerate(layers):
            try:
                v = layer(u)
            except RuntimeError as exc:
                raise ValueError(f"layer {i} ({layer!r}) does not accept the output of the "
                                 f"layer before it, of shape {tuple(u.shape[1:])} (image_shape="
                                 f"{image_shape}): {exc}") from exc
            if isinstance(layer, nn.ReLU):
                sizes.append(u[0].numel())
                names.append(f"relu{i}")
            elif isinstance(layer, nn.MaxPool2d):
                windows = pool_windows(u, layer, 0.0)
                sizes.append(windows[0].numel())
                names.append(f"maxpool{i}")
            u = v
    if u.dim() != 2:
        raise ValueError(f"network output has shape {tuple(u.shape[1:])}; ReLUPolytopes needs "
                         "flat outputs (end with Flatten and Linear).")
    m = int(np.prod(image_shape))
    return ConvReLUNet(layers=layers, image_shape=image_shape,
                       layer_sizes=(m, *sizes, u.shape[1]), block_names=tuple(names),
                       n_inputs=m, n_outputs=int(u.shape[1]), classes=classes,
                       output_activation=output_activation)


def _check_layer(layer):
    if isinstance(layer, nn.Conv2d) and layer.padding_mode != "zeros":
        raise ValueError(f"network has a Conv2d with padding_mode={layer.padding_mode!r}; "
                         "ReLUPolytopes supports padding_mode='zeros'.")
    if isinstance(layer, nn.MaxPool2d) and layer.ceil_mode:
        raise ValueError("network has a MaxPool2d with ceil_mode=True; ReLUPolytopes supports "
                         "ceil_mode=False.")
    if isinstance(layer, nn.Unflatten):
        raise ValueError(  # noqa: TRY004 (a bad value of network)
            "network has an Unflatten after its first layer; ReLUPolytopes supports Unflatten "
            "only as the first layer (flat rows into images).")
    if not isinstance(layer, (*_AFFINE, nn.ReLU, nn.MaxPool2d)):
        raise ValueError(  # noqa: TRY004 (a bad value of network)
            f"network contains a {type(layer).__name__} layer; ReLUPolytopes analyses conv nets "
            f"made of {', '.join(SUPPORTED)} (and MLPs).")


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def pool_windows(u, pool, fill):
    """The windows of ``MaxPool2d`` ``pool`` over ``u`` (N, C, H, W): (N, C, L, k)."""
    N, C = u.shape[:2]
    ph, pw = _pair(pool.padding)
    u = F.pad(u, (pw, pw, ph, ph), value=fill)
    cols = F.unfold(u.reshape(N * C, 1, *u.shape[2:]), _pair(pool.kernel_size),
                    dilation=_pair(pool.dilation),
                    stride=_pair(pool.stride if pool.stride is not None else pool.kernel_size))
    return cols.reshape(N, C, cols.shape[1], cols.shape[2]).transpose(2, 3)


def pool_shape(u, pool):
    """Output ``(H_out, W_out)`` of ``pool`` on ``u``."""
    with torch.no_grad():
        return pool(u[:1]).shape[2:]


def linear_part(layer, u):
    """``layer(u) - layer(0)``, computed without the bias."""
    if isinstance(layer, nn.Conv2d):
        return F.conv2d(u, layer.weight, None, layer.stride, layer.padding, layer.dilation,
                        layer.groups)
    if isinstance(layer, nn.Linear):
        return F.linear(u, layer.weight)
    return layer(u)  # pooling, reshapes and eval Dropout are linear


def as_images(net, X):
    return torch.as_tensor(np.asarray(X, float), dtype=torch.float64).reshape(
        -1, *net.image_shape)


def conv_forward_bits(net, X, *, batch_size=8192, n_jobs=None):
    """Bit strings, constraint values and logits of ``X`` (flat rows).

    ``z`` holds, per ReLU bit, the unit's pre-activation and, per max-pool bit,
    the window's maximum minus that entry (``>= 0``; ``0`` at the argmax): the
    distance of ``x`` to each boundary of its region is ``|z| / ||grad z||``.
    """
    n, h = len(X), net.n_hidden_units
    bits, z_all, out = np.empty((n, h), bool), np.empty((n, h)), np.empty((n, net.n_outputs))

    @torch.no_grad()
    def batch(sl):
        u, col = as_images(net, X[sl]), 0
        for layer in net.layers:
            if isinstance(layer, nn.ReLU):
                z = u.reshape(len(u), -1)
                bits[sl, col:col + z.shape[1]] = (z > 0).numpy()
                z_all[sl, col:col + z.shape[1]] = z.numpy()
                col += z.shape[1]
                u = torch.relu(u)
            elif isinstance(layer, nn.MaxPool2d):
                win = pool_windows(u, layer, -torch.inf)
                top, arg = win.max(dim=3)
                k = win[0].numel()
                bits[sl, col:col + k] = F.one_hot(arg, win.shape[3]).reshape(len(u), -1).numpy()
                z_all[sl, col:col + k] = (top[..., None] - win).reshape(len(u), -1).numpy()
                col += k
                u = top.reshape(*top.shape[:2], *pool_shape(u, layer))
            else:
                u = layer(u)
        out[sl] = u.numpy()
    thread_map(batch, iter_batches(n, batch_size), n_jobs)
    return bits, z_all, out


def conv_local_maps(net, patterns, *, batch_size=8192, row_norms=False):
    """Affine maps ``G(x) = W_s x + b_s`` of the regions with bit strings ``patterns``.

    The network with every ReLU replaced by its mask and every max-pool window
    by its argmax entry is affine: the offset is its image of 0, the linear part
    its image of the ``m`` unit vectors (no autograd). ``row_norms`` gives the
    norm of the gradient of every constraint value of :func:`conv_forward_bits`.
    """
    R, h, m, o = len(patterns), net.n_hidden_units, net.n_inputs, net.n_outputs
    W_out, b_out, norms = np.empty((R, o, m)), np.empty((R, o)), np.empty((R, h))
    eye = torch.eye(m, dtype=torch.float64).reshape(m, *net.image_shape)
    step = max(1, int(batch_size * 64 // (m * max(net.layer_sizes))))
    with torch.no_grad():
        for sl in iter_batches(R, step):
            S = torch.as_tensor(patterns[sl], dtype=torch.float64)
            r = len(S)
            b = torch.zeros((r, *net.image_shape), dtype=torch.float64)
            J = eye.repeat(r, *([1] * len(net.image_shape)))  # (r * m, ...)
            col = 0
            for layer in net.layers:
                if isinstance(layer, nn.ReLU):
                    k = b[0].numel()
                    mask = S[:, col:col + k].reshape(b.shape)
                    if row_norms:
                        norms[sl, col:col + k] = J.reshape(r, m, k).square().sum(1).sqrt().numpy()
                    b, J = b * mask, (J.reshape(r, m, *b.shape[1:]) * mask[:, None]).reshape(J.shape)
                    col += k
                elif isinstance(layer, nn.MaxPool2d):
                    shape = pool_shape(b, layer)
                    wb, wJ = pool_windows(b, layer, 0.0), pool_windows(J, layer, 0.0)
                    k = wb[0].numel()
                    onehot = S[:, col:col + k].reshape(wb.shape)
                    wJ = wJ.reshape(r, m, *wb.shape[1:])
                    chosen = (wJ * onehot[:, None]).sum(-1)
                    if row_norms:
                        gap = chosen[..., None] - wJ
                        norms[sl, col:col + k] = gap.square().sum(1).sqrt().reshape(r, k).numpy()
                    b = (wb * onehot).sum(-1).reshape(r, wb.shape[1], *shape)
                    J = chosen.reshape(r * m, wb.shape[1], *shape)
                    col += k
                else:
                    b, J = layer(b), linear_part(layer, J)
            W_out[sl] = J.reshape(r, m, o).transpose(1, 2).numpy()
            b_out[sl] = b.numpy()
    return (W_out, b_out, norms) if row_norms else (W_out, b_out)


def flat_rows(a):
    return a.reshape(len(a), -1)
