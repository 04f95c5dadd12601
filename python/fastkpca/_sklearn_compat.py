"""Small shims over scikit-learn versions (>= 1.5)."""

from __future__ import annotations

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data

    def validate_data(estimator, X="no_validation", **kwargs):
        return _validate_data(estimator, X, **kwargs)

except ImportError:  # pragma: no cover - scikit-learn 1.5

    def validate_data(estimator, X="no_validation", **kwargs):
        kwargs.pop("skip_check_array", None)
        return estimator._validate_data(X, **kwargs)
