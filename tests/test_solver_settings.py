"""Solver objects (fastkpca.CG, fastkpca.Nystrom): the estimators' constructors hold scikit-learn's parameters
plus at most solver, memory_limit and n_jobs; a solver's settings travel as nested parameters; the keywords they
replace still work, with a FutureWarning; progress is reported by fastkpca.progress."""

import importlib
import inspect
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.gaussian_process.kernels import RBF, WhiteKernel

import fastkpca
from fastkpca import CG, Nystrom
from fastkpca.estimators import _MODULES
from fastkpca.estimators.solver_settings import DEPRECATED

#: Each estimator with a scikit-learn counterpart: (its class, scikit-learn's).
COUNTERPARTS = [(getattr(fastkpca, name), getattr(importlib.import_module(module), name))
                for name, (_, module) in _MODULES.items()
                if module is not None and inspect.isclass(getattr(fastkpca, name))]
#: What the constructors may add to scikit-learn's parameters.
ALLOWED = {"solver", "memory_limit", "n_jobs"}
#: And what two add beside those, not a solver's settings: Nystroem's landmark method (the transformer's own
#: method, scikit-learn's draws uniformly), the poly and sigmoid affinities' parameters of SpectralEmbedding (those
#: of scikit-learn's SpectralClustering).
OWN = {"Nystroem": {"landmarks"}, "SpectralEmbedding": {"degree", "coef0"}}


def _parameters(cls) -> dict:
    return {name: p for name, p in inspect.signature(cls.__init__).parameters.items() if name != "self"}


def _deprecated(cls) -> set:
    return {name for name, p in _parameters(cls).items() if isinstance(p.default, str) and p.default == DEPRECATED}


@pytest.mark.parametrize("ours, theirs", COUNTERPARTS, ids=lambda c: c.__name__)
def test_constructors_add_at_most_three_parameters(ours, theirs):
    added = set(_parameters(ours)) - set(_parameters(theirs)) - _deprecated(ours)
    assert len(added) <= 3, added
    assert added <= ALLOWED | OWN.get(ours.__name__, set()), added


def test_the_deprecated_keywords_are_the_ones_documented():
    assert _deprecated(fastkpca.KernelRidge) == {"tol", "max_iter", "preconditioner_rank", "preconditioner_dtype",
                                                 "cg_precision", "n_landmarks", "landmarks", "random_state",
                                                 "verbose", "callback"}
    assert _deprecated(fastkpca.GaussianProcessRegressor) == {
        "n_probes", "tol", "final_tol", "preconditioner_rank", "max_iter", "preconditioner_dtype", "subset_start",
        "theta_tol", "likelihood_rtol"}
    assert _deprecated(fastkpca.GaussianProcessClassifier) == {"n_probes", "preconditioner_rank", "subset_start",
                                                               "likelihood_rtol"}
    assert _deprecated(fastkpca.KernelPCA) == {"n_landmarks", "landmarks", "verbose", "callback"}
    assert _deprecated(fastkpca.SpectralEmbedding) == {"n_landmarks", "landmarks", "verbose", "callback"}
    assert _deprecated(fastkpca.SpectralClustering) == {"n_landmarks", "landmarks", "callback"}


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    return X, np.sin(X[:, 0]) + 0.05 * rng.standard_normal(n)


#: (an estimator with a solver object, the nested parameter to change, its new value).
NESTED = [
    (fastkpca.KernelRidge(kernel="rbf", solver=CG(tol=1e-10, random_state=0)), "solver__tol", 1e-6),
    (fastkpca.KernelRidge(kernel="rbf", solver=Nystrom(n_landmarks=50)), "solver__landmarks", "uniform"),
    (fastkpca.KernelPCA(2, kernel="rbf", eigen_solver=Nystrom(n_landmarks=40)), "eigen_solver__n_landmarks", 30),
    (fastkpca.GaussianProcessRegressor(solver=CG(n_probes=8)), "solver__n_probes", 12),
    (fastkpca.GaussianProcessClassifier(solver=CG(n_probes=8)), "solver__subset_start", 0),
    (fastkpca.SpectralEmbedding(affinity="rbf", eigen_solver=Nystrom(n_landmarks=40)), "eigen_solver__landmarks",
     "uniform"),
    (fastkpca.SpectralClustering(2, eigen_solver=Nystrom(n_landmarks=40)), "eigen_solver__n_landmarks", 60),
]


@pytest.mark.parametrize("estimator, name, value", NESTED, ids=lambda e: type(e).__name__)
def test_nested_parameters_round_trip(estimator, name, value):
    params = estimator.get_params(deep=True)
    parameter, setting = name.split("__")
    assert params[name] == getattr(getattr(estimator, parameter), setting)
    twin = clone(estimator)
    assert twin.get_params(deep=True).keys() == params.keys()
    assert getattr(twin, parameter) is not getattr(estimator, parameter)  # cloned, not shared
    assert repr(getattr(twin, parameter)) == repr(getattr(estimator, parameter))
    twin.set_params(**{name: value})
    assert twin.get_params(deep=True)[name] == value
    assert estimator.get_params(deep=True)[name] == params[name]  # the original untouched
    assert f"{parameter}={type(getattr(estimator, parameter)).__name__}(" in repr(estimator)
    assert repr(pickle.loads(pickle.dumps(twin))) == repr(twin)


def _fits(make, X, y=None):
    return make().fit(X) if y is None else make().fit(X, y)


#: (the old spelling, the new one, what to compare): the same fit, bit for bit.
SPELLINGS = [
    (lambda: fastkpca.KernelRidge(alpha=0.1, kernel="rbf", solver="cg", tol=1e-10, preconditioner_rank=40,
                                  cg_precision="float64", random_state=0),
     lambda: fastkpca.KernelRidge(alpha=0.1, kernel="rbf", solver=CG(tol=1e-10, preconditioner_rank=40,
                                                                      precision="float64", random_state=0)),
     "dual_coef_", True),
    (lambda: fastkpca.KernelRidge(alpha=0.1, kernel="rbf", solver="nystrom", n_landmarks=60, landmarks="uniform",
                                  random_state=1),
     lambda: fastkpca.KernelRidge(alpha=0.1, kernel="rbf", solver=Nystrom(n_landmarks=60, landmarks="uniform",
                                                                           random_state=1)),
     "dual_coef_", True),
    (lambda: fastkpca.KernelPCA(3, kernel="rbf", eigen_solver="nystrom", n_landmarks=60, random_state=0),
     lambda: fastkpca.KernelPCA(3, kernel="rbf", eigen_solver=Nystrom(n_landmarks=60), random_state=0),
     "eigenvectors_", False),
    (lambda: fastkpca.GaussianProcessRegressor(RBF(1.0) + WhiteKernel(0.1), solver="cg", n_probes=8, tol=1e-3,
                                               subset_start=0, optimizer=None, random_state=0),
     lambda: fastkpca.GaussianProcessRegressor(RBF(1.0) + WhiteKernel(0.1), solver=CG(n_probes=8, tol=1e-3,
                                                                                      subset_start=0),
                                               optimizer=None, random_state=0),
     "alpha_", True),
    (lambda: fastkpca.SpectralEmbedding(2, affinity="rbf", eigen_solver="nystrom", n_landmarks=50, random_state=0),
     lambda: fastkpca.SpectralEmbedding(2, affinity="rbf", eigen_solver=Nystrom(n_landmarks=50), random_state=0),
     "embedding_", False),
]


@pytest.mark.parametrize("old, new, attribute, supervised", SPELLINGS, ids=lambda o: getattr(o, "__name__", None))
def test_old_keywords_warn_with_the_new_spelling_and_fit_the_same(old, new, attribute, supervised):
    X, y = _data()
    with pytest.warns(FutureWarning, match=r"is deprecated .* pass (eigen_)?solver=fastkpca\.(CG|Nystrom)\(") as w:
        before = _fits(old, X, y if supervised else None)
    assert all(str(x.filename) == __file__ for x in w if issubclass(x.category, FutureWarning)), \
        [x.filename for x in w]  # the warning points at the user's call
    after = _fits(new, X, y if supervised else None)
    np.testing.assert_array_equal(getattr(before, attribute), getattr(after, attribute))


def test_a_classifiers_old_keywords_fit_the_same():
    X, y = _data(120)
    with pytest.warns(FutureWarning, match=r"pass solver=fastkpca\.CG\(n_probes=8\)") as w:
        old = fastkpca.GaussianProcessClassifier(solver="cg", n_probes=8, optimizer=None, random_state=0).fit(X, y > 0)
    assert all(str(x.filename) == __file__ for x in w if issubclass(x.category, FutureWarning))
    new = fastkpca.GaussianProcessClassifier(solver=CG(n_probes=8), optimizer=None, random_state=0).fit(X, y > 0)
    np.testing.assert_array_equal(old.predict_proba(X), new.predict_proba(X))


def test_settings_a_family_does_not_read_are_refused_by_name():
    X, y = _data(60)
    with pytest.raises(ValueError, match="KernelRidge does not read CG's n_probes"):
        fastkpca.KernelRidge(solver=CG(n_probes=8)).fit(X, y)
    with pytest.raises(ValueError, match="GaussianProcessRegressor does not read CG's precision, random_state"):
        fastkpca.GaussianProcessRegressor(solver=CG(precision="mixed", random_state=0)).fit(X, y)
    with pytest.raises(ValueError, match="GaussianProcessClassifier does not read CG's tol"):
        fastkpca.GaussianProcessClassifier(solver=CG(tol=1e-3)).fit(X, y > 0)
    with pytest.raises(ValueError, match="KernelPCA does not read Nystrom's random_state"):
        fastkpca.KernelPCA(2, eigen_solver=Nystrom(random_state=0)).fit(X)
    # a setting at its default is not "given": CG(max_iter=1000) is CG()
    fastkpca.KernelRidge(solver=CG(max_iter=1000)).fit(X, y)


def test_a_wrong_solver_is_refused_by_name():
    X, y = _data(60)
    with pytest.raises(ValueError, match="GaussianProcessRegressor's solver takes .*\\(CG\\), got Nystrom"):
        fastkpca.GaussianProcessRegressor(solver=Nystrom()).fit(X, y)
    with pytest.raises(ValueError, match="KernelPCA's eigen_solver takes .* got CG"):
        fastkpca.KernelPCA(2, eigen_solver=CG()).fit(X)
    with pytest.raises(TypeError, match="KernelRidge's solver takes"):
        fastkpca.KernelRidge(solver=3).fit(X, y)
    with pytest.raises(ValueError, match="solver must be one of"):
        fastkpca.KernelRidge(solver="lu").fit(X, y)
    with pytest.raises(ValueError, match="CG's tol"):
        fastkpca.KernelRidge(solver=CG(tol=-1.0)).fit(X, y)
    with pytest.raises(TypeError, match="CG's max_iter"):
        fastkpca.KernelRidge(solver=CG(max_iter=2.5)).fit(X, y)
    with pytest.raises(ValueError, match="Nystrom's n_landmarks"):
        fastkpca.SpectralEmbedding(affinity="rbf", eigen_solver=Nystrom(n_landmarks=0)).fit(X)


def test_a_setting_given_twice_is_refused_and_one_given_once_applies():
    X, y = _data(60)
    with pytest.raises(ValueError, match="tol given twice"), pytest.warns(FutureWarning):
        fastkpca.KernelRidge(kernel="rbf", solver=CG(tol=1e-3), tol=1e-4).fit(X, y)
    # scikit-learn's set_random_state sets random_state on every estimator that has one: it joins the object's
    # settings (with the deprecation's warning) where the object has none of its own
    with pytest.warns(FutureWarning, match=r"KernelRidge\(random_state=...\)"):
        joined = fastkpca.KernelRidge(kernel="rbf", solver=CG(tol=1e-10), random_state=3).fit(X, y)
    alone = fastkpca.KernelRidge(kernel="rbf", solver=CG(tol=1e-10, random_state=3)).fit(X, y)
    np.testing.assert_array_equal(joined.dual_coef_, alone.dual_coef_)


def test_a_setting_changed_after_the_fit_applies_where_it_is_read_then():
    """likelihood_rtol is read when log_marginal_likelihood is called: set_params(solver__likelihood_rtol=...)
    after the fit changes what the next call aims for."""
    X, y = _data(200)
    model = fastkpca.GaussianProcessRegressor(RBF(1.0) + WhiteKernel(0.1), optimizer=None, random_state=0,
                                              solver=CG(preconditioner_rank=8, likelihood_rtol=None)).fit(X, y)
    theta = model.kernel_.theta + 0.1
    model.log_marginal_likelihood(theta)
    assert len(model.log_marginal_likelihood_info_["rounds"]) == 1
    model.set_params(solver__likelihood_rtol=model.log_marginal_likelihood_info_["relative_standard_error"] / 3)
    model.log_marginal_likelihood(theta)
    assert len(model.log_marginal_likelihood_info_["rounds"]) > 1


# ------------------------------------------------------------------------------------------------- progress


def test_progress_reports_every_fit_inside_its_block(capsys):
    X, y = _data(400)
    stages = []
    with fastkpca.progress(verbose=1, callback=lambda stage, info: stages.append(stage)):
        fastkpca.KernelRidge(kernel="rbf", solver=CG()).fit(X, y)
        fastkpca.KernelPCA(2, kernel="rbf", eigen_solver="lanczos").fit(X)
    assert "iteration" in stages and "pass" in stages and stages.count("done") == 2
    err = capsys.readouterr().err
    assert "[KernelRidge] done" in err and "[KernelPCA] done" in err
    fastkpca.KernelPCA(2, kernel="rbf", eigen_solver="lanczos").fit(X)  # outside: nothing
    assert capsys.readouterr().err == "" and stages.count("done") == 2


def test_progress_blocks_nest_and_restore():
    X, _ = _data(100)
    outer, inner = [], []
    with fastkpca.progress(verbose=0, callback=lambda stage, info: outer.append(stage)):
        with fastkpca.progress(verbose=0, callback=lambda stage, info: inner.append(stage)):
            fastkpca.KernelPCA(2, kernel="rbf").fit(X)
        assert outer == [] and inner[-1] == "done"
        fastkpca.KernelPCA(2, kernel="rbf").fit(X)
    assert outer[-1] == "done" and inner.count("done") == 1


def test_progress_checks_its_arguments():
    with pytest.raises(ValueError, match="verbose"), fastkpca.progress(verbose=-1):
        pass
    with pytest.raises(TypeError, match="callback"), fastkpca.progress(callback="print"):
        pass


def test_the_old_progress_keywords_warn_and_still_report(capsys):
    X, y = _data(100)
    stages = []
    with pytest.warns(FutureWarning, match=r"KernelPCA\(callback=...\) is deprecated.*fastkpca\.progress"):
        fastkpca.KernelPCA(2, kernel="rbf", callback=lambda stage, info: stages.append(stage)).fit(X)
    assert stages[-1] == "done"
    with pytest.warns(FutureWarning, match=r"KernelRidge\(verbose=...\)"):
        fastkpca.KernelRidge(kernel="rbf", verbose=1).fit(X, y)
    assert "[KernelRidge] done" in capsys.readouterr().err
    with pytest.warns(FutureWarning, match=r"SpectralClustering\(callback=...\)"):
        fastkpca.SpectralClustering(2, callback=lambda stage, info: None, random_state=0).fit(X)
