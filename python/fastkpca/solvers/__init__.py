"""The solvers layer, generic over operators and row sources, one package per family of problems: Krylov methods
(krylov/: block Lanczos and its policies, preconditioned and multi-shift conjugate gradients), the dense algebra
beside the core (dense/: what Ctrl-C interrupts, on how many BLAS threads), and the families kernel_pca/,
ridge/, spectral/, kernel_kmeans/, gaussian_process/ and svm/. At the top level only what the families share:
the cost model that picks each one's solver (choice.py), row sources (rows.py) and the low-rank algebra
(low_rank.py: randomly pivoted Cholesky, landmarks, Nyström PCA, Falkon's restricted ridge problem). It imports
the operators and kernels layers only."""

from .krylov.lanczos import eigsh

__all__ = ["eigsh"]
