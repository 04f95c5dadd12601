"""When a cg fit's L-BFGS-B stops: where its iterations have stopped gaining.

L-BFGS-B's own tests are a tolerance on the projected gradient and ``ftol`` on one iteration's relative gain,
(f_k − f_{k+1}) / max(|f_k|, |f_{k+1}|, 1). On the likelihood per sample of a cg fit the default ftol,
2.2e-9, asks 2.2e-9·n nats of an iteration at n samples, where at a hundred thousand samples an evaluation
is many passes over the kernel, and the fits spend tens of evaluations creeping along flat length scales (of
features the labels do not depend on) for hundredths of a nat. A larger ftol stops too early instead:
L-BFGS-B's first iteration on a box is a step of the gradient itself, which per sample near a good start is
short, so its gain is tiny whatever is left to gain (bench/gaussian_process_classification.py --scale).
Here the fit stops where two iterations in a row, after the first, each gained less than
``gain`` relative to the value (as ftol's test): from the second iteration on the steps are quasi-Newton
steps, whose gains measure what is left.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["GainStop"]


class GainStop:
    """L-BFGS-B's ``callback`` (scipy passes each iterate) with :meth:`record` called by the objective on every
    evaluation; raises StopIteration where the rule of the module's documentation holds, after which
    :attr:`stopped` is true and :attr:`last` is (θ, value) of the last iterate."""

    def __init__(self, gain: float) -> None:
        self.gain = gain
        self._evaluated: list[tuple[np.ndarray, float]] = []
        self.values: list[float] = []  # at the start, then after each iteration
        self.last: tuple[np.ndarray, float] | None = None
        self.stopped = False

    def record(self, theta: np.ndarray, value: float) -> None:
        self._evaluated.append((np.array(theta, dtype=np.float64, copy=True), float(value)))
        if not self.values:
            self.values.append(float(value))
            self.last = self._evaluated[-1]

    def __call__(self, xk: np.ndarray, *args: Any) -> None:
        value = next((v for theta, v in reversed(self._evaluated) if np.array_equal(theta, xk)), None)
        if value is None:  # not an evaluated point (cannot happen with L-BFGS-B): no test
            return
        self.values.append(value)
        self.last = (np.array(xk, dtype=np.float64, copy=True), value)
        self._evaluated = self._evaluated[-1:]
        if len(self.values) < 4:  # the start and three iterations: the first's gain does not count
            return
        gains = [(self.values[-3 + i] - self.values[-2 + i]) / max(abs(self.values[-3 + i]),
                                                                   abs(self.values[-2 + i]), 1.0)
                 for i in range(2)]
        if all(g < self.gain for g in gains):
            self.stopped = True
            raise StopIteration
