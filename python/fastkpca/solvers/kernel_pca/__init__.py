"""Kernel PCA's family: its eigensolvers as peers behind one interface, picked once per fit by the cost model
(solvers.py: block Lanczos, the dense solvers, Nyström), and scikit-learn's dense / ARPACK / randomized
eigensolvers on an explicitly centered kernel matrix, with the centering in place they need (dense.py). Only
kernel PCA uses dense.py (its solvers and the KernelPCA estimator, which reads its solvers' names): spectral
embedding's dense route calls the blocked symmetric eigensolver itself, and its scikit-learn solvers are
scikit-learn's spectral_embedding."""

from __future__ import annotations
