"""Fuzzing: random shapes, dtypes, layouts and parameters through the native entry points. Whatever the
input, a call returns a well-formed result or raises ValueError/TypeError — never crashes or hangs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fastkpca
from fastkpca import _native

finite_or_wild = st.one_of(
    st.floats(-1e3, 1e3, allow_nan=False),
    st.sampled_from([0.0, -0.0, 1e-300, -1e-300, 1e150, -1e150, 1e-150, np.nan, np.inf, -np.inf]),
)
dtypes = st.sampled_from([np.float64, np.float32, np.int32, np.float16, np.bool_])
gammas = st.one_of(st.none(), st.sampled_from([0.0, 1e-300, 1e-8, 0.1, 1.0, 1e8, 1e300, -1.0, np.nan, np.inf]))


def _cast(a, dtype):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return a.astype(dtype)


def arrays(max_rows=30, max_cols=8):
    """float64 draws (wild values included) cast to a random dtype."""
    return st.tuples(st.integers(0, max_rows), st.integers(0, max_cols), dtypes).flatmap(
        lambda t: hnp.arrays(np.float64, (t[0], t[1]), elements=finite_or_wild).map(lambda a: _cast(a, t[2]))
    )


def test_gram_rejects_a_gamma_that_overflows_float32():
    """Found by test_gram_fuzz: sigmoid of a zero float32 row with gamma=1e300 was tanh(0·inf) = NaN."""
    X = np.zeros((1, 1), dtype=np.float32)
    with pytest.raises(ValueError, match="gamma=1e\\+300 overflows float32"):
        fastkpca.gram(X, kernel="sigmoid", gamma=1e300)
    assert fastkpca.gram(X.astype(np.float64), kernel="sigmoid", gamma=1e300)[0, 0] == np.tanh(1.0)
    # an estimator's native kernel checks its samples the same way (it stopped at its NaN check before)
    with pytest.raises(ValueError, match="gamma=1e\\+300 overflows float32"):
        fastkpca.KernelPCA(2, kernel="sigmoid", gamma=1e300).fit(np.eye(5, 2, dtype=np.float32))


@settings(max_examples=150)
@given(X=arrays(), n_y=st.one_of(st.none(), st.integers(0, 12)),
       kernel=st.sampled_from(["linear", "poly", "rbf", "laplacian", "sigmoid", "cosine"]), gamma=gammas,
       degree=st.sampled_from([0, 1, 2, 3, 2.5, -1]), n_jobs=st.sampled_from([None, 1, 2, 3, -1]),
       order=st.sampled_from("CF"))
def test_gram_fuzz(X, n_y, kernel, gamma, degree, n_jobs, order):
    Y = None if n_y is None else np.resize(X, (n_y, X.shape[1])) if X.size else np.zeros((n_y, X.shape[1]))
    X = np.array(X, order=order)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            K = fastkpca.gram(X, Y, kernel=kernel, gamma=gamma, degree=degree, n_jobs=n_jobs)
    except (ValueError, TypeError, MemoryError):
        return
    assert K.shape == (X.shape[0], X.shape[0] if Y is None else Y.shape[0])
    if kernel in ("rbf", "laplacian", "sigmoid", "cosine"):
        assert not np.isnan(K).any(), "bounded kernels never produce NaN for finite input"
        assert np.all(np.abs(K) <= 1 + 1e-6)
    if Y is None:
        assert np.array_equal(K, K.T, equal_nan=True)


@settings(max_examples=100)
@given(n=st.integers(0, 25), dtype=st.sampled_from([np.float64, np.float32]), copy=st.booleans(),
       order=st.sampled_from("CF"), distances=st.booleans(), squared=st.booleans(),
       data=st.data())
def test_centering_fuzz(n, dtype, copy, order, distances, squared, data):
    A = _cast(data.draw(hnp.arrays(np.float64, (n, n), elements=finite_or_wild)), dtype)
    A = np.array(A, order=order)
    before = A.copy()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out = (fastkpca.double_center_distances(A, squared=squared, copy=copy) if distances
                   else fastkpca.double_center(A, copy=copy))
    except (ValueError, TypeError, MemoryError):
        np.testing.assert_array_equal(A, before)  # errors leave the input untouched
        return
    assert out.shape == (n, n)
    if copy:
        np.testing.assert_array_equal(A, before)
    else:
        assert out is A


@settings(max_examples=80)
@given(n=st.integers(1, 40), k=st.integers(-1, 42), block=st.one_of(st.none(), st.integers(0, 45)),
       maxiter=st.one_of(st.none(), st.integers(0, 5)), tol=st.sampled_from([None, 0.0, 1e-3, 1e-14, -1.0]),
       dtype=st.sampled_from([np.float64, np.float32]), rank=st.integers(0, 40), seed=st.integers(0, 2**31))
def test_eigsh_fuzz(n, k, block, maxiter, tol, dtype, rank, seed):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((n, min(rank, n)))
    A = (B @ B.T - 0.1 * np.eye(n)).astype(dtype)  # rank-deficient, slightly indefinite
    A = (A + A.T) / 2
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fastkpca.ConvergenceWarning)
            vals, vecs, info = fastkpca.eigsh(A, k, block_size=block, maxiter=maxiter, tol=tol,
                                              random_state=seed, return_info=True)
    except (ValueError, TypeError):
        return
    assert vals.shape == (k,) and vecs.shape == (n, k)
    assert np.all(np.isfinite(vals)) and np.all(np.isfinite(vecs))
    np.testing.assert_allclose(vecs.T.astype(np.float64) @ vecs, np.eye(k), atol=1e-4 if dtype == np.float32 else 1e-8)
    if info["converged"]:
        A64, V = A.astype(np.float64), vecs.astype(np.float64)
        exact = np.linalg.eigvalsh(A64)[::-1]
        scale = max(np.abs(exact).max(), 1.0)
        floor = (1e-4 if dtype == np.float32 else 1e-6) * scale
        # Every pair converged to tol has ‖Av − θv‖ ≤ tol·λ₁ (so the block residual R = AV − VΘ has
        # ‖R‖₂ ≤ √k·tol·λ₁)
        R = A64 @ V - V * vals
        assert np.all(np.linalg.norm(R, axis=0) <= max(floor, (tol or 0.0) * scale) + floor)
        spread = np.linalg.norm(R, 2)
        # Ritz values of V's span: θ_j ≤ λ_j (Cauchy interlacing), and k eigenvalues, matched in order, lie
        # within ‖R‖₂ of them (Kahan's theorem, Parlett §11.5). So θ_j is within ‖R‖₂ of λ_j itself wherever
        # θ_j − ‖R‖₂ is above λ_{j+1}; where it is not, the spectrum's gap is below the residual and a Ritz value
        # may stand for λ_{j+1} (seen: n = 38, k = 33, one vector per block, tol 1e-3, λ₃₃ − λ₃₄ = 0.24 with
        # residuals up to 0.11; θ₃₃ = 1.037 for λ₃₃ = 1.270, λ₃₄ = 1.029).
        assert np.all(vals <= exact[:k] + floor)
        following = np.append(exact[1:], -np.inf)[:k]
        decided = vals - spread - floor > following
        np.testing.assert_allclose(vals[decided], exact[:k][decided], atol=spread + floor)


def test_native_invariants_raise_instead_of_crashing():
    core = _native.core
    X = np.ones((3, 2))
    with pytest.raises(ValueError):
        core.gram_into(X, None, "rbf", 1.0, 3.0, 1.0, np.empty((2, 3)), 0)  # wrong output shape
    with pytest.raises(ValueError):
        core.gram_into(X, None, "nope", 1.0, 3.0, 1.0, np.empty((3, 3)), 0)
    with pytest.raises(TypeError):
        core.gram_into(X.astype(np.float32), None, "rbf", 1.0, 3.0, 1.0, np.empty((3, 3)), 0)  # mixed dtypes
    with pytest.raises(TypeError):
        core.gram_into(np.ones((3, 4))[:, ::2], None, "rbf", 1.0, 3.0, 1.0, np.empty((3, 3)), 0)  # strided
    with pytest.raises(ValueError):
        core.center_cross_inplace(np.ones((2, 3)), np.ones(4), 0.0, 0)
    op = core.dense_operator(np.eye(4))
    with pytest.raises(ValueError):  # v0 of the wrong height
        core.eigsh(op, np.ones((3, 2), order="F"), 1, 1e-10, 2, 10, 0, False, None, 0)
    with pytest.raises(ValueError):  # basis size outside k + 2b <= m <= n - b
        core.eigsh(op, np.ones((4, 2), order="F"), 1, 1e-10, 0, 10, 0, False, None, 0)
    with pytest.raises(ValueError):  # k out of range
        core.eigsh(op, np.ones((4, 1), order="F"), 5, 1e-10, 0, 10, 0, True, None, 0)
    # Shapes are checked at the boundary: non-square or 1-D arrays never reach the core.
    for call in (lambda: core.dense_operator(np.ones((3, 4))),
                 lambda: core.scan_square(np.ones((3, 4)), True, 0),
                 lambda: core.double_center_inplace(np.ones((3, 4)), "kernel", 1.0, 0),
                 lambda: core.kernel_operator(np.ones(4), "rbf", 1.0, 3.0, 1.0, 0, 0),
                 lambda: core.gram_into(np.ones(3), None, "rbf", 1.0, 3.0, 1.0, np.empty((3, 3)), 0),
                 lambda: core.center_cross_inplace(np.ones(3), np.ones(3), 0.0, 0),
                 lambda: core.kernel_diagonal_into(np.ones(3), "rbf", 1.0, 3.0, 1.0, np.empty(3), 0),
                 lambda: core.kernel_diagonal_into(np.ones((3, 2)), "rbf", 1.0, 3.0, 1.0, np.empty(2), 0),
                 lambda: core.cross_product_into(np.ones(3), np.ones((3, 1)), "rbf", 1.0, 3.0, 1.0, np.ones((3, 1)),
                                                 np.empty((3, 1)), 0),
                 lambda: core.cross_product_into(np.ones((3, 1)), np.ones((3, 1)), "rbf", 1.0, 3.0, 1.0, np.ones(3),
                                                 np.empty((3, 1)), 0),
                 lambda: op.matmat(np.ones((3, 2), order="F"), 0)):
        with pytest.raises(ValueError):
            call()
