"""Warnings and errors raised by fastkpca."""


class FastkpcaWarning(UserWarning):
    """Base class of every warning fastkpca issues."""


class ConvergenceWarning(FastkpcaWarning):
    """An iterative solver stopped at its iteration limit before every wanted pair converged.

    The best pairs found are still returned; ``return_info=True`` tells how far from converged they are.
    """


class NonEuclideanWarning(FastkpcaWarning):
    """Classical scaling was given dissimilarities that are not Euclidean distances (the doubly centered
    matrix has significant negative eigenvalues); only the positive part is embedded."""


class SingularKernelWarning(FastkpcaWarning):
    """K + alpha·I is singular (alpha = 0 with a rank-deficient kernel): a least-squares solution is used."""
