"""Import the best native core this CPU can run.

The package ships the same C++ core compiled for several x86-64 ISA levels (``baseline``, ``v3`` =
AVX2+FMA, ``v4`` = AVX-512) as private modules ``fastkpca._core_<level>``; other architectures get a
single ``generic`` build. The baseline module runs anywhere and says which levels the CPU supports; the
best one that is both supported and installed is used. ``FASTKPCA_ISA=<level>`` forces a level (for tests
and bug reports); forcing one the CPU cannot run raises ImportError instead of crashing later.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

LEVELS = ("generic", "baseline", "v3", "v4")


def _import(level: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"fastkpca._core_{level}")
    except ImportError:
        return None


def installed_levels() -> list[str]:
    """ISA levels whose module is installed, worst first (imports nothing that could fault)."""
    from importlib.util import find_spec

    return [lv for lv in LEVELS if find_spec(f"fastkpca._core_{lv}") is not None]


def runnable_levels() -> list[str]:
    """Installed levels this CPU can execute, worst first."""
    installed = installed_levels()
    probe = _import("baseline") or _import("generic")
    if probe is None:
        raise ImportError("fastkpca: no native core module is installed (reinstall the package)")
    supported = set(probe.supported_isas())
    return [lv for lv in installed if lv in supported]


def load(level: str | None = None) -> ModuleType:
    """The core module for ``level`` (default: $FASTKPCA_ISA, else the best runnable one)."""
    level = level or os.environ.get("FASTKPCA_ISA") or None
    runnable = runnable_levels()
    if level is None:
        level = runnable[-1]
    elif level not in runnable:
        raise ImportError(
            f"fastkpca: ISA level {level!r} is not available here (FASTKPCA_ISA); "
            f"installed and runnable on this CPU: {', '.join(runnable)}"
        )
    module = _import(level)
    assert module is not None
    return module


#: The module every public function calls. Tests may swap it to check each ISA build.
core: ModuleType = load()


def describe() -> dict[str, str]:
    """The native module in use, as ``show_config`` and ``show_versions`` print it."""
    info = core.build_info()
    return {
        "native module": core.__name__,
        "ISA level": info["isa"],
        "runnable ISA levels": ", ".join(runnable_levels()),
        "SIMD": info["simd"],
        "OpenMP threads": f"{info['omp_max_threads']} of {info['omp_num_procs']} processors (OpenMP {info['openmp']})",
        "Eigen": info["eigen"],
        "compiler": info["compiler"],
    }
