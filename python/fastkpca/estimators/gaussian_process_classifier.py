"""GaussianProcessClassifier: scikit-learn's Laplace-approximation classifier, with Newton's iterations and the
likelihood's gradient on the Gaussian process solvers (solvers/gaussian_process/laplace.py says what is
computed)."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone

from .. import _validation as v
from .. import engines, kernels
from ..solvers import gaussian_process as gp
from ..solvers.gaussian_process import laplace
from . import solver_settings
from ._base import parameter_defaults
from .gaussian_process import cg_settings
from .solver_settings import CG, DEPRECATED

__all__ = ["GaussianProcessClassifier"]

_SOLVERS = ("auto", "cholesky", "cg")
#: solver: a name, or CG with the settings Gaussian process classification reads, and the keywords they replace.
_SOLVER = solver_settings.SolverFamily(
    "solver", _SOLVERS, reads={CG: frozenset({"n_probes", "preconditioner_rank", "subset_start", "likelihood_rtol"})},
    deprecated={name: ((CG,), name) for name in ("n_probes", "preconditioner_rank", "subset_start",
                                                  "likelihood_rtol")})
#: CG's settings where the fit leaves them at their defaults.
_CG_DEFAULTS = {"n_probes": 32, "preconditioner_rank": None, "subset_start": 3000, "likelihood_rtol": 3e-4}
#: Samples below which a binary model's native passes run on one thread (unless n_jobs is given).
SMALL_PROBLEM = 512
_MULTI_CLASS = ("one_vs_rest", "one_vs_one")


def _default_kernel():
    """scikit-learn's default for the classifier: C(1.0) * RBF(1.0), both fixed."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    return ConstantKernel(1.0, constant_value_bounds="fixed") * RBF(1.0, length_scale_bounds="fixed")


def _check_constructor(est) -> None:
    """The parameters both the classifier and its binary models have, checked where fit starts (the solver and
    its settings: by the classifier, cg_settings)."""
    from sklearn.gaussian_process.kernels import CompoundKernel, Kernel

    if est.kernel is not None and not isinstance(est.kernel, Kernel):
        raise TypeError(f"kernel must be None or a sklearn.gaussian_process.kernels.Kernel, got {est.kernel!r}")
    if isinstance(est.kernel, CompoundKernel):
        raise ValueError("kernel cannot be a CompoundKernel")
    if not (est.optimizer is None or callable(est.optimizer)):
        v.check_choice(est.optimizer, "optimizer", ("fmin_l_bfgs_b",))
    v.check_int(est.n_restarts_optimizer, "n_restarts_optimizer", minimum=0)
    v.check_int(est.max_iter_predict, "max_iter_predict", minimum=1)
    v.flag(est.warm_start, "warm_start")
    v.flag(est.copy_X_train, "copy_X_train")
    v.n_threads(est.n_jobs)


class _BinaryLaplaceClassifier(ClassifierMixin, BaseEstimator):
    """One binary Laplace model (scikit-learn's ``_BinaryGaussianProcessClassifierLaplace``): the classifier's
    ``base_estimator_`` for two classes, one per class or pair of classes otherwise."""

    def __init__(self, kernel=None, *, optimizer="fmin_l_bfgs_b", n_restarts_optimizer=0, max_iter_predict=100,
                 warm_start=False, copy_X_train=True, random_state=None, memory_limit=None, n_jobs=None,
                 solver="auto", n_probes=32, preconditioner_rank=None, subset_start=3000, likelihood_rtol=3e-4):
        self.kernel = kernel
        self.optimizer = optimizer
        self.n_restarts_optimizer = n_restarts_optimizer
        self.max_iter_predict = max_iter_predict
        self.warm_start = warm_start
        self.copy_X_train = copy_X_train
        self.random_state = random_state
        self.memory_limit = memory_limit
        self.n_jobs = n_jobs
        self.solver = solver
        self.n_probes = n_probes
        self.preconditioner_rank = preconditioner_rank
        self.subset_start = subset_start
        self.likelihood_rtol = likelihood_rtol

    def fit(self, X, y):
        """Fit the binary model on validated samples X and labels y of exactly two classes."""
        import time

        from sklearn.preprocessing import LabelEncoder
        from sklearn.utils import check_random_state

        _check_constructor(self)
        limit = v.memory_limit(self.memory_limit)
        self.kernel_ = _default_kernel() if self.kernel is None else clone(self.kernel)
        self.rng = check_random_state(self.random_state)
        self.X_train_ = np.copy(X) if self.copy_X_train else X
        encoder = LabelEncoder()
        self.y_train_ = encoder.fit_transform(y)
        self.classes_ = encoder.classes_
        if self.classes_.size > 2:
            raise ValueError(f"{type(self).__name__} supports only binary classification. y contains classes "
                             f"{self.classes_}")
        if self.classes_.size == 1:
            raise ValueError(f"{type(self).__name__} requires 2 classes; got {self.classes_.size} class")
        # one thread below SMALL_PROBLEM samples unless n_jobs says otherwise: there a native pass lasts
        # microseconds, and waking a second thread (while NumPy's BLAS threads spin on the other core) cost
        # more than the pass, most of an evaluation (check_estimator's fits)
        threads = 1 if self.n_jobs is None and len(self.y_train_) < SMALL_PROBLEM else self.n_jobs
        kernel = kernels.make(self.kernel_, n_features=0, n_jobs=threads)
        kernel = kernels.differentiable(kernel.for_samples(self.X_train_), "GaussianProcessClassifier")
        self._kernel, self._labels = kernel, self.y_train_.astype(np.float64)
        self._solver, self._choice = gp.make_laplace_solver(
            self.solver, self.X_train_, self._labels, gp.LaplaceSettings(probes=self.n_probes,
                                                                          rank=self.preconditioner_rank),
            samples=self._samples, memory_limit=limit, n_jobs=self.n_jobs, random_state=self.rng,
            copies=kernel.copies)
        self._evaluations, self._newton_steps, self._start, self._restarts = 0, 0, None, 0
        # Within the fit every evaluation's Newton starts from the last one's mode, with halved steps where
        # needed and a stopping rule on f (solvers/gaussian_process/laplace.py's
        # settled_mode): the same mode (Ψ is strictly concave) in about three steps instead of five to ten
        # (log_marginal_likelihood called by a user keeps scikit-learn's start and rule)
        last = getattr(self, "_fit_f", None)
        self._fit_f = last if self.warm_start and last is not None and last.shape == self.y_train_.shape else None
        start = time.perf_counter()
        if self.optimizer is not None and self.kernel_.n_dims > 0:
            self._optimise()
        else:
            theta = np.asarray(self.kernel_.theta, dtype=np.float64)  # the fit's probes: not refined
            self.log_marginal_likelihood_value_ = self._evaluate(self._solver, theta, False, self._newton_start())[0]
        self._kernel = kernel.with_theta(self.kernel_.theta)
        mode = self._solver.fit_final(self._kernel, ("settled", self._fit_f), self.max_iter_predict)
        self.f_cached = mode.f
        for name, value in self._solver.fitted_attributes().items():
            setattr(self, name, value)
        self.n_iter_ = max(1, self._evaluations)
        self.solver_info_ = {"solver": self._solver.name, "choice": self._choice, "evaluations": self._evaluations,
                             "start": self._start, "optimizer_restarts": self._restarts,
                             "newton_steps": self._newton_steps + mode.iterations,
                             "kernel": self._kernel.evaluated_by, "seconds": time.perf_counter() - start,
                             **self._solver.info()}
        return self

    def _samples(self):
        """The training samples as the engine holds them (the iterative solver works on them)."""
        samples, _ = engines.select(self.X_train_).fit_samples(
            self, self.X_train_, vector_input=self.kernel_.requires_vector_input)
        return samples

    def _newton_start(self) -> tuple:
        """How Newton starts in :meth:`log_marginal_likelihood` (ExactLaplace.evaluate's ``start``): from zero
        by scikit-learn's iteration, or with ``warm_start`` from the last mode found (scikit-learn's f_cached)
        by laplace.settled_mode. scikit-learn keeps its own iteration there, whose rule stops at the first step
        that lowers the value and reports the value before it, computed with W at the start: from a mode at
        a θ nearby, off the likelihood by that step's size; settled_mode's is the likelihood's."""
        cached = getattr(self, "f_cached", None)
        if self.warm_start and cached is not None and cached.shape == self.y_train_.shape:
            return ("settled", cached)
        return ("f", np.zeros(self.y_train_.shape, dtype=np.float64))

    def _optimise(self) -> None:
        """scikit-learn's search: from the kernel's θ (or the solver's start), then from starts drawn uniformly
        in the (log) bounds; the best optimum kept (solvers/gaussian_process/optimiser.py). θ and its bounds are
        logarithms: the restarts are uniform between them (scikit-learn's binary classifier exponentiates the
        draw, a θ far outside the bounds that L-BFGS-B clips to a corner)."""
        sets_theta = callable(self.optimizer)  # as the regressor's _optimise: scikit-learn's side effect kept for it

        def obj_func(theta, eval_gradient=True):
            theta = np.asarray(theta, dtype=np.float64)
            if sets_theta:
                self.kernel_.theta = theta
            lml, grad = self._evaluate(self._solver, theta, eval_gradient, ("settled", self._fit_f))
            return (-lml, -grad) if eval_gradient else -lml

        found = gp.optimise(obj_func, self.kernel_.theta, self.kernel_.bounds, solver=self._solver,
                            optimizer=self.optimizer, samples=len(self._labels), restarts=self.n_restarts_optimizer,
                            random_state=self.rng, fit_subset=self._fit_subset, subset_size=self.subset_start)
        self._start, self._restarts = found.start, found.restarts
        self.kernel_.theta = found.theta
        self.kernel_._check_bounds_params()
        self.log_marginal_likelihood_value_ = -found.value

    def _fit_subset(self, index: np.ndarray, solver: str) -> tuple[np.ndarray, dict]:
        """θ of a fit by ``solver`` on the training samples ``index`` (the solver's start:
        solvers/gaussian_process/subset_start.py), and its figures; none where the subset holds one class (a
        rare class missed). Newton's iteration at the first θ then starts from that model's latent mean at
        every training sample instead of zero. Its warnings are about that fit, not the model: kept out."""
        if np.unique(self.y_train_[index]).size < 2:
            return self.kernel_.theta, {"skipped": "the subset holds one class"}
        subset = clone(self).set_params(kernel=self.kernel_, solver=solver, n_restarts_optimizer=0,
                                        copy_X_train=False, warm_start=False, random_state=self.rng.randint(2**31 - 1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            X = self.X_train_
            subset.fit(X[index] if isinstance(X, np.ndarray) else [X[i] for i in index], self.y_train_[index])
        if self._fit_f is None:  # Newton's first start: the subset model's latent mean at every training sample
            self._fit_f = subset._solver.latent_mean(subset._kernel, self.X_train_)
        return subset.kernel_.theta, {"theta": subset.kernel_.theta.tolist(), "evaluations": subset.n_iter_,
                                      "log_marginal_likelihood": float(subset.log_marginal_likelihood_value_),
                                      "start": subset.solver_info_["start"]}

    def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
        """The Laplace approximation's log marginal likelihood of θ, and its gradient (scikit-learn's method)."""
        if theta is None:
            if eval_gradient:
                raise ValueError("Gradient can only be evaluated for theta!=None")
            return self.log_marginal_likelihood_value_
        theta = np.asarray(theta, dtype=np.float64)
        if not clone_kernel:
            self.kernel_.theta = theta
        fitted, start = self._solver, self._newton_start()

        def evaluate(solver):  # the standard errors: the probes' (laplace_iterative.py), 0 and None when exact
            value, gradient = self._evaluate(solver, theta, eval_gradient, start)
            if not solver.probes:
                return value, gradient, 0.0, None
            return value, gradient, solver.figures.get("standard_error", 0.0), solver.figures.get(
                "gradient_standard_error")

        # refined on a copy of the fitted solver, which keeps its probes (None: the fitted one, as it is)
        first = fitted if self.likelihood_rtol is None else fitted.with_probes(fitted.probes)
        estimate = gp.refine(first, evaluate, self.likelihood_rtol, stacklevel=4)
        self.log_marginal_likelihood_info_ = estimate.as_dict()
        return (estimate.value, estimate.gradient) if eval_gradient else estimate.value

    def _evaluate(self, solver, theta: np.ndarray, eval_gradient: bool, start: tuple):
        """(log q(y | θ), its gradient or None) by ``solver`` (the fit's, or a copy refining the value) with
        Newton from ``start`` (ExactLaplace.evaluate); the mode found is the next start."""
        value, gradient, mode = solver.evaluate(self._kernel.with_theta(theta), start, self.max_iter_predict,
                                                eval_gradient)
        self.f_cached = mode.f  # scikit-learn's warm start reads the last mode of any evaluation
        self._fit_f = mode.f
        self._evaluations = getattr(self, "_evaluations", 0) + 1
        self._newton_steps = getattr(self, "_newton_steps", 0) + mode.iterations
        return value, gradient

    def latent_mean_and_variance(self, X):
        """The latent function's mean and variance at X (Algorithm 3.2, lines 4–6)."""
        from .._sklearn_compat import check_is_fitted

        check_is_fitted(self)
        X = self._kernel.new_rows(X, self.X_train_)
        return self._solver.latent_mean(self._kernel, X), self._solver.latent_variance(self._kernel, X)

    def predict(self, X):
        from .._sklearn_compat import check_is_fitted

        check_is_fitted(self)
        X = self._kernel.new_rows(X, self.X_train_)
        # the sign of the mode's latent mean (R&W section 3.4.2: the MAP decision needs no variance)
        return np.where(self._solver.latent_mean(self._kernel, X) > 0, self.classes_[1], self.classes_[0])

    def predict_proba(self, X):
        mean, variance = self.latent_mean_and_variance(X)
        pi_star = laplace.latent_probability(mean, variance)
        return np.vstack((1 - pi_star, pi_star)).T


@parameter_defaults
class GaussianProcessClassifier(ClassifierMixin, BaseEstimator):
    """Gaussian process classification by the Laplace approximation, a drop-in for
    sklearn.gaussian_process.GaussianProcessClassifier.

    The same model, hyperparameters and answers as scikit-learn's: for two classes a latent Gaussian process
    with covariance ``kernel`` under the logistic link, its posterior approximated by a Gaussian at the mode
    (Newton's iteration), the kernel's hyperparameters chosen by maximising the approximate log marginal
    likelihood; for more classes one such binary model per class against the rest, or per pair of classes.
    The kernels users fit (``RBF`` and ``Matern`` with ν = ½, 3/2, 5/2, one or per-feature length scales,
    ``ConstantKernel``, ``WhiteKernel``, their sums and products) are evaluated natively, and the likelihood's
    gradient comes from one pass over the kernel's tiles, without the n × n × p array of every ∂K/∂θ and the
    two further n × n solves scikit-learn builds (see Notes); any other scikit-learn kernel works through its
    own ``__call__``.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel, default=None
        The latent function's covariance; None means ``ConstantKernel(1.0) * RBF(1.0)`` with both fixed.
    optimizer : "fmin_l_bfgs_b", callable or None, default="fmin_l_bfgs_b"
        How the hyperparameters are chosen: scipy's L-BFGS-B on the negative log marginal likelihood and its
        gradient, a callable ``optimizer(obj_func, initial_theta, bounds) -> (theta_opt, func_min)``, or None
        (the kernel's hyperparameters are kept).
    n_restarts_optimizer : int, default=0
        Further optimisations from starts drawn uniformly within the (log) bounds, from ``random_state``.
    max_iter_predict : int, default=100
        Newton's iterations at most per mode (every likelihood evaluation and the final fit).
    warm_start : bool, default=False
        ``log_marginal_likelihood`` starts Newton's iteration from the last mode found (faster when the
        hyperparameters change little). Within a fit every evaluation starts from the last one's mode either
        way (see Notes); each fit makes its binary models anew, as scikit-learn's does.
    copy_X_train : bool, default=True
        Keep a copy of X in each binary model's ``X_train_`` (else a reference).
    random_state : int, RandomState instance or None, default=None
        Seeds the optimiser's restarts.
    multi_class : {"one_vs_rest", "one_vs_one"}, default="one_vs_rest"
        More than two classes: one binary model per class against the others (their probabilities
        normalised), or per pair of classes (predictions by votes; no probabilities).
    n_jobs : int, default=None
        More than two classes: binary models fitted side by side (joblib, as scikit-learn's), while their
        exact solvers' n × n arrays fit ``memory_limit`` together. Models fitted one at a time take it as the
        threads of their native passes (None: OpenMP's default, one thread below 512 samples).
    solver : {"auto", "cholesky", "cg"} or CG, default="auto"
        "cholesky": Newton's iterations and the gradient from Cholesky factors of B = I + W^½ K W^½ (two n × n
        arrays; scikit-learn's answers to rounding). "cg" or :class:`fastkpca.CG` (with its settings, see Notes):
        by products with the kernel only (preconditioned
        CG for Newton's steps, stochastic Lanczos quadrature for log det B and Hutchinson probes for the
        gradient's traces; see Notes): no n × n array, the likelihood an estimate.
        "auto": the cheaper by the library's cost model of an evaluation (the exact solver's factors, n³,
        against cg's products, solvers/choice.py) of those whose memory fits ``memory_limit``.
        For each binary model, ``solver_info_["models"][i]["choice"]`` says what the model predicted and what it
        picked.
    memory_limit : int or str, default=None
        Bytes the fit and predictions may use beyond X and y, or a size such as ``"4GB"`` (None: 80% of the
        memory available): a binary model needs two n × n arrays while it fits and keeps one (``L_``);
        with "cg", the preconditioner's two n × r factors, the probes' blocks and the kernel's storage.
    n_probes, preconditioner_rank, subset_start, likelihood_rtol : deprecated
        Settings of ``solver=CG(...)`` now (Notes). Given here, they still apply (with a FutureWarning) until
        the next minor release.

    Attributes
    ----------
    base_estimator_ : estimator
        The binary model, or scikit-learn's ``OneVsRestClassifier`` / ``OneVsOneClassifier`` of them.
    kernel_ : sklearn.gaussian_process.kernels.Kernel
        The binary model's fitted kernel, or a ``CompoundKernel`` of every binary model's.
    log_marginal_likelihood_value_ : float
        The fitted log marginal likelihood (the binary models' mean for more than two classes).
    solver_info_ : dict
        What the fit ran: ``"solver"`` (the solver's name, or the list of the binary models' where they differ),
        ``"evaluations"`` and ``"seconds"`` summed over the binary models, and ``"models"``, the list of each binary
        model's own record (its ``"choice"``, ``"start"``, ``"newton_steps"``, and the solver's figures).
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    n_classes_ : int
        The number of classes.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen during fit, when X has feature names that are all strings.

    Notes
    -----
    The settings of :class:`fastkpca.CG` that Gaussian process classification reads (the others raise ValueError):

    - ``n_probes`` (default 32): random probes of log det B, of the gradient's traces and of diag B⁻¹ (drawn once
      per fit).
    - ``preconditioner_rank`` (default None): rank r of the randomly pivoted Cholesky factor K ≈ F Fᵀ + D of the
      kernel behind the preconditioners (its pivots drawn at the first evaluation and held). None: the fewest
      pivots, in steps of 64, that leave ¼ tr(K − F Fᵀ) ≤ 1e-3, from a first draw of the rank the regression's cg
      would start from within ``memory_limit`` (solvers/gaussian_process/memory.py).
    - ``subset_start`` (default 3000): with the default optimizer, L-BFGS-B starts from the θ of an exact fit on
      this many samples drawn from ``random_state``, or where n is more than ten times this, of a cg fit on
      √(subset_start·n) samples itself started so; Newton's first iteration starts from that model's latent mean
      (reported in each ``solver_info_["models"][i]["start"]``). 0: from the kernel's θ.
    - ``likelihood_rtol`` (default 3e-4): the relative standard error :meth:`log_marginal_likelihood` aims for when
      called with a θ (the regressor's parameter: GaussianProcessRegressor says how); each binary model's
      ``log_marginal_likelihood_info_`` reports the standard error reached (the regressor's attribute: the value's,
      the gradient's with ``eval_gradient``, the probes and rounds). None: the fit's probes only.

    Each binary model is Rasmussen and Williams' Algorithms 3.1, 3.2 and 5.1, as in scikit-learn, with B = I + W^½ K
    W^½ factored at every Newton step (or, within a fit past the crossover the library's cost model finds, once per
    evaluation: the steps go by preconditioned CG on products with the held K, as cg's do). Its gradient needs, for
    every hyperparameter θ_j, ½ aᵀC_j a − ½ tr(R C_j) + s₂ᵀ(I − K R) C_j v (C_j = ∂K/∂θ_j, R = W^½ B⁻¹ W^½, v = y −
    π); all three terms are tr(Ω C_j) for one symmetric Ω = ½(a aᵀ − R) + ½(u vᵀ + v uᵀ), u = (I − R K) s₂, and the
    diagonal of the posterior covariance in s₂ is (1 − diag B⁻¹)/W: one inverse of B (in place over its factor) and
    one pass over the kernel's tiles give every θ_j. Memory: two n × n arrays during the fit, one (``L_``) after it.
    Everything is float64.

    Within a fit, Newton's iteration at each θ starts from the mode at the θ before, halves any step after the first
    that lowers its objective, and stops when a step moves f by less than 1e-9 of its largest entry (or, where K's
    conditioning keeps f's rounding above that, when two steps in a row leave the objective within its rounding):
    the same mode as scikit-learn's iteration from zero in about half the steps. Its values agree with
    scikit-learn's to about 1e-10 relative, not to rounding, which ``log_marginal_likelihood`` called by a user
    keeps (from zero, with scikit-learn's rule; from the last mode with ``warm_start``, where scikit-learn's rule
    would stop at the first step and report a value computed with the curvature of the start, off by the step's
    size).

    With ``solver="cg"`` nothing n × n is formed: each Newton step a = (I + W K)⁻¹ b is a correction from the
    current iterate by CG on B, preconditioned with P = I + W^½ K̃ W^½ for a randomly pivoted Cholesky factor K̃ of
    K (pivots held for the fit, applied through Woodbury), K a from the iterations' own products (one or two
    products by K a step where K̃ explains K; an inexact Newton step, settled to 1e-5 of max|f| within an
    evaluation, without the last step where K̃ predicts it below that), log det B by stochastic Lanczos quadrature
    on fixed probes, and the traces and diag B⁻¹ by the same probes, the trace with the regression's preconditioner
    control variate (R = (K + W⁻¹)⁻¹ is the regression's K̂⁻¹ for the noise W⁻¹). The likelihood is then an estimate
    (``solver_info_["standard_error"]``), and L-BFGS-B sees values integrated from the gradient, and stops where two
    iterations in a row after the first each gain less than 1e-6 of the likelihood per sample
    (solvers/gaussian_process/laplace_iterative.py's ``CG_GAIN``); it starts from a fit on a subset (exact on
    ``subset_start`` samples, or beyond ten times that a cg fit on √(subset_start·n) samples started so), and again
    from where its line search ends ABNORMAL (``solver_info_["optimizer_restarts"]``). Along directions where the
    likelihood is flat (the length scale of a feature the labels do not depend on, near its bound) where a fit ends
    depends on its start, and the cg fit's can sit elsewhere than the exact fit's from the kernel's θ (at the same θ
    their probabilities agree to 1e-6): bench/gaussian_process_classification.py --cg-fit has the figures.

    scikit-learn's binary classifier draws the optimiser's restarts as exp of a uniform draw within the log
    bounds and uses that as θ (a log): a start far outside the bounds. Here the restarts are uniform within
    the bounds, as scikit-learn's regressor draws them.

    Examples
    --------
    >>> import numpy as np
    >>> from fastkpca import GaussianProcessClassifier
    >>> X = np.linspace(-3, 3, 40)[:, None]
    >>> y = (X[:, 0] > 0).astype(int)
    >>> gpc = GaussianProcessClassifier(random_state=0).fit(X, y)
    >>> gpc.predict(np.array([[-2.0], [2.0]])).tolist()
    [0, 1]
    """

    def __init__(self, kernel: Any = None, *, optimizer: str | Callable[..., Any] | None = "fmin_l_bfgs_b",
                 n_restarts_optimizer: int = 0, max_iter_predict: int = 100, warm_start: bool = False,
                 copy_X_train: bool = True, random_state: int | np.random.RandomState | None = None,
                 multi_class: str = "one_vs_rest", n_jobs: int | None = None, solver: str | CG = "auto",
                 memory_limit: int | str | None = None, n_probes: Any = DEPRECATED,
                 preconditioner_rank: Any = DEPRECATED, subset_start: Any = DEPRECATED,
                 likelihood_rtol: Any = DEPRECATED):
        self.kernel = kernel
        self.optimizer = optimizer
        self.n_restarts_optimizer = n_restarts_optimizer
        self.max_iter_predict = max_iter_predict
        self.warm_start = warm_start
        self.copy_X_train = copy_X_train
        self.random_state = random_state
        self.multi_class = multi_class
        self.n_jobs = n_jobs
        self.solver = solver
        self.memory_limit = memory_limit
        self.n_probes = n_probes
        self.preconditioner_rank = preconditioner_rank
        self.subset_start = subset_start
        self.likelihood_rtol = likelihood_rtol

    def _vector_input(self) -> bool:
        return self.kernel is None or self.kernel.requires_vector_input

    def _validate(self, X, y="no_validation", reset: bool = True):
        """scikit-learn's validate_data as its classifier calls it (numbers for a kernel of vectors, objects as
        given otherwise); with y, the pair."""
        from .._sklearn_compat import validate_data

        arrays = {"ensure_2d": True, "dtype": "numeric"} if self._vector_input() else {"ensure_2d": False,
                                                                                       "dtype": None}
        if isinstance(y, str) and y == "no_validation":
            return validate_data(self, X, reset=reset, **arrays)
        return validate_data(self, X, y=y, multi_output=False, **arrays)

    def fit(self, X, y):
        """Fit the classifier: one binary Laplace model, or one per class (pair of classes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object
            Training samples (any objects the kernel reads, for a kernel that does not need vectors).
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : GaussianProcessClassifier
        """
        from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier

        _check_constructor(self)
        asked = cg_settings(self, _SOLVER, _CG_DEFAULTS)
        cg = asked.settings
        v.check_choice(self.multi_class, "multi_class", _MULTI_CLASS)
        limit = v.memory_limit(self.memory_limit)
        v.check_same_length(X, y)
        X, y = self._validate(X, y)
        if self._vector_input():
            X = np.asarray(X, dtype=np.float64)
        self.classes_ = np.unique(y)
        self.n_classes_ = self.classes_.size
        if self.n_classes_ == 1:
            raise ValueError(f"GaussianProcessClassifier requires 2 or more distinct classes; got {self.n_classes_} "
                             f"class (only class {self.classes_[0]} is present)")
        n = len(y)
        models = 1 if self.n_classes_ == 2 else (self.n_classes_ if self.multi_class == "one_vs_rest"
                                                 else self.n_classes_ * (self.n_classes_ - 1) // 2)
        # side by side only while every model running at once has what its solver needs within the limit
        from joblib import effective_n_jobs

        wanted = 1 if self.n_jobs is None else effective_n_jobs(self.n_jobs)
        features = X.shape[1] if getattr(X, "ndim", 1) > 1 else 1
        settings = gp.LaplaceSettings(probes=cg["n_probes"], rank=cg["preconditioner_rank"])
        # each model's factor products hold their scratch on its threads: one each side by side
        needed = gp.laplace_bytes(asked.name, n, features, settings, memory_limit=limit,
                                  threads=1 if min(wanted, models) > 1 else v.n_threads(self.n_jobs))
        jobs = int(max(1, min(wanted, models, limit // max(1, needed))))
        binary = _BinaryLaplaceClassifier(
            kernel=self.kernel, optimizer=self.optimizer, n_restarts_optimizer=self.n_restarts_optimizer,
            max_iter_predict=self.max_iter_predict, warm_start=self.warm_start, copy_X_train=self.copy_X_train,
            random_state=self.random_state, memory_limit=limit // jobs, solver=asked.name,
            n_jobs=self.n_jobs if jobs == 1 else 1, **cg)
        if self.n_classes_ == 2:
            self.base_estimator_ = binary
        elif self.multi_class == "one_vs_rest":
            self.base_estimator_ = OneVsRestClassifier(binary, n_jobs=jobs)
        else:
            self.base_estimator_ = OneVsOneClassifier(binary, n_jobs=jobs)
        self.base_estimator_.fit(X, y)
        if self.n_classes_ > 2:
            self.log_marginal_likelihood_value_ = np.mean([estimator.log_marginal_likelihood()
                                                           for estimator in self.base_estimator_.estimators_])
        else:
            self.log_marginal_likelihood_value_ = self.base_estimator_.log_marginal_likelihood()
        self.solver_info_ = _solver_info(self.base_estimator_)
        return self

    def predict(self, X):
        """The class of each sample: the sign of the binary models' latent mean (their votes for
        one-vs-one).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        from .._sklearn_compat import check_is_fitted

        check_is_fitted(self)
        return self.base_estimator_.predict(self._validate(X, reset=False))

    def predict_proba(self, X):
        """The probability of every class for each sample: ∫ σ(f) q(f | X, y) df under the Laplace
        approximation (scikit-learn's error-function approximation of the integral); normalised over the
        one-vs-rest models.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        from .._sklearn_compat import check_is_fitted

        check_is_fitted(self)
        if self.n_classes_ > 2 and self.multi_class == "one_vs_one":
            raise ValueError("one_vs_one multi-class mode does not support predicting probability estimates. Use "
                             "one_vs_rest mode instead.")
        return self.base_estimator_.predict_proba(self._validate(X, reset=False))

    @property
    def kernel_(self):
        """The fitted kernel: the binary model's, or a CompoundKernel of every binary model's."""
        from sklearn.gaussian_process.kernels import CompoundKernel

        if self.n_classes_ == 2:
            return self.base_estimator_.kernel_
        return CompoundKernel([estimator.kernel_ for estimator in self.base_estimator_.estimators_])

    def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
        """The log marginal likelihood of hyperparameters under the Laplace approximation (the binary models'
        mean for more than two classes), and for two classes its gradient.

        Parameters
        ----------
        theta : array-like of shape (n_kernel_params,), default=None
            Log-hyperparameters: of the kernel, or for more than two classes of every binary model's kernel in
            turn (or one θ for all of them). None: ``log_marginal_likelihood_value_``.
        eval_gradient : bool, default=False
            Also return the gradient with respect to theta (two classes, theta given).
        clone_kernel : bool, default=True
            Evaluate a copy of the kernel with theta (False: set the binary model's ``kernel_.theta``).

        Returns
        -------
        log_likelihood : float
        log_likelihood_gradient : ndarray of shape (n_kernel_params,)
            Only with ``eval_gradient``.
        """
        from .._sklearn_compat import check_is_fitted

        check_is_fitted(self)
        if theta is None:
            if eval_gradient:
                raise ValueError("Gradient can only be evaluated for theta!=None")
            return self.log_marginal_likelihood_value_
        theta = np.asarray(theta)
        if self.n_classes_ == 2:
            return self.base_estimator_.log_marginal_likelihood(theta, eval_gradient, clone_kernel=clone_kernel)
        if eval_gradient:
            raise NotImplementedError("Gradient of log-marginal-likelihood not implemented for multi-class GPC.")
        estimators = self.base_estimator_.estimators_
        n_dims = estimators[0].kernel_.n_dims
        if theta.shape[0] == n_dims:
            return np.mean([e.log_marginal_likelihood(theta, clone_kernel=clone_kernel) for e in estimators])
        if theta.shape[0] == n_dims * self.classes_.shape[0]:
            return np.mean([e.log_marginal_likelihood(theta[n_dims * i:n_dims * (i + 1)], clone_kernel=clone_kernel)
                            for i, e in enumerate(estimators)])
        raise ValueError(f"Shape of theta must be either {n_dims} or {n_dims * self.classes_.shape[0]}. Obtained "
                         f"theta with shape {theta.shape[0]}.")

    def latent_mean_and_variance(self, X):
        """The latent function's mean and variance at X (binary classification only).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object

        Returns
        -------
        latent_mean, latent_var : ndarray of shape (n_samples,)
        """
        if self.n_classes_ > 2:
            raise ValueError("Returning the mean and variance of the latent function f is only supported for binary "
                             f"classification, received {self.n_classes_} classes.")
        from .._sklearn_compat import check_is_fitted

        check_is_fitted(self)
        return self.base_estimator_.latent_mean_and_variance(self._validate(X, reset=False))


def _solver_info(base_estimator) -> dict:
    """The estimator's record of its fit from its binary models' (one, or those of a one-vs-rest or one-vs-one
    classifier): their solvers, their evaluations and seconds summed, and each model's own record."""
    models = [model.solver_info_ for model in getattr(base_estimator, "estimators_", [base_estimator])]
    names = [model["solver"] for model in models]
    return {"solver": names[0] if len(set(names)) == 1 else names,
            "evaluations": sum(model["evaluations"] for model in models),
            "seconds": sum(model["seconds"] for model in models), "models": models}
