"""fastkpca.Nystroem: scikit-learn's Nystroem, natively, with RPCholesky and given landmarks."""

import warnings

import numpy as np
import pytest
from sklearn import kernel_approximation as ska

import reference as ref
from fastkpca import Nystroem


@pytest.mark.parametrize("kernel,params,dtype", [
    ("rbf", {}, np.float64), ("laplacian", {"gamma": 0.2}, np.float64), ("sigmoid", {"coef0": 0.5}, np.float64),
    ("rbf", {"gamma": 3.0}, np.float64), ("rbf", {}, np.float32), ("laplacian", {"gamma": 0.2}, np.float32),
    # (float32 sigmoid is left out: its landmark kernel is indefinite and so ill-conditioned that W^(-1/2)
    # magnifies float32 rounding to percents, in scikit-learn's result as in ours)
])
def test_same_landmarks_and_features_as_sklearn(kernel, params, dtype, rng):
    X = rng.standard_normal((1500, 6)).astype(dtype)
    X_new = rng.standard_normal((200, 6)).astype(dtype)
    ours = Nystroem(kernel, n_components=150, random_state=4, **params).fit(X)
    theirs = ska.Nystroem(kernel, n_components=150, random_state=4, **params).fit(X)
    np.testing.assert_array_equal(ours.component_indices_, theirs.component_indices_)
    np.testing.assert_array_equal(ours.components_, theirs.components_)
    Z, Z_ref = ours.transform(X_new), theirs.transform(X_new)
    assert Z.dtype == dtype
    tol = 1e-10 if dtype == np.float64 else 2e-3
    np.testing.assert_allclose(ours.normalization_, theirs.normalization_, rtol=0,
                               atol=tol * np.abs(theirs.normalization_).max())
    np.testing.assert_allclose(Z, Z_ref, rtol=0, atol=tol * np.abs(Z_ref).max())
    assert ours.get_feature_names_out()[0] == "nystroem0"


def test_given_landmarks_give_the_nystrom_approximation(rng):
    """Φ Φᵀ = K(X, S) K(S, S)⁻¹ K(S, X) to 1e-10 for user-given landmarks (a well-conditioned W)."""
    X = rng.standard_normal((800, 5))
    S = rng.standard_normal((60, 5)) * 1.5
    Z = Nystroem(landmarks=S, gamma=0.3).fit(X).transform(X)
    C = ref.kernel(X, S, kernel="rbf", gamma=0.3)
    W = ref.kernel(S, kernel="rbf", gamma=0.3)
    expected = C @ np.linalg.solve(W, C.T)
    np.testing.assert_allclose(Z @ Z.T, expected, rtol=0, atol=1e-10 * np.abs(expected).max())
    ny = Nystroem(landmarks=S, gamma=0.3, n_components=5).fit(X)  # n_components is ignored
    assert ny.components_.shape == (60, 5) and ny.component_indices_ is None
    assert ny.get_feature_names_out().shape == (60,)


def test_rank_deficient_kernel_agrees_on_the_approximation(rng):
    """A linear kernel on 4 features with 40 landmarks: W is singular, scikit-learn's clamp of its singular
    values at 1e-12 decides the features; the approximation Φ Φᵀ still equals X Xᵀ."""
    X = rng.standard_normal((300, 4))
    ours = Nystroem("linear", n_components=40, random_state=0).fit(X).transform(X)
    theirs = ska.Nystroem("linear", n_components=40, random_state=0).fit(X).transform(X)
    np.testing.assert_allclose(ours @ ours.T, X @ X.T, atol=1e-6)
    np.testing.assert_allclose(ours @ ours.T, theirs @ theirs.T, atol=1e-6)


def test_rpcholesky_landmarks(rng):
    X = rng.standard_normal((2000, 4))
    a = Nystroem(n_components=80, landmarks="rpcholesky", random_state=1).fit(X)
    b = Nystroem(n_components=80, landmarks="rpcholesky", random_state=1).fit(X)
    np.testing.assert_array_equal(a.component_indices_, b.component_indices_)
    assert len(np.unique(a.component_indices_)) == 80
    np.testing.assert_array_equal(a.components_, X[a.component_indices_])
    assert a.landmark_info_["method"] == "rpcholesky" and a.landmark_info_["proposals"] >= 80
    # The approximation is exact on the landmarks and below K elsewhere (K − Φ Φᵀ is PSD: diagonal ≥ 0).
    Z = a.transform(a.components_)
    W = ref.kernel(a.components_, kernel="rbf", gamma=0.25)
    np.testing.assert_allclose(Z @ Z.T, W, atol=1e-10)
    Z = a.transform(X)
    assert (np.einsum("ij,ij->i", Z, Z) <= 1 + 1e-10).all()


def test_rpcholesky_beats_uniform_on_unequal_clusters(rng):
    from test_low_rank import clustered

    X = clustered(rng)
    K = ref.kernel(X, kernel="rbf", gamma=0.5)
    errors = {}
    for method in ("uniform", "rpcholesky"):
        err = []
        for seed in range(3):
            Z = Nystroem(gamma=0.5, n_components=40, landmarks=method, random_state=seed).fit_transform(X)
            err.append(np.linalg.norm(K - Z @ Z.T))
        errors[method] = np.median(err)
    assert errors["rpcholesky"] < errors["uniform"]


def test_transform_in_chunks_equals_one_piece(rng):
    X = rng.standard_normal((3000, 5))
    ny = Nystroem(n_components=100, random_state=0).fit(X)
    whole = ny.transform(X)
    ny.set_params(memory_limit=8 * 100 * 8 * 64)  # chunks of 64 rows
    # the same kernel entries; the product's rounding may depend on the BLAS blocking of the chunk
    np.testing.assert_allclose(ny.transform(X), whole, rtol=0, atol=1e-13 * np.abs(whole).max())


def test_sparse_input_and_rpcholesky(rng):
    import scipy.sparse as sp

    X = rng.standard_normal((300, 5))
    X[X < 0.5] = 0
    dense = Nystroem(n_components=30, landmarks="rpcholesky", random_state=0).fit(X)
    sparse = Nystroem(n_components=30, landmarks="rpcholesky", random_state=0).fit(sp.csr_matrix(X))
    np.testing.assert_array_equal(dense.component_indices_, sparse.component_indices_)
    np.testing.assert_allclose(sparse.transform(sp.csr_matrix(X)), dense.transform(X), atol=1e-12)


def test_bad_input_names_the_argument(rng):
    X = rng.standard_normal((50, 3))
    with pytest.raises(ValueError, match="landmarks has 4 features"):
        Nystroem(landmarks=np.ones((5, 4))).fit(X)
    bad = np.ones((5, 3))
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="landmarks contains NaN"):
        Nystroem(landmarks=bad).fit(X)
    with pytest.raises(ValueError, match="n_components=60 is larger than the number of samples"):
        Nystroem(n_components=60, landmarks="rpcholesky").fit(X)
    with pytest.raises(ValueError, match="landmarks must be one of"):
        Nystroem(landmarks="kmeans").fit(X)
    with pytest.raises(TypeError, match="n_components"):
        Nystroem(n_components=2.5).fit(X)
    with pytest.raises(ValueError, match="Don't pass gamma"):
        Nystroem(kernel="precomputed", gamma=1.0).fit(X @ X.T)
    # scikit-learn's behaviour for uniform landmarks: a warning, and n_samples landmarks.
    with pytest.warns(UserWarning, match="n_components > n_samples"):
        ny = Nystroem(n_components=60).fit(X)
    assert ny.components_.shape == (50, 3)


def test_user_arrays_are_not_modified(rng):
    X = rng.standard_normal((200, 3))
    S = rng.standard_normal((20, 3))
    X0, S0 = X.copy(), S.copy()
    Nystroem(landmarks=S).fit(X).transform(X)
    Nystroem(n_components=20, landmarks="rpcholesky").fit_transform(X)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(S, S0)


@pytest.mark.parametrize("estimator", [Nystroem(), Nystroem(n_components=10, landmarks="rpcholesky")],
                         ids=["uniform", "rpcholesky"])
def test_check_estimator(estimator):
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="n_components > n_samples")
        check_estimator(estimator)
