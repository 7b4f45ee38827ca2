"""How well a map reproduces target embeddings."""

import numpy as np
from sklearn.utils.validation import check_array, check_consistent_length


def embedding_mse(Y_true, Y_pred, *, reduction="elementwise"):
    """Mean squared error between target embeddings and mapped source embeddings.

    The linear-mapping paper (Sec. 3.4.1) sums the squared differences of a
    pair's elements and averages over pairs; its reported values only fit the
    per-element mean, so that is the default.

    Parameters
    ----------
    Y_true : array-like of shape (m, d)
        Target embeddings.
    Y_pred : array-like of shape (m, d)
        Mapped source embeddings, row ``i`` paired with ``Y_true[i]``.
    reduction : {"elementwise", "per_sample_sum"}, default="elementwise"
        ``"elementwise"``: ``sum (y_hat - y)^2 / (m d)`` (scikit-learn's
        ``mean_squared_error``, also ``scoring="neg_mean_squared_error"``);
        ``"per_sample_sum"``: ``sum (y_hat - y)^2 / m``, ``d`` times larger.

    Returns
    -------
    mse : float

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.representations import embedding_mse
    >>> Y = np.zeros((2, 4)); Y_hat = np.ones((2, 4))
    >>> embedding_mse(Y, Y_hat), embedding_mse(Y, Y_hat, reduction="per_sample_sum")
    (1.0, 4.0)
    """
    if reduction not in ("elementwise", "per_sample_sum"):
        raise ValueError(
            f"reduction must be 'elementwise' or 'per_sample_sum'; got {reduction!r}."
        )
    Y_true = check_array(Y_true, dtype=np.float64, input_name="Y_true")
    Y_pred = check_array(Y_pred, dtype=np.float64, input_name="Y_pred")
    check_consistent_length(Y_true, Y_pred)
    if Y_true.shape[1] != Y_pred.shape[1]:
        raise ValueError(
            f"Y_true has {Y_true.shape[1]} columns but Y_pred has {Y_pred.shape[1]}."
        )
    diff = Y_pred - Y_true
    if not np.isfinite(diff).all():
        raise ValueError("Y_pred - Y_true overflows float64 (values near 1.8e308 of opposite "
                         "signs); rescale both.")
    # squared after scaling, so that large differences do not overflow on the way
    scale = float(np.abs(diff).max()) if diff.size else 0.0
    denom = Y_true.size if reduction == "elementwise" else len(Y_true)
    if scale == 0.0:
        return 0.0
    diff /= scale
    mse = scale * (scale * (float(np.sum(diff * diff)) / denom))
    if not np.isfinite(mse):
        raise ValueError(f"the mean squared error overflows float64 (differences up to "
                         f"{scale:.3g}); rescale Y_true and Y_pred.")
    return mse
