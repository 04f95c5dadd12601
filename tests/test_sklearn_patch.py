"""The backend switch: code written against scikit-learn gives the same results patched and unpatched,
and unpatching restores every original."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")
import sklearn.cluster  # noqa: E402
import sklearn.cluster._spectral  # noqa: E402
import sklearn.decomposition  # noqa: E402
import sklearn.kernel_approximation  # noqa: E402
import sklearn.kernel_ridge  # noqa: E402
import sklearn.manifold._spectral_embedding  # noqa: E402
import sklearn.metrics  # noqa: E402
import sklearn.metrics.pairwise as skp  # noqa: E402
import sklearn.preprocessing  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import fastkpca  # noqa: E402

NAMES = {
    sklearn.decomposition: ["KernelPCA"],
    sklearn.kernel_approximation: ["Nystroem"],
    sklearn.kernel_ridge: ["KernelRidge", "pairwise_kernels"],
    sklearn.preprocessing: ["KernelCenterer"],
    skp: ["rbf_kernel", "laplacian_kernel", "polynomial_kernel", "linear_kernel", "sigmoid_kernel",
          "cosine_similarity", "pairwise_kernels"],
    sklearn.metrics: ["pairwise_kernels"],
    sklearn.manifold._spectral_embedding: ["rbf_kernel", "_spectral_embedding"],
    sklearn.manifold: ["SpectralEmbedding", "spectral_embedding"],
    sklearn.cluster: ["SpectralClustering", "spectral_clustering"],
    sklearn.cluster._spectral: ["_spectral_embedding"],  # scikit-learn's SpectralClustering calls it
}


def snapshot():
    return {(m.__name__, n): getattr(m, n) for m, names in NAMES.items() for n in names}


@pytest.fixture
def data(rng):
    X = rng.standard_normal((150, 5))
    y = X[:, 0] - 2 * X[:, 1] ** 2 + 0.1 * rng.standard_normal(150)
    return X, y


def scikit_learn_code(X, y):
    """Code written against scikit-learn, looking everything up at call time."""
    from sklearn.decomposition import KernelPCA
    from sklearn.kernel_approximation import Nystroem
    from sklearn.cluster import SpectralClustering
    from sklearn.manifold import SpectralEmbedding
    from sklearn.metrics.pairwise import laplacian_kernel, pairwise_kernels, rbf_kernel

    pipe = make_pipeline(StandardScaler(), KernelPCA(n_components=3, kernel="rbf", gamma=0.2, random_state=0))
    Z = pipe.fit_transform(X)
    from sklearn.kernel_ridge import KernelRidge

    ridge = KernelRidge(kernel="rbf", gamma=0.3, alpha=0.1).fit(X, y).predict(X[:20])
    embed = SpectralEmbedding(n_components=2, affinity="rbf", gamma=0.5, random_state=0).fit_transform(X)
    kernels = [rbf_kernel(X, gamma=0.1), laplacian_kernel(X[:10], X), pairwise_kernels(X, metric="poly", degree=2)]
    features = Nystroem(gamma=0.2, n_components=40, random_state=0).fit_transform(X)
    labels = SpectralClustering(n_clusters=2, gamma=0.5, random_state=0).fit_predict(X)
    return Z, ridge, embed, kernels, features, labels


def test_same_results_patched_and_unpatched(data):
    X, y = data
    originals = snapshot()
    plain = scikit_learn_code(X, y)
    with fastkpca.sklearn_patched():
        from sklearn.decomposition import KernelPCA

        assert KernelPCA is fastkpca.KernelPCA
        assert sklearn.preprocessing.KernelCenterer is fastkpca.KernelCenterer
        for key, value in snapshot().items():
            assert value is not originals[key], f"{key} was not patched"
        patched = scikit_learn_code(X, y)
    assert snapshot() == originals, "unpatching must restore every original"
    Z, Z_p = plain[0], patched[0]
    signs = np.sign(np.sum(Z * Z_p, axis=0))
    np.testing.assert_allclose(Z_p * signs, Z, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(patched[1], plain[1], rtol=1e-8, atol=1e-10)
    E, E_p = plain[2], patched[2]
    signs = np.sign(np.sum(E * E_p, axis=0))
    np.testing.assert_allclose(E_p * signs, E, rtol=1e-5, atol=1e-7)
    for a, b in zip(plain[3], patched[3]):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(patched[4], plain[4], rtol=0, atol=1e-10 * np.abs(plain[4]).max())
    from sklearn.metrics import adjusted_rand_score

    assert adjusted_rand_score(plain[5], patched[5]) == 1.0


def test_unsupported_arguments_fall_back(data):
    scipy_sparse = pytest.importorskip("scipy.sparse")
    X, _ = data
    fastkpca.patch_sklearn()
    try:
        assert fastkpca._sklearn_patch.is_patched()
        fastkpca.patch_sklearn()  # idempotent
        S = scipy_sparse.csr_matrix(X)
        np.testing.assert_allclose(skp.rbf_kernel(S, gamma=0.3), skp.rbf_kernel.__wrapped__(X, gamma=0.3))
        out = skp.linear_kernel(S, dense_output=False)
        assert scipy_sparse.issparse(out)
        np.testing.assert_allclose(skp.pairwise_kernels(np.abs(X), metric="chi2"),
                                   skp.chi2_kernel(np.abs(X)))
    finally:
        fastkpca.unpatch_sklearn()
    assert not fastkpca._sklearn_patch.is_patched()
    fastkpca.unpatch_sklearn()  # harmless when not patched
