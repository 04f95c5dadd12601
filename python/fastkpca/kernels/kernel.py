"""What a kernel is to the layers above: the :class:`Kernel` interface that every kind implements, and the
pieces every kind gets from its cross blocks.

A kernel is one object: its kind (a native kernel with resolved parameters, a precomputed matrix, a
Python callable or one of scikit-learn's metrics, a scikit-learn kernel object, a graph affinity, or a kind
registered by a user, kinds.py), its parameters and hyperparameters, and what it can evaluate on
validated samples in this process (a dense array or, where the kind takes one, a SciPy CSR matrix):

- ``cross(X, Y)``: the block K(X, Y) (``Y=None``: the symmetric K(X, X));
- ``diagonal(X)``, and ``columns(X)``: the column source randomly pivoted Cholesky reads;
- ``matrix(X)``: the whole K(X, X) and whether the caller may overwrite it (a precomputed kernel is the
  user's, read in place);
- ``product(X, Y, V)``: K(X, Y)·V in float64, the cross kernel never held beyond a bounded chunk (the
  native kinds multiply tile by tile and hold nothing);
- ``cross_product(Y, V, correction)``: the fitted row map x ↦ correction(K(x, Y)·V) of transform and
  predict (picklable);
- ``column_source(X)``: the native core's source of kernel columns that a support vector machine's dual
  solver reads (solvers/svm).

A kernel with hyperparameters and the gradients of its matrix, what the Gaussian processes ask for, extends it
(differentiable.py).

The operators layer builds a kernel operator of any storage from these (operators/operator.py: the native
kinds' tiles, a kernel's matrix, or its row blocks recomputed on every pass); an engine evaluates it where
its samples live. Estimators hold a Kernel and never ask which kind it is.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

from .. import _native, _threads
from .. import _validation as v

__all__ = ["Kernel", "KernelColumns", "CrossProduct", "CROSS_KERNEL_CHUNK_BYTES", "chunk_rows"]

#: Largest piece of a cross kernel a chunked product builds at once (also at most a quarter of the memory
#: limit). Native kernels never build one: their products go tile by tile.
CROSS_KERNEL_CHUNK_BYTES = 256 * 2**20


def chunk_rows(n_columns: int, memory_limit: int | None = None) -> int:
    """Rows of a cross kernel with ``n_columns`` columns per chunk: at most CROSS_KERNEL_CHUNK_BYTES of float64
    and a quarter of ``memory_limit``."""
    budget = CROSS_KERNEL_CHUNK_BYTES if memory_limit is None else min(CROSS_KERNEL_CHUNK_BYTES, memory_limit // 4)
    return max(1, budget // max(1, 8 * n_columns))


class Kernel:
    """A kernel: its kind, its parameters, and its evaluation on validated samples in this process.

    A kind subclasses it and implements :meth:`cross`; everything else has a default built on it (override
    where the kind does better). The class attributes say what the kind can do: the layers below the
    estimators read them, estimators never do. See the user guide's "Kernels" page for writing a kind and
    registering it (:func:`fastkpca.kernels.register`).

    Parameters
    ----------
    threads : int, default=0
        Threads of its native evaluation (0: OpenMP's default).

    Attributes
    ----------
    native : bool
        The native core evaluates it: tiles in every storage mode (``native_operator``).
    distributed : bool
        A Dask cluster's workers evaluate it too.
    precomputed : bool
        Its samples are the kernel matrix itself (scikit-learn's ``"precomputed"``): read in place, and
        ``cross(X, Y)`` is X, the rows of a cross kernel given by the caller.
    blocks : bool
        It evaluates blocks K(X_I, X_J) of any rows (False: it exists only as one matrix, a precomputed
        kernel or a graph affinity).
    symmetric : bool
        K(X, X) is exactly symmetric (a precomputed matrix is checked; ``asymmetry`` is its largest
        entry of ``abs(K - K.T)``).
    asymmetry : float
        See ``symmetric``.
    threads : int
        See Parameters.
    """

    native = False
    precomputed = False
    blocks = True
    symmetric = True
    asymmetry = 0.0
    #: Working copies of the samples the native core keeps (a sum of terms keeps one scaled copy per term).
    copies = 1
    #: The Dask engine evaluates it on its workers (a registry kernel: kernels.NativeKernel).
    distributed = False
    #: New samples are evaluated against every training sample, not a subset (a function of two sets of samples
    #: may rely on seeing the whole training set, as scikit-learn's support vector machines give it).
    reads_all_fitted = False
    #: :meth:`column_source` evaluates the columns of dense float64 samples in float32 when asked (``fast``).
    float32_columns = False

    def __init__(self, threads: int = 0):
        self.threads = threads

    def pass_threads(self, entries: float, features: int = 0) -> int:
        """The threads of a native pass over ``entries`` kernel entries of ``features`` features.

        The kernel's own count, but, when no thread count was asked for (``threads`` 0), one thread for a pass
        whose predicted work is below what a team needs to pay for itself, and the team on the cores no other
        thread holds for a short one: the library's thread rule (fastkpca/_threads.py).

        Parameters
        ----------
        entries : float
            Kernel entries the pass evaluates.
        features : int, default=0
            Features of each entry's distance or inner product.

        Returns
        -------
        threads : int
            For the core: a count, 0 (OpenMP's default team) or _threads.SHORT_CALL_TEAM.
        """
        return _threads.pass_threads(self.threads, _threads.kernel_seconds(entries, features))

    # ---------------------------------------------------------------------------------------- identity

    @property
    def label(self) -> str:
        """How messages name it, as the user wrote it: ``kernel='rbf'``, ``kernel=<function f>``, ..."""
        return f"kernel={type(self).__name__}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.label}>"

    @property
    def evaluated_by(self) -> str:
        """Who evaluates its entries, as solver reports say: "native" (the core's tiles) or "python"."""
        return "native" if self.native else "python"

    # -------------------------------------------------------------------------------------- samples

    def for_samples(self, X) -> Kernel:
        """The kernel to use for these samples.

        A kind may hand over to another, as scikit-learn's nearest-neighbour affinity falls back to rbf for
        sparse data; by default the kernel itself.

        Parameters
        ----------
        X : ndarray or sparse matrix of shape (n_samples, n_features)
            The training samples, validated by the engine.

        Returns
        -------
        kernel : Kernel
        """
        return self

    def check_samples(self, X, name: str = "X"):
        """X as this kind evaluates it.

        Parameters
        ----------
        X : ndarray or sparse matrix of shape (n_samples, n_features)
            Samples validated by the engine (2-D, finite, float32 or float64).
        name : str, default="X"
            How error messages name X.

        Returns
        -------
        X : ndarray or sparse matrix
            By default dense, C-contiguous and aligned (sparse data densified after a memory check).
        """
        return v.check_samples(X, name, X.dtype if X.dtype in (np.float32, np.float64) else np.float64)

    def matrix_bytes(self, n: int, itemsize: int) -> int:
        """Bytes :meth:`matrix` allocates for n samples (the storage planner's figure).

        Parameters
        ----------
        n : int
            Samples.
        itemsize : int
            Bytes of one of their values.

        Returns
        -------
        nbytes : int
        """
        return n * n * 8

    # ------------------------------------------------------------------------------------- evaluation

    def cross(self, X, Y=None, out: np.ndarray | None = None) -> np.ndarray:
        """The kernel block K(X, Y).

        Parameters
        ----------
        X : ndarray or sparse matrix of shape (n_X, n_features)
            Samples as :meth:`check_samples` leaves them.
        Y : ndarray or sparse matrix of shape (n_Y, n_features), default=None
            Samples; None means X, and then the block must be exactly symmetric.
        out : ndarray of shape (n_X, n_Y), default=None
            Where to write it.

        Returns
        -------
        K : ndarray of shape (n_X, n_Y)
            C-contiguous float32 or float64 (``out`` when given).
        """
        raise NotImplementedError(f"{type(self).__name__}.cross")

    @staticmethod
    def _into(K, out: np.ndarray | None) -> np.ndarray:
        """K as cross returns it: in ``out`` when given, else C-contiguous, aligned and writable (float)."""
        K = np.asarray(K)
        if out is not None:
            out[...] = K
            return out
        if K.dtype not in (np.float32, np.float64):
            K = K.astype(np.float64)
        return K if K.flags.c_contiguous and K.flags.writeable and K.flags.aligned else np.array(K, order="C")

    def diagonal(self, X) -> np.ndarray:
        """k(x_i, x_i) for every row (by default from diagonal blocks of at most 256 rows).

        Parameters
        ----------
        X : ndarray or sparse matrix of shape (n_samples, n_features)
            Samples as :meth:`check_samples` leaves them.

        Returns
        -------
        diagonal : ndarray of shape (n_samples,)
        """
        n = X.shape[0]
        out = np.empty(n)
        for start in range(0, n, 256):
            out[start:start + 256] = np.diagonal(self.cross(X[start:start + 256]))
        return out

    def matrix(self, X) -> tuple[Any, bool]:
        """The whole kernel matrix K(X, X).

        Checked finite, and made exactly symmetric where the kind's evaluation left rounding differences
        between K and Kᵀ (the solvers read one triangle).

        Parameters
        ----------
        X : ndarray or sparse matrix of shape (n_samples, n_features)
            Samples as :meth:`check_samples` leaves them.

        Returns
        -------
        K : ndarray or sparse matrix of shape (n_samples, n_samples)
        owned : bool
            Whether the caller may overwrite K (a precomputed kernel is the user's).
        """
        K = v.contiguous(np.asarray(self.cross(X)))
        if K.dtype not in (np.float32, np.float64):
            K = K.astype(np.float64)
        finite, _, asymmetry = _native.core.scan_square(K, True, _threads.array_threads(self.threads, K.size))
        if not finite:
            raise ValueError(f"the kernel matrix of {self.label} contains NaN or infinity")
        if asymmetry:
            K = v.contiguous((K + K.T) * K.dtype.type(0.5))
        return K, True

    def columns(self, X) -> KernelColumns:
        """The diagonal and columns K(X, X_S), evaluated on demand: what randomly pivoted Cholesky reads.

        Parameters
        ----------
        X : ndarray or sparse matrix of shape (n_samples, n_features)
            Samples as :meth:`check_samples` leaves them.

        Returns
        -------
        source : KernelColumns
            With ``n``, ``dtype``, ``diagonal()`` and ``columns(index, out)``.
        """
        return KernelColumns(X, self)

    def column_source(self, X, memory_limit: int | None = None, fast: bool = False):
        """The native core's kernel columns of X (what the support vector machine's dual solver reads).

        By default from the whole matrix (:meth:`matrix`, checked against ``memory_limit`` first), read in
        place; the native kinds evaluate each working set's columns where they are needed instead.

        Parameters
        ----------
        X : ndarray or sparse matrix of shape (n_samples, n_features)
            Samples as :meth:`check_samples` leaves them.
        memory_limit : int, default=None
            Bytes the matrix may take (None: the memory available).
        fast : bool, default=False
            Evaluate the columns of float64 samples in float32 where the kind can (twice the entries per
            SIMD vector; the columns are kept in float32 either way).

        Returns
        -------
        columns : the core's SvmKernelColumns
        """
        n = X.shape[0] if hasattr(X, "shape") else len(X)
        if memory_limit is not None:
            v.check_within(self.matrix_bytes(n, 8), memory_limit, f"the whole {n}×{n} matrix of {self.label}",
                           "a native kernel evaluates its columns where they are needed")
        K, _ = self.matrix(X)
        if v.is_sparse(K):
            K = K.toarray()
        K = v.contiguous(np.asarray(K))
        if K.dtype not in (np.float32, np.float64):
            K = K.astype(np.float64)
        return _native.core.svm_matrix_columns(K, self.pass_threads(K.shape[0]))

    def new_rows(self, X, Y, dtype=None):
        """New samples as this kind evaluates them against fitted samples.

        Parameters
        ----------
        X : ndarray or sparse matrix of shape (n_new, n_features)
            New samples, validated by the engine.
        Y : ndarray or sparse matrix of shape (n_fit, n_features)
            The fitted samples.
        dtype : numpy dtype, default=None
            The dtype to evaluate in (None: X's).

        Returns
        -------
        X : ndarray or sparse matrix
            In the format and dtype the kind needs (a native kernel: Y's format).
        """
        return self.check_samples(X if dtype is None else X.astype(dtype, copy=False), "X")

    def fitted_in(self, Y, dtype):
        """The fitted samples as an evaluation in ``dtype`` reads them.

        Parameters
        ----------
        Y : ndarray or sparse matrix of shape (n_fit, n_features)
            The fitted samples.
        dtype : numpy dtype or None
            The dtype of the evaluation.

        Returns
        -------
        Y : ndarray or sparse matrix
            A cast copy where the dtypes differ.
        """
        return Y if dtype is None or Y.dtype == dtype else Y.astype(dtype)

    def product(self, X, Y, V: np.ndarray, memory_limit: int | None = None) -> np.ndarray:
        """K(X, Y)·V in float64, the cross kernel never held beyond a bounded chunk.

        By default X's rows go in chunks of at most ``CROSS_KERNEL_CHUNK_BYTES`` of cross kernel (and a
        quarter of ``memory_limit``): a row's result depends on that row alone, so the chunks give what one
        piece would.

        Parameters
        ----------
        X : ndarray or sparse matrix of shape (n_X, n_features)
            Samples as :meth:`new_rows` leaves them.
        Y : ndarray or sparse matrix of shape (n_Y, n_features)
            Samples.
        V : ndarray of shape (n_Y,) or (n_Y, k)
            The vectors.
        memory_limit : int, default=None
            Bytes that bound the chunks.

        Returns
        -------
        W : ndarray of shape (n_X,) or (n_X, k)
        """
        V = np.asarray(V, dtype=np.float64)
        n = X.shape[0] if hasattr(X, "shape") else len(X)  # samples a Python kernel reads as they are: a list
        rows = chunk_rows(Y.shape[0] if hasattr(Y, "shape") else len(Y), memory_limit)
        out = v.empty((n, *V.shape[1:]), np.float64, f"a {n}×{V.shape[1] if V.ndim > 1 else 1} product")
        for start in range(0, n, rows):
            out[start:start + rows] = np.asarray(self.cross(X[start:start + rows], Y)) @ V
        return out

    def cross_product(self, Y, V: np.ndarray, correction: Callable | None = None, *, promote: bool = False,
                      out_dtype=None, memory_limit: int | None = None) -> CrossProduct:
        """The fitted row map of transform and predict, ``x ↦ correction(K(x, Y)·V)``.

        Parameters
        ----------
        Y : ndarray or sparse matrix of shape (n_fit, n_features)
            The fitted samples.
        V : ndarray of shape (n_fit, k)
            The coefficients.
        correction : callable, default=None
            A picklable function of each block of the product.
        promote : bool, default=False
            Evaluate in float32 only when both sides are float32 (scikit-learn's pairwise kernels).
        out_dtype : numpy dtype, default=None
            The result's dtype (None: float64).
        memory_limit : int, default=None
            Bytes that bound a chunked product's chunks.

        Returns
        -------
        rowmap : CrossProduct
        """
        return CrossProduct(self, Y, V, correction, promote=promote, out_dtype=out_dtype, memory_limit=memory_limit)

    # ----------------------------------------------------------------------------------- variants

    def on_threads(self, threads: int) -> Kernel:
        """The same kernel evaluated on ``threads`` threads (an engine's task shares its worker's cores).

        Parameters
        ----------
        threads : int
            Threads of its native evaluation.

        Returns
        -------
        kernel : Kernel
        """
        other = copy.copy(self)
        other.threads = threads
        return other

    def between_samples(self, what: str) -> Kernel:
        """The kernel for evaluations between samples other than the training pairs.

        Landmarks (Nyström solvers), or the points of another feature space (KernelPCA's pre-image map is a
        kernel ridge regression on the scores).

        Parameters
        ----------
        what : str
            What needs it, for the error (``"fit_inverse_transform"``, ``"use eigen_solver='nystrom'"``).

        Returns
        -------
        kernel : Kernel

        Raises
        ------
        ValueError
            ``Cannot {what} with ...`` for a kind that is only a matrix of the training samples.
        """
        return self

    def native_operator(self, X, cached_tile_rows: int, threads: int, zero_diagonal: bool = False):
        """The native core's operator of K(X, X) (a native kind's; operators.build wraps it).

        Parameters
        ----------
        X : ndarray or sparse matrix of shape (n_samples, n_features)
            Samples as :meth:`check_samples` leaves them.
        cached_tile_rows : int
            Tile rows of the packed triangle kept (all: packed; 0: matrix-free).
        threads : int
            Threads of the build.
        zero_diagonal : bool, default=False
            Without its diagonal (an affinity).

        Returns
        -------
        operator : the core's Operator
        """
        raise NotImplementedError(f"{self.label} is not evaluated by the native core")

    # -------------------------------------------------------------- a distributed pass's pair of row blocks

    def block_tiles(self, a, b=None, zero_diagonal: bool = False) -> np.ndarray:
        """The tiles of the block k(a, b) (b None: the lower tiles of k(a, a)) in the form
        :meth:`block_product` reads: what a worker keeps of a pair of row blocks (engines/dask.py). Only kernels
        with ``distributed`` have them.

        Parameters
        ----------
        a, b : ndarray
            Rows as :meth:`check_samples` leaves them.
        zero_diagonal : bool, default=False
            Without the diagonal of k(a, a).

        Returns
        -------
        tiles : ndarray (1-D)
        """
        raise NotImplementedError(f"{self.label} is not evaluated on a Dask cluster's workers")

    def block_product(self, a, b, kept, va: np.ndarray, vb, zero_diagonal: bool = False) -> tuple:
        """(k(a, b)·vb, k(a, b)ᵀ·va), or (k(a, a)·va, None) for b None, each tile evaluated once, on one thread
        (a Dask task's work unit); ``kept`` tiles from :meth:`block_tiles` (or None) give the same numbers.

        Parameters
        ----------
        a, b : ndarray
            Rows as :meth:`check_samples` leaves them (b None: the symmetric block of a).
        kept : ndarray or None
        va, vb : ndarray (float64)
            A row per row of a (and of b).
        zero_diagonal : bool, default=False

        Returns
        -------
        (wa, wb) : ndarray, ndarray or None
        """
        raise NotImplementedError(f"{self.label} is not evaluated on a Dask cluster's workers")


class KernelColumns:
    """The diagonal and the columns K(X, X_S) of a kernel on samples X, evaluated on demand: what randomly
    pivoted Cholesky reads (solvers/low_rank.py's column source)."""

    def __init__(self, X, kernel: Kernel):
        self.X, self.kernel, self.n = X, kernel, X.shape[0]
        self.dtype = np.dtype(X.dtype) if X.dtype in (np.float32, np.float64) else np.dtype(np.float64)

    def diagonal(self) -> np.ndarray:
        return self.kernel.diagonal(self.X)

    def columns(self, index: np.ndarray, out: np.ndarray) -> np.ndarray:
        rows = self.X[index]
        out[...] = self.kernel.cross(self.X, v.contiguous(rows) if isinstance(rows, np.ndarray) else rows)
        return out


class CrossProduct:
    """A fitted row map for new samples: ``x ↦ correction(K(x, Y)·V)``, the cross kernel multiplied into V by
    the kernel's :meth:`Kernel.product` (tile by tile for native kernels, never stored; in bounded chunks for
    the others). Picklable when the kernel is, so an engine can ship it with a task.

    The kernel is evaluated in Y's dtype (``promote=False``: KernelPCA's transform), or in float32 only when
    both sides are float32 (``promote=True``: scikit-learn's pairwise kernels upcast that way, and
    KernelRidge's predictions follow them). ``correction`` (a picklable function of the product, or None)
    finishes each row block; the result is cast to ``out_dtype`` when given.
    """

    def __init__(self, kernel: Kernel, Y, V: np.ndarray, correction: Callable | None = None, *, promote: bool = False,
                 out_dtype=None, memory_limit: int | None = None):
        self.kernel, self.Y, self.correction = kernel, Y, correction
        self.V = np.ascontiguousarray(V, dtype=np.float64)
        self.promote, self.out_dtype, self.memory_limit = promote, out_dtype, memory_limit

    @property
    def width(self) -> int:
        return 1 if self.V.ndim == 1 else self.V.shape[1]

    def on_threads(self, threads: int) -> CrossProduct:
        """The same map evaluated on ``threads`` threads (an engine's tasks share their worker's cores)."""
        return CrossProduct(self.kernel.on_threads(threads), self.Y, self.V, self.correction, promote=self.promote,
                            out_dtype=self.out_dtype, memory_limit=self.memory_limit)

    def __call__(self, X) -> np.ndarray:
        dtype = None
        if getattr(self.Y, "dtype", None) in (np.float32, np.float64):
            dtype = self.Y.dtype if not self.promote else np.result_type(X.dtype, self.Y.dtype, np.float32)
        out = self.kernel.product(self.kernel.new_rows(X, self.Y, dtype), self.kernel.fitted_in(self.Y, dtype), self.V,
                                  self.memory_limit)
        if self.correction is not None:
            out = self.correction(out)
        return out if self.out_dtype is None else out.astype(self.out_dtype, copy=False)
