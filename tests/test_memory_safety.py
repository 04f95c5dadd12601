"""Memory safety of the native core at its edges, for the sanitizer build (tools/sanitize.sh, CI's sanitizer
stage) as much as for the normal one:

- every kernel at every d from 1 to 40, through every native path that evaluates kernel entries, with
  tiles that start at columns that are not multiples of a SIMD strip (the diagonal evaluates the single
  entry (i, i)) and data that starts at odd rows: an overread there is an AddressSanitizer report;
- arrays whose data starts at an odd byte offset (as a Dask worker deserialises its messages) given to
  every binding of the module: read-only ones are copied once at the boundary, ones the core writes in
  place or keeps are refused with ValueError. A misaligned load is an UndefinedBehaviorSanitizer report.
"""

from __future__ import annotations

import numpy as np
import pytest

import reference as ref
from fastkpca import _native
from fastkpca.kernels import NativeKernel, registry
from fastkpca.kernels.native import native_operand
from fastkpca.solvers.low_rank import rpcholesky

#: Every test here runs teams of threads on purpose (thread counts, every ISA level's parallel paths).
pytestmark = pytest.mark.threads

KERNELS = sorted({spec.name for spec in registry.NAMES.values()})
DTYPES = (np.float64, np.float32)


def misaligned(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` (same shape, dtype and memory order) whose data starts one byte past an aligned
    address."""
    order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    buf = np.zeros(a.nbytes + 1, dtype=np.uint8)
    flat = buf[1:].view(a.dtype)
    out = flat.reshape(a.shape if order == "C" else a.shape[::-1])
    out = out if order == "C" else out.T
    out[...] = a
    assert not out.flags.aligned and np.array_equal(out, a)
    return out


def sparse_operand(A: np.ndarray, rng, density: float = 0.4):
    """(indptr int64, indices int32, values, n_columns) of A with about 1 - density of its entries zeroed: the
    form the core's sparse entry points take (fastkpca.kernels.native.native_operand)."""
    from scipy import sparse

    S = sparse.csr_matrix(np.where(rng.random(A.shape) < density, A, 0.0).astype(A.dtype))
    S.sort_indices()
    return (S.indptr.astype(np.int64), S.indices.astype(np.int32), S.data, A.shape[1])


def tolerance(dtype, scale):
    return (1e-11 if dtype == np.float64 else 2e-5) * max(1.0, scale)


# --------------------------------------------------------------------------- every kernel, every d

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", KERNELS)
def test_every_native_path_at_every_width(kernel, dtype):
    """Gram (symmetric and cross), diagonal, tiles, cross products, kernel blocks and RPCholesky columns at
    d = 1 … 40, on data that starts at odd rows, against the NumPy reference."""
    rng = np.random.default_rng(7)
    base = rng.standard_normal((60, 40)) * 0.5
    core = _native.core
    for d in range(1, 41):
        r0, c0 = d % 5 + 1, (3 * d) % 7 + 1
        n_x, n_y = 17 + d % 13, 9 + (5 * d) % 19
        X = np.ascontiguousarray(base[r0:r0 + n_x, :d], dtype=dtype)
        Y = np.ascontiguousarray(base[c0:c0 + n_y, :d], dtype=dtype)
        k = NativeKernel.resolve(kernel, None, 3, 1, d, n_jobs=2)
        expected = ref.kernel(X, Y, kernel, k.gamma, k.degree, k.coef0)
        expected_xx = ref.kernel(X, None, kernel, k.gamma, k.degree, k.coef0)
        tol = tolerance(dtype, np.abs(expected_xx).max())
        np.testing.assert_allclose(k.cross(X, Y), expected, rtol=0, atol=tol, err_msg=f"gram(X, Y), d={d}")
        np.testing.assert_allclose(k.cross(X), expected_xx, rtol=0, atol=tol, err_msg=f"gram(X), d={d}")
        np.testing.assert_allclose(k.diagonal(X), np.diag(expected_xx), rtol=0, atol=tol, err_msg=f"diagonal, d={d}")
        V = rng.standard_normal((n_y, 3))
        np.testing.assert_allclose(k.product(X, Y, V), expected @ V, rtol=0, atol=tol * n_y,
                                   err_msg=f"cross product, d={d}")
        args = (k.name, k.gamma, k.degree, k.coef0)
        VA = rng.standard_normal((n_x, 3))
        wa, wb = core.kernel_block_product(X, Y, *args, None, VA, V, 1, 1)
        np.testing.assert_allclose(wa, expected @ V, rtol=0, atol=tol * n_y, err_msg=f"kernel block, d={d}")
        np.testing.assert_allclose(wb, expected.T @ VA, rtol=0, atol=tol * n_x, err_msg=f"kernel block, d={d}")
        rows, cols = np.arange(1, n_x, 2, dtype=np.int64), np.arange(n_x - 1, -1, -3, dtype=np.int64)
        block = np.empty((cols.size, rows.size), dtype=np.float32)
        core.svm_kernel_columns(core.svm_dense_columns(X, *args, 2), rows, cols, block, 2)
        np.testing.assert_allclose(block, expected_xx[np.ix_(cols, rows)], rtol=0, atol=max(tol, 1e-6 * np.abs(
            expected_xx).max()), err_msg=f"SVM columns, d={d}")
        tiles = core.kernel_block_tiles(X, None, *args, 1)
        w, _ = core.kernel_block_product(X, None, *args, tiles, VA, None, 1, 1)
        np.testing.assert_allclose(w, expected_xx @ VA, rtol=0, atol=tol * n_x, err_msg=f"kept tiles, d={d}")
        if registry.KERNELS[kernel].positive_semidefinite:
            factor = rpcholesky(X, min(4, n_x), k, random_state=d).factor
            S = rpcholesky(X, min(4, n_x), k, random_state=d).pivots
            np.testing.assert_allclose(factor @ factor[S].T, expected_xx[:, S], rtol=0, atol=tol * 10,
                                       err_msg=f"RPCholesky columns, d={d}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", KERNELS)
def test_every_sparse_path_at_every_width(kernel, dtype):
    """The sparse paths (sparse_tiles.hpp) at d = 1 … 40 on rows with from none to all of their entries: Gram
    (symmetric and cross), diagonal, cross product and the tiled operator, against the NumPy reference on the
    dense rows. An overread of a row, a column list or a slab is an AddressSanitizer report."""
    from scipy import sparse

    rng = np.random.default_rng(11)
    for d in range(1, 41):
        n_x, n_y = 17 + d % 13, 9 + (5 * d) % 19
        X = sparse.random(n_x, d, density=0.3, format="lil", random_state=d, dtype=dtype)
        X[0] = 0  # an empty row
        X = X.tocsr()
        Y = sparse.random(n_y, d, density=0.5, format="csr", random_state=d + 100, dtype=dtype)
        k = NativeKernel.resolve(kernel, None, 3, 1, d, n_jobs=2)
        Xd, Yd = X.toarray(), Y.toarray()
        expected = ref.kernel(Xd, Yd, kernel, k.gamma, k.degree, k.coef0)
        expected_xx = ref.kernel(Xd, None, kernel, k.gamma, k.degree, k.coef0)
        tol = tolerance(dtype, np.abs(expected_xx).max())
        Xs, Ys = k.check_samples(X), k.check_samples(Y)
        np.testing.assert_allclose(k.cross(Xs, Ys), expected, rtol=0, atol=tol, err_msg=f"gram(X, Y), d={d}")
        np.testing.assert_allclose(k.cross(Xs), expected_xx, rtol=0, atol=tol, err_msg=f"gram(X), d={d}")
        np.testing.assert_allclose(k.diagonal(Xs), np.diag(expected_xx), rtol=0, atol=tol, err_msg=f"diagonal, d={d}")
        V = rng.standard_normal((n_y, 3))
        np.testing.assert_allclose(k.product(Xs, Ys, V), expected @ V, rtol=0, atol=tol * n_y,
                                   err_msg=f"cross product, d={d}")
        rows, cols = np.arange(0, n_x, 2, dtype=np.int64), np.arange(n_x - 1, -1, -4, dtype=np.int64)
        block = np.empty((cols.size, rows.size), dtype=np.float32)
        source = _native.core.svm_sparse_columns(native_operand(Xs), k.name, k.gamma, k.degree, k.coef0, 2)
        _native.core.svm_kernel_columns(source, rows, cols, block, 2)
        np.testing.assert_allclose(block, expected_xx[np.ix_(cols, rows)], rtol=0, atol=max(tol, 1e-6 * np.abs(
            expected_xx).max()), err_msg=f"sparse SVM columns, d={d}")
        op = _native.core.sparse_kernel_operator(native_operand(Xs), k.name, k.gamma, k.degree, k.coef0, 0, 2)
        VA = np.asfortranarray(rng.standard_normal((n_x, 3)))
        np.testing.assert_allclose(op.matmat(VA, 2), expected_xx @ VA, rtol=0, atol=tol * n_x,
                                   err_msg=f"sparse operator, d={d}")


def test_malformed_sparse_structure_is_refused_at_the_boundary():
    """The core reads a CSR matrix only after checking its structure: no read outside its arrays whatever the
    caller passes."""
    core = _native.core
    indptr, indices, values = np.array([0, 2, 3], np.int64), np.array([0, 2, 1], np.int32), np.ones(3)
    out = np.zeros((2, 2))
    args = ("rbf", 0.5, 3.0, 1.0)
    for bad, match in [((indptr, indices, values, 2), "column index out of range"),
                       ((np.array([0, 3, 2], np.int64), indices, values, 3), "indptr decreases|does not span"),
                       ((np.array([0, 2, 4], np.int64), indices, values, 3), "does not span"),
                       ((indptr, indices, values[:2], 3), "differ in length"),
                       ((np.array([0], np.int64), indices[:0], values[:0], 3), "at least one row")]:
        with pytest.raises(ValueError, match=match):
            core.sparse_gram_into(bad, None, *args, out, 1)
    with pytest.raises(TypeError):  # indices of another dtype select no overload
        core.sparse_gram_into((indptr, indices.astype(np.int64), values, 3), None, *args, out, 1)


@pytest.mark.parametrize("kernel", KERNELS)
def test_tile_edges_and_single_entries(kernel):
    """Sizes around the 256-row tile, and the diagonal of every row of a tile edge (a 1×1 tile at every
    column offset)."""
    rng = np.random.default_rng(3)
    for n in (1, 2, 255, 257):
        X = rng.standard_normal((n, 3))
        k = NativeKernel.resolve(kernel, None, 3, 1, 3)
        expected = ref.kernel(X, None, kernel, k.gamma, k.degree, k.coef0)
        tol = tolerance(np.float64, np.abs(expected).max())
        np.testing.assert_allclose(k.diagonal(X), np.diag(expected), rtol=0, atol=tol)
        np.testing.assert_allclose(k.cross(X), expected, rtol=0, atol=tol)
        np.testing.assert_allclose(k.cross(X[-1:], X), expected[-1:], rtol=0, atol=tol)


@pytest.mark.parametrize("kind", ["rbf", "matern12", "matern32", "matern52"])
def test_gaussian_process_passes_at_tile_edges(kind):
    """The likelihood's gradient pass (gp_gradient.hpp) and a sum of terms' Gram matrix (sum_tiles.hpp) at
    sizes around the packed tile and widths 1 … 9, against NumPy: an overread of a tile, a run's buffer or the
    moments' product is an AddressSanitizer report."""
    from fastkpca.kernels.gaussian_process import RADIAL

    rng = np.random.default_rng(4)
    core = _native.core
    for n, d in [(1, 1), (2, 3), (65, 4), (255, 1), (256, 9), (257, 5), (513, 3)]:
        X = rng.standard_normal((n, d))
        W = rng.standard_normal((n, n))
        W = W + W.T
        r2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
        r = np.sqrt(r2)
        kernel = ref.kernel(X, None, kind, RADIAL[kind])
        s = {"matern32": np.sqrt(3) * r, "matern52": np.sqrt(5) * r}.get(kind)
        G = {"rbf": kernel, "matern12": np.divide(kernel, r, out=np.zeros_like(r), where=r > 0),
             "matern32": 3 * np.exp(-s) if s is not None else None,
             "matern52": 5 / 3 * (1 + s) * np.exp(-s) if s is not None else None}[kind]
        sum_k, sum_r, MV = core.gp_gradient_pass(X, W, kind, True, 2)
        scale = np.abs(W).sum()
        assert sum_k == pytest.approx((W * kernel).sum(), abs=1e-12 * scale), (n, d)
        assert sum_r == pytest.approx((W * G * r2).sum(), abs=1e-11 * scale * max(1.0, r2.max())), (n, d)
        np.testing.assert_allclose(MV, (W * G) @ np.column_stack([np.ones(n), X]), rtol=0,
                                   atol=1e-11 * scale * max(1.0, np.abs(X).max()), err_msg=f"n={n}, d={d}")
        assert core.symmetric_sum(W, 2) == pytest.approx(W.sum(), abs=1e-12 * scale)
        out = np.empty((n, n))
        core.sum_gram_into([("constant", 0.5, 0.0, X, None), (kind, 2.0, RADIAL[kind], X, None)], 0.25, out, 2)
        np.testing.assert_allclose(out, 0.5 + 2.0 * kernel + 0.25 * np.eye(n), rtol=0, atol=1e-12)


# ------------------------------------------------------------------------- misaligned arrays

def _operator(dtype=np.float64):
    X = np.random.default_rng(1).standard_normal((40, 3)).astype(dtype)
    return _native.core.kernel_operator(X, "rbf", 0.5, 3.0, 1.0, 0, 1)


def _bindings():
    """name -> (call(make), which arguments it writes in place or keeps): ``make(array)`` gives the array
    that call passes to the binding (as it is, or misaligned)."""
    core = _native.core
    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 3))
    Y = rng.standard_normal((30, 3))
    V = rng.standard_normal((30, 4))
    VA = rng.standard_normal((40, 4))
    K = ref.kernel(X, None, "rbf", 0.5)
    F = np.asfortranarray(rng.standard_normal((40, 8)))
    args = ("rbf", 0.5, 3.0, 1.0)
    tiles = core.kernel_block_tiles(X, None, *args, 1)

    def out(shape, dtype=np.float64):
        return np.zeros(shape, dtype=dtype)

    XS, YS = (sparse_operand(A, np.random.default_rng(s)) for A, s in ((X, 1), (Y, 2)))

    def sum_terms(m, y=None):  # a Gaussian process kernel's terms, every array through make
        return [("constant", 0.5, 0.0, m(X), None if y is None else m(y)),
                ("matern32", 1.5, 1.0, m(X), None if y is None else m(y))]

    sum_tiles = core.sum_block_tiles(sum_terms(lambda a: a), 0.1, 1)
    rows, cols = np.arange(0, 36, 3, dtype=np.int64), np.array([3, 17, 0, 39, 8], dtype=np.int64)

    upper = np.triu(np.random.default_rng(5).uniform(0.05, 0.95, (6, 4, 4)), 1)
    pairwise = upper + np.tril(1 - np.swapaxes(upper, 1, 2), -1)  # r_ji = 1 - r_ij

    def svm_columns(source):  # a column source's columns and product, against the rows and columns above
        block = np.empty((5, 12), np.float32)
        core.svm_kernel_columns(source, rows, cols, block, 1)
        product = np.empty(12)
        core.svm_kernel_product(source, rows, cols, V[:5, 0].copy(), product, 1)
        return block, product, source.diagonal()

    def svm_solve(m, solve=core.svm_solve, start=0.0):  # a dual (every array but the 1-byte signs through make)
        alpha = m(np.full(40, start))
        solve(core.svm_dense_columns(X, *args, 1), m(np.arange(40, dtype=np.int64)),
              np.where(X[:, 0] > 0, 1, -1).astype(np.int8), m(-np.ones(40)), m(np.ones(40)), alpha, tol=1e-3,
              max_iter=-1, shrinking=True, whole=False, working_set=16, cache_bytes=1e5, n_threads=1)
        return alpha

    def csr(m, operand):  # every array of a sparse operand through make
        indptr, indices, values, cols = operand
        return (m(indptr), m(indices), m(values), cols)

    return {
        "gram_into": [lambda m: (core.gram_into(m(X), m(Y), *args, o := m(out((40, 30))), 1), o)[1], ("out",)],
        "kernel_diagonal_into": [lambda m: (core.kernel_diagonal_into(m(X), *args, o := m(out(40)), 1), o)[1],
                                 ("out",)],
        "cross_product_into": [lambda m: (core.cross_product_into(m(X), m(Y), *args, m(V), o := m(out((40, 4))), 1),
                                          o)[1], ("out",)],
        "kernel_block_tiles": [lambda m: core.kernel_block_tiles(m(X), m(Y), *args, 1), ()],
        "kernel_block_product": [lambda m: core.kernel_block_product(m(X), m(Y), *args, None, m(VA), m(V), 1, 1), ()],
        "kernel_block_product(tiles)": [lambda m: core.kernel_block_product(m(X), None, *args, m(tiles), m(VA), None,
                                                                            1, 1)[0], ()],
        "kernel_operator": [lambda m: core.kernel_operator(m(X), *args, 0, 1).matmat(F, 1), ()],
        "Operator.matmat": [lambda m: _operator().matmat(m(F), 1), ()],
        "eigsh": [lambda m: core.eigsh(_operator(), m(F), 2, 1e-10, 24, 100, 3, False, None, 1)["values"], ()],
        "dense_operator": [lambda m: core.dense_operator(m(K)).matmat(F, 1), ("a",)],
        "scan_square": [lambda m: core.scan_square(m(K), True, 1), ()],
        "double_center_inplace": [lambda m: (core.double_center_inplace(k := m(K.copy()), "kernel", 1.0, 1), k)[1],
                                  ("k",)],
        "center_cross_inplace": [lambda m: (core.center_cross_inplace(k := m(ref.kernel(Y, X, "rbf", 0.5)),
                                                                      m(K.mean(axis=0)), float(K.mean()), 1), k)[1],
                                 ("k",)],
        "vector_exp": [lambda m: core.vector_exp(m(X[:, 0] - 3.0)), ()],
        "python_operator": [lambda m: core.eigsh(core.python_operator(lambda W: m(K @ W), 40), F, 2, 1e-10, 24, 100, 3,
                                                 False, None, 1)["values"], ()],
        "sparse_gram_into": [lambda m: (core.sparse_gram_into(csr(m, XS), csr(m, YS), *args, o := m(out((40, 30))), 1),
                                        o)[1], ("out",)],
        "sparse_kernel_diagonal_into": [lambda m: (core.sparse_kernel_diagonal_into(csr(m, XS), *args, o := m(out(40)),
                                                                                    1), o)[1], ("out",)],
        "sparse_cross_product_into": [lambda m: (core.sparse_cross_product_into(csr(m, XS), csr(m, YS), *args, m(V),
                                                                                o := m(out((40, 4))), 1), o)[1],
                                      ("out",)],
        "sparse_kernel_operator": [lambda m: core.sparse_kernel_operator(csr(m, XS), *args, 0, 1).matmat(F, 1), ()],
        "sum_gram_into": [lambda m: (core.sum_gram_into(sum_terms(m, Y), 0.0, o := m(out((40, 30))), 1), o)[1],
                          ("out",)],
        "sum_cross_product_into": [lambda m: (core.sum_cross_product_into(sum_terms(m, Y), m(V), o := m(out((40, 4))),
                                                                          1), o)[1], ("out",)],
        "sum_kernel_operator": [lambda m: core.sum_kernel_operator(sum_terms(m), 0.1, 0, 1).matmat(F, 1), ()],
        "gp_gradient_pass": [lambda m: core.gp_gradient_pass(m(X), m(K), "matern52", True, 1), ()],
        "gp_gradient_pass_low_rank": [lambda m: core.gp_gradient_pass_low_rank(m(X), m(VA), m(VA), "rbf", True, 1), ()],
        "symmetric_sum": [lambda m: core.symmetric_sum(m(K), 1), ()],
        "laplace_system_into": [lambda m: (core.laplace_system_into(m(K), m(np.abs(X[:, 0])), o := m(out((40, 40))),
                                                                    1), o)[1], ("out",)],
        "gp_weights_in_place": [lambda m: (core.gp_weights_in_place(w := m(K.copy()), m(X[:, :2].copy()), -0.5, 0.7, 1),
                                           w)[1], ("w",)],
        "laplace_weights_in_place": [lambda m: (core.laplace_weights_in_place(w := m(K.copy()), m(np.abs(X[:, 0])),
                                                                              m(X[:, 1].copy()), m(X[:, 2].copy()),
                                                                              m(X[:, 0].copy()), 1), w)[1], ("w",)],
        "sum_block_tiles": [lambda m: core.sum_block_tiles(sum_terms(m, Y), 0.0, 1), ()],
        "sum_block_product": [lambda m: core.sum_block_product(sum_terms(m, Y), 0.0, None, m(VA), m(V), 1, 1), ()],
        "sum_block_product(tiles)": [lambda m: core.sum_block_product(sum_terms(m), 0.1, m(sum_tiles), m(VA), None,
                                                                      1, 1), ()],
        "gp_gradient_cross_pass_low_rank": [lambda m: core.gp_gradient_cross_pass_low_rank(
            m(X), m(Y), m(VA), m(VA), m(V), m(V), "matern32", True), ()],
        "gp_gradient_cross_pass": [lambda m: core.gp_gradient_cross_pass(m(X), m(Y), m(VA @ V.T), "matern52", True),
                                   ()],
        "svm_dense_columns": [lambda m: svm_columns(core.svm_dense_columns(m(X), *args, 1)), ()],
        "svm_sparse_columns": [lambda m: svm_columns(core.svm_sparse_columns(csr(m, XS), *args, 1)), ()],
        "svm_matrix_columns": [lambda m: svm_columns(core.svm_matrix_columns(m(K), 1)), ()],
        "svm_kernel_columns": [lambda m: (core.svm_kernel_columns(core.svm_dense_columns(X, *args, 1), m(rows), m(cols),
                                                                  o := m(out((5, 12), np.float32)), 1), o)[1],
                               ("out",)],
        "svm_kernel_product": [lambda m: (core.svm_kernel_product(core.svm_dense_columns(X, *args, 1), m(rows), m(cols),
                                                                  m(V[:5, 0].copy()), o := m(out(12)), 1), o)[1],
                               ("out",)],
        "svm_solve": [lambda m: svm_solve(m), ("alpha",)],
        "svm_solve_nu": [lambda m: svm_solve(m, core.svm_solve_nu, 0.5), ("alpha",)],
        "svm_couple": [lambda m: core.svm_couple(m(pairwise)), ()],
        "factor_product_into": [lambda m: (core.factor_product_into(m(VA), m(V[:4].copy()), o := m(out((40, 4))), 1),
                                           o)[1], ("out",)],
        "factor_product_into(float32)": [lambda m: (core.factor_product_into(m(VA.astype(np.float32)), m(V[:3].copy()),
                                                                             o := m(out((40, 4))), 1), o)[1],
                                         ("out",)],
        "factor_t_product_into": [lambda m: (core.factor_t_product_into(m(VA), m(X), o := m(out((4, 3))), 1), o)[1],
                                  ("out",)],
        "factor_gram_into": [lambda m: (core.factor_gram_into(m(VA), m(np.abs(X[:, 0])), o := m(out((4, 4))), 1),
                                        o)[1], ("out",)],
        "svm_platt": [lambda m: core.svm_platt(m(V[:, 0].copy()), (V[:, 1] > 0).astype(np.uint8)), ()],  # bytes:
        # always aligned
    }


#: Module attributes that take no arrays.
NO_ARRAYS = {"ISA", "KERNELS", "TILE", "SLAB_DOUBLE", "SLAB_FLOAT", "PASS_BLOCKS", "VERSION", "TEAM_MIN_SECONDS",
             "SHORT_CALL_TEAM", "short_call_team", "Operator", "SvmKernelColumns", "build_info", "omp_max_threads",
             "packed_prefix_size", "kernel_block_elements", "supported_isas", "simd_bytes", "fma_rate",
             "tall_scratch_bytes", "BACKGROUND_RELEASE_BYTES", "wait_for_releases", "releases_in_flight",
             "release_bytes_in_flight", "spare_bytes",
             "drop_spare", "SVM_STREAM_COLUMN_BYTES"}


def test_the_table_covers_every_binding():
    names = {name for name in dir(_native.core) if not name.startswith("_")}
    covered = {name.split("(")[0] for name in _bindings()} | NO_ARRAYS
    assert names <= covered, f"bindings without a misaligned-input test: {sorted(names - covered)}"


@pytest.mark.parametrize("name", sorted(_bindings()))
def test_misaligned_arrays_at_every_binding(name):
    call, in_place = _bindings()[name]
    expected = call(lambda a: a)
    if in_place:
        with pytest.raises(ValueError, match="not aligned"):
            call(misaligned)
        return
    got = call(misaligned)
    for e, g in zip(np.atleast_1d(expected) if not isinstance(expected, tuple) else expected,
                    np.atleast_1d(got) if not isinstance(got, tuple) else got):
        np.testing.assert_array_equal(g, e)


def test_public_entry_points_copy_misaligned_arrays():
    """The Python layer passes misaligned user arrays on as aligned copies, and refuses in-place work on
    them by name."""
    import fastkpca

    rng = np.random.default_rng(2)
    X = rng.standard_normal((80, 4))
    K = fastkpca.gram(X, kernel="rbf", gamma=0.3)
    assert np.array_equal(fastkpca.gram(misaligned(X), kernel="rbf", gamma=0.3), K)
    values = fastkpca.eigsh(K, 3, random_state=0)[0]
    np.testing.assert_allclose(fastkpca.eigsh(misaligned(K), 3, random_state=0)[0], values, rtol=1e-12)
    kpca = fastkpca.KernelPCA(3, kernel="precomputed", random_state=0, eigen_solver="lanczos")
    np.testing.assert_allclose(kpca.fit(misaligned(K)).eigenvalues_, kpca.fit(K).eigenvalues_, rtol=1e-12)
    assert np.array_equal(fastkpca.double_center(misaligned(K), copy=True), fastkpca.double_center(K, copy=True))
    with pytest.raises(ValueError, match="K is not aligned"):
        fastkpca.double_center(misaligned(K))


@pytest.mark.parametrize("n, m", [(1, 1), (257, 3), (300, 5)])
@pytest.mark.parametrize("kind", ["rbf", "matern12", "matern52"])
def test_gradient_pass_with_low_rank_weights_equals_the_dense_pass(n, m, kind):
    """The tiles of W = ½(ABᵀ + BAᵀ) formed inside the pass (edge tiles of n not a multiple of the tile
    included) give the dense pass's traces."""
    rng = np.random.RandomState(n)
    x = np.ascontiguousarray(rng.randn(n, 3))
    A, B = rng.randn(n, m), rng.randn(n, m)
    W = np.ascontiguousarray(0.5 * (A @ B.T + B @ A.T))
    low = _native.core.gp_gradient_pass_low_rank(x, A, B, kind, True, 2)
    full = _native.core.gp_gradient_pass(x, W, kind, True, 2)
    assert low[0] == pytest.approx(full[0], rel=1e-10, abs=1e-10)
    assert low[1] == pytest.approx(full[1], rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(low[2], full[2], rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="a and b"):
        _native.core.gp_gradient_pass_low_rank(x, A, np.ascontiguousarray(B[:-1]), kind, False, 1)


@pytest.mark.parametrize("kind", ["rbf", "matern12", "matern52"])
def test_the_gradient_pass_of_a_pair_of_row_blocks_adds_up_to_the_whole(kind):
    """A distributed gradient pass: the symmetric passes of the row blocks plus twice the cross pass of the
    pair are the pass over all rows (row blocks that are not multiples of the tile: the edges are read)."""
    rng = np.random.RandomState(3)
    n, cut, m = 301, 133, 5
    x = np.ascontiguousarray(rng.randn(n, 3))
    A, B = rng.randn(n, m), rng.randn(n, m)
    whole = _native.core.gp_gradient_pass_low_rank(x, A, B, kind, True, 2)
    parts = [slice(0, cut), slice(cut, n)]
    blocks = [_native.core.gp_gradient_pass_low_rank(*(np.ascontiguousarray(a[s]) for a in (x, A, B)), kind, True, 1)
              for s in parts]
    rows, cols = parts
    cross = _native.core.gp_gradient_cross_pass_low_rank(
        *(np.ascontiguousarray(a) for a in (x[rows], x[cols], A[rows], B[rows], A[cols], B[cols])), kind, True)
    for k in (0, 1):
        assert blocks[0][k] + blocks[1][k] + 2 * cross[k] == pytest.approx(whole[k], rel=1e-11, abs=1e-11)
    product = np.vstack([blocks[0][2] + cross[2][:cut], blocks[1][2] + cross[2][cut:]])
    np.testing.assert_allclose(product, whole[2], rtol=1e-11, atol=1e-11 * np.abs(whole[2]).max())
    with pytest.raises(ValueError, match="one row per sample"):
        _native.core.gp_gradient_cross_pass_low_rank(x, x, A, B, A[:-1], B, kind, False)
