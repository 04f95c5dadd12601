"""Packaging: ISA dispatch, show_config, version, typing files, import cost."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fastkpca
from fastkpca import _native


def run_python(code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env})


def test_version_and_config():
    assert fastkpca.__version__ == fastkpca._native.core.VERSION
    buf = io.StringIO()
    fastkpca.show_config(file=buf)
    text = buf.getvalue()
    for field in ("native module", "SIMD", "OpenMP threads", "Eigen", "compiler"):
        assert field in text
    assert _native.core.__name__ in text


def test_best_isa_is_chosen_by_default():
    runnable = _native.runnable_levels()
    assert runnable, "no native module can run here"
    if "FASTKPCA_ISA" not in os.environ:
        assert _native.core.__name__ == f"fastkpca._core_{runnable[-1]}"
    if sys.platform.startswith("linux") and os.uname().machine == "x86_64" and "baseline" in _native.installed_levels():
        assert "baseline" in runnable


def test_a_build_without_a_baseline_module_reads_the_cpu_flags(monkeypatch, tmp_path):
    """A source build for its CPU ships one level and no baseline probe: /proc/cpuinfo's flags decide."""
    flags = "fpu sse2 avx avx2 fma bmi2"
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    real_open = open

    def fake_open(path, *args, **kwargs):
        return real_open(cpuinfo if path == "/proc/cpuinfo" else path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", fake_open)
    assert _native._cpuinfo_levels(["v3"]) == ["v3"]
    assert _native._cpuinfo_levels(["v4"]) == []  # no AVX-512 in those flags
    assert _native._cpuinfo_levels(["baseline", "v3", "v4"]) == ["baseline", "v3"]


@pytest.mark.threads  # times an idle thread's CPU
def test_openmp_threads_sleep_when_idle():
    """The core's OpenMP runtime's idle threads sleep after a short spin (fastkpca/_native.py's OPENMP_DEFAULTS):
    after a call on two threads the process uses next to no CPU while it sleeps. GNU OpenMP's default spins each
    idle thread for milliseconds after every parallel region: a core taken from the process beside it. Where the
    user sets a policy, theirs holds (and the environment is left as the user set it)."""
    code = ("import os, time, numpy as np, fastkpca\n"
            "print(os.environ.get('OMP_WAIT_POLICY'))\n"
            "X = np.random.default_rng(0).standard_normal((1500, 16))\n"
            "spent = []\n"
            "for _ in range(5):\n"
            "    fastkpca.gram(X, kernel='rbf', n_jobs=2)\n"
            "    start = time.process_time(); time.sleep(0.05); spent.append(time.process_time() - start)\n"
            "print(min(spent), max(spent))\n")
    env = {k: val for k, val in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env["OMP_NUM_THREADS"] = "2"
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert quiet.returncode == 0, quiet.stderr
    policy, idle, _ = quiet.stdout.split()
    assert policy == "None"  # the default was set for the runtime's start only
    assert float(idle) < 0.002  # the least of five sleeps: a busy machine only adds
    spinning = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**env, "OMP_WAIT_POLICY": "active"})
    assert spinning.returncode == 0, spinning.stderr
    policy, _, idle = spinning.stdout.split()
    assert policy == "active"
    assert float(idle) > 0.01  # the user's policy holds: its idle thread spins while the process sleeps (the most
    # of five sleeps: another process on the cores takes only some of the spinning thread's time)


@pytest.mark.parametrize("level", _native.runnable_levels())
def test_environment_variable_forces_a_level(level):
    out = run_python("import fastkpca._native as n; print(n.core.__name__, n.core.ISA)", FASTKPCA_ISA=level)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [f"fastkpca._core_{level}", level]


def test_unknown_level_is_a_clear_import_error():
    out = run_python("import fastkpca", FASTKPCA_ISA="sse9")
    assert out.returncode != 0
    assert "ISA level 'sse9' is not available" in out.stderr


def test_typing_files_ship():
    """py.typed in the package, and each core module's stub beside the module (an editable install keeps the
    modules in site-packages and the Python sources in the checkout)."""
    import importlib.util

    assert (Path(fastkpca.__file__).parent / "py.typed").exists()
    for level in _native.installed_levels():
        module = Path(importlib.util.find_spec(f"fastkpca._core_{level}").origin)
        assert (module.parent / f"_core_{level}.pyi").exists()


def test_import_does_not_import_sklearn():
    out = run_python("import sys, fastkpca, numpy as np; fastkpca.gram(np.ones((3, 2)));"
                     "print('sklearn' in sys.modules)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_public_functions_have_numpydoc_docstrings():
    for name in ("gram", "pairwise_kernels", "double_center", "double_center_distances", "eigsh",
                 "show_config", "show_versions"):
        doc = getattr(fastkpca, name).__doc__
        assert doc and "Parameters\n    ----------" in doc, name


def test_show_versions_names_what_a_bug_report_needs():
    buf = io.StringIO()
    fastkpca.show_versions(file=buf)
    text = buf.getvalue()
    for field in ("python:", "machine:", f"fastkpca: {fastkpca.__version__}", f"module: {_native.core.__name__}",
                  "ISA level:", "OpenMP threads:", "numpy:", "scipy:", "scikit-learn:", "dask:"):
        assert field in text, field
    sections = fastkpca._show_versions.versions()
    import threadpoolctl  # noqa: F401  (a test extra: the runtimes are listed)

    runtimes = " ".join(str(v) for v in sections["Threadpools (BLAS, OpenMP)"].values())
    # the core's OpenMP runtime is loaded and found, and NumPy's BLAS
    assert "openmp" in runtimes and "blas" in " ".join(sections["Threadpools (BLAS, OpenMP)"])
