"""The kernel registry (cpp/include/fastkpca/kernel_list.hpp) is the one list of kernels: everything that
names kernels derives from it, and what it declares about each kernel holds. Also fastkpca.get_include()."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fastkpca
from fastkpca import _native
from fastkpca.kernels import registry as _registry


def test_the_registry_declares_each_kernel_once():
    names = [entry["name"] for entry in _native.core.KERNELS]
    assert len(names) == len(set(names)) and set(names) >= {"linear", "poly", "rbf", "laplacian", "sigmoid",
                                                             "cosine"}
    assert _registry.spec("polynomial").name == "poly"
    for spec in _registry.KERNELS.values():
        assert set(spec.parameters) <= set(_registry.PARAMETER_DEFAULTS)


def test_every_consumer_derives_its_list_from_the_registry():
    from fastkpca import __main__ as cli
    from fastkpca.estimators import decomposition
    from fastkpca.kernels import pairwise as kernels

    names = set(_registry.NAMES)
    assert set(kernels._NATIVE_METRICS) == names
    assert set(decomposition._KERNELS) == names | {"precomputed"}
    fit_parser = cli.build_parser()._subparsers._group_actions[0].choices["fit"]
    kernel_action = next(a for a in fit_parser._actions if a.dest == "kernel")
    assert set(kernel_action.choices) == names
    # The native stub's Literal of kernel names (checked here since a stub cannot import the registry).
    stub = (Path(fastkpca.__file__).parent / "_core.pyi").read_text()
    literal = re.search(r"_Kernel = Literal\[(.*?)\]", stub, re.DOTALL).group(1)
    assert set(re.findall(r'"(\w+)"', literal)) == names
    for name in names:  # and each name reaches the native dispatch
        fastkpca.gram(np.ones((2, 2)), kernel=name)


def test_the_backend_switch_covers_every_registry_kernel():
    pytest.importorskip("sklearn")
    import sklearn.metrics.pairwise as skp

    from fastkpca import _sklearn_patch

    table = _sklearn_patch._replacement_table()
    patched = {kernel for (module, name), obj in table.items() if hasattr(obj, "__fastkpca_original__")
               and name != "pairwise_kernels" for kernel in [name]}
    expected = {"cosine_similarity" if s.name == "cosine" else next(
        f"{n}_kernel" for n in (s.name, *s.aliases) if hasattr(skp, f"{n}_kernel")) for s in _registry.KERNELS.values()
        if s.name == "cosine" or any(hasattr(skp, f"{n}_kernel") for n in (s.name, *s.aliases))}
    assert patched == expected
    # the kernels scikit-learn has no function for (the Matern kernels: only its GP kernel object) are fastkpca's
    assert {s.name for s in _registry.KERNELS.values() if s.name != "cosine" and not any(
        hasattr(skp, f"{n}_kernel") for n in (s.name, *s.aliases))} == {"matern12", "matern32", "matern52"}


def test_unknown_kernels_never_fall_through():
    with pytest.raises(ValueError, match="unknown kernel"):
        _native.core.gram_into(np.ones((2, 2)), None, "gaussian", 1.0, 3.0, 1.0, np.empty((2, 2)), 0)
    with pytest.raises(ValueError, match="unknown kernel"):
        _native.core.kernel_operator(np.ones((2, 2)), "gaussian", 1.0, 3.0, 1.0, 0, 0)


@given(n=st.integers(2, 40), d=st.integers(1, 6), seed=st.integers(0, 2**16), gamma=st.floats(0.01, 3.0),
       kernel=st.sampled_from(sorted(_registry.KERNELS)))
def test_declared_properties_hold(n, d, seed, gamma, kernel):
    """unit_diagonal: k(x, x) is exactly 1; positive_semidefinite: no eigenvalue below rounding."""
    spec = _registry.spec(kernel)
    X = np.random.default_rng(seed).standard_normal((n, d))
    K = fastkpca.gram(X, kernel=kernel, gamma=gamma, degree=2, coef0=1.0)
    if spec.unit_diagonal:
        assert np.all(np.diag(K) == 1.0)
    if spec.positive_semidefinite:
        lam = np.linalg.eigvalsh(K)
        assert lam.min() >= -1e-10 * max(1.0, lam.max())


@pytest.mark.skipif(os.environ.get("FASTKPCA_WHEEL_STAGE") != "1",
                    reason="runs in the wheel stage (tools/build_wheel.sh), on the headers the wheel ships")
def test_get_include_builds_an_extension_on_the_core(tmp_path):
    """An extension author's program: fastkpca's headers (and Eigen, OpenMP) are all it needs to build a
    matrix-free kernel operator and run the block Lanczos solver on it. A question for the installed wheel
    (its headers, where get_include finds them), asked in the wheel stage: the compile takes most of half a
    minute, all of it the compiler's."""
    include = fastkpca.get_include()
    assert os.path.exists(os.path.join(include, "fastkpca", "block_lanczos.hpp"))
    eigen = None
    for base in {sysconfig.get_paths()["purelib"], *sys.path}:
        candidate = os.path.join(base, "cmeel.prefix", "include", "eigen3")
        if os.path.isdir(candidate):
            eigen = candidate
            break
    compiler = shutil.which("g++") or shutil.which("c++")
    if eigen is None or compiler is None:
        pytest.skip("needs Eigen (the cmeel-eigen test extra) and a C++ compiler")
    source = tmp_path / "consumer.cpp"
    source.write_text("""
#include <cstdio>
#include <fastkpca/block_lanczos.hpp>
#include <fastkpca/tiled_operator.hpp>
using namespace fastkpca;
int main() {
  const Index n = 300;
  RowMatrix<double> x(n, 2);
  for (Index i = 0; i < n; ++i) x(i, 0) = 0.01 * i, x(i, 1) = 0.02 * (i % 7);
  Interrupt interrupt(nullptr);
  KernelParams params{KernelKind::rbf, 0.5, 3.0, 1.0};
  ConstRowMatrixMap<double> xm(x.data(), n, 2);
  TiledKernelOperator<double> op(make_kernel_tiles<double>(xm, params), 0, interrupt);
  LanczosOptions opt;
  opt.k = 3; opt.max_basis = 60; opt.max_passes = 200; opt.tol = 1e-10;
  ColMatrix<double> v0 = ColMatrix<double>::Random(n, 8);
  LanczosResult r = block_lanczos(op, v0, opt, interrupt);
  std::printf("%d %.12f %.12f %.12f\\n", r.converged ? 1 : 0, r.values[0], r.values[1], r.values[2]);
}
""")
    exe = tmp_path / "consumer"
    build = subprocess.run([compiler, "-std=c++17", "-O1", "-fopenmp", f"-I{include}", f"-I{eigen}", str(source),
                            "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    X = np.column_stack([0.01 * np.arange(300), 0.02 * (np.arange(300) % 7)])
    exact = np.linalg.eigvalsh(fastkpca.gram(X, kernel="rbf", gamma=0.5))[::-1][:3]
    assert out[0] == "1"
    np.testing.assert_allclose([float(t) for t in out[1:]], exact, rtol=1e-9)
