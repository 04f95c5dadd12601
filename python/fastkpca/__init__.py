"""fastkpca: fast, exact kernel PCA.

Blocked, multithreaded kernel (Gram) matrices, kernel operators in full, packed, cached or matrix-free
storage under a memory limit, in-place double centering and a block Lanczos top-k eigensolver in a C++
core, under a scikit-learn compatible API. ``import fastkpca`` imports neither scikit-learn nor SciPy;
the estimators and operators load them on first use.
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from ._version import __version__
from .exceptions import ConvergenceWarning, FastkpcaWarning, NonEuclideanWarning, SingularKernelWarning
from .kernels import double_center, double_center_distances, gram, pairwise_kernels
from .solvers.krylov.lanczos import eigsh
from . import estimators as _estimators

__all__ = [
    "__version__",
    "ConvergenceWarning",
    "FastkpcaWarning",
    "NonEuclideanWarning",
    "SingularKernelWarning",
    "double_center",
    "double_center_distances",
    "eigsh",
    "get_include",
    "gram",
    "kernel_operator",
    "KernelOperator",
    "pairwise_kernels",
    "patch_sklearn",
    "sklearn_patched",
    "unpatch_sklearn",
    "show_config",
    "show_versions",
]
__all__ += _estimators.__all__  # the estimators' names, each imported on first access

if TYPE_CHECKING:  # what type checkers and IDEs see of the names imported on first access below
    from ._show_versions import show_versions
    from ._sklearn_patch import patch_sklearn, sklearn_patched, unpatch_sklearn
    from .estimators import *  # noqa: F403
    from .operators import KernelOperator, kernel_operator

# Names that need scikit-learn, imported on first access from their own module (PEP 562): an estimator's, not every
# family's.
_LAZY = {
    **{name: f"estimators.{module}" for name, (module, _) in _estimators._MODULES.items()},
    "patch_sklearn": "_sklearn_patch",
    "unpatch_sklearn": "_sklearn_patch",
    "sklearn_patched": "_sklearn_patch",
    "kernel_operator": "operators",
    "KernelOperator": "operators",
    "show_versions": "_show_versions",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fastkpca' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def get_include() -> str:
    """The directory of fastkpca's C++ headers, for extension modules that build on its kernel functors,
    operators and block Lanczos solver (``#include <fastkpca/block_lanczos.hpp>``; they need Eigen 3.4
    and OpenMP).

    Examples
    --------
    >>> import os, fastkpca
    >>> os.path.exists(os.path.join(fastkpca.get_include(), "fastkpca", "operator.hpp"))
    True
    """
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, "include")
    if os.path.isdir(installed):
        return installed
    # A development tree (PYTHONPATH=python): the sources' headers.
    return os.path.normpath(os.path.join(here, "..", "..", "cpp", "include"))


def show_config(file: IO[str] | None = None) -> None:
    """Print the native module in use, its SIMD level, OpenMP threads, Eigen and compiler versions.

    Parameters
    ----------
    file : file-like, default=None
        Where to print; ``None`` means sys.stdout.

    Examples
    --------
    >>> import fastkpca
    >>> fastkpca.show_config()  # doctest: +SKIP
    fastkpca 0.1.0
    native module       : fastkpca._core_v4
    ISA level           : v4
    ...
    """
    import platform
    import sys

    from . import _native

    figures = {**_native.describe(), "python": f"{sys.version.split()[0]} on {platform.machine()}"}
    width = max(len(key) for key in figures)
    lines = [f"fastkpca {__version__}"] + [f"{key:<{width}} : {value}" for key, value in figures.items()]
    print("\n".join(lines), file=file)
