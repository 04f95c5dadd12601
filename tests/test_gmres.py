"""Right-preconditioned GMRES with a companion product (solvers/gmres.py) against dense solves."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fastkpca.solvers.gmres import gmres


def _system(n: int, seed: int):
    """A = I + W K (the Laplace approximation's Newton matrix: not symmetric), K an RBF kernel matrix."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    W = rng.uniform(0.0, 0.25, n)
    W[: n // 10] = 0.0  # rows where the likelihood's curvature underflows
    return K, W, np.eye(n) + W[:, None] * K, rng.standard_normal(n)


def _operator(K, W):
    return lambda u: (u + W * (K @ u), K @ u)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 80))
def test_solves_and_returns_the_companion_product(seed, n):
    K, W, A, b = _system(n, seed)
    x, Kx, info = gmres(_operator(K, W), b, precondition=lambda v: v, tol=1e-12, maxiter=n + 1)
    assert info["converged"] and info["iterations"] <= n + 1
    np.testing.assert_allclose(A @ x, b, atol=1e-10 * np.linalg.norm(b))
    np.testing.assert_allclose(Kx, K @ x, atol=1e-10 * max(1.0, np.abs(K @ x).max()))


def test_an_exact_preconditioner_takes_one_product():
    K, W, A, b = _system(60, 1)
    inverse = np.linalg.inv(A)
    x, Kx, info = gmres(_operator(K, W), b, precondition=lambda v: inverse @ v, tol=1e-10, maxiter=10)
    assert info["iterations"] == 1 and info["residual"] <= 1e-10
    np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(Kx, K @ x, rtol=1e-9, atol=1e-12)


def test_a_start_and_restarts():
    """From x₀ (its residual and companion given: no product for them) the tolerance is relative to x₀'s
    residual; short cycles restarted reach what one long cycle does, the residual rebuilt without products."""
    K, W, A, b = _system(120, 2)
    exact = np.linalg.solve(A, b)
    x0 = exact + 1e-3 * np.random.default_rng(3).standard_normal(120)
    r0 = b - A @ x0
    x, Kx, info = gmres(_operator(K, W), b, precondition=lambda v: v, tol=1e-6, maxiter=60, x0=x0,
                        residual0=r0, companion0=K @ x0)
    assert info["converged"] and np.linalg.norm(b - A @ x) <= 1.01e-6 * np.linalg.norm(r0)
    np.testing.assert_allclose(Kx, K @ x, atol=1e-11)
    x, Kx, info = gmres(_operator(K, W), b, precondition=lambda v: v, tol=1e-10, maxiter=4, restarts=200)
    assert info["converged"] and info["iterations"] > 4  # it took more than one cycle
    np.testing.assert_allclose(x, exact, atol=1e-8)
    np.testing.assert_allclose(Kx, K @ x, atol=1e-10)


def test_reports_a_cycle_that_stops_short():
    K, W, _, b = _system(100, 4)
    x, Kx, info = gmres(_operator(K, W), b, precondition=lambda v: v, tol=1e-14, maxiter=2)
    assert not info["converged"] and info["iterations"] == 2 and 0 < info["residual"] < 1


def test_a_zero_right_hand_side():
    x, Kx, info = gmres(lambda u: (u, u), np.zeros(10), precondition=lambda v: v, tol=1e-8, maxiter=5)
    assert info["converged"] and info["iterations"] == 0 and not x.any() and not Kx.any()
