"""The Dask engine on a real LocalCluster of worker processes: the same results as the single-process fits,
independence of the cluster, a worker lost in the middle of a fit, progress, and bad input."""

import os
import pickle
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import fastkpca  # noqa: E402
from fastkpca.engines import dask as _dask  # noqa: E402

N, D = 1800, 6


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                       memory_limit="2GiB")
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    """Row blocks of 512 rows, so that a test-sized problem has several (4 blocks, 10 pair tasks)."""
    monkeypatch.setattr(_dask, "TARGET_BLOCK_ROWS", 512)


def data(n=N, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    # Anisotropic: well separated leading eigenvalues, so the eigenvectors are well conditioned.
    return (rng.standard_normal((n, D)) * np.array([3.0, 2.0, 1.5, 1.0, 0.5, 0.25])).astype(dtype)


def same_up_to_sign(A, B):
    signs = np.sign(np.sum(A * B, axis=0))
    return np.abs(A * signs - B).max() / np.abs(B).max()


def kpca(**kw):
    params = dict(n_components=6, kernel="rbf", gamma=0.1, random_state=0)
    params.update(kw)
    return fastkpca.KernelPCA(**params)


def test_row_blocks_are_a_function_of_n_alone(monkeypatch):
    monkeypatch.setattr(_dask, "TARGET_BLOCK_ROWS", 6144)
    assert _dask.block_rows(1000) == 1024
    assert _dask.block_rows(50_000) % 256 == 0 and -(-50_000 // _dask.block_rows(50_000)) == 8
    assert -(-10**7 // _dask.block_rows(10**7)) <= _dask.MAX_BLOCKS


def test_distributed_products_match_the_kernel(client):
    X = data(900)
    samples = _dask.DaskSamples(_dask.DaskEngine(), client, da.from_array(X, chunks=(200, D)))
    assert samples.blocks == 2 and samples.offsets.tolist() == [0, 512, 900]
    kernel = fastkpca.kernels.NativeKernel.resolve("rbf", 0.1, 3, 1, D)
    V = np.random.default_rng(1).standard_normal((900, 5))
    K = fastkpca.gram(X, kernel="rbf", gamma=0.1)
    free = _dask.DistributedKernel(samples, kernel, samples.plan(kernel, block_size=8, memory_limit=1))
    kept = _dask.DistributedKernel(samples, kernel, samples.plan(kernel, block_size=8, memory_limit=None))
    assert free.storage == "distributed_matrix_free" and kept.storage == "distributed_packed"
    # storage="matrix_free" keeps nothing, whatever room the limit (here the workers' default share) leaves
    asked = samples.plan(kernel, block_size=8, memory_limit=None, storage="matrix_free")
    assert asked.storage == "distributed_matrix_free" and not asked.placed and asked.kernel_bytes == 0
    W = free.matmat(V)
    np.testing.assert_allclose(W, K @ V, rtol=0, atol=1e-12 * np.abs(K @ V).max())
    # Kept and recomputed tiles are the same numbers: the same product bit for bit.
    assert np.array_equal(kept.matmat(V), W)
    assert free.diagonal_sum() == pytest.approx(np.trace(K), rel=1e-14)
    index = np.array([899, 3, 512, 511, 3])
    assert np.array_equal(samples.rows(index), X[index])


def test_kernel_pca_matches_the_single_process_fit(client):
    X, X_new = data(), data(300, seed=1)
    dist = kpca().fit(da.from_array(X, chunks=(400, D)))
    local = kpca(eigen_solver="lanczos").fit(X)
    np.testing.assert_allclose(dist.eigenvalues_, local.eigenvalues_, rtol=1e-10)
    assert same_up_to_sign(dist.eigenvectors_, local.eigenvectors_) < 1e-8
    assert dist.solver_info_["engine"] == "dask" and dist.solver_info_["row_blocks"] == 4
    # The column means come with the first pass: no pass of their own.
    assert dist.solver_info_["distributed_passes"] == dist.solver_info_["n_passes"]
    # transform of a dask array is a dask array, of a NumPy array a NumPy array; both equal the local one.
    lazy = dist.transform(da.from_array(X_new, chunks=(128, D)))
    assert isinstance(lazy, da.Array) and lazy.chunks[0] == (128, 128, 44)
    expected = local.transform(X_new)
    assert same_up_to_sign(lazy.compute(), expected) < 1e-8
    assert same_up_to_sign(dist.transform(X_new), expected) < 1e-8
    # Pickled, a model fitted on the cluster becomes a local one: the same transform without the cluster.
    restored = pickle.loads(pickle.dumps(dist))
    assert isinstance(restored.X_fit_, np.ndarray) and np.array_equal(restored.X_fit_, X)
    np.testing.assert_allclose(restored.transform(X_new), dist.transform(X_new), rtol=0, atol=1e-12)
    scores = dist.fit_transform(da.from_array(X, chunks=(400, D)))
    assert isinstance(scores, da.Array)
    assert same_up_to_sign(scores.compute(), local.transform(X)) < 1e-8


def test_kernel_pca_float32(client):
    X = data(dtype=np.float32)
    dist = kpca(n_components=4).fit(da.from_array(X, chunks=(600, D)))
    local = kpca(n_components=4, eigen_solver="lanczos").fit(X)
    assert dist.eigenvalues_.dtype == np.float32
    np.testing.assert_allclose(dist.eigenvalues_, local.eigenvalues_, rtol=1e-5)


def test_results_do_not_depend_on_the_cluster_or_on_caching(client):
    """One worker or two, tiles kept or recomputed: the same work units summed in the same order, so the
    same fit bit for bit."""
    X = da.from_array(data(), chunks=(450, D))
    two = kpca(memory_limit=1).fit(X)  # nothing kept: every pass recomputes
    assert two.solver_info_["storage"] == "distributed_matrix_free"
    with distributed.Client(distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                                     dashboard_address=":0")) as single:
        one = kpca().fit(X)
        assert one.solver_info_["n_workers"] == 1 and one.solver_info_["storage"] == "distributed_packed"
        one_scores = one.transform(X[:200]).compute()
    assert distributed.default_client() is client
    assert single.status == "closed"
    assert np.array_equal(one.eigenvalues_, two.eigenvalues_)
    assert np.array_equal(one.eigenvectors_, two.eigenvectors_)
    assert np.array_equal(one_scores, two.transform(X[:200]).compute())


def test_kernel_pca_nystrom(client):
    X, X_new = data(), data(200, seed=2)
    dist = kpca(eigen_solver=fastkpca.Nystrom(n_landmarks=300)).fit(da.from_array(X, chunks=(500, D)))
    local = kpca(eigen_solver=fastkpca.Nystrom(n_landmarks=300)).fit(X)
    np.testing.assert_array_equal(dist.landmark_indices_, local.landmark_indices_)
    np.testing.assert_allclose(dist.eigenvalues_, local.eigenvalues_, rtol=1e-10)
    assert same_up_to_sign(dist.eigenvectors_, local.eigenvectors_) < 1e-8
    lazy = dist.transform(da.from_array(X_new, chunks=(64, D)))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), local.transform(X_new), rtol=0, atol=1e-10)


@pytest.mark.parametrize("landmarks", ["uniform", "rpcholesky"])
def test_nystroem(client, landmarks):
    X = data()
    dist = fastkpca.Nystroem(kernel="rbf", gamma=0.1, n_components=150, landmarks=landmarks, random_state=0)
    local = fastkpca.Nystroem(kernel="rbf", gamma=0.1, n_components=150, landmarks=landmarks, random_state=0)
    Xd = da.from_array(X, chunks=(700, D))
    features = dist.fit_transform(Xd)
    assert isinstance(features, da.Array) and features.chunks[0] == Xd.chunks[0]
    np.testing.assert_array_equal(dist.component_indices_, local.fit(X).component_indices_)
    np.testing.assert_allclose(features.compute(), local.transform(X), rtol=0, atol=1e-12)


def ridge(solver=None, alpha=0.1, **cg):
    """KernelRidge by CG (rank 400: the cg fits here take about 25 iterations, each a distributed pass; 90 at
    rank 80) with ``cg`` its settings in place of these, or by ``solver``."""
    settings = {"preconditioner_rank": 400, "tol": 1e-12, "random_state": 0, **cg}
    return fastkpca.KernelRidge(alpha=alpha, kernel="rbf", gamma=0.1,
                                solver=fastkpca.CG(**settings) if solver is None else solver)


def test_kernel_ridge_cg_matches_the_single_process_fit(client):
    X, X_new = data(), data(250, seed=3)
    rng = np.random.default_rng(4)
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1] ** 2]) + 0.1 * rng.standard_normal((N, 2))
    w = rng.uniform(0.5, 2.0, N)
    dist = ridge(alpha=[0.1, 1.0]).fit(da.from_array(X, chunks=(600, D)), da.from_array(Y, chunks=(600, 2)),
                                       sample_weight=w)
    local = ridge(alpha=[0.1, 1.0]).fit(X, Y, sample_weight=w)
    assert dist.solver_info_["engine"] == "dask" and dist.solver_info_["converged"]
    expected = local.predict(X_new)
    lazy = dist.predict(da.from_array(X_new, chunks=(100, D)))
    assert isinstance(lazy, da.Array) and lazy.shape == (250, 2)
    np.testing.assert_allclose(lazy.compute(), expected, rtol=0, atol=1e-8 * np.abs(expected).max())
    np.testing.assert_allclose(dist.predict(X_new), expected, rtol=0, atol=1e-8 * np.abs(expected).max())
    restored = pickle.loads(pickle.dumps(dist))
    np.testing.assert_allclose(restored.predict(X_new), dist.predict(X_new), rtol=0, atol=1e-12)
    # one target: 1-D predictions, as scikit-learn gives
    one = ridge().fit(da.from_array(X, chunks=(600, D)), Y[:, 0])
    assert one.predict(da.from_array(X_new, chunks=(100, D))).compute().shape == (250,)


def test_kernel_ridge_mixed_precision_cg_matches_the_single_process_fit(client):
    """CG(precision="mixed") on the cluster: a float32 copy of the row blocks on the workers, its passes for the
    iterations, the float64 ones for the true residuals; the answer is the float64 system's, as in process."""
    X, X_new = data(), data(250, seed=3)
    y = np.sin(X[:, 0]) + 0.1 * np.random.default_rng(4).standard_normal(N)
    dist = ridge(precision="mixed").fit(da.from_array(X, chunks=(600, D)), y)
    local = ridge(precision="float64").fit(X, y)
    info = dist.solver_info_
    assert info["engine"] == "dask" and info["converged"] and 0 < info["fast_products"] < info["iterations"]
    expected = local.predict(X_new)
    np.testing.assert_allclose(dist.predict(X_new), expected, rtol=0, atol=1e-8 * np.abs(expected).max())


def test_kernel_ridge_nystrom(client):
    X, X_new = data(), data(250, seed=5)
    y = np.sin(X[:, 0]) + np.cos(X[:, 1])
    dist = ridge(fastkpca.Nystrom(n_landmarks=200, random_state=0)).fit(da.from_array(X, chunks=(500, D)), y)
    local = ridge(fastkpca.Nystrom(n_landmarks=200, random_state=0)).fit(X, y)
    expected = local.predict(X_new)
    got = dist.predict(da.from_array(X_new, chunks=(100, D))).compute()
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-8 * np.abs(expected).max())


def test_a_worker_killed_mid_fit_gives_the_same_answer(client):
    """SIGKILL to a worker process after the third pass: Dask recomputes what it held (the row blocks of X, the
    kept tiles, the blocks of V, all tasks with lineage) and retries its tasks."""
    X = da.from_array(data(), chunks=(450, D))
    reference = kpca().fit(X)
    pids = client.run(os.getpid)
    killed = []

    def kill_once(stage, info):
        if stage == "pass" and info["passes"] >= 3 and not killed:
            pid = next(iter(pids.values()))
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    with fastkpca.progress(verbose=0, callback=kill_once):
        again = kpca().fit(X)
    assert killed
    client.wait_for_workers(2, timeout=60)
    assert np.array_equal(again.eigenvalues_, reference.eigenvalues_)
    assert np.array_equal(again.eigenvectors_, reference.eigenvectors_)


def test_progress_after_every_pass(client, capsys):
    X = da.from_array(data(), chunks=(450, D))
    seen = []
    with fastkpca.progress(verbose=2, callback=lambda stage, info: seen.append((stage, info))):
        est = kpca().fit(X)
    passes = [info for stage, info in seen if stage == "pass"]
    assert len(passes) == est.solver_info_["n_passes"]
    assert [p["passes"] for p in passes] == list(range(1, len(passes) + 1))
    assert all(p["seconds_per_pass"] > 0 for p in passes)
    assert "[KernelPCA] pass" in capsys.readouterr().err


def test_bad_input(client):
    X = data()
    unknown = da.from_array(X, chunks=(450, D))
    unknown = unknown[unknown[:, 0] > -100]  # a boolean mask: the row chunk sizes become unknown
    with pytest.raises(ValueError, match=r"unknown chunk sizes.*compute_chunk_sizes"):
        kpca().fit(unknown)
    with pytest.raises(ValueError, match=r"unknown chunk sizes"):
        ridge().fit(unknown, np.zeros(N))
    # chunked along the columns: rechunked, and the same fit
    by_columns = kpca().fit(da.from_array(X, chunks=(450, 2)))
    by_rows = kpca().fit(da.from_array(X, chunks=(450, D)))
    assert np.array_equal(by_columns.eigenvalues_, by_rows.eigenvalues_)
    bad = X.copy()
    bad[1234, 2] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        kpca().fit(da.from_array(bad, chunks=(450, D)))
    with pytest.raises(ValueError, match="2-D"):
        kpca().fit(da.zeros(10, chunks=5))
    with pytest.raises(TypeError, match="complex"):
        kpca().fit(da.zeros((10, 2), dtype=complex, chunks=5))
    with pytest.raises(ValueError, match="n_components=None"):
        kpca(n_components=None).fit(da.from_array(X, chunks=(450, D)))
    with pytest.raises(ValueError, match="eigen_solver='dense'"):
        kpca(eigen_solver="dense").fit(da.from_array(X, chunks=(450, D)))
    with pytest.raises(ValueError, match="native kernels"):
        kpca(kernel="precomputed").fit(da.from_array(X, chunks=(450, D)))
    with pytest.raises(ValueError, match="solver='cholesky'"):
        ridge(solver="cholesky").fit(da.from_array(X, chunks=(450, D)), np.zeros(N))
    with pytest.raises(ValueError, match="X has 1800 samples but y has 1799"):
        ridge().fit(da.from_array(X, chunks=(450, D)), np.zeros(N - 1))
    fitted = kpca().fit(da.from_array(X, chunks=(450, D)))
    with pytest.raises(ValueError, match="X has 5 features, but KernelPCA is expecting 6"):
        fitted.transform(da.zeros((10, 5), chunks=5))
    with pytest.raises(ValueError, match="X has 5 features"):
        fitted.transform(np.zeros((10, 5)))


def test_without_a_client_dask_arrays_are_fitted_in_process(monkeypatch):
    """No dask.distributed Client: the array is computed into this process and fitted natively; transform
    of a dask array is still a dask array (on dask's local scheduler)."""
    monkeypatch.setattr(_dask, "current_client", lambda: None)  # as if this process had no Client
    X = data(600)
    est = kpca().fit(da.from_array(X, chunks=(200, D)))
    local = kpca().fit(X)
    assert "engine" not in est.solver_info_
    np.testing.assert_array_equal(est.eigenvalues_, local.eigenvalues_)
    out = est.transform(da.from_array(X[:50], chunks=(20, D)))
    assert isinstance(out, da.Array)
    np.testing.assert_allclose(out.compute(), local.transform(X[:50]), rtol=0, atol=1e-12)


def test_import_and_fit_without_dask():
    code = ("import sys; sys.modules['dask'] = None; sys.modules['distributed'] = None\n"
            "import numpy as np, fastkpca\n"
            "X = np.random.default_rng(0).standard_normal((200, 3))\n"
            "fastkpca.KernelPCA(n_components=2, kernel='rbf').fit(X); fastkpca.KernelRidge().fit(X, X[:, 0])\n"
            "print('ok')")
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_new_data_is_checked_and_evaluated_as_in_process(client):
    X = data()
    fitted = kpca(n_components=3).fit(da.from_array(X, chunks=(450, D)))
    bad = data(100, seed=6)
    bad[17, 1] = np.inf
    with pytest.raises(ValueError, match="X contains infinity"):
        fitted.transform(da.from_array(bad, chunks=(50, D))).compute()
    with pytest.raises(ValueError, match="X contains infinity"):
        fitted.transform(bad)
    # a float32 model predicts float64 data in float64, as it does in process
    X32 = X.astype(np.float32)
    y = np.sin(X[:, 0])
    dist = ridge(tol=1e-10).fit(da.from_array(X32, chunks=(450, D)), y)
    local = ridge(tol=1e-10).fit(X32, y)
    new = data(100, seed=7)
    assert dist.predict(new).dtype == np.float64
    np.testing.assert_allclose(dist.predict(new), local.predict(new), rtol=0, atol=1e-5)


def test_targets_are_checked(client):
    Xd = da.from_array(data(), chunks=(450, D))
    with pytest.raises(ValueError, match="1-D or 2-D"):
        ridge().fit(Xd, np.zeros((N, 2, 2)))
    with pytest.raises(ValueError, match="0 targets"):
        ridge().fit(Xd, np.zeros((N, 0)))
    with pytest.raises(ValueError, match="y must be given"):
        ridge().fit(Xd, None)
    with pytest.raises(ValueError, match="y contains NaN"):
        ridge().fit(Xd, np.full(N, np.nan))


def test_dtypes_tiles_and_components_as_in_process(client):
    X16 = data(600).astype(np.float16)
    dist = kpca(n_components=3).fit(da.from_array(X16, chunks=(300, D)))
    assert dist.eigenvalues_.dtype == kpca(n_components=3).fit(X16).eigenvalues_.dtype == np.float64
    # kept tiles serve the passes only: none is left on the workers after the fit. Releasing a future is a
    # message to the scheduler, which frees the worker's copy a moment later: wait for it, a bounded time.
    def kept_tiles_on_workers():
        return [key for keys in client.has_what().values() for key in keys if "_kept_tiles" in str(key)]

    deadline = time.monotonic() + 10.0
    while kept_tiles_on_workers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert kept_tiles_on_workers() == []
    # n_components=None with nystrom: every component of the rank-m approximation, as in process
    est = kpca(n_components=None, eigen_solver=fastkpca.Nystrom(n_landmarks=50)).fit(da.from_array(data(600),
                                                                                                  chunks=300))
    assert est.eigenvalues_.shape == (50,) and est.solver_info_["engine"] == "dask"


@pytest.mark.parametrize("solver", ["lanczos", "nystrom"])
def test_spectral_embedding_and_clustering(client, solver, monkeypatch):
    """The new estimators run through the engine layer (no engine branch): the same embedding and labels
    on a LocalCluster as in this process, the solver's k-means start included (made from the workers'
    rows at any size here)."""
    from fastkpca.solvers.spectral import start

    monkeypatch.setattr(start, "MIN_ROWS", 0)
    X = data()
    params = dict(affinity="rbf", gamma=0.1, random_state=0,
                  eigen_solver=fastkpca.Nystrom(n_landmarks=300) if solver == "nystrom" else solver)
    dist = fastkpca.SpectralEmbedding(n_components=3, **params).fit(da.from_array(X, chunks=(500, D)))
    local = fastkpca.SpectralEmbedding(n_components=3, **params).fit(X)
    assert dist.solver_info_["solver"] == solver
    if solver == "lanczos":
        assert dist.solver_info_["start"] == local.solver_info_["start"] == "partition into 4 groups"
    assert same_up_to_sign(dist.embedding_, local.embedding_) < 1e-6
    # Labels on clustered data (on the Gaussian cloud above, k-means' boundary points flip with the last
    # digits of the embedding, which differ with the order of the distributed sums).
    from sklearn.datasets import make_blobs
    from sklearn.metrics import adjusted_rand_score

    X, _ = make_blobs(N, n_features=D, centers=3, cluster_std=2.0, random_state=0)
    labels = fastkpca.SpectralClustering(n_clusters=3, **params).fit_predict(da.from_array(X, chunks=(500, D)))
    ref = fastkpca.SpectralClustering(n_clusters=3, **params).fit_predict(X)

    assert adjusted_rand_score(labels, ref) == 1.0


def test_gaussian_process_cg_matches_the_single_process_fit(client):
    """The same probes and pivots (random_state) on the cluster as here: with the solves taken to a tight
    tolerance, the likelihood, its gradient and the predictions differ by rounding alone (at a loose
    tolerance a column's CG may stop one iteration apart, which moves the estimate within its error)."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    n = 1200  # 2 row blocks: 3 pair tasks
    X, X_new = data(n), data(40, seed=3)
    rng = np.random.default_rng(5)
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.3 * rng.standard_normal(n)
    kernel = ConstantKernel(1.0) * RBF(3.0 * np.ones(D)) + WhiteKernel(0.1)

    def gpr():
        # (rank 300: about 12 products, each a distributed pass, where rank 60 took 69)
        return fastkpca.GaussianProcessRegressor(kernel,
                                                 solver=fastkpca.CG(n_probes=8, preconditioner_rank=300, tol=1e-9,
                                                                    final_tol=1e-10), optimizer=None, random_state=0)

    dist = gpr().fit(da.from_array(X, chunks=(500, D)), y)
    local = gpr().fit(X, y)
    info = dist.solver_info_
    assert info["engine"] == "dask" and info["row_blocks"] == 2 and info["solver"] == "cg"
    assert dist.log_marginal_likelihood_value_ == pytest.approx(local.log_marginal_likelihood_value_, rel=1e-9)
    theta = local.kernel_.theta + 0.2
    value, grad = dist.log_marginal_likelihood(theta, eval_gradient=True)
    expected_value, expected_grad = local.log_marginal_likelihood(theta, eval_gradient=True)
    assert value == pytest.approx(expected_value, rel=1e-9)
    np.testing.assert_allclose(grad, expected_grad, rtol=0, atol=1e-7 * np.abs(expected_grad).max())
    mean, std = dist.predict(X_new, return_std=True)
    expected_mean, expected_std = local.predict(X_new, return_std=True)
    np.testing.assert_allclose(mean, expected_mean, rtol=0, atol=1e-8 * np.abs(expected_mean).max())
    np.testing.assert_allclose(std, expected_std, rtol=1e-7)
    # new rows as a dask array are brought here; a pickled model lives in this process
    np.testing.assert_allclose(dist.predict(da.from_array(X_new, chunks=(50, D))), mean, rtol=0, atol=1e-12)
    restored = pickle.loads(pickle.dumps(dist))
    assert not any(_dask.is_dask_array(a) for a in vars(restored).values())
    np.testing.assert_allclose(restored.predict(X_new, return_std=True), (mean, std), rtol=1e-9, atol=1e-12)
    assert restored.log_marginal_likelihood(theta) == pytest.approx(value, rel=1e-9)


def test_svc_on_a_dask_array_matches_the_single_process_fit(client):
    """A support vector machine's solver reads kernel columns of every row: its samples are brought into this
    process; predictions on a dask array are a dask array, the fitted row map applied on the workers."""
    X, X_new = data(), data(250, seed=3)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, "yes", "no")
    dist = fastkpca.SVC(tol=1e-6).fit(da.from_array(X, chunks=(600, D)), y)
    local = fastkpca.SVC(tol=1e-6).fit(X, y)
    np.testing.assert_array_equal(dist.support_, local.support_)
    np.testing.assert_allclose(dist.dual_coef_, local.dual_coef_, rtol=0, atol=1e-12)
    lazy = dist.decision_function(da.from_array(X_new, chunks=(100, D)))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), local.decision_function(X_new), rtol=0, atol=1e-10)
    labels = dist.predict(da.from_array(X_new, chunks=(100, D)))
    assert isinstance(labels, da.Array)
    np.testing.assert_array_equal(labels.compute(), local.predict(X_new))


def test_gaussian_process_on_a_cluster_needs_cg(client):
    from sklearn.gaussian_process.kernels import RBF

    X = da.from_array(data(600), chunks=(300, D))
    y = np.sin(data(600)[:, 0])
    with pytest.raises(ValueError, match="needs the whole 600×600 kernel matrix in this process"):
        fastkpca.GaussianProcessRegressor(RBF(1.0), solver="cholesky", optimizer=None).fit(X, y)
    auto = fastkpca.GaussianProcessRegressor(RBF(3.0), alpha=0.1, optimizer=None, random_state=0).fit(X, y)
    assert auto.solver_info_["solver"] == "cg"  # 'auto' on samples that are not in this process
    # refitted in this process, the model forgets the cluster's mean map
    here = np.asarray(X.compute())
    fresh = fastkpca.GaussianProcessRegressor(RBF(3.0), alpha=0.1, optimizer=None).fit(here, y)
    np.testing.assert_allclose(auto.fit(here, y).predict(here[:20]), fresh.predict(here[:20]), rtol=1e-12)


def test_auto_on_a_cluster_takes_a_solver_that_needs_no_matrix(client):
    """"auto" on a small dask X: the cost model's exact dense solvers need the n × n matrix in this process, so
    KernelRidge takes cg, KernelPCA lanczos and KernelRidgeCV's k-fold the matrix-free multi-shift CG."""
    X = da.from_array(data(400), chunks=(200, D))
    y = np.sin(data(400)[:, 0])
    ridge_fit = fastkpca.KernelRidge(alpha=0.1, kernel="rbf", gamma=0.1).fit(X, y)
    assert ridge_fit.solver_info_["solver"] == "cg"
    assert not ridge_fit.solver_info_["choice"]["candidates"]["cholesky"]["fits"]
    assert kpca().fit(X).solver_info_["solver"] == "lanczos"
    cv = fastkpca.KernelRidgeCV(alphas=[0.1, 1.0], kernel="rbf", gammas=[0.1], cv=2).fit(X, y)
    assert cv.cv_results_["method"] == "kfold-multishift-cg"


def test_kernel_kmeans_matches_the_single_process_fit(client):
    X = data(1200)
    w = np.random.default_rng(1).uniform(0.5, 2.0, 1200)
    params = dict(n_clusters=4, kernel="rbf", gamma=0.1, n_init=2, random_state=0)
    dist = fastkpca.KernelKMeans(**params).fit(da.from_array(X, chunks=(400, D)), sample_weight=w)
    local = fastkpca.KernelKMeans(**params).fit(X, sample_weight=w)
    np.testing.assert_array_equal(dist.labels_, local.labels_)
    assert dist.inertia_ == pytest.approx(local.inertia_, rel=1e-10)
    X_new = data(300, seed=5)
    labels = dist.predict(da.from_array(X_new, chunks=(100, D)))
    assert isinstance(labels, da.Array)
    np.testing.assert_array_equal(labels.compute(), local.predict(X_new))
    np.testing.assert_allclose(dist.transform(da.from_array(X_new, chunks=(100, D))).compute(),
                               local.transform(X_new), rtol=1e-10, atol=1e-12)
