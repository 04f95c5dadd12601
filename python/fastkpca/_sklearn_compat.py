"""Small shims over scikit-learn versions (>= 1.5), and scikit-learn's input validation with a fast path for the
inputs most calls bring.

scikit-learn's ``validate_data`` costs 40–100 µs a call whatever the size of X (dataframe probes, tags, the
feature-name checks), as much as a whole prediction of ten points by a fitted model. For the inputs that need
none of that — a 2-D float32/float64 NumPy array (exactly ``numpy.ndarray``), finite, with samples and
features, and targets likewise a 1-D or 2-D numeric array — :func:`validate_data` does here what scikit-learn
would do with them: the same array back (a copy when asked), ``n_features_in_`` set on a fit and checked on a
prediction, a ``feature_names_in_`` of an earlier fit removed. Anything else (lists, dataframes, sparse
matrices, other dtypes, NaN or infinity, empty arrays, a feature count that differs, names to check) goes
through scikit-learn's own function, which makes its conversions and raises its own errors. (Targets without
``multi_output`` come back as they are where scikit-learn returns a 1-D view of the same values.)
"""

from __future__ import annotations

import numpy as np

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data

    def _sklearn_validate(estimator, X, **kwargs):
        return _validate_data(estimator, X, **kwargs)

except ImportError:  # pragma: no cover - scikit-learn 1.5

    def _sklearn_validate(estimator, X, **kwargs):
        kwargs.pop("skip_check_array", None)
        return estimator._validate_data(X, **kwargs)

_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))
#: The keyword arguments the fast path knows: any other goes to scikit-learn.
_FAST_KEYWORDS = frozenset({"accept_sparse", "copy", "dtype", "reset", "y", "multi_output", "y_numeric",
                            "ensure_2d"})


def _keeps_floats(dtype) -> bool:
    """Whether check_array's ``dtype`` keeps a float32 or float64 array as it is: [float64, float32] (the
    estimators' list), or "numeric"."""
    if isinstance(dtype, str):
        return dtype == "numeric"
    return list(dtype) == [np.float64, np.float32]


def _plain_samples(X) -> bool:
    """X is what the fast path takes: a 2-D float32/float64 ndarray with rows and columns, every value finite
    (a finite sum says so; an overflowing one goes the long way)."""
    if not (type(X) is np.ndarray and X.ndim == 2 and X.dtype in _FLOATS and X.shape[0] > 0 and X.shape[1] > 0):
        return False
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(X.sum()))


def _plain_targets(y, n: int, multi_output: bool) -> bool:
    """y is what the fast path takes beside n samples: a numeric ndarray of n finite rows, 1-D or (with
    ``multi_output``) 2-D."""
    if (type(y) is not np.ndarray or y.ndim not in ((1, 2) if multi_output else (1,)) or y.shape[0] != n
            or y.dtype.kind not in "biuf"):
        return False
    if y.dtype.kind != "f":
        return True
    with np.errstate(over="ignore", invalid="ignore"):
        return y.size > 0 and bool(np.isfinite(y.sum()))


def validate_data(estimator, X="no_validation", **kwargs):
    """scikit-learn's ``validate_data`` (see the module: plain arrays take a fast path with the same result)."""
    reset = kwargs.get("reset", True)
    fast = (set(kwargs) <= _FAST_KEYWORDS and kwargs.get("ensure_2d", True) is True
            and _keeps_floats(kwargs.get("dtype", ())) and _plain_samples(X)
            and (reset or not hasattr(estimator, "feature_names_in_"))
            and (reset or getattr(estimator, "n_features_in_", None) == X.shape[1]))
    y = kwargs.get("y", "no_validation")
    with_targets = not (isinstance(y, str) and y == "no_validation")
    if fast and with_targets:
        fast = _plain_targets(y, X.shape[0], bool(kwargs.get("multi_output", False)))
    if not fast:
        return _sklearn_validate(estimator, X, **kwargs)
    if kwargs.get("copy", False):
        X = X.copy(order="K")
    if reset:
        if hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
        estimator.n_features_in_ = X.shape[1]
    return (X, y) if with_targets else X


def check_is_fitted(estimator, attributes: str | None = None) -> None:
    """scikit-learn's ``check_is_fitted(estimator)`` at the cost of an attribute lookup: NotFittedError with its
    message unless the estimator says it is fitted (``__sklearn_is_fitted__``) or has a fitted attribute (a name
    ending in "_"). scikit-learn's reads the estimator's tags and lists every attribute, 20 µs a call, and a
    prediction checks several times. ``attributes``: that attribute, not any, says it is fitted."""
    from sklearn.exceptions import NotFittedError

    is_fitted = getattr(estimator, "__sklearn_is_fitted__", None)
    if attributes is not None:
        fitted = hasattr(estimator, attributes)
    elif is_fitted is not None:
        fitted = is_fitted()
    else:
        fitted = any(name.endswith("_") and not name.startswith("__") for name in vars(estimator))
    if not fitted:
        raise NotFittedError(f"This {type(estimator).__name__} instance is not fitted yet. Call 'fit' with appropriate "
                             "arguments before using this estimator.")
