"""What libraries that build on scikit-learn's estimators read and override: subclasses that write their own
``__init__`` (scikit-learn's parameters only, set directly) and ``fit`` (calling the parent's), and the fitted
attributes and helper methods, private ones included, that downstream packages read (docs' "Subclasses and
callers" lists the survey), each with scikit-learn's meaning: equal to scikit-learn's fitted estimator's."""

from __future__ import annotations

import importlib
import inspect
import warnings

import numpy as np
import pytest
from sklearn.base import clone

import fastkpca

COUNTERPARTS = {
    "KernelPCA": ("sklearn.decomposition", {"n_components": 3, "kernel": "rbf"}, "transform"),
    "Nystroem": ("sklearn.kernel_approximation", {"n_components": 20, "random_state": 0}, "transform"),
    "KernelRidge": ("sklearn.kernel_ridge", {"kernel": "rbf"}, "predict"),
    "KernelCenterer": ("sklearn.preprocessing", {}, "transform"),
    "SpectralEmbedding": ("sklearn.manifold", {"n_components": 2, "random_state": 0}, None),
    "SpectralClustering": ("sklearn.cluster", {"n_clusters": 2, "random_state": 0}, None),
    "GaussianProcessRegressor": ("sklearn.gaussian_process", {"random_state": 0}, "predict"),
    "GaussianProcessClassifier": ("sklearn.gaussian_process", {"random_state": 0}, "predict_proba"),
    "SVC": ("sklearn.svm", {}, "decision_function"),
    "NuSVC": ("sklearn.svm", {"nu": 0.3}, "decision_function"),
    "SVR": ("sklearn.svm", {}, "predict"),
    "NuSVR": ("sklearn.svm", {}, "predict"),
    "OneClassSVM": ("sklearn.svm", {}, "decision_function"),
}


def _data(name):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 4))
    if name == "KernelCenterer":
        from sklearn.metrics.pairwise import rbf_kernel

        return (rbf_kernel(X),), rbf_kernel(X[:10], X)
    y = np.sin(X[:, 0]) if name in ("KernelRidge", "GaussianProcessRegressor", "SVR", "NuSVR") else \
        (X[:, 0] + 0.3 * rng.standard_normal(80) > 0).astype(int)
    takes_y = name not in ("KernelPCA", "Nystroem", "SpectralEmbedding", "SpectralClustering", "OneClassSVM")
    return ((X, y) if takes_y else (X,)), X[:10]


def _subclass_of(name):
    """A subclass of fastkpca's ``name`` as a downstream package writes one: an ``__init__`` with scikit-learn's
    signature that sets its parameters itself (no call to the parent's), and a ``fit`` that calls the parent's."""
    module, _, _ = COUNTERPARTS[name]
    signature = inspect.signature(getattr(importlib.import_module(module), name).__init__)
    names = [p.name for p in signature.parameters.values()
             if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for param in names:
            setattr(self, param, bound.arguments[param])

    __init__.__signature__ = signature
    if not names:  # a class without parameters (KernelCenterer): an __init__ that takes none
        def __init__(self):
            pass

    def fit(self, *args, **kwargs):
        self.fitted_by_subclass_ = True
        return super(subclass, self).fit(*args, **kwargs)

    subclass = type(f"Downstream{name}", (getattr(fastkpca, name),), {"__init__": __init__, "fit": fit})
    return subclass


@pytest.mark.parametrize("name", sorted(COUNTERPARTS))
def test_a_subclass_with_its_own_init_and_fit_works(name):
    _, params, method = COUNTERPARTS[name]
    data, new = _data(name)
    sub = _subclass_of(name)(**params)
    assert set(sub.get_params()) == set(inspect.signature(type(sub).__init__).parameters) - {"self"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = getattr(fastkpca, name)(**params).fit(*data)
        theirs = clone(sub).fit(*data)
    assert theirs.fitted_by_subclass_
    if method is not None:
        np.testing.assert_allclose(getattr(theirs, method)(new), getattr(ours, method)(new), rtol=1e-10, atol=1e-12)
    else:
        np.testing.assert_array_equal(getattr(theirs, "labels_", getattr(theirs, "embedding_", None)),
                                      getattr(ours, "labels_", getattr(ours, "embedding_", None)))


def _pair(name, **params):
    """(fastkpca's, scikit-learn's) estimators of ``name`` fitted on the same data."""
    module = COUNTERPARTS[name][0]
    data, _ = _data(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (getattr(fastkpca, name)(**params).fit(*data),
                getattr(importlib.import_module(module), name)(**params).fit(*data))


def test_kernel_pca_centerer_and_kernel_are_scikit_learns():
    """pyod's KPCA reads the fitted ``_centerer`` (K_fit_rows_, K_fit_all_) and calls ``_get_kernel``."""
    ours, theirs = _pair("KernelPCA", n_components=3, kernel="rbf")
    X = np.random.default_rng(1).standard_normal((7, 4))
    np.testing.assert_allclose(ours._centerer.K_fit_rows_, theirs._centerer.K_fit_rows_, rtol=1e-12)
    assert ours._centerer.K_fit_all_ == pytest.approx(theirs._centerer.K_fit_all_, rel=1e-12)
    np.testing.assert_allclose(ours._get_kernel(X), theirs._get_kernel(X), rtol=1e-12)
    K = theirs._get_kernel(X, theirs.X_fit_)
    np.testing.assert_allclose(ours._get_kernel(X, ours.X_fit_), K, rtol=1e-12)
    np.testing.assert_allclose(ours._centerer.transform(K), theirs._centerer.transform(K), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.eigenvalues_, theirs.eigenvalues_, rtol=1e-10)
    np.testing.assert_allclose(np.abs(ours.eigenvectors_), np.abs(theirs.eigenvectors_), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", ["SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM"])
def test_the_svm_private_attributes_are_scikit_learns(name):
    """The attributes scikit-learn's own SVM tests and downstream packages read."""
    params = {"nu": 0.3} if name == "NuSVC" else {}
    ours, theirs = _pair(name, **params)
    for attribute in ("_sparse", "shape_fit_", "fit_status_"):
        assert getattr(ours, attribute) == getattr(theirs, attribute), attribute
    assert ours._gamma == pytest.approx(theirs._gamma)
    # scikit-learn's layout: a count per class, or a one-model fit's count twice
    assert ours._n_support.dtype == theirs._n_support.dtype and ours._n_support.shape == theirs._n_support.shape
    assert ours._n_support.sum() == (1 if name in ("SVC", "NuSVC") else 2) * ours.support_.shape[0]
    if ours.support_.shape == theirs.support_.shape:  # the same solution to LIBSVM's tolerance
        np.testing.assert_array_equal(ours._n_support, theirs._n_support)
        np.testing.assert_array_equal(ours.support_, theirs.support_)
        np.testing.assert_allclose(ours._dual_coef_, theirs._dual_coef_, rtol=1e-3, atol=1e-3)
        np.testing.assert_array_equal(ours.support_vectors_, theirs.support_vectors_)
    else:  # a variable at the tolerance's edge in one and not the other: no more than that
        assert abs(ours.support_.shape[0] - theirs.support_.shape[0]) <= 1
    np.testing.assert_allclose(ours._intercept_, theirs._intercept_, rtol=1e-3, atol=1e-3)
    if name in ("SVC", "NuSVC"):
        assert ours._probA.shape == theirs._probA.shape and ours._probB.shape == theirs._probB.shape


def test_the_gaussian_process_attributes_are_scikit_learns():
    from sklearn.gaussian_process.kernels import RBF, WhiteKernel

    ours, theirs = _pair("GaussianProcessRegressor", kernel=RBF() + WhiteKernel(), normalize_y=True)
    np.testing.assert_allclose(ours.L_, theirs.L_, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(ours.alpha_, theirs.alpha_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ours._y_train_mean, theirs._y_train_mean)
    np.testing.assert_allclose(ours._y_train_std, theirs._y_train_std)
    np.testing.assert_array_equal(ours.X_train_, theirs.X_train_)
    np.testing.assert_allclose(ours.kernel_.theta, theirs.kernel_.theta, rtol=1e-5)
    assert ours.log_marginal_likelihood_value_ == pytest.approx(theirs.log_marginal_likelihood_value_, rel=1e-8)


@pytest.mark.parametrize("name,sparse", [("SVC", False), ("SVC", True), ("NuSVC", False), ("SVR", False),
                                         ("OneClassSVM", False)])
def test_an_svm_rebuilt_from_its_fitted_attributes_predicts_as_scikit_learns(name, sparse):
    """sklearn-json, sklearn-pmml-model and nyoka make a fitted SVM by writing its attributes on a new estimator,
    then call its predict: fastkpca's reads them as scikit-learn's does."""
    import scipy.sparse as sp
    from sklearn import svm

    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4))
    y = np.arange(60) % 3 if name != "SVR" else np.sin(X[:, 0])
    X = sp.csr_matrix(X) if sparse else X
    theirs = getattr(svm, name)().fit(X, y) if name != "OneClassSVM" else svm.OneClassSVM().fit(X)
    ours = getattr(fastkpca, name)()
    for attribute in ("shape_fit_", "_gamma", "class_weight_", "classes_", "support_", "_n_support", "_probA",
                      "_probB", "_intercept_", "_dual_coef_", "_sparse", "support_vectors_", "dual_coef_",
                      "intercept_", "fit_status_", "n_features_in_", "offset_"):
        if hasattr(theirs, attribute):
            setattr(ours, attribute, getattr(theirs, attribute))
    method = "predict" if name == "SVR" else "decision_function"
    np.testing.assert_allclose(getattr(ours, method)(X[:10]), getattr(theirs, method)(X[:10]), atol=1e-12)


def test_a_callable_kernel_reads_a_stack_of_matrices():
    """pyRiemann's SVC subclass hands a callable kernel 3-D input (covariance matrices): scikit-learn does not
    validate X for a callable kernel, and neither does fastkpca."""
    from sklearn.svm import SVC as SkSVC

    rng = np.random.default_rng(0)
    A = rng.standard_normal((40, 3, 3))
    C = np.einsum("nij,nkj->nik", A, A) + np.eye(3)

    def kernel(P, Q):
        return np.einsum("aij,bij->ab", P, Q)

    y = (C[:, 0, 0] > np.median(C[:, 0, 0])).astype(int)
    ours, theirs = fastkpca.SVC(kernel=kernel).fit(C, y), SkSVC(kernel=kernel).fit(C, y)
    np.testing.assert_allclose(ours.decision_function(C[:8]), theirs.decision_function(C[:8]), rtol=1e-6, atol=1e-8)
