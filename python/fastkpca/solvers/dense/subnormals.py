"""Subnormal numbers flushed to zero in the dense factors that BLAS multiplies over and over.

Products with subnormal operands run many times slower on x86 (each takes a microcode assist): a factor of a
kernel with short length scales holds entries of 1e-310 and below, where exp(−r²/2ℓ²) underflows, and the
products of a cg Gaussian process evaluation multiply such factors over and over. Setting them to zero
moves each entry by less than 2.3e-308 (float64;
1.2e-38 in float32): nothing any result can show. The compiler's flush-to-zero mode would do it everywhere,
but it is part of -ffast-math's set, which the project does not use.
"""

from __future__ import annotations

import numpy as np

__all__ = ["flush_subnormals"]

#: Rows per block (the comparison's temporary is one block).
_ROWS = 4096


def flush_subnormals(A: np.ndarray) -> np.ndarray:
    """A with its subnormal entries set to zero, in place (A floating and writeable); returns A."""
    tiny = np.finfo(A.dtype).tiny
    for start in range(0, A.shape[0], _ROWS):
        block = A[start:start + _ROWS]
        np.copyto(block, 0, where=np.abs(block) < tiny)
    return A
