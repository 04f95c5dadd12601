"""The packed lower-tile kernel (cpp/include/fastkpca/packed.hpp) that KernelPCA's lanczos path builds
and solves: layout, values, products, means and eigenpairs against full-matrix references."""

from __future__ import annotations

import numpy as np
import pytest

import fastkpca
from fastkpca import _native, linalg
from fastkpca.kernels import _gram_packed

TILE, PANEL = 256, 8


def unpack(p, n):
    """The full n×n matrix of a packed one, and the zero-padded nt·T square (reads the layout directly)."""
    nt = -(-n // TILE)
    full = np.full((nt * TILE, nt * TILE), np.nan, p.dtype)
    off = 0
    for i in range(nt):
        for j in range(i + 1):
            # Tile (i, j): rows in panels of 8, each panel column by column.
            t = p[off:off + TILE * TILE].reshape(TILE // PANEL, TILE, PANEL).transpose(0, 2, 1).reshape(TILE, TILE)
            full[i * TILE:(i + 1) * TILE, j * TILE:(j + 1) * TILE] = t
            if j < i:
                full[j * TILE:(j + 1) * TILE, i * TILE:(i + 1) * TILE] = t.T
            off += TILE * TILE
    assert off == p.size
    return full[:n, :n], full


@pytest.mark.parametrize("n", [1, 5, 255, 256, 257, 600])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kernel", ["rbf", "poly", "laplacian", "linear", "cosine"])
def test_packed_gram_holds_the_full_gram_bit_for_bit(n, dtype, kernel):
    X = np.random.default_rng(n).standard_normal((n, 6)).astype(dtype)
    p, n_out = _gram_packed(X, kernel=kernel, gamma=0.3, degree=3, coef0=1.0, n_jobs=2)
    assert n_out == n and p.dtype == dtype and p.ndim == 1
    assert p.size == _native.core.packed_size(n) == (-(-n // TILE)) * (-(-n // TILE) + 1) // 2 * TILE**2
    K, padded = unpack(p, n)
    np.testing.assert_array_equal(K, fastkpca.gram(X, kernel=kernel, gamma=0.3, n_jobs=2))
    assert (padded[n:] == 0).all() and (padded[:, n:] == 0).all(), "tile padding must be zeros"


def test_packed_gram_is_half_the_memory_and_does_not_touch_the_input():
    X = np.random.default_rng(0).standard_normal((3000, 4))
    before = X.copy()
    p, _ = _gram_packed(X, kernel="rbf", gamma=None, degree=3, coef0=1.0, n_jobs=None)
    np.testing.assert_array_equal(X, before)
    assert p.nbytes < 0.57 * 3000**2 * 8  # (nt·T)²/2 + nt·T²/2 entries, nt = 12 tiles of T = 256


@pytest.mark.parametrize("n", [3, 300, 700])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_packed_means_and_trace(n, dtype, isa):
    X = np.random.default_rng(1).standard_normal((n, 3)).astype(dtype)
    p, _ = _gram_packed(X, kernel="poly", gamma=0.5, degree=2, coef0=1.0, n_jobs=2)
    K = fastkpca.gram(X, kernel="poly", gamma=0.5, degree=2).astype(np.float64)
    col_mean, grand_mean, trace = _native.core.packed_means(p, n, 2)
    np.testing.assert_allclose(col_mean, K.mean(axis=0), rtol=1e-12)
    assert grand_mean == pytest.approx(K.mean(), rel=1e-12)
    assert trace == pytest.approx(np.trace(K), rel=1e-13)


@pytest.mark.parametrize("n", [40, 300, 777])
@pytest.mark.parametrize("centered", [False, True])
def test_packed_operator_through_the_dense_solve(n, centered):
    """dense=True materialises the operator by applying it to blocks of the identity: all eigenvalues."""
    X = np.random.default_rng(2).standard_normal((n, 5))
    p, _ = _gram_packed(X, kernel="rbf", gamma=0.2, degree=3, coef0=1.0, n_jobs=2)
    K = fastkpca.gram(X, kernel="rbf", gamma=0.2)
    if centered:
        H = np.eye(n) - 1.0 / n
        K = H @ K @ H
    v0 = np.zeros((n, 1), order="F")
    r = _native.core.eigsh_packed(p, n, v0, n, 1e-12, 0, 1, 0, centered, True, None, 2)
    np.testing.assert_allclose(r["values"], np.linalg.eigvalsh(K)[::-1], rtol=0, atol=1e-12 * n)


@pytest.mark.parametrize("block", [1, 3, 8, 9, 16, 17, 24, 32, 40, 70])
def test_packed_lanczos_every_block_width(block, isa):
    """Every register-blocking path of the packed product (1 to 4 slices of 8 columns, and more than 32),
    in every native module this CPU runs."""
    n, k = 900, 4
    X = np.random.default_rng(3).standard_normal((n, 8))
    p, _ = _gram_packed(X, kernel="laplacian", gamma=0.1, degree=3, coef0=1.0, n_jobs=2)
    H = np.eye(n) - 1.0 / n
    exact = np.linalg.eigh(H @ fastkpca.gram(X, kernel="laplacian", gamma=0.1) @ H)
    vals, vecs, info = linalg.solve(p, k, centered=True, tol=None, maxiter=None, block_size=block, random_state=0,
                                    threads=2, packed_n=n)
    assert info["converged"]
    np.testing.assert_allclose(vals, exact[0][::-1][:k], rtol=1e-10)
    overlap = np.linalg.svd(exact[1][:, ::-1][:, :k].T @ vecs, compute_uv=False)
    assert overlap.min() > 1 - 1e-10


@pytest.mark.parametrize("block", [8, 16, 40])
def test_packed_results_do_not_depend_on_the_thread_count(block):
    n = 1500
    X = np.random.default_rng(4).standard_normal((n, 3)).astype(np.float32)
    p, _ = _gram_packed(X, kernel="rbf", gamma=1.0, degree=3, coef0=1.0, n_jobs=3)
    p1, _ = _gram_packed(X, kernel="rbf", gamma=1.0, degree=3, coef0=1.0, n_jobs=1)
    np.testing.assert_array_equal(p, p1)
    runs = [linalg.solve(p, 5, centered=True, tol=None, maxiter=None, block_size=block, random_state=0,
                         threads=t, packed_n=n)[:2] for t in (1, 2, 3)]
    for vals, vecs in runs[1:]:
        np.testing.assert_array_equal(vals, runs[0][0])
        np.testing.assert_array_equal(vecs, runs[0][1])


def test_kernel_pca_packs_the_kernel_only_where_lanczos_reads_it():
    X = np.random.default_rng(5).standard_normal((700, 4))
    stages = {}

    def callback(stage, info):
        stages[stage] = info

    kw = dict(kernel="rbf", random_state=0, callback=callback)
    packed = fastkpca.KernelPCA(5, **kw).fit(X)
    assert stages["kernel"]["packed"] and packed.solver_info_["block_size"] == 8
    dense = fastkpca.KernelPCA(5, eigen_solver="dense", **kw).fit(X)
    assert not stages["kernel"]["packed"]
    wide = fastkpca.KernelPCA(60, **kw).fit(X)  # block 40: the full-matrix pass is faster
    assert not stages["kernel"]["packed"] and wide.solver_info_["block_size"] > linalg.PACKED_MAX_BLOCK
    np.testing.assert_allclose(packed.eigenvalues_, dense.eigenvalues_, rtol=1e-10)
    np.testing.assert_allclose(np.abs(packed.transform(X[:50])), np.abs(dense.transform(X[:50])), atol=1e-8)
    np.testing.assert_allclose(packed.eigenvalues_, wide.eigenvalues_[:5], rtol=1e-10)
