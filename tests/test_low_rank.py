"""Low-rank factors: randomly pivoted Cholesky, landmark selection and the streamed Nyström algebra,
against NumPy references written from the formulas."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference as ref
from fastkpca.solvers import low_rank
from fastkpca.kernels import NativeKernel


def _kernel(name, d, **kw):
    return NativeKernel.resolve(name, kw.get("gamma"), kw.get("degree", 3), kw.get("coef0", 1.0), d)


def _nystrom_reference(K, pivots):
    """K[:, S] K[S, S]⁻¹ K[S, :], the Nyström approximation on the pivots."""
    C = K[:, pivots]
    return C @ np.linalg.solve(K[np.ix_(pivots, pivots)], C.T)


def clustered(rng, sizes=(1200, 40, 8), d=5, spread=6.0):
    """Clusters of very unequal sizes, far apart."""
    centers = rng.standard_normal((len(sizes), d)) * spread
    return np.vstack([c + 0.3 * rng.standard_normal((s, d)) for c, s in zip(centers, sizes)])


@pytest.mark.parametrize("name", ["linear", "poly", "rbf", "laplacian", "sigmoid", "cosine"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_diagonal_is_the_kernel_diagonal(name, dtype, rng):
    X = rng.standard_normal((300, 7)).astype(dtype)
    X[5] = 0.0  # cosine of a zero row is 0
    k = _kernel(name, 7, gamma=0.3, degree=2, coef0=0.5)
    expected = np.diag(ref.kernel(X.astype(np.float64), kernel=name, gamma=0.3, degree=2, coef0=0.5))
    got = k.diagonal(X)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12 if dtype == np.float64 else 1e-5, atol=1e-6)
    if name in ("rbf", "laplacian"):
        assert (got == 1).all()


@pytest.mark.parametrize("name", ["rbf", "laplacian", "poly"])
@pytest.mark.parametrize("block", [1, 7, 128])
def test_rpcholesky_is_the_nystrom_approximation_on_its_pivots(name, block, rng):
    X = rng.standard_normal((400, 4))
    k = _kernel(name, 4, gamma=0.5, degree=2, coef0=1.0)
    K = ref.kernel(X, kernel=name, gamma=0.5, degree=2, coef0=1.0)
    rank = 12 if name == "poly" else 40  # a degree-2 polynomial kernel on 4 features has rank 15
    f = low_rank.rpcholesky(X, rank, k, random_state=0, block_size=block)
    assert f.rank == rank and not f.exhausted
    assert len(np.unique(f.pivots)) == rank
    approx = _nystrom_reference(K, f.pivots)
    scale = np.abs(K).max()
    np.testing.assert_allclose(f.factor @ f.factor.T, approx, rtol=0, atol=1e-9 * scale)
    # F[pivots] is lower triangular: pivot j's row has no weight on the columns of later pivots.
    np.testing.assert_allclose(np.triu(f.factor[f.pivots], 1), 0, atol=1e-9 * np.sqrt(scale))
    assert f.trace == pytest.approx(np.trace(K), rel=1e-12)
    assert f.residual_trace == pytest.approx(np.trace(K - approx), rel=1e-6, abs=1e-9 * scale)
    assert f.n_proposals >= rank


def test_rpcholesky_is_deterministic_for_a_seed(rng):
    X = rng.standard_normal((500, 3))
    k = _kernel("rbf", 3)
    a = low_rank.rpcholesky(X, 30, k, random_state=7)
    b = low_rank.rpcholesky(X, 30, k, random_state=7)
    c = low_rank.rpcholesky(X, 30, k, random_state=8)
    np.testing.assert_array_equal(a.pivots, b.pivots)
    np.testing.assert_array_equal(a.factor, b.factor)
    assert not np.array_equal(a.pivots, c.pivots)


def test_rpcholesky_float32_matches_float64(rng):
    X = rng.standard_normal((300, 4))
    k = _kernel("rbf", 4)
    f64 = low_rank.rpcholesky(X, 25, k, random_state=1)
    f32 = low_rank.rpcholesky(X.astype(np.float32), 25, k, random_state=1)
    K = ref.kernel(X, kernel="rbf", gamma=0.25)
    np.testing.assert_allclose(f32.factor @ f32.factor.T, _nystrom_reference(K, f32.pivots), atol=1e-4)
    assert f32.residual_trace == pytest.approx(f64.residual_trace, rel=0.5)


def test_rpcholesky_stores_a_float32_factor(rng):
    """dtype=float32 stores F in float32 (the residual columns still formed in float64): F Fᵀ is still the
    Nyström approximation on its pivots, to float32's rounding of F, and the residual trace is that F's."""
    X = rng.standard_normal((5000, 4))  # more rows than one of the float64 conversion's blocks
    k = _kernel("rbf", 4)
    f = low_rank.rpcholesky(X, 60, k, random_state=3, block_size=16, dtype=np.float32)
    assert f.factor.dtype == np.float32 and f.factor.shape == (5000, 60)
    rows = rng.choice(5000, 300, replace=False)
    K = ref.kernel(X, kernel="rbf", gamma=0.25)
    F = f.factor.astype(np.float64)
    approx = K[np.ix_(rows, f.pivots)] @ np.linalg.solve(K[np.ix_(f.pivots, f.pivots)], K[np.ix_(f.pivots, rows)])
    np.testing.assert_allclose(F[rows] @ F[rows].T, approx, rtol=0, atol=1e-5)
    assert f.residual_trace == pytest.approx(np.trace(K) - np.einsum("ij,ij->", F, F), rel=1e-4)


def test_rpcholesky_stops_when_the_kernel_is_exhausted(rng):
    """A linear kernel on 3 features has rank 3: more pivots would only add rounding noise."""
    X = rng.standard_normal((200, 3))
    f = low_rank.rpcholesky(X, 10, _kernel("linear", 3), random_state=0)
    assert f.exhausted and f.rank == 3 and f.factor.shape == (200, 3)
    np.testing.assert_allclose(f.factor @ f.factor.T, X @ X.T, atol=1e-10)


def test_rpcholesky_keeps_its_small_algebra_on_one_blas_thread_and_its_products_on_the_team(rng, monkeypatch):
    """RPCholesky alternates the kernel's column passes (the core's team) with products by its tall factor: both
    the residual update and the accepted columns are the core's (tall_products), and its b × b algebra runs on one
    BLAS thread whatever the size (with BLAS's threads on the products and that algebra, the two pools' idle threads
    spun on each other's cores: slower on two threads than on one)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_counts():
        return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}

    in_small_algebra, native_products = [], []
    accept, product = low_rank._accept, low_rank._native.core.factor_product_into

    def recording_accept(*args):
        in_small_algebra.append(blas_counts())
        return accept(*args)

    def recording_product(*args):
        native_products.append(args[0].shape)
        return product(*args)

    monkeypatch.setattr(low_rank, "_accept", recording_accept)
    monkeypatch.setattr(low_rank._native.core, "factor_product_into", recording_product)
    X = rng.standard_normal((3000, 4))
    with threadpool_limits(2, user_api="blas"):  # whatever the run's own count (one in the suite's workers)
        if blas_counts() != {2}:
            pytest.skip("this BLAS does not take two threads")
        f = low_rank.rpcholesky(X, 300, _kernel("rbf", 4, gamma=0.5), random_state=0, block_size=64)
        assert blas_counts() == {2}  # restored
    blocks = len(in_small_algebra)
    assert f.rank == 300 and blocks >= 300 // 64
    assert all(counts == {1} for counts in in_small_algebra)
    # every block's accepted columns, and every block's residual update but the first's, by the core
    assert len(native_products) >= 2 * blocks - 1
    assert all(shape[0] == 3000 for shape in native_products)


def test_rpcholesky_never_picks_a_duplicate(rng):
    base = rng.standard_normal((60, 3))
    X = np.vstack([base] * 5)  # every point five times: a repeat has zero residual once one copy is chosen
    f = low_rank.rpcholesky(X, 60, _kernel("rbf", 3, gamma=2.0), random_state=0)
    assert len(np.unique(np.round(X[f.pivots], 12), axis=0)) == f.rank


def test_rpcholesky_rank_is_checked(rng):
    X = rng.standard_normal((10, 2))
    with pytest.raises(ValueError, match="rank"):
        low_rank.rpcholesky(X, 11, _kernel("rbf", 2))
    with pytest.raises(ValueError, match="rank"):
        low_rank.rpcholesky(X, 0, _kernel("rbf", 2))


def test_rpcholesky_finds_small_clusters_that_uniform_misses(rng):
    """Clusters of 1200, 40 and 8 points: RPCholesky's 40 pivots always include one of the 8-point cluster
    (its points keep a residual diagonal of 1 until then), 40 uniform draws hit it with probability 0.23;
    and RPCholesky's trace-norm error is smaller."""
    X = clustered(rng)
    k = _kernel("rbf", 5, gamma=0.5)
    K = ref.kernel(X, kernel="rbf", gamma=0.5)
    small = np.arange(1240, X.shape[0])
    rp_err, uni_err, rp_hits, uni_hits = [], [], 0, 0
    for seed in range(5):
        f = low_rank.rpcholesky(X, 40, k, random_state=seed)
        uni = np.random.RandomState(seed).permutation(X.shape[0])[:40]
        rp_err.append(f.residual_trace)
        uni_err.append(np.trace(K - _nystrom_reference(K, uni)))
        rp_hits += np.isin(small, f.pivots).any()
        uni_hits += np.isin(small, uni).any()
    assert rp_hits == 5 and uni_hits <= 3
    assert np.median(rp_err) < 0.85 * np.median(uni_err)


def test_select_landmarks(rng):
    X = rng.standard_normal((2000, 3))
    k = _kernel("rbf", 3)
    index, info = low_rank.select_landmarks(X, 50, "uniform", k, random_state=3, memory_limit=2**30)
    np.testing.assert_array_equal(index, np.random.RandomState(3).permutation(2000)[:50])  # scikit-learn's draw
    assert info["method"] == "uniform"
    index, info = low_rank.select_landmarks(X, 50, "rpcholesky", k, random_state=3, memory_limit=2**30)
    assert info["rows_searched"] == 2000 and len(np.unique(index)) == 50
    # A small memory limit makes RPCholesky search a uniform subsample (at least 4·m rows).
    index, info = low_rank.select_landmarks(X, 50, "rpcholesky", k, random_state=3, memory_limit=4 * 300 * 50 * 8)
    assert info["rows_searched"] == 300 and len(np.unique(index)) == 50 and index.max() < 2000


def test_select_landmarks_fills_a_rank_deficient_kernel_uniformly(rng):
    X = rng.standard_normal((100, 2))
    index, info = low_rank.select_landmarks(X, 6, "rpcholesky", _kernel("linear", 2), random_state=0,
                                            memory_limit=2**30)
    assert info["filled_uniformly"] == 4 and len(np.unique(index)) == 6


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 90), m=st.integers(1, 20), rows=st.integers(1, 100), f32=st.booleans())
def test_moments_and_projection_do_not_depend_on_the_chunks(n, m, rows, f32):
    rng = np.random.default_rng(n * 100 + m)
    dtype = np.float32 if f32 else np.float64
    X = rng.standard_normal((n, 3)).astype(dtype)
    S = rng.standard_normal((m, 3)).astype(dtype)
    k = _kernel("rbf", 3)
    C = ref.kernel(X.astype(np.float64), S.astype(np.float64), kernel="rbf", gamma=1 / 3)
    gram, sums = low_rank.nystrom_moments(X, S, k, rows)
    tol = 1e-12 if not f32 else 1e-5
    np.testing.assert_allclose(gram, C.T @ C, rtol=tol, atol=tol * n)
    np.testing.assert_allclose(sums, C.sum(axis=0), rtol=tol, atol=tol * n)
    P = rng.standard_normal((m, 2)).astype(dtype)
    offset = np.array([0.5, -1.0], dtype=dtype)
    whole = low_rank.nystrom_project(X, S, k, P, offset, n)
    chunked = low_rank.nystrom_project(X, S, k, P, offset, rows)
    np.testing.assert_allclose(chunked, whole, rtol=tol, atol=tol)
    np.testing.assert_allclose(whole, C @ P - offset, rtol=10 * tol, atol=10 * tol * m)


def test_nystrom_pca_matches_the_centered_approximate_kernel(rng):
    """Eigenvalues of H (C W⁻¹ Cᵀ) H, formed densely in NumPy."""
    X = rng.standard_normal((300, 4))
    S = X[rng.choice(300, 25, replace=False)]
    k = _kernel("rbf", 4)
    pca = low_rank.nystrom_pca(X, S, k, 5, rows=64)
    C = ref.kernel(X, S, kernel="rbf", gamma=0.25)
    W = ref.kernel(S, kernel="rbf", gamma=0.25)
    Kc = ref.double_center(C @ np.linalg.solve(W, C.T))
    values, vectors = np.linalg.eigh(Kc)
    np.testing.assert_allclose(pca.eigenvalues, values[::-1][:5], rtol=1e-9)
    assert pca.rank == 25
    assert pca.total_variance == pytest.approx(np.trace(Kc), rel=1e-9)
    scores = C @ pca.projection - pca.offset
    expected = vectors[:, ::-1][:, :5] * np.sqrt(values[::-1][:5])
    signs = np.sign(np.sum(scores * expected, axis=0))
    np.testing.assert_allclose(scores * signs, expected, atol=1e-8 * np.abs(expected).max())


@pytest.mark.parametrize("name", ["linear", "poly", "rbf", "laplacian", "sigmoid", "cosine"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("b", [1, 9, 40])
def test_cross_kernel_product_equals_kernel_times_block(name, dtype, b, rng):
    """K(X, Y) @ V tile by tile (never stored) against the NumPy reference; sizes off the tile grid."""
    X = rng.standard_normal((300, 5)).astype(dtype)
    Y = rng.standard_normal((530, 5)).astype(dtype)
    V = rng.standard_normal((530, b))
    k = NativeKernel.resolve(name, 0.3, 2, 0.5, 5)
    expected = ref.kernel(X.astype(np.float64), Y.astype(np.float64), kernel=name, gamma=0.3, degree=2,
                          coef0=0.5) @ V
    got = k.product(X, Y, V)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, expected, rtol=0, atol=tol * np.abs(expected).max())
    # exactly the Gram build's tiles times V (accumulated in double)
    np.testing.assert_allclose(got, k.cross(X, Y).astype(np.float64) @ V, rtol=0, atol=1e-13 * np.abs(got).max())


def test_cross_kernel_product_does_not_depend_on_threads(rng):
    X = rng.standard_normal((1100, 4))
    Y = rng.standard_normal((700, 4))
    V = rng.standard_normal((700, 3))
    one = NativeKernel.resolve("rbf", None, 3, 1, 4, n_jobs=1).product(X, Y, V)
    two = NativeKernel.resolve("rbf", None, 3, 1, 4, n_jobs=2).product(X, Y, V)
    np.testing.assert_array_equal(one, two)


def test_cross_kernel_product_checks_shapes_at_the_boundary(rng):
    from fastkpca import _native

    X = rng.standard_normal((10, 3))
    out = np.zeros((10, 2))
    with pytest.raises(ValueError, match="one row per row of y"):
        _native.core.cross_product_into(X, X, "rbf", 1.0, 3.0, 1.0, np.zeros((9, 2)), out, 1)
    with pytest.raises(ValueError, match="wrong shape"):
        _native.core.cross_product_into(X, X, "rbf", 1.0, 3.0, 1.0, np.zeros((10, 2)), np.zeros((10, 3)), 1)
    with pytest.raises(ValueError, match="columns"):
        _native.core.cross_product_into(X, X[:, :2].copy(), "rbf", 1.0, 3.0, 1.0, np.zeros((10, 2)), out, 1)


# ---------------------------------------------------------------- products with a tall factor (the core's)

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n, r, b", [(1, 1, 1), (255, 63, 2), (257, 65, 5), (1000, 130, 17), (600, 8, 1)])
def test_tall_factor_products_equal_numpy(dtype, n, r, b, rng):
    """F C, Fᵀ V and Fᵀ diag(d) F by the core (row blocks of 256, panels of 64 columns: sizes either side of both)
    equal NumPy's float64 products to rounding, for a float32 F too (converted, not multiplied in float32), and so
    do the products by NumPy that callers without ``team`` get."""
    F = rng.standard_normal((n, r)).astype(dtype)
    C, V, d = rng.standard_normal((r, b)), rng.standard_normal((n, b)), rng.uniform(0.5, 2.0, n)
    F64 = F.astype(np.float64)
    for got, expected in ((low_rank.factor_product(F, C, team=True), F64 @ C),
                          (low_rank.factor_t_product(F, V, team=True), F64.T @ V),
                          (low_rank.factor_t_product(F, V[:, 0], team=True), F64.T @ V[:, 0]),
                          (low_rank.factor_gram(F, d), F64.T @ (F64 * d[:, None])),
                          (low_rank.factor_product(F, C), F64 @ C), (low_rank.factor_t_product(F, V), F64.T @ V)):
        assert got.shape == expected.shape and got.dtype == np.float64
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-13 * max(1.0, np.abs(expected).max()) * n)
    gram = low_rank.factor_gram(F, d)
    np.testing.assert_array_equal(gram, gram.T)


def test_tall_factor_products_are_the_same_bits_on_any_threads(rng):
    """Every entry is summed by one thread over the row blocks in order: 1, 2 and 3 threads agree bit for bit."""
    from fastkpca import _native

    core = _native.core
    F, C, V, d = (rng.standard_normal((2000, 200)), rng.standard_normal((200, 7)), rng.standard_normal((2000, 7)),
                  rng.uniform(0.5, 2.0, 2000))
    results = []
    for threads in (1, 2, 3):
        product, t_product, gram = np.empty((2000, 7)), np.empty((200, 7)), np.empty((200, 200))
        core.factor_product_into(F, C, product, threads)
        core.factor_t_product_into(F, V, t_product, threads)
        core.factor_gram_into(F, d, gram, threads)
        results.append((product, t_product, gram))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


def test_tall_factor_product_of_leading_columns(rng):
    """RPCholesky's growing factor: F's first r columns times C, read in place (no copy of the slice); a C whose
    rows are not the columns used is refused, by the Python layer and at the core's boundary."""
    from fastkpca import _native

    F, C = rng.standard_normal((700, 50)), rng.standard_normal((20, 3))
    expected = F[:, :20] @ C
    np.testing.assert_allclose(low_rank.factor_product(F, C, columns=20, team=True), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(low_rank.factor_product(F, C, columns=20), expected, rtol=0, atol=1e-12)  # NumPy's
    np.testing.assert_allclose(low_rank.factor_product(F[:, :20], C, team=True), expected, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="20 rows"):
        low_rank.factor_product(F, rng.standard_normal((21, 3)), columns=20)
    with pytest.raises(ValueError, match="50 rows"):
        low_rank.factor_product(F, C)
    with pytest.raises(ValueError, match="at most one row per column"):
        _native.core.factor_product_into(F, rng.standard_normal((51, 3)), np.empty((700, 3)), 1)
    with pytest.raises(ValueError, match="out must be"):
        _native.core.factor_product_into(F, C, np.empty((699, 3)), 1)
    with pytest.raises(ValueError, match="one row per row of f"):
        _native.core.factor_t_product_into(F, np.empty((699, 3)), np.empty((50, 3)), 1)
    with pytest.raises(ValueError, match="one entry per row of f"):
        _native.core.factor_gram_into(F, np.ones(699), np.empty((50, 50)), 1)
