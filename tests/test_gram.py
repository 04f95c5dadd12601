"""fastkpca.gram and pairwise_kernels against the NumPy reference (and scikit-learn where installed)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fastkpca
import reference as ref

KERNELS = ["linear", "poly", "rbf", "laplacian", "sigmoid", "cosine"]


def layout(x: np.ndarray, how: str) -> np.ndarray:
    """The same values in another memory layout."""
    if how == "F":
        return np.asfortranarray(x)
    if how == "strided":
        return np.repeat(x, 2, axis=0)[::2]  # a non-contiguous view
    return np.ascontiguousarray(x)


def tolerance(X, Y, kernel, gamma, degree, coef0, dtype):
    """(rtol, atol): rounding in the products is relative to the magnitudes they go through, and an entry below the
    dtype's normal range (a product of tiny samples) is exact only to that range's bottom."""
    rtol, atol = _tolerance(X, Y, kernel, gamma, degree, coef0, dtype)
    return rtol, max(atol, float(np.finfo(dtype).smallest_normal))


def _tolerance(X, Y, kernel, gamma, degree, coef0, dtype):
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    if kernel == "rbf":
        if dtype == np.float32:
            # Entries whose expansion ‖x‖² + ‖y‖² − 2x·y cancels are recomputed directly (kernels.hpp), so
            # float32 is accurate to a flat tolerance (it was 3e-5 off near a cross kernel's diagonal).
            return rtol, rtol
        # float64 keeps the expansion: its rounding is a few ε·(‖x−m‖² + ‖y−m‖²) (m: the column means of
        # the right operand), which γ carries into K (|dK| <= γ·|d(‖x−y‖²)|).
        m = Y.astype(np.float64).mean(axis=0)
        sx = (np.linalg.norm(X.astype(np.float64) - m, axis=1) ** 2).max()
        sy = (np.linalg.norm(Y.astype(np.float64) - m, axis=1) ** 2).max()
        eps = np.finfo(dtype).eps
        return rtol, max(rtol, 4 * eps * gamma * (sx + sy))
    if kernel not in ("linear", "poly", "sigmoid"):
        return rtol, rtol  # bounded kernels of distances or normalised products
    nx = np.linalg.norm(X.astype(np.float64), axis=1).max()
    ny = np.linalg.norm(Y.astype(np.float64), axis=1).max()
    if kernel == "sigmoid":  # tanh' <= 1: the argument's rounding, gamma·|x||y|·eps, carries over
        return rtol, rtol * max(1.0, gamma * nx * ny)
    if kernel == "linear":
        return rtol, rtol * nx * ny
    return rtol, rtol * max(1.0, degree * (gamma * nx * ny + abs(coef0)) ** degree)


data = st.tuples(st.integers(1, 100), st.integers(1, 40)).flatmap(
    lambda shape: hnp.arrays(np.float64, shape, elements=st.floats(-10, 10, allow_nan=False, width=64))
)


@given(
    X=data,
    n_y=st.one_of(st.none(), st.integers(1, 60)),
    kernel=st.sampled_from(KERNELS),
    dtype=st.sampled_from([np.float64, np.float32]),
    how=st.sampled_from(["C", "F", "strided"]),
    gamma=st.one_of(st.none(), st.floats(1e-3, 2.0)),
    degree=st.integers(0, 4),
    coef0=st.floats(0.0, 2.0),
    seed=st.integers(0, 2**32 - 1),
)
@example(X=np.zeros((3, 2)), n_y=None, kernel="cosine", dtype=np.float64, how="C", gamma=None, degree=3,
         coef0=1.0, seed=0)
@example(X=np.array([[-8.1875] + [-9.5] * 12]), n_y=7, kernel="sigmoid", dtype=np.float32, how="C", gamma=2.0,
         degree=0, coef0=2.0, seed=172)  # float32 rounding of a large argument near tanh's zero (CI find)
@example(X=np.array([[5e-324, 5e-324]]), n_y=None, kernel="cosine", dtype=np.float64, how="C", gamma=None,
         degree=0, coef0=0.0, seed=0)  # a subnormal row: its norm rounds unless it is scaled by its largest entry first
@example(X=np.array([[1.2638e-41]]), n_y=None, kernel="linear", dtype=np.float32, how="C", gamma=None, degree=0,
         coef0=0.0, seed=0)  # x² = 1.6e-82 lies far below float32's range: 0 is its float32 value
def test_matches_reference(X, n_y, kernel, dtype, how, gamma, degree, coef0, seed):
    X = X.astype(dtype)
    Y = None
    if n_y is not None:
        Y = np.random.default_rng(seed).uniform(-10, 10, size=(n_y, X.shape[1])).astype(dtype)
    if kernel in ("rbf", "laplacian") and gamma is None:
        gamma = 0.5 / X.shape[1]
    K = fastkpca.gram(layout(X, how), None if Y is None else layout(Y, how), kernel=kernel, gamma=gamma,
                      degree=degree, coef0=coef0)
    g = gamma if gamma is not None else 1.0 / X.shape[1]
    K_ref = ref.kernel(X, Y, kernel, g, degree, coef0)
    assert K.dtype == dtype
    assert K.shape == K_ref.shape
    rtol, atol = tolerance(X, X if Y is None else Y, kernel, g, degree, coef0, dtype)
    np.testing.assert_allclose(K.astype(np.float64), K_ref, rtol=rtol, atol=atol)
    if Y is None:
        assert np.array_equal(K, K.T), "K must be exactly symmetric when Y is None"
        if kernel in ("rbf", "laplacian"):
            assert np.all(np.diag(K) == 1.0)
        K2 = fastkpca.gram(X, X, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0)
        np.testing.assert_allclose(K2.astype(np.float64), K.astype(np.float64), rtol=rtol, atol=atol)


@given(X=data, kernel=st.sampled_from(["linear", "poly", "rbf", "laplacian", "cosine"]),
       degree=st.integers(1, 4), coef0=st.floats(0.0, 2.0))
def test_psd(X, kernel, degree, coef0):
    gamma = 0.5 / X.shape[1]
    K = fastkpca.gram(X, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0)
    w = np.linalg.eigvalsh(K)
    assert w[0] >= -1e-10 * max(abs(w[-1]), 1e-300)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_isa_module(isa, kernel, dtype, rng):
    """The core checks, run against each native module this CPU can execute."""
    X = rng.uniform(-3, 3, size=(300, 17)).astype(dtype)
    Y = rng.uniform(-3, 3, size=(70, 17)).astype(dtype)
    for y in (None, Y):
        K = fastkpca.gram(X, y, kernel=kernel, gamma=0.05)
        K_ref = ref.kernel(X, y, kernel, 0.05)
        tol = 1e-11 if dtype == np.float64 else 2e-5
        np.testing.assert_allclose(K, K_ref, rtol=tol, atol=tol * np.abs(K_ref).max())
    K = fastkpca.gram(X, kernel=kernel, gamma=0.05)
    assert np.array_equal(K, K.T)


def test_sklearn_equality(rng):
    skp = pytest.importorskip("sklearn.metrics.pairwise")
    X = rng.uniform(-2, 2, size=(120, 9))
    Y = rng.uniform(-2, 2, size=(50, 9))
    for metric, params in [("linear", {}), ("poly", {"degree": 2, "gamma": 0.3, "coef0": 0.5}),
                           ("polynomial", {}), ("rbf", {"gamma": 0.2}), ("rbf", {}), ("laplacian", {}),
                           ("sigmoid", {"gamma": 0.05, "coef0": 0.1}), ("cosine", {})]:
        for y in (None, Y):
            ours = fastkpca.pairwise_kernels(X, y, metric=metric, **params)
            theirs = skp.pairwise_kernels(X, y, metric=metric, **params)
            np.testing.assert_allclose(ours, theirs, rtol=1e-11, atol=1e-12)
    # The kernel-specific functions take the same arguments.
    np.testing.assert_allclose(fastkpca.gram(X, Y, kernel="rbf", gamma=0.2), skp.rbf_kernel(X, Y, gamma=0.2),
                               rtol=1e-12, atol=1e-14)


def test_pairwise_kernels_semantics(rng):
    X = rng.uniform(size=(20, 3))
    with pytest.raises(TypeError, match="degree"):
        fastkpca.pairwise_kernels(X, metric="rbf", degree=3)
    K = fastkpca.pairwise_kernels(X, metric="rbf", filter_params=True, gamma=0.5, degree=3)
    np.testing.assert_allclose(K, ref.kernel(X, None, "rbf", 0.5), rtol=1e-12)
    # Metrics fastkpca does not serve go to scikit-learn unchanged.
    pytest.importorskip("sklearn")
    Xp = np.abs(X)
    from sklearn.metrics.pairwise import chi2_kernel

    np.testing.assert_allclose(fastkpca.pairwise_kernels(Xp, metric="chi2"), chi2_kernel(Xp))
    K_pre = fastkpca.pairwise_kernels(K, metric="precomputed")
    np.testing.assert_array_equal(K_pre, K)
    np.testing.assert_allclose(fastkpca.pairwise_kernels(X, metric=lambda a, b: a @ b), X @ X.T)


def test_float32_far_from_origin(rng):
    """Features near 100 ± 1: float32 rbf stays within 1e-5 of the exact kernel (cancellation guard)."""
    X = (100 + rng.uniform(-1, 1, size=(400, 20))).astype(np.float32)
    Y = (100 + rng.uniform(-1, 1, size=(150, 20))).astype(np.float32)
    for y in (None, Y):
        K = fastkpca.gram(X, y, kernel="rbf", gamma=0.1)
        exact = ref.kernel(X, y, "rbf", 0.1)
        assert K.dtype == np.float32
        assert np.abs(K - exact).max() <= 1e-5


def test_dtypes(rng):
    X = rng.integers(-5, 5, size=(30, 4))
    assert fastkpca.gram(X).dtype == np.float64
    assert fastkpca.gram(X.astype(bool)).dtype == np.float64
    X32 = X.astype(np.float32)
    assert fastkpca.gram(X32).dtype == np.float32
    assert fastkpca.gram(X32, X.astype(np.float64)).dtype == np.float64
    np.testing.assert_allclose(fastkpca.gram(X), X @ X.T.astype(np.float64))
    np.testing.assert_allclose(fastkpca.gram(X.tolist()), X @ X.T)


def test_user_array_untouched(rng):
    X = np.asfortranarray(rng.uniform(size=(50, 6)))
    before = X.copy()
    fastkpca.gram(X, kernel="rbf")
    np.testing.assert_array_equal(X, before)


def test_threads_bit_for_bit(rng):
    X = rng.standard_normal((700, 33))  # several tiles per side
    for kernel in KERNELS:
        K1 = fastkpca.gram(X, kernel=kernel, n_jobs=1)
        K2 = fastkpca.gram(X, kernel=kernel, n_jobs=2)
        assert np.array_equal(K1, K2), kernel
        Kc1 = fastkpca.gram(X, X[:321], kernel=kernel, n_jobs=1)
        Kc2 = fastkpca.gram(X, X[:321], kernel=kernel, n_jobs=-1)
        assert np.array_equal(Kc1, Kc2), kernel


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_operands_prepared_on_the_team(rng, dtype):
    """Operands large enough to be copied and packed by the team (a megabyte or so; the last slab partial) give
    the one-thread result bit for bit, and the reference's values."""
    X = rng.standard_normal((2003, 64)).astype(dtype)
    Y = rng.standard_normal((1801, 64)).astype(dtype)  # 461 KB in float32: on the team too
    for kernel in ("rbf", "laplacian", "linear"):
        K1 = fastkpca.gram(X, Y, kernel=kernel, n_jobs=1)
        K2 = fastkpca.gram(X, Y, kernel=kernel, n_jobs=2)
        assert np.array_equal(K1, K2), kernel
        K_ref = ref.kernel(X.astype(np.float64), Y.astype(np.float64), kernel, 1.0 / 64, 3, 1.0)
        tol = 1e-10 if dtype == np.float64 else 2e-4
        np.testing.assert_allclose(K2, K_ref, rtol=tol, atol=tol * np.abs(K_ref).max())
        S1, S2 = (fastkpca.gram(X, kernel=kernel, n_jobs=j) for j in (1, 2))
        assert np.array_equal(S1, S2), kernel


def test_threadpoolctl_limits_openmp():
    """threadpoolctl reaches the core's OpenMP runtime: from a team of three (whatever the default, one in a
    worker of a parallel run) to one and back."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from fastkpca import _native

    default = _native.core.omp_max_threads()
    with threadpoolctl.threadpool_limits(3, user_api="openmp"):
        assert _native.core.omp_max_threads() == 3
        with threadpoolctl.threadpool_limits(1, user_api="openmp"):
            assert _native.core.omp_max_threads() == 1
            np.testing.assert_allclose(fastkpca.gram(np.ones((10, 2))), np.full((10, 10), 2.0))
        assert _native.core.omp_max_threads() == 3
    assert _native.core.omp_max_threads() == default


def test_gil_released(rng):
    X = rng.standard_normal((3000, 64))
    ticks = []
    worker = threading.Thread(target=lambda: fastkpca.gram(X, kernel="laplacian", n_jobs=1))
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    worker.join()
    assert len(ticks) > 5, "the main thread could not run while gram was computing"


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite(bad):
    X = np.ones((4, 3))
    X[1, 2] = bad
    with pytest.raises(ValueError, match="X contains"):
        fastkpca.gram(X)
    with pytest.raises(ValueError, match="Y contains"):
        fastkpca.gram(np.ones((4, 3)), X)


@pytest.mark.parametrize(
    "X, match",
    [
        (np.ones((0, 3)), "0 samples"),
        (np.ones((3, 0)), "0 features"),
        (np.ones(5), "2-D"),
        (np.ones((2, 3, 4)), "2-D"),
    ],
)
def test_bad_shapes(X, match):
    with pytest.raises(ValueError, match=match):
        fastkpca.gram(X)


def test_bad_arguments():
    X = np.ones((4, 3))
    with pytest.raises(ValueError, match="different numbers of features"):
        fastkpca.gram(X, np.ones((2, 4)))
    with pytest.raises(ValueError, match="gamma"):
        fastkpca.gram(X, kernel="rbf", gamma=-1.0)
    with pytest.raises(ValueError, match="gamma"):
        fastkpca.gram(X, kernel="rbf", gamma=float("nan"))
    with pytest.raises(ValueError, match="degree"):
        fastkpca.gram(X, kernel="poly", degree=-1)
    with pytest.raises(ValueError,
                       match="linear, poly, polynomial, rbf, matern12, matern32, matern52, laplacian, sigmoid, cosine"):
        fastkpca.gram(X, kernel="gaussian")
    with pytest.raises(ValueError, match="n_jobs"):
        fastkpca.gram(X, n_jobs=0)
    with pytest.raises(TypeError, match="n_jobs"):
        fastkpca.gram(X, n_jobs=1.5)
    with pytest.raises(TypeError, match="kernel"):
        fastkpca.gram(X, kernel=3)


@pytest.mark.parametrize("X", [np.ones((3, 2), dtype=complex), np.array([["a", "b"]]),
                               np.array([[object(), 1]], dtype=object)])
def test_bad_dtypes(X):
    with pytest.raises(TypeError, match="X"):
        fastkpca.gram(X)


def test_memory_error_before_allocating():
    X = np.zeros((2_000_000, 1))  # a 2e6 × 2e6 float64 output: 29 TiB
    with pytest.raises(MemoryError, match="GiB"):
        fastkpca.gram(X)


def test_cosine_of_tiny_and_huge_rows():
    """Regression (found by hypothesis under the sanitizer run): a subnormal row is not a zero row."""
    X = np.array([[2.22507386e-309, 0.0], [1e-300, 1e-300], [1e200, -1e200], [0.0, 0.0]])
    K = fastkpca.gram(X, kernel="cosine")
    np.testing.assert_allclose(K, ref.kernel(X, None, "cosine"), rtol=1e-12, atol=1e-15)
    assert K[0, 0] == pytest.approx(1.0) and K[3, 3] == 0.0


def test_float32_rbf_cross_kernel_is_accurate_where_the_expansion_cancels():
    """Regression (issue 5's note): float32 data in ±10, 23 features, γ = 1, rows of norm² ~250 gave
    k(x, x) = 0.99997 through a cross kernel; entries that cancel are now recomputed directly."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-10, 10, (200, 23)).astype(np.float32)
    Y = np.concatenate([X[:50] + rng.normal(0, 1e-3, (50, 23)).astype(np.float32), X[50:100]])
    K = fastkpca.gram(X, Y, kernel="rbf", gamma=1.0)
    exact = ref.kernel(X.astype(np.float64), Y.astype(np.float64), "rbf", 1.0)
    np.testing.assert_allclose(K.astype(np.float64), exact, rtol=0, atol=2e-6)
    np.testing.assert_array_less(0.99999, np.diag(fastkpca.gram(X, X.copy(), kernel="rbf", gamma=1.0)))
