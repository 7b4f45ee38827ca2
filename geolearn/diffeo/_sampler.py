"""Maximum-entropy displacement fields, image deformation and temperature utilities.

Conventions (Petrini et al., Section 2 and Appendix A): an ``n x n`` image is a
function on ``[0, 1]^2``; pixel ``(row p, col q)`` sits at ``u = q / (n - 1)``,
``v = p / (n - 1)``. A field is ``tau = (tau_u, tau_v)`` with

    tau_k(u, v) = sum_{(i, j) in M_c} C_kij sin(i pi v) sin(j pi u),
    C_kij ~ N(0, T / (i^2 + j^2)),

and displacements are expressed in pixels by multiplying by ``n`` (the
convention of the authors' library, so that the paper's temperatures carry
over). ``M_c`` keeps ``1 <= i, j <= c`` with ``sqrt(i^2 + j^2) < c + 1/2``.
"""

import functools
import math
import numbers

import numpy as np
import torch
from sklearn.utils import Bunch, check_random_state

from .._utils import (
    check_choice,
    check_memory,
    check_numeric_array,
    check_scalar_param,
    check_tensor,
    resolve_device,
    resolve_n_jobs,
    thread_map,
    to_tensor,
)
from ._images import image_side

#: Width of the Gaussian interpolation kernel, in pixels (participation ratio 4, Appendix C).
GAUSSIAN_SIGMA = 0.4715
_GAUSSIAN_RADIUS = 3  # 7 x 7 taps; every pixel left out is >= 3.5 px away (weight < 1e-11)
_CPU_CHUNK = 2**17  # pixels per chunk on the CPU: its temporaries stay in (L2-L3) cache
_CHUNKS_PER_TASK = 4  # chunks a worker runs per hand-off: little pool overhead, many tasks
_NUMPY_DTYPES = {torch.float16: np.float16, torch.float32: np.float32, torch.float64: np.float64}
_INTERPS = ("bilinear", "gaussian")
_FORMULAS = ("exact", "asymptotic")


# --------------------------------------------------------------------------- validation
def _check_n(n, name="n"):
    return int(check_scalar_param(n, f"{name} (the image side)", kind="integer", low=4))


def _check_c(c, n=None, name="c"):
    c = check_scalar_param(c, f"{name} (the cut-off)", kind="integer", low=1)
    if n is not None and c > n - 2:
        raise ValueError(
            f"{name}={c} is too large for {n}x{n} images: modes above n - 2 = {n - 2} alias on "
            "the pixel grid."
        )
    return int(c)


def _check_n_jobs(n_jobs):
    if n_jobs is not None and (not isinstance(n_jobs, numbers.Integral)
                               or isinstance(n_jobs, (bool, np.bool_))):
        raise TypeError(f"n_jobs must be None or an integer (-1: every core); got {n_jobs!r}.")
    if n_jobs == 0:
        raise ValueError("n_jobs must be None or a nonzero integer (-1: every core); got 0.")
    return resolve_n_jobs(n_jobs)


def _check_T(T, name="T"):
    arr = np.asarray(T, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name} (the temperature) must be finite and >= 0; got {T!r}.")
    return arr if arr.ndim else float(arr)


# --------------------------------------------------------------------------- modes
@functools.lru_cache(maxsize=None)
def _amplitudes(c, m):
    """``(m, m)`` array of ``1 / sqrt(i^2 + j^2)`` on ``M_c`` and 0 elsewhere."""
    k = np.arange(1, m + 1, dtype=float)
    r = np.hypot(k[:, None], k[None, :])
    a = np.where(r < c + 0.5, 1.0 / r, 0.0)
    a.setflags(write=False)
    return a


def _mode_sum(c):
    """``S(c) = sum_{M_c} 1 / (i^2 + j^2)``."""
    return float((_amplitudes(c, c) ** 2).sum())


def _mode_count(c):
    """``N(c) = |M_c|``."""
    return int((_amplitudes(c, c) > 0).sum())


@functools.lru_cache(maxsize=64)
def _sine_tables(n, m, device, dtype):
    """Sine table ``S[p, i] = sin(i pi p / (n-1))`` and its ``u``-derivative ``i pi cos(...)``."""
    p = torch.arange(n, dtype=torch.float64) / (n - 1)
    k = torch.arange(1, m + 1, dtype=torch.float64)
    S = torch.sin(math.pi * p[:, None] * k[None, :])
    # sin(i pi) is 1e-16, not 0: pin the frame so boundary pixels never move
    S[0] = 0.0
    S[-1] = 0.0
    dS = math.pi * k[None, :] * torch.cos(math.pi * p[:, None] * k[None, :])
    return S.to(device=device, dtype=dtype), dS.to(device=device, dtype=dtype)


def _coefficients(z, T, c, *, device="cpu", dtype=torch.float64):
    """Scale standard normals ``z`` of shape ``(B, 2, m, m)`` into field coefficients.

    ``T`` and ``c`` are scalars or per-field arrays of length ``B`` (``m >= max c``).
    """
    z = np.asarray(z, dtype=float)
    m = z.shape[-1]
    if np.ndim(c) == 0:
        a = _amplitudes(int(c), m)
    else:
        a = np.stack([_amplitudes(int(ci), m) for ci in c])[:, None]
    scale = np.sqrt(T)
    if np.ndim(scale):
        scale = scale[:, None, None, None]
    # in NumPy, on one thread: two torch threads on so small a product wait for each other
    # longer than it takes (milliseconds on a busy machine)
    return torch.as_tensor(scale * z * a, dtype=dtype, device=device)


def _empty(shape, dtype, device):
    """An uninitialised tensor; on the CPU, NumPy's buffer.

    NumPy advises the kernel to back large arrays with huge pages: faulting in a fresh
    164 MB of 4 KiB pages takes longer than computing the fields that fill them.
    """
    if device.type != "cpu" or dtype not in _NUMPY_DTYPES:
        return torch.empty(shape, dtype=dtype, device=device)
    return torch.from_numpy(np.empty(shape, dtype=_NUMPY_DTYPES[dtype]))


def _map_chunks(fn, N, step, n_jobs):
    """``fn(rows)`` for consecutive slices of ``step`` rows out of ``N``, on ``n_jobs`` threads.

    The slices are the same whatever ``n_jobs``; each worker runs a few in a row on one
    torch thread (small ops on cache-sized tensors), and takes the next few when free.
    """
    task = step * _CHUNKS_PER_TASK

    def run(start):
        for i in range(start, min(start + task, N), step):
            fn(slice(i, min(i + step, N)))

    # blas_threads=None: torch's own kernels are held by its thread setting, and limiting
    # the BLAS of NumPy and SciPy costs milliseconds per call
    thread_map(run, range(0, N, task), n_jobs, blas_threads=None)


def _sandwich(C, L, R, out=None):
    """``L @ C @ R.T`` for each matrix of a batch ``C`` (..., a, b); ``L`` (p, a), ``R`` (q, b).

    Elementwise sums in a fixed order, not GEMMs: BLAS rounds a matrix differently by
    the shape of the batch it sits in, and a field (or its Xi) must not depend on the
    chunk or the batch it is computed in.
    """
    Rt, Lt = R.T.contiguous(), L.T.contiguous()[:, :, None]  # Rt[j]: (q,); Lt[i]: (p, 1)
    Y = C[..., :1] * Rt[0]  # Y[..., i, q] = sum_j C[..., i, j] R[q, j]
    for j in range(1, C.shape[-1]):
        Y.addcmul_(C[..., j:j + 1], Rt[j])
    out = torch.mul(Lt[0], Y[..., None, 0, :], out=out)  # out[..., p, q] = sum_i L[p, i] Y[i, q]
    for i in range(1, C.shape[-2]):
        out.addcmul_(Lt[i], Y[..., None, i, :])
    return out


def _fields_from_coefficients(coeffs, n, n_jobs=1):
    """Pixel displacement fields ``(B, 2, n, n)`` from coefficients ``(B, 2, m, m)``."""
    S, _ = _sine_tables(n, coeffs.shape[-1], coeffs.device, coeffs.dtype)
    nS = n * S  # tau = n S C S^T: pixels, no extra pass
    out = _empty((len(coeffs), 2, n, n), coeffs.dtype, coeffs.device)

    def chunk(rows):
        _sandwich(coeffs[rows], nS, S, out=out[rows])

    step = max(1, _CPU_CHUNK // (n * n)) if coeffs.device.type == "cpu" else max(len(coeffs), 1)
    _map_chunks(chunk, len(coeffs), step, n_jobs)
    return out


def _max_xi_from_coefficients(coeffs, n):
    """Per field, the max over the pixel grid of ``lambda_max((J + J^T) / 2)``, ``J`` in pixels."""
    S, dS = _sine_tables(n, coeffs.shape[-1], coeffs.device, coeffs.dtype)
    scale = n / (n - 1)

    def chunk(c):
        # in place where a temporary is free, and the halving after the max (exact, and
        # monotone): the same roundings as the plain expression, fewer passes
        d_du = _sandwich(c, S, dS).mul_(scale)  # derivative along columns (u)
        d_dv = _sandwich(c, dS, S).mul_(scale)  # derivative along rows (v)
        j11, j12 = d_du[:, 0], d_dv[:, 0]  # d tau_u / du, d tau_u / dv
        j21, j22 = d_du[:, 1], d_dv[:, 1]
        root = (j11 - j22).square_().add_((j12 + j21).square_()).sqrt_()
        return (j11 + j22).add_(root).flatten(1).amax(dim=1).mul_(0.5)

    # cache-sized chunks of small ops on one torch thread (as _fields_from_coefficients)
    B = len(coeffs)
    # six temporaries per field: chunks of half the size
    step = max(1, _CPU_CHUNK // (4 * n * n)) if coeffs.device.type == "cpu" else max(B, 1)
    return torch.cat(thread_map(lambda i: chunk(coeffs[i:i + step]), range(0, B, step),
                                n_jobs=1)) if B else chunk(coeffs)


# --------------------------------------------------------------------------- public API
def sample_displacement_fields(n, T, c, size=1, *, random_state=None, device="auto",
                               dtype=torch.float64, n_jobs=None):
    """Draw displacement fields from the maximum-entropy ensemble at temperature ``T``.

    Each component is ``sum_{M_c} C_ij sin(i pi v) sin(j pi u)`` with independent
    ``C_ij ~ N(0, T / (i^2 + j^2))`` (Petrini et al., Eq. 2), zero on the image
    frame, expressed in pixels (multiplied by ``n``).

    Parameters
    ----------
    n : int
        Image side (square images), ``n >= 4``.
    T : float
        Temperature, ``>= 0``.
    c : int
        High-frequency cut-off, ``1 <= c <= n - 2``.
    size : int, default=1
        Number of fields.
    random_state : int, RandomState instance or None
        Seeds the coefficients (drawn with numpy, so results do not depend on ``device``).
    device : str or torch.device, default="auto"
        Resolved by :func:`geolearn._utils.resolve_device` (``"auto"``: CUDA when available).
    dtype : torch.dtype, default=torch.float64
    n_jobs : int or None, default=None
        Threads over chunks of fields on the CPU (``None``: 1 unless in a joblib
        ``parallel_config(n_jobs=...)``; ``-1``: every core). The fields do not depend on it.

    Returns
    -------
    fields : Tensor of shape (size, 2, n, n)
        Pixel displacements; channel 0 is horizontal (along columns), channel 1 vertical.

    Examples
    --------
    >>> from geolearn.diffeo import sample_displacement_fields
    >>> d = sample_displacement_fields(28, T=1e-3, c=3, size=4, random_state=0)
    >>> d.shape, float(d[:, :, 0].abs().max())
    (torch.Size([4, 2, 28, 28]), 0.0)
    """
    n = _check_n(n)
    c = _check_c(c, n)
    T = _check_T(T)
    if np.ndim(T):
        raise ValueError(f"T must be a scalar; got an array of shape {np.shape(T)}.")
    size = check_scalar_param(size, "size", kind="integer", low=1)
    n_jobs = _check_n_jobs(n_jobs)
    check_memory(size * 2 * n * n * torch.empty((), dtype=dtype).element_size(),
                 f"sample_displacement_fields(size={size}) of {n} x {n} images",
                 "draw the fields in chunks of fewer (size=...)")
    z = check_random_state(random_state).standard_normal((int(size), 2, c, c))
    coeffs = _coefficients(z, T, c, device=resolve_device(device), dtype=dtype)
    return _fields_from_coefficients(coeffs, n, n_jobs)


def deform(X, fields, *, interp="bilinear", n_jobs=None):
    """Deform images by pixel displacement fields: ``[tau x](s) = x(s - tau(s))``.

    Sampling positions are clamped to the image (border padding). The bilinear
    kernel reproduces ``X`` exactly for a zero field; the Gaussian kernel
    (``sigma = 0.4715`` px, 7 x 7 taps, Appendix C) smooths even then. Both are
    differentiable with respect to ``X`` and to ``fields`` (tensors that require
    grad), e.g. to search for adversarial deformations.

    Parameters
    ----------
    X : ndarray or Tensor of shape (N, n, n) or (N, C, n, n)
        Square images; channels share one field.
    fields : ndarray or Tensor of shape (N, 2, n, n)
        One field per image, in pixels (as from :func:`sample_displacement_fields`).
    interp : {"bilinear", "gaussian"}, default="bilinear"
    n_jobs : int or None, default=None
        Threads over chunks of images on the CPU (``None``: 1 unless in a joblib
        ``parallel_config(n_jobs=...)``; ``-1``: every core). The result does not depend on it.

    Returns
    -------
    X_deformed : same type, shape and (floating) dtype as ``X``
        Integer inputs come back as float64. ``X`` is never modified.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.diffeo import deform, sample_displacement_fields
    >>> X = np.random.RandomState(0).rand(4, 16, 16).astype(np.float32)
    >>> d = sample_displacement_fields(16, T=0.005, c=3, size=4, random_state=0)
    >>> Y = deform(X, d)
    >>> Y.shape, Y.dtype
    ((4, 16, 16), dtype('float32'))
    >>> bool(np.array_equal(deform(X, 0 * d), X))
    True
    """
    check_choice(interp, "interp", _INTERPS)
    n_jobs = _check_n_jobs(n_jobs)
    is_tensor = isinstance(X, torch.Tensor)
    Xt = check_tensor(X)
    if not Xt.is_floating_point():
        Xt = Xt.to(torch.float64)
    if Xt.ndim not in (3, 4):
        raise ValueError(f"X must have shape (N, n, n) or (N, C, n, n); got {tuple(Xt.shape)}.")
    image_side(Xt.shape)
    fields = to_tensor(fields, device=Xt.device, dtype=torch.float64)  # finite: _positions
    expected = (Xt.shape[0], 2, *Xt.shape[-2:])
    if tuple(fields.shape) != expected:
        raise ValueError(
            f"fields must have shape (N, 2, n, n) = {expected} to match X; got "
            f"{tuple(fields.shape)}."
        )
    out = _remap(Xt if Xt.ndim == 4 else Xt[:, None], fields, interp, n_jobs)
    out = out.reshape(Xt.shape)
    return out if is_tensor else out.numpy()


def _remap(X, fields, interp, n_jobs=1):
    """Deform ``(N, C, n, n)`` images; positions in float64, values in ``X``'s dtype."""
    N, C, n, _ = X.shape
    # On the CPU the work is memory-bound: chunks whose temporaries stay in cache are
    # several times faster than whole-array passes.
    step = max(1, _CPU_CHUNK // (C * n * n)) if X.device.type == "cpu" else max(N, 1)
    if torch.is_grad_enabled() and (X.requires_grad or fields.requires_grad):
        # differentiable: chunks in order into one graph, without out= (which autograd refuses)
        parts = []
        _map_chunks(lambda rows: parts.append(_remap_chunk(X[rows], fields[rows], interp)), N,
                    step, 1)
        return torch.cat(parts) if parts else X.clone()
    out = _empty(X.shape, X.dtype, X.device)
    _map_chunks(lambda rows: _remap_chunk(X[rows], fields[rows], interp, out[rows]), N, step,
                n_jobs)
    return out


@functools.lru_cache(maxsize=64)
def _pixel_grid(n, device):
    """``(2, n, n)`` float64: the column and the row of each pixel."""
    grid = torch.arange(n, dtype=torch.float64, device=device)
    return torch.stack((grid.expand(n, n), grid[:, None].expand(n, n)))


def _positions(fields):
    """Sampling positions ``s - tau(s)`` (column, row) clamped to the image, float64."""
    n = fields.shape[-1]
    pos = _pixel_grid(n, fields.device) - fields
    # checked here, on a chunk in cache, rather than in a pass over every field; a sum of
    # finite values is finite unless it overflows, then the exact check
    if not (torch.isfinite(pos.sum()) or torch.isfinite(pos).all()):
        raise ValueError("fields contain NaN or infinity: a displacement must be finite.")
    return pos.clamp_(0, n - 1)


def _remap_chunk(X, fields, interp, out=None):
    """Deform the images of a chunk, into ``out`` when given."""
    N, C, n, _ = X.shape
    pos = _positions(fields)
    if interp == "bilinear":
        p0 = pos.to(torch.int32)  # truncation is the floor: positions are >= 0
        w = pos.frac_().to(X.dtype)[:, :, None]
        wx, wy = w[:, 0], w[:, 1]
        # one replicated row and column: the right and lower neighbours stay in the array
        # (at position n - 1 the weight is 0 and the result that pixel, exactly)
        m = n + 1
        flat = torch.nn.functional.pad(X, (0, 1, 0, 1), mode="replicate").reshape(-1)
        itype = torch.int32 if flat.numel() < 2**31 else torch.int64
        idx = torch.add(p0[:, 0], p0[:, 1], alpha=m)[:, None] + torch.arange(
            0, N * C * m * m, m * m, dtype=itype, device=X.device).view(N, C, 1, 1)
        v00, v01, v10, v11 = (flat[off:].index_select(0, idx.reshape(-1)).view(N, C, n, n)
                              for off in (0, 1, m, m + 1))
        # lerp returns the start exactly at weight 0: a zero field returns X unchanged
        return torch.lerp(torch.lerp(v00, v01, wx), torch.lerp(v10, v11, wx), wy, out=out)

    # Gaussian: the kernel and the in-image mask factorise over rows and columns,
    # so the normalised 2-D weights are products of normalised 1-D weights.
    xs, ys = pos[:, 0], pos[:, 1]
    r = _GAUSSIAN_RADIUS
    k = torch.arange(-r, r + 1, device=X.device)
    # exp(-(t - k)^2 / 2s^2) = exp(-t^2 / 2s^2) exp(-k^2 / 2s^2) g^k with g = exp(t / s^2):
    # the first factor cancels in the normalisation, so one exp per pixel gives all taps
    scale = torch.exp(-(k.to(X.dtype) ** 2) / (2 * GAUSSIAN_SIGMA**2))[:, None, None, None]
    inside = ((k[:, None] + torch.arange(n, device=X.device)) >= 0) & (
        (k[:, None] + torch.arange(n, device=X.device)) <= n - 1)  # (taps, centre)

    def weights(pos):
        centre = pos.round()
        # the offset from the nearest pixel is in [-1/2, 1/2]: X's precision suffices
        g = torch.exp((pos - centre).to(X.dtype) / GAUSSIAN_SIGMA**2)
        up, down = [torch.ones_like(g)], [torch.ones_like(g)]
        for _ in range(r):
            up.append(up[-1] * g)
            down.append(down[-1] / g)
        centre = centre.long()
        w = torch.stack(down[:0:-1] + up) * scale * inside[:, centre]
        # the normaliser as elementwise adds in tap order: torch's sum over dim 0 rounds
        # the last elements of a chunk differently, and a pixel must not depend on its chunk
        total = w[0].clone()
        for tap in w[1:]:
            total += tap
        return (w / total).unsqueeze(2), centre  # (taps, N, 1, n, n)

    wy, cy = weights(ys)
    wx, cx = weights(xs)
    # zero padding of width r: taps outside the image have zero weight and valid indices;
    # tap (a, b) reads the padded image shifted by a * m + b, a view, at the same index
    m = n + 2 * r
    flat = torch.nn.functional.pad(X, (r, r, r, r)).reshape(N, C, m * m)
    base = (cy * m + cx).reshape(N, 1, n * n).expand(N, C, n * n)
    out = torch.zeros_like(X) if out is None else out.zero_()
    # one row buffer for every row of taps, unless autograd keeps each row for the gradient
    # of the row weights (fields that require grad)
    fresh = torch.is_grad_enabled() and fields.requires_grad
    row = None
    for a in range(2 * r + 1):
        row = torch.zeros_like(X) if row is None or fresh else row.zero_()
        for b in range(2 * r + 1):
            row.addcmul_(wx[b], flat[..., a * m + b:].gather(2, base).reshape(N, C, n, n))
        out.addcmul_(wy[a], row)
    return out


def max_xi(fields):
    """Largest value over the pixel grid of the bijectivity indicator ``Xi`` of each field.

    ``Xi(s) = lambda_max((J + J^T) / 2)`` with ``J = grad tau(s)`` in pixel units;
    ``Xi < 1`` everywhere guarantees that ``s -> s - tau(s)`` is a
    diffeomorphism (Petrini et al., Appendix B). ``J`` is computed
    analytically from the field's sine series, recovered exactly from its grid
    values by the discrete sine transform (any field vanishing on the frame,
    e.g. every field from :func:`sample_displacement_fields`).

    Parameters
    ----------
    fields : ndarray or Tensor of shape (size, 2, n, n)
        Pixel displacement fields, zero on the image frame.

    Returns
    -------
    max_xi : ndarray of shape (size,)

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.diffeo import max_xi, sample_displacement_fields
    >>> d = sample_displacement_fields(32, T=1.0, c=3, size=500, random_state=0)
    >>> T_max = 1 / float(np.median(max_xi(d))) ** 2   # homogeneity: max Xi scales as sqrt(T)
    >>> round(T_max, 3)
    0.014
    """
    fields = check_tensor(fields, "fields", dtype=torch.float64)
    if fields.ndim != 4 or fields.shape[1] != 2 or fields.shape[2] != fields.shape[3]:
        raise ValueError(f"fields must have shape (size, 2, n, n); got {tuple(fields.shape)}.")
    n = _check_n(fields.shape[-1], name="the field side")
    peak = float(fields.abs().max()) if fields.numel() else 0.0
    # the sine series' derivatives scale by up to n^2, and Xi takes their squares
    if peak * n**2 > np.sqrt(np.finfo(np.float64).max):
        raise ValueError(f"fields holds displacements up to {peak:.3g} pixels: their Jacobian "
                         "overflows float64; fields are in pixels.")
    S, _ = _sine_tables(n, n - 2, fields.device, fields.dtype)
    # DST-I orthogonality: sum_p S[p, i] S[p, j] = (n - 1) / 2 delta_ij
    coeffs = torch.empty((len(fields), 2, n - 2, n - 2), dtype=fields.dtype, device=fields.device)

    def chunk(rows):
        torch.mul(_sandwich(fields[rows], S.T, S.T), (2 / (n - 1)) ** 2 / n, out=coeffs[rows])

    step = max(1, _CPU_CHUNK // (n * n)) if fields.device.type == "cpu" else max(len(fields), 1)
    _map_chunks(chunk, len(fields), step, 1)
    return _max_xi_from_coefficients(coeffs, n).cpu().numpy()


def displacement_delta(T, c, n, formula="exact"):
    """Typical pixel displacement ``delta`` (root mean square over the image) at temperature ``T``.

    ``formula="exact"``: ``delta^2 = (T / 2) (n - 1)^2 S(c)`` on the pixel grid,
    ``S(c) = sum_{M_c} 1 / (i^2 + j^2)``. ``formula="asymptotic"``: the paper's
    large-``c`` form ``delta^2 = (pi / 4) n^2 T ln c`` (Eq. 3), about 40% larger at
    ``c = 3`` and undefined for ``c = 1``.

    Parameters
    ----------
    T : float or array-like
    c : int
    n : int
    formula : {"exact", "asymptotic"}, default="exact"

    Returns
    -------
    delta : float or ndarray

    Examples
    --------
    >>> from geolearn.diffeo import displacement_delta
    >>> round(displacement_delta(0.00726, c=3, n=16), 3)
    1.0
    """
    n, c = _check_n(n), _check_c(c, n)
    delta = np.sqrt(_check_T(T) * _delta_sq_per_T(c, n, formula))
    return delta if delta.ndim else float(delta)


def temperature_for_delta(delta, c, n, formula="exact"):
    """Temperature whose typical displacement is ``delta`` pixels.

    The inverse of :func:`displacement_delta`.

    Parameters
    ----------
    delta : float or array-like
        Target displacement in pixels, ``> 0``.
    c : int
    n : int
    formula : {"exact", "asymptotic"}, default="exact"
        ``"asymptotic"`` is the reference library's ``typical_temperature``:
        ``4 delta^2 / (pi n^2 ln c)``.

    Returns
    -------
    T : float or ndarray

    Examples
    --------
    >>> from geolearn.diffeo import temperature_for_delta
    >>> round(temperature_for_delta(1.0, c=3, n=16), 5)
    0.00726
    """
    n, c = _check_n(n), _check_c(c, n)
    d = np.asarray(delta, dtype=float)
    if not np.all(np.isfinite(d)) or np.any(d <= 0):
        raise ValueError(f"delta must be finite and > 0 (pixels); got {delta!r}.")
    T = d**2 / _delta_sq_per_T(c, n, formula)
    return T if T.ndim else float(T)


def _delta_sq_per_T(c, n, formula):
    check_choice(formula, "formula", _FORMULAS)
    if formula == "exact":
        return 0.5 * (n - 1) ** 2 * _mode_sum(c)
    if c == 1:
        raise ValueError(
            "formula='asymptotic' is undefined for c=1 (it divides by ln c); use formula='exact'."
        )
    return math.pi / 4 * n**2 * math.log(c)


def temperature_range(n, c, method="asymptotic", n_samples=500, random_state=0):
    """Temperatures ``(T_min, T_max)`` of significant yet diffeomorphic deformations.

    ``method="asymptotic"`` (Petrini et al., Eqs. 8 and 14):
    ``T_min = 1 / (pi n^2 ln c)`` (displacement of half a pixel) and
    ``T_max = 4 / (pi^3 c^2 ln c)`` (about half the fields are diffeomorphisms);
    undefined for ``c = 1``. ``method="empirical"``: ``T_min`` gives ``delta = 1/2``
    with the exact formula, and ``T_max = 1 / median(max Xi at T = 1)^2`` over
    ``n_samples`` fields (``max Xi`` scales as ``sqrt(T)``), valid for every ``c``.

    Parameters
    ----------
    n : int
    c : int
    method : {"asymptotic", "empirical"}, default="asymptotic"
    n_samples : int, default=500
        Fields drawn by ``method="empirical"``.
    random_state : int, RandomState instance or None, default=0

    Returns
    -------
    T_min, T_max : float

    Examples
    --------
    >>> from geolearn.diffeo import temperature_range
    >>> [round(t, 4) for t in temperature_range(32, 3)]
    [0.0003, 0.013]
    >>> [round(t, 4) for t in temperature_range(32, 1, method="empirical")]
    [0.001, 0.1596]
    """
    n, c = _check_n(n), _check_c(c, n)
    check_choice(method, "method", ("asymptotic", "empirical"))
    if method == "asymptotic":
        if c == 1:
            raise ValueError(
                "temperature_range(method='asymptotic') is undefined for c=1 (it divides by "
                "ln c); use method='empirical'."
            )
        log_c = math.log(c)
        return 1 / (math.pi * n**2 * log_c), 4 / (math.pi**3 * c**2 * log_c)
    check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
    z = check_random_state(random_state).standard_normal((int(n_samples), 2, c, c))
    xi = _max_xi_from_coefficients(_coefficients(z, 1.0, c), n)
    return temperature_for_delta(0.5, c, n), float(1 / np.median(xi.numpy()) ** 2)


@functools.lru_cache(maxsize=None)
def _default_range(n, c):
    """The family's ``T_range_``: :func:`temperature_range` by the method valid at ``c``."""
    return temperature_range(n, c, "empirical" if c == 1 else "asymptotic")


def deformation_grid(image, *, temperatures=None, cutoffs=(1, 3, 5), interp="bilinear",
                     random_state=None):
    """Deform one image at every ``(T, c)`` of a grid, and mark the useful cells.

    A cell is useful when ``T_min <= T <= T_max`` (:func:`temperature_range`):
    displacements of at least half a pixel that are typically still
    diffeomorphisms (Petrini et al., Fig. 2). Draw the grid with
    :meth:`geolearn.plotting.DeformationGridDisplay.from_results`.

    Parameters
    ----------
    image : array-like of shape (n, n) or (1, n, n)
    temperatures : array-like, default=None
        Default: 5 values log-spaced from ``1e-4`` to ``1e-1``.
    cutoffs : sequence of int, default=(1, 3, 5)
    interp : {"bilinear", "gaussian"}, default="bilinear"
    random_state : int, RandomState instance or None, default=None
        One set of coefficients per ``c``, rescaled across ``T``, so a row
        shows the same deformation growing.

    Returns
    -------
    grid : sklearn.utils.Bunch
        ``images`` (ndarray of shape (n_c, n_T, n, n)), ``temperatures``
        (n_T,), ``cutoffs`` (n_c,) and ``valid`` (bool, (n_c, n_T)).

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.diffeo import deformation_grid
    >>> grid = deformation_grid(np.eye(16), cutoffs=(1, 3), random_state=0)
    >>> grid.images.shape, grid.valid.shape
    ((2, 5, 16, 16), (2, 5))
    """
    image = check_numeric_array(image, "image", dtype=np.float64, ensure_2d=False,
                                allow_nd=True)
    if image.ndim not in (2, 3) or image.size != np.prod(image.shape[-2:]):
        raise ValueError(f"image must have shape (n, n) or (1, n, n); got {image.shape}.")
    image = image.reshape(image.shape[-2:])
    n = image.shape[-1]
    temperatures = np.logspace(-4, -1, 5) if temperatures is None else np.asarray(
        temperatures, dtype=float)
    rng = check_random_state(random_state)
    cutoffs = np.asarray(cutoffs, dtype=int)
    images = np.empty((len(cutoffs), len(temperatures), n, n))
    valid = np.zeros((len(cutoffs), len(temperatures)), dtype=bool)
    for a, c in enumerate(cutoffs):
        seed = int(rng.randint(0, 2**31 - 1))
        unit = sample_displacement_fields(n, 1.0, int(c), random_state=seed).numpy()
        T_min, T_max = temperature_range(n, int(c), "empirical" if c == 1 else "asymptotic")
        for b, T in enumerate(temperatures):
            images[a, b] = deform(image[None], np.sqrt(T) * unit, interp=interp)[0]
            valid[a, b] = T_min <= T <= T_max
    return Bunch(images=images, temperatures=temperatures, cutoffs=cutoffs, valid=valid)
