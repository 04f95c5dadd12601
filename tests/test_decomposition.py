"""fastkpca.KernelPCA: scikit-learn's estimator checks (its own test module: test_sklearn_suites.py), equality
with scikit-learn, memory, explained variance, and the scikit-learn machinery (pipelines, grid search, clone,
pickle)."""

from __future__ import annotations

import io
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")
from sklearn import decomposition as skd  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from fastkpca import KernelPCA, Nystrom, progress  # noqa: E402
import reference as ref  # noqa: E402


@pytest.mark.parametrize(("estimator", "storage"), [
    (KernelPCA(), "auto"),
    (KernelPCA(n_components=2, kernel="rbf", eigen_solver="lanczos"), "auto"),
    # (the default estimator's fits are dense at these sizes: no kernel storage to force)
    (KernelPCA(n_components=2, kernel="rbf", eigen_solver="lanczos"), "matrix_free"),
], ids=["default-auto", "lanczos-auto", "lanczos-matrix_free"])
def test_check_estimator(estimator, storage):
    from sklearn.utils.estimator_checks import check_estimator

    from sklearn_swap import force_storage

    undo = force_storage(storage) if storage != "auto" else (lambda: None)
    try:
        check_estimator(estimator)
    finally:
        undo()


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
    assert ours.solver_info_["solver"] == ours.solver_info_["choice"]["picked"]  # "auto": the cost model's pick
    assert solver == "auto" or ours.solver_info_["solver"] == solver
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
    with progress(verbose=0, callback=lambda stage, info: seen.append(stage)):
        KernelPCA(5, kernel="rbf", eigen_solver="lanczos").fit(X)
    assert seen[0] == "kernel" and seen[1] == "center" and "pass" in seen and seen[-1] == "done"
    with progress(verbose=1):
        KernelPCA(5, kernel="rbf").fit(X)
    err = capsys.readouterr().err
    assert "[KernelPCA] kernel" in err and "[KernelPCA] done" in err
    KernelPCA(5, kernel="rbf").fit(X)
    assert capsys.readouterr().err == ""


class _Terminal(io.StringIO):
    """stderr as a terminal would be: tqdm's bar is drawn only there (or in a notebook)."""

    def isatty(self):
        return True


def test_progress_bar_in_a_terminal(rng, monkeypatch):
    pytest.importorskip("tqdm")
    X = rng.standard_normal((2000, 5))
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress(verbose=1):
        kp = KernelPCA(5, kernel="rbf", gamma=0.5, eigen_solver="lanczos").fit(X)
    out = terminal.getvalue()
    passes = kp.solver_info_["n_passes"]
    # the bar ends full at the solver's pass count, between the stage lines; no per-pass lines at verbose=1
    assert f"{passes}/{passes} [" in out and "passes/s" in out and "residual=" in out
    assert out.index("[KernelPCA] center") < out.index("passes/s") < out.index("[KernelPCA] done")
    assert "[KernelPCA] pass:" not in out
    # not a terminal (a log file, CI): the stage lines only, no bar
    plain = io.StringIO()
    monkeypatch.setattr(sys, "stderr", plain)
    with progress(verbose=1):
        KernelPCA(5, kernel="rbf", gamma=0.5, eigen_solver="lanczos").fit(X)
    assert "[KernelPCA] done" in plain.getvalue() and "passes/s" not in plain.getvalue()


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
                       ({"n_jobs": 0}, "n_jobs"), ({"memory_limit": "4 parsecs"}, "memory_limit"),
                       ({"memory_limit": 0}, "memory_limit")]:
        with pytest.raises(ValueError, match=match):
            KernelPCA(**bad).fit(X)
    for bad, match in [({"kernel": 3}, "kernel"), ({"n_components": 2.0}, "n_components"),
                       ({"n_jobs": 1.5}, "n_jobs"), ({"memory_limit": [4]}, "memory_limit"),
                       ({"kernel_params": 3}, "kernel_params"), ({"callback": 3}, "callback")]:
        with pytest.raises(TypeError, match=match):
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


# ------------------------------------------------------------------------------- storage and memory limit


def _limit_for(X, k, kernel_bytes):
    """A memory_limit that leaves `kernel_bytes` for the kernel once the planner has set aside the
    solver, the working copies of X and its slack (operators.plan_storage)."""
    from fastkpca.operators import storage as operators
    from fastkpca.solvers.krylov import lanczos as linalg

    n, d = X.shape
    solver = linalg.solver_bytes(k, linalg.default_block_size(k, n, compute_bound=True), n)
    return int(kernel_bytes + solver + operators.fixed_bytes(n, d, X.itemsize))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_same_answers_in_every_storage_mode(dtype):
    from fastkpca import _native

    X = np.random.default_rng(0).standard_normal((1400, 6)).astype(dtype)
    packed_bytes = int(_native.core.packed_prefix_size(6)) * X.itemsize
    limits = {"packed": None, "cached": _limit_for(X, 6, packed_bytes // 2), "matrix_free": _limit_for(X, 6, 1000)}
    fits = {}
    for storage, limit in limits.items():
        model = KernelPCA(6, kernel="rbf", gamma=0.2, random_state=0, memory_limit=limit)
        scores = model.fit_transform(X)
        assert model.solver_info_["storage"] == storage, model.solver_info_["storage_reason"]
        assert model.solver_info_["kernel_bytes"] <= (limit or np.inf)
        fits[storage] = (model, scores)
    dense = KernelPCA(6, kernel="rbf", gamma=0.2, eigen_solver="dense").fit(X)
    ref_model, ref_scores = fits["packed"]
    rtol = 1e-10 if dtype == np.float64 else 1e-5
    for storage, (model, scores) in fits.items():
        # The same tiles in the same order: the same means bit for bit; the compute-bound modes solve with
        # a wider block (a different Krylov path), so their eigenpairs agree to the solver's tolerance.
        np.testing.assert_array_equal(model.K_fit_rows_, ref_model.K_fit_rows_, err_msg=storage)
        np.testing.assert_allclose(model.eigenvalues_, ref_model.eigenvalues_, rtol=rtol, err_msg=storage)
        np.testing.assert_allclose(np.abs(scores), np.abs(ref_scores), rtol=0,
                                   atol=1e-8 if dtype == np.float64 else 1e-4, err_msg=storage)
    np.testing.assert_array_equal(fits["cached"][1], fits["matrix_free"][1])  # same block: same path
    np.testing.assert_allclose(ref_model.eigenvalues_, dense.eigenvalues_, rtol=rtol)
    np.testing.assert_allclose(np.abs(ref_model.transform(X[:100])), np.abs(dense.transform(X[:100])),
                               rtol=rtol, atol=rtol * np.abs(ref_scores).max())
    np.testing.assert_allclose(ref_model.explained_variance_ratio_, dense.explained_variance_ratio_, rtol=rtol)


def test_solver_info_says_what_was_chosen_and_why(rng):
    X = rng.standard_normal((900, 4))
    passes = []
    with progress(verbose=0, callback=lambda stage, info: passes.append(info) if stage == "pass" else None):
        model = KernelPCA(4, kernel="rbf", random_state=0, memory_limit=_limit_for(X, 4, 0)).fit(X)
    info = model.solver_info_
    assert info["storage"] == "matrix_free" and "recompute" in info["storage_reason"]
    assert info["kernel_bytes"] < 900 * 4 * 8 * 3 and info["block_size"] == 24  # compute-bound: wider
    assert info["n_passes"] == len(passes) and info["seconds_per_pass"] > 0 and info["converged"]
    assert all(p["seconds_per_pass"] > 0 for p in passes)
    assert passes[-1]["eta_seconds"] is not None and passes[-1]["residual"] <= 1e-10
    wide = KernelPCA(40, kernel="rbf", random_state=0).fit(X)  # block 32 > 24: the full matrix passes faster
    assert wide.solver_info_["storage"] == "full"
    assert KernelPCA(4, kernel="rbf").fit(X).solver_info_["storage"] == "packed"


def test_chunked_transform_equals_one_shot(rng, monkeypatch):
    """A kernel evaluated in Python (a callable) gets its cross kernel built in chunks of bounded size; the
    chunks give what one piece gives."""
    from sklearn.metrics.pairwise import laplacian_kernel

    from fastkpca.kernels import kernel as kernel_module

    X = rng.standard_normal((30, 5))
    kernel = lambda a, b: laplacian_kernel(a[None], b[None], gamma=0.2)[0, 0]  # noqa: E731
    model = KernelPCA(5, kernel=kernel, random_state=0).fit(X)
    new = rng.standard_normal((26, 5))
    one_shot = model.transform(new)
    shapes = []
    fitted = model._transform_map.kernel
    original = fitted.cross

    def recording(A, B=None, out=None):
        shapes.append(np.shape(A))
        return original(A, B, out)

    monkeypatch.setattr(fitted, "cross", recording)
    monkeypatch.setattr(kernel_module, "CROSS_KERNEL_CHUNK_BYTES", 12 * 30 * 8)  # 12 rows a chunk
    chunked = model.transform(new)
    assert shapes == [(12, 5)] * 2 + [(2, 5)]
    np.testing.assert_allclose(chunked, one_shot, rtol=1e-13, atol=1e-15)


def test_native_transform_multiplies_the_cross_kernel_tile_by_tile(rng):
    """A native kernel's transform never builds the cross kernel (cross_product.hpp plus the centering
    applied to the product): it equals the explicitly centered cross kernel times the projection, which the
    same model fitted on the precomputed kernel computes."""
    X = rng.standard_normal((700, 5))
    new = rng.standard_normal((450, 5))
    for dtype in (np.float64, np.float32):
        native = KernelPCA(5, kernel="laplacian", gamma=0.3, random_state=0).fit(X.astype(dtype))
        K = ref.kernel(X, None, "laplacian", 0.3)
        pre = KernelPCA(5, kernel="precomputed", random_state=0).fit(K)
        expected = pre.transform(ref.kernel(new, X, "laplacian", 0.3))
        got = native.transform(new.astype(dtype))
        assert got.dtype == dtype
        tol = 1e-10 if dtype == np.float64 else 1e-4
        np.testing.assert_allclose(_align_signs(got, expected), expected, rtol=0, atol=tol * np.abs(expected).max())


def test_dense_solver_falls_back_when_lapack_returns_too_few_pairs(rng, monkeypatch):
    """LAPACK's subset-by-index driver can return no pairs for a highly repeated eigenvalue; the fit must
    then take the full decomposition, never end with fewer components than asked for."""
    from scipy import linalg as sla

    X = rng.standard_normal((150, 4))
    expected = KernelPCA(5, kernel="rbf", eigen_solver="dense").fit(X).eigenvalues_
    original = sla.eigh

    def short_subset(a, *args, **kwargs):
        if "subset_by_index" in kwargs:
            return np.empty(0), np.empty((a.shape[0], 0))
        return original(a, *args, **kwargs)

    monkeypatch.setattr(sla, "eigh", short_subset)
    model = KernelPCA(5, kernel="rbf", eigen_solver="dense").fit(X)
    assert model.eigenvalues_.shape == (5,)
    np.testing.assert_allclose(model.eigenvalues_, expected, rtol=1e-12)


def test_dense_solver_on_a_highly_repeated_eigenvalue():
    """The case itself: a centered kernel whose spectrum is one value repeated (points of a simplex)."""
    n = 240
    K = np.eye(n) * 2.0 + 1.0  # H K H = 2H: eigenvalue 2 repeated n - 1 times, and 0
    model = KernelPCA(7, kernel="precomputed", eigen_solver="dense").fit(K)
    assert model.eigenvalues_.shape == (7,)
    np.testing.assert_allclose(model.eigenvalues_, 2.0, rtol=1e-12)


def test_fit_within_a_memory_limit():
    """A fit whose packed kernel (72 MiB in float64) does not fit in its memory_limit caches what fits and
    recomputes the rest: peak RSS grows by less than the limit."""
    n, d, k = 6000, 16, 5
    limit = 150 * 2**20
    growth = _peak_growth(
        f"""
        import resource, numpy as np
        from fastkpca import KernelPCA
        X = np.random.default_rng(0).standard_normal(({n}, {d}))
        KernelPCA(2, kernel="rbf").fit(X[:300])
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        model = KernelPCA({k}, kernel="rbf", random_state=0, memory_limit={limit}).fit(X)
        assert model.solver_info_["storage"] == "cached", model.solver_info_
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(after - before)
        """
    )
    assert growth <= limit, f"fit grew peak RSS by {growth / 2**20:.0f} MiB, over its {limit / 2**20:.0f} MiB limit"


def test_solvers_that_need_the_whole_kernel_respect_the_limit(rng):
    X = rng.standard_normal((2000, 3))
    for solver in ("dense", "arpack", "randomized"):
        with pytest.raises(MemoryError, match="lanczos"):
            KernelPCA(3, kernel="rbf", eigen_solver=solver, memory_limit="10MB").fit(X)
    assert KernelPCA(3, kernel="rbf", memory_limit="100MB").fit(X).solver_info_["storage"] in ("packed", "cached")


# ------------------------------------------------------------------------------------ eigen_solver="nystrom"


@pytest.mark.parametrize("landmarks", ["uniform", "rpcholesky"])
def test_nystrom_with_every_sample_as_landmark_is_exact(landmarks, rng):
    X = rng.standard_normal((400, 5))
    X_new = rng.standard_normal((40, 5))
    exact = KernelPCA(n_components=6, kernel="rbf", eigen_solver="dense").fit(X)
    ny = KernelPCA(n_components=6, kernel="rbf", eigen_solver=Nystrom(n_landmarks=400, landmarks=landmarks),
                   random_state=0)
    Z = ny.fit_transform(X)
    np.testing.assert_allclose(ny.eigenvalues_, exact.eigenvalues_, rtol=1e-10)
    Z_ref = exact.transform(X)
    np.testing.assert_allclose(_align_signs(Z, Z_ref), Z_ref, atol=1e-8 * np.abs(Z_ref).max())
    T, T_ref = ny.transform(X_new), exact.transform(X_new)
    np.testing.assert_allclose(_align_signs(T, T_ref), T_ref, atol=1e-8 * np.abs(T_ref).max())
    np.testing.assert_allclose(ny.explained_variance_ratio_, exact.explained_variance_ratio_, rtol=1e-9)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "poly"])
def test_nystrom_matches_the_centered_approximate_kernel(kernel, rng):
    """Against eigh of H·C W⁻¹ Cᵀ·H built densely in NumPy: eigenvalues, training scores, new points."""
    X = rng.standard_normal((350, 4))
    X_new = rng.standard_normal((30, 4))
    params = dict(gamma=0.3, degree=2, coef0=1.0)
    ny = KernelPCA(n_components=4, kernel=kernel, eigen_solver=Nystrom(n_landmarks=12), random_state=3,
                   **params).fit(X)
    S = X[ny.landmark_indices_]
    np.testing.assert_array_equal(ny.landmarks_, S)
    C = ref.kernel(X, S, kernel=kernel, **params)
    W = ref.kernel(S, kernel=kernel, **params)
    Kt = C @ np.linalg.solve(W, C.T)
    values, vectors = np.linalg.eigh(ref.double_center(Kt))
    values, vectors = values[::-1][:4], vectors[:, ::-1][:, :4]
    np.testing.assert_allclose(ny.eigenvalues_, values, rtol=1e-8)
    scores = vectors * np.sqrt(values)
    Z = ny.transform(X)
    np.testing.assert_allclose(_align_signs(Z, scores), scores, atol=1e-7 * np.abs(scores).max())
    # A new point: its approximate kernel row (k(x, S) W⁻¹ Cᵀ), centered against the training kernel.
    kx = ref.kernel(X_new, S, kernel=kernel, **params) @ np.linalg.solve(W, C.T)
    kx_c = kx - kx.mean(axis=1, keepdims=True) - Kt.mean(axis=0) + Kt.mean()
    expected = kx_c @ vectors / np.sqrt(values)
    T = ny.transform(X_new)
    signs = np.sign(np.sum(Z * scores, axis=0))
    np.testing.assert_allclose(T * signs, expected, atol=1e-7 * np.abs(expected).max())


def test_nystrom_solver_info_float32_and_inverse_transform(rng):
    X = rng.standard_normal((3000, 6))
    ny = KernelPCA(n_components=3, kernel="rbf", eigen_solver=Nystrom(n_landmarks=200),
                   fit_inverse_transform=True, random_state=0)
    Z = ny.fit_transform(X)
    info = ny.solver_info_
    assert info["solver"] == "nystrom" and info["landmarks"] == "rpcholesky" and info["n_landmarks"] == 200
    assert info["rank"] == 200 and info["landmark_selection"]["rows_searched"] == 3000
    assert set(info["seconds"]) >= {"landmarks", "moments", "eigen", "scores"}
    assert ny.X_fit_.shape == (200, 6) and ny.dual_coef_.shape == (200, 6)
    assert ny.inverse_transform(Z[:5]).shape == (5, 6)
    # float32 against float64 on data with separated components (same uniform landmarks)
    X = X * np.array([3.0, 2.0, 1.2, 0.5, 0.3, 0.1])
    ny = KernelPCA(n_components=3, kernel="rbf", eigen_solver=Nystrom(n_landmarks=200, landmarks="uniform"),
                   random_state=0)
    Z = ny.fit_transform(X)
    ny32 = KernelPCA(n_components=3, kernel="rbf", eigen_solver=Nystrom(n_landmarks=200, landmarks="uniform"),
                     random_state=0)
    Z32 = ny32.fit_transform(X.astype(np.float32))
    assert Z32.dtype == np.float32 and ny32.eigenvalues_.dtype == np.float32
    np.testing.assert_allclose(ny32.eigenvalues_, ny.eigenvalues_, rtol=1e-3)
    np.testing.assert_allclose(_align_signs(Z32, Z), Z, atol=1e-3 * np.abs(Z).max())


def test_nystrom_given_landmarks_and_default_count(rng):
    X = rng.standard_normal((1500, 3))
    S = rng.standard_normal((50, 3))
    ny = KernelPCA(n_components=2, kernel="rbf", eigen_solver=Nystrom(landmarks=S)).fit(X)
    assert ny.landmark_indices_ is None and ny.solver_info_["landmarks"] == "given"
    np.testing.assert_array_equal(ny.landmarks_, S)
    ny = KernelPCA(n_components=2, kernel="rbf", eigen_solver="nystrom").fit(X)
    assert ny.solver_info_["n_landmarks"] == 1000
    ny = KernelPCA(kernel="rbf", eigen_solver=Nystrom(n_landmarks=30)).fit(X)  # n_components=None: all
    assert ny.eigenvalues_.shape == (30,)


def test_nystrom_bad_input_names_the_argument(rng):
    X = rng.standard_normal((100, 3))

    def model(memory_limit=None, kernel="rbf", **nystrom):
        return KernelPCA(n_components=5, kernel=kernel, eigen_solver=Nystrom(**nystrom), memory_limit=memory_limit)

    with pytest.raises(ValueError, match="n_landmarks=101 is larger than the number of samples"):
        model(n_landmarks=101).fit(X)
    with pytest.raises(ValueError, match="n_components=5 is larger than n_landmarks=4"):
        model(n_landmarks=4).fit(X)
    with pytest.raises(ValueError, match="landmarks has 2 features"):
        model(landmarks=np.ones((10, 2))).fit(X)
    bad = rng.standard_normal((10, 3))
    bad[3, 0] = np.nan
    with pytest.raises(ValueError, match="landmarks contains NaN"):
        model(landmarks=bad).fit(X)
    with pytest.raises(ValueError, match="n_landmarks=20 but 10 landmarks"):
        model(landmarks=np.ones((10, 3)), n_landmarks=20).fit(X)
    with pytest.raises(ValueError, match="landmarks must be one of"):
        model(landmarks="kmeans").fit(X)
    with pytest.raises(ValueError, match="Cannot use eigen_solver='nystrom' with a precomputed kernel"):
        model(kernel="precomputed").fit(X @ X.T)
    with pytest.raises(TypeError, match="n_landmarks"):
        model(n_landmarks=10.5).fit(X)
    with pytest.raises(MemoryError, match="eigen_solver='nystrom'"):
        model(n_landmarks=100, memory_limit=2**16).fit(X)


def test_nystrom_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator

    check_estimator(KernelPCA(n_components=2, kernel="rbf", eigen_solver="nystrom"))
