"""Classical scaling: the dual of PCA on distances."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")
from sklearn.decomposition import PCA  # noqa: E402

import fastkpca  # noqa: E402
import reference as ref  # noqa: E402


@pytest.fixture
def X(rng):
    return rng.standard_normal((250, 5)) * np.array([5.0, 3.0, 2.0, 1.0, 0.5])


def test_equals_pca_scores(X):
    D = np.sqrt(ref.sq_distances(X, X))
    before = D.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        E = fastkpca.classical_mds(D, 3, random_state=0)
    np.testing.assert_array_equal(D, before)
    pca = PCA(3).fit(X)
    Z = pca.transform(X)
    np.testing.assert_allclose(E * np.sign(np.sum(E * Z, axis=0)), Z, atol=1e-9)
    E2 = fastkpca.classical_mds(D**2, 3, squared=True, random_state=0)
    np.testing.assert_allclose(np.abs(E2), np.abs(E), atol=1e-9)
    m = fastkpca.ClassicalMDS(3, random_state=0).fit(X)
    np.testing.assert_allclose(m.explained_variance_, pca.explained_variance_, rtol=1e-10)
    np.testing.assert_allclose(m.explained_variance_ratio_, pca.explained_variance_ratio_, rtol=1e-10)
    mp = fastkpca.ClassicalMDS(3, dissimilarity="precomputed", random_state=0).fit(D)
    np.testing.assert_allclose(np.abs(mp.embedding_), np.abs(Z), atol=1e-9)
    np.testing.assert_allclose(mp.eigenvalues_, m.eigenvalues_, rtol=1e-10)
    assert abs(mp.smallest_eigenvalue_) < 1e-8 * mp.eigenvalues_[0]


def test_warns_for_non_euclidean(X):
    D = np.sqrt(ref.sq_distances(X, X))
    D[0, 1] = D[1, 0] = 60.0  # breaks the triangle inequality
    with pytest.warns(fastkpca.NonEuclideanWarning, match="not Euclidean"):
        fastkpca.classical_mds(D, 2, random_state=0)
    with pytest.warns(fastkpca.NonEuclideanWarning, match="not Euclidean"):
        m = fastkpca.ClassicalMDS(2, dissimilarity="precomputed", random_state=0).fit(D)
    assert m.smallest_eigenvalue_ < 0


def test_bad_input(X):
    D = np.sqrt(ref.sq_distances(X, X))
    with pytest.raises(ValueError, match="n_components"):
        fastkpca.classical_mds(D, 0)
    with pytest.raises(ValueError, match="n_components"):
        fastkpca.classical_mds(D, 251)
    with pytest.raises(ValueError, match="square"):
        fastkpca.classical_mds(D[:, :10], 2)
    A = D.copy()
    A[0, 5] += 3.0
    with pytest.raises(ValueError, match="not symmetric"):
        fastkpca.classical_mds(A, 2)
    with pytest.raises(ValueError, match="dissimilarity"):
        fastkpca.ClassicalMDS(dissimilarity="cosine").fit(X)
