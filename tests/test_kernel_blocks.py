"""The kernel blocks of a distributed pass (kernel_block.hpp): k(A, B)·V_B and k(A, B)ᵀ·V_A from one
evaluation of each tile, and k(A, A)·V over the lower tiles; kept tiles give the same products bit for
bit, and the thread count never changes them."""

import numpy as np
import pytest

from fastkpca import _native, gram
from fastkpca.kernels import NativeKernel, registry

core = _native.core


def operands(n_a, n_b, d, dtype, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n_a, d)).astype(dtype)
    B = rng.standard_normal((n_b, d)).astype(dtype)
    return A, B, rng.standard_normal((n_a, 5)), rng.standard_normal((n_b, 5))


@pytest.mark.parametrize("kernel", sorted({spec.name for spec in registry.NAMES.values()}))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cross_block_gives_both_products(kernel, dtype):
    A, B, VA, VB = operands(600, 530, 7, dtype)
    k = NativeKernel.resolve(kernel, None, 3, 1, 7)
    K = gram(A, B, kernel=kernel, gamma=k.gamma, degree=k.degree, coef0=k.coef0).astype(np.float64)
    wa, wb = core.kernel_block_product(A, B, k.name, k.gamma, k.degree, k.coef0, None, VA, VB, 1, 1)
    tol = (1e-12 if dtype == np.float64 else 1e-6) * max(1.0, np.abs(K).max()) * 600
    np.testing.assert_allclose(wa, K @ VB, rtol=0, atol=tol)
    np.testing.assert_allclose(wb, K.T @ VA, rtol=0, atol=tol)
    # the symmetric block: the lower tiles serve both halves
    Ks = gram(A, kernel=kernel, gamma=k.gamma, degree=k.degree, coef0=k.coef0).astype(np.float64)
    w, none = core.kernel_block_product(A, None, k.name, k.gamma, k.degree, k.coef0, None, VA, None, 1, 1)
    assert none is None
    np.testing.assert_allclose(w, Ks @ VA, rtol=0, atol=tol)


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kept_tiles_and_threads_give_the_same_numbers(symmetric, dtype):
    A, B, VA, VB = operands(700, 300, 4, dtype, seed=1)
    B, VB = (None, None) if symmetric else (B, VB)
    args = ("rbf", 0.3, 3.0, 1.0)
    tiles = core.kernel_block_tiles(A, B, *args, 2)
    assert tiles.dtype == dtype
    computed = core.kernel_block_product(A, B, *args, None, VA, VB, 16, 1)
    for blocks, threads, kept in [(16, 2, None), (16, 1, tiles), (16, 2, tiles)]:
        other = core.kernel_block_product(A, B, *args, kept, VA, VB, blocks, threads)
        assert np.array_equal(other[0], computed[0])
        assert symmetric or np.array_equal(other[1], computed[1])
    one_unit = core.kernel_block_product(A, B, *args, tiles, VA, VB, 1, 2)
    np.testing.assert_allclose(one_unit[0], computed[0], rtol=1e-13, atol=1e-12)


def test_shapes_are_checked_at_the_boundary():
    A, B, VA, VB = operands(50, 40, 3, np.float64)
    args = ("rbf", 0.3, 3.0, 1.0)
    with pytest.raises(ValueError, match="va must have one row per row of a"):
        core.kernel_block_product(A, B, *args, None, VB, VB, 1, 1)
    with pytest.raises(ValueError, match="vb must be given exactly when b is"):
        core.kernel_block_product(A, B, *args, None, VA, None, 1, 1)
    with pytest.raises(ValueError, match="vb must have one row per row of b"):
        core.kernel_block_product(A, B, *args, None, VA, VA, 1, 1)
    with pytest.raises(ValueError, match="different numbers of columns"):
        core.kernel_block_product(A, B[:, :2].copy(), *args, None, VA, VB, 1, 1)
    with pytest.raises(ValueError, match="kept tiles do not match"):
        core.kernel_block_product(A, B, *args, np.zeros(10), VA, VB, 1, 1)
    with pytest.raises(TypeError):
        core.kernel_block_product(A.astype(np.float32), B, *args, None, VA, VB, 1, 1)
