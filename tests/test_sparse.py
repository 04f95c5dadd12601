"""Sparse samples (SciPy CSR/CSC) are never densified: every native kernel is evaluated from sparse inner
products and the rows' norms (cpp/include/fastkpca/sparse_tiles.hpp) in every storage mode, and KernelPCA,
KernelRidge, Nystroem, SpectralEmbedding and SpectralClustering fit, transform and predict on them with the
results of their dense fits and of scikit-learn's sparse path."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

import fastkpca
import reference as ref
from fastkpca import _native
from fastkpca.kernels import NativeKernel, registry
from fastkpca.kernels.native import native_operand
from fastkpca.operators import kernel_operator

KERNELS = sorted({spec.name for spec in registry.NAMES.values()})


def text_like(n=600, d=3000, density=0.01, seed=0, dtype=np.float64):
    """Non-negative counts-like CSR rows, as TF-IDF features are, with a few empty rows."""
    X = sparse.random(n, d, density=density, format="csr", random_state=seed, dtype=dtype)
    X.data = np.abs(X.data) + 0.1
    keep = np.ones(n, dtype=dtype)
    keep[::97] = 0
    X = (sparse.diags(keep) @ X).tocsr()
    X.eliminate_zeros()
    return X


def subspace_angle(A, B):
    from scipy.linalg import subspace_angles

    return float(np.max(subspace_angles(A, B)))


def pairwise_kernels(X, Y=None, metric="rbf", **params):
    """scikit-learn's kernel: its sparse path (pairwise_kernels), or for the Matern kernels, which it has only as
    a Gaussian process kernel object, that object (ℓ = 1/√gamma) on the dense rows."""
    from sklearn.gaussian_process.kernels import Matern
    from sklearn.metrics.pairwise import pairwise_kernels as theirs

    nu = {"matern12": 0.5, "matern32": 1.5, "matern52": 2.5}.get(metric)
    if nu is None:
        return theirs(X, Y, metric=metric, **params)
    matern = Matern(length_scale=1 / np.sqrt(params["gamma"]), nu=nu)
    return matern(X.toarray(), None if Y is None else Y.toarray())


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernels_equal_scikit_learns_sparse_path(kernel):
    X, Y = text_like(300, 2000, seed=1), text_like(70, 2000, seed=2)
    params = {name: value for name, value in (("gamma", 0.7), ("degree", 3), ("coef0", 0.5))
              if name in registry.KERNELS[kernel].parameters}
    expected = pairwise_kernels(X, metric=kernel, **params)
    got = fastkpca.gram(X, kernel=kernel, **params)
    scale = max(1.0, np.abs(expected).max())
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * scale)
    assert np.array_equal(got, got.T)
    np.testing.assert_allclose(fastkpca.gram(X, Y, kernel=kernel, **params),
                               pairwise_kernels(X, Y, metric=kernel, **params), rtol=0, atol=1e-12 * scale)
    # a dense side is evaluated against the sparse one as CSR
    np.testing.assert_allclose(fastkpca.gram(X, Y.toarray(), kernel=kernel, **params),
                               pairwise_kernels(X, Y, metric=kernel, **params), rtol=0, atol=1e-12 * scale)
    # float32 rows: sums in double, rounded once
    got32 = fastkpca.gram(X.astype(np.float32), kernel=kernel, **params)
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, expected, rtol=0, atol=3e-6 * scale)


@pytest.fixture(scope="module")
def storage_problem():
    """Samples of 5,000 sparse features and their rbf kernel by the reference (seconds of NumPy: made once)."""
    X = text_like(400, 5000, density=0.004, seed=3)
    return X, ref.kernel(X.toarray(), None, "rbf", 0.5)


@pytest.mark.parametrize("storage", ["packed", "cached", "matrix_free", "full"])
def test_every_storage_multiplies_by_the_same_kernel(storage, storage_problem):
    X, K = storage_problem
    V = np.random.default_rng(0).standard_normal((400, 5))
    limit = None if storage != "cached" else 64 * 2**20 + 2_000_000  # cached: 1 of the 2 tile rows kept
    op = kernel_operator(X, kernel="rbf", gamma=0.5, storage="auto" if storage == "cached" else storage,
                         memory_limit=limit)
    assert op.storage == storage
    np.testing.assert_allclose(op @ V, K @ V, rtol=0, atol=1e-11)
    np.testing.assert_allclose(op.row_sums(), K.sum(axis=1), rtol=1e-13)
    assert op.trace() == pytest.approx(400.0)
    if storage != "full":  # tiled: the same products bit for bit, on any number of threads
        free = kernel_operator(X, kernel="rbf", gamma=0.5, storage="matrix_free")
        for threads in (1, 2, 3):
            assert np.array_equal(op.native.matmat(np.asfortranarray(V), threads),
                                  free.native.matmat(np.asfortranarray(V), 1))


def test_user_matrices_are_never_changed_and_duplicates_are_summed():
    """A CSR matrix with repeated entries (not canonical) is read as the sum of its repeats, as SciPy's
    products read it, and the caller's matrix is left as it was."""
    rows, cols = np.array([0, 0, 1, 2, 2, 2]), np.array([3, 3, 1, 0, 4, 0])
    values = np.array([1.0, 2.0, 0.5, 1.5, -1.0, 0.25])
    X = sparse.csr_matrix((values, (rows, cols)), shape=(3, 6))
    X.has_canonical_format = False
    data, indices, indptr = X.data.copy(), X.indices.copy(), X.indptr.copy()
    expected = ref.kernel(X.toarray(), None, "rbf", 0.3)
    np.testing.assert_allclose(fastkpca.gram(X, kernel="rbf", gamma=0.3), expected, rtol=0, atol=1e-15)
    assert np.array_equal(X.data, data) and np.array_equal(X.indices, indices) and np.array_equal(X.indptr, indptr)
    csc = X.tocsc()
    np.testing.assert_allclose(fastkpca.gram(csc, kernel="rbf", gamma=0.3), expected, rtol=0, atol=1e-15)


def test_kernel_pca_equals_the_dense_fit_and_scikit_learn():
    from sklearn.decomposition import KernelPCA as SkKernelPCA

    X = text_like(800, 4000, density=0.005, seed=4)
    new = text_like(50, 4000, density=0.005, seed=5)
    for kernel in ("rbf", "cosine", "linear"):
        ours = fastkpca.KernelPCA(5, kernel=kernel, eigen_solver="lanczos", random_state=0, tol=1e-12).fit(X)
        dense = fastkpca.KernelPCA(5, kernel=kernel, eigen_solver="lanczos", random_state=0, tol=1e-12).fit(X.toarray())
        theirs = SkKernelPCA(5, kernel=kernel, eigen_solver="arpack", random_state=0).fit(X)
        assert ours.solver_info_["solver"] == "lanczos"
        np.testing.assert_allclose(ours.eigenvalues_, theirs.eigenvalues_, rtol=1e-10)
        np.testing.assert_allclose(ours.eigenvalues_, dense.eigenvalues_, rtol=1e-10)
        assert subspace_angle(ours.eigenvectors_, theirs.eigenvectors_) < 1e-8
        scores = ours.transform(new)
        np.testing.assert_allclose(np.abs(scores), np.abs(theirs.transform(new)), rtol=0, atol=1e-8)
        np.testing.assert_allclose(ours.transform(new.toarray()), scores, rtol=0, atol=1e-12)  # dense new rows
        np.testing.assert_allclose(dense.transform(new), dense.transform(new.toarray()), rtol=0, atol=1e-12)


def test_nystrom_kernel_pca_and_nystroem_on_sparse_rows():
    X = text_like(900, 3000, density=0.006, seed=6)
    for landmarks in ("rpcholesky", "uniform"):
        ours = fastkpca.KernelPCA(4, kernel="rbf", eigen_solver=fastkpca.Nystrom(n_landmarks=150, landmarks=landmarks),
                                  random_state=0).fit(X)
        dense = fastkpca.KernelPCA(4, kernel="rbf", eigen_solver=fastkpca.Nystrom(n_landmarks=150, landmarks=landmarks),
                                   random_state=0).fit(X.toarray())
        assert sparse.issparse(ours.landmarks_)
        np.testing.assert_array_equal(ours.landmark_indices_, dense.landmark_indices_)
        # The landmark kernel's whitening amplifies the rounding that separates the sparse and dense
        # evaluations of the same kernel (the dense one centres the data first).
        np.testing.assert_allclose(ours.eigenvalues_, dense.eigenvalues_, rtol=1e-7)
        np.testing.assert_allclose(np.abs(ours.transform(X[:40])), np.abs(dense.transform(X[:40].toarray())),
                                   rtol=0, atol=1e-7)
        ny = fastkpca.Nystroem(kernel="rbf", gamma=0.4, n_components=80, landmarks=landmarks, random_state=0).fit(X)
        nd = fastkpca.Nystroem(kernel="rbf", gamma=0.4, n_components=80, landmarks=landmarks,
                               random_state=0).fit(X.toarray())
        np.testing.assert_array_equal(ny.component_indices_, nd.component_indices_)
        # the same whitening (K_mm^-½): 1.1e-10 apart on a Zen 3 VM's AVX2 build (values near 0.05), under
        # 1e-10 on AVX-512 ones
        np.testing.assert_allclose(ny.transform(X[:30]), nd.transform(X[:30].toarray()), rtol=0, atol=1e-9)


@pytest.mark.parametrize("solver", ["cholesky", "cg", "nystrom"])
def test_kernel_ridge_equals_the_dense_fit(solver):
    X = text_like(700, 3000, density=0.01, seed=7)
    y = np.asarray(X[:, :50].sum(axis=1)).ravel() + np.random.default_rng(1).standard_normal(700) * 0.1
    solvers = {"cholesky": "cholesky", "cg": fastkpca.CG(tol=1e-12, random_state=0),
               "nystrom": fastkpca.Nystrom(n_landmarks=200, landmarks="uniform", random_state=0)}
    params = dict(alpha=0.1, kernel="rbf", gamma=0.5, solver=solvers[solver])
    ours = fastkpca.KernelRidge(**params).fit(X, y)
    dense = fastkpca.KernelRidge(**params).fit(X.toarray(), y)
    new = text_like(60, 3000, density=0.01, seed=8)
    np.testing.assert_allclose(ours.predict(new), dense.predict(new.toarray()), rtol=0, atol=1e-8)
    np.testing.assert_allclose(ours.predict(new.tocsc()), ours.predict(new), rtol=0, atol=1e-13)


def test_kernel_ridge_cv_on_sparse_rows():
    X = text_like(400, 2000, density=0.01, seed=9)
    y = np.asarray(X[:, :40].sum(axis=1)).ravel()
    for cv in (None, 4):
        ours = fastkpca.KernelRidgeCV(alphas=(0.01, 0.1, 1.0), gammas=(0.3, 1.0), cv=cv).fit(X, y)
        dense = fastkpca.KernelRidgeCV(alphas=(0.01, 0.1, 1.0), gammas=(0.3, 1.0), cv=cv).fit(X.toarray(), y)
        np.testing.assert_allclose(ours.cv_results_["mean_squared_error"], dense.cv_results_["mean_squared_error"],
                                   rtol=1e-9)
        assert (ours.alpha_, ours.gamma_) == (dense.alpha_, dense.gamma_)


def test_spectral_embedding_and_clustering_on_sparse_rows():
    rng = np.random.default_rng(10)
    blocks = []
    for i in range(3):  # three topics: each has its own heavy columns
        block = sparse.random(150, 1500, density=0.02, format="lil", random_state=i)
        block[:, 500 * i:500 * i + 30] = np.abs(rng.standard_normal((150, 30))) * 3
        blocks.append(block.tocsr())
    X = sparse.vstack(blocks).tocsr()
    for solver in ("lanczos", "nystrom"):
        kwargs = dict(affinity="rbf", gamma=0.02, random_state=0,
                      eigen_solver=fastkpca.Nystrom(n_landmarks=150) if solver == "nystrom" else solver)
        ours = fastkpca.SpectralClustering(3, **kwargs).fit(X)
        dense = fastkpca.SpectralClustering(3, **kwargs).fit(X.toarray())
        np.testing.assert_array_equal(ours.labels_, dense.labels_)
        assert len(set(ours.labels_[:150])) == 1 and len(set(ours.labels_)) == 3
        emb = fastkpca.SpectralEmbedding(2, **kwargs).fit(X)
        emb_dense = fastkpca.SpectralEmbedding(2, **kwargs).fit(X.toarray())
        assert subspace_angle(emb.embedding_, emb_dense.embedding_) < 1e-6
    # scikit-learn's rule: the nearest-neighbour affinity of sparse data falls back to rbf, with a warning
    with pytest.warns(UserWarning, match="falling back to rbf"):
        fallback = fastkpca.SpectralEmbedding(2, random_state=0).fit(X)
    assert fallback.gamma_ == pytest.approx(1 / 1500)


def test_wide_sparse_data_fits_where_its_dense_form_would_not():
    """40,000 columns × 2,000 rows would be 640 MB dense; with a memory limit of 92 MB neither that nor the
    dense eigensolver's three 32 MB matrices fit: the fit works from the sparse rows alone, by Lanczos."""
    X = text_like(2000, 40_000, density=0.0005, seed=11)
    model = fastkpca.KernelPCA(3, kernel="rbf", memory_limit="92MB", random_state=0).fit(X)
    assert not model.solver_info_["choice"]["candidates"]["dense"]["fits"]
    assert model.solver_info_["storage"] in ("cached", "matrix_free", "packed")
    expected = fastkpca.KernelPCA(3, kernel="rbf", random_state=0).fit(X)
    np.testing.assert_allclose(model.eigenvalues_, expected.eigenvalues_, rtol=1e-10)


def test_the_core_reads_the_rows_it_is_given():
    """A slice of rows (indptr not starting at 0) and float32 values reach the core as views of their own
    rows."""
    X = text_like(300, 800, density=0.02, seed=12)
    part = X[100:180]
    k = NativeKernel.resolve("cosine", None, 3, 1, 800)
    expected = ref.kernel(part.toarray(), None, "cosine", 0.0)
    np.testing.assert_allclose(k.cross(k.check_samples(part)), expected, rtol=0, atol=1e-14)
    out = np.zeros(80)
    _native.core.sparse_kernel_diagonal_into(native_operand(k.check_samples(part)), *k.params, out, 1)
    np.testing.assert_allclose(out, np.diag(expected), rtol=0, atol=1e-15)


def test_cosine_of_subnormal_rows_is_one():
    """A row of subnormal entries: its norm rounds (5e-324·√2 to 5e-324) unless the row is divided by its largest
    entry first; its cosine with itself is 1, dense or sparse."""
    from scipy import sparse

    X = np.array([[5e-324, 5e-324], [1.0, 0.0], [0.0, 0.0]])
    expected = np.array([[1.0, np.sqrt(0.5), 0.0], [np.sqrt(0.5), 1.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(fastkpca.gram(X, kernel="cosine"), expected, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(fastkpca.gram(sparse.csr_matrix(X), kernel="cosine"), expected, rtol=1e-15, atol=1e-15)
