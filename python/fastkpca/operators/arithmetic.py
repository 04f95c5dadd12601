"""The arithmetic of a solver's products: float32 kernels multiply in float32 when the solver's tolerance
allows it (the native core's Products, cpp/include/fastkpca/operator.hpp).

The block Lanczos eigensolver asks (solvers/krylov/lanczos.py): its Rayleigh-Ritz steps see a product's rounding
as a perturbation of K of the same relative size, far below a tolerance of 1e-6, so its passes and residuals
are those of float64 products. Conjugate gradients does not ask: inexact products cost it the conjugacy of its
directions, and with it iterations, so CG's products of a float32 kernel run in float64 (kernel ridge's
mixed-precision CG takes its float32 products from a separate float32 evaluation and corrects them by true
residuals in float64: solvers/krylov/cg.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._core import Operator as NativeOperator
    from .operator import KernelOperator

__all__ = ["products_for", "FLOAT32_PRODUCTS_MIN_TOL"]

#: Smallest solver tolerance (relative residual) at which a float32 kernel's products run in float32 (see
#: products_for): their rounding, at most 64·2⁻²⁴ of |K|·|V| (a slab's sums have at most 64 terms), stays
#: far below it.
FLOAT32_PRODUCTS_MIN_TOL = 1e-6


def products_for(op: KernelOperator | NativeOperator, tol: float) -> str:
    """The arithmetic a solver that wants relative accuracy ``tol`` may ask of ``op``'s products.

    "float32" for a float32 kernel (stored or evaluated tiles) when ``tol >= FLOAT32_PRODUCTS_MIN_TOL``: the
    block is rounded to float32 and each slab's sums (at most 64 terms) run in float32, twice the entries per
    SIMD vector as in float64. "float64" otherwise: float32 entries multiply the float64 block in float64, the
    exact product of the float32 matrix to float64 rounding, as every product outside a solver does.
    """
    native = getattr(op, "native", op)
    tiled = native.storage in ("packed", "cached", "matrix_free")  # a full float32 matrix multiplies in float64
    return "float32" if tiled and native.scalar_bytes == 4 and tol >= FLOAT32_PRODUCTS_MIN_TOL else "float64"
