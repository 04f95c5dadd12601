"""The micro-kernels every kernel evaluation runs on (micro_kernel.hpp, simd.hpp), in every native module
this CPU runs (the `isa` fixture): the vectorised exponential against a higher-precision reference over its
whole range, and the kernel entries and products of every kernel and dtype against the NumPy reference at
odd sizes and tile and slab edges, the same bit for bit on any number of threads."""

from __future__ import annotations

import numpy as np
import pytest

import reference as ref
from fastkpca import _native
from fastkpca.kernels import NativeKernel, registry

#: Every test here runs teams of threads on purpose (thread counts, every ISA level's parallel paths).
pytestmark = pytest.mark.threads

KERNELS = sorted(registry.KERNELS)


def ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got − exact| in units in the last place of the exact value's float type."""
    exact = exact.astype(got.dtype)
    return np.abs(got.astype(np.float64) - exact.astype(np.float64)) / np.spacing(np.abs(exact)).astype(np.float64)


def test_exp_float64_within_one_ulp_over_its_range(isa):
    """10⁶ points over [-745, 709] (the underflow and flushed range included) and 10⁶ over [-40, 0], the
    rbf and laplacian kernels' range, against exp in extended precision rounded to double."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-745.0, 709.0, 10**6), rng.uniform(-40.0, 0.0, 10**6),
                        [0.0, -0.0, -1e-300, 1e-300, 709.0, -708.3964185322641, -708.39641853226, -708.4, -745.2,
                         -np.inf]])
    got = _native.core.vector_exp(x)
    exact = np.exp(x.astype(np.longdouble))
    tiny = np.finfo(np.float64).tiny
    normal = exact >= tiny
    assert ulps(got[normal], exact[normal]).max() <= 1.0
    # below the smallest normal number the code flushes to zero (as the kernels always did)
    assert np.all(got[~normal] == 0.0)
    assert np.isnan(_native.core.vector_exp(np.array([np.nan]))[0])


def test_exp_float32_within_one_ulp_over_its_range(isa):
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-104.0, 88.0, 10**6), rng.uniform(-20.0, 0.0, 10**6)]).astype(np.float32)
    got = _native.core.vector_exp(x)
    assert got.dtype == np.float32
    exact = np.exp(x.astype(np.float64))
    normal = exact >= np.finfo(np.float32).tiny
    assert ulps(got[normal], exact[normal]).max() <= 1.0
    assert np.all(got[~normal] == 0.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kernel", KERNELS)
def test_entries_and_products_at_odd_sizes_and_edges(kernel, dtype, isa):
    """Sizes around the micro-kernel's blocks (4, 8, 16), the slabs (32, 64) and the tile (256), depths
    that fill no vector, and the products of every storage (packed, cached, matrix-free and the one-sided
    cross product) against the reference kernel."""
    rng = np.random.default_rng(11)
    core = _native.core
    for n, m, d in [(1, 1, 1), (5, 3, 2), (33, 17, 3), (63, 65, 9), (257, 129, 5), (300, 31, 70)]:
        X = (rng.standard_normal((n, d)) * 0.6).astype(dtype)
        Y = (rng.standard_normal((m, d)) * 0.6).astype(dtype)
        k = NativeKernel.resolve(kernel, None, 3, 1, d, n_jobs=2)
        K = ref.kernel(X, None, kernel, k.gamma, k.degree, k.coef0)
        C = ref.kernel(X, Y, kernel, k.gamma, k.degree, k.coef0)
        scale = max(1.0, np.abs(K).max(), np.abs(C).max())
        tol = (1e-12 if dtype == np.float64 else 2e-6) * scale
        np.testing.assert_allclose(k.cross(X), K, rtol=0, atol=tol, err_msg=f"gram {n}x{d}")
        np.testing.assert_allclose(k.cross(X, Y), C, rtol=0, atol=tol, err_msg=f"cross {n}x{m}x{d}")
        V = rng.standard_normal((m, 3))
        np.testing.assert_allclose(k.product(X, Y, V), C @ V, rtol=0, atol=tol * m * 4, err_msg="cross product")
        VX = rng.standard_normal((n, 5))
        expected = K @ VX
        products = []
        for rows in (-(-n // 256), 1, 0):  # packed, cached (one tile row), matrix-free
            op = core.kernel_operator(X, *k.params, rows, 2)
            W = op.matmat(np.asfortranarray(VX), 2)
            np.testing.assert_allclose(W, expected, rtol=0, atol=tol * n * 4, err_msg=f"storage {rows}")
            products.append(W)
        # kept tiles and recomputed ones are the same numbers, multiplied in the same order
        assert all(np.array_equal(products[0], p) for p in products[1:])


@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "poly"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_thread_counts_give_the_same_bits(kernel, dtype, isa):
    X = np.random.default_rng(3).standard_normal((700, 11)).astype(dtype)
    V = np.asfortranarray(np.random.default_rng(4).standard_normal((700, 24)))
    k = NativeKernel.resolve(kernel, None, 3, 1, 11)
    first = None
    for threads in (1, 2, 3):
        W = _native.core.kernel_operator(X, *k.params, 0, threads).matmat(V, threads)
        G = k.on_threads(threads).cross(X)
        if first is None:
            first = (W, G)
        assert np.array_equal(W, first[0]) and np.array_equal(G, first[1])
