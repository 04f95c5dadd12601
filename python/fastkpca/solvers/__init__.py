"""The solvers layer, generic over operators and row sources: block Lanczos (eigenpairs) and its policies,
scikit-learn's dense / ARPACK / randomized eigensolvers, preconditioned and multi-shift conjugate gradients,
the low-rank algebra (randomly pivoted Cholesky, landmarks, Nyström PCA, Falkon's restricted ridge problem),
kernel ridge's solvers and their cross-validation. It imports the operators and kernels layers only."""

from .krylov.lanczos import eigsh

__all__ = ["eigsh"]
