"""The support vector machine's solvers: the one dual solver of the native core (batched SMO to LIBSVM's
stopping rule, ``cpp/include/fastkpca/svm``) and what is built on it.

- :mod:`.formulation`: LIBSVM's five formulations (C-SVC, ν-SVC, one-class, ε-SVR, ν-SVR) as objects, each
  building its dual for that solver and reading its solution as a decision function;
- :mod:`.dual`: the solver's settings and one solve;
- :mod:`.plan`: the memory a solve takes, the whole problem as one working set or working sets (by
  solvers/choice.py), its column cache sized by the memory limit;
- :mod:`.one_vs_one`: a multi-class fit as its class pairs' binary problems over one kernel, scheduled on the
  cores, and LIBSVM's packed layout of their coefficients;
- :mod:`.probability`: Platt's sigmoid on cross-validated decision values and pairwise coupling;
- :mod:`.fitted`: what a model needs of its samples and kernel: the column source, gamma, the support set
  new samples are evaluated against.

Generic over the kernel object (:meth:`fastkpca.kernels.Kernel.column_source`); the estimators choose nothing.
"""

from __future__ import annotations

from .dual import DualSolution, solve, solve_planned
from .settings import DualSettings
from .formulation import (CClassification, EpsilonRegression, Formulation, NuClassification, NuRegression,
                          OneClass)
from .one_vs_one import PairModel, Pairs

__all__ = ["DualSettings", "DualSolution", "solve", "solve_planned", "Formulation", "CClassification",
           "NuClassification", "OneClass", "EpsilonRegression", "NuRegression", "PairModel", "Pairs"]
