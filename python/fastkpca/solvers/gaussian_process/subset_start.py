"""Where an iterative solver's optimiser starts: from the hyperparameters of a fit on a random subset of the
training samples.

At tens of thousands of samples every evaluation of an iterative solver's likelihood is a few passes over the
kernel, and L-BFGS-B from the kernel's initial θ takes fifty or more of them; an exact fit on a few thousand
samples finds most of the way for the price of a few (bench/gaussian_process.py --scale and
bench/gaussian_process_classification.py --scale have the figures). The subset is ``size`` samples drawn without
replacement from the fit's random state, fitted by the exact solver. θ moves with n, though, and far beyond
the subset the exact subset's optimum can be far from the whole data's: where a solver gives a ``chain`` and n
exceeds ``chain`` times ``size``, the subset is √(size·n) samples fitted by the iterative solver, itself
started the same way (its evaluations cost size/n of the whole data's, and its optimum is nearer).

The fit on the subset is the estimator's (``fit_subset(index, solver)``: a model of its own kind on those
rows, with the solver named): it may decline, as a classifier's subset holding one class does, by returning
figures with ``"skipped"`` (the kernel's θ is then the start).
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np

from ... import _validation as v

__all__ = ["subset_start"]


def subset_start(theta: np.ndarray, fit_subset: Callable[[np.ndarray, str], tuple[np.ndarray, dict]], n: int,
                 size: int, random_state: Any, chain: int | None = None) -> tuple[np.ndarray, dict | None]:
    """(θ to start from, what was done: None where nothing was) for ``n`` training samples: the θ of
    ``fit_subset(index, solver)`` on ``size`` of them drawn from ``random_state`` (module documentation; with
    ``chain``, √(size·n) by the iterative solver where n > chain·size), where 0 < size < n; else ``theta``.
    ``fit_subset`` returns (θ, figures); the record is {"samples", "solver", its figures, "seconds"}, or
    {"samples", its figures} where they say "skipped"."""
    if not 0 < size < n:
        return theta, None
    solver = "cholesky"
    if chain is not None and n > chain * size:
        size, solver = int(math.sqrt(size * n)), "cg"
    index = np.sort(v.check_random_state(random_state).choice(n, size, replace=False))
    begin = time.perf_counter()
    found, figures = fit_subset(index, solver)
    if "skipped" in figures:
        return theta, {"samples": size, **figures}
    return found, {"samples": size, "solver": solver, **figures, "seconds": time.perf_counter() - begin}
