"""fastkpca._sklearn_compat.validate_data: its fast path for plain arrays gives scikit-learn's result, and every
other input goes to scikit-learn's own function (its conversions and its errors)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.utils.validation import validate_data as sklearn_validate

from fastkpca import _sklearn_compat

FLOATS = [np.float64, np.float32]


class Probe(BaseEstimator):
    pass


def _both(X, **kwargs):
    """(ours, scikit-learn's): each result or the exception raised, and the estimator's attributes after."""
    out = []
    for validate in (_sklearn_compat.validate_data, sklearn_validate):
        est = Probe()
        prefit = kwargs.get("prefit")
        if prefit is not None:
            est.n_features_in_ = prefit
        args = {k: val for k, val in kwargs.items() if k != "prefit"}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = validate(est, X, **args)
            except Exception as exc:  # compared below: the same type and message
                result = exc
        out.append((result, dict(vars(est)), [str(w.message) for w in caught]))
    return out


def _same(a, b):
    if isinstance(a, Exception) or isinstance(b, Exception):
        assert type(a) is type(b) and str(a) == str(b)
    elif isinstance(a, tuple):
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


CASES = {
    "float64": np.arange(12.0).reshape(4, 3),
    "float32": np.arange(12, dtype=np.float32).reshape(4, 3),
    "fortran": np.asfortranarray(np.arange(12.0).reshape(4, 3)),
    "strided": np.arange(24.0).reshape(4, 6)[:, ::2],
    "int": np.arange(12).reshape(4, 3),
    "float16": np.arange(12, dtype=np.float16).reshape(4, 3),
    "nan": np.array([[1.0, np.nan], [2.0, 3.0]]),
    "inf": np.array([[1.0, np.inf], [2.0, 3.0]]),
    "overflowing sum": np.full((3, 2), 1.5e308),
    "empty": np.empty((0, 3)),
    "no features": np.empty((3, 0)),
    "1-D": np.arange(3.0),
    "list": [[1.0, 2.0], [3.0, 4.0]],
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("copy", [False, True])
@pytest.mark.parametrize("dtype", [FLOATS, "numeric"])
def test_samples_as_scikit_learn_validates_them(case, copy, dtype):
    (ours, ours_attrs, ours_warn), (theirs, theirs_attrs, theirs_warn) = _both(CASES[case], dtype=dtype, copy=copy)
    _same(ours, theirs)
    assert ours_attrs == theirs_attrs and ours_warn == theirs_warn
    if copy and not isinstance(ours, Exception):
        assert not np.shares_memory(ours, CASES[case])


@pytest.mark.parametrize("n_features", [3, 2])
def test_new_samples_checked_against_the_fit(n_features):
    X = np.ones((2, 3))
    (ours, _, ours_warn), (theirs, _, theirs_warn) = _both(X, dtype=FLOATS, reset=False, prefit=n_features)
    _same(ours, theirs)
    assert ours_warn == theirs_warn


def test_a_fit_on_an_array_forgets_the_feature_names_of_an_earlier_fit():
    pd = pytest.importorskip("pandas")
    est = Probe()
    sklearn_validate(est, pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]}), dtype=FLOATS)
    assert hasattr(est, "feature_names_in_")
    _sklearn_compat.validate_data(est, np.ones((2, 3)), dtype=FLOATS)
    assert not hasattr(est, "feature_names_in_") and est.n_features_in_ == 3
    # fitted with names, predicted on an array: scikit-learn's warning (its own path)
    sklearn_validate(est, pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]}), dtype=FLOATS)
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        _sklearn_compat.validate_data(est, np.ones((2, 2)), dtype=FLOATS, reset=False)


TARGETS = {
    "1-D": np.arange(4.0),
    "2-D": np.arange(8.0).reshape(4, 2),
    "int": np.arange(4),
    "nan": np.array([1.0, np.nan, 2.0, 3.0]),
    "short": np.arange(3.0),
    "object": np.array([1, 2, 3, 4], dtype=object),
    "strings": np.array(["a", "b", "c", "d"]),
    "3-D": np.ones((4, 1, 1)),
    "None": None,
}


@pytest.mark.parametrize("case", list(TARGETS))
@pytest.mark.parametrize("multi_output", [True, False])
def test_targets_as_scikit_learn_validates_them(case, multi_output):
    X = np.arange(12.0).reshape(4, 3)
    (ours, ours_attrs, ours_warn), (theirs, theirs_attrs, theirs_warn) = _both(
        X, y=TARGETS[case], dtype=FLOATS, multi_output=multi_output, y_numeric=True)
    _same(ours, theirs)
    assert ours_attrs == theirs_attrs and ours_warn == theirs_warn


def test_the_fast_path_returns_the_callers_array_uncopied():
    X = np.arange(12.0).reshape(4, 3)
    assert _sklearn_compat.validate_data(Probe(), X, dtype=FLOATS) is X
