"""The arithmetic of a solver's products: float32 kernels multiply in float32 when the solver's tolerance
allows it (the native core's Products, cpp/include/fastkpca/operator.hpp).

The block Lanczos eigensolver asks (solvers/lanczos.py): its Rayleigh-Ritz steps see a product's rounding
as a perturbation of K of the same relative size, far below a tolerance of 1e-6 (rbf kernels at N = 5,000
to 8,000, k = 10, tol 1e-5 and 1e-6: the same passes and residuals as with float64 products, eigenvalues
within 3e-9 relative). Conjugate gradients does not: inexact products cost it the conjugacy of its
directions, and float32 products took 1.6 to 8 times the iterations of float64 ones on systems float64
products solve in 23 to 850, so kernel ridge's CG always multiplies in float64."""

from __future__ import annotations

__all__ = ["products_for", "FLOAT32_PRODUCTS_MIN_TOL"]

#: Smallest solver tolerance (relative residual) at which a float32 kernel's products run in float32 (see
#: products_for): their rounding, at most 64·2⁻²⁴ and measured near 3e-8 of |K|·|V|, stays far below it.
FLOAT32_PRODUCTS_MIN_TOL = 1e-6


def products_for(op, tol: float) -> str:
    """The arithmetic a solver that wants relative accuracy ``tol`` may ask of ``op``'s products.

    "float32" for a float32 kernel (stored or evaluated tiles) when ``tol >= FLOAT32_PRODUCTS_MIN_TOL``: the
    block is rounded to float32 and each slab's sums (at most 64 terms) run in float32, at about twice the
    float64 rate. "float64" otherwise: float32 entries multiply the float64 block in float64, the exact
    product of the float32 matrix to float64 rounding, as every product outside a solver does.
    """
    native = getattr(op, "native", op)
    tiled = native.storage in ("packed", "cached", "matrix_free")  # a full float32 matrix multiplies in float64
    return "float32" if tiled and native.scalar_bytes == 4 and tol >= FLOAT32_PRODUCTS_MIN_TOL else "float64"
