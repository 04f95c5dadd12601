"""BLAS and LAPACK routines called one at a time with the GIL released: the building blocks of the dense
algorithms that Ctrl-C can stop (factorisations.py, eigh.py).

The routines are the function pointers SciPy exports for Cython (``scipy.linalg.cython_blas`` /
``cython_lapack``: the BLAS and LAPACK SciPy itself uses), called through ctypes, which releases the GIL for the
call; between two calls Python runs its signal handlers. Arguments go by reference, Fortran's convention; a
matrix's sub-blocks as (pointer, leading dimension) pairs (:class:`Matrix`).
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any, Callable

import numpy as np
from numpy.typing import DTypeLike

__all__ = ["routine", "Matrix", "precision", "integer", "character", "pointer"]


@functools.cache
def routine(name: str, returns: type | None = None) -> Callable[..., Any]:
    """The BLAS or LAPACK routine ``name`` of SciPy's Cython exports, callable through ctypes; ``returns``: the
    ctypes type of a function's value (``ddot``'s ``c_double``), None for a subroutine."""
    import scipy.linalg.cython_blas as blas
    import scipy.linalg.cython_lapack as lapack

    capsule = (blas.__pyx_capi__ if name in blas.__pyx_capi__ else lapack.__pyx_capi__)[name]
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return ctypes.CFUNCTYPE(returns)(get_pointer(capsule, get_name(capsule)))


def precision(dtype: DTypeLike) -> tuple[str, type]:
    """(the routines' prefix, the ctypes type of a scalar) for float32 ("s", c_float) or float64 ("d", c_double)."""
    return ("s", ctypes.c_float) if np.dtype(dtype) == np.float32 else ("d", ctypes.c_double)


def integer(value: int) -> ctypes._CArgObject:
    return ctypes.byref(ctypes.c_int(int(value)))


def character(value: str) -> ctypes.c_char_p:
    return ctypes.c_char_p(value.encode())


def pointer(array: np.ndarray, offset: int = 0) -> ctypes.c_void_p:
    """The address of ``array``'s element ``offset`` (counted in elements of a contiguous array)."""
    return ctypes.c_void_p(array.ctypes.data + offset * array.itemsize)


class Matrix:
    """A column-major float32 or float64 matrix (a Fortran-ordered array or a view with unit row stride) as BLAS
    takes it: a sub-block's address (:meth:`at`), the leading dimension (``ld``, by reference), and the routine
    of its precision (:meth:`routine`: ``"gemm"`` is ``dgemm`` for float64, ``sgemm`` for float32)."""

    def __init__(self, A: np.ndarray, *, square: bool = True, dtypes: tuple[DTypeLike, ...] = (np.float64,)) -> None:
        dtype = getattr(A, "dtype", None)
        if dtype not in dtypes or A.ndim != 2 or (square and A.shape[0] != A.shape[1]) \
                or A.strides[0] != A.itemsize or A.strides[1] < A.itemsize * A.shape[0] or not A.flags.writeable:
            names = " or ".join(np.dtype(d).name for d in dtypes)
            raise ValueError(f"a writeable, Fortran-ordered, {'square ' if square else ''}{names} array is required")
        self.n, self.columns = A.shape
        self.itemsize = A.itemsize
        self.step = A.strides[1] // A.itemsize
        self.address = A.ctypes.data
        self.ld = integer(self.step)
        self.prefix, self.real = precision(A.dtype)
        self.array = A  # kept alive while its address is used

    def at(self, i: int, j: int) -> ctypes.c_void_p:
        return ctypes.c_void_p(self.address + self.itemsize * (i + j * self.step))

    def routine(self, name: str, returns: type | None = None) -> Callable[..., Any]:
        return routine(self.prefix + name, returns)

    def scalar(self, value: float) -> ctypes._CArgObject:
        return ctypes.byref(self.real(value))
