"""Adding an engine is one module: an engine written here, in this test file alone, and registered here,
serves KernelPCA (exact and Nyström), Nystroem, KernelRidge (cg and nystrom), SpectralEmbedding and
SpectralClustering (exact and Nyström) — fit, transform, predict and pickling — with the same results as in
process, and no edit anywhere else.

The engine keeps its samples "elsewhere" (it refuses to hand all of X to the estimator) and evaluates
every kernel entry with the NumPy reference (tests/reference.py), so nothing of the native kernel
operators is involved in its products.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import fastkpca
import reference as ref
from fastkpca import engines
from fastkpca.engines.local import LOCAL
from fastkpca.operators import StoragePlan, python_operator
from fastkpca.operators.samples import KernelViews


class RefArray:
    """Data of the reference engine: a NumPy array in a wrapper, so that engines.select sends it there."""

    def __init__(self, a):
        self.a = np.asarray(a)

    @property
    def shape(self):
        return self.a.shape


def _kernel(kernel, X, Y=None):
    return ref.kernel(X, Y, kernel.name, kernel.gamma, kernel.degree, kernel.coef0)


class ReferenceColumns:
    def __init__(self, X, kernel):
        self.X, self.kernel, self.n, self.dtype = X, kernel, X.shape[0], X.dtype

    def diagonal(self):
        return np.array([_kernel(self.kernel, x[None])[0, 0] for x in self.X])

    def columns(self, index, out):
        out[...] = _kernel(self.kernel, self.X, self.X[index])
        return out


class ReferenceProduct:
    """x ↦ correction(K(x, X)·V), the kernel from the NumPy reference."""

    def __init__(self, X, kernel, V, correction, out_dtype):
        self.X, self.kernel, self.V, self.correction, self.out_dtype = X, kernel, V, correction, out_dtype

    def __call__(self, Xn):
        out = _kernel(self.kernel, np.asarray(Xn, dtype=np.float64), self.X) @ self.V
        out = out if self.correction is None else self.correction(out)
        return out if self.out_dtype is None else out.astype(self.out_dtype)


class ReferenceSamples(KernelViews):
    CHUNK = 97  # rows per chunk of the streamed passes: not a divisor of anything
    holds_matrix = False  # as a cluster's samples: no n x n matrix in this process

    def __init__(self, engine, X):
        self.engine, self.X = engine, X
        self.shape, self.dtype = X.shape, X.dtype
        self.values_per_row = X.shape[1]

    def bind(self, kernel):
        if not kernel.native:
            raise ValueError(f"{kernel.label}: the reference engine evaluates native kernels only")
        return kernel

    def kernel_matrix(self, kernel, *, what, memory_limit, writable=False, hint="", dtype=None):
        raise ValueError(f"{what} needs X in this process; the reference engine keeps it to itself")

    def rows(self, index):
        return np.ascontiguousarray(self.X[index])

    def reduce(self, func, *args, row_args=(), rows=None):
        total = None
        for s in range(0, self.X.shape[0], self.CHUNK):
            pieces = [None if a is None else a[s:s + self.CHUNK] for a in row_args]
            part = func(self.X[s:s + self.CHUNK], *args, *pieces)
            total = part if total is None else tuple(None if a is None else a + b for a, b in zip(total, part))
        return total

    def map(self, func, *args, rows=None):
        return np.concatenate([func(self.X[s:s + self.CHUNK], *args) for s in range(0, self.X.shape[0], self.CHUNK)])

    def plan(self, kernel, *, block_size, memory_limit, other_bytes, storage="auto"):
        return StoragePlan("reference", 0, 0, 0, "the kernel from the NumPy reference")

    def kernel_operator(self, kernel, plan, n_jobs=None, *, zero_diagonal=False):
        K = _kernel(kernel, self.X)
        if zero_diagonal:
            np.fill_diagonal(K, 0.0)
        return python_operator(lambda V: K @ V, K.shape[0], storage="reference", trace=float(np.trace(K)),
                               row_sums=lambda: K.sum(axis=1), plan=plan, storage_dtype=self.dtype,
                               diagonal=lambda: np.diag(K))

    def columns(self, kernel):
        return ReferenceColumns(self.X, kernel)

    def cross_product(self, kernel, V, correction=None, *, promote=False, out_dtype=None, memory_limit=None):
        return ReferenceProduct(self.X, kernel, V, correction, out_dtype)

    def fitted(self):
        return RefArray(self.X)

    def info(self):
        return {"engine": "reference"}


class ReferenceEngine:
    name = "reference"

    def accepts(self, X):
        return isinstance(X, RefArray)

    def gather(self, a, name):
        return a.a if isinstance(a, RefArray) else a

    def fit_samples(self, estimator, X, y=None, *, targets=False, accept_sparse=False, copy=False):
        X = np.ascontiguousarray(X.a, dtype=np.float64)
        estimator.n_features_in_ = X.shape[1]
        return ReferenceSamples(self, X), (np.asarray(self.gather(y, "y"), dtype=np.float64) if targets else None)

    def new_samples(self, estimator, X, *, accept_sparse=False):
        assert X.a.shape[1] == estimator.n_features_in_
        return X

    def apply(self, rowmap, X):
        return RefArray(rowmap(X.a))

    def wrap(self, Z, X):
        return RefArray(Z)

    def localise(self, state):
        return {key: LOCAL if value is self else (value.a if isinstance(value, RefArray) else value)
                for key, value in state.items()}


@pytest.fixture
def reference_engine():
    engine = ReferenceEngine()
    engines.register(engine)
    yield engine
    engines.unregister(engine)


def data(n=400, d=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)) * np.array([2.0, 1.5, 1.0, 0.7, 0.4])[:d]


def same_up_to_sign(A, B):
    return np.abs(A * np.sign(np.sum(A * B, axis=0)) - B).max() / np.abs(B).max()


def test_kernel_pca_exact_and_nystrom(reference_engine):
    X, X_new = data(), data(60, seed=1)
    for params in ({"eigen_solver": "lanczos"}, {"eigen_solver": fastkpca.Nystrom(n_landmarks=80, landmarks="uniform")},
                   {"eigen_solver": fastkpca.Nystrom(n_landmarks=80, landmarks="rpcholesky")}):
        ours = fastkpca.KernelPCA(4, kernel="rbf", gamma=0.2, random_state=0, **params)
        local = fastkpca.KernelPCA(4, kernel="rbf", gamma=0.2, random_state=0, **params).fit(X)
        scores = ours.fit_transform(RefArray(X))
        assert isinstance(scores, RefArray) and ours._engine is reference_engine
        assert "reference" in (ours.solver_info_.get("storage"), ours.solver_info_.get("engine"))
        np.testing.assert_allclose(ours.eigenvalues_, local.eigenvalues_, rtol=1e-8)
        assert same_up_to_sign(scores.a, local.transform(X)) < 1e-7
        projected = ours.transform(RefArray(X_new))
        assert isinstance(projected, RefArray) and same_up_to_sign(projected.a, local.transform(X_new)) < 1e-7
        # pickled, the model lives in this process: NumPy in, NumPy out, the same numbers
        restored = pickle.loads(pickle.dumps(ours))
        np.testing.assert_allclose(restored.transform(X_new), projected.a, rtol=0, atol=1e-12)


def test_exact_fit_needs_no_local_x_but_dense_solvers_say_so(reference_engine):
    with pytest.raises(ValueError, match="eigen_solver='dense' needs X in this process"):
        fastkpca.KernelPCA(4, kernel="rbf", eigen_solver="dense").fit(RefArray(data()))
    with pytest.raises(ValueError, match="kernel='precomputed': the reference engine evaluates native kernels only"):
        fastkpca.KernelPCA(4, kernel="precomputed").fit(RefArray(data()))


@pytest.mark.parametrize("landmarks", ["uniform", "rpcholesky"])
def test_nystroem(reference_engine, landmarks):
    X, X_new = data(), data(50, seed=2)
    ours = fastkpca.Nystroem(kernel="rbf", gamma=0.2, n_components=60, landmarks=landmarks, random_state=0)
    local = fastkpca.Nystroem(kernel="rbf", gamma=0.2, n_components=60, landmarks=landmarks, random_state=0).fit(X)
    ours.fit(RefArray(X))
    np.testing.assert_array_equal(ours.component_indices_, local.component_indices_)
    np.testing.assert_allclose(ours.transform(RefArray(X_new)).a, local.transform(X_new), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("solver", ["cg", "nystrom"])
def test_kernel_ridge(reference_engine, solver):
    X, X_new = data(), data(70, seed=3)
    y = np.sin(X[:, 0]) + 0.1 * X[:, 1]
    w = np.random.default_rng(4).uniform(0.5, 2.0, X.shape[0])
    params = dict(alpha=0.1, kernel="rbf", gamma=0.2,
                  solver=fastkpca.CG(random_state=0, tol=1e-12) if solver == "cg"
                  else fastkpca.Nystrom(n_landmarks=100, landmarks="uniform", random_state=0))
    ours = fastkpca.KernelRidge(**params).fit(RefArray(X), RefArray(y), sample_weight=w)
    local = fastkpca.KernelRidge(**params).fit(X, y, sample_weight=w)
    expected = local.predict(X_new)
    got = ours.predict(RefArray(X_new))
    assert isinstance(got, RefArray) and got.a.shape == (70,)
    np.testing.assert_allclose(got.a, expected, rtol=0, atol=1e-8 * np.abs(expected).max())
    restored = pickle.loads(pickle.dumps(ours))
    np.testing.assert_allclose(restored.predict(X_new), expected, rtol=0, atol=1e-8 * np.abs(expected).max())


@pytest.mark.parametrize("solver", ["lanczos", "nystrom"])
def test_spectral_embedding_and_clustering(reference_engine, solver):
    rng = np.random.default_rng(5)
    centres = rng.standard_normal((3, 5)) * 6
    X = np.concatenate([c + rng.standard_normal((130, 5)) for c in centres])
    params = dict(affinity="rbf", gamma=0.1, random_state=0,
                  eigen_solver=fastkpca.Nystrom(n_landmarks=120,
                                                landmarks="uniform") if solver == "nystrom" else solver)
    ours = fastkpca.SpectralEmbedding(3, **params)
    local = fastkpca.SpectralEmbedding(3, **params).fit(X)
    embedding = ours.fit_transform(RefArray(X))
    assert isinstance(embedding, RefArray) and ours._engine is reference_engine
    assert same_up_to_sign(embedding.a, local.embedding_) < 1e-6
    clusters = fastkpca.SpectralClustering(3, **params).fit(RefArray(X))
    expected = fastkpca.SpectralClustering(3, **params).fit(X)
    assert clusters._engine is reference_engine
    np.testing.assert_array_equal(clusters.labels_, expected.labels_)
    assert same_up_to_sign(clusters.embedding_, expected.embedding_) < 1e-6
    assert pickle.loads(pickle.dumps(clusters)).labels_.shape == (390,)
