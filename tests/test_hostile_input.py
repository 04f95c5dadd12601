"""Input audit: every public entry point against hostile input. Each case gives the correct result or a
clear exception; user arrays are never modified unless in-place work was asked for; nothing crashes."""

from __future__ import annotations

import numpy as np
import pytest

import fastkpca
import reference as ref

sklearn = pytest.importorskip("sklearn")
pd = pytest.importorskip("pandas")
sparse = pytest.importorskip("scipy.sparse")

RNG = np.random.default_rng(2024)
DATA = RNG.standard_normal((12, 3))
GRAM = ref.kernel(DATA, None, "rbf", 0.5)
DIST = np.sqrt(ref.sq_distances(DATA, DATA))

# name -> (function of one input, kind of input, the argument's name in messages)
ENTRY_POINTS = {
    "gram": (lambda x: fastkpca.gram(x, kernel="rbf", gamma=0.5), "data", "X"),
    "pairwise_kernels": (lambda x: fastkpca.pairwise_kernels(x, metric="laplacian", gamma=0.5), "data", "X"),
    "double_center(copy)": (lambda k: fastkpca.double_center(k, copy=True), "square", "K"),
    "double_center_distances(copy)": (lambda d: fastkpca.double_center_distances(d, copy=True), "square", "D"),
    "KernelCenterer": (lambda k: fastkpca.KernelCenterer().fit_transform(k), "square", None),
    "eigsh": (lambda a: fastkpca.eigsh(a, 2, random_state=0)[0], "square", "A"),
    "KernelPCA": (lambda x: np.abs(fastkpca.KernelPCA(2, kernel="rbf", gamma=0.5, random_state=0).fit_transform(x)),
                  "data", None),
    "KernelPCA(precomputed)": (lambda k: fastkpca.KernelPCA(2, kernel="precomputed").fit(k).eigenvalues_,
                               "square", None),
    "classical_mds": (lambda d: np.abs(fastkpca.classical_mds(d, 2, random_state=0)), "distance", "D"),
    "ClassicalMDS": (lambda x: np.abs(fastkpca.ClassicalMDS(2, random_state=0).fit_transform(x)), "data", None),
}


def base(kind):
    return {"data": DATA, "square": GRAM, "distance": DIST}[kind].copy()


def with_value(kind, value):
    x = base(kind)
    x[1, 2] = value
    if kind != "data":
        x[2, 1] = value
    return x


# case -> (make input from kind, "ok" (same result as clean float64 input) or the exception types allowed)
CASES = {
    "nan": (lambda k: with_value(k, np.nan), (ValueError,)),
    "inf": (lambda k: with_value(k, np.inf), (ValueError,)),
    "empty": (lambda k: np.empty((0, 0)) if k != "data" else np.empty((0, 3)), (ValueError,)),
    "zero_features": (lambda k: np.empty((5, 0)), (ValueError,)),
    "one_dimensional": (lambda k: base(k)[0], (ValueError,)),
    "three_dimensional": (lambda k: base(k)[None], (ValueError,)),
    "complex": (lambda k: base(k).astype(complex), (TypeError, ValueError)),
    "strings": (lambda k: base(k).astype(str).astype(object) if k == "never" else np.full(base(k).shape, "a"),
                (TypeError, ValueError)),
    "object_numbers": (lambda k: base(k).astype(object), "ok"),
    "int": (lambda k: np.round(base(k) * 10).astype(np.int64), "ok-int"),
    "bool": (lambda k: base(k) > 0, "ok-bool"),
    "float16": (lambda k: base(k).astype(np.float16), "ok-f16"),
    "read_only": (lambda k: _read_only(base(k)), "ok"),
    "non_contiguous": (lambda k: np.repeat(base(k), 2, axis=0)[::2], "ok"),
    "fortran": (lambda k: np.asfortranarray(base(k)), "ok"),
    "list": (lambda k: base(k).tolist(), "ok"),
    "dataframe": (lambda k: pd.DataFrame(base(k), columns=[f"c{i}" for i in range(base(k).shape[1])]), "ok"),
    "sparse": (lambda k: sparse.csr_matrix(base(k)), "ok-or-typeerror"),
}


def _read_only(x):
    x.setflags(write=False)
    return x


def _snapshot(x):
    if sparse.issparse(x):
        return x.toarray().copy()
    if isinstance(x, pd.DataFrame):
        return x.to_numpy().copy()
    return np.array(x, dtype=object if isinstance(x, list) else None, copy=True)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
# Dissimilarities of the audit that lose precision (int, float16) are no longer Euclidean: classical
# scaling rightly warns about it.
@pytest.mark.filterwarnings("ignore::fastkpca.exceptions.NonEuclideanWarning")
def test_entry_point(entry, case):
    func, kind, arg = ENTRY_POINTS[entry]
    make, expect = CASES[case]
    x = make(kind)
    if case == "zero_features" and kind != "data":
        x = np.empty((0, 0))
    before = _snapshot(x)
    if isinstance(expect, tuple):
        with pytest.raises(expect) as info:
            func(x)
        if arg is not None and case not in ("empty", "zero_features"):
            assert arg in str(info.value), f"{entry}/{case}: message does not name {arg}: {info.value}"
    else:
        try:
            got = func(x)
        except TypeError as exc:  # sparse input where no sparse support exists must be a clear TypeError
            assert expect == "ok-or-typeerror", f"{entry}/{case}: {exc!r}"
            got = None
        if got is not None:
            clean = np.asarray(_snapshot(x), dtype=np.float64)
            want = func(np.ascontiguousarray(clean))
            tol = 2e-3 if case == "float16" else 1e-10
            np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=tol, atol=tol)
    after = _snapshot(x)
    np.testing.assert_array_equal(after, before, err_msg=f"{entry} modified its input ({case})")


@pytest.mark.parametrize("entry", ["gram", "KernelPCA", "ClassicalMDS"])
def test_single_sample(entry):
    func, _, _ = ENTRY_POINTS[entry]
    x = DATA[:1]
    try:
        out = func(x)
    except ValueError as exc:
        assert "sample" in str(exc) or "n_components" in str(exc), exc
    else:
        assert np.all(np.isfinite(out))


def test_eigsh_k_rules():
    for k in (0, -3, 13):
        with pytest.raises(ValueError, match="k must be"):
            fastkpca.eigsh(GRAM, k)
    for k in (1.0, 2.5, "2"):
        with pytest.raises(TypeError, match="k must be an integer"):
            fastkpca.eigsh(GRAM, k)
    vals, _ = fastkpca.eigsh(GRAM, 12)  # k = N
    np.testing.assert_allclose(vals, np.linalg.eigvalsh(GRAM)[::-1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n_jobs, error", [(0, ValueError), (1.5, TypeError), ("2", TypeError), (True, TypeError)])
def test_bad_n_jobs_everywhere(n_jobs, error):
    """One exception type per kind of mistake: TypeError for a wrong type, ValueError for a wrong value."""
    for call in (lambda: fastkpca.gram(DATA, n_jobs=n_jobs),
                 lambda: fastkpca.double_center(GRAM.copy(), n_jobs=n_jobs),
                 lambda: fastkpca.eigsh(GRAM, 2, n_jobs=n_jobs),
                 lambda: fastkpca.kernel_operator(DATA, n_jobs=n_jobs),
                 lambda: fastkpca.KernelPCA(2, n_jobs=n_jobs).fit(DATA)):
        with pytest.raises(error, match="n_jobs"):
            call()


@pytest.mark.parametrize("gamma", [np.nan, -1.0, np.inf, "big"])
def test_bad_gamma_everywhere(gamma):
    for call in (lambda: fastkpca.gram(DATA, kernel="rbf", gamma=gamma),
                 lambda: fastkpca.KernelPCA(2, kernel="rbf", gamma=gamma).fit(DATA)):
        with pytest.raises((ValueError, TypeError), match="gamma"):
            call()


def test_mismatched_shapes():
    with pytest.raises(ValueError, match="features"):
        fastkpca.gram(DATA, DATA[:, :2])
    kp = fastkpca.KernelPCA(2, kernel="rbf").fit(DATA)
    with pytest.raises(ValueError, match="features"):
        kp.transform(DATA[:, :2])
    centerer = fastkpca.KernelCenterer().fit(GRAM)
    with pytest.raises(ValueError):
        centerer.transform(GRAM[:, :5])
