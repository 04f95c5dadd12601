"""The symmetric eigendecomposition that Ctrl-C can stop (solvers/dense/eigh.py) against LAPACK's: with small
panels, blocks and cuts every branch of its three stages runs on small matrices (panels by ``latrd`` and
column by column, chunked trailing updates, MRRR and bisection, reflector blocks over column chunks)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import linalg as sla

from fastkpca.solvers.dense import eigh as be
from fastkpca.solvers.dense.eigh import symmetric_eigh


@pytest.fixture
def small_blocks(monkeypatch):
    """Panels of 8 columns, reflector blocks of 8, BLAS-3 calls of at most 2e4 flops: every matrix above 16
    rows goes through the stages; panels whose reads exceed 2e4 bytes (trailing matrices above ~25 rows in
    float64) column by column."""
    monkeypatch.setattr(be, "WHOLE_ROWS", 0)
    monkeypatch.setattr(be, "PANEL", 8)
    monkeypatch.setattr(be, "REFLECTOR_BLOCK", 8)
    monkeypatch.setattr(be, "POLL_FLOPS", 2e4)
    monkeypatch.setattr(be, "PANEL_POLL_BYTES", 2e4)


def symmetric(rng, n, dtype=np.float64):
    G = rng.standard_normal((n, n))
    return ((G + G.T) / 2).astype(dtype)


def check_pairs(K, values, vectors, expected, tol):
    """Eigenvalues against LAPACK's, residuals ‖K v − λ v‖ and orthonormality, relative to ‖K‖."""
    scale = max(np.abs(expected).max(), np.finfo(K.dtype).tiny)
    assert values.dtype == K.dtype and vectors.dtype == K.dtype
    assert values.shape == expected.shape and vectors.shape == (K.shape[0], expected.shape[0])
    assert np.all(np.diff(values) >= 0)
    assert np.abs(values - expected).max() <= tol * scale
    K64, V64 = K.astype(np.float64), vectors.astype(np.float64)
    assert np.abs(K64 @ V64 - V64 * values.astype(np.float64)).max() <= 50 * tol * scale
    assert np.abs(V64.T @ V64 - np.eye(V64.shape[1])).max() <= 50 * tol


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-13), (np.float32, 5e-6)])
@pytest.mark.parametrize("n", [1, 2, 17, 40, 97, 150])
@pytest.mark.parametrize("subset", [None, "top", "bottom", "all"])
def test_eigenpairs_equal_lapacks(rng, small_blocks, dtype, tol, n, subset):
    K = symmetric(rng, n, dtype)
    lo, hi = {None: (0, n - 1), "top": (max(0, n - 5), n - 1), "bottom": (0, min(n, 3) - 1),
              "all": (0, n - 1)}[subset]
    expected = sla.eigh(K.astype(np.float64), eigvals_only=True)[lo:hi + 1].astype(dtype)
    A = np.array(K, order="F")
    values, vectors = be.symmetric_eigenpairs(A, None if subset is None else (lo, hi))
    check_pairs(K, values, vectors, expected, tol)


def test_column_by_column_panels_equal_latrds(rng, monkeypatch):
    """The panels written out column by column make LAPACK's ``latrd`` calls' arithmetic: the same T."""
    monkeypatch.setattr(be, "PANEL", 8)
    K = symmetric(rng, 120)
    runs = []
    for budget in (1e12, 0.0):  # every panel by latrd; every panel by columns
        monkeypatch.setattr(be, "PANEL_POLL_BYTES", budget)
        A = np.array(K, order="F")
        runs.append((be._tridiagonalise(be.Matrix(A)), A))
    (d0, e0, tau0), A0 = runs[0]
    (d1, e1, tau1), A1 = runs[1]
    for x, y in ((d0, d1), (e0, e1), (tau0, tau1), (np.tril(A0, -1), np.tril(A1, -1))):
        np.testing.assert_allclose(y, x, rtol=0, atol=1e-13)
    # and T's eigenvalues are K's
    T = np.diag(d0) + np.diag(e0, 1) + np.diag(e0, -1)
    np.testing.assert_allclose(np.linalg.eigvalsh(T), np.linalg.eigvalsh(K), atol=1e-12)


@pytest.mark.parametrize("scale", [1e-170, 1e160])
def test_a_matrix_outside_the_safe_range_is_scaled(rng, small_blocks, scale):
    K = symmetric(rng, 60) * scale
    values, vectors = be.symmetric_eigenpairs(np.array(K, order="F"), None)
    expected = sla.eigh(K, eigvals_only=True)
    assert np.all(np.isfinite(values)) and np.all(np.isfinite(vectors))
    check_pairs(K, values, vectors, expected, 1e-13)


def test_a_diagonal_matrix_splits_into_blocks(small_blocks):
    """A reducible T (zeros off the diagonal): bisection works block by block, its pairs come back sorted."""
    d = np.array([5.0, -1.0, 3.0, 3.0, 0.5] * 8)
    K = np.diag(d)
    values, vectors = be.symmetric_eigenpairs(np.array(K, order="F"), (30, 39))
    check_pairs(K, values, vectors, np.sort(d)[30:40], 1e-14)


def test_the_public_entry_leaves_its_input_alone_unless_asked(rng, small_blocks):
    K = symmetric(rng, 70)
    expected = sla.eigh(K, eigvals_only=True)
    C = K.copy()  # C-ordered
    values, _ = symmetric_eigh(C, subset_by_index=(60, 69))
    np.testing.assert_array_equal(C, K)
    np.testing.assert_allclose(values, expected[60:], atol=1e-12)
    values_all, _ = symmetric_eigh(C, overwrite_a=True)  # its transpose is the Fortran-ordered K, overwritten
    np.testing.assert_allclose(values_all, expected, atol=1e-12)
    assert not np.array_equal(C, K)


@pytest.mark.parametrize("bad", [np.zeros((4, 5), order="F"), np.zeros((4, 4), np.int64, "F"),
                                 np.zeros((4, 4), order="F")[::2]])
def test_refuses_arrays_lapack_cannot_take_in_place(bad):
    with pytest.raises(ValueError, match="Fortran-ordered"):
        be.symmetric_eigenpairs(bad, None)
