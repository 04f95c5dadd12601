"""Kernel operators (cpp/include/fastkpca/operator.hpp, tiled_operator.hpp; python/fastkpca/operators/):
every storage mode against the NumPy reference and against each other, the views, the storage planner,
and the operator as a SciPy LinearOperator."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse.linalg as spla
from hypothesis import given
from hypothesis import strategies as st

import fastkpca
from fastkpca import _native, operators
from fastkpca.operators import storage as planner
from fastkpca.solvers.krylov import lanczos as linalg

from reference import kernel as reference_kernel

#: Every test here runs teams of threads on purpose (thread counts, every ISA level's parallel paths).
pytestmark = pytest.mark.threads

TILE = 256
TILED = ("packed", "cached", "matrix_free")


def make(X, storage, kernel="rbf", gamma=0.3, **kw):
    """An operator in `storage`; "cached" keeps about half of the packed form's tile rows."""
    if storage == "cached":
        nt = -(-X.shape[0] // TILE)
        rows = max(1, nt // 2)
        native = _native.core.kernel_operator(np.ascontiguousarray(X), kernel, gamma, 3.0, 1.0, rows, 2)
        return operators.KernelOperator(native, n_jobs=2)
    return fastkpca.kernel_operator(X, kernel=kernel, gamma=gamma, storage=storage, n_jobs=2, **kw)


@pytest.mark.parametrize("n", [1, 5, 255, 256, 257, 600])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kernel", ["rbf", "poly", "laplacian", "linear", "cosine", "sigmoid"])
def test_tiled_storage_holds_the_gram_matrix_bit_for_bit(n, dtype, kernel):
    """K @ I gives K's columns exactly (each output is one entry plus exact zeros): every tiled mode
    multiplies by exactly the entries gram() builds, padding included (it would add to the sums)."""
    X = np.random.default_rng(n).standard_normal((n, 6)).astype(dtype)
    K = fastkpca.gram(X, kernel=kernel, gamma=0.3, n_jobs=2).astype(np.float64)
    eye = np.eye(n)
    for storage in TILED:
        op = make(X, storage, kernel=kernel)
        np.testing.assert_array_equal(op @ eye, K, err_msg=storage)
        assert op.storage_dtype == dtype


def test_cached_mode_really_mixes_stored_and_recomputed_tiles():
    X = np.random.default_rng(0).standard_normal((1100, 4))  # 5 tile rows
    op = make(X, "cached")
    assert op.storage == "cached"
    packed = make(X, "packed")
    assert 0 < op.nbytes < packed.nbytes
    V = np.random.default_rng(1).standard_normal((1100, 13))
    np.testing.assert_array_equal(op @ V, packed @ V)
    np.testing.assert_array_equal(make(X, "matrix_free") @ V, packed @ V)


@pytest.mark.parametrize("storage", ["full", *TILED])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_products_row_sums_and_trace_against_the_reference(storage, dtype):
    X = np.random.default_rng(2).standard_normal((700, 5)).astype(dtype)
    K = reference_kernel(X.astype(np.float64), None, "poly", gamma=0.5, degree=2, coef0=1.0)
    op = make(X, storage, kernel="poly", gamma=0.5, degree=2) if storage != "cached" else \
        operators.KernelOperator(_native.core.kernel_operator(X, "poly", 0.5, 2.0, 1.0, 2, 2))
    V = np.random.default_rng(3).standard_normal((700, 9))
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(op @ V, K @ V, rtol=rtol, atol=rtol * np.abs(K).sum(1).max())
    np.testing.assert_allclose(op.row_sums(), K.sum(axis=1), rtol=rtol)
    assert op.trace() == pytest.approx(np.trace(K), rel=rtol)
    assert (op @ V).dtype == np.float64


def test_row_sums_come_free_with_the_first_product():
    """A tiled operator multiplies a column of ones along with its first block: the sums equal those of a
    separate pass, bit for bit, and asking for them first costs that pass instead."""
    X = np.random.default_rng(4).standard_normal((900, 3))
    V = np.random.default_rng(5).standard_normal((900, 8))
    first = make(X, "matrix_free")
    W = first @ V
    sums_after = first.row_sums()
    second = make(X, "matrix_free")
    sums_alone = second.row_sums()
    np.testing.assert_array_equal(sums_after, sums_alone)
    np.testing.assert_array_equal(second @ V, W)  # the extra column does not change the others


@pytest.mark.parametrize("block", [1, 3, 8, 9, 16, 17, 24, 32, 40, 70])
def test_every_block_width_in_every_isa(block, isa):
    """Every register-blocking path of the tile product (1 to 4 slices of 8 columns, and more than 32),
    in every native module this CPU runs, through the centered eigensolve."""
    n, k = 900, 4
    X = np.random.default_rng(6).standard_normal((n, 8))
    H = np.eye(n) - 1.0 / n
    exact = np.linalg.eigh(H @ fastkpca.gram(X, kernel="laplacian", gamma=0.1) @ H)
    for storage in ("packed", "matrix_free"):
        op = fastkpca.kernel_operator(X, kernel="laplacian", gamma=0.1, storage=storage).centered()
        vals, vecs, info = linalg.solve(op, k, tol=None, maxiter=None, block_size=block,
                                        random_state=0, threads=2)
        assert info["converged"]
        np.testing.assert_allclose(vals, exact[0][::-1][:k], rtol=1e-10)
        overlap = np.linalg.svd(exact[1][:, ::-1][:, :k].T @ vecs, compute_uv=False)
        assert overlap.min() > 1 - 1e-10


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_one_vector_products_in_every_isa(dtype, isa):
    """A single vector (conjugate gradients' product) is multiplied unpadded, along the slabs' rows
    (micro::one_vector_product): against the reference, against the same column of a wider block (its sums
    run in another order, so to rounding), the same for every thread count, in float64 and float32
    products, for every tiled storage and the distributed pair blocks; n and the cross block's sides are
    not multiples of a tile or a slab."""
    n = 777
    X = np.random.default_rng(21).standard_normal((n, 6)).astype(dtype)
    K = reference_kernel(X.astype(np.float64), None, "rbf", gamma=0.3)
    v = np.random.default_rng(22).standard_normal((n, 1))
    V = np.hstack([v, np.random.default_rng(23).standard_normal((n, 8))])
    exact = K @ v
    scale = np.abs(K).sum(1).max() * np.abs(v).max()
    nt = -(-n // TILE)
    for rows in (nt, 2, 0):  # tile rows kept: packed, cached, matrix-free
        native = _native.core.kernel_operator(X, "rbf", 0.3, 3.0, 1.0, rows, 2)
        native.row_sums(2)  # the first pass carries a column of ones: the later ones are one vector wide
        products = ["float64", "float32"] if dtype == np.float32 else ["float64"]
        for arithmetic in products:
            tol = (1e-13 if arithmetic == "float64" else 1e-5) * scale
            once = [native.matmat(np.asfortranarray(v), threads, arithmetic) for threads in (1, 2, 3)]
            for other in once[1:]:
                np.testing.assert_array_equal(other, once[0])
            np.testing.assert_allclose(once[0], exact, rtol=0, atol=max(tol, 1e-6 * scale * (dtype == np.float32)))
            wide = native.matmat(np.asfortranarray(V), 2, arithmetic)[:, :1]
            np.testing.assert_allclose(once[0], wide, rtol=0, atol=tol)
    A, B = X[:530], X[530:]
    vb = np.random.default_rng(24).standard_normal((B.shape[0], 1))
    wa, wb = _native.core.kernel_block_product(A, B, "rbf", 0.3, 3.0, 1.0, None, v[:530], vb, 1, 1)
    cross = K[:530, 530:]
    tol = (1e-13 if dtype == np.float64 else 1e-6) * scale
    np.testing.assert_allclose(wa, cross @ vb, rtol=0, atol=tol)
    np.testing.assert_allclose(wb, cross.T @ v[:530], rtol=0, atol=tol)
    w, _ = _native.core.kernel_block_product(A, None, "rbf", 0.3, 3.0, 1.0, None, v[:530], None, 1, 1)
    np.testing.assert_allclose(w, K[:530, :530] @ v[:530], rtol=0, atol=tol)


@pytest.mark.parametrize("storage", TILED)
def test_results_do_not_depend_on_the_thread_count(storage):
    n = 1500
    X = np.random.default_rng(7).standard_normal((n, 3)).astype(np.float32)
    V = np.random.default_rng(8).standard_normal((n, 16))
    products = []
    for threads in (1, 2, 3):
        nt = -(-n // TILE)
        rows = {"packed": nt, "cached": 3, "matrix_free": 0}[storage]
        native = _native.core.kernel_operator(X, "rbf", 1.0, 3.0, 1.0, rows, threads)
        products.append(native.matmat(np.asfortranarray(V), threads))
        vals = linalg.solve(native.centered(), 5, tol=None, maxiter=None, block_size=8, random_state=0,
                            threads=threads)[0]
        products.append(vals)
    for a, b in zip(products[2:], products[:-2]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dense_operator_in_every_isa_and_on_any_thread_count(dtype, isa):
    """The full storage's passes (dense_operator.hpp, through the micro-kernel's micro::product and
    micro::symmetric_product): the full-matrix sweep (n < 1024, or b > 8) and the one-triangle pass (b <= 8
    from n = 1024), at sizes that leave partial blocks of rows and of columns, for every register-blocking
    path of the block width, against the float64 product of the matrix (float32 entries multiply in
    float64), the same bits on 1, 2 and 3 threads."""
    for n in (37, 1100):
        A = np.random.default_rng(n).standard_normal((n, n))
        K = (A + A.T).astype(dtype)
        native = _native.core.dense_operator(K)
        for b in (1, 5, 8, 9, 16, 24, 33, 40, 70):
            V = np.asfortranarray(np.random.default_rng(b).standard_normal((n, b)))
            once = [native.matmat(V, threads) for threads in (1, 2, 3)]
            for other in once[1:]:
                np.testing.assert_array_equal(other, once[0])
            exact = K.astype(np.float64) @ V
            scale = np.abs(K).astype(np.float64).sum(1).max() * np.abs(V).max()
            np.testing.assert_allclose(once[0], exact, rtol=0, atol=1e-14 * scale, err_msg=f"n={n}, b={b}")


@pytest.mark.parametrize("n", [40, 300, 777])
def test_views_through_the_dense_solve(n):
    """dense=True materialises the operator by applying it to blocks of the identity: all eigenvalues of
    H K H and of K + αI."""
    X = np.random.default_rng(9).standard_normal((n, 5))
    K = fastkpca.gram(X, kernel="rbf", gamma=0.2)
    H = np.eye(n) - 1.0 / n
    op = fastkpca.kernel_operator(X, kernel="rbf", gamma=0.2, storage="matrix_free")
    for view, reference in ((op.centered(), H @ K @ H), (op.shifted(0.7), K + 0.7 * np.eye(n))):
        r = _native.core.eigsh(view.native, np.zeros((n, 1), order="F"), n, 1e-12, 0, 1, 0, True,
                               None, 2)
        np.testing.assert_allclose(r["values"], np.linalg.eigvalsh(reference)[::-1], rtol=0, atol=1e-12 * n)
    assert op.centered().trace() == pytest.approx(np.trace(H @ K @ H), rel=1e-12)
    np.testing.assert_allclose(op.centered().row_sums(), 0)
    np.testing.assert_allclose(op.shifted(2.0).row_sums(), K.sum(1) + 2.0, rtol=1e-12)


def test_scipy_solvers_accept_the_operator():
    X = np.random.default_rng(10).standard_normal((600, 4))
    K = fastkpca.gram(X, kernel="rbf", gamma=0.5)
    op = fastkpca.kernel_operator(X, kernel="rbf", gamma=0.5, storage="matrix_free")
    assert isinstance(op, spla.LinearOperator) and op.shape == (600, 600) and op.dtype == np.float64
    vals = spla.eigsh(op, k=4, which="LA", return_eigenvectors=False)
    np.testing.assert_allclose(np.sort(vals)[::-1], np.linalg.eigvalsh(K)[::-1][:4], rtol=1e-10)
    y = np.random.default_rng(11).standard_normal(600)
    x, status = spla.cg(op.shifted(1.0), y, rtol=1e-12, maxiter=2000)
    assert status == 0
    np.testing.assert_allclose(x, np.linalg.solve(K + np.eye(600), y), rtol=1e-8, atol=1e-10)
    lob, _ = spla.lobpcg(op, np.random.default_rng(12).standard_normal((600, 3)), tol=1e-9, maxiter=500)
    np.testing.assert_allclose(np.sort(lob)[::-1], np.linalg.eigvalsh(K)[::-1][:3], rtol=1e-6)
    np.testing.assert_allclose(op.matvec(y), K @ y, rtol=1e-12)
    np.testing.assert_allclose(op.T @ y, K @ y, rtol=1e-12)


def test_fastkpca_eigsh_accepts_operators_and_foreign_linear_operators():
    X = np.random.default_rng(13).standard_normal((800, 6))
    K = fastkpca.gram(X, kernel="rbf", gamma=0.2)
    ref = np.linalg.eigvalsh(K)[::-1][:5]
    op = fastkpca.kernel_operator(X, kernel="rbf", gamma=0.2, storage="matrix_free")
    vals, _, info = fastkpca.eigsh(op, 5, random_state=0, return_info=True)
    np.testing.assert_allclose(vals, ref, rtol=1e-10)
    assert info["block_size"] == 24  # compute-bound operator: a wider block
    calls = []

    def matmat(V):
        calls.append(V.shape[1])
        return K @ V

    foreign = spla.LinearOperator((800, 800), matvec=lambda v: K @ v, matmat=matmat, dtype=np.float64)
    vals2, vecs2 = fastkpca.eigsh(foreign, 5, random_state=0)
    np.testing.assert_allclose(vals2, ref, rtol=1e-10)
    assert calls and np.linalg.norm(K @ vecs2 - vecs2 * vals2, axis=0).max() < 1e-8 * ref[0]


def test_python_operator_errors_propagate():
    bad = spla.LinearOperator((50, 50), matvec=lambda v: v[:3], matmat=lambda V: V[:3], dtype=np.float64)
    with pytest.raises(ValueError, match="wrong shape"):
        fastkpca.eigsh(bad, 2)

    def boom(V):
        raise ZeroDivisionError("from matmat")

    with pytest.raises(ZeroDivisionError, match="from matmat"):
        fastkpca.eigsh(spla.LinearOperator((50, 50), matvec=boom, matmat=boom, dtype=np.float64), 2)
    with pytest.raises(ValueError, match="square"):
        fastkpca.eigsh(spla.LinearOperator((50, 40), matvec=lambda v: v[:50], dtype=np.float64), 2)


def test_non_finite_products_stop_the_solver():
    X = np.random.default_rng(14).standard_normal((400, 3)) * 1e3
    op = fastkpca.kernel_operator(X, kernel="poly", gamma=1e3, degree=200)  # overflows to inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        fastkpca.eigsh(op, 3)


@given(n=st.integers(1, 700), d=st.integers(1, 9), b=st.integers(1, 20), seed=st.integers(0, 2**16),
       kernel=st.sampled_from(["rbf", "laplacian", "poly", "cosine"]))
def test_property_every_mode_equals_the_reference(n, d, b, seed, kernel):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    V = rng.standard_normal((n, b))
    K = reference_kernel(X, None, kernel, gamma=0.4, degree=2, coef0=1.0)
    expected = K @ V
    results = [make(X, s, kernel=kernel, gamma=0.4, degree=2) @ V if s != "cached" else
               operators.KernelOperator(_native.core.kernel_operator(X, kernel, 0.4, 2.0, 1.0, 1, 2)) @ V
               for s in ("full", *TILED)]
    scale = np.abs(K).sum(1).max() * np.abs(V).max()
    for r in results:
        np.testing.assert_allclose(r, expected, rtol=1e-11, atol=1e-12 * scale)
    for r in results[2:]:
        np.testing.assert_array_equal(r, results[1])


# ------------------------------------------------------------------------------------ storage planning


def test_plan_storage_follows_the_memory_limit():
    n, d = 50_000, 64
    packed = int(_native.core.packed_prefix_size(-(-n // TILE))) * 8
    big = planner.plan_storage(n, d, 8, block_size=8, memory_limit=packed * 2)
    assert big.storage == "packed" and big.kernel_bytes == packed
    wide = planner.plan_storage(n, d, 8, block_size=32, memory_limit=n * n * 8 * 2)
    assert wide.storage == "full"
    four = planner.plan_storage(n, d, 8, block_size=8, memory_limit=4 * 10**9)
    assert four.storage == "cached" and 0 < four.kernel_bytes <= four.budget_bytes < 4 * 10**9
    assert "recomputed" in four.reason
    floor = planner.fixed_bytes(n, d, 8)  # working copies of X, and the slack
    tiny = planner.plan_storage(n, d, 8, block_size=8, memory_limit=floor + 100_000)  # < one tile row
    assert tiny.storage == "matrix_free" and tiny.kernel_bytes == 0
    with pytest.raises(MemoryError, match="even matrix-free"):
        planner.plan_storage(n, d, 8, block_size=8, memory_limit=floor - 1)
    with pytest.raises(MemoryError, match="GiB"):
        planner.plan_storage(n, d, 8, block_size=8, memory_limit=4 * 10**9, storage="packed")
    assert planner.plan_storage(n, d, 8, block_size=8, memory_limit=packed * 2,
                                  storage="matrix_free").storage == "matrix_free"


def test_kernel_operator_validation():
    X = np.random.default_rng(0).standard_normal((20, 3))
    with pytest.raises(ValueError, match="storage"):
        fastkpca.kernel_operator(X, storage="disk")
    with pytest.raises(TypeError, match="storage"):
        fastkpca.kernel_operator(X, storage=3)
    with pytest.raises(ValueError, match="memory_limit"):
        fastkpca.kernel_operator(X, memory_limit="lots")
    with pytest.raises(ValueError, match="memory_limit"):
        fastkpca.kernel_operator(X, memory_limit=-5)
    with pytest.raises(TypeError, match="memory_limit"):
        fastkpca.kernel_operator(X, memory_limit=[1])
    with pytest.raises(ValueError, match="unknown kernel"):
        fastkpca.kernel_operator(X, kernel="gaussian")
    with pytest.raises(MemoryError, match="full"):
        fastkpca.kernel_operator(np.zeros((3000, 2)), storage="full", memory_limit="100MB")
    with pytest.raises(ValueError, match="dimension mismatch"):
        fastkpca.kernel_operator(X) @ np.ones((5, 2))


@pytest.mark.parametrize("text, expected", [("4GB", 4 * 10**9), ("512 MiB", 512 * 2**20), ("1.5e9", 1.5e9),
                                            ("2gib", 2 * 2**30), (10**6, 10**6), (2.5e6, 2.5e6)])
def test_memory_limit_sizes(text, expected):
    from fastkpca._validation import memory_limit

    assert memory_limit(text) == int(expected)


def test_operator_keeps_the_array_it_reads_alive():
    import gc

    X = np.random.default_rng(1).standard_normal((300, 3))
    op = fastkpca.kernel_operator(X, kernel="rbf", storage="full")
    expected = fastkpca.gram(X, kernel="rbf") @ np.ones(300)
    del X
    gc.collect()
    np.testing.assert_allclose(op @ np.ones(300), expected, rtol=1e-13)


def _stored_operator(n):
    X = np.random.default_rng(0).standard_normal((n, 4))
    op = _native.core.kernel_operator(X, "rbf", 0.5, 3.0, 1.0, 10**6, 1, False)  # every tile row stored
    assert op.storage == "packed" and op.nbytes >= _native.core.BACKGROUND_RELEASE_BYTES
    return op


#: Run in a fresh interpreter: the test process's heap (glibc's thresholds, moved by earlier tests) is not.
_RELEASE_SCRIPT = """
import time
import numpy as np
from fastkpca import _native

def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

X = np.random.default_rng(0).standard_normal((3000, 4))
op = _native.core.kernel_operator(X, "rbf", 0.5, 3.0, 1.0, 10**6, 1, False)
nbytes, held = op.nbytes, resident()
del op
deadline = time.monotonic() + 30
while _native.core.spare_bytes() and time.monotonic() < deadline:  # kept for a second for the next fit
    time.sleep(0.05)
_native.core.wait_for_releases()
print(nbytes, held - resident(), _native.core.releases_in_flight())
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/statm") or os.sysconf("SC_PAGE_SIZE") != 4096,
                    reason="reads the resident set from /proc")
def test_a_large_stored_kernel_is_freed_in_the_background():
    """A stored kernel of BACKGROUND_RELEASE_BYTES or more (41 MB here), which goes back to the system on a thread
    of its own once it is no longer the spare (spare_bytes, a second after it was dropped), does go back: once
    wait_for_releases returns, nothing is in flight and the process's resident set has shrunk by it. (That the
    release leaves the caller's thread is a timing, which the tests do not time.)"""
    out = subprocess.run([sys.executable, "-c", _RELEASE_SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    nbytes, returned, in_flight = (int(x) for x in out.stdout.split())
    assert nbytes >= _native.core.BACKGROUND_RELEASE_BYTES
    assert in_flight == 0
    if not _native.core.build_info()["sanitize"]:  # AddressSanitizer's allocator keeps freed blocks (its quarantine)
        assert returned > 0.9 * nbytes


def test_the_memory_checks_wait_for_the_releases_in_flight(monkeypatch):
    """available_memory counts the memory a finished fit is still giving back as available where it is a large share
    of what is available (RELEASE_WAIT_SHARE, set to 0 here): it returns only once the background releases are done,
    and reads no bytes as still in flight."""
    from fastkpca import _validation as v

    monkeypatch.setattr(v, "RELEASE_WAIT_SHARE", 0.0)
    op = _stored_operator(8000)  # 260 MB: its release takes milliseconds
    del op
    v.available_memory()
    assert _native.core.releases_in_flight() == 0
    assert _native.core.release_bytes_in_flight() == 0


def test_the_memory_checks_do_not_wait_for_a_small_share_in_flight(monkeypatch):
    """Releases in flight whose bytes are a small share of the available memory (below RELEASE_WAIT_SHARE) are not
    waited for: the memory is read at once, as taken. A larger share is waited for, and the memory read again."""
    from fastkpca import _validation as v

    waited = []
    monkeypatch.setattr(v, "_memory_now", lambda: 2**30)
    monkeypatch.setattr(_native.core, "wait_for_releases", lambda: waited.append(True))
    monkeypatch.setattr(_native.core, "release_bytes_in_flight", lambda: int(0.5 * v.RELEASE_WAIT_SHARE * 2**30))
    assert v.available_memory() == 2**30
    assert waited == []
    monkeypatch.setattr(_native.core, "release_bytes_in_flight", lambda: int(2 * v.RELEASE_WAIT_SHARE * 2**30))
    assert v.available_memory() == 2**30
    assert waited == [True]


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


#: Run in a fresh interpreter: no spare is held as it starts, and its page faults are its own.
_SPARE_SCRIPT = """
import resource, time
import numpy as np
from fastkpca import _native

core = _native.core
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

def stored(n):
    X = np.random.default_rng(n).standard_normal((n, 4))
    return core.kernel_operator(X, "rbf", 0.5, 3.0, 1.0, 10**6, 1, False)  # every tile row stored

V = np.asfortranarray(np.random.default_rng(1).standard_normal((3000, 3)))
start = faults()
op = stored(3000)
first = faults() - start
nbytes = op.nbytes  # the stored tiles (what the core parks) and its operands
expected = op.matmat(V, 1)
del op
parked = core.spare_bytes()
start = faults()
op = stored(3000)
second = faults() - start
taken = core.spare_bytes()
same = bool(np.array_equal(op.matmat(V, 1), expected))
del op
other = stored(3500)  # another size: the spare goes back, and this one is fresh
after_other = core.spare_bytes()
del other
deadline = time.monotonic() + 30
while core.spare_bytes() and time.monotonic() < deadline:
    time.sleep(0.05)
print(first, second, 0.95 * nbytes < parked <= nbytes, taken, same, after_other, core.spare_bytes())
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="counts page faults as Linux reports them")
def test_a_stored_kernel_built_again_takes_the_spare():
    """A stored kernel of BACKGROUND_RELEASE_BYTES or more that is dropped is kept as the spare, and the next one of
    its size takes it: far fewer page faults (the tiles' pages are already the process's), the same products bit
    for bit (the tiles are all written again). One of another size sends the spare back; and a spare nobody takes
    goes back to the system by itself (spare_bytes falls to 0)."""
    out = subprocess.run([sys.executable, "-c", _SPARE_SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    first, second, parked, taken, same, after_other, last = out.stdout.split()
    if "[always]" not in _read("/sys/kernel/mm/transparent_hugepage/enabled"):  # else faults come in 2 MiB pages
        assert int(first) > 8000  # about 41 MB of fresh pages (10,000 of 4 KiB)
        assert int(second) < 0.2 * int(first), (first, second)
    assert parked == "True" and int(taken) == 0 and same == "True"
    assert int(after_other) == 0
    assert int(last) == 0


def test_the_memory_check_gives_the_spare_back_where_an_allocation_does_not_fit(monkeypatch):
    """The spare is read as taken; where an allocation does not fit in the memory read, check_memory gives the spare
    back (and waits for its release) before it reads again, and raises only if it still does not fit. Where the
    allocation fits, the spare stays."""
    from fastkpca import _validation as v

    calls = []
    monkeypatch.setattr(v, "_memory_now", lambda: 2**30)
    monkeypatch.setattr(_native.core, "release_bytes_in_flight", lambda: 0)
    monkeypatch.setattr(_native.core, "drop_spare", lambda: calls.append("drop") or True)
    monkeypatch.setattr(_native.core, "wait_for_releases", lambda: calls.append("wait"))
    v.check_memory(2**29, "half")
    assert calls == []
    with pytest.raises(MemoryError, match="twice"):
        v.check_memory(2**31, "twice")
    assert calls == ["drop", "wait"]


def test_drop_spare_gives_the_spare_back():
    """drop_spare sends a parked spare back to the system (in flight until wait_for_releases returns) and says
    whether there was one."""
    op = _stored_operator(3000)
    del op
    if _native.core.spare_bytes() == 0:
        pytest.skip("the spare went back by itself before the call")  # a second passed: nothing to drop
    assert _native.core.drop_spare() is True
    assert _native.core.spare_bytes() == 0
    assert _native.core.drop_spare() is False
    _native.core.wait_for_releases()
    assert _native.core.release_bytes_in_flight() == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_holds_no_spare():
    """A child forked while the core holds a spare gives its copy back at once (the spare's timer is a thread of
    the parent)."""
    op = _stored_operator(3000)
    del op
    if _native.core.spare_bytes() == 0:
        pytest.skip("the spare went back before the fork")  # its second is up: nothing to fork with
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave without running the parent's handlers
        os.write(write, str(_native.core.spare_bytes()).encode())
        os._exit(0)
    os.close(write)
    reported = os.read(read, 64).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert reported == "0"
