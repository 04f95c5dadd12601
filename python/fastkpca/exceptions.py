"""Warnings and errors raised by fastkpca."""


class ConvergenceWarning(UserWarning):
    """An iterative solver stopped at its iteration limit before every wanted pair converged.

    The best pairs found are still returned; ``return_info=True`` tells how far from converged they are.
    """
