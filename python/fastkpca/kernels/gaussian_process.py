"""The kernels of ``sklearn.gaussian_process.kernels`` that Gaussian process users fit, evaluated natively.

A scikit-learn kernel object is read as a sum of terms

    k(x, y) = Σ_t c_t · κ_t(‖(x − y) / ℓ_t‖) + w·[x is y],

each term a ConstantKernel c_t (1 when absent) times a radial kernel κ_t — ``RBF`` (κ = exp(−r²/2)) or
``Matern`` with ν = ½, 3/2, 5/2 (exp(−r); (1 + √3 r) e^(−√3 r); (1 + √5 r + 5r²/3) e^(−√5 r)) or ∞ (RBF) —
with one length scale or one per feature (ARD), or a ConstantKernel alone (κ = 1); and WhiteKernel noise w on
the training block's diagonal (zero between distinct sets of samples, as scikit-learn's WhiteKernel is).
Sums and products nest as people write them (``C * RBF + White``, ``C1 * k1 + C2 * k2 + White``). Anything
else is evaluated by the object's own ``__call__`` (python_kernels.ScikitLearnKernel): every scikit-learn
kernel is accepted.

The hyperparameters are the object's: ``theta`` in scikit-learn's order (the free ones, in log space), and
``with_theta`` clones the object with new values. The gradient of the Gaussian process likelihood needs, for
every hyperparameter θ_j, the trace tr(W ∂K/∂θ_j) for a symmetric weight matrix W; :meth:`gradient_traces`
computes all of them in one pass over W's tiles per term, never holding ∂K/∂θ_j (the native core's
``gp_gradient_pass``):

- ∂K/∂log c_t = c_t κ_t, so tr(W ∂K/∂log c_t) = c_t Σ W ∘ κ_t; ∂K/∂log w = w I gives w·tr(W);
- a radial kernel's derivative with respect to log ℓ_j is G(r)·(x_j − y_j)²/ℓ_j², G its radial derivative
  (RBF: κ; Matern ½: e^(−r)/r, 0 at r = 0; 3/2: 3 e^(−√3 r); 5/2: (5/3)(1 + √5 r) e^(−√5 r)). One length
  scale: the sum over j, G r²: Σ W ∘ G r². ARD: with M = W ∘ G and x̃ = x/ℓ (columns centred: the sums are
  translation invariant, and centring bounds their cancellation),
  Σ_ik M_ik (x̃_ij − x̃_kj)² = 2 Σ_i x̃_ij² (M𝟙)_i − 2 x̃_jᵀ M x̃_j: one product M·[𝟙, X̃] gives all d of them.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from .. import _native, _threads
from .. import _validation as v
from .differentiable import DifferentiableKernel
from .python_kernels import ScikitLearnHyperparameters

__all__ = ["GaussianProcessKernel", "terms_of", "RADIAL", "ard_moments", "low_rank_weight_sums"]

#: The radial kernels a term may have, as the native registry names them (rbf with gamma = ½ is exp(−r²/2);
#: matern with gamma = 1 is its function of r = ‖x − y‖), and "constant" (κ = 1).
RADIAL = {"rbf": 0.5, "matern12": 1.0, "matern32": 1.0, "matern52": 1.0}
_MATERN = {0.5: "matern12", 1.5: "matern32", 2.5: "matern52"}


@dataclass
class Term:
    """c · κ(‖(x − y)/ℓ‖): its radial kind ("constant" for κ = 1), c, ℓ (one, or one per feature) and the
    positions of log c and log ℓ in the kernel's theta (None: fixed)."""

    kind: str
    constant: float
    length_scale: np.ndarray | None
    constant_at: int | None
    length_at: slice | None

    @property
    def ard(self) -> bool:
        return self.length_scale is not None and self.length_scale.shape[0] > 1


@dataclass
class Terms:
    """The terms, and the white noise with the position of its log in theta."""

    terms: list
    white: float = 0.0
    white_at: list | None = None

    def at(self, theta: np.ndarray) -> Terms:
        """The same terms with the free hyperparameters exp(θ) (θ in scikit-learn's order): the values
        ``terms_of(kernel.clone_with_theta(theta))`` reads, without the object. Each value is exponentiated as
        scikit-learn's ``theta`` setter does it (a one-element hyperparameter as a scalar, a vector as its
        slice), so that they are equal to the bit."""
        def scalar(at: int) -> float:
            return float(np.exp(theta[at]))

        terms = []
        for t in self.terms:
            scale = t.length_scale
            if t.length_at is not None:
                width = t.length_at.stop - t.length_at.start
                scale = (np.atleast_1d(np.asarray(np.exp(theta[t.length_at.start]), dtype=np.float64)) if width == 1
                         else np.asarray(np.exp(theta[t.length_at]), dtype=np.float64))
            terms.append(Term(t.kind, t.constant if t.constant_at is None else scalar(t.constant_at), scale,
                              t.constant_at, t.length_at))
        out = Terms(terms)
        for noise, at in self.white_at or []:
            level = noise if at is None else scalar(at)
            out.white += level
            out.white_at = (out.white_at or []) + [(level, at)]
        return out


def _offset_and_free(kernel, offset: int):
    """The positions of each of the kernel's (single) hyperparameter's elements in theta, or None if fixed,
    and the offset after it."""
    (h,) = kernel.hyperparameters
    if h.fixed:
        return None, offset
    return slice(offset, offset + h.n_elements), offset + h.n_elements


def _radial(kernel, offset: int):
    """(kind, ℓ, positions of log ℓ, next offset) of an RBF or a Matern of a supported ν, else None."""
    from sklearn.gaussian_process import kernels as k

    if isinstance(kernel, k.Matern):
        nu = float(kernel.nu)
        kind = "rbf" if math.isinf(nu) else _MATERN.get(nu)
    elif type(kernel) is k.RBF:
        kind = "rbf"
    else:
        return None
    if kind is None:
        return None
    at, offset = _offset_and_free(kernel, offset)
    scale = np.atleast_1d(np.asarray(kernel.length_scale, dtype=np.float64))
    return kind, scale, at, offset


def _parse(kernel, offset: int, out: Terms):
    """Add the kernel's terms to ``out``; the offset after its hyperparameters; None if not of the forms."""
    from sklearn.gaussian_process import kernels as k

    if isinstance(kernel, k.Sum):
        offset = _parse(kernel.k1, offset, out)
        return None if offset is None else _parse(kernel.k2, offset, out)
    if type(kernel) is k.WhiteKernel:
        at, after = _offset_and_free(kernel, offset)
        out.white += float(kernel.noise_level)
        out.white_at = (out.white_at or []) + [(float(kernel.noise_level), None if at is None else at.start)]
        return after
    if type(kernel) is k.ConstantKernel:
        at, after = _offset_and_free(kernel, offset)
        out.terms.append(Term("constant", float(kernel.constant_value), None, None if at is None else at.start, None))
        return after
    if isinstance(kernel, k.Product):
        a, b = kernel.k1, kernel.k2
        if type(a) is k.ConstantKernel:
            c_at, after = _offset_and_free(a, offset)
            radial = _radial(b, after)
        elif type(b) is k.ConstantKernel:
            radial = _radial(a, offset)
            c_at, after = (None, None) if radial is None else _offset_and_free(b, radial[3])
        else:
            return None
        if radial is None:
            return None
        kind, scale, l_at, after_radial = radial
        constant = float((a if type(a) is k.ConstantKernel else b).constant_value)
        out.terms.append(Term(kind, constant, scale, None if c_at is None else c_at.start, l_at))
        return after_radial if type(a) is k.ConstantKernel else after
    radial = _radial(kernel, offset)
    if radial is None:
        return None
    kind, scale, l_at, after = radial
    out.terms.append(Term(kind, 1.0, scale, None, l_at))
    return after


def terms_of(kernel) -> Terms | None:
    """The terms of a scikit-learn kernel object, or None when it is not of the forms evaluated natively."""
    out = Terms([])
    end = _parse(kernel, 0, out)
    # WhiteKernel alone has no samples to evaluate: its own __call__ serves it
    if end is None or end != kernel.n_dims or not out.terms:
        return None
    return out


def ard_moments(Xs: np.ndarray, MV: np.ndarray) -> np.ndarray:
    """Σ_ik M_ik (x̃_ij − x̃_kj)² = 2 Σ_i x̃_ij² (M𝟙)_i − 2 x̃_jᵀ (M x̃)_j for every feature j, from MV = M·[𝟙, X̃]
    (over any rows i of X̃ with their rows of MV: the sum splits over row blocks)."""
    return 2.0 * (Xs**2).T @ MV[:, 0] - 2.0 * np.einsum("ij,ij->j", Xs, MV[:, 1:])


def low_rank_weight_sums(A: np.ndarray, B: np.ndarray):
    """(Σ W, tr W) of W = ½(A Bᵀ + B Aᵀ) as callables (GaussianProcessKernel.traces_from's): Σ W = (𝟙ᵀA)·(𝟙ᵀB),
    tr W = Σ_i A_i·B_i, without W."""
    return lambda: float(A.sum(axis=0) @ B.sum(axis=0)), lambda: float(np.einsum("ij,ij->", A, B))


def _local_pass(X, native_pass):
    """A radial pass (GaussianProcessKernel.traces_from) over samples in this process: X scaled and centred,
    ``native_pass(X̃, kind, want_ard)`` the core's pass over W."""
    def radial_pass(kind: str, scale: np.ndarray, want_ard: bool):
        Xs = X * scale
        Xs = v.contiguous(Xs - Xs.mean(axis=0))
        sum_k, sum_gr2, MV = native_pass(Xs, kind, want_ard)
        return sum_k, sum_gr2, (ard_moments(Xs, MV) if want_ard else None)

    return radial_pass


class GaussianProcessKernel(ScikitLearnHyperparameters, DifferentiableKernel):
    """A scikit-learn kernel object of the forms above, evaluated natively (dense float64 samples).

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        The object; its hyperparameters are this kernel's.
    terms : Terms
        Its terms (:func:`terms_of`).
    threads : int, default=0
        Threads of the native evaluation.
    """

    native = True
    distributed = True
    cross_gradients = True

    def __init__(self, kernel, terms: Terms, threads: int = 0):
        super().__init__(threads)
        self._object, self.terms = kernel, terms
        #: A kernel made by :meth:`with_theta`: (the object it stands for is this one's clone with θ, θ); the
        #: object is made only where it is read (a label, a scikit-learn call), never by an evaluation.
        self._template: tuple | None = None
        self._snapshot = None  # a copy of the object, the template of the kernels with_theta makes
        # working copies of the samples the core keeps: one scaled copy per radial term
        self.copies = max(1, sum(t.kind != "constant" for t in terms.terms))

    @property
    def kernel(self):
        """The scikit-learn kernel object this kernel evaluates."""
        if self._object is None:
            assert self._template is not None
            template, theta = self._template
            self._object = template.clone_with_theta(theta)
        return self._object

    @kernel.setter
    def kernel(self, kernel) -> None:
        self._object, self._template, self._snapshot = kernel, None, None

    @property
    def label(self) -> str:
        return f"kernel={self.kernel!r}"


    def check_samples(self, X, name: str = "X"):
        return v.check_samples(X, name, np.float64)

    def new_rows(self, X, Y, dtype=None):
        return v.check_samples(X, "X", np.float64)

    def fitted_in(self, Y, dtype):
        return Y

    def matrix_bytes(self, n: int, itemsize: int) -> int:
        return n * n * 8

    # ------------------------------------------------------------------------------------- evaluation

    def _core_terms(self, X, Y=None) -> list:
        """(kernel, c, gamma, X/ℓ, Y/ℓ or None) of every term, as the core's sum entry points take them."""
        out = []
        for t in self.terms.terms:
            if t.kind == "constant":
                out.append(("constant", t.constant, 0.0, X, Y))
                continue
            scale = 1.0 / t.length_scale
            out.append((t.kind, t.constant, RADIAL[t.kind], v.contiguous(X * scale),
                        None if Y is None else v.contiguous(Y * scale)))
        return out

    def cross(self, X, Y=None, out=None) -> np.ndarray:
        n_y = X.shape[0] if Y is None else Y.shape[0]
        if out is None:
            out = v.empty((X.shape[0], n_y), np.float64, f"a {X.shape[0]}×{n_y} kernel block")
        _native.core.sum_gram_into(self._core_terms(X, Y), self.terms.white if Y is None else 0.0, out,
                                   self.pass_threads(out.size * self.copies, X.shape[1]))
        return out

    def diagonal(self, X) -> np.ndarray:
        return np.full(X.shape[0], sum(t.constant for t in self.terms.terms) + self.terms.white)

    def signal_diagonal(self, X) -> np.ndarray:
        return np.full(X.shape[0], float(sum(t.constant for t in self.terms.terms)))

    def matrix(self, X):
        return self.cross(X), True

    def product(self, X, Y, V, memory_limit=None) -> np.ndarray:
        V = np.ascontiguousarray(V, dtype=np.float64)
        vector = V.ndim == 1
        V2 = V.reshape(V.shape[0], -1)
        out = v.empty((X.shape[0], V2.shape[1]), np.float64, f"a {X.shape[0]}×{V2.shape[1]} product")
        _native.core.sum_cross_product_into(self._core_terms(X, Y), V2, out,
                                            self.pass_threads(X.shape[0] * Y.shape[0] * self.copies,
                                                              X.shape[1] + 2 * V2.shape[1]))
        return out[:, 0] if vector else out

    def native_operator(self, X, cached_tile_rows: int, threads: int, zero_diagonal: bool = False):
        """The core's operator of K(X, X) (packed, cached or matrix-free tiles of the sum)."""
        return _native.core.sum_kernel_operator(self._core_terms(X), self.terms.white, cached_tile_rows, threads,
                                                zero_diagonal)

    def block_tiles(self, a, b=None, zero_diagonal: bool = False) -> np.ndarray:
        return _native.core.sum_block_tiles(self._core_terms(a, b), self.terms.white if b is None else 0.0, 1,
                                            zero_diagonal)

    def block_product(self, a, b, kept, va, vb, zero_diagonal: bool = False) -> tuple:
        return _native.core.sum_block_product(self._core_terms(a, b), self.terms.white if b is None else 0.0, kept,
                                              va, vb, 1, 1, zero_diagonal)

    # ------------------------------------------------------------------------------ hyperparameters

    def with_object(self, kernel) -> GaussianProcessKernel:
        terms = terms_of(kernel)
        assert terms is not None  # the same form with other values
        return GaussianProcessKernel(kernel, terms, self.threads)

    def with_theta(self, theta) -> GaussianProcessKernel:
        """The kernel at other hyperparameters: the terms' values from θ (:meth:`Terms.at`), the object neither
        cloned nor parsed again (an optimiser's every evaluation makes one of these)."""
        theta = self._checked_theta(theta)
        other = GaussianProcessKernel(None, self.terms.at(theta), self.threads)
        # its object would be clone_with_theta(θ) of this kernel's: of a copy of it taken once (the object this
        # kernel holds may be an estimator's, whose θ the optimiser moves), or of the template it stands for
        if self._template is None:
            if self._snapshot is None:
                self._snapshot = copy.deepcopy(self._object)
            other._template = (self._snapshot, theta)
        else:
            other._template = (self._template[0], theta)
        return self._made_with(other, theta)

    def gradient_traces(self, X, W: np.ndarray) -> np.ndarray:
        """tr(W ∂K/∂θ_j) for every free hyperparameter θ_j (log space), in theta's order, from one pass over
        W's tiles per term (the module's documentation says what is computed).

        Parameters
        ----------
        X : ndarray of shape (n, d)
            The training samples (float64).
        W : ndarray of shape (n, n)
            A symmetric, C-contiguous float64 weight matrix (all of it valid).

        Returns
        -------
        traces : ndarray of shape (len(theta),)
        """
        return self.traces_from(
            _local_pass(X, lambda Xs, kind, ard: _native.core.gp_gradient_pass(
                Xs, W, kind, ard, self.pass_threads(W.size, (2 + ard) * X.shape[1]))),
            lambda: float(_native.core.symmetric_sum(W, _threads.array_threads(self.threads, W.size))),
            lambda: float(np.trace(W)))

    def gradient_traces_low_rank(self, X, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """:meth:`gradient_traces` for W = ½(A Bᵀ + B Aᵀ) (A, B of shape (n, m)), W's tiles formed where the
        pass reads them: O(n·m) memory. Σ W = (𝟙ᵀA)·(𝟙ᵀB) and tr W = Σ_i A_i·B_i."""
        A, B = v.contiguous(np.asarray(A, np.float64)), v.contiguous(np.asarray(B, np.float64))
        return self.traces_from(
            _local_pass(X, lambda Xs, kind, ard: _native.core.gp_gradient_pass_low_rank(Xs, A, B, kind, ard,
                                                                                         self.threads)),
            *low_rank_weight_sums(A, B))

    def cross_gradient_traces(self, X, Y, M: np.ndarray) -> np.ndarray:
        """tr(Mᵀ ∂K(X, Y)/∂θ_j) for a cross block (no white noise between two sets), one native pass over M's
        tiles per radial term, on one thread. ARD: with M̃ = M ∘ G and both sets scaled and shifted alike,
        Σ_ia M̃_ia (x̃_ij − ỹ_aj)² = Σ_i x̃_ij² (M̃𝟙)_i + Σ_a ỹ_aj² (M̃ᵀ𝟙)_a − 2 Σ_i x̃_ij (M̃Ỹ)_ij."""
        M = v.contiguous(np.asarray(M, dtype=np.float64))

        def radial_pass(kind: str, scale, want_ard: bool):
            shift = (Y * scale).mean(axis=0)
            Xs, Ys = v.contiguous(X * scale - shift), v.contiguous(Y * scale - shift)
            sum_k, sum_gr2, MV = _native.core.gp_gradient_cross_pass(Xs, Ys, M, kind, want_ard)
            if not want_ard:
                return sum_k, sum_gr2, None
            rows, cols = MV[:Xs.shape[0]], MV[Xs.shape[0]:]
            moments = (Xs**2).T @ rows[:, 0] + (Ys**2).T @ cols[:, 0] - 2.0 * np.einsum("ij,ij->j", Xs, rows[:, 1:])
            return sum_k, sum_gr2, moments

        return self.traces_from(radial_pass, lambda: float(M.sum()), lambda: 0.0)

    def diagonal_gradient_traces(self, X, delta: np.ndarray) -> np.ndarray:
        """Σ_k δ_k ∂k(x_k, x_k)/∂θ_j: every radial κ has κ(0) = 1 and G(0)·0 = 0, so only the constants and
        the white noise have a diagonal to differentiate."""
        total = float(np.sum(delta))
        return self.traces_from(lambda kind, scale, want_ard: (total, 0.0, np.zeros(np.size(scale)) if want_ard
                                                               else None), lambda: total, lambda: total)

    def traces_from(self, radial_pass, weight_sum, weight_trace) -> np.ndarray:
        """The traces from ``radial_pass(kind, scale, want_ard)`` — for one radial term, over the samples scaled
        by ``scale`` (1/ℓ) and centred: (Σ W∘κ, Σ W∘G r², and with ``want_ard`` the d moments
        Σ_ik M_ik (x̃_ij − x̃_kj)², else None) — ``weight_sum()`` = Σ W and ``weight_trace()`` = tr W. Wherever
        the samples are (an engine's distributed pass gives its own radial_pass)."""
        traces = np.zeros(self.theta.shape[0])
        for t in self.terms.terms:
            if t.kind == "constant":
                if t.constant_at is not None:
                    traces[t.constant_at] = t.constant * weight_sum()
                continue
            want_ard = t.length_at is not None and t.ard
            sum_k, sum_gr2, moments = radial_pass(t.kind, 1.0 / t.length_scale, want_ard)
            if t.constant_at is not None:
                traces[t.constant_at] = t.constant * sum_k
            if t.length_at is None:
                continue
            traces[t.length_at] = t.constant * (moments if t.ard else sum_gr2)
        for noise, at in self.terms.white_at or []:
            if at is not None:
                traces[at] = noise * weight_trace()
        return traces
