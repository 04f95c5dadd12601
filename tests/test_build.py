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
    if sys.platform.startswith("linux") and os.uname().machine == "x86_64":
        assert "baseline" in runnable


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
    pkg = Path(fastkpca.__file__).parent
    assert (pkg / "py.typed").exists()
    for level in _native.installed_levels():
        assert (pkg / f"_core_{level}.pyi").exists()


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
