"""Spectral embedding and clustering: the operator view against a dense NumPy normalised affinity, the
embedding against scipy.linalg.eigh of it and against scikit-learn, every storage, float32, Nyström, the
bad inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import linalg
from sklearn import cluster as skc
from sklearn import manifold as skm
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score
from sklearn.metrics.pairwise import laplacian_kernel, rbf_kernel

import fastkpca
from fastkpca import Nystrom, SpectralClustering, SpectralEmbedding, spectral_clustering, spectral_embedding
from fastkpca.solvers.spectral import embedding, start
from fastkpca.solvers.spectral.start import NearestCentre, partition_start


def reference_embedding(A, k, norm_laplacian=True, drop_first=True):
    """The embedding from a dense eigendecomposition of SciPy's graph Laplacian, written from the
    definitions (scikit-learn's conventions), in NumPy."""
    from scipy.sparse import csgraph

    A = np.asarray(A, dtype=np.float64)
    L, dd = csgraph.laplacian(A, normed=norm_laplacian, return_diag=True)
    if norm_laplacian:
        L[np.diag_indices_from(L)] = 1.0
    values, vectors = linalg.eigh(L)
    E = vectors[:, : k + drop_first].T
    if norm_laplacian:
        E = E / dd
    E *= np.sign(E[np.arange(E.shape[0]), np.argmax(np.abs(E), axis=1)])[:, None]
    return E[1:].T if drop_first else E.T, values


def max_angle(a, b):
    return float(linalg.subspace_angles(a, b).max())


def blobs(n, d=6, centers=4, std=2.5, seed=0):
    X, y = make_blobs(n, n_features=d, centers=centers, cluster_std=std, random_state=seed)
    return X, y


@pytest.mark.parametrize("storage", ["full", "packed", "cached", "matrix_free"])
def test_normalized_view_equals_the_dense_normalised_affinity(storage, rng):
    X = rng.standard_normal((700, 5))
    op = fastkpca.kernel_operator(X, kernel="rbf", gamma=0.3, storage=storage)
    K = rbf_kernel(X, gamma=0.3)
    a = np.diag(K).copy()
    d = K.sum(1) - a
    s = 1 / np.sqrt(d)
    M = s[:, None] * (K - np.diag(a)) * s[None, :]
    V = rng.standard_normal((700, 5))
    W = op.normalized(s, a) @ V
    np.testing.assert_allclose(W, M @ V, rtol=0, atol=1e-12 * np.abs(M).sum(1).max() * np.abs(V).max())
    assert op.normalized(s, a).trace() == 0.0


def test_normalized_view_checks_its_vectors():
    op = fastkpca.kernel_operator(np.eye(4), kernel="rbf", storage="full")
    with pytest.raises(ValueError, match="shape"):
        op.normalized(np.ones(3), np.ones(4))


@pytest.mark.parametrize("norm_laplacian", [True, False])
@pytest.mark.parametrize("drop_first", [True, False])
@pytest.mark.parametrize("eigen_solver", ["lanczos", "dense"])
def test_function_matches_the_dense_laplacian(norm_laplacian, drop_first, eigen_solver, rng):
    X, _ = blobs(300, std=4.0)
    A = rbf_kernel(X, gamma=0.05)
    A[np.diag_indices_from(A)] = rng.uniform(0, 3, 300)  # the diagonal must be ignored
    E = spectral_embedding(A, n_components=4, norm_laplacian=norm_laplacian, drop_first=drop_first,
                           random_state=0, eigen_tol=1e-12, eigen_solver=eigen_solver)
    R, values = reference_embedding(A, 4, norm_laplacian, drop_first)
    gaps = np.diff(values[: 4 + drop_first + 1])
    assert gaps.min() > 1e-5 * values[-1]  # the data give a well-defined subspace
    assert max_angle(E, R) < 1e-8
    np.testing.assert_allclose(E, R, atol=1e-7 * np.abs(R).max())


@pytest.mark.parametrize("storage", ["full", "packed", "cached", "matrix_free"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_estimator_matches_scikit_learn_in_every_storage(storage, dtype):
    from sklearn_swap import force_storage

    X, _ = blobs(600, std=3.0)
    X = X.astype(dtype)
    undo = force_storage(storage) if storage in ("cached", "matrix_free") else (lambda: None)
    try:
        ours = SpectralEmbedding(n_components=3, affinity="rbf", gamma=0.05, random_state=0, eigen_solver="lanczos",
                                 memory_limit="4GB" if storage != "full" else None).fit(X)
    finally:
        undo()
    ref = skm.SpectralEmbedding(n_components=3, affinity="rbf", gamma=0.05, random_state=0).fit(X.astype(np.float64))
    assert ours.embedding_.dtype == dtype
    tol = 1e-6 if dtype == np.float64 else 1e-3
    assert max_angle(ours.embedding_.astype(np.float64), ref.embedding_) < tol
    info = ours.solver_info_
    assert info["solver"] == "lanczos" and info["converged"]
    if storage in ("cached", "matrix_free"):
        assert info["storage"] == storage


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_dense_solver_is_auto_for_few_samples_and_gives_scikit_learns_embedding(dtype):
    X, _ = blobs(200, std=3.0)
    ours = SpectralEmbedding(n_components=3, affinity="rbf", gamma=0.05, random_state=0).fit(X.astype(dtype))
    assert ours.solver_info_["solver"] == "dense" and ours.embedding_.dtype == dtype
    ref = skm.SpectralEmbedding(n_components=3, affinity="rbf", gamma=0.05, random_state=0).fit(X)
    assert max_angle(ours.embedding_.astype(np.float64), ref.embedding_) < (1e-9 if dtype == np.float64 else 1e-3)
    lanczos = SpectralEmbedding(n_components=3, affinity="rbf", gamma=0.05, random_state=0,
                                eigen_solver="lanczos").fit(X.astype(dtype))
    values = "laplacian_eigenvalues"
    np.testing.assert_allclose(ours.solver_info_[values], lanczos.solver_info_[values],
                               atol=1e-8 if dtype == np.float64 else 1e-5)
    # many samples: the Lanczos passes, which need no n × n matrix
    from fastkpca.solvers import choice

    assert choice.spectral(None, n=20_000, d=16, k=4, memory_limit=2**34).picked == "lanczos"


@given(n=st.integers(12, 80), d=st.integers(1, 5), gamma=st.floats(0.05, 2.0), seed=st.integers(0, 10**6))
@settings(max_examples=25, deadline=None)
def test_embedding_solves_the_laplacian_eigenproblem(n, d, gamma, seed):
    """Whatever the data: every returned vector, times √d, is an eigenvector of the normalised Laplacian
    within tolerance, and the eigenvalues are the smallest ones."""
    X = np.random.default_rng(seed).standard_normal((n, d))
    k = 3
    est = SpectralEmbedding(n_components=k, affinity="rbf", gamma=gamma, random_state=0, eigen_tol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # tiny random graphs may underflow to disconnected
        E = est.fit(X).embedding_
    A = rbf_kernel(X, gamma=gamma)
    deg = embedding.degrees(A.sum(1), np.diag(A))
    L = np.eye(n) - (A - np.diag(np.diag(A))) / np.outer(deg.root, deg.root)
    L[np.diag_indices(n)] = 1.0
    lam = est.solver_info_["laplacian_eigenvalues"]
    exact = linalg.eigvalsh(L)[: k + 1]
    np.testing.assert_allclose(lam, exact, atol=1e-8)
    U = E * deg.root[:, None]
    for j in range(k):
        u = U[:, j] / np.linalg.norm(U[:, j])
        assert np.linalg.norm(L @ u - lam[j + 1] * u) < 1e-7


def test_clustering_same_labels_as_scikit_learn():
    X, y = blobs(800, d=4, centers=5, std=0.6)
    for assign in ("kmeans", "discretize", "cluster_qr"):
        ours = SpectralClustering(n_clusters=5, gamma=0.5, assign_labels=assign, random_state=0).fit_predict(X)
        ref = skc.SpectralClustering(n_clusters=5, gamma=0.5, assign_labels=assign, random_state=0).fit_predict(X)
        assert adjusted_rand_score(ours, ref) == 1.0
        assert adjusted_rand_score(ours, y) == 1.0


def test_function_forms_and_affinities():
    X, y = blobs(300, d=3, centers=3, std=0.5)
    A = rbf_kernel(X, gamma=1.0)
    assert adjusted_rand_score(spectral_clustering(A, n_clusters=3, random_state=0), y) == 1.0
    assert adjusted_rand_score(spectral_clustering(sp.csr_matrix(A), n_clusters=3, random_state=0), y) == 1.0
    X = np.random.default_rng(0).uniform(-1, 1, (300, 3))  # one connected cloud: a well-defined subspace
    for affinity in ("nearest_neighbors", "laplacian", "precomputed_nearest_neighbors"):
        data = X if affinity != "precomputed_nearest_neighbors" else np.linalg.norm(X[:, None] - X[None], axis=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            ours = SpectralEmbedding(n_components=2, affinity=affinity, n_neighbors=15, random_state=0).fit(data)
            theirs = affinity if affinity != "laplacian" else (lambda Z: laplacian_kernel(Z, gamma=1 / 3))
            ref = skm.SpectralEmbedding(n_components=2, affinity=theirs, n_neighbors=15, random_state=0).fit(data)
        assert max_angle(ours.embedding_, ref.embedding_) < 1e-5, affinity
    E = SpectralEmbedding(n_components=2, affinity=lambda Z: rbf_kernel(Z, gamma=1.0), random_state=0).fit_transform(X)
    assert E.shape == (300, 2)
    assert max_angle(E, skm.SpectralEmbedding(n_components=2, affinity="rbf", gamma=1.0, random_state=0)
                     .fit_transform(X)) < 1e-6


def test_affinity_matrix_is_built_only_on_access():
    X, _ = blobs(200)
    est = SpectralEmbedding(n_components=2, affinity="rbf", gamma=0.1, random_state=0).fit(X)
    assert "affinity_matrix_" not in vars(est)
    np.testing.assert_allclose(est.affinity_matrix_, rbf_kernel(X, gamma=0.1), atol=1e-14)


def test_partition_start_is_root_times_the_group_indicators():
    labels = np.array([2, 0, 2, 5, 0])
    root = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    S = partition_start(labels, root)
    expected = np.array([[0, 2, 0, 0, 5], [1, 0, 3, 0, 0], [0, 0, 0, 4, 0]], dtype=float).T
    np.testing.assert_allclose(S, expected / np.linalg.norm(expected, axis=0), rtol=1e-15)
    np.testing.assert_allclose(partition_start(labels, None).T @ partition_start(labels, None), np.eye(3))


def test_nearest_centre_on_dense_and_sparse_rows(rng):
    X = rng.standard_normal((200, 5))
    centres = rng.standard_normal((7, 5))
    expected = np.argmin(((X[:, None, :] - centres[None]) ** 2).sum(axis=2), axis=1)
    np.testing.assert_array_equal(NearestCentre(centres)(X), expected)
    np.testing.assert_array_equal(NearestCentre(centres)(sp.csr_matrix(X)), expected)


def test_kmeans_start_solves_separated_clusters_in_a_few_passes_and_changes_nothing(monkeypatch):
    """scikit-learn's SpectralClustering default gamma = 1 on separated blobs: the ninth Laplacian
    eigenvalue is small, and from random vectors the solver needs many passes; started from √d times the
    indicators of a k-means partition, a few; the embedding is the same subspace either way and the labels
    the same."""
    X, _ = make_blobs(2500, n_features=8, centers=6, cluster_std=1.0, random_state=3)
    warm = SpectralClustering(n_clusters=6, random_state=0).fit(X)
    monkeypatch.setattr(start, "MIN_ROWS", 10**9)  # no partition: a random start
    cold = SpectralClustering(n_clusters=6, random_state=0).fit(X)
    assert warm.solver_info_["start"] == "partition into 6 groups" and cold.solver_info_["start"] == "random"
    assert warm.solver_info_["n_passes"] <= 3 < 10 <= cold.solver_info_["n_passes"]
    assert max_angle(warm.embedding_, cold.embedding_) < 1e-6
    assert adjusted_rand_score(warm.labels_, cold.labels_) == 1.0


def test_a_start_that_misses_the_clusters_still_gives_the_dense_embedding(monkeypatch):
    """Two moons, where k-means' groups are not the affinity's clusters: the embedding is still that of the
    dense Laplacian."""
    from sklearn.datasets import make_moons

    monkeypatch.setattr(start, "MIN_ROWS", 0)
    X, _ = make_moons(700, noise=0.05, random_state=0)
    est = SpectralEmbedding(n_components=3, affinity="rbf", gamma=30.0, random_state=0).fit(X)
    assert est.solver_info_["start"] == "partition into 4 groups"
    ref, _ = reference_embedding(rbf_kernel(X, gamma=30.0), 3)
    assert max_angle(est.embedding_, ref) < 1e-6


def test_nystrom_embedding_close_to_exact():
    """On data whose eigenvalues are distinct (uniform in a cube): within an angle of 0.01 of the exact
    embedding (measured 1.1e-3 at m = 100..1000: the floor is the diagonal term the approximation leaves
    out, see solvers/spectral/nystrom.py), and the same clusters on blobs."""
    X = np.random.default_rng(0).uniform(-1, 1, (3000, 3))
    exact = SpectralEmbedding(n_components=3, affinity="rbf", gamma=1.0, random_state=0).fit(X).embedding_
    approx = SpectralEmbedding(n_components=3, affinity="rbf", gamma=1.0, eigen_solver=Nystrom(n_landmarks=300),
                               random_state=0).fit(X)
    assert approx.solver_info_["solver"] == "nystrom"
    assert max_angle(approx.embedding_, exact) < 0.01
    X, _ = blobs(3000, d=5, centers=4, std=1.5)
    labels = SpectralClustering(n_clusters=4, gamma=0.05, eigen_solver=Nystrom(n_landmarks=300),
                                random_state=0).fit_predict(X)
    ref = SpectralClustering(n_clusters=4, gamma=0.05, random_state=0).fit_predict(X)
    assert adjusted_rand_score(labels, ref) > 0.99


def test_scikit_learn_solvers_by_name():
    X, _ = blobs(200, std=3.0)
    for solver in ("arpack", "lobpcg"):
        ours = SpectralEmbedding(n_components=2, affinity="rbf", eigen_solver=solver, random_state=0).fit(X)
        ref = skm.SpectralEmbedding(n_components=2, affinity="rbf", eigen_solver=solver, random_state=0).fit(X)
        np.testing.assert_allclose(ours.embedding_, ref.embedding_, atol=1e-10)
        assert ours.solver_info_["solver"] == solver


# ------------------------------------------------------------------------------------------- bad input

def test_bad_affinities_are_refused_by_name():
    A = rbf_kernel(np.random.default_rng(0).standard_normal((20, 2)))
    with pytest.raises(ValueError, match="negative"):
        spectral_embedding(A - 0.5)
    with pytest.raises(ValueError, match="symmetric"):
        spectral_embedding(A + np.triu(np.full_like(A, 0.1), 1))
    with pytest.raises(ValueError, match="square"):
        spectral_embedding(A[:, :10])
    bad = A.copy()
    bad[3, 4] = bad[4, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        spectral_embedding(bad)
    with pytest.raises(ValueError, match="negative"):
        spectral_embedding(sp.csr_matrix(A - 0.5))
    with pytest.raises(TypeError, match="np.matrix"):
        spectral_clustering(np.matrix(A))
    X = np.random.default_rng(0).standard_normal((10, 3))
    with pytest.raises(ValueError, match="n_clusters=11"):
        SpectralClustering(n_clusters=11).fit(X)
    with pytest.raises(ValueError, match="larger than the number of samples"):
        SpectralEmbedding(n_components=10, affinity="rbf").fit(X)
    X[2, 1] = np.inf
    with pytest.raises(ValueError, match="[Ii]nf"):
        SpectralEmbedding(affinity="rbf").fit(X)
    with pytest.raises(ValueError, match="eigen_solver"):
        SpectralEmbedding(eigen_solver="magic").fit(X)


def test_negative_kernel_degrees_are_refused():
    X = np.random.default_rng(1).standard_normal((50, 3))
    with pytest.raises(ValueError, match="non-negative affinities"):
        SpectralEmbedding(n_components=2, affinity="linear").fit(X - X.mean(0) + np.r_[[[40, 0, 0]], np.zeros((49, 3))])


def test_disconnected_graph_warns_and_isolated_points_are_defined():
    A = np.zeros((12, 12))
    A[:6, :6] = 1.0
    A[6:11, 6:11] = 1.0  # node 11 is isolated
    with pytest.warns(UserWarning, match="not fully connected"):
        E = spectral_embedding(A, n_components=2, drop_first=False, random_state=0)
    ref, _ = reference_embedding(A, 2, True, False)
    assert np.isfinite(E).all()
    assert max_angle(E, ref) < 1e-6 or E.shape == ref.shape  # degenerate eigenvalue 0 three times: any basis
    est = SpectralClustering(n_clusters=3, affinity="precomputed", random_state=0)
    with pytest.warns(UserWarning, match="not fully connected"):
        labels = est.fit_predict(A)
    assert len(set(labels[:6])) == 1 and len(set(labels[6:11])) == 1 and len(set(labels)) == 3
    assert est.solver_info_["n_isolated"] == 1


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 700), edges=st.integers(0, 1400), seed=st.integers(0, 2**16))
def test_connectivity_of_a_matrix_is_its_components(n, edges, seed):
    """The dense search (its frontier read in blocks of rows) and the sparse path against SciPy's components."""
    from scipy.sparse.csgraph import connected_components

    from fastkpca.solvers.spectral.affinity import matrix_graph_is_connected

    rng = np.random.default_rng(seed)
    A = np.zeros((n, n))
    i, j = rng.integers(0, n, edges), rng.integers(0, n, edges)
    A[i, j] = A[j, i] = rng.uniform(0.1, 1.0, edges)
    expected = connected_components(sp.csr_matrix(A), directed=False)[0] == 1
    assert matrix_graph_is_connected(A) == expected
    assert matrix_graph_is_connected(sp.csr_matrix(A)) == expected
    assert matrix_graph_is_connected(sp.coo_array(A)) == expected


def test_scikit_learns_private_functions_used_are_where_they_were():
    """Label assignment calls scikit-learn's discretize and cluster_qr from its private module: a release that
    moves or changes them fails here, by name, before a user's fit does."""
    from sklearn.cluster._spectral import cluster_qr, discretize

    maps = np.repeat(np.eye(3), 4, axis=0) + 0.01 * np.random.default_rng(0).standard_normal((12, 3))
    truth = np.repeat(np.arange(3), 4)
    assert adjusted_rand_score(truth, discretize(maps, random_state=0)) == 1.0
    assert adjusted_rand_score(truth, cluster_qr(maps)) == 1.0


def test_user_arrays_are_not_modified():
    A = rbf_kernel(np.random.default_rng(0).standard_normal((40, 2)))
    A[np.diag_indices(40)] = 2.0
    before = A.copy()
    spectral_embedding(A, n_components=2)
    np.testing.assert_array_equal(A, before)


# -------------------------------------------------------------------------------------- conformance

@pytest.mark.parametrize("estimator", [SpectralEmbedding(affinity="rbf", random_state=0),
                                       SpectralClustering(n_clusters=2, random_state=0)],
                         ids=["embedding", "clustering"])
def test_check_estimator(estimator):
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check_estimator(estimator)


def test_an_affinity_dominated_by_its_diagonal_keeps_its_small_degrees():
    """An rbf affinity of points far apart (gamma = 1, scikit-learn's default, on 3,000-dimensional sparse
    rows): k(x, x) = 1 and the other entries far smaller, so that a third of the degrees are below 1e-13. As
    the difference
    of a row sum and its diagonal they would be rounding noise (and the normalised operator with them: it
    once took 1000 passes and did not converge); the affinity's operator excludes its diagonal, so the
    degrees and the embedding are those of the dense Laplacian, and the labels scikit-learn's."""
    X = sp.random(700, 3000, density=0.02, format="csr", random_state=3)
    A = rbf_kernel(X, gamma=1.0)
    np.fill_diagonal(A, 0.0)
    degrees = A.sum(axis=1)
    assert degrees.min() < 1e-13 < degrees.max()
    model = SpectralEmbedding(3, affinity="rbf", gamma=1.0, random_state=0).fit(X)
    assert model.solver_info_["converged"] and model.solver_info_["n_passes"] < 100
    M = A / np.sqrt(np.outer(degrees, degrees))
    values, vectors = linalg.eigh(M)
    expected = vectors[:, ::-1][:, 1:4] / np.sqrt(degrees)[:, None]
    got = model.embedding_
    for j in range(3):  # each direction, up to sign and scale (the gaps between these eigenvalues are 1e-3)
        cosine = abs(got[:, j] @ expected[:, j]) / np.linalg.norm(got[:, j]) / np.linalg.norm(expected[:, j])
        assert cosine > 1 - 1e-6
    ours = SpectralClustering(4, random_state=0).fit(X).labels_
    theirs = skc.SpectralClustering(4, random_state=0).fit(X).labels_
    assert adjusted_rand_score(ours, theirs) == 1.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("rows", [0, 1, 3])  # matrix-free, cached, packed (700 samples: 3 tile rows)
def test_kernel_operators_without_their_diagonal(rows, dtype):
    """An affinity's operator, dense or sparse rows, is K − diag(K) in every storage: the diagonal entries are
    zero in the tiles themselves (stored or computed), not subtracted after the product."""
    from fastkpca import _native
    from fastkpca.kernels import NativeKernel
    from fastkpca.kernels.native import native_operand

    X = sp.random(700, 300, density=0.05, format="csr", random_state=4, dtype=dtype)
    k = NativeKernel.resolve("rbf", 0.2, 3, 1, 300)
    K = rbf_kernel(X.toarray().astype(np.float64), gamma=0.2)
    np.fill_diagonal(K, 0.0)
    V = np.asfortranarray(np.random.default_rng(0).standard_normal((700, 5)))
    tol = 1e-12 if dtype == np.float64 else 1e-5
    dense = _native.core.kernel_operator(X.toarray(), *k.params, rows, 2, True)
    sparse_op = _native.core.sparse_kernel_operator(native_operand(k.check_samples(X)), *k.params, rows, 2, True)
    for op in (dense, sparse_op):
        np.testing.assert_allclose(op.matmat(V, 2), K @ V, rtol=0, atol=tol * np.abs(K @ V).max())
        np.testing.assert_allclose(op.row_sums(2), K.sum(axis=1), rtol=tol)
        assert op.trace(2) == 0.0
