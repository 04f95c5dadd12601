"""GaussianProcessRegressor: scikit-learn's estimator with the kernel work and the likelihood's gradient in the
native core (solvers/gaussian_process/ says what is computed)."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin, clone

from .. import engines, kernels
from .. import _validation as v
from ..solvers import gaussian_process as gp
from . import solver_settings
from ._base import EngineFitted, parameter_defaults
from .solver_settings import CG, DEPRECATED

__all__ = ["GaussianProcessRegressor"]


def _default_kernel(fixed: bool):
    """scikit-learn's default: C(1.0) * RBF(1.0) (with fixed bounds for the prior of an unfitted model)."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    if fixed:
        return ConstantKernel(1.0, constant_value_bounds="fixed") * RBF(1.0, length_scale_bounds="fixed")
    return ConstantKernel() * RBF()


def _check_constructor(est) -> None:
    from sklearn.gaussian_process.kernels import Kernel

    if est.kernel is not None and not isinstance(est.kernel, Kernel):
        raise TypeError(f"kernel must be None or a sklearn.gaussian_process.kernels.Kernel, got {est.kernel!r}")
    if not isinstance(est.alpha, np.ndarray):
        v.check_real(est.alpha, "alpha", minimum=0.0)
    if not (est.optimizer is None or callable(est.optimizer)):
        v.check_choice(est.optimizer, "optimizer", ("fmin_l_bfgs_b",))
    v.check_int(est.n_restarts_optimizer, "n_restarts_optimizer", minimum=0)
    v.flag(est.normalize_y, "normalize_y")
    v.flag(est.copy_X_train, "copy_X_train")
    if est.n_targets is not None:
        v.check_int(est.n_targets, "n_targets", minimum=1)
    v.n_threads(est.n_jobs)


#: solver: a name, or CG with the settings Gaussian process regression reads, and the keywords they replace.
_SOLVER = solver_settings.SolverFamily(
    "solver", ("auto", "cholesky", "cg"),
    reads={CG: frozenset({"n_probes", "tol", "final_tol", "preconditioner_rank", "max_iter", "preconditioner_dtype",
                          "subset_start", "theta_tol", "likelihood_rtol"})},
    deprecated={name: ((CG,), name) for name in ("n_probes", "tol", "final_tol", "preconditioner_rank", "max_iter",
                                                  "preconditioner_dtype", "subset_start", "theta_tol",
                                                  "likelihood_rtol")})
#: CG's settings where the fit leaves them at their defaults (preconditioner_dtype "auto" is float64 here).
_CG_DEFAULTS = {"n_probes": 16, "tol": 1e-2, "final_tol": 1e-6, "preconditioner_rank": None, "max_iter": 1000,
                "preconditioner_dtype": "float64", "subset_start": 3000, "theta_tol": 0.05, "likelihood_rtol": 3e-4}


def cg_settings(est, family: solver_settings.SolverFamily, defaults: dict) -> solver_settings.Resolved:
    """The Gaussian process's solver and its CG settings (every one the family reads: its default where not
    given). resolve checked each setting given against CG's constraints; the Gaussian processes also need a
    count of probes (CG's None is the family's default) and tolerances above 0: ValueError naming the setting."""
    asked = solver_settings.resolve(est, family, stacklevel=4)  # the warning at the call of fit
    settings = {**defaults, **asked.settings}
    if settings.get("preconditioner_dtype") == "auto":
        settings["preconditioner_dtype"] = "float64"
    v.check_int(settings["n_probes"], "n_probes", minimum=2)
    for name in ("tol", "final_tol", "theta_tol", "likelihood_rtol"):
        optional = name in ("theta_tol", "likelihood_rtol")
        if name in settings and not (optional and settings[name] is None) \
                and not v.check_real(settings[name], name, minimum=0.0) > 0:
            raise ValueError(f"{name} must be > 0{' or None' if optional else ''}, got {settings[name]}")
    return solver_settings.Resolved(asked.name, settings)


@parameter_defaults
class GaussianProcessRegressor(EngineFitted, MultiOutputMixin, RegressorMixin, BaseEstimator):
    """Gaussian process regression, a drop-in for sklearn.gaussian_process.GaussianProcessRegressor.

    The same model, hyperparameters and answers as scikit-learn's: the posterior of a zero-mean Gaussian
    process with covariance ``kernel`` and Gaussian noise ``alpha``, the kernel's hyperparameters chosen by
    maximising the log marginal likelihood. The kernels users fit (``RBF`` and ``Matern`` with ν = ½, 3/2,
    5/2, with one or per-feature length scales, ``ConstantKernel``, ``WhiteKernel``, and their sums and
    products such as ``C * RBF + White``) are evaluated natively, and the likelihood's gradient never holds
    the n × n × p array of every ∂K/∂θ that scikit-learn builds (see Notes); any other scikit-learn kernel
    works through its own ``__call__``.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel, default=None
        The covariance; None means ``ConstantKernel(1.0) * RBF(1.0)``.
    alpha : float or ndarray of shape (n_samples,), default=1e-10
        Added to the kernel matrix's diagonal: the noise variance of each observation (and a jitter that keeps
        the factor defined).
    optimizer : "fmin_l_bfgs_b", callable or None, default="fmin_l_bfgs_b"
        How the hyperparameters are chosen: scipy's L-BFGS-B on the negative log marginal likelihood and its
        gradient, a callable ``optimizer(obj_func, initial_theta, bounds) -> (theta_opt, func_min)``, or None
        (the kernel's hyperparameters are kept). With solver "cg", L-BFGS-B works on the likelihood per sample
        (the same optimum, and scipy's gradient test on the sum kept): see Notes.
    n_restarts_optimizer : int, default=0
        Further optimisations from log-uniform starts within the bounds (drawn from ``random_state``).
    normalize_y : bool, default=False
        Centre and scale the targets to unit variance before fitting (predictions are scaled back).
    copy_X_train : bool, default=True
        Keep a copy of X in ``X_train_`` (else a reference).
    n_targets : int, default=None
        The number of targets, for the prior's predictions before fit (checked against y in fit).
    random_state : int, RandomState instance or None, default=None
        Seeds the optimiser's restarts.
    memory_limit : int or str, default=None
        Bytes the fit and predictions may use beyond X and y, or a size such as ``"4GB"`` (None: 80% of the
        memory available): the exact likelihood needs one n × n array, the standard deviations chunks of the
        test points.
    n_jobs : int, default=None
        Threads of the kernel's evaluation (see fastkpca.gram); the factor and the inverse run on NumPy's
        LAPACK.
    solver : {"auto", "cholesky", "cg"} or CG, default="auto"
        "cholesky": the exact likelihood from one n × n factor (scikit-learn's answers to rounding). "cg" or
        :class:`fastkpca.CG` (with its settings, see Notes): by products with the kernel only (preconditioned
        conjugate gradients, stochastic Lanczos quadrature and Hutchinson probes): memory
        O(n·(n_probes + rank)), no n × n array, the likelihood an estimate. "auto": the cheaper by the
        library's cost model of an evaluation with the gradient, or, without an optimizer, of the fit at the
        kernel's θ (the exact factor's n³ against cg's block products, solvers/choice.py) of those whose memory
        fits ``memory_limit``: "cholesky" up to a crossover of some
        thousands of samples on this machine's measured rates, "cg" beyond it.
        ``solver_info_["choice"]`` says what the model predicted for each and what it picked.
    n_probes, tol, final_tol, preconditioner_rank, max_iter, preconditioner_dtype, subset_start, theta_tol, \
likelihood_rtol : deprecated
        Settings of ``solver=CG(...)`` now (Notes). Given here, they still apply (with a FutureWarning) until
        the next minor release.

    Attributes
    ----------
    X_train_ : ndarray of shape (n_samples, n_features) or list of object
        The training samples.
    y_train_ : ndarray of shape (n_samples,) or (n_samples, n_targets)
        The targets (normalised with ``normalize_y``).
    kernel_ : sklearn.gaussian_process.kernels.Kernel
        The kernel with the fitted hyperparameters.
    L_ : ndarray of shape (n_samples, n_samples)
        The lower Cholesky factor of ``kernel_(X_train_) + diag(alpha)`` (the exact solver only).
    alpha_ : ndarray of shape (n_samples,) or (n_samples, n_targets)
        Its solution against ``y_train_``: the dual coefficients of the posterior mean.
    log_marginal_likelihood_value_ : float
        The log marginal likelihood of ``kernel_.theta``.
    log_marginal_likelihood_info_ : dict
        Set by each :meth:`log_marginal_likelihood` call with a θ: how good the value it returned is.
        ``value``; ``standard_error`` and ``relative_standard_error`` (0 for the exact solver; cg's value is a
        stochastic estimate); ``gradient_standard_error`` (cg with ``eval_gradient``: per log-hyperparameter,
        from four batches of the probes; None otherwise); ``probes`` (those of the value returned);
        ``rtol`` (``likelihood_rtol``); ``reached`` (whether the relative standard error is within it);
        ``rounds`` (each evaluation's probes, value and standard error).
    n_iter_ : int
        Likelihood evaluations of the fit (at least 1).
    solver_info_ : dict
        How the fit went: ``solver``, ``choice`` (the solver asked for and, with "auto", the cost model's seconds per
        evaluation, or for the fit without an optimizer), ``evaluations`` (likelihood evaluations), ``kernel``
        ("native", or "python": the object's own ``__call__``), ``seconds`` and ``start`` (the subset fit L-BFGS-B
        started from: its samples, θ, evaluations, likelihood and seconds; None without one), ``settle`` (cg: each
        round's probes with θ's largest move, the error it stands for, its evaluations and seconds, and whether θ
        settled; None without any); with cg also ``products`` (block products by the kernel, gradient passes included),
        ``iterations`` (per solve), ``probes`` (held at the end), ``preconditioner``, ``standard_error`` (of the last
        likelihood estimate), the residuals reached and ``stages`` (seconds).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen during fit, when X has feature names that are all strings.

    Notes
    -----
    With K̂ = K + diag(alpha) = L Lᵀ and α = K̂⁻¹ y (one column per target), the log marginal likelihood is
    Σ_k [−½ y_kᵀ α_k − Σ log L_ii − (n/2) log 2π] and its gradient ½ tr((α αᵀ − t K̂⁻¹) ∂K/∂θ_j), θ the
    log-hyperparameters. One n × n array holds K̂, its factor, K̂⁻¹ and then W = α αᵀ − t K̂⁻¹ in turn; for the
    native kernels every trace tr(W ∂K/∂θ_j) comes from one pass over W's tiles per term, each tile of
    ∂K/∂θ_j computed where it is used, and all the per-feature length scales' traces from one product of
    W ∘ G (G the kernel's radial derivative) with [𝟙, X/ℓ]. Everything is float64: the results are
    scikit-learn's to rounding.

    With ``solver="cg"`` nothing n × n is formed. One block of preconditioned conjugate gradients solves
    K̂ [α, u_1 … u_p] = [y, z_1 … z_p] for random probes z_i of covariance P, the preconditioner (a randomly
    pivoted Cholesky factor F plus a diagonal, P = F Fᵀ + D); log det K̂ is log det P plus stochastic Lanczos
    quadrature from the same iterations, and the gradient's traces tr(K̂⁻¹ ∂K/∂θ_j) are Hutchinson estimates
    (P⁻¹z_i)ᵀ ∂K/∂θ_j u_i, taken for every θ_j in one pass over the kernel's tiles. The probes and the
    preconditioner's pivots are drawn once per fit from ``random_state`` and every solve starts from zero, so
    the optimiser sees one estimate of the likelihood, a smooth function of θ, not fresh draws at every θ;
    ``solver_info_["standard_error"]`` says how far it may be from the exact likelihood. The targets' columns
    are solved to 1e-4 (the probes' to ``tol``). That value and the gradient are separate estimates, and the
    gradient is not the value's derivative: L-BFGS-B is given values integrated from the gradient along its
    path (solvers/gaussian_process/objective.py), so that its line searches end where the gradient says the
    optimum is, and the optimum found is then settled by more probes (``theta_tol``);
    ``log_marginal_likelihood_value_`` is the estimate at the fitted θ.

    The settings of :class:`fastkpca.CG` that Gaussian process regression reads (the others raise ValueError):

    - ``n_probes`` (default 16): random probes of the log determinant and the gradient's traces at the start (drawn
      once per fit; ``theta_tol`` may multiply them after the first optimum). The likelihood's standard error falls
      as 1/√n_probes (``solver_info_["standard_error"]``; bench/gaussian_process.py measures it, and the seconds
      more probes cost). The probes are fixed, so the optimiser sees one estimate, not fresh draws at every θ (see
      above); its optimum moves with the gradient estimate's error along flat directions, which the preconditioner,
      serving as a control variate of the gradient's traces, keeps small (the same bench compares the fitted θ and
      test errors with the Cholesky fit's, with and without it).
    - ``tol`` (default 1e-2): relative residual at which each column's conjugate gradients stop while the
      hyperparameters are optimised.
    - ``final_tol`` (default 1e-6): relative residual of the final solve for ``alpha_`` and of the exact predictive
      variances and covariance, checked on the true residual (CG resumes from it where its recurrence drifted); a
      ConvergenceWarning says when ``max_iter`` stopped one short. A variance's CG then goes on, for two rounds at
      most, where its estimated error (rᵀP⁻¹r, r the residual) is above ``final_tol`` of the variance: where the
      kernel's amplitude is many times the variance, the residual alone leaves it far less accurate.
    - ``preconditioner_rank`` (default None): rank of the randomly pivoted Cholesky preconditioner, kept through the
      fit (0: the diagonal only). None: the fit starts at 1024 within half of ``memory_limit`` (and lower where CG's
      blocks and the kernel pass's working memory do not fit beside it) and, while its products evaluate the kernel
      (a plan holding at most half the kernel's entries), the first six evaluations move it by doubling or halving,
      between 64 and 4096 and within the limit, as a work model fed with their iteration counts says pays
      (solvers/gaussian_process/rank.py); ``solver_info_["preconditioner"]["ranks"]`` lists each evaluation's.
    - ``max_iter`` (default 1000): products by K̂ per solve at most (a warm start's and the final check of the true
      residual's included).
    - ``preconditioner_dtype`` (default "auto", which is "float64" here): storage of the preconditioner's factor
      between evaluations and for the predictions ("float32": half that memory). The factor is built in float64 at
      every evaluation either way (a float32 build is too inaccurate when the signal is many times the noise), so
      float32 lowers the rank the limit allows.
    - ``subset_start`` (default 3000): with the default optimizer, L-BFGS-B starts from the θ of an exact fit on
      this many samples drawn from ``random_state`` (where that is fewer than the training samples), which costs a
      few cg evaluations at tens of thousands of samples and saves most of the path from the kernel's initial θ;
      ``solver_info_["start"]`` reports it. 0: start from the kernel's θ.
    - ``theta_tol`` (default 0.05): the error in the fitted θ (every log-hyperparameter) the fit aims for. An
      estimate's optimum is off the exact likelihood's by the probes' error; after the optimiser, the fit multiplies
      the probes (keeping those it has) and finds the optimum again from there (quasi-Newton steps with L-BFGS-B's
      curvature, a few evaluations; the optimiser again where those fail or a callable optimizer gave none), until
      θ's move says its error is at most ``theta_tol``/4: from p to k·p probes the move is √(k − 1) times a draw of
      the error of the optimum it ends at (solvers/gaussian_process/iterative.py). Up to four rounds and 16 times
      ``n_probes``, within ``memory_limit``; a ConvergenceWarning says when it stopped short,
      ``solver_info_["settle"]`` lists the rounds. None: no rounds, the first optimum kept.
    - ``likelihood_rtol`` (default 3e-4): the relative standard error :meth:`log_marginal_likelihood` aims for when
      called with a θ (a stochastic estimate, see Notes). The value is estimated with the fit's probes, then, while
      its standard error is above ``likelihood_rtol`` times its magnitude, again with more (at most 2,048, within
      ``memory_limit``, up to four rounds), and a ConvergenceWarning says where it stopped short;
      ``log_marginal_likelihood_info_`` reports the standard error reached. The default keeps three standard errors
      within 1e-3 of the value. None: the fit's probes only. The fit's own evaluations are not refined
      (``theta_tol`` settles its optimum).

    At tens of thousands of samples each evaluation is a few passes over the kernel, and L-BFGS-B from a poor
    start takes fifty evaluations or more: with cg the default optimizer starts from an exact fit on a random
    subset (``subset_start``; ``bench/gaussian_process.py --scale``, and the performance page of the user
    guide, have its times). With cg the default optimizer divides the
    likelihood by n: L-BFGS-B's first trial point is θ minus the gradient, projected on the bounds, which for
    the sum over many samples is a corner of the box, where cg pays hundreds of products for nothing. CG's
    iterations grow when the kernel has more eigenvalues above the noise than the preconditioner's rank (short
    length scales, a small noise).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, WhiteKernel
    >>> from fastkpca import GaussianProcessRegressor
    >>> X = np.linspace(0, 6, 40)[:, None]
    >>> y = np.sin(X[:, 0])
    >>> gpr = GaussianProcessRegressor(RBF(1.0) + WhiteKernel(1e-2), random_state=0).fit(X, y)
    >>> mean, std = gpr.predict(np.array([[1.5]]), return_std=True)
    >>> bool(abs(mean[0] - np.sin(1.5)) < 0.1)
    True
    """

    def __init__(self, kernel: Any = None, *, alpha: float | np.ndarray = 1e-10,
                 optimizer: str | Callable[..., Any] | None = "fmin_l_bfgs_b", n_restarts_optimizer: int = 0,
                 normalize_y: bool = False, copy_X_train: bool = True, n_targets: int | None = None,
                 random_state: int | np.random.RandomState | None = None, memory_limit: int | str | None = None,
                 n_jobs: int | None = None, solver: str | CG = "auto", n_probes: Any = DEPRECATED,
                 tol: Any = DEPRECATED, final_tol: Any = DEPRECATED, preconditioner_rank: Any = DEPRECATED,
                 max_iter: Any = DEPRECATED, preconditioner_dtype: Any = DEPRECATED, subset_start: Any = DEPRECATED,
                 theta_tol: Any = DEPRECATED, likelihood_rtol: Any = DEPRECATED):
        self.kernel = kernel
        self.alpha = alpha
        self.optimizer = optimizer
        self.n_restarts_optimizer = n_restarts_optimizer
        self.normalize_y = normalize_y
        self.copy_X_train = copy_X_train
        self.n_targets = n_targets
        self.random_state = random_state
        self.memory_limit = memory_limit
        self.n_jobs = n_jobs
        self.solver = solver
        self.n_probes = n_probes
        self.tol = tol
        self.final_tol = final_tol
        self.preconditioner_rank = preconditioner_rank
        self.max_iter = max_iter
        self.preconditioner_dtype = preconditioner_dtype
        self.subset_start = subset_start
        self.theta_tol = theta_tol
        self.likelihood_rtol = likelihood_rtol

    # --------------------------------------------------------------------------------------------- fit

    def fit(self, X, y):
        """Fit the Gaussian process: choose the kernel's hyperparameters and factor the kernel matrix.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object
            Training samples (any objects the kernel reads, for a kernel that does not need vectors).
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Targets.

        Returns
        -------
        self : GaussianProcessRegressor
        """
        import time

        from sklearn.utils import check_random_state

        _check_constructor(self)
        self._cg = cg_settings(self, _SOLVER, _CG_DEFAULTS)
        limit = v.memory_limit(self.memory_limit)
        self.kernel_ = _default_kernel(False) if self.kernel is None else clone(self.kernel)
        self._rng = check_random_state(self.random_state)
        samples, y = engines.select(X).fit_samples(self, X, y, targets=True,
                                                   vector_input=self.kernel_.requires_vector_input)
        n = y.shape[0]
        if self.n_targets is not None and (y.shape[1] if y.ndim > 1 else 1) != self.n_targets:
            raise ValueError("The number of targets seen in `y` is different from the parameter `n_targets`. Got "
                             f"{y.shape[1] if y.ndim > 1 else 1} != {self.n_targets}.")
        y = self._normalise(np.asarray(y, dtype=np.float64))
        if np.iterable(self.alpha) and self.alpha.shape[0] != n:
            if self.alpha.shape[0] != 1:
                raise ValueError("alpha must be a scalar or an array with same number of entries as y. "
                                 f"({self.alpha.shape[0]} != {n})")
            self.alpha = self.alpha[0]  # scikit-learn's behaviour
        kernel = samples.bind(kernels.make(self.kernel_, n_features=0, n_jobs=self.n_jobs))
        self._kernel = kernels.differentiable(kernel, "GaussianProcessRegressor")
        self.X_train_ = samples.fitted(copy=self.copy_X_train)
        self._samples, self._engine = samples.over(self.X_train_), samples.engine
        self.y_train_ = np.copy(y) if self.copy_X_train else y
        self._limit, self._evaluations, self._start, self._settled = limit, 0, None, None
        self._gradient = self._optimises()  # the fit's: a solver made again later (_current_solver) is priced so
        self._solver, choice = self._make_solver()
        start = time.perf_counter()
        if self._gradient:
            self._optimise()
            self._factor_final()
        else:
            self._fit_at_theta()
        self.n_iter_ = max(1, self._evaluations)
        self.solver_info_ = {"solver": self._solver.name, "choice": choice, "evaluations": self._evaluations,
                             "kernel": self._kernel.evaluated_by, "seconds": time.perf_counter() - start,
                             "start": self._start, "settle": self._settled, **samples.info(), **self._solver.info()}
        return self

    def _make_solver(self) -> tuple:
        """(the solver of the training data as they are now, how it was chosen: solvers/gaussian_process)."""
        cg = self._cg.settings
        settings = gp.IterativeSettings(cg["n_probes"], cg["tol"], cg["final_tol"], cg["preconditioner_rank"],
                                        cg["max_iter"], np.dtype(cg["preconditioner_dtype"]).type,
                                        theta_tol=cg["theta_tol"])
        self._solver_inputs = (self.X_train_, self.y_train_, self.alpha)
        return gp.make_solver(self._cg.name, self._samples, self._targets(), self.alpha, settings,
                              memory_limit=self._limit, n_jobs=self.n_jobs, random_state=self._rng,
                              copies=self._kernel.copies, gradient=self._gradient)

    def _optimises(self) -> bool:
        """Whether fit searches θ (its evaluations then take the likelihood's gradient)."""
        return self.optimizer is not None and self.kernel_.n_dims > 0

    def _current_solver(self):
        """The fit's solver, or one made again for X_train_, y_train_ or alpha replaced since the fit
        (scikit-learn's likelihood reads them when it is called)."""
        if any(now is not then for now, then in zip((self.X_train_, self.y_train_, self.alpha), self._solver_inputs)):
            self._samples = self._samples.over(self.X_train_)
            self._solver, _ = self._make_solver()
        return self._solver

    def __setstate__(self, state):
        super().__setstate__(state)
        if "_solver_inputs" in state:  # the training data as unpickled (a cluster's brought here) are the solver's
            self._solver_inputs = (self.X_train_, self.y_train_, self.alpha)

    def _targets(self) -> np.ndarray:
        """y_train_ as an n × t matrix."""
        return self.y_train_ if self.y_train_.ndim == 2 else self.y_train_[:, np.newaxis]

    def _normalise(self, y: np.ndarray) -> np.ndarray:
        if self.normalize_y:
            self._y_train_mean = np.mean(y, axis=0)
            std = np.std(y, axis=0)
            self._y_train_std = np.where(np.abs(std) < 10 * np.finfo(std.dtype).eps, 1.0, std)  # as scikit-learn
            return (y - self._y_train_mean) / self._y_train_std
        shape = (y.shape[1],) if y.ndim == 2 else 1
        self._y_train_mean, self._y_train_std = np.zeros(shape=shape), np.ones(shape=shape)
        return y

    def _optimise(self) -> None:
        """scikit-learn's search: from the kernel's theta, then from log-uniform starts; the best one kept and,
        where the likelihood is an estimate, settled by the solver (solvers/gaussian_process/optimiser.py)."""
        # scikit-learn's objective sets kernel_.theta at every evaluation (its likelihood with clone_kernel=False):
        # kept for a callable optimizer, which may read it; L-BFGS-B's loop here sets it once, at the optimum (the
        # object's setter reads every hyperparameter of the kernel's tree: most of a small problem's evaluation).
        sets_theta = callable(self.optimizer)

        def obj_func(theta, eval_gradient=True):  # the fit's evaluations: its probes, not refined
            theta = np.asarray(theta, dtype=np.float64)
            if sets_theta:
                self.kernel_.theta = theta
            estimate = self._likelihood(theta, eval_gradient, refine=False)
            if eval_gradient:
                return -estimate.value, -(np.zeros_like(theta) if estimate.gradient is None else estimate.gradient)
            return -estimate.value

        assert self.optimizer is not None  # fit optimises only with one
        found = gp.optimise(obj_func, self.kernel_.theta, self.kernel_.bounds, solver=self._solver,
                            optimizer=self.optimizer, samples=len(self.y_train_), restarts=self.n_restarts_optimizer,
                            random_state=self._rng, fit_subset=self._fit_subset,
                            subset_size=self._cg.settings["subset_start"])
        self._start, self._settled = found.start, found.settle
        self.kernel_.theta = found.theta
        self.kernel_._check_bounds_params()
        self.log_marginal_likelihood_value_ = -found.value

    def _fit_subset(self, index: np.ndarray, solver: str) -> tuple[np.ndarray, dict]:
        """θ of a fit by ``solver`` on the training rows ``index`` from the kernel's θ (the solver's start:
        solvers/gaussian_process/subset_start.py), and its figures. Its warnings are about that fit, not the
        model: kept out."""
        alpha = self.alpha[index] if np.iterable(self.alpha) else self.alpha
        # the subset's solver, with this fit's settings but no subset start of its own
        solver = solver_settings.parameter_for(_SOLVER, solver, {**self._cg.settings, "subset_start": 0})
        subset = clone(self).set_params(kernel=self.kernel_, alpha=alpha, solver=solver, n_restarts_optimizer=0,
                                        normalize_y=False, copy_X_train=False,
                                        random_state=self._rng.randint(2**31 - 1),
                                        **dict.fromkeys(_SOLVER.deprecated, DEPRECATED))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            subset.fit(self._samples.rows(index), self.y_train_[index])
        return subset.kernel_.theta, {"theta": subset.kernel_.theta.tolist(), "evaluations": subset.n_iter_,
                                      "log_marginal_likelihood": float(subset.log_marginal_likelihood_value_)}

    def _factor_final(self) -> None:
        """alpha_ (and the solver's fitted attributes, such as L_) at the fitted kernel, with scikit-learn's
        message when K̂ is not positive definite."""
        kernel = self._kernel.with_theta(self.kernel_.theta)
        try:
            alpha = self._solver.solve(kernel, self._targets())
        except np.linalg.LinAlgError as exc:
            exc.args = (f"The kernel, {self.kernel_}, is not returning a positive definite matrix. Try gradually "
                        "increasing the 'alpha' parameter of your GaussianProcessRegressor estimator.",) + exc.args
            raise
        for name, value in self._solver.fitted_attributes().items():
            setattr(self, name, value)
        self.alpha_ = alpha if self.y_train_.ndim == 2 else alpha[:, 0]
        self._kernel = kernel
        # the mean's row map K(x, X)·α, evaluated where the training samples are (engines/base.py)
        self._mean_map = self._samples.cross_product(kernel, alpha)

    def _fit_at_theta(self) -> None:
        """Without an optimiser: the final solve and the likelihood at the kernel's θ. Where the solver holds the
        likelihood from its final solve (the exact solver's factor), K̂ is factored once, where scikit-learn
        factors it twice; an iterative solver evaluates the likelihood first and starts its final solve from
        that evaluation's."""
        if not self._solver.likelihood_from_solve:
            self.log_marginal_likelihood_value_ = self._likelihood(self.kernel_.theta, False, refine=False).value
            self._factor_final()
            return
        self._factor_final()
        Y = self._targets()
        self._evaluations += 1
        self.log_marginal_likelihood_value_ = gp.likelihood_value(self._solver.solved_inv_quad_logdet(Y), Y.shape[0])

    def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
        """The log marginal likelihood of hyperparameters for the training data, and its gradient.

        Parameters
        ----------
        theta : array-like of shape (n_kernel_params,), default=None
            Log-hyperparameters of the kernel; None: the fitted kernel's value
            (``log_marginal_likelihood_value_``).
        eval_gradient : bool, default=False
            Also return the gradient with respect to theta (theta must be given).
        clone_kernel : bool, default=True
            Evaluate a copy of ``kernel_`` with theta (False: set ``kernel_.theta``).

        Returns
        -------
        log_likelihood : float
        log_likelihood_gradient : ndarray of shape (n_kernel_params,)
            Only with ``eval_gradient``.
        """
        if theta is None:
            if eval_gradient:
                raise ValueError("Gradient can only be evaluated for theta!=None")
            return self.log_marginal_likelihood_value_
        theta = np.asarray(theta, dtype=np.float64)
        if not clone_kernel:
            self.kernel_.theta = theta
        estimate = self._likelihood(theta, eval_gradient, refine=True)
        self.log_marginal_likelihood_info_ = estimate.as_dict()
        if not eval_gradient:
            return estimate.value
        return estimate.value, (np.zeros_like(theta) if estimate.gradient is None else estimate.gradient)

    def _likelihood(self, theta: np.ndarray, eval_gradient: bool, *, refine: bool):
        """The likelihood at θ with its standard error (refined_estimate.LikelihoodEstimate): with ``refine``,
        by more probes until within ``likelihood_rtol`` (cg; a user's call), else with the fit's probes."""
        kernel = self._kernel.with_theta(theta)
        solver = self._current_solver()
        if refine:
            solver = solver.with_probes(solver.probes)
        Y = self._targets()

        def evaluate(solver):
            self._evaluations = getattr(self, "_evaluations", 0) + 1
            return gp.log_marginal_likelihood(solver, kernel, Y, eval_gradient, with_gradient_error=True)

        # read now: set_params(solver__likelihood_rtol=...) after the fit applies
        rtol = cg_settings(self, _SOLVER, _CG_DEFAULTS).settings["likelihood_rtol"] if refine else None
        return gp.refine(solver, evaluate, rtol, stacklevel=4)

    # ----------------------------------------------------------------------------------------- predict

    def predict(self, X, return_std=False, return_cov=False):
        """The posterior's mean at X, and optionally its standard deviations or covariance.

        Before fit, the prior's (mean 0, the kernel's variances).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object
            Query points.
        return_std : bool, default=False
            Also return the standard deviations.
        return_cov : bool, default=False
            Also return the joint covariance (at most one of the two).

        Returns
        -------
        y_mean : ndarray of shape (n_samples,) or (n_samples, n_targets)
        y_std : ndarray of shape (n_samples,) or (n_samples, n_targets)
            With ``return_std``.
        y_cov : ndarray of shape (n_samples, n_samples) or (n_samples, n_samples, n_targets)
            With ``return_cov``.
        """
        if return_std and return_cov:
            raise RuntimeError("At most one of return_std or return_cov can be requested.")
        vector = self.kernel is None or self.kernel.requires_vector_input
        engine = engines.select(X)
        X = engine.gather(engine.new_samples(self, X, vector_input=vector), "X")  # predictions are made here
        if not hasattr(self, "X_train_"):
            return self._prior(X, return_std, return_cov)
        X = self._kernel.new_rows(X, self.X_train_)
        if return_std:  # the mean and the variances (the solver's: one cross kernel for both where it has one)
            mean, var = self._solver.mean_and_variance(self._kernel, X, self._mean_map)
        else:
            mean = self._mean_map(X)  # K(X, X_train)·α, tile by tile (where the training samples are)
        if self.alpha_.ndim == 1:
            mean = mean[:, 0]
        mean = self._y_train_std * mean + self._y_train_mean
        if mean.ndim > 1 and mean.shape[1] == 1:
            mean = np.squeeze(mean, axis=1)
        if not (return_std or return_cov):
            return mean
        if return_cov:
            cov = self._solver.covariance(self._kernel, X)
            cov = np.outer(cov, self._y_train_std**2).reshape(*cov.shape, -1)
            return mean, (np.squeeze(cov, axis=2) if cov.shape[2] == 1 else cov)
        if np.any(var < 0):
            warnings.warn("Predicted variances smaller than 0. Setting those variances to 0.", stacklevel=2)
            var[var < 0] = 0.0
        var = np.outer(var, self._y_train_std**2).reshape(*var.shape, -1)
        if var.shape[1] == 1:
            var = np.squeeze(var, axis=1)
        return mean, np.sqrt(var)

    def _prior(self, X, return_std, return_cov):
        kernel = _default_kernel(True) if self.kernel is None else self.kernel
        n_targets = self.n_targets if self.n_targets is not None else 1
        mean = np.zeros(shape=(len(X), n_targets)).squeeze()
        if return_cov:
            cov = kernel(X)
            return mean, (np.repeat(np.expand_dims(cov, -1), n_targets, axis=-1) if n_targets > 1 else cov)
        if return_std:
            var = kernel.diag(X)
            return mean, np.sqrt(np.repeat(np.expand_dims(var, -1), n_targets, axis=-1) if n_targets > 1 else var)
        return mean

    def sample_y(self, X, n_samples=1, random_state=0):
        """Draw functions from the Gaussian process (the posterior after fit, the prior before) at X.

        Parameters
        ----------
        X : array-like of shape (n_samples_X, n_features) or list of object
            Query points.
        n_samples : int, default=1
            Functions drawn.
        random_state : int, RandomState instance or None, default=0
            Seeds the draws (scikit-learn's: the same seed gives its samples).

        Returns
        -------
        y_samples : ndarray of shape (n_samples_X, n_samples) or (n_samples_X, n_targets, n_samples)
        """
        from sklearn.utils import check_random_state

        rng = check_random_state(random_state)
        mean, cov = self.predict(X, return_cov=True)
        if mean.ndim == 1:
            return rng.multivariate_normal(mean, cov, n_samples).T
        return np.hstack([rng.multivariate_normal(mean[:, t], cov[..., t], n_samples).T[:, np.newaxis]
                          for t in range(mean.shape[1])])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        return tags
