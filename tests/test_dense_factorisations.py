"""The factorisations that Ctrl-C can stop (solvers/dense/factorisations.py) against LAPACK's: with small panels and
a small cut every branch of the loops runs (several panels, trailing chunks, cut inner dimensions) on small
matrices."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import linalg as sla

from fastkpca.solvers.dense import factorisations as bl


@pytest.fixture
def small_blocks(monkeypatch):
    """Panels of 32 columns (24 in the inverse), calls of at most 2e5 flops, triangular solves split above 5
    columns: the factor of a matrix above 84 rows and the inverse above 66 go by blocks, and the solves with it
    above 32 rows (one right-hand side) or 90 (several)."""
    monkeypatch.setattr(bl, "BLOCK", 32)
    monkeypatch.setattr(bl, "INVERSE_BLOCK", 24)
    monkeypatch.setattr(bl, "TRSM_BLOCK", 5)  # the panels' triangular solves split down to 5 columns
    monkeypatch.setattr(bl, "POLL_FLOPS", 2e5)
    monkeypatch.setattr(bl, "WHOLE_SOLVE_ROWS", 90)  # solves with several right-hand sides by panels above 90 rows


def spd(rng, n, shift=0.1):
    G = rng.standard_normal((n, n + 3))
    return G @ G.T / n + shift * np.eye(n)


@pytest.mark.parametrize("n", [1, 39, 70, 97, 200])
def test_cholesky_and_its_inverse_equal_lapacks(rng, small_blocks, n):
    K = spd(rng, n)
    A = np.array(K, order="F")
    assert bl.cholesky_in_place(A) == 0
    L = np.tril(A)
    expected = sla.cholesky(K, lower=True)
    assert np.abs(L - expected).max() <= 1e-13 * np.abs(expected).max()
    np.testing.assert_array_equal(np.triu(A, 1), np.triu(K, 1))  # the other triangle untouched
    assert bl.cholesky_inverse_in_place(A) == 0
    inverse = np.linalg.inv(K)
    assert np.abs(np.tril(A) - np.tril(inverse)).max() <= 1e-11 * np.abs(inverse).max()
    np.testing.assert_array_equal(np.triu(A, 1), np.triu(K, 1))


def test_a_sub_block_of_a_larger_array(rng, small_blocks):
    """A Fortran-ordered view with a leading dimension above its rows (the blocks' addresses use it), factored and
    solved with."""
    n = 90
    K = spd(rng, n)
    big = np.zeros((n + 13, n + 5), order="F")
    A = big[7:7 + n, 2:2 + n]
    A[...] = K
    assert bl.cholesky_in_place(A) == 0
    assert np.abs(np.tril(A) - sla.cholesky(K, lower=True)).max() <= 1e-13
    assert not big[:7].any() and not big[7 + n:].any() and not big[:, :2].any()
    # the solves with that factor read it through the same leading dimension; no right-hand sides give nothing
    B = rng.standard_normal((n, 2))
    np.testing.assert_allclose(bl.cholesky_solve(A, B), np.linalg.solve(K, B), rtol=1e-10, atol=1e-12)
    assert bl.cholesky_solve(A, np.zeros((n, 0))).shape == (n, 0)


@pytest.mark.parametrize("where", [5, 33, 70])
def test_not_positive_definite_reports_lapacks_info(rng, small_blocks, where):
    """info = the order of the first leading minor that is not positive definite, in any panel."""
    n = 100
    K = spd(rng, n, shift=0.0) * 0 + np.eye(n)
    K[where, where] = -1.0
    assert bl.cholesky_in_place(np.asfortranarray(K)) == where + 1
    _, info = sla.lapack.dpotrf(K, lower=1)
    assert info == where + 1


def test_a_zero_on_the_factors_diagonal_reports_its_index(small_blocks):
    L = np.asfortranarray(np.eye(80))
    L[50, 50] = 0.0
    assert bl.cholesky_inverse_in_place(L) == 51


@pytest.mark.parametrize("n", [1, 31, 64, 97, 200])
@pytest.mark.parametrize("shape", ["vector", 1, 3, 40])
def test_cholesky_solve_equals_lapacks(rng, small_blocks, n, shape):
    """dpotrs' answer, with one right-hand side (trsv and gemv) and several (trsm and gemm, row chunks and groups of
    columns cut by POLL_FLOPS), across several panels (64: whole panels only); the right-hand side unchanged and the
    upper triangle never read."""
    K = spd(rng, n)
    A = np.array(K, order="F")
    assert bl.cholesky_in_place(A) == 0
    A[np.triu_indices(n, 1)] = np.nan  # only the lower triangle may be read
    B = rng.standard_normal(n if shape == "vector" else (n, shape))
    before = B.copy()
    X = bl.cholesky_solve(A, B)
    expected = sla.cho_solve((np.tril(np.nan_to_num(A)), True), B)
    assert X.shape == B.shape
    np.testing.assert_allclose(X, expected, rtol=1e-11, atol=1e-11 * np.abs(expected).max())
    np.testing.assert_allclose(K @ X, B, atol=1e-9 * np.abs(B).max())
    np.testing.assert_array_equal(B, before)


def test_cholesky_solve_takes_any_right_hand_side_and_refuses_a_wrong_one(rng, small_blocks):
    """Integer, float32 and strided right-hand sides come back as float64 solutions; a factor of no rows gives an
    empty answer; B without the factor's rows is refused (not reshaped into something else)."""
    n = 70
    K = spd(rng, n)
    L = np.array(K, order="F")
    assert bl.cholesky_in_place(L) == 0
    wide = rng.standard_normal((n, 8))
    for B in (np.arange(n), wide.astype(np.float32), wide[:, ::3], np.asfortranarray(wide)[::1, 1:4]):
        X = bl.cholesky_solve(L, B)
        assert X.dtype == np.float64 and X.shape == B.shape
        np.testing.assert_allclose(K @ X, B, atol=1e-9 * max(1.0, np.abs(B).max()))
    assert bl.cholesky_solve(np.zeros((0, 0), order="F"), np.zeros((0, 3))).shape == (0, 3)
    for bad in (np.zeros(n - 1), np.zeros((2 * n, 1)), np.zeros((n, 2, 1))):
        with pytest.raises(ValueError, match="rows"):
            bl.cholesky_solve(L, bad)


def test_zero_strict_upper(rng, small_blocks):
    A = np.asfortranarray(rng.standard_normal((75, 75)))
    expected = np.tril(A)
    bl.zero_strict_upper(A)
    np.testing.assert_array_equal(A, expected)


@pytest.mark.parametrize("bad", [np.zeros((4, 4)), np.zeros((4, 5), order="F"), np.zeros((4, 4), np.float32, "F"),
                                 np.zeros((4, 4), order="F")[::2]])
def test_refuses_arrays_blas_cannot_take_in_place(bad):
    with pytest.raises(ValueError, match="Fortran-ordered"):
        bl.cholesky_in_place(bad)


def test_the_default_cut_bounds_every_call(monkeypatch):
    """At the defaults every BLAS call of a 20,000-row factor and inverse stays within POLL_FLOPS (the calls
    are recorded with their arguments, not made: nothing is computed)."""
    calls: list[tuple] = []

    class Shape:  # what the loops read of the matrix: its rows
        n = 20000

    monkeypatch.setattr(bl, "routine", lambda name: lambda *args: calls.append((name, args)))
    monkeypatch.setattr(bl, "_lapack_info", lambda *args: 0)
    monkeypatch.setattr(bl, "Matrix", lambda A: Shape())
    Shape.ld = None
    Shape.at = staticmethod(lambda i, j: (i, j))
    bl.cholesky_in_place(None)
    bl.cholesky_inverse_in_place(None)

    def value(arg):
        return arg._obj.value if hasattr(arg, "_obj") else arg

    worst = 0.0
    for name, args in calls:
        values = [value(a) for a in args]
        if name == "dgemm":
            m, n, k = values[2:5]
            flops = 2.0 * m * n * k
        elif name == "dsyrk":
            n, k = values[2:4]
            flops = float(n) * n * k
        else:  # dtrsm, dtrmm (side, uplo, trans, diag, m, n, ...): the triangle is m × m on the left, n × n right
            side, m, n = args[0].value.decode(), values[4], values[5]
            flops = float(m) * m * n if side == "L" else float(m) * n * n
        worst = max(worst, flops)
    assert len(calls) > 100
    assert worst <= bl.POLL_FLOPS
