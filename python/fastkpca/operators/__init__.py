"""The operators layer: "multiply by K" whatever K's storage (full, packed, cached, matrix-free, a
precomputed or sparse matrix, a Python-side or distributed operator), its views (centered, shifted,
normalised) and the storage planner with its constants. It imports the kernels layer and nothing above.
The operator class is a SciPy LinearOperator, so it is imported on first use (``import fastkpca`` does
not import SciPy)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .arithmetic import FLOAT32_PRODUCTS_MIN_TOL, products_for
from .storage import PACKED_MAX_BLOCK, STORAGES, StoragePlan, pass_bytes, plan_for, plan_storage, sample_bytes

if TYPE_CHECKING:  # what type checkers see of the names imported on first access (__getattr__ below)
    from .operator import KernelOperator, build, from_matrix, kernel_operator, python_operator, sparse_operator

__all__ = ["KernelOperator", "kernel_operator", "from_matrix", "build", "python_operator", "sparse_operator",
           "products_for", "FLOAT32_PRODUCTS_MIN_TOL", "StoragePlan", "plan_storage", "plan_for", "sample_bytes",
           "pass_bytes", "STORAGES", "PACKED_MAX_BLOCK"]

_FROM_OPERATOR = ("KernelOperator", "kernel_operator", "from_matrix", "build", "python_operator", "sparse_operator")


def __getattr__(name: str) -> Any:
    if name in _FROM_OPERATOR:
        from . import operator

        return getattr(operator, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
