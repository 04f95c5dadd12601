"""Adding a kernel kind is one class and one registration: a kernel written here, in this test file alone (a
rational quadratic kernel evaluated by a NumPy function, with its own hyperparameter), registered here,
serves KernelPCA, KernelRidge and SpectralEmbedding — fit, transform, predict, pickling, every storage —
with no edit anywhere else. Its results are those of the same estimators on its precomputed matrix.

Also: the kinds fastkpca ships (a scikit-learn kernel object, a callable, one of scikit-learn's metrics)
behave as that same object."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import fastkpca
from fastkpca import kernels


class RationalQuadratic:
    """What the user writes as the estimator's ``kernel``: a specification with its hyperparameter."""

    def __init__(self, length_scale=1.0, alpha=2.0):
        self.length_scale, self.alpha = length_scale, alpha


def rational_quadratic(X, Y, length_scale, alpha):
    d2 = (X**2).sum(1)[:, None] + (Y**2).sum(1)[None, :] - 2 * X @ Y.T
    return (1 + np.maximum(d2, 0) / (2 * alpha * length_scale**2)) ** -alpha


class RationalQuadraticKernel(kernels.Kernel):
    """The kind: its cross blocks from NumPy, its length scale a hyperparameter in log space."""

    def __init__(self, length_scale, alpha, threads=0):
        super().__init__(threads)
        self.length_scale, self.alpha = length_scale, alpha

    @property
    def label(self):
        return f"kernel=RationalQuadratic({self.length_scale}, {self.alpha})"

    def cross(self, X, Y=None, out=None):
        return self._into(rational_quadratic(X, X if Y is None else Y, self.length_scale, self.alpha), out)

    @property
    def hyperparameters(self):
        return ("length_scale",)

    @property
    def theta(self):
        return np.log([self.length_scale])

    @property
    def bounds(self):
        return np.log([[1e-3, 1e3]])

    def with_theta(self, theta):
        return RationalQuadraticKernel(float(np.exp(theta[0])), self.alpha, self.threads)


def accepts(spec):
    return isinstance(spec, RationalQuadratic)


def make(spec, **parameters):
    return RationalQuadraticKernel(spec.length_scale, spec.alpha)


@pytest.fixture
def registered():
    kernels.register(accepts, make)
    yield
    kernels.unregister(accepts)


def data(n=300, d=4, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


def same_up_to_sign(A, B):
    return np.abs(A * np.sign(np.sum(A * B, axis=0)) - B).max() / np.abs(B).max()


@pytest.mark.parametrize("memory_limit", [None, "66MB"])  # its matrix; its row blocks recomputed on every pass
def test_kernel_pca(registered, memory_limit):
    X, new = data(), data(40, seed=1)
    spec = RationalQuadratic(1.5)
    model = fastkpca.KernelPCA(4, kernel=spec, random_state=0, eigen_solver="lanczos", tol=1e-12,
                               memory_limit=memory_limit).fit(X)
    assert model.solver_info_["storage"] == ("full" if memory_limit is None else "matrix_free")
    K = rational_quadratic(X, X, 1.5, 2.0)
    K = (K + K.T) / 2
    pre = fastkpca.KernelPCA(4, kernel="precomputed", random_state=0, eigen_solver="lanczos", tol=1e-12).fit(K)
    np.testing.assert_allclose(model.eigenvalues_, pre.eigenvalues_, rtol=1e-10)
    expected = pre.transform(rational_quadratic(new, X, 1.5, 2.0))
    assert same_up_to_sign(model.transform(new), expected) < 1e-9
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_allclose(restored.transform(new), model.transform(new), rtol=0, atol=1e-14)
    # the pre-image map is a kernel ridge regression with the same kernel on the scores
    inverse = fastkpca.KernelPCA(4, kernel=spec, fit_inverse_transform=True, alpha=0.1, random_state=0).fit(X)
    assert inverse.inverse_transform(inverse.transform(new)).shape == new.shape


@pytest.mark.parametrize("solver", ["cholesky", "cg", "nystrom"])
def test_kernel_ridge(registered, solver):
    X, new = data(), data(40, seed=2)
    y = np.sin(X[:, 0]) + X[:, 1] ** 2
    solvers = {"cholesky": "cholesky", "cg": fastkpca.CG(tol=1e-12, random_state=0),
               # all the samples: the exact solution
               "nystrom": fastkpca.Nystrom(n_landmarks=300, landmarks="uniform", random_state=0)}
    model = fastkpca.KernelRidge(kernel=RationalQuadratic(0.8), alpha=0.05, solver=solvers[solver]).fit(X, y)
    K = rational_quadratic(X, X, 0.8, 2.0)
    beta = np.linalg.solve(K + 0.05 * np.eye(300), y)
    expected = rational_quadratic(new, X, 0.8, 2.0) @ beta
    np.testing.assert_allclose(model.predict(new), expected, rtol=0, atol=1e-7 * np.abs(expected).max())
    assert fastkpca.KernelRidge(kernel=RationalQuadratic(0.8)).get_params()["kernel"].length_scale == 0.8


def test_spectral_embedding(registered):
    rng = np.random.default_rng(3)
    X = np.concatenate([c + rng.standard_normal((100, 3)) * 0.5 for c in ([0, 0, 0], [6, 0, 0], [0, 6, 0])])
    spec = RationalQuadratic(1.0, alpha=1.0)
    ours = fastkpca.SpectralEmbedding(2, affinity=spec, random_state=0).fit(X)
    pre = fastkpca.SpectralEmbedding(2, affinity="precomputed", random_state=0).fit(
        rational_quadratic(X, X, 1.0, 1.0))
    assert same_up_to_sign(ours.embedding_, pre.embedding_) < 1e-6
    np.testing.assert_allclose(ours.affinity_matrix_, rational_quadratic(X, X, 1.0, 1.0), rtol=0, atol=1e-15)
    labels = fastkpca.SpectralClustering(3, affinity=spec, random_state=0).fit(X).labels_
    assert [len(set(labels[i:i + 100])) for i in (0, 100, 200)] == [1, 1, 1] and len(set(labels)) == 3


def test_a_kind_is_asked_before_the_built_in_ones(registered):
    kernel = kernels.make(RationalQuadratic(2.0), n_features=3)
    assert isinstance(kernel, RationalQuadraticKernel)
    np.testing.assert_allclose(kernel.with_theta(np.log([4.0])).length_scale, 4.0)
    kernels.unregister(accepts)
    with pytest.raises(TypeError, match="kernel must be"):
        kernels.make(RationalQuadratic(2.0), n_features=3)
    with pytest.raises(TypeError, match="kernel must be one of"):
        fastkpca.KernelPCA(2, kernel=RationalQuadratic()).fit(data())
    kernels.register(accepts, make)


def test_scikit_learn_kernel_objects_are_evaluated_vectorised():
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    X, new = data(), data(30, seed=4)
    k = ConstantKernel(2.0) * RBF(length_scale=[1.0, 2.0, 0.5, 1.5]) + WhiteKernel(0.1)
    model = fastkpca.KernelPCA(3, kernel=k, random_state=0, eigen_solver="lanczos", tol=1e-12).fit(X)
    pre = fastkpca.KernelPCA(3, kernel="precomputed", random_state=0, eigen_solver="lanczos", tol=1e-12).fit(k(X))
    np.testing.assert_allclose(model.eigenvalues_, pre.eigenvalues_, rtol=1e-10)
    assert same_up_to_sign(model.transform(new), pre.transform(k(new, X))) < 1e-9
    kernel = kernels.make(k, n_features=4)
    assert kernel.hyperparameters == ("k1__k1__constant_value", "k1__k2__length_scale[0]", "k1__k2__length_scale[1]",
                                      "k1__k2__length_scale[2]", "k1__k2__length_scale[3]", "k2__noise_level")
    np.testing.assert_array_equal(kernel.theta, k.theta)
    np.testing.assert_array_equal(kernel.bounds, k.bounds)
    np.testing.assert_allclose(kernel.with_theta(k.theta + 1).theta, k.theta + 1)
    ridge = fastkpca.KernelRidge(alpha=0.1, kernel=k).fit(X, X[:, 0])
    from sklearn.kernel_ridge import KernelRidge as SkKernelRidge

    expected = SkKernelRidge(alpha=0.1, kernel="precomputed").fit(k(X), X[:, 0]).predict(k(new, X))
    np.testing.assert_allclose(ridge.predict(new), expected, rtol=0, atol=1e-10)


def test_native_kernels_carry_gamma_as_their_hyperparameter():
    rbf = kernels.make("rbf", gamma=None, n_features=8)
    assert rbf.hyperparameters == ("gamma",) and rbf.gamma == pytest.approx(1 / 8)
    assert rbf.with_theta(np.log([2.0])).gamma == pytest.approx(2.0)
    assert kernels.make("linear", n_features=3).hyperparameters == ()
    with pytest.raises(ValueError, match="has 1 hyperparameter"):
        rbf.with_theta([1.0, 2.0])
    assert kernels.make(rbf, n_features=99) is rbf  # a kernel object of fastkpca's own is used as it is


def test_a_gaussian_process_refuses_a_kind_without_gradients_by_name():
    """A kind registered for scikit-learn kernel objects that is a plain Kernel (no hyperparameters or gradient
    traces: kernels.DifferentiableKernel) is refused by the Gaussian processes with a TypeError naming what they
    need, not an AttributeError from inside a solver."""
    from sklearn.gaussian_process.kernels import RBF

    class PlainRBF(RBF):
        pass

    class PlainKind(kernels.Kernel):
        def __init__(self, spec, threads=0):
            super().__init__(threads)
            self.spec = spec

        def cross(self, X, Y=None, out=None):
            return self._into(self.spec(X) if Y is None else self.spec(X, Y), out)

    def plain(spec):
        return isinstance(spec, PlainRBF)

    kernels.register(plain, lambda spec, **parameters: PlainKind(spec))
    try:
        X, y = data(60), np.arange(60) % 2
        for model in (fastkpca.GaussianProcessRegressor(PlainRBF()), fastkpca.GaussianProcessClassifier(PlainRBF())):
            with pytest.raises(TypeError, match="DifferentiableKernel.*PlainKind"):
                model.fit(X, y.astype(float) if isinstance(model, fastkpca.GaussianProcessRegressor) else y)
        fastkpca.KernelPCA(2, kernel=PlainRBF()).fit(X)  # any other estimator takes the kind
    finally:
        kernels.unregister(plain)
