"""Solver objects: what an estimator's ``solver`` (or ``eigen_solver``) parameter takes beside a name, carrying
that solver's own settings, so that the estimator's constructor holds scikit-learn's parameters plus at most
``solver``, ``memory_limit`` and ``n_jobs``::

    KernelRidge(alpha=0.1, kernel="rbf", solver=CG(tol=1e-10, preconditioner_rank=800))
    GaussianProcessRegressor(kernel, solver=CG(n_probes=32, tol=1e-3))
    KernelPCA(n_components=8, kernel="rbf", eigen_solver=Nystrom(n_landmarks=2000))

A solver object is a scikit-learn estimator of parameters only: it shows in the model's ``repr``, and
``get_params(deep=True)``, ``set_params(solver__tol=...)`` and ``clone`` reach its settings as nested
parameters. A setting left at its default takes the family's default; a setting the family's solver does not
read is an error (``CG(n_probes=8)`` means nothing to KernelRidge), never silently dropped.

:func:`resolve` reads an estimator's solver parameter into the solver's name and the settings given, and
reads the estimator keywords the objects replace (deprecated: kept one release, with a FutureWarning naming
the new spelling).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import numpy as np
from sklearn.base import BaseEstimator

from .. import _validation as v
from ..solvers import low_rank
from ..solvers.ridge import systems

__all__ = ["CG", "Nystrom", "DEPRECATED", "SolverFamily", "Resolved", "resolve", "parameter_for"]

DEPRECATED = v.DEPRECATED


class SolverSettings(BaseEstimator):
    """A solver's name and settings; subclasses declare ``name`` and ``_CONSTRAINTS`` (one per setting)."""

    name: ClassVar[str]
    _CONSTRAINTS: ClassVar[dict[str, Callable[[Any, str], None]]]

    #: Each setting and its default, read once per class (a small fit's fixed cost).
    _DEFAULTS: ClassVar[dict[str, Any]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._DEFAULTS = {key: p.default for key, p in inspect.signature(cls).parameters.items()}

    def given(self) -> dict[str, Any]:
        """The settings that differ from their defaults, checked against their constraints."""
        values = {key: getattr(self, key) for key in self._DEFAULTS}
        for key, constraint in self._CONSTRAINTS.items():
            constraint(values[key], f"{type(self).__name__}'s {key}")
        return {key: value for key, value in values.items() if not _is_default(value, self._DEFAULTS[key])}


def _is_default(value: Any, default: Any) -> bool:
    """Whether ``value`` is the parameter's default (only scalars and None compare: an array is always given)."""
    if value is default:
        return True
    scalar = (str, bool, int, float, np.integer, np.floating)
    return isinstance(value, scalar) and isinstance(default, scalar) and type(value) is not bool and value == default


class CG(SolverSettings):
    """Conjugate gradients on the kernel operator, with a randomly pivoted Cholesky preconditioner: the
    iterative solver of KernelRidge (``solver="cg"``), GaussianProcessRegressor and GaussianProcessClassifier.

    Every setting left at its default takes the estimator family's default (the estimators' documentation
    says what each means there); setting one the family does not read raises ValueError at fit.

    Parameters
    ----------
    tol : float, default=None
        Relative residual the iterations stop at. KernelRidge: of the solve (None: 1e-8). Gaussian process
        regression: of the probes' solves in each evaluation of the likelihood (None: 1e-2).
    max_iter : int, default=1000
        Products by the kernel one solve may spend.
    preconditioner_rank : int, default=None
        Rank of the preconditioner's factor; 0 for none (None: the family's rule from N and the memory limit).
    preconditioner_dtype : {"auto", "float64", "float32"}, default="auto"
        Storage of the preconditioner's factor. KernelRidge: ``"auto"`` picks float32 where its rounding is far
        below alpha; the Gaussian processes: ``"auto"`` is float64.
    precision : {"auto", "float64", "mixed"}, default="auto"
        KernelRidge only: the iterations' products in float64, or by a float32 kernel with float64 residual
        updates (``"mixed"``); ``"auto"``: mixed where the kernel is recomputed on every pass.
    n_probes : int, default=None
        Gaussian processes only: random probe vectors of the stochastic trace estimates (None: 16 for
        regression, 32 for classification).
    final_tol : float, default=1e-6
        Gaussian process regression only: relative residual of the final solve and of the predictive variances.
    subset_start : int, default=3000
        Gaussian processes only: the optimiser starts from the hyperparameters fitted exactly on a subset of
        this many samples (0: from the kernel's own).
    theta_tol : float or None, default=0.05
        Gaussian process regression only: the error in the fitted log-hyperparameters the optimiser's last
        steps settle to (None: no settling).
    likelihood_rtol : float or None, default=3e-4
        Gaussian processes only: the optimiser stops once the likelihood's relative change falls below this
        (None: scikit-learn's L-BFGS-B rule alone).
    random_state : int, RandomState instance or None, default=None
        KernelRidge only: seeds the preconditioner's pivots (the Gaussian processes read their own
        ``random_state``).

    Examples
    --------
    >>> from fastkpca import CG, KernelRidge
    >>> model = KernelRidge(kernel="rbf", solver=CG(tol=1e-10))
    >>> model.get_params()["solver__tol"]
    1e-10
    """

    name = "cg"
    _CONSTRAINTS = {
        "tol": v.real(0.0, none=True), "max_iter": v.integer(1), "preconditioner_rank": v.integer(0, none=True),
        "preconditioner_dtype": v.choice("auto", "float64", "float32"),
        "precision": v.choice(*systems.CG_PRECISIONS), "n_probes": v.integer(2, none=True),
        "final_tol": v.real(0.0), "subset_start": v.integer(0), "theta_tol": v.real(0.0, none=True),
        "likelihood_rtol": v.real(0.0, none=True), "random_state": v.anything,
    }

    def __init__(self, *, tol: float | None = None, max_iter: int = 1000, preconditioner_rank: int | None = None,
                 preconditioner_dtype: str = "auto", precision: str = "auto", n_probes: int | None = None,
                 final_tol: float = 1e-6, subset_start: int = 3000, theta_tol: float | None = 0.05,
                 likelihood_rtol: float | None = 3e-4, random_state: int | np.random.RandomState | None = None):
        self.tol = tol
        self.max_iter = max_iter
        self.preconditioner_rank = preconditioner_rank
        self.preconditioner_dtype = preconditioner_dtype
        self.precision = precision
        self.n_probes = n_probes
        self.final_tol = final_tol
        self.subset_start = subset_start
        self.theta_tol = theta_tol
        self.likelihood_rtol = likelihood_rtol
        self.random_state = random_state


class Nystrom(SolverSettings):
    """The Nyström approximation: the problem restricted to m landmarks (KernelRidge's ``solver="nystrom"``,
    Falkon's; KernelPCA's, SpectralEmbedding's and SpectralClustering's ``eigen_solver="nystrom"``).

    Parameters
    ----------
    n_landmarks : int, default=None
        Landmarks m (None: min(1000, n_samples)).
    landmarks : {"rpcholesky", "uniform"} or array-like of shape (m, n_features), default="rpcholesky"
        How the landmarks are chosen: by randomly pivoted Cholesky (each landmark drawn with probability
        proportional to what the previous ones leave unexplained; on more than ~33,000 samples per 1000
        landmarks, among a uniform subsample of that many rows), uniformly at random (scikit-learn's
        Nystroem), or the given points.
    random_state : int, RandomState instance or None, default=None
        KernelRidge only: seeds the landmarks (the other estimators draw them with their own
        ``random_state``).

    Examples
    --------
    >>> from fastkpca import KernelPCA, Nystrom
    >>> KernelPCA(n_components=2, kernel="rbf", eigen_solver=Nystrom(n_landmarks=200))
    KernelPCA(eigen_solver=Nystrom(n_landmarks=200), kernel='rbf', n_components=2)
    """

    name = "nystrom"
    _CONSTRAINTS = {"n_landmarks": v.integer(1, none=True),
                    "landmarks": v.choice(*low_rank.LANDMARK_METHODS, other=v.anything), "random_state": v.anything}

    def __init__(self, *, n_landmarks: int | None = None, landmarks: str | Any = "rpcholesky",
                 random_state: int | np.random.RandomState | None = None):
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.random_state = random_state


@dataclass(frozen=True)
class SolverFamily:
    """How one estimator's solver parameter reads: the names it takes, the settings each solver object's
    class may carry there, and the estimator's deprecated keywords with the setting each became."""

    #: The parameter: "solver" or "eigen_solver".
    parameter: str
    #: The names it takes (None among them where it defaults to None).
    names: tuple
    #: Each solver object's class it takes, and the settings of it the family reads.
    reads: Mapping[type[SolverSettings], frozenset[str]]
    #: Old estimator keyword → (the solver objects' classes that took it, the setting's name there).
    deprecated: Mapping[str, tuple[tuple[type[SolverSettings], ...], str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Resolved:
    """An estimator's solver: its name (or None) and the settings given, by the object or by deprecated
    keywords (a setting not given is absent: the family's default applies)."""

    name: str | None
    settings: dict[str, Any]


def resolve(estimator: BaseEstimator, family: SolverFamily, *, stacklevel: int = 3) -> Resolved:
    """The solver ``estimator``'s parameter names, with its settings; ValueError or TypeError naming the
    parameter for a wrong one, a setting the family does not read, or a setting given twice. A deprecated
    keyword's FutureWarning points ``stacklevel`` frames up (3: the caller of the estimator's fit)."""
    owner = type(estimator).__name__
    value = getattr(estimator, family.parameter)
    old = {key: getattr(estimator, key) for key in family.deprecated if not v.left_deprecated(getattr(estimator, key))}
    if isinstance(value, SolverSettings):
        if type(value) not in family.reads:
            raise ValueError(f"{owner}'s {family.parameter} takes {_takes(family)}, got {value!r}")
        given = value.given()
        unread = sorted(set(given) - family.reads[type(value)])
        if unread:
            raise ValueError(f"{owner} does not read {type(value).__name__}'s {', '.join(unread)} (its "
                             f"{type(value).__name__} reads {', '.join(sorted(family.reads[type(value)]))})")
        for key, setting in _deprecated(owner, family, old, type(value), stacklevel + 1).items():
            if key in given:
                raise ValueError(f"{owner}: {key} given twice, by {family.parameter}={value!r} and by the deprecated "
                                 f"keyword; set it on the solver object only")
            given[key] = setting
        return Resolved(value.name, given)
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{owner}'s {family.parameter} takes {_takes(family)}, got {value!r}")
    if value is not None or None not in family.names:
        v.check_choice(value, family.parameter, tuple(name for name in family.names if name is not None))
    cls = next((cls for cls in family.reads if cls.name == value), None)
    return Resolved(value, _deprecated(owner, family, old, cls, stacklevel + 1))


def _deprecated(owner: str, family: SolverFamily, old: Mapping[str, Any], cls: type[SolverSettings] | None,
                stacklevel: int) -> dict[str, Any]:
    """The settings the deprecated keywords ``old`` give, each checked by the solver object's constraint and
    with its FutureWarning: those ``cls`` has (the class of the solver that runs), or every one where ``cls`` is
    None ("auto", or a solver without settings: a solver reads its own)."""
    settings = {}
    for key, given in old.items():
        classes, setting = family.deprecated[key]
        target = cls if cls in classes else classes[0]
        target._CONSTRAINTS[setting](given, key)
        warnings.warn(f"{owner}({key}=...) is deprecated and will be removed in the next minor release: pass "
                      f"{family.parameter}=fastkpca.{target.__name__}({setting}={_short(given)}) instead",
                      FutureWarning, stacklevel=stacklevel)
        if cls is None or cls in classes:
            settings[setting] = given
    return settings


def parameter_for(family: SolverFamily, name: str, settings: Mapping[str, Any]) -> str | SolverSettings:
    """The solver parameter that runs the solver ``name`` with ``settings`` (those its object reads): its
    solver object where the family has one of that name, else the name."""
    cls = next((cls for cls in family.reads if cls.name == name), None)
    return name if cls is None else cls(**{key: value for key, value in settings.items() if key in family.reads[cls]})


def _takes(family: SolverFamily) -> str:
    names = ", ".join(repr(name) for name in family.names)
    return f"one of {names} or a solver object ({', '.join(cls.__name__ for cls in family.reads)})"


def _short(value: Any) -> str:
    """A setting's value as the warning spells it (an array by its shape)."""
    return f"<array of shape {np.shape(value)}>" if np.ndim(value) else repr(value)
