"""The kernel registry, as the native core declares it (cpp/include/fastkpca/kernel_list.hpp).

Every kernel fastkpca evaluates natively is declared once, in C++: its name, the parameters it reads,
whether its diagonal is exactly 1 and whether it is positive semi-definite. Validation, pairwise_kernels,
the backend switch, the command line and the estimators read this table; nothing else lists kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import _native
from .. import _validation as v

__all__ = ["KernelSpec", "KERNELS", "NAMES", "PARAMETER_DEFAULTS", "spec", "check_kernel", "check_native_kernel",
           "is_native", "kernel_params"]

#: scikit-learn's defaults for the kernel parameters (gamma None means 1 / n_features).
PARAMETER_DEFAULTS = {"gamma": None, "degree": 3, "coef0": 1.0}


@dataclass(frozen=True)
class KernelSpec:
    name: str
    parameters: tuple[str, ...]
    unit_diagonal: bool
    positive_semidefinite: bool
    aliases: tuple[str, ...]


def _split(text: str) -> tuple[str, ...]:
    return tuple(part for part in text.split(",") if part)


#: Kernel name -> its declaration, in the core's order.
KERNELS: dict[str, KernelSpec] = {
    entry["name"]: KernelSpec(
        entry["name"], _split(entry["parameters"]), bool(entry["unit_diagonal"]),
        bool(entry["positive_semidefinite"]), _split(entry["aliases"]),
    )
    for entry in _native.core.KERNELS
}

#: Every accepted name (aliases included) -> its kernel's declaration.
NAMES: dict[str, KernelSpec] = {
    name: spec for spec in KERNELS.values() for name in (spec.name, *spec.aliases)
}


def spec(name: str) -> KernelSpec:
    """The declaration of the kernel called ``name`` (an alias is fine); KeyError if unknown."""
    return NAMES[name]


def is_native(kernel) -> bool:
    """Whether ``kernel`` names one of the registry's kernels (not "precomputed", a callable or a kernel only
    scikit-learn evaluates)."""
    return isinstance(kernel, str) and kernel in NAMES


def check_kernel(kernel) -> str:
    """The registry name of a native kernel (aliases resolved): TypeError for a non-string, ValueError for
    an unknown name."""
    if not isinstance(kernel, str):
        raise TypeError(f"kernel must be a string, got {kernel!r}; valid kernels are: {', '.join(NAMES)}")
    if kernel not in NAMES:
        raise ValueError(f"unknown kernel {kernel!r}; valid kernels are: {', '.join(NAMES)}")
    return NAMES[kernel].name


def check_native_kernel(kernel, what: str) -> str:
    """``kernel`` when fastkpca evaluates it natively, else ValueError saying that ``what`` needs one."""
    if not is_native(kernel):
        raise ValueError(f"{what} needs one of fastkpca's native kernels ({', '.join(NAMES)}), got "
                         f"kernel={kernel!r}")
    return kernel


def kernel_params(kernel: str, gamma, degree, coef0, n_features: int) -> tuple[float, float, float]:
    """(gamma, degree, coef0) with scikit-learn's defaults (gamma=None: 1/n_features)."""
    gamma = v.check_real(gamma, "gamma", minimum=0.0, allow_none=True)
    if gamma is None:
        gamma = 1.0 / n_features
    degree = v.check_real(degree, "degree", minimum=0.0)
    coef0 = v.check_real(coef0, "coef0")
    return gamma, degree, coef0
