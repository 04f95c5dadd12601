"""A kernel with hyperparameters and the gradients of its matrix: :class:`DifferentiableKernel`, what the Gaussian
process solvers ask of a kernel beyond :class:`~fastkpca.kernels.Kernel` (solvers/gaussian_process).

Its hyperparameters are in log space, as scikit-learn's ``Kernel.theta``: ``theta``, ``bounds`` and ``with_theta``.
The likelihood's gradient needs tr(W ∂K/∂θ_j) for every θ_j, for a weight matrix W given whole, as two n × m factors
(W = ½(A Bᵀ + B Aᵀ), the iterative solvers'), by passes an engine runs where the samples are, and for cross blocks
and the diagonal (the control variate of the iterative solvers' preconditioner). A kind implements what it can;
the defaults form W, or say that the kind has no such gradient.

The kinds: kernels.gaussian_process.GaussianProcessKernel (scikit-learn kernel objects evaluated natively) and
kernels.python_kernels.ScikitLearnKernel (any other scikit-learn kernel object, by its own ``__call__``).
"""

from __future__ import annotations


import numpy as np

from .. import _validation as v
from .kernel import Kernel

__all__ = ["DifferentiableKernel"]


class DifferentiableKernel(Kernel):
    """A kernel with hyperparameters θ (log space) and the traces of its matrix's gradient (see the module).

    Parameters
    ----------
    threads : int, default=0
        Threads of its native evaluation (0: OpenMP's default), as :class:`~fastkpca.kernels.Kernel`'s.

    Attributes
    ----------
    cross_gradients : bool
        It has :meth:`cross_gradient_traces` and :meth:`diagonal_gradient_traces` (the iterative Gaussian
        process takes its preconditioner's control variate from them).
    """

    cross_gradients = False

    def gradient_traces(self, X, W: np.ndarray) -> np.ndarray:
        """tr(W ∂K/∂θ_j) for every hyperparameter θ_j (log space), in the order of :attr:`theta`.

        Parameters
        ----------
        X : ndarray of shape (n, n_features)
            The training samples.
        W : ndarray of shape (n, n)
            A symmetric weight matrix (a Gaussian process likelihood's gradient is ½ of these traces).

        Returns
        -------
        traces : ndarray of shape (len(theta),)
        """
        if self.theta.shape[0] == 0:
            return np.empty(0)
        raise NotImplementedError(f"{self.label} has no gradient with respect to its hyperparameters")

    def gradient_traces_low_rank(self, X, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """:meth:`gradient_traces` for W = ½(A Bᵀ + B Aᵀ): what the iterative Gaussian process likelihood needs
        (A = [α, K̂⁻¹z…], B = [α, −P⁻¹z/t…]). By default W is formed (n × n, checked against the memory
        available); natively evaluated kernels form its tiles where they are read.

        Parameters
        ----------
        X : ndarray of shape (n, n_features)
            The training samples.
        A, B : ndarray of shape (n, m)
            The factors of W.

        Returns
        -------
        traces : ndarray of shape (len(theta),)
        """
        if self.theta.shape[0] == 0:
            return np.empty(0)
        n = A.shape[0]
        W = v.empty((n, n), np.float64, f"the {n}×{n} weights of {self.label}'s likelihood gradient")
        np.matmul(A, B.T, out=W)
        W += W.T.copy()
        W *= 0.5
        return self.gradient_traces(X, W)

    def cross_gradient_traces(self, X, Y, M: np.ndarray) -> np.ndarray:
        """Σ_ia M_ia ∂k(x_i, y_a)/∂θ_j = tr(Mᵀ ∂K(X, Y)/∂θ_j) for every hyperparameter θ_j (log space) of a
        cross block (as :meth:`cross` evaluates it: no noise added between two sets of samples).

        Parameters
        ----------
        X : ndarray of shape (n_x, n_features)
        Y : ndarray of shape (n_y, n_features)
        M : ndarray of shape (n_x, n_y)
            The weights, float64.

        Returns
        -------
        traces : ndarray of shape (len(theta),)
        """
        raise NotImplementedError(f"{self.label} has no gradient of its cross blocks")

    def diagonal_gradient_traces(self, X, delta: np.ndarray) -> np.ndarray:
        """Σ_k δ_k ∂k(x_k, x_k)/∂θ_j (the diagonal of K(X, X), with its noise) for every hyperparameter.

        Parameters
        ----------
        X : ndarray of shape (n, n_features)
        delta : ndarray of shape (n,)

        Returns
        -------
        traces : ndarray of shape (len(theta),)
        """
        raise NotImplementedError(f"{self.label} has no gradient of its diagonal")

    def traces_from(self, radial_pass, weight_sum, weight_trace) -> np.ndarray:
        """:meth:`gradient_traces` from passes an engine runs where the samples are (a Gaussian process kernel's
        radial terms: kernels.GaussianProcessKernel.traces_from); a kernel without hyperparameters has none.

        Parameters
        ----------
        radial_pass : callable
            ``radial_pass(kind, scale, want_ard)`` -> (Σ W∘κ, Σ W∘G r², moments or None) for one radial term.
        weight_sum, weight_trace : callable
            Σ W and tr W.

        Returns
        -------
        traces : ndarray of shape (len(theta),)
        """
        if self.theta.shape[0] == 0:
            return np.empty(0)
        raise NotImplementedError(f"{self.label} has no gradient by distributed passes")

    def signal_diagonal(self, X) -> np.ndarray:
        """The diagonal of the kernel as a cross block K(X, X') evaluates it at X' = X: :meth:`diagonal` less any
        white noise the kernel adds to its own training block only (a Gaussian process's WhiteKernel).

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            Samples as :meth:`check_samples` leaves them.

        Returns
        -------
        diagonal : ndarray of shape (n_samples,)
        """
        return self.diagonal(X)

    # ------------------------------------------------------------------------------ hyperparameters

    @property
    def hyperparameters(self) -> tuple[str, ...]:
        """Names of the hyperparameters, in the order of :attr:`theta`."""
        return ()

    @property
    def theta(self) -> np.ndarray:
        """The hyperparameters in log space (scikit-learn's ``Kernel.theta``)."""
        return np.empty(0)

    @property
    def bounds(self) -> np.ndarray:
        """Bounds of :attr:`theta`, shape (len(theta), 2), in log space."""
        return np.empty((0, 2))

    def with_theta(self, theta) -> Kernel:
        """A copy with other hyperparameters.

        Parameters
        ----------
        theta : array-like of shape (len(self.theta),)
            The hyperparameters in log space.

        Returns
        -------
        kernel : Kernel
        """
        theta = np.asarray(theta, dtype=np.float64).reshape(-1)
        if theta.shape[0] != 0:
            raise ValueError(f"{self.label} has no hyperparameters, got theta of length {theta.shape[0]}")
        return self
