"""Input validation shared by the families (images, shapes, sample counts, diagrams)."""

import math
import numbers

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.validation import check_array, column_or_1d

from .torch import to_tensor


def check_numeric_array(X, name="X", **check_array_params):
    """``check_array`` whose errors for sparse and non-numeric inputs name ``name`` and the cure.

    A scipy sparse matrix is a ``TypeError`` naming ``.toarray()``; an object
    array holding something that is not a number is a ``ValueError`` naming
    ``name``, its dtype and the value (numpy's own message names neither). A
    pandas DataFrame is read as its numeric values. The other keywords are
    ``check_array``'s.

    Examples
    --------
    >>> import numpy as np
    >>> check_numeric_array(np.array([[1, 2]], dtype=object)).dtype
    dtype('float64')
    >>> check_numeric_array(np.array([[1, "a"]], dtype=object))
    Traceback (most recent call last):
    ...
    ValueError: X must hold numbers; it has dtype object and holds 'a', which is not one.
    """
    if sp.issparse(X):
        raise TypeError(f"{name} is a scipy sparse matrix, but dense data is required: pass "
                        f"{name}.toarray().")
    check_array_params.setdefault("dtype", "numeric")
    try:
        return check_array(X, input_name=name, **check_array_params)
    except (ValueError, TypeError) as exc:
        kind = getattr(getattr(X, "dtype", None), "kind", "O")  # DataFrames, lists: "O"
        bad = _first_non_number(X) if kind in "OSU" else None
        if bad is None:
            raise
        raise ValueError(f"{name} must hold numbers; it has dtype "
                         f"{getattr(X, 'dtype', 'object')} and holds {bad!r}, which is not "
                         "one.") from exc


def check_tensor(X, name="X", *, dtype=None, device="cpu", min_samples=0):
    """Validate an array or tensor as the estimators do and return it as a tensor.

    Arrays (and DataFrames, lists) go through :func:`check_numeric_array`: numbers only,
    no complex values, no NaN or infinity. Tensors are checked for the same and kept
    as they are (on their device, with their autograd graph) unless ``dtype`` asks
    for another type. Arrays are converted by :func:`~geolearn._utils.to_tensor`,
    which copies once where torch needs it (negative strides, read-only buffers).

    Parameters
    ----------
    X : array-like or torch.Tensor
    name : str, default="X"
        Named in error messages.
    dtype : torch.dtype, optional
        The tensor's type; default: floating types are kept, anything else becomes
        float64.
    device : str or torch.device, default="cpu"
        Where arrays go (tensors stay where they are).
    min_samples : int, default=0

    Returns
    -------
    X : torch.Tensor

    Examples
    --------
    >>> import numpy as np
    >>> check_tensor(np.arange(3.0)[::-1])
    tensor([2., 1., 0.], dtype=torch.float64)
    >>> check_tensor(np.array([[1.0, np.nan]]))
    Traceback (most recent call last):
    ...
    ValueError: Input X contains NaN.
    """
    if isinstance(X, torch.Tensor):
        if X.is_complex():
            raise ValueError(f"{name} must hold real numbers; got a complex tensor.")
        if X.is_floating_point() and not bool(torch.isfinite(X).all()):
            raise ValueError(f"{name} holds NaN or infinite values.")
        if len(X) < min_samples:
            raise ValueError(f"{name} has {len(X)} samples; at least {min_samples} are required.")
        return X if dtype is None else X.to(dtype)
    floats = ([np.float64, np.float32, np.float16] if dtype is None
              else torch.empty(0, dtype=dtype).numpy().dtype)
    X = check_numeric_array(X, name, dtype=floats, ensure_2d=False, allow_nd=True,
                            ensure_min_samples=min_samples)
    return to_tensor(X, device=device, dtype=dtype)


def _first_non_number(X):
    """The first entry of ``X`` that float() refuses, or None."""
    try:
        values = np.asarray(X, dtype=object).ravel()
    except ValueError:  # ragged
        return None
    for v in values:
        try:
            float(v)
        except (TypeError, ValueError):
            return v
    return None


def check_image_shape(image_shape, name="image_shape"):
    """Validate an ``image_shape`` parameter and return it as ``(C, H, W)``.

    ``(H, W)`` means one channel. Raises ``ValueError`` naming the parameter
    otherwise.
    """
    if image_shape is None:
        return None
    try:
        shape = tuple(int(s) for s in image_shape)
        ok = all(s == orig for s, orig in zip(shape, image_shape))
    except (TypeError, ValueError):
        ok = False
    if not ok or len(shape) not in (2, 3) or any(s < 1 for s in shape):
        raise ValueError(
            f"{name} must be (H, W) or (C, H, W) with positive integers; got {image_shape!r}."
        )
    return (1, *shape) if len(shape) == 2 else shape


def check_images(X, image_shape=None, *, dtype=np.float32, estimator=None, min_samples=1,
                 name="X"):
    """Validate images and return them as a ``(n, C, H, W)`` array.

    Parameters
    ----------
    X : array-like of shape (n, C, H, W), (n, H, W) or (n, C*H*W)
        Images, or flat rows folded with ``image_shape``.
    image_shape : tuple of int, optional
        ``(H, W)`` or ``(C, H, W)``; required for flat input, checked
        against image input when given.
    dtype : numpy dtype, default=np.float32
    estimator : object, optional
        Named in error messages.
    min_samples : int, default=1

    Returns
    -------
    images : ndarray of shape (n, C, H, W)
    """
    shape = check_image_shape(image_shape)
    if sp.issparse(X):
        raise TypeError(f"{name} is a scipy sparse matrix, but images must be dense: pass "
                        f"{name}.toarray().")
    X = X if hasattr(X, "ndim") else np.asarray(X)
    ndim = getattr(X, "ndim", None)
    if ndim == 2:
        X = check_numeric_array(X, name, dtype=dtype, estimator=estimator,
                                ensure_min_samples=min_samples)
        if shape is None:
            raise ValueError(
                f"{name} is flat with shape {X.shape}: pass image_shape=(C, H, W) or (H, W) "
                "to say how to fold each row into an image."
            )
        if int(np.prod(shape)) != X.shape[1]:
            raise ValueError(
                f"image_shape={image_shape!r} holds {int(np.prod(shape))} values but {name} has "
                f"{X.shape[1]} features per row."
            )
        return X.reshape(len(X), *shape)
    if ndim in (3, 4):
        X = check_numeric_array(X, name, dtype=dtype, allow_nd=True, estimator=estimator,
                                ensure_min_samples=min_samples)
        if X.ndim == 3:
            X = X[:, None]
        if shape is not None and X.shape[1:] != shape:
            raise ValueError(
                f"{name} holds images of shape {X.shape[1:]} but image_shape={image_shape!r}."
            )
        return X
    raise ValueError(
        f"{name} must be images (n, C, H, W) or (n, H, W), or flat rows (n, C*H*W) with "
        f"image_shape; got an array with ndim={ndim}."
    )


def check_scalar_param(value, name, *, kind="real", low=None, high=None, closed="left",
                       allow_none=False):
    """Validate a scalar parameter of a function or method and return it.

    The one check of numeric parameters (positive integers, rates, weights,
    tolerances) outside estimator constructors, whose parameters are declared in
    ``_parameter_constraints`` instead. The error is scikit-learn's
    ``InvalidParameterError`` (a ``ValueError`` and a ``TypeError``) naming the
    parameter, the expected form and the value given.

    Parameters
    ----------
    value : object
    name : str
        The parameter, named in the error message.
    kind : {"real", "integer", "boolean"}, default="real"
        Booleans pass only as ``"boolean"`` (for flags whose truthy non-booleans
        would switch something costly on, e.g. ``compile="yes"``); NaN and
        infinities never pass.
    low, high : float, optional
        Bounds; ``None`` leaves that side open.
    closed : {"left", "right", "both", "neither"}, default="left"
        Which bounds are included.
    allow_none : bool, default=False

    Returns
    -------
    value : int, float or None

    Raises
    ------
    InvalidParameterError
        When ``value`` is not of ``kind``, not finite or out of bounds.

    Examples
    --------
    >>> check_scalar_param(3, "n_components", kind="integer", low=1)
    3
    >>> check_scalar_param(-1.0, "lr", low=0, closed="neither")
    Traceback (most recent call last):
    ...
    sklearn.utils._param_validation.InvalidParameterError: lr must be a finite number > 0; \
got -1.0.
    """
    if value is None and allow_none:
        return None
    if kind == "boolean":
        if not isinstance(value, (bool, np.bool_)):
            none = " or None" if allow_none else ""
            raise InvalidParameterError(f"{name} must be True or False{none}; got {value!r}.")
        return bool(value)
    integer = kind == "integer"
    ok = (isinstance(value, numbers.Integral if integer else numbers.Real)
          and not isinstance(value, (bool, np.bool_))
          # integers are finite (and may exceed what np.isfinite takes)
          and (isinstance(value, numbers.Integral) or math.isfinite(value)))
    bounds = []
    if low is not None:
        strict = closed in ("right", "neither")
        ok = ok and (value > low if strict else value >= low)
        bounds.append(f"{'>' if strict else '>='} {low:g}")
    if high is not None:
        strict = closed in ("left", "neither")
        ok = ok and (value < high if strict else value <= high)
        bounds.append(f"{'<' if strict else '<='} {high:g}")
    if not ok:
        what = "an integer" if integer else "a finite number"
        what = " ".join([what, " and ".join(bounds)]).strip()
        none = " or None" if allow_none else ""
        raise InvalidParameterError(f"{name} must be {what}{none}; got {value!r}.")
    return value


def check_choice(value, name, choices):
    """``value`` if it is one of ``choices``, else a ``ValueError`` listing them.

    Examples
    --------
    >>> check_choice("max", "pool", ("max", "mean"))
    'max'
    """
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}; got {value!r}.")
    return value


def check_hidden_sizes(hidden_sizes, name="hidden_layer_sizes"):
    """``hidden_layer_sizes`` as a tuple of positive ints; anything else is a ``ValueError``.

    Examples
    --------
    >>> check_hidden_sizes([64, 32])
    (64, 32)
    """
    sizes = np.asarray(hidden_sizes)
    if sizes.ndim != 1 or sizes.dtype.kind not in "iu" or np.any(sizes < 1):
        raise ValueError(f"{name} must be a sequence of positive integers; got "
                         f"{hidden_sizes!r}.")
    return tuple(int(h) for h in sizes)


def check_model_inputs(X, image_shape=None, *, min_samples=1, name="X"):
    """Validate inputs of a torch model and return them in the model's layout.

    Parameters
    ----------
    X : array-like of shape (n, ...)
        Rows passed to the model as they are, or flat rows ``(n, C*H*W)``
        folded into images when ``image_shape`` is given.
    image_shape : tuple of int, optional
        ``(H, W)`` or ``(C, H, W)``.
    min_samples : int, default=1
    name : str, default="X"
        Named in error messages.

    Returns
    -------
    X : ndarray of float32, shape (n, *image_shape) or the shape of ``X``
    """
    if image_shape is not None:
        return check_images(X, image_shape, min_samples=min_samples, name=name)
    return check_numeric_array(X, name, dtype=np.float32, allow_nd=True,
                               ensure_min_samples=min_samples)


def preserved_dtype(X):
    """float32 for float32 input, else float64: the output dtype of a float32-preserving method.

    Transformers whose computation runs in float32 anyway (torch networks) or loses
    nothing at float32 precision return float32 for float32 input, as scikit-learn's
    do; the rest compute and return float64 (eigenproblems, LPs, curvature).

    Examples
    --------
    >>> preserved_dtype(np.zeros(2, np.float32)), preserved_dtype([1, 2])
    (<class 'numpy.float32'>, <class 'numpy.float64'>)
    """
    return np.float32 if getattr(X, "dtype", None) == np.float32 else np.float64


def _largest(X):
    X = np.asarray(X)
    return float(np.max(np.abs(X))) if X.size else 0.0


def check_dtype_range(X, dtype=np.float32, *, name="X", where="the float32 torch model",
                      fix=None):
    """Refuse finite values beyond the range of ``dtype``: the cast would make them infinite.

    Use where float64 data enters float32 (torch) code, so that 1e300 gives this error
    rather than NaN or infinite results.

    Parameters
    ----------
    X : array-like of float
    dtype : numpy or torch floating dtype, default=np.float32
    name : str, default="X"
    where : str
        What computes in ``dtype``, named in the message.
    fix : str, optional
        The cure the message proposes; default: rescale ``name``.

    Returns
    -------
    X : the input, unchanged

    Examples
    --------
    >>> check_dtype_range(np.array([1e300]), np.float32)
    Traceback (most recent call last):
    ...
    ValueError: X holds values up to 1e+300 in absolute value, beyond the float32 range \
(3.4e+38) of the float32 torch model; rescale X (e.g. StandardScaler).
    """
    if isinstance(dtype, torch.dtype):
        limit, label = float(torch.finfo(dtype).max), str(dtype).removeprefix("torch.")
    else:
        limit, label = float(np.finfo(dtype).max), np.dtype(dtype).name
    peak = _largest(X)
    if peak > limit:
        fix = fix or f"rescale {name} (e.g. StandardScaler)"
        raise ValueError(f"{name} holds values up to {peak:.3g} in absolute value, beyond the "
                         f"{label} range ({limit:.2g}) of {where}; {fix}.")
    return X


def check_squares_finite(X, name="X", what="squared distances"):
    """Refuse values whose squared distances overflow float64 (they would give NaN silently).

    Rows of ``n`` features with ``|x_i| <= M`` have ``|x - y|^2 <= 4 n M^2``: ``M`` must
    stay below ``sqrt(max_float64 / (4 n))``, about 6.7e153 / sqrt(n).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), float64
    name : str, default="X"
    what : str, default="squared distances"
        What overflows, named in the message.

    Returns
    -------
    X : the input, unchanged

    Examples
    --------
    >>> check_squares_finite(np.ones((2, 3)))
    array([[1., 1., 1.],
           [1., 1., 1.]])
    >>> check_squares_finite(np.full((2, 3), 1e300))
    Traceback (most recent call last):
    ...
    ValueError: X holds values up to 1e+300 in absolute value: its squared distances \
overflow float64 (|x| must stay below 3.9e+153 with 3 features); rescale X (e.g. StandardScaler).
    """
    n = max(int(np.prod(np.shape(X)[1:])), 1)
    limit = float(np.sqrt(np.finfo(np.float64).max / (4 * n)))
    peak = _largest(X)
    if peak > limit:
        raise ValueError(f"{name} holds values up to {peak:.3g} in absolute value: its {what} "
                         f"overflow float64 (|x| must stay below {limit:.2g} with {n} features); "
                         f"rescale {name} (e.g. StandardScaler).")
    return X


def check_labels(y, n_samples, name="y"):
    """Validate integer class labels and return them as an int64 array."""
    y = column_or_1d(check_array(y, ensure_2d=False, dtype=None, input_name=name), warn=True)
    if len(y) != n_samples:
        raise ValueError(f"{name} has {len(y)} labels but X has {n_samples} rows.")
    if not np.issubdtype(y.dtype, np.integer):
        if not np.issubdtype(y.dtype, np.floating) or np.any(y != np.round(y)):
            raise ValueError(f"{name} must hold integer class labels; got dtype {y.dtype}.")
    return y.astype(np.int64)


def check_mask(mask, n_features, name="mask"):
    """A boolean support mask as a flat ``(n_features,)`` array with at least one True."""
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise ValueError(f"{name} must be a boolean array; got dtype {mask.dtype}.")
    if mask.size != n_features:
        raise ValueError(f"{name} has {mask.size} entries but X has {n_features} features.")
    if not mask.any():
        raise ValueError(f"{name} is all False: nothing may change.")
    return mask.ravel()


def check_diagram(diagram, name="diagram"):
    """Return a persistence diagram as a float64 ``(m, 2)`` array of (birth, death) rows.

    Deaths may be ``+inf`` (essential classes); births must be finite and ``<= death``.
    """
    D = np.asarray(diagram, dtype=np.float64)
    if D.size == 0:
        return np.empty((0, 2))
    if D.ndim != 2 or D.shape[1] != 2:
        raise ValueError(f"{name} must be an array of (birth, death) rows of shape (m, 2); "
                         f"got shape {D.shape}.")
    if np.isnan(D).any() or not np.isfinite(D[:, 0]).all() or np.isneginf(D[:, 1]).any():
        raise ValueError(f"{name} holds NaN, an infinite birth or a death of -inf; only deaths "
                         "may be infinite (+inf).")
    if (D[:, 0] > D[:, 1]).any():
        row = int(np.argmax(D[:, 0] > D[:, 1]))
        raise ValueError(f"{name} has a point with birth > death: row {row} = "
                         f"({D[row, 0]:g}, {D[row, 1]:g}).")
    return D


def check_diagrams(diagrams, name="diagrams"):
    """A list of diagrams (one per homology dimension); a single (m, 2) array is one diagram."""
    if isinstance(diagrams, np.ndarray) and diagrams.ndim == 2:
        diagrams = [diagrams]
    try:
        items = list(diagrams)
    except TypeError:
        raise ValueError(f"{name} must be a list of (m, 2) diagrams, one per homology "
                         f"dimension; got {type(diagrams).__name__}.") from None
    return [check_diagram(d, f"{name}[{k}]") for k, d in enumerate(items)]
