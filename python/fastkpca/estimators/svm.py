"""Support vector machines: drop-ins for scikit-learn's SVC, NuSVC, SVR, NuSVR and OneClassSVM with LIBSVM's
answers, their duals solved by the native core's batched SMO (solvers/svm) on any of fastkpca's kernels."""

from __future__ import annotations

import functools
import numbers
import warnings
from typing import Any, Callable

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, OutlierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils.metaestimators import available_if

from .. import engines, kernels
from .. import _validation as v
from .._sklearn_compat import check_is_fitted
from ..solvers import svm
from ..solvers.svm import fitted, one_vs_one, probability
from ._base import Reporting, parameter_defaults

__all__ = ["SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM"]

#: The kernel names: scikit-learn's (linear, poly, rbf, sigmoid, precomputed) and fastkpca's native ones.
_KERNELS = kernels.KERNEL_NAMES


def _sklearn_deprecates_probability() -> bool:
    """scikit-learn 1.9 deprecated SVC's and NuSVC's ``probability`` (to be removed in 1.11)."""
    import sklearn

    major, minor = (int(part) for part in sklearn.__version__.split(".")[:2])
    return (major, minor) >= (1, 9)


def _positive(value, name):
    """A real number > 0 (infinity allowed: C = inf is a hard margin)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")


def _megabytes(value, name):
    if value is not None:
        _positive(value, name)


def _nu(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    if not 0 < value <= 1:
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")


def _gamma(value, name):
    if isinstance(value, str):
        v.check_choice(value, name, ("scale", "auto"))
        return
    v.check_real(value, name, minimum=0.0)


def _class_weight(value, name):
    if value is None or isinstance(value, dict):
        return
    if isinstance(value, str):
        v.check_choice(value, name, ("balanced",))
        return
    raise TypeError(f"{name} must be 'balanced', a dict or None, got {value!r}")


def _probability(value, name):
    if not v.left_deprecated(value):
        v.flag(value, name)


def _verbose(value, name):
    if not isinstance(value, (bool, np.bool_, numbers.Integral)):
        raise TypeError(f"{name} must be a bool or an int, got {value!r}")


_COMMON = {
    "kernel": kernels.constraint(*_KERNELS), "degree": v.integer(0), "gamma": _gamma, "coef0": v.real(),
    "tol": _positive, "shrinking": v.flag, "cache_size": _megabytes, "verbose": _verbose,
    "max_iter": v.integer(-1), "memory_limit": v.anything, "n_jobs": v.jobs,
}


def _plain_labels(y) -> bool:
    """y is class labels that scikit-learn's checks (``column_or_1d``, ``check_classification_targets``) take as
    they are: a 1-D NumPy array of integers or booleans, or of finite floats that are all whole numbers (labels
    by type_of_target: "binary" or "multiclass"). Anything else goes through those checks."""
    if type(y) is not np.ndarray or y.ndim != 1 or y.dtype.kind not in "biuf":
        return False
    if y.dtype.kind != "f":
        return True
    with np.errstate(invalid="ignore", over="ignore"):  # type_of_target's test: equal to themselves cast to int
        return bool(np.isfinite(y).all()) and bool((y == y.astype(int)).all())


class _BaseSVM(Reporting, BaseEstimator):
    """What the five estimators share: validation, the kernel, the solve, the fitted decision function. Each
    estimator says which of LIBSVM's formulations it fits by its ``_formulation()`` (solvers/svm/formulation.py)."""

    _constraints: dict = {}

    def _formulation(self) -> svm.Formulation:
        """The dual this estimator fits, from its (validated) parameters."""
        raise NotImplementedError

    def _require_y(self, y) -> None:
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None.")

    # ------------------------------------------------------------------------------------------ fit

    def _settings(self, threads: int) -> svm.DualSettings:
        """The solver's settings this estimator sets (the memory plan sizes the cache)."""
        progress = None
        if self._wants_progress():
            def progress(figures):
                self._report("iteration", iterations=int(figures["iterations"]), passes=int(figures["outer_steps"]),
                             residual=float(figures["gap"]), columns=int(figures["columns"]))
        return svm.DualSettings(tol=float(self.tol), max_iter=int(self.max_iter), shrinking=bool(self.shrinking),
                                threads=threads, progress=progress)

    def _validate_training(self, X, y, *, classifier: bool):
        """(samples, y or None, the samples' kernel, n): scikit-learn's checks and errors. A callable kernel of two
        sets of samples reads them as given (strings, ...)."""
        v.check_params(self, self._constraints)
        if y is not None:
            v.check_same_length(X, y)
        vectors = kernels.takes_vectors(self.kernel, callable_of_sets=True)
        samples, _ = engines.select(X).fit_samples(self, X, accept_sparse="csr", vector_input=vectors)
        fitted.check_training(self.kernel, samples)
        n = samples.shape[0]
        if y is not None:
            y = self._validate_targets(y, n, classifier=classifier)
        self._gamma = fitted.gamma_of(self.kernel, self.gamma, samples)
        kernel = samples.bind(kernels.make(self.kernel, gamma=self._gamma, degree=self.degree, coef0=self.coef0,
                                           n_features=samples.shape[-1], n_jobs=self.n_jobs, callable_of_sets=True))
        self.shape_fit_ = tuple(samples.shape)
        return samples, y, kernel, n

    def _validate_targets(self, y, n: int, *, classifier: bool):
        from sklearn.utils.validation import column_or_1d

        plain = _plain_labels(y) if classifier else False
        y = y if plain else column_or_1d(y, warn=True)
        if y.shape[0] != n:
            raise ValueError(f"X and y have incompatible shapes.\nX has {n} samples, but y has {y.shape[0]}.")
        if classifier:
            from sklearn.utils.class_weight import compute_class_weight
            from sklearn.utils.multiclass import check_classification_targets

            if not plain:
                check_classification_targets(y)
            classes, labels = np.unique(y, return_inverse=True)
            # scikit-learn's weights for class_weight=None, without its parameter validation (50 µs a fit)
            self.class_weight_ = (np.ones(classes.shape[0], dtype=np.float64) if self.class_weight is None
                                  else compute_class_weight(self.class_weight, classes=classes, y=y))
            if classes.shape[0] < 2:
                raise ValueError(f"The number of classes has to be greater than one; got {classes.shape[0]} class")
            self.classes_ = classes
            return labels.astype(np.int64)
        return v.check_targets(y, n)

    def _finish_fit(self, samples, kernel, support, n_support, dual_coef, intercept, iterations, status) -> None:
        self._support_set = fitted.SupportSet(kernel, samples, support)
        self._sparse = self._support_set.sparse
        self.support_ = np.asarray(support, dtype=np.int32)
        self.support_vectors_ = self._support_set.vectors
        self._n_support = np.asarray(n_support, dtype=np.int32)
        self._intercept_ = np.asarray(intercept, dtype=np.float64)
        if not (np.isfinite(self._intercept_).all() and np.isfinite(dual_coef).all()):
            raise ValueError("The dual coefficients or intercepts are not finite. The input data may contain large "
                             "values and need to be preprocessed.")
        self._dual_coef_ = self._support_set.layout(dual_coef)
        self.fit_status_ = int(status)
        if self.fit_status_:
            warnings.warn(f"Solver terminated early (max_iter={self.max_iter}).  Consider pre-processing your data "
                          "with StandardScaler or MinMaxScaler.", ConvergenceWarning, stacklevel=3)
        self._report("done", iterations=int(np.sum(iterations)), support_vectors=int(self.support_.shape[0]))

    # ------------------------------------------------------------------------------------- predict

    def _coefficients(self) -> np.ndarray:
        """The decision functions' coefficients over the support vectors, (n_SV, k)."""
        return fitted.dense(self._dual_coef_).T

    def _decision_values(self, X, finish=None):
        """LIBSVM's decision values (n, k): K(X, SV)·V + intercept, by one fused pass, then ``finish`` of them (a
        picklable function: an engine applies the whole map to its chunks)."""
        check_is_fitted(self)
        vectors = kernels.takes_vectors(self.kernel, callable_of_sets=True)
        engine = engines.select(X)
        X = engine.new_samples(self, X, accept_sparse="csr", vector_input=vectors)
        sv = self.support_vectors_
        if not self._sparse and sv.size > 0 and self.n_support_.sum() != sv.shape[0]:
            raise ValueError(f"The internal representation of {type(self).__name__} was altered")
        V = self._coefficients()
        support = np.asarray(self.support_, dtype=np.int64)
        if V.shape[0] != support.shape[0]:
            raise ValueError(f"The internal representation of {type(self).__name__} was altered")
        # the limit bounds only the chunks of a kernel evaluated in Python: None (no probe) gives their default size
        limit = None if self.memory_limit is None else v.memory_limit(self.memory_limit)
        rowmap = fitted.DecisionMap(self._support_of(), support, V, self._intercept_, type(self).__name__, limit,
                                    finish)
        return engine.apply(rowmap, X)

    def _support_of(self):
        """The support vectors the decision function evaluates its kernel against: the fit's, or, where the fitted
        attributes were written rather than fitted (a model rebuilt from JSON or PMML, as scikit-learn's users do:
        ``support_vectors_``, ``_dual_coef_``, ``_intercept_``, ``_n_support``, ``_gamma``, ``shape_fit_``, ...) or
        ``support_vectors_`` replaced since the fit, made from those attributes, as scikit-learn's predict reads
        them."""
        held = self.__dict__.get("_support_set")
        if held is not None and (held.samples is None or held.all_fitted or held.samples is self.support_vectors_):
            return held
        sv = self.support_vectors_
        kernel = kernels.make(self.kernel, gamma=self._gamma, degree=self.degree, coef0=self.coef0,
                              n_features=sv.shape[-1] if getattr(sv, "ndim", 1) > 1 else 1, n_jobs=self.n_jobs,
                              callable_of_sets=True)
        self._support_set = fitted.SupportSet.of_vectors(kernel, sv, self.shape_fit_[0], type(self).__name__)
        return self._support_set

    @property
    def n_support_(self):
        """Number of support vectors for each class (one entry for regression and one-class)."""
        try:
            check_is_fitted(self)
        except NotFittedError:
            raise AttributeError("n_support_") from None
        return self._support_counts()

    def _support_counts(self) -> np.ndarray:
        """The support vectors per class: scikit-learn keeps the one count twice (LIBSVM's layout of two classes),
        and shows the first."""
        return np.array([self._n_support[0]])

    @property
    def coef_(self):
        """Weights of the features in the primal (a linear kernel only), read-only."""
        check_is_fitted(self)
        coef = self._support_of().primal(self._primal_weights())
        (coef.data if hasattr(coef, "nnz") else coef).flags.writeable = False
        return coef

    def _primal_weights(self) -> np.ndarray:
        return fitted.dense(self._dual_coef_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = kernels.takes_matrix(self.kernel)
        tags.input_tags.sparse = not kernels.takes_matrix(self.kernel)
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"pairwise": kernels.takes_matrix(self.kernel)}


class _BaseSVC(ClassifierMixin, _BaseSVM):
    """The classifiers: one-vs-one over class pairs, probabilities by Platt scaling and pairwise coupling."""

    def fit(self, X, y, sample_weight=None):
        """Fit the support vector classifier.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features) or (n_samples, n_samples)
            Training vectors, or the kernel matrix with ``kernel="precomputed"`` (any samples a callable kernel
            reads).
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights: they rescale C per sample; samples of weight <= 0 are left out.

        Returns
        -------
        self : object
        """
        self._require_y(y)
        self._effective_probability = self._probability_requested()
        samples, labels, kernel, n = self._validate_training(X, y, classifier=True)
        w = np.ones(n) if sample_weight is None else v.check_sample_weight(sample_weight, n)  # <= 0: left out
        k = self.classes_.shape[0]
        formulation = self._formulation()
        keep = formulation.kept(w, labels)  # LIBSVM leaves out bounds of 0
        formulation.check(labels, w, keep, k)
        if not keep.any():
            raise ValueError("Invalid input - all samples have zero or negative weights.")
        empty = [c for c in range(k) if not keep[labels == c].any()]
        if empty:
            raise ValueError(f"class {self.classes_[empty[0]].item()!r} has no sample with a positive weight "
                             "(sample_weight times class_weight): every class needs one")
        labels = np.where(keep, labels, -1)
        if self.verbose:
            print("[LibSVM]", end="")
        limit = v.memory_limit(self.memory_limit)
        sources = fitted.ColumnSources(kernel, samples, limit)
        problem = one_vs_one.Pairs(sources, labels, k, formulation, upper=formulation.bounds(w, labels))
        settings = self._settings(v.n_threads(self.n_jobs))
        if self._effective_probability:
            self._probA, self._probB = problem.platt(settings, limit, self.cache_size,
                                                     probability.seed_source(self.random_state))
        else:
            self._probA = self._probB = np.empty(0)
        pairs = problem.fit(settings, limit, self.cache_size)
        support, n_support, dual_coef, rho = one_vs_one.pack(pairs, labels, k)
        self.n_iter_ = np.array([p.solution.iterations for p in pairs], dtype=np.int32)
        self._num_iter = self.n_iter_
        self._finish_fit(samples, kernel, support, n_support, dual_coef, -rho, self.n_iter_,
                         max(p.solution.status for p in pairs))
        self.solver_info_ = {"pairs": [p.solution.stats for p in pairs], "side_by_side": problem.side_by_side,
                             "choice": one_vs_one.largest(pairs).solution.stats["choice"]}
        sign = -1 if k == 2 else 1  # scikit-learn's binary model: the second class positive
        self.intercept_ = sign * self._intercept_
        self.dual_coef_ = sign * self._dual_coef_
        return self

    def _support_counts(self) -> np.ndarray:
        return self._n_support

    def _probability_requested(self) -> bool:
        if v.left_deprecated(self.probability):
            return False
        if _sklearn_deprecates_probability():
            name = type(self).__name__
            warnings.warn(f"The `probability` parameter was deprecated in 1.9 and will be removed in version 1.11 (as "
                          f"scikit-learn deprecated it; fastkpca's {name} keeps it). Use "
                          f"`CalibratedClassifierCV({name}(), ensemble=False)` instead of `{name}(probability=True)`",
                          FutureWarning, stacklevel=3)
        return bool(self.probability)

    def _coefficients(self) -> np.ndarray:
        dual = fitted.dense(self._dual_coef_)
        n_support = np.asarray(self._n_support)
        if n_support.shape[0] != self.classes_.shape[0] or n_support.sum() != dual.shape[1] or (n_support < 0).any():
            raise ValueError(f"The internal representation of {type(self).__name__} was altered")
        return one_vs_one.pair_weights(dual, n_support)

    def decision_function(self, X):
        """Evaluate the decision function for the samples in X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (for ``kernel="precomputed"``, their kernel against the training samples).

        Returns
        -------
        X : ndarray of shape (n_samples, n_classes * (n_classes - 1) / 2), (n_samples, n_classes) or (n_samples,)
            Every pair's decision values (``decision_function_shape="ovo"``), scikit-learn's one-vs-rest shape of
            them (``"ovr"``, more than two classes), or for two classes one value per sample, positive for the
            second class.
        """
        check_is_fitted(self)
        return self._decision_values(X, functools.partial(one_vs_one.decision_shape, n_classes=self.classes_.shape[0],
                                                          shape=self.decision_function_shape))

    def predict(self, X):
        """Perform classification on samples in X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features) or (n_samples_test, n_samples_train)
            The samples (for ``kernel="precomputed"``, their kernel against the training samples).

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Class labels: LIBSVM's one-vs-one vote (ties to the lower class), or with ``break_ties`` the largest
            one-vs-rest decision value.
        """
        check_is_fitted(self)
        if self.break_ties and self.decision_function_shape == "ovo":
            raise ValueError("break_ties must be False when decision_function_shape is 'ovo'")
        return self._decision_values(X, functools.partial(one_vs_one.labels, classes=self.classes_,
                                                          break_ties=self.break_ties,
                                                          shape=self.decision_function_shape))

    def _check_proba(self):
        if v.left_deprecated(self.probability) or not self.probability:
            raise AttributeError("predict_proba is not available when probability=False")
        return True

    @available_if(_check_proba)
    def predict_proba(self, X):
        """Compute probabilities of possible outcomes for samples in X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (for ``kernel="precomputed"``, their kernel against the training samples).

        Returns
        -------
        T : ndarray of shape (n_samples, n_classes)
            Probabilities of the classes in the order of ``classes_``: every pair's Platt sigmoid of its decision
            value, coupled (Wu, Lin & Weng's second method).
        """
        check_is_fitted(self)
        if self._probA.size == 0 or self._probB.size == 0:
            raise NotFittedError("predict_proba is not available when fitted with probability=False")
        return self._decision_values(X, functools.partial(probability.class_probabilities, prob_a=self._probA,
                                                          prob_b=self._probB, n_classes=self.classes_.shape[0]))

    @available_if(_check_proba)
    def predict_log_proba(self, X):
        """Compute log probabilities of possible outcomes for samples in X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        T : ndarray of shape (n_samples, n_classes)
        """
        return np.log(self.predict_proba(X))

    @property
    def probA_(self):
        """Platt's A of every pair (``probability=True``)."""
        self._warn_platt_attribute("probA_")
        return self._probA

    @property
    def probB_(self):
        """Platt's B of every pair (``probability=True``)."""
        self._warn_platt_attribute("probB_")
        return self._probB

    def _warn_platt_attribute(self, name: str) -> None:
        if _sklearn_deprecates_probability():
            warnings.warn(f"Attribute `{name}` was deprecated in version 1.9 and will be removed in 1.11 as the "
                          "`probability=True` option for SVC and NuSVC was deprecated (as in scikit-learn; fastkpca "
                          "keeps both).", FutureWarning, stacklevel=3)

    def _primal_weights(self) -> np.ndarray:
        dual = fitted.dense(self.dual_coef_)
        return dual if dual.shape[0] == 1 else one_vs_one.pair_weights(dual, np.asarray(self._n_support)).T


class _BaseSingle(_BaseSVM):
    """SVR, NuSVR and OneClassSVM: one dual over every sample."""

    def _fit_single(self, X, y, sample_weight):
        formulation = self._formulation()
        if formulation.uses_targets:
            self._require_y(y)
        samples, y, kernel, n = self._validate_training(X, y, classifier=False)
        w = np.ones(n) if sample_weight is None else v.check_sample_weight(sample_weight, n)  # <= 0: left out
        keep = np.flatnonzero(formulation.kept(w))
        if keep.size == 0:
            raise ValueError("Invalid input - all samples have zero or negative weights.")
        if self.verbose:
            print("[LibSVM]", end="")
        limit = v.memory_limit(self.memory_limit)
        sources = fitted.ColumnSources(kernel, samples, limit)
        settings = self._settings(v.n_threads(self.n_jobs))
        solution = svm.solve_planned(sources, formulation, keep, settings, limit, self.cache_size,
                                     upper=formulation.bounds(w)[keep], targets=None if y is None else y[keep])
        nonzero = solution.coef != 0
        self.n_iter_ = solution.iterations
        self._num_iter = np.array([self.n_iter_], dtype=np.int32)
        self._probA = self._probB = np.empty(0)
        # scikit-learn's wrapper counts a one-model fit's support vectors twice ([n_SV, n_SV]): LIBSVM's layout of two
        # classes, which the one-class and regression models are taken to have
        self._finish_fit(samples, kernel, keep[nonzero], [np.count_nonzero(nonzero)] * 2,
                         solution.coef[nonzero][None, :], [-solution.rho], [solution.iterations], solution.status)
        self.solver_info_ = dict(solution.stats)
        self.dual_coef_ = self._dual_coef_
        self.intercept_ = self._intercept_.copy()
        return self

    def predict(self, X):
        """Predict for the samples in X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The samples (for ``kernel="precomputed"``, their kernel against the training samples).

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return self._decision_values(X, np.ravel)


_CLASSIFIER = {**_COMMON, "class_weight": _class_weight, "probability": _probability,
               "decision_function_shape": v.choice("ovo", "ovr"), "break_ties": v.flag, "random_state": v.anything}


@parameter_defaults
class SVC(_BaseSVC):
    """C-Support Vector Classification: a drop-in for sklearn.svm.SVC with LIBSVM's answers.

    The dual (LIBSVM's C-SVC) is solved by the native core's batched SMO: working sets of up to 256 variables,
    their kernel columns evaluated together by the fused micro-kernel on every core, the subproblem solved by
    LIBSVM's second-order SMO in cache, the gradient updated by one product; to LIBSVM's stopping rule (the
    maximal violating pair's gap below ``tol``), so the model is LIBSVM's to within it. A problem of few enough
    variables is instead one working set, LIBSVM's own iteration on the whole kernel matrix, when its every column
    fits the cache (the library's cost model decides, solvers/choice.py). Multi-class problems are one-vs-one, the
    pairs scheduled over the cores.

    Parameters
    ----------
    C : float, default=1.0
        Regularization (> 0, ``np.inf`` allowed); sample and class weights rescale it per sample.
    kernel : str, callable or kernel object, default="rbf"
        "linear", "poly", "rbf", "sigmoid" (as scikit-learn's), fastkpca's other native kernels ("laplacian",
        "matern12", "matern32", "matern52", "cosine"), "precomputed" (X is the kernel matrix), a callable of two
        sets of samples returning their kernel matrix (evaluated once, whole), or a kernel object.
    degree : int, default=3
        Degree of "poly".
    gamma : {"scale", "auto"} or float, default="scale"
        "scale": 1 / (n_features · X.var()); "auto": 1 / n_features.
    coef0 : float, default=0.0
        Independent term of "poly" and "sigmoid".
    shrinking : bool, default=True
        LIBSVM's shrinking: rows whose variables are settled at a bound are dropped from the column passes, their
        gradient rebuilt before the final check.
    probability : bool, default="deprecated" (False)
        Fit Platt's sigmoids on 5-fold cross-validated decision values (five more fits per pair) for
        :meth:`predict_proba`. scikit-learn 1.9 deprecated it and warns when it is set; so does this class, which
        keeps it.
    tol : float, default=1e-3
        Stopping tolerance: the maximal violating pair's gap.
    cache_size : float, default=None
        Megabytes of kernel columns kept between working sets (LIBSVM's cache), within ``memory_limit``. None:
        every column of a problem taken as one working set, three working sets of columns of a larger one (fresh
        memory can cost more than evaluating the columns again; LIBSVM's default is 200).
    class_weight : dict or "balanced", default=None
        Per-class factors of C.
    verbose : bool, default=False
        Print "[LibSVM]" and the solver's progress.
    max_iter : int, default=-1
        SMO steps in all (-1: no limit); reaching it warns with a ConvergenceWarning.
    decision_function_shape : {"ovo", "ovr"}, default="ovr"
    break_ties : bool, default=False
        With "ovr" and more than two classes, predict by the largest decision value instead of the vote.
    random_state : int, RandomState instance or None, default=None
        Seeds the probability folds.
    memory_limit : int or str, default=None
        Bytes the solve may use (None: 80% of the available memory): the working copy of the samples, the solver's
        arrays and the column cache, checked before anything is allocated.
    n_jobs : int, default=None
        Threads (None: OpenMP's default).

    Attributes
    ----------
    support_, support_vectors_, n_support_, dual_coef_, intercept_, coef_, classes_, class_weight_, fit_status_,
    n_iter_, probA_, probB_, shape_fit_, n_features_in_, feature_names_in_
        As scikit-learn's (``support_`` indexes the training samples as given, also when sample weights of 0 left
        some out).
    solver_info_ : dict
        Every pair's solver figures (``"pairs"``): SMO steps, outer steps, kernel columns evaluated, seconds per
        stage, and ``"choice"``: the whole problem as one working set or working sets, with each one's predicted
        seconds and bytes (solvers/choice.py); ``"choice"`` itself is the largest pair's.

    Examples
    --------
    >>> import numpy as np
    >>> from fastkpca import SVC
    >>> X = np.array([[-1, -1], [-2, -1], [1, 1], [2, 1]], dtype=float)
    >>> y = np.array([1, 1, 2, 2])
    >>> SVC(kernel="linear").fit(X, y).predict([[-0.8, -1]])
    array([1])
    """

    _constraints = {**_CLASSIFIER, "C": _positive}

    def __init__(self, *, C: float = 1.0, kernel: str | Callable[..., Any] | Any = "rbf", degree: int = 3,
                 gamma: str | float = "scale", coef0: float = 0.0, shrinking: bool = True,
                 probability: bool | str = v.DEPRECATED, tol: float = 1e-3, cache_size: float | None = None,
                 class_weight: dict | str | None = None, verbose: bool = False, max_iter: int = -1,
                 decision_function_shape: str = "ovr", break_ties: bool = False,
                 random_state: int | np.random.RandomState | None = None, memory_limit: int | str | None = None,
                 n_jobs: int | None = None):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.probability = probability
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.random_state = random_state
        self.memory_limit = memory_limit
        self.n_jobs = n_jobs

    def _formulation(self) -> svm.Formulation:
        return svm.CClassification(self.C, self.class_weight_)


@parameter_defaults
class NuSVC(_BaseSVC):
    """Nu-Support Vector Classification: a drop-in for sklearn.svm.NuSVC with LIBSVM's answers (see :class:`SVC`
    for the solver and the other parameters).

    Parameters
    ----------
    nu : float, default=0.5
        An upper bound on the fraction of margin errors and a lower bound on the fraction of support vectors, in
        (0, 1]; "specified nu is infeasible" when a pair of classes cannot meet it.
    kernel, degree, gamma, coef0, shrinking, probability, tol, cache_size, class_weight, verbose, max_iter :
        As :class:`SVC` (``class_weight`` is accepted and, as in LIBSVM's ν-SVC, does not enter the dual).
    decision_function_shape, break_ties, random_state, memory_limit, n_jobs :
        As :class:`SVC`.

    Attributes
    ----------
    support_, support_vectors_, n_support_, dual_coef_, intercept_, coef_, classes_, class_weight_, fit_status_,
    n_iter_, probA_, probB_, shape_fit_, n_features_in_, feature_names_in_, solver_info_
        As :class:`SVC`.

    Examples
    --------
    >>> import numpy as np
    >>> from fastkpca import NuSVC
    >>> X = np.array([[-1, -1], [-2, -1], [1, 1], [2, 1]], dtype=float)
    >>> NuSVC(nu=0.5).fit(X, [0, 0, 1, 1]).predict([[1.5, 1]])
    array([1])
    """

    _constraints = {**_CLASSIFIER, "nu": _nu}

    def __init__(self, *, nu: float = 0.5, kernel: str | Callable[..., Any] | Any = "rbf", degree: int = 3,
                 gamma: str | float = "scale", coef0: float = 0.0, shrinking: bool = True,
                 probability: bool | str = v.DEPRECATED, tol: float = 1e-3, cache_size: float | None = None,
                 class_weight: dict | str | None = None, verbose: bool = False, max_iter: int = -1,
                 decision_function_shape: str = "ovr", break_ties: bool = False,
                 random_state: int | np.random.RandomState | None = None, memory_limit: int | str | None = None,
                 n_jobs: int | None = None):
        self.nu = nu
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.probability = probability
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.random_state = random_state
        self.memory_limit = memory_limit
        self.n_jobs = n_jobs

    def _formulation(self) -> svm.Formulation:
        return svm.NuClassification(self.nu)


@parameter_defaults
class SVR(RegressorMixin, _BaseSingle):
    """Epsilon-Support Vector Regression: a drop-in for sklearn.svm.SVR with LIBSVM's answers.

    LIBSVM's ε-SVR dual has two variables per sample over one N-row kernel: the native solver evaluates each
    sample's kernel column once for both (see :class:`SVC` for the solver).

    Parameters
    ----------
    kernel, degree, gamma, coef0, tol :
        As :class:`SVC`.
    C : float, default=1.0
        Regularization (> 0).
    epsilon : float, default=0.1
        The half-width of the tube with no loss (>= 0).
    shrinking, cache_size, verbose, max_iter, memory_limit, n_jobs :
        As :class:`SVC`.

    Attributes
    ----------
    support_, support_vectors_, n_support_, dual_coef_, intercept_, coef_, fit_status_, n_iter_, shape_fit_,
    n_features_in_, feature_names_in_, solver_info_
        As scikit-learn's (``n_iter_`` an int).

    Examples
    --------
    >>> import numpy as np
    >>> from fastkpca import SVR
    >>> X = np.arange(10.0).reshape(-1, 1)
    >>> model = SVR(kernel="linear", C=10.0).fit(X, 2 * X.ravel())
    >>> round(float(model.predict([[4.0]])[0]), 1)
    8.0
    """

    _constraints = {**_COMMON, "C": _positive, "epsilon": v.real(0.0)}

    def __init__(self, *, kernel: str | Callable[..., Any] | Any = "rbf", degree: int = 3,
                 gamma: str | float = "scale", coef0: float = 0.0, tol: float = 1e-3, C: float = 1.0,
                 epsilon: float = 0.1, shrinking: bool = True, cache_size: float | None = None, verbose: bool = False,
                 max_iter: int = -1, memory_limit: int | str | None = None, n_jobs: int | None = None):
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.C = C
        self.epsilon = epsilon
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter
        self.memory_limit = memory_limit
        self.n_jobs = n_jobs

    def _formulation(self) -> svm.Formulation:
        return svm.EpsilonRegression(self.C, self.epsilon)

    def fit(self, X, y, sample_weight=None):
        """Fit the support vector regression.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features) or (n_samples, n_samples)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample factors of C; samples of weight <= 0 are left out.

        Returns
        -------
        self : object
        """
        return self._fit_single(X, y, sample_weight)


@parameter_defaults
class NuSVR(RegressorMixin, _BaseSingle):
    """Nu-Support Vector Regression: a drop-in for sklearn.svm.NuSVR with LIBSVM's answers (see :class:`SVR`).

    Parameters
    ----------
    nu : float, default=0.5
        A bound on the fraction of support vectors and of training errors, in (0, 1]; ε is learned.
    C : float, default=1.0
        Regularization (> 0).
    kernel, degree, gamma, coef0, shrinking, tol, cache_size, verbose, max_iter, memory_limit, n_jobs :
        As :class:`SVC`.

    Attributes
    ----------
    support_, support_vectors_, n_support_, dual_coef_, intercept_, coef_, fit_status_, n_iter_, shape_fit_,
    n_features_in_, feature_names_in_, solver_info_
        As :class:`SVR` (``solver_info_["epsilon"]``: the tube's half-width found).

    Examples
    --------
    >>> import numpy as np
    >>> from fastkpca import NuSVR
    >>> X = np.arange(10.0).reshape(-1, 1)
    >>> model = NuSVR(kernel="linear", C=10.0, nu=0.5).fit(X, 2 * X.ravel())
    >>> round(float(model.predict([[4.0]])[0]), 1)
    8.0
    """

    _constraints = {**_COMMON, "C": _positive, "nu": _nu}

    def __init__(self, *, nu: float = 0.5, C: float = 1.0, kernel: str | Callable[..., Any] | Any = "rbf",
                 degree: int = 3, gamma: str | float = "scale", coef0: float = 0.0, shrinking: bool = True,
                 tol: float = 1e-3, cache_size: float | None = None, verbose: bool = False, max_iter: int = -1,
                 memory_limit: int | str | None = None, n_jobs: int | None = None):
        self.nu = nu
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.tol = tol
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter
        self.memory_limit = memory_limit
        self.n_jobs = n_jobs

    def _formulation(self) -> svm.Formulation:
        return svm.NuRegression(self.C, self.nu)

    def fit(self, X, y, sample_weight=None):
        """Fit the ν-support vector regression.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features) or (n_samples, n_samples)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : object
        """
        return self._fit_single(X, y, sample_weight)


@parameter_defaults
class OneClassSVM(OutlierMixin, _BaseSingle):
    """Unsupervised outlier detection: a drop-in for sklearn.svm.OneClassSVM with LIBSVM's answers (Schölkopf's
    one-class dual; see :class:`SVC` for the solver).

    Parameters
    ----------
    kernel, degree, gamma, coef0, tol :
        As :class:`SVC`.
    nu : float, default=0.5
        An upper bound on the fraction of training errors and a lower bound on the fraction of support vectors,
        in (0, 1].
    shrinking, cache_size, verbose, max_iter, memory_limit, n_jobs :
        As :class:`SVC`.

    Attributes
    ----------
    support_, support_vectors_, n_support_, dual_coef_, intercept_, coef_, offset_, fit_status_, n_iter_,
    shape_fit_, n_features_in_, feature_names_in_, solver_info_
        As scikit-learn's: ``decision_function = score_samples - offset_``.

    Examples
    --------
    >>> import numpy as np
    >>> from fastkpca import OneClassSVM
    >>> X = np.array([[0.0], [0.44], [0.45], [0.46], [1.0]])
    >>> OneClassSVM(gamma="auto").fit(X).predict([[0.45], [5.0]])
    array([ 1, -1])
    """

    _constraints = {**_COMMON, "nu": _nu}

    def __init__(self, *, kernel: str | Callable[..., Any] | Any = "rbf", degree: int = 3,
                 gamma: str | float = "scale", coef0: float = 0.0, tol: float = 1e-3, nu: float = 0.5,
                 shrinking: bool = True, cache_size: float | None = None, verbose: bool = False, max_iter: int = -1,
                 memory_limit: int | str | None = None, n_jobs: int | None = None):
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.nu = nu
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter
        self.memory_limit = memory_limit
        self.n_jobs = n_jobs

    def _formulation(self) -> svm.Formulation:
        return svm.OneClass(self.nu)

    def fit(self, X, y=None, sample_weight=None):
        """Detect the soft boundary of the set of samples X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : Ignored
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : object
        """
        self._fit_single(X, None, sample_weight)
        self.offset_ = -self._intercept_
        return self

    def decision_function(self, X):
        """Signed distance to the separating hyperplane: positive for inliers.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        dec : ndarray of shape (n_samples,)
        """
        return self._decision_values(X, np.ravel)

    def score_samples(self, X):
        """The raw scoring function of the samples: ``decision_function(X) + offset_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        score_samples : ndarray of shape (n_samples,)
        """
        return self.decision_function(X) + self.offset_

    def predict(self, X):
        """Whether each sample is an inlier (+1) or an outlier (-1).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return self._decision_values(X, one_vs_one.inlier)
