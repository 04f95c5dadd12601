"""float32 kernels: their entries against a float64 reference, and the two arithmetics of their products
(operator.hpp's Products): float64 (the float32 matrix's product to float64 rounding, what every product
outside a solver uses) and float32 (the block rounded to float32, each slab's sums in float32), which the
eigensolver takes only when its tolerance allows it (operators/arithmetic.py)."""

from __future__ import annotations

import numpy as np
import pytest

import reference as ref
from fastkpca import _native
from fastkpca.kernels import NativeKernel, registry
from fastkpca.operators import FLOAT32_PRODUCTS_MIN_TOL, kernel_operator, products_for
from fastkpca.solvers.krylov import lanczos

#: Every test here runs teams of threads on purpose (thread counts, every ISA level's parallel paths).
pytestmark = pytest.mark.threads

KERNELS = sorted(registry.KERNELS)
EPS32 = float(np.finfo(np.float32).eps) / 2  # unit roundoff
SLAB = int(_native.core.SLAB_FLOAT)
# The classical bound on a float32 sum of SLAB products, plus the rounding of the block to float32.
PRODUCT_BOUND = (SLAB + 1) * EPS32 / (1 - (SLAB + 1) * EPS32)


@pytest.mark.parametrize("kernel", KERNELS)
def test_float32_entries_within_1e_6_of_the_float64_reference(kernel):
    """|k32 − k64| <= 1e-6 · max|K| with K the float64 kernel of the same (float32) data."""
    rng = np.random.default_rng(5)
    for n, d in [(300, 3), (700, 11), (400, 64)]:
        X = rng.standard_normal((n, d)).astype(np.float32)
        k = NativeKernel.resolve(kernel, None, 3, 1, d)
        K64 = ref.kernel(X.astype(np.float64), None, kernel, k.gamma, k.degree, k.coef0)
        K32 = k.cross(X)
        assert K32.dtype == np.float32
        assert np.abs(K32 - K64).max() <= 1e-6 * np.abs(K64).max(), (n, d)


@pytest.mark.parametrize("kernel", KERNELS)
def test_the_two_arithmetics_of_float32_products(kernel, isa):
    """float64 products equal the float32 matrix's product to float64 rounding; float32 ones stay within
    the float32 summation bound, are the same in every storage and on any number of threads."""
    rng = np.random.default_rng(8)
    core = _native.core
    for n, d, b in [(5, 3, 1), (70, 9, 3), (300, 17, 24), (600, 5, 13)]:
        X = rng.standard_normal((n, d)).astype(np.float32)
        k = NativeKernel.resolve(kernel, None, 3, 1, d)
        K = k.cross(X).astype(np.float64)
        V = np.asfortranarray(rng.standard_normal((n, b)))
        scale = np.abs(K) @ np.abs(V)  # |K|·|V|, what the rounding of each output is measured against
        exact = K @ V
        results = {}
        for rows in (-(-n // 256), 1, 0):  # packed, cached, matrix-free
            for threads in (1, 2):
                op = core.kernel_operator(X, *k.params, rows, threads)
                W64 = op.matmat(V, threads, "float64")
                W32 = op.matmat(V, threads, "float32")
                assert np.all(np.abs(W64 - exact) <= 1e-13 * scale + 1e-300)
                assert np.all(np.abs(W32 - exact) <= PRODUCT_BOUND * scale + 1e-300)
                results.setdefault("float64", []).append(W64)
                results.setdefault("float32", []).append(W32)
        for arithmetic, outputs in results.items():
            assert all(np.array_equal(outputs[0], w) for w in outputs[1:]), arithmetic


def test_float64_operators_ignore_the_arithmetic():
    X = np.random.default_rng(2).standard_normal((300, 6))
    op = kernel_operator(X, storage="matrix_free").native
    V = np.asfortranarray(np.random.default_rng(3).standard_normal((300, 4)))
    assert np.array_equal(op.matmat(V, 1, "float32"), op.matmat(V, 1, "float64"))


def test_an_unknown_arithmetic_is_refused_by_name():
    op = kernel_operator(np.ones((10, 2)), storage="packed").native
    with pytest.raises(ValueError, match="products must be 'float64' or 'float32'"):
        op.matmat(np.asfortranarray(np.ones((10, 1))), 1, "half")


def test_products_for_asks_float32_only_of_float32_tiles_at_a_loose_tolerance():
    X = np.random.default_rng(4).standard_normal((300, 5))
    X32 = X.astype(np.float32)
    loose, tight = FLOAT32_PRODUCTS_MIN_TOL, FLOAT32_PRODUCTS_MIN_TOL / 10
    for rows in (2, 1, 0):  # packed, cached, matrix-free
        op = _native.core.kernel_operator(X32, "rbf", 0.2, 3.0, 1.0, rows, 1)
        assert products_for(op, loose) == "float32", op.storage
        assert products_for(op.centered(), loose) == "float32"
        assert products_for(op.shifted(1.0), loose) == "float32"
        assert products_for(op, tight) == "float64"
        assert products_for(_native.core.kernel_operator(X, "rbf", 0.2, 3.0, 1.0, rows, 1), loose) == "float64"
    # a full float32 matrix is read, not computed: its products are float64 whatever is asked
    assert products_for(kernel_operator(X32, storage="full"), loose) == "float64"


@pytest.mark.parametrize("storage", ["packed", "matrix_free"])
def test_lanczos_takes_float32_products_at_a_loose_tolerance_and_reaches_it(storage):
    X = np.random.default_rng(6).standard_normal((900, 8)).astype(np.float32)
    k = NativeKernel.resolve("rbf", None, 3, 1, 8)
    K = k.cross(X).astype(np.float64)
    Kc = K - K.mean(0) - K.mean(1)[:, None] + K.mean()
    expected = np.linalg.eigvalsh(Kc)[::-1][:6]
    op = kernel_operator(X, storage=storage).centered()
    for tol, arithmetic in [(1e-5, "float32"), (1e-6, "float32"), (1e-9, "float64")]:
        values, vectors, info = lanczos.solve(op, 6, tol=tol, maxiter=None, block_size=None, random_state=0,
                                              threads=2)
        assert info["products"] == arithmetic and info["converged"]
        # the true residuals (float64 products of the float32 matrix) meet tol, with room for rounding
        residuals = np.linalg.norm(Kc @ vectors - vectors * values, axis=0)
        assert residuals.max() <= 2 * tol * values[0]
        np.testing.assert_allclose(values, expected, rtol=0, atol=2 * tol * expected[0])
