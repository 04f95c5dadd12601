"""Kernel ridge regression's family: the systems (K + αI) β = y by a Cholesky factor in place, preconditioned
conjugate gradients or Falkon's restricted problem on landmarks (systems.py); the three solvers behind one
interface that the cost model picks from (solvers.py); and cross-validation over many alphas from one
factorisation per kernel, leave-one-out and k-fold, dense or matrix-free (cv.py)."""

from __future__ import annotations
