"""fastkpca.KernelPCA: scikit-learn's own test module and estimator checks, equality with scikit-learn,
memory, explained variance, and the scikit-learn machinery (pipelines, grid search, clone, pickle)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")
from sklearn import decomposition as skd  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

import fastkpca  # noqa: E402
from fastkpca import KernelPCA  # noqa: E402
import reference as ref  # noqa: E402

TESTS = Path(__file__).parent


def test_sklearn_test_module_passes_with_fastkpca():
    """sklearn/decomposition/tests/test_kernel_pca.py from the installed wheel, KernelPCA swapped."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "sklearn_swap", "-p", "no:cacheprovider",
         "--pyargs", "sklearn.decomposition.tests.test_kernel_pca"],
        capture_output=True, text=True, env=env, cwd=TESTS.parent,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert " passed" in out.stdout and "failed" not in out.stdout


@pytest.mark.parametrize("estimator", [KernelPCA(), KernelPCA(n_components=2, kernel="rbf", eigen_solver="lanczos")],
                         ids=["default", "lanczos"])
def test_check_estimator(estimator):
    from sklearn.utils.estimator_checks import check_estimator

    check_estimator(estimator)


def _align_signs(a, b):
    """Flip columns of a to match b (solvers agree on the subspace; ties may flip svd_flip's sign)."""
    signs = np.sign(np.sum(a * b, axis=0))
    signs[signs == 0] = 1
    return a * signs


@pytest.mark.parametrize("kernel", ["rbf", "poly", "linear", "sigmoid", "cosine"])
@pytest.mark.parametrize("solver", ["auto", "lanczos"])
def test_same_answers_as_sklearn(kernel, solver, rng):
    X = rng.standard_normal((400, 6))
    X_new = rng.standard_normal((30, 6))
    params = dict(n_components=5, kernel=kernel, gamma=0.1, degree=2, coef0=0.5)
    ours = KernelPCA(eigen_solver=solver, random_state=0, **params)
    theirs = skd.KernelPCA(eigen_solver="dense", **params)
    Z = ours.fit_transform(X)
    Z_ref = theirs.fit_transform(X)
    assert ours.solver_info_["solver"] == "lanczos"
    np.testing.assert_allclose(ours.eigenvalues_, theirs.eigenvalues_, rtol=1e-6)
    scale = np.abs(Z_ref).max()
    np.testing.assert_allclose(_align_signs(Z, Z_ref), Z_ref, rtol=0, atol=1e-6 * scale)
    T, T_ref = ours.transform(X_new), theirs.transform(X_new)
    np.testing.assert_allclose(_align_signs(T, T_ref), T_ref, rtol=0, atol=1e-6 * scale)
    # The training scores come back through transform.
    np.testing.assert_allclose(ours.transform(X), Z, rtol=0, atol=1e-8 * scale)


def test_laplacian_and_float32(rng):
    X = rng.standard_normal((300, 4))
    kp = KernelPCA(4, kernel="laplacian", gamma=0.3, random_state=0, eigen_solver="lanczos").fit(X)
    exact = np.linalg.eigvalsh(ref.double_center(ref.kernel(X, None, "laplacian", 0.3)))[::-1][:4]
    np.testing.assert_allclose(kp.eigenvalues_, exact, rtol=1e-9)
    kp32 = KernelPCA(4, kernel="laplacian", gamma=0.3, random_state=0, eigen_solver="lanczos").fit(
        X.astype(np.float32))
    assert kp32.eigenvalues_.dtype == np.float32
    assert kp32.fit_transform(X.astype(np.float32)).dtype == np.float32
    np.testing.assert_allclose(kp32.eigenvalues_, exact, rtol=1e-4)


def test_zero_eigenvalues_like_sklearn(rng):
    X = rng.standard_normal((250, 3))  # linear kernel: rank 3
    for kwargs in ({}, {"n_components": 6}, {"n_components": 6, "remove_zero_eig": True}):
        ours = KernelPCA(**kwargs).fit(X)
        theirs = skd.KernelPCA(**kwargs).fit(X)
        assert ours.eigenvalues_.shape == theirs.eigenvalues_.shape
        np.testing.assert_allclose(ours.eigenvalues_, theirs.eigenvalues_, rtol=1e-6, atol=1e-9)
        assert ours.transform(X).shape == theirs.transform(X).shape
    ours = KernelPCA(6, eigen_solver="lanczos").fit(X)
    assert np.count_nonzero(ours.eigenvalues_) == 3
    assert np.all(ours.transform(X)[:, 3:] == 0)


def test_auto_never_dense_for_few_components(rng):
    X = rng.standard_normal((900, 5))
    for k in (1, 10, 50):
        assert KernelPCA(k, kernel="rbf").fit(X).solver_info_["solver"] == "lanczos"
    assert KernelPCA(kernel="rbf").fit(X[:150]).solver_info_["solver"] == "dense"


def test_explained_variance(rng):
    X = rng.standard_normal((300, 4))
    kp = KernelPCA(kernel="rbf", gamma=0.2).fit(X)  # all components
    Kc = ref.double_center(ref.kernel(X, None, "rbf", 0.2))
    np.testing.assert_allclose(kp.explained_variance_, kp.eigenvalues_ / 300)
    np.testing.assert_allclose(kp.explained_variance_ratio_, kp.eigenvalues_ / np.trace(Kc), rtol=1e-10)
    np.testing.assert_allclose(kp.explained_variance_ratio_.sum(), 1.0, rtol=1e-8)
    kp5 = KernelPCA(5, kernel="rbf", gamma=0.2, eigen_solver="lanczos").fit(X)
    np.testing.assert_allclose(kp5.explained_variance_ratio_, kp.explained_variance_ratio_[:5], rtol=1e-8)
    # Variance of the scores themselves: the k-th column of U Λ^½ has variance λ_k / N.
    np.testing.assert_allclose(kp5.fit_transform(X).var(axis=0), kp5.explained_variance_, rtol=1e-8)


def test_inverse_transform_like_sklearn(rng):
    X = rng.standard_normal((120, 3))
    ours = KernelPCA(3, kernel="rbf", fit_inverse_transform=True, alpha=0.1).fit(X)
    theirs = skd.KernelPCA(3, kernel="rbf", fit_inverse_transform=True, alpha=0.1).fit(X)
    Z = theirs.transform(X)
    np.testing.assert_allclose(ours.inverse_transform(_align_signs(ours.transform(X), Z)),
                               theirs.inverse_transform(Z), rtol=1e-6, atol=1e-8)


def test_pipeline_gridsearch_clone_pickle(rng):
    X = rng.standard_normal((160, 4))
    y = (np.linalg.norm(X, axis=1) > 2).astype(int)
    pipe = Pipeline([("kpca", KernelPCA(n_components=3, kernel="rbf")), ("clf", LogisticRegression())])
    grid = GridSearchCV(pipe, {"kpca__gamma": [0.1, 1.0]}, cv=3).fit(X, y)
    assert grid.best_params_["kpca__gamma"] in (0.1, 1.0)
    kp = KernelPCA(n_components=3, kernel="rbf", gamma=0.5, random_state=0).fit(X)
    twin = clone(kp)
    assert twin.get_params() == kp.get_params() and not hasattr(twin, "eigenvalues_")
    back = pickle.loads(pickle.dumps(kp))
    np.testing.assert_array_equal(back.transform(X), kp.transform(X))


def test_progress_reporting(rng, capsys):
    X = rng.standard_normal((600, 5))
    seen = []
    KernelPCA(5, kernel="rbf", eigen_solver="lanczos", callback=lambda stage, info: seen.append(stage)).fit(X)
    assert seen[0] == "kernel" and seen[1] == "center" and "pass" in seen and seen[-1] == "done"
    KernelPCA(5, kernel="rbf", verbose=1).fit(X)
    err = capsys.readouterr().err
    assert "[KernelPCA] kernel" in err and "[KernelPCA] done" in err
    KernelPCA(5, kernel="rbf").fit(X)
    assert capsys.readouterr().err == ""


def test_does_not_modify_input(rng):
    X = rng.standard_normal((300, 4))
    K = ref.kernel(X, None, "rbf", 0.3)
    before = K.copy()
    for solver in ("lanczos", "dense", "arpack"):
        KernelPCA(3, kernel="precomputed", eigen_solver=solver, copy_X=False).fit(K)
        np.testing.assert_array_equal(K, before)


def test_bad_parameters(rng):
    X = rng.standard_normal((20, 3))
    for bad, match in [({"kernel": "gauss"}, "kernel"), ({"eigen_solver": "qr"}, "eigen_solver"),
                       ({"n_components": 0}, "n_components"), ({"gamma": -1.0}, "gamma"),
                       ({"n_jobs": 0}, "n_jobs")]:
        with pytest.raises(ValueError, match=match):
            KernelPCA(**bad).fit(X)
    K = ref.kernel(X, None, "rbf", 0.3)
    K[0, 1] += 1.0
    with pytest.raises(ValueError, match="symmetric"):
        KernelPCA(2, kernel="precomputed", eigen_solver="lanczos").fit(K)


def _peak_growth(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return float(out.stdout)


@pytest.mark.parametrize("dtype, bound", [("float64", 1.1), ("float32", 0.55)])
def test_fit_peak_memory(dtype, bound):
    """Peak RSS growth of fit <= bound × N²·8 bytes + a small O(N·(d + k)) allowance."""
    n, d, k = 3000, 16, 10
    growth = _peak_growth(
        f"""
        import resource, numpy as np
        from fastkpca import KernelPCA
        X = np.random.default_rng(0).standard_normal(({n}, {d})).astype("{dtype}")
        KernelPCA(2, kernel="rbf").fit(X[:300])
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        KernelPCA({k}, kernel="rbf", random_state=0).fit(X)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(after - before)
        """
    )
    allowance = 40 * 2**20
    assert growth <= bound * n * n * 8 + allowance, f"fit grew peak RSS by {growth / (n * n * 8):.2f} × N²·8"
