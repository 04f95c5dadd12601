"""Import the best native core this CPU can run.

A wheel ships the same C++ core compiled for several x86-64 ISA levels (``baseline``, ``v3`` = AVX2+FMA,
``v4`` = AVX-512) as private modules ``fastkpca._core_<level>``; other architectures get a single ``generic``
build. The baseline module runs anywhere and says which levels the CPU supports; the best one that is both
supported and installed is used. A source build compiles only the level of the CPU that builds it (CMake's
``FASTKPCA_ISAS=host``), with no baseline module to ask: the CPU's flags (``/proc/cpuinfo``) say whether it
runs here, and where they cannot be read the module is taken as built for this CPU.
``FASTKPCA_ISA=<level>`` forces a level (for tests and bug reports); forcing one the CPU cannot run raises
ImportError instead of crashing later.
"""

from __future__ import annotations

import contextlib
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


#: The CPU flags (as Linux's /proc/cpuinfo names them) each x86-64 level's modules need: the checks of the
#: core's isa_support() (cpp/include/fastkpca/isa.hpp).
_LEVEL_FLAGS = {"baseline": set(), "v3": {"avx", "avx2", "fma", "bmi2"},
                "v4": {"avx", "avx2", "fma", "bmi2", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"}}


def _cpuinfo_levels(installed: list[str]) -> list[str]:
    """The installed levels the CPU's flags allow (Linux), or all of them where the flags cannot be read (a
    source build's single module, compiled for the CPU that built it)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            flags = next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), None)
    except OSError:
        flags = None
    if flags is None:
        return installed
    return [lv for lv in installed if _LEVEL_FLAGS.get(lv, set()) <= flags]


def runnable_levels() -> list[str]:
    """Installed levels this CPU can execute, worst first."""
    installed = installed_levels()
    if not installed:
        raise ImportError("fastkpca: no native core module is installed (reinstall the package)")
    probe = _import("baseline") if "baseline" in installed else _import("generic") if "generic" in installed else None
    if probe is None:  # a source build for its CPU (see the module)
        return _cpuinfo_levels(installed)
    supported = set(probe.supported_isas())
    return [lv for lv in installed if lv in supported]


#: OpenMP's wait policy for the core's thread team where the user sets none (docs/user_guide/threads.md): an idle
#: thread spins for 3,000 pauses (tens of microseconds: the next parallel region of the same call finds it awake)
#: and then sleeps (GNU OpenMP reads GOMP_SPINCOUNT first; other runtimes take the passive policy). GNU OpenMP's
#: default spins each idle thread for 300,000 pauses (milliseconds) after every parallel region and at every
#: barrier, and a spinning thread holds a core that a thread of another process, of NumPy's BLAS or of the same
#: team needs: a 400-row Gram on two threads beside another process's fit took 1.9 ms (median) with the default
#: on both sides and 0.17 ms with this one; a Gaussian process fit of 100 samples 374 ms instead of 43 ms. Sleeping
#: at once (spin count 0) cost a support vector machine's fit of 20,000 samples 9% (its working sets start a few
#: regions each, and a sleeping thread takes tens of microseconds to wake).
OPENMP_DEFAULTS = {"OMP_WAIT_POLICY": "passive", "GOMP_SPINCOUNT": "3000"}
#: Variables by which a user sets the policy; any of them set, the defaults are not applied.
_OPENMP_POLICY_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


@contextlib.contextmanager
def _openmp_defaults():
    """OPENMP_DEFAULTS in the environment while the core's modules load (the OpenMP runtime reads them once, when
    it loads with the first of them), then taken out again: other libraries' OpenMP runtimes loaded later, and
    child processes, see the environment the user set."""
    if any(name in os.environ for name in _OPENMP_POLICY_VARIABLES):
        yield
        return
    os.environ.update(OPENMP_DEFAULTS)
    try:
        yield
    finally:
        for name in OPENMP_DEFAULTS:
            os.environ.pop(name, None)


def load(level: str | None = None) -> ModuleType:
    """The core module for ``level`` (default: $FASTKPCA_ISA, else the best runnable one)."""
    with _openmp_defaults():
        return _load(level or os.environ.get("FASTKPCA_ISA") or None)


def _load(level: str | None) -> ModuleType:
    runnable = runnable_levels()
    if level is None:
        if not runnable:
            raise ImportError(f"fastkpca: this CPU cannot run the native modules installed "
                              f"({', '.join(installed_levels())}): they were built for another CPU; reinstall the "
                              "package on this one")
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
