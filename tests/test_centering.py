"""double_center, double_center_distances and KernelCenterer."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fastkpca
import reference as ref

data = st.tuples(st.integers(1, 80), st.integers(1, 12)).flatmap(
    lambda shape: hnp.arrays(np.float64, shape, elements=st.floats(-5, 5, allow_nan=False, width=64))
)


@given(X=data, kernel=st.sampled_from(["linear", "rbf", "laplacian", "poly"]),
       dtype=st.sampled_from([np.float64, np.float32]), order=st.sampled_from("CF"))
def test_double_center_identities(X, kernel, dtype, order):
    K0 = fastkpca.gram(X, kernel=kernel, gamma=0.3, degree=2).astype(dtype)
    K = np.array(K0, order=order)
    out = fastkpca.double_center(K)
    assert out is K
    scale = max(np.abs(K0).max(), 1e-300)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    n = K.shape[0]
    # Zero row and column sums, equality with H K H, exact symmetry.
    assert np.abs(K.astype(np.float64).sum(axis=0)).max() <= tol * scale * max(1, n / 10)
    assert np.abs(K.astype(np.float64).sum(axis=1)).max() <= tol * scale * max(1, n / 10)
    np.testing.assert_allclose(K, ref.double_center(K0), rtol=0, atol=tol * scale * 4)
    assert np.array_equal(K, K.T)
    # Idempotent, and PSD is preserved.
    again = fastkpca.double_center(K.copy())
    np.testing.assert_allclose(again, K, rtol=0, atol=tol * scale * 4)
    if dtype == np.float64:
        w = np.linalg.eigvalsh(K)
        assert w[0] >= -1e-10 * max(abs(w[-1]), 1e-300) - 1e-12 * scale


def test_every_isa_module(isa, rng):
    K0 = fastkpca.gram(rng.standard_normal((257, 5)), kernel="rbf")
    K = fastkpca.double_center(K0.copy())
    np.testing.assert_allclose(K, ref.double_center(K0), atol=1e-13)
    assert np.array_equal(K, K.T)


def test_copy_leaves_input_untouched(rng):
    K = fastkpca.gram(rng.standard_normal((30, 3)))
    before = K.copy()
    out = fastkpca.double_center(K, copy=True)
    np.testing.assert_array_equal(K, before)
    np.testing.assert_allclose(out, ref.double_center(K), atol=1e-12)
    out = fastkpca.double_center(K.tolist(), copy=True)  # any array-like with copy=True
    np.testing.assert_allclose(out, ref.double_center(K), atol=1e-12)
    K.setflags(write=False)
    fastkpca.double_center(K, copy=True)


def test_general_square_matrix(rng):
    A = rng.standard_normal((40, 40))
    np.testing.assert_allclose(fastkpca.double_center(A.copy()), ref.double_center(A), atol=1e-12)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda K: K.tolist(), "not a NumPy array"),
        (lambda K: K.astype(np.int64), "dtype"),
        (lambda K: K[::2, ::2], "not contiguous"),
        (lambda K: K[:, :5], "square"),
        (lambda K: np.ones((0, 0)), "empty"),
    ],
)
def test_cannot_center_in_place(make, match, rng):
    K = fastkpca.gram(rng.standard_normal((10, 2)))
    with pytest.raises(ValueError, match=match):
        fastkpca.double_center(make(K))


def test_read_only_and_non_finite(rng):
    K = fastkpca.gram(rng.standard_normal((10, 2)))
    K.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        fastkpca.double_center(K)
    K = K.copy()
    K[3, 4] = np.nan
    before = K.copy()
    with pytest.raises(ValueError, match="NaN"):
        fastkpca.double_center(K)
    np.testing.assert_array_equal(K, before)  # untouched
    K[3, 4] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        fastkpca.double_center_distances(K)


@given(X=data, dtype=st.sampled_from([np.float64, np.float32]))
def test_classical_scaling_identity(X, dtype):
    """-½ H D² H of Euclidean distances is the Gram matrix of the column-centered data."""
    D = np.sqrt(ref.sq_distances(X, X)).astype(dtype)
    Xc = X - X.mean(axis=0)
    G = Xc @ Xc.T
    scale = max(np.abs(G).max(), 1.0)
    tol = 1e-10 if dtype == np.float64 else 1e-4
    B = fastkpca.double_center_distances(D.copy())
    np.testing.assert_allclose(B, G, rtol=0, atol=tol * scale)
    B2 = fastkpca.double_center_distances(D.astype(np.float64) ** 2, squared=True)
    np.testing.assert_allclose(B2, G, rtol=0, atol=tol * scale)
    B3 = fastkpca.double_center_distances(D, copy=True)
    np.testing.assert_allclose(B3, G, rtol=0, atol=tol * scale)


def test_in_place_allocates_no_square_temporary():
    """Peak RSS while centering a 4000×4000 matrix in place grows by far less than one N×N array."""
    code = textwrap.dedent(
        """
        import resource, numpy as np, fastkpca
        n = 4000
        K = fastkpca.gram(np.random.default_rng(0).standard_normal((n, 8)), kernel="rbf")
        fastkpca.double_center(np.ones((64, 64)))  # load everything first
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        fastkpca.double_center(K)
        fastkpca.double_center_distances(K)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((after - before) * 1024 / K.nbytes)
        """
    )
    growth = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert growth < 0.1, f"in-place centering grew peak memory by {growth:.2f} × N² · 8 bytes"


@given(X=data, n_new=st.integers(1, 20))
def test_kernel_centerer_matches_sklearn(X, n_new):
    sk = pytest.importorskip("sklearn.preprocessing")
    K = fastkpca.gram(X, kernel="rbf", gamma=0.2)
    Xn = np.random.default_rng(n_new).uniform(-5, 5, size=(n_new, X.shape[1]))
    Kn = fastkpca.gram(Xn, X, kernel="rbf", gamma=0.2)
    ours = fastkpca.KernelCenterer().fit(K)
    theirs = sk.KernelCenterer().fit(K)
    np.testing.assert_allclose(ours.K_fit_rows_, theirs.K_fit_rows_, rtol=1e-12)
    np.testing.assert_allclose(ours.K_fit_all_, theirs.K_fit_all_, rtol=1e-12)
    for M in (K, Kn):
        before = M.copy()
        np.testing.assert_allclose(ours.transform(M), theirs.transform(M), rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(M, before)
    np.testing.assert_allclose(ours.fit_transform(K), theirs.fit_transform(K), rtol=1e-12, atol=1e-15)


def test_kernel_centerer_errors_and_checks():
    pytest.importorskip("sklearn")
    from sklearn.utils.estimator_checks import check_estimator

    with pytest.raises(ValueError, match="square"):
        fastkpca.KernelCenterer().fit(np.ones((3, 4)))
    with pytest.raises(ValueError):
        fastkpca.KernelCenterer().fit(np.ones((4, 4))).transform(np.ones((2, 5)))
    check_estimator(fastkpca.KernelCenterer())


def test_out_of_sample_centering_does_not_depend_on_alignment(rng):
    """Regression: row sums once followed the buffer's alignment, so a repeated transform could differ."""
    pytest.importorskip("sklearn")
    K = fastkpca.gram(rng.standard_normal((50, 3)) + 100.0)
    centerer = fastkpca.KernelCenterer().fit(K)
    Kn = fastkpca.gram(rng.standard_normal((7, 3)) + 100.0, rng.standard_normal((50, 3)) + 100.0)
    results = []
    for offset in range(8):
        buffer = np.empty(Kn.size + 8)
        view = buffer[offset:offset + Kn.size].reshape(Kn.shape)
        view[...] = Kn
        results.append(centerer.transform(view, copy=False).copy())
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
