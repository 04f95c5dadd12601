"""fastkpca.KernelKMeans: every iteration equal to a NumPy reference that holds K (weights, sparse X, float32,
every storage), k-means++ as scikit-learn's, the Nyström solver, predict/transform/score, the choice, and the
bad-input rules."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from sklearn.cluster import kmeans_plusplus
from sklearn.datasets import make_blobs, make_circles
from sklearn.metrics import adjusted_rand_score
from sklearn.utils.estimator_checks import check_estimator

import reference as ref
from fastkpca import KernelKMeans
from fastkpca.kernels import make
from fastkpca.operators.storage import PLAN_SLACK_BYTES
from fastkpca.solvers.kernel_kmeans.lloyd import kmeans_plus_plus
from fastkpca.solvers.kernel_kmeans.solvers import exact_bytes

KERNELS = [("rbf", {"gamma": 0.3}), ("linear", {}), ("poly", {"degree": 2, "gamma": 0.5, "coef0": 1.0}),
           ("laplacian", {"gamma": 0.2}), ("sigmoid", {"gamma": 0.01, "coef0": 0.5})]


def blobs(n=300, d=4, centres=4, seed=0, std=1.5):
    X, y = make_blobs(n, d, centers=centres, cluster_std=std, random_state=seed)
    return X, y


def recorded(model, X, **fit):
    """Fit, and the labels after every iteration (the callback's)."""
    seen = []
    model.set_params(callback=lambda stage, info: seen.append(info["labels"].copy()) if stage == "iteration" else None)
    model.fit(X, **fit)
    return seen


@given(seed=st.integers(0, 2**16), which=st.integers(0, len(KERNELS) - 1), weighted=st.booleans(),
       k=st.integers(2, 6), small_limit=st.booleans())
def test_every_iteration_equals_the_reference(seed, which, weighted, k, small_limit):
    rng = np.random.default_rng(seed)
    name, params = KERNELS[which]
    X = rng.standard_normal((150, 3)) + rng.integers(0, 3, (150, 1))
    w = rng.uniform(0.1, 3.0, 150) if weighted else None
    init = rng.integers(0, k, 150)
    # small_limit: no room for the kernel beside the solver's arrays (cached or matrix-free storage)
    limit = PLAN_SLACK_BYTES + exact_bytes(150, k, 1) + 60_000 if small_limit else None
    model = KernelKMeans(k, kernel=name, init=init, max_iter=50, memory_limit=limit, solver="exact", **params)
    seen = recorded(model, X, sample_weight=w)
    assert (model.solver_info_["storage"] in ("cached", "matrix_free")) == small_limit
    K = ref.kernel(X, kernel=name, **params)
    history, inertia = ref.kernel_kmeans(K, init, k, w, max_iter=50)
    assert len(seen) == len(history) == model.n_iter_
    for ours, theirs in zip(seen, history):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(model.labels_, history[-1])
    assert model.inertia_ == pytest.approx(inertia, rel=1e-10, abs=1e-10 * abs(inertia) + 1e-12)
    # the inertia is against the last centroids; the labels' own centroids can only do better
    assert ref.kernel_kmeans_objective(K, model.labels_, w) <= model.inertia_ * (1 + 1e-10) + 1e-12


@given(seed=st.integers(0, 2**16))
def test_sparse_and_float32_follow_the_reference(seed):
    rng = np.random.default_rng(seed)
    dense = sp.random(200, 30, density=0.2, random_state=seed, format="csr", dtype=np.float64)
    dense.data = rng.uniform(0.5, 2.0, dense.nnz)
    init = rng.integers(0, 3, 200)
    K = ref.kernel(dense.toarray(), kernel="rbf", gamma=0.2)
    history, inertia = ref.kernel_kmeans(K, init, 3, None, max_iter=40)
    sparse_fit = KernelKMeans(3, kernel="rbf", gamma=0.2, init=init, max_iter=40).fit(dense)
    np.testing.assert_array_equal(sparse_fit.labels_, history[-1])
    assert sparse_fit.inertia_ == pytest.approx(inertia, rel=1e-10)
    X32 = dense.toarray().astype(np.float32)
    single = KernelKMeans(3, kernel="rbf", gamma=0.2, init=init, max_iter=40).fit(X32)
    K32 = ref.kernel(X32.astype(np.float64), kernel="rbf", gamma=0.2)
    assert single.inertia_ == pytest.approx(ref.kernel_kmeans_objective(K32, single.labels_), rel=1e-5)
    assert adjusted_rand_score(single.labels_, history[-1]) > 0.95


def test_precomputed_equals_the_kernel():
    X, _ = blobs()
    K = ref.kernel(X, kernel="rbf", gamma=0.1)
    a = KernelKMeans(4, kernel="rbf", gamma=0.1, random_state=3).fit(X)
    b = KernelKMeans(4, kernel="precomputed", random_state=3).fit(K)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.inertia_ == pytest.approx(b.inertia_, rel=1e-10)
    np.testing.assert_array_equal(b.predict(K[:50]), b.labels_[:50])
    with pytest.raises(ValueError, match="precomputed"):
        b.transform(K[:5])


@pytest.mark.parametrize("weighted", [False, True])
def test_kmeans_plus_plus_is_scikit_learns_on_the_linear_kernel(weighted):
    X, _ = blobs(400, 5, 6, seed=2)
    w = np.random.default_rng(0).uniform(0.2, 2.0, 400) if weighted else np.ones(400)
    kernel = make("linear", n_features=5)
    source = kernel.columns(X)
    start = kmeans_plus_plus(source, source.diagonal(), w, 6, [np.random.RandomState(7)])[0]
    centres, index = kmeans_plusplus(X, 6, sample_weight=w, random_state=np.random.RandomState(7))
    np.testing.assert_array_equal(start.centres, index)
    nearest = ((X[:, None, :] - centres[None]) ** 2).sum(-1).argmin(1)
    np.testing.assert_array_equal(start.labels, nearest)


def test_separates_rings_where_kmeans_cannot():
    X, y = make_circles(600, factor=0.3, noise=0.05, random_state=0)
    model = KernelKMeans(2, kernel="rbf", gamma=10.0, n_init=5, random_state=0).fit(X)
    assert adjusted_rand_score(y, model.labels_) > 0.99
    assert model.solver_info_["starts"] == 5 and model.solver_info_["passes"] <= 5 * model.max_iter


def test_starts_side_by_side_keep_the_best():
    X, _ = blobs(500, 6, 8, seed=5, std=3.0)
    many = KernelKMeans(8, kernel="rbf", gamma=0.05, init="random", n_init=6, random_state=1).fit(X)
    info = many.solver_info_
    assert info["starts"] == 6 and len(info["start_inertias"]) == 6
    assert many.inertia_ == pytest.approx(min(info["start_inertias"]))
    # one pass per iteration for all starts together: the longest start's iterations (+0: the variance's
    # column rides in the first pass)
    assert info["passes"] == max(info["start_iterations"])
    assert KernelKMeans(8, kernel="rbf", gamma=0.05, random_state=1).fit(X).solver_info_["starts"] == 4
    assert KernelKMeans(8, kernel="rbf", gamma=0.05, init="random", random_state=1).fit(X).solver_info_[
        "starts"] == 10


def test_predict_transform_score_agree_with_the_fit():
    X, _ = blobs()
    X_new, _ = blobs(80, seed=9)
    model = KernelKMeans(4, kernel="rbf", gamma=0.2, random_state=0).fit(X)
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    D = model.transform(X)
    assert D.shape == (300, 4)
    np.testing.assert_allclose(D.min(axis=1).sum(), model.inertia_, rtol=1e-10)
    assert model.score(X) == pytest.approx(-model.inertia_, rel=1e-10)
    # new points: squared distances to the centroids from the full kernel in NumPy
    K_cross = ref.kernel(X_new, X, kernel="rbf", gamma=0.2)
    K = ref.kernel(X, kernel="rbf", gamma=0.2)
    expected = np.empty((80, 4))
    for j in range(4):
        m = model.labels_ == j
        expected[:, j] = 1.0 - 2 * K_cross[:, m].mean(1) + K[np.ix_(m, m)].mean()
    # the fitted centroids are those before the final assignment, which equals labels_ at convergence
    np.testing.assert_allclose(model.transform(X_new), expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(model.predict(X_new), expected.argmin(1))
    np.testing.assert_array_equal(model.fit_predict(X), model.labels_)


def test_empty_clusters_are_reseeded():
    X, _ = blobs(60, 2, 2, seed=0, std=0.3)
    init = np.zeros(60, dtype=int)
    init[:2] = [1, 2]  # cluster 2 holds one point that cluster 0's centroid is nearer to
    init[2] = 3
    seen = recorded(KernelKMeans(4, kernel="linear", init=init, max_iter=20), X)
    K = X @ X.T
    history, inertia = ref.kernel_kmeans(K, init, 4, None, max_iter=20)
    for ours, theirs in zip(seen, history):
        np.testing.assert_array_equal(ours, theirs)
    model = KernelKMeans(4, kernel="linear", init=init, max_iter=20).fit(X)
    assert model.inertia_ == pytest.approx(inertia, rel=1e-10)


def test_nystrom_solver_clusters_as_the_exact_one():
    X, y = blobs(2000, 8, 5, seed=4, std=1.0)
    exact = KernelKMeans(5, kernel="rbf", gamma=0.05, n_init=3, random_state=0).fit(X)
    approx = KernelKMeans(5, kernel="rbf", gamma=0.05, solver="nystrom", n_components=100, n_init=3,
                          random_state=0).fit(X)
    assert exact.solver_info_["choice"]["picked"] == "exact" and approx.solver_info_["solver"] == "nystrom"
    assert adjusted_rand_score(y, exact.labels_) > 0.99
    assert adjusted_rand_score(exact.labels_, approx.labels_) > 0.99
    K = ref.kernel(X, kernel="rbf", gamma=0.05)
    assert ref.kernel_kmeans_objective(K, approx.labels_) <= 1.01 * exact.inertia_
    np.testing.assert_array_equal(approx.predict(X), approx.labels_)
    np.testing.assert_allclose(approx.transform(X).min(1).sum(), approx.inertia_, rtol=1e-8)


def test_the_choice_takes_nystrom_only_where_exact_is_too_slow():
    from fastkpca.solvers import choice

    from fastkpca.solvers.kernel_kmeans.solvers import nystrom_bytes

    def pick(n, limit):
        return choice.kernel_kmeans("auto", n=n, d=16, columns=32, rank=200, exact_bytes=exact_bytes(n, 8, 4),
                                    nystrom_bytes=nystrom_bytes(n, 8, 4, 200), memory_limit=limit)

    small, huge = pick(20_000, 10**9), pick(1_000_000, 2 * 10**9)
    assert small.picked == "exact" and huge.picked == "nystrom"
    assert set(small.as_dict()["candidates"]) == {"exact", "nystrom"}
    assert huge.fits(huge.candidates[1]), "the Nyström solver at a million samples fits 2 GB"


def test_memory_limit_keeps_the_answer():
    X, _ = blobs(700, 5, 5, seed=3)
    full = KernelKMeans(5, kernel="rbf", gamma=0.1, random_state=0).fit(X)
    small = KernelKMeans(5, kernel="rbf", gamma=0.1, random_state=0,
                         memory_limit=PLAN_SLACK_BYTES + exact_bytes(700, 5, 4) + 2**20).fit(X)
    assert full.solver_info_["storage"] in ("full", "packed")
    assert small.solver_info_["storage"] in ("cached", "matrix_free")
    np.testing.assert_array_equal(full.labels_, small.labels_)
    assert full.inertia_ == pytest.approx(small.inertia_, rel=1e-12)


def test_bad_input_names_the_argument():
    X, _ = blobs(50)
    kept = X.copy()
    with pytest.raises(ValueError, match="n_clusters"):
        KernelKMeans(0).fit(X)
    with pytest.raises(ValueError, match="n_clusters"):
        KernelKMeans(51).fit(X)
    with pytest.raises(ValueError, match="init"):
        KernelKMeans(3, init=np.zeros(49, int)).fit(X)
    with pytest.raises(ValueError, match="init"):
        KernelKMeans(3, init=np.arange(50) % 4).fit(X)
    with pytest.raises(ValueError, match="n_init"):
        KernelKMeans(3, init=np.arange(50) % 3, n_init=3).fit(X)
    with pytest.raises(ValueError, match="sample_weight"):
        KernelKMeans(3).fit(X, sample_weight=-np.ones(50))
    with pytest.raises(ValueError, match="NaN"):
        KernelKMeans(3).fit(np.where(np.eye(50, 4) > 0, np.nan, X))
    with pytest.raises(ValueError, match="square|Precomputed|precomputed"):
        KernelKMeans(3, kernel="precomputed").fit(np.ones((50, 40)))
    with pytest.raises(ValueError, match="solver"):
        KernelKMeans(3, solver="elkan").fit(X)
    np.testing.assert_array_equal(X, kept)


def test_check_estimator():
    # The seeding draws its centres from the n samples with probability ∝ weight: repeating a sample instead of
    # doubling its weight changes the draws themselves (as for scikit-learn's KMeans with a random start).
    reason = "random seeding draws over the samples, so repeated samples change the draws"
    check_estimator(KernelKMeans(3, n_init=2, random_state=0),
                    expected_failed_checks={"check_sample_weight_equivalence_on_dense_data": reason,
                                            "check_sample_weight_equivalence_on_sparse_data": reason})


def test_callable_and_kernel_objects_equal_the_native_kernel():
    from sklearn.gaussian_process.kernels import RBF

    X, _ = blobs(200, 3, 3, seed=6)
    init = np.random.default_rng(2).integers(0, 3, 200)
    native = KernelKMeans(3, kernel="rbf", gamma=0.5, init=init).fit(X)
    by_callable = KernelKMeans(3, kernel=lambda a, b: np.exp(-0.5 * np.sum((a - b) ** 2)), init=init).fit(X)
    by_object = KernelKMeans(3, kernel=RBF(length_scale=1.0), init=init).fit(X)
    for other in (by_callable, by_object):
        np.testing.assert_array_equal(other.labels_, native.labels_)
        assert other.inertia_ == pytest.approx(native.inertia_, rel=1e-10)
    np.testing.assert_array_equal(by_object.predict(X[:20]), native.predict(X[:20]))


def test_verbose_prints_each_iteration_without_the_labels(capsys):
    X, _ = blobs(200, 3, 3, seed=1)
    KernelKMeans(3, kernel="rbf", gamma=0.2, random_state=0, verbose=2).fit(X)
    err = capsys.readouterr().err
    assert "[KernelKMeans] iteration: iteration=1" in err and "inertia=" in err and "done:" in err
    assert "labels" not in err


@pytest.mark.parametrize("init", ["k-means++", "random"])
def test_a_float32_precomputed_kernel_seeds_as_float64(init):
    X, _ = blobs(200, 3, 3, seed=4)
    K = ref.kernel(X, kernel="rbf", gamma=0.3)
    single = KernelKMeans(3, kernel="precomputed", init=init, random_state=0).fit(K.astype(np.float32))
    double = KernelKMeans(3, kernel="precomputed", init=init, random_state=0).fit(K)
    assert adjusted_rand_score(single.labels_, double.labels_) > 0.99


def test_auto_never_takes_nystrom_for_a_precomputed_kernel(monkeypatch):
    from fastkpca.solvers import choice

    monkeypatch.setattr(choice, "KMEANS_EXACT_SECONDS", 0.0)  # every exact fit "too slow"
    X, _ = blobs(200, 3, 3, seed=4)
    K = ref.kernel(X, kernel="rbf", gamma=0.3)
    model = KernelKMeans(3, kernel="precomputed", random_state=0).fit(K)
    assert model.solver_info_["solver"] == "exact"
    assert not model.solver_info_["choice"]["candidates"]["nystrom"]["fits"]
    other = KernelKMeans(3, kernel="rbf", gamma=0.3, random_state=0).fit(X).solver_info_["choice"]["candidates"]
    assert other["nystrom"]["fits"] and other["nystrom"]["automatic"]


@pytest.mark.parametrize("case", ["skipped label", "weightless cluster"])
def test_a_cluster_without_weight_has_no_centroid(case):
    X, _ = blobs(120, 2, 3, seed=2, std=0.5)
    rng = np.random.default_rng(0)
    init = rng.integers(0, 3, 120)
    w = rng.uniform(0.5, 2.0, 120)
    if case == "skipped label":
        init[init == 1] = 0  # cluster 1 starts empty
    else:
        w[init == 1] = 0.0  # cluster 1's members weigh nothing
    seen = recorded(KernelKMeans(3, kernel="rbf", gamma=0.5, init=init, max_iter=30), X, sample_weight=w)
    history, inertia = ref.kernel_kmeans(ref.kernel(X, kernel="rbf", gamma=0.5), init, 3, w, max_iter=30)
    assert len(seen) == len(history)
    for ours, theirs in zip(seen, history):
        np.testing.assert_array_equal(ours, theirs)
    assert 1 not in seen[0]  # nothing is assigned to a cluster without a centroid
    one_pass = KernelKMeans(3, kernel="rbf", gamma=0.5, init=init, max_iter=1).fit(X, sample_weight=w)
    assert 1 not in one_pass.predict(X) and np.isinf(one_pass.transform(X[:5])[:, 1]).all()
    full = KernelKMeans(3, kernel="rbf", gamma=0.5, init=init, max_iter=30).fit(X, sample_weight=w)
    assert full.inertia_ == pytest.approx(inertia, rel=1e-10)


def test_nystrom_plans_its_chunks_by_the_samples():
    X, _ = blobs(1000, 4, 3, seed=1)
    model = KernelKMeans(3, kernel="rbf", gamma=0.3, solver="nystrom", n_components=50, random_state=0,
                         memory_limit="4MB").fit(X)
    assert model.solver_info_["planned_bytes"] <= 4 * 10**6
