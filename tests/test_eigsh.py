"""fastkpca.eigsh against numpy.linalg.eigh on matrices with controlled spectra."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fastkpca
from fastkpca import _native
from fastkpca.solvers.krylov import lanczos as linalg
from fastkpca.solvers.krylov.eigenvalues import sign_flip
import reference as ref

#: Every test here runs teams of threads on purpose (thread counts, every ISA level's parallel paths).
pytestmark = pytest.mark.threads


def with_spectrum(values, seed=0, dtype=np.float64):
    """Q diag(values) Qᵀ for a random orthogonal Q, exactly symmetric."""
    n = len(values)
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))
    A = (q * np.asarray(values)) @ q.T
    return ((A + A.T) / 2).astype(dtype)


N = 500
rng0 = np.random.default_rng(7)
SPECTRA = {
    "separated": 100 * 0.8 ** np.arange(N),
    "clustered": np.concatenate([1 + 1e-7 * np.arange(6), 0.5 + 1e-7 * np.arange(6), 0.1 * rng0.random(N - 12)]),
    "repeated": np.concatenate([[5.0] * 4, [3.0] * 3, rng0.random(N - 7)]),
    "zero_heavy": np.concatenate([np.arange(5, 0, -1.0), np.zeros(N - 5)]),
    "indefinite": np.concatenate([[10.0, 9.0, 7.5, 6.0], -1000 * rng0.random(20), rng0.uniform(-1, 5, N - 24)]),
    "flat": np.linspace(1.0, 0.9, N),
}


def check_pairs(A, vals, vecs, k, rtol_vals=1e-9, rtol_res=1e-8):
    A64 = A.astype(np.float64)
    exact = np.linalg.eigvalsh(A64)[::-1][:k]
    scale = np.abs(np.linalg.eigvalsh(A64)).max()
    assert vals.shape == (k,) and vecs.shape == (A.shape[0], k)
    assert np.all(np.diff(vals) <= 0), "eigenvalues must be descending"
    np.testing.assert_allclose(vals, exact, rtol=0, atol=rtol_vals * scale)
    v = vecs.astype(np.float64)
    res = np.linalg.norm(A64 @ v - v * vals.astype(np.float64), axis=0)
    assert res.max() <= rtol_res * max(abs(exact[0]), 1e-300) + 1e-12 * scale
    np.testing.assert_allclose(v.T @ v, np.eye(k), atol=1e-6 if vecs.dtype == np.float32 else 1e-10)
    rows = np.argmax(np.abs(v), axis=0)
    assert np.all(v[rows, np.arange(k)] > 0), "largest-magnitude entry of each vector must be positive"


@pytest.mark.parametrize("spectrum", sorted(SPECTRA))
@pytest.mark.parametrize("k", [1, 6, 20])
def test_spectra_float64(spectrum, k):
    A = with_spectrum(SPECTRA[spectrum])
    vals, vecs, info = fastkpca.eigsh(A, k, random_state=0, return_info=True)
    assert info["converged"]
    assert info["method"] == "block_lanczos"
    check_pairs(A, vals, vecs, k)
    assert np.all(info["residual_norms"] >= 0)


@pytest.mark.parametrize("spectrum", ["separated", "repeated", "indefinite"])
def test_spectra_float32(spectrum):
    A = with_spectrum(SPECTRA[spectrum], dtype=np.float32)
    vals, vecs = fastkpca.eigsh(A, 8, random_state=1)
    assert vals.dtype == np.float32 and vecs.dtype == np.float32
    # The float32 matrix is solved in float64 arithmetic: only the float32 output rounds.
    check_pairs(A, vals, vecs, 8, rtol_vals=1e-6, rtol_res=1e-5)


def test_every_isa_module(isa):
    A = with_spectrum(SPECTRA["separated"])
    vals, vecs = fastkpca.eigsh(A, 10, random_state=0)
    check_pairs(A, vals, vecs, 10)


def test_kernel_matrix_pass_count():
    X = np.random.default_rng(0).standard_normal((1500, 16))
    K = fastkpca.double_center(fastkpca.gram(X, kernel="rbf", gamma=1 / 16))
    vals, vecs, info = fastkpca.eigsh(K, 10, tol=1e-8, random_state=0, return_info=True)
    check_pairs(K, vals, vecs, 10)
    assert info["n_passes"] <= 20
    assert info["n_vectors"] == info["n_passes"] * info["block_size"]


def test_implicit_centering_operator(rng):
    """Solving H K H through the implicitly centered operator equals solving the centered matrix."""
    K = fastkpca.gram(rng.standard_normal((800, 6)), kernel="rbf", gamma=0.3)
    Kc = ref.double_center(K)
    op = _native.core.dense_operator(K).centered()
    vals, vecs, info = linalg.solve(op, 7, tol=None, maxiter=None, block_size=None, random_state=0, threads=0)
    assert info["converged"] and info["method"] == "block_lanczos"
    check_pairs(Kc, vals, sign_flip(vecs), 7)


@pytest.mark.parametrize("n, k", [(1, 1), (7, 7), (60, 59), (60, 60), (300, 299)])
def test_small_and_full(n, k):
    A = with_spectrum(np.linspace(3, -2, n), seed=n)
    vals, vecs, info = fastkpca.eigsh(A, k, return_info=True, random_state=0)
    check_pairs(A, vals, vecs, k)
    assert info["method"] == "dense"


def test_deterministic():
    A = with_spectrum(SPECTRA["clustered"])
    a = fastkpca.eigsh(A, 10, random_state=42)
    b = fastkpca.eigsh(A, 10, random_state=42)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_non_convergence_warns_and_returns_best():
    A = with_spectrum(SPECTRA["flat"])
    with pytest.warns(fastkpca.ConvergenceWarning, match="converged"):
        vals, vecs, info = fastkpca.eigsh(A, 10, maxiter=1, return_info=True, random_state=0)
    assert not info["converged"]
    assert vals.shape == (10,) and np.all(np.isfinite(vals)) and np.all(np.isfinite(vecs))
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(10), atol=1e-10)


def test_input_not_modified_and_layouts():
    A = with_spectrum(SPECTRA["separated"][:300])
    F = np.asfortranarray(A)
    before = F.copy()
    vals_f, _ = fastkpca.eigsh(F, 3, random_state=0)
    np.testing.assert_array_equal(F, before)
    vals_s, _ = fastkpca.eigsh(np.repeat(A, 2, axis=0)[::2], 3, random_state=0)
    vals_l, _ = fastkpca.eigsh(A.tolist(), 3, random_state=0)
    np.testing.assert_allclose(vals_f, vals_s)
    np.testing.assert_allclose(vals_f, vals_l)
    vals_i, _ = fastkpca.eigsh(np.diag(np.arange(5)), 2)
    np.testing.assert_allclose(vals_i, [4, 3])


def test_bad_input():
    A = with_spectrum(np.arange(10.0))
    for k in (0, -1, 11):
        with pytest.raises(ValueError, match="k must be"):
            fastkpca.eigsh(A, k)
    for k in (2.5, "3", None):
        with pytest.raises(TypeError, match="k must be an integer"):
            fastkpca.eigsh(A, k)
    with pytest.raises(ValueError, match="square"):
        fastkpca.eigsh(np.ones((3, 4)), 1)
    B = A.copy()
    B[0, 1] += 0.5
    with pytest.raises(ValueError, match=r"not symmetric: max \|A - A.T\| = 0.5"):
        fastkpca.eigsh(B, 1)
    B = A.copy()
    B[2, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fastkpca.eigsh(B, 1)
    with pytest.raises(ValueError, match="tol"):
        fastkpca.eigsh(A, 1, tol=-1.0)
    with pytest.raises(ValueError, match="maxiter"):
        fastkpca.eigsh(A, 1, maxiter=0)
    with pytest.raises(ValueError, match="block_size"):
        fastkpca.eigsh(A, 1, block_size=0)
    with pytest.raises(TypeError, match="complex"):
        fastkpca.eigsh(A.astype(complex), 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fastkpca.eigsh(A, 2)


def test_same_result_for_any_thread_count():
    """Rows of a pass and chunks of the orthogonalisation are fixed work units, so threads do not
    change the rounding."""
    K = fastkpca.double_center(fastkpca.gram(np.random.default_rng(3).standard_normal((1500, 6)), kernel="rbf"))
    one = fastkpca.eigsh(K, 8, random_state=0, n_jobs=1)
    two = fastkpca.eigsh(K, 8, random_state=0, n_jobs=2)
    three = fastkpca.eigsh(K, 8, random_state=0, n_jobs=3)
    for other in (two, three):
        np.testing.assert_array_equal(one[0], other[0])
        np.testing.assert_array_equal(one[1], other[1])


def test_rank_deficient_kernels_keep_orthogonality():
    """Regression (CI): a column of A·Q that cancels almost entirely against the basis is normalised
    rounding noise; without a second projection after that cancellation, orthogonality was lost and the
    Ritz values of a rank-3 kernel came out near 4e4 (true top value about 275)."""
    for seed in range(300):
        X = np.random.default_rng(seed).standard_normal((250, 3))
        K = ref.double_center(X @ X.T)
        vals, vecs = fastkpca.eigsh(K, 6, random_state=seed)
        exact = np.linalg.eigvalsh(K)[::-1][:6]
        np.testing.assert_allclose(vals, exact, rtol=0, atol=1e-9 * exact[0], err_msg=f"seed {seed}")
        np.testing.assert_allclose(vecs.T @ vecs, np.eye(6), atol=1e-9, err_msg=f"seed {seed}")
