"""Image input of the family: square frames, fitted shapes and the estimator checks they fail."""

# sklearn's checks feed tabular rows of 1-20 features; the estimators need square images of
# side >= 4 (flat rows with image_shape), so fit raises on their data.
# tests/diffeo/test_image_contract.py checks the same contracts on images (nan/inf, dtypes,
# pickle, clone, idempotent and shape-resetting refits, row order and subsets) and that
# each of these checks fails only for this reason.
_TABULAR_CHECKS = (
    "check_dict_unchanged",
    "check_dont_overwrite_parameters",
    "check_dtype_object",
    "check_estimators_dtypes",
    "check_estimators_fit_returns_self",
    "check_estimators_nan_inf",
    "check_estimators_overwrite_params",
    "check_estimators_pickle",
    "check_f_contiguous_array_estimator",
    "check_fit2d_1feature",
    "check_fit2d_predict1d",
    "check_fit_check_is_fitted",
    "check_fit_idempotent",
    "check_fit_score_takes_y",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_n_features_in",
    "check_n_features_in_after_fitting",
    "check_pipeline_consistency",
    "check_positive_only_tag_during_fit",
    "check_readonly_memmap_input",
)


def tabular_check_failures(*checks):
    """``_expected_failed_checks`` of an image estimator: the common checks plus ``checks``."""
    return dict.fromkeys(
        _TABULAR_CHECKS + checks,
        "needs square images (or flat rows with image_shape): sklearn's tabular check data "
        "cannot be folded into them; tests/diffeo/test_image_contract.py checks the same "
        "contract on images")


def image_side(shape):
    """The side ``n`` of images of shape ``(..., n, n)``; raises unless they are square."""
    rows, cols = shape[-2:]
    if rows != cols:
        raise ValueError(f"images must be square (the ensemble lives on a square frame); "
                         f"got {rows}x{cols}. Crop or pad them.")
    return int(cols)


def check_fitted_shape(estimator, images):
    """Raise unless ``images`` (N, C, n, n) have the ``image_shape_`` seen in ``fit``."""
    if images.shape[1:] != estimator.image_shape_:
        raise ValueError(f"X holds images of shape {images.shape[1:]}, but "
                         f"{type(estimator).__name__} was fitted on {estimator.image_shape_}.")
