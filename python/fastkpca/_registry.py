"""The kernel registry, as the native core declares it (cpp/include/fastkpca/kernel_list.hpp).

Every kernel fastkpca evaluates natively is declared once, in C++: its name, the parameters it reads,
whether its diagonal is exactly 1 and whether it is positive semi-definite. Validation, pairwise_kernels,
the backend switch, the command line and the estimators read this table; nothing else lists kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _native

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
