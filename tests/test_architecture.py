"""The structure the layers contract (pyproject.toml, `lint-imports` in CI) does not check by itself: no
import cycle anywhere in the package, no engine-specific word in an estimator module, no estimator on a solver
interface that decides its solver or asks where its samples live, and estimators that stay small (solver code
belongs in the solvers layer)."""

from __future__ import annotations

import ast
import tokenize
from pathlib import Path

import pytest

import fastkpca

grimp = pytest.importorskip("grimp")  # import-linter's graph builder (a test extra)

PACKAGE = Path(fastkpca.__file__).parent
ESTIMATORS = sorted((PACKAGE / "estimators").glob("*.py"))
#: The estimators' modules that fit (solver_settings.py holds the solver parameter's objects and reads that
#: parameter: it tests a parameter's type, it does not decide which solver runs).
FITTING = [path for path in ESTIMATORS if path.name != "solver_settings.py"]


def findings_of(check, source: str, tmp_path: Path) -> list[str]:
    """What a source-reading check reports on ``source`` (written to a probe file): the checks' own tests show
    that each spelling they must catch, they catch."""
    probe = tmp_path / "probe.py"
    probe.write_text(source)
    return check(probe)


def assert_finds(found: list[str], spellings) -> None:
    for spelling in spellings:
        assert any(spelling in line for line in found), (spelling, found)


def test_no_import_cycle_in_the_package():
    """Tarjan's strongly connected components of the module graph (every import statement, lazy ones
    included): each must be a single module."""
    graph = grimp.build_graph("fastkpca")
    modules = sorted(graph.modules)
    index, low, on_stack, stack, cycles = {}, {}, set(), [], []

    def visit(m):
        index[m] = low[m] = len(index)
        stack.append(m)
        on_stack.add(m)
        for nxt in sorted(graph.find_modules_directly_imported_by(m)):
            if nxt not in index:
                visit(nxt)
                low[m] = min(low[m], low[nxt])
            elif nxt in on_stack:
                low[m] = min(low[m], index[nxt])
        if low[m] == index[m]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == m:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for m in modules:
        if m not in index:
            visit(m)
    assert not cycles, f"import cycles: {cycles}"


def _names_in_code(path: Path) -> set[str]:
    """The identifiers of a module's code (strings, docstrings and comments left out)."""
    with open(path, "rb") as f:
        return {tok.string for tok in tokenize.tokenize(f.readline) if tok.type == tokenize.NAME}


@pytest.mark.parametrize("path", ESTIMATORS, ids=lambda p: p.name)
def test_estimators_name_no_engine(path):
    """An estimator asks engines.select for an engine and never knows which one it got (its docstrings may
    say that a dask array is accepted; its code names no engine)."""
    names = _names_in_code(path)
    for word in ("dask", "is_dask_array", "_distributed", "map_panels", "Client", "DaskEngine", "LocalEngine"):
        assert word not in names, f"{path.name} names {word!r}"


def _code_lines(node: ast.ClassDef, source: list[str]) -> int:
    """Lines of a class that are code: not blank, not comments, not docstrings."""
    doc_lines = set()
    for sub in ast.walk(node):
        if isinstance(sub, (ast.ClassDef, ast.FunctionDef)) and sub.body and isinstance(sub.body[0], ast.Expr) \
                and isinstance(sub.body[0].value, ast.Constant) and isinstance(sub.body[0].value.value, str):
            doc_lines.update(range(sub.body[0].lineno, sub.body[0].end_lineno + 1))
    return sum(1 for i in range(node.lineno, node.end_lineno + 1)
               if i not in doc_lines and source[i - 1].strip() and not source[i - 1].strip().startswith("#"))


@pytest.mark.parametrize("path", ESTIMATORS, ids=lambda p: p.name)
def test_estimator_classes_stay_small(path):
    source = path.read_text()
    lines = source.splitlines()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            limit = 200 if node.name == "KernelPCA" else 250
            assert _code_lines(node, lines) <= limit, f"{node.name} has {_code_lines(node, lines)} lines of code"


#: Names by which code decides what kind of kernel (or samples) it has: the kernels layer's (kinds.py) to
#: decide, never an estimator's.
KIND_NAMES = {"callable", "is_native", "is_sparse", "issparse", "isspmatrix", "registry", "NativeKernel",
              "PrecomputedKernel", "PrecomputedAffinity", "PairwiseKernel", "ScikitLearnKernel", "NeighborsGraph",
              "AffinityFunction", "MatrixKernel", "MatrixColumns", "KernelColumns", "native", "precomputed", "blocks",
              "local", "is_sklearn_kernel", "tocsr", "toarray", "GRAPHS", "KERNEL_NAMES_NATIVE"}
#: Parameters that name a kernel (compared to "precomputed" or another kind's name, they decide its kind).
KERNEL_PARAMETERS = {"kernel", "affinity", "metric"}


def _asks_of_a_kernel(name: ast.AST, tree: ast.AST) -> bool:
    """Whether ``callable(...)`` at this name is asked of a kernel parameter (``callable(self.optimizer)``, a
    GaussianProcessRegressor's optimizer, is no decision on a kernel)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.func is name:
            return any(part in ast.unparse(arg) for arg in node.args for part in KERNEL_PARAMETERS)
    return True  # the name passed around rather than called: counted


def kind_decisions(path: Path) -> list[str]:
    """Where an estimator module decides a kernel's kind or falls back to a local array: a kind-deciding name
    (``callable(...)``, ``is_native(...)``, ``kernel.native``, ``samples.local(...)``, ...), an isinstance test
    against a kernel class, or a kernel parameter compared with a string."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        name = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None)
        if name in KIND_NAMES and not (name == "callable" and not _asks_of_a_kernel(node, tree)):
            found.append(f"line {node.lineno}: {name}")
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            names = {s.attr if isinstance(s, ast.Attribute) else getattr(s, "id", None) for s in sides}
            strings = [s for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)
                       or isinstance(s, (ast.Tuple, ast.List, ast.Set))]
            if names & KERNEL_PARAMETERS and strings:
                found.append(f"line {node.lineno}: a kernel parameter compared with {ast.unparse(node)!r}")
    return found


@pytest.mark.parametrize("path", ESTIMATORS, ids=lambda p: p.name)
def test_no_estimator_decides_a_kernels_kind(path):
    """Estimators hold a kernel (kernels.Kernel) and never ask which kind it is, in any spelling, nor fall back
    to a local array: the kernels layer decides kinds (kinds.py), the engines where a kind can run."""
    assert kind_decisions(path) == []


def test_the_kind_check_finds_what_it_looks_for(tmp_path):
    """The check above is not vacuous: each spelling it must catch, it catches."""
    found = findings_of(kind_decisions, "def f(self, samples, kernel):\n"
                        "    if callable(self.kernel) or self.kernel == 'precomputed' or kernel.native:\n"
                        "        return samples.local('x'), registry.is_native(self.affinity)\n"
                        "    return self.metric in ('chi2',)\n", tmp_path)
    assert_finds(found, ("callable", "native", "local", "registry", "is_native", "'precomputed'", "('chi2',)"))


#: Names a decision on a solver or an SVM formulation would compare with: the solvers' and formulations' names
#: (a solver parameter compared with "auto" is caught as a comparison of a solver: every "auto" is decided in
#: solvers/choice.py).
SOLVER_NAMES = {"cg", "cholesky", "exact", "iterative", "lanczos", "arpack", "dense", "nystrom", "randomized",
                "lobpcg", "amg", "eigh", "multishift-cg", "c_svc", "nu_svc", "epsilon_svr", "nu_svr",
                "one_class", "whole", "batched"}


def _solver_like(node: ast.AST) -> bool:
    """A name or attribute that holds a solver, its choice or a formulation (``self._solver``, ``solver``,
    ``_iterative``, ``self._formulation``)."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return any(word in name.lower() for word in ("solver", "iterative", "formulation"))


def solver_decisions(path: Path) -> list[str]:
    """Where an estimator module branches on its solver or on where its samples live: ``holds_matrix``
    anywhere; a comparison with a solver's name or of a solver (``self._solver is None``, ``solver == "cg"``,
    ``self._solver.name != ...``); a test on a solver itself (``if self._iterative:``); an isinstance test
    against a solver class."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "holds_matrix":
            found.append(f"line {node.lineno}: holds_matrix")
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = any(isinstance(s, ast.Constant) and s.value in SOLVER_NAMES for s in sides)
            of_a_solver = any(_solver_like(sub) or (isinstance(sub, ast.Attribute) and sub.attr == "name"
                                                    and _solver_like(sub.value))
                              for s in sides for sub in [s] + ([s.value] if isinstance(s, ast.Attribute) else []))
            if named or of_a_solver:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        if isinstance(node, (ast.If, ast.IfExp, ast.While)) and _solver_like(node.test):
            found.append(f"line {node.lineno}: a test on {ast.unparse(node.test)}")
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2 \
                and "Solver" in ast.unparse(node.args[1]):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", FITTING, ids=lambda p: p.name)
def test_no_estimator_decides_its_solver(path):
    """Every estimator calls its solver layer's interface: which solver runs (solvers/choice.py decides every
    "auto"), which formulation an SVM solves (a type, not a name), and where the samples are, is the solvers'
    and the engines' business."""
    assert solver_decisions(path) == []


@pytest.mark.parametrize("path", ESTIMATORS, ids=lambda p: p.name)
def test_no_estimator_asks_where_its_samples_live(path):
    assert [line for line in solver_decisions(path) if "holds_matrix" in line] == []


def test_the_solver_check_finds_what_it_looks_for(tmp_path):
    """The check above is not vacuous: each spelling it must catch, it catches (and reading a solver's
    property is no decision)."""
    found = findings_of(solver_decisions, "def f(self, samples):\n"
                        "    if self._iterative is None or samples.holds_matrix:\n"
                        "        pass\n"
                        "    a = 1 if self.solver == 'cg' else 2\n"
                        "    b = 1 if self._solver.name != 'x' else isinstance(self._solver, ExactSolver)\n"
                        "    if self._iterative:\n"
                        "        pass\n"
                        "    c = self.eigen_solver != 'auto' or self._formulation in ('c_svc', 'nu_svc')\n"
                        "    return len(a) if self._solver.per_sample_objective else b\n", tmp_path)
    assert_finds(found, ("self._iterative is None", "holds_matrix", "self.solver == 'cg'", "self._solver.name != 'x'",
                         "isinstance(self._solver, ExactSolver)", "a test on self._iterative",
                         "self.eigen_solver != 'auto'", "self._formulation in ('c_svc', 'nu_svc')"))
    assert not any("per_sample_objective" in line for line in found), found


@pytest.mark.parametrize("path", ESTIMATORS, ids=lambda p: p.name)
def test_estimators_reach_engines_through_select_only(path):
    """``engines.select`` is an estimator's only way to an engine (the import contract forbids importing an
    engine module; this closes the door of a re-export through the package)."""
    tree = ast.parse(path.read_text())
    used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name) and node.value.id == "engines"}
    assert used <= {"select"}, f"{path.name} uses engines.{sorted(used - {'select'})}"
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and (node.module or "").endswith("engines") for alias in node.names}
    assert not imported, f"{path.name} imports {sorted(imported)} from the engines package"


def test_the_dask_engine_module_imports_neither_scikit_learn_nor_scipy():
    """A Dask worker imports fastkpca.engines.dask to run a task's function: it must stay light (importing
    scikit-learn there cost 0.7 s of the first task of every fit)."""
    import subprocess
    import sys

    code = "import sys, fastkpca.engines.dask; print(sorted(m for m in ('sklearn', 'scipy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


#: LAPACK's and NumPy's whole-matrix Cholesky routines: OpenBLAS's threaded dpotrf crashes on large matrices
#: (solvers/dense/threads.py), so only solvers/dense/factorisations.py's loop calls them, on blocks.
WHOLE_MATRIX_CHOLESKY = {"dpotrf", "spotrf", "dpotri", "spotri", "cho_factor", "cholesky", "potrf", "potri"}
#: ... of which these are LAPACK's names, looked up by a string ("cholesky" is also a solver's name).
LAPACK_CHOLESKY = WHOLE_MATRIX_CHOLESKY - {"cho_factor", "cholesky"}


def whole_matrix_factorisations(path: Path) -> list[str]:
    """Where a module names a whole-matrix Cholesky routine: as an attribute (``lapack.dpotrf``,
    ``np.linalg.cholesky``), an imported name, or a string that looks one up (``get_lapack_funcs(("potrf",))``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in WHOLE_MATRIX_CHOLESKY:
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.alias) and node.name in WHOLE_MATRIX_CHOLESKY:
            found.append(f"line {node.lineno}: import {node.name}")
        elif isinstance(node, ast.Call):
            for arg in ast.walk(node):
                if isinstance(arg, ast.Constant) and arg.value in LAPACK_CHOLESKY:
                    found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_factorisation_goes_through_the_blocked_loop(path):
    """No module but dense/factorisations.py hands a whole matrix to LAPACK's Cholesky or its inverse."""
    if path == PACKAGE / "solvers" / "dense" / "factorisations.py":
        return
    assert whole_matrix_factorisations(path) == []


def test_the_factorisation_check_finds_what_it_looks_for(tmp_path):
    found = findings_of(whole_matrix_factorisations, "from scipy.linalg import cho_factor\n"
                        "def f(A):\n"
                        "    lapack.dpotrf(A); np.linalg.cholesky(A)\n"
                        "    return get_lapack_funcs(('potrf',), (A,))\n", tmp_path)
    assert_finds(found, ("cho_factor", "lapack.dpotrf", "np.linalg.cholesky", "potrf"))


# --------------------------------------------------------------------- what a solver may ask of its samples

def protocol_members(path: Path, name: str) -> set[str]:
    """The members a Protocol class declares in its body: annotated attributes, methods and properties."""
    tree = ast.parse(path.read_text())
    cls = next(node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name == name)
    return ({node.target.id for node in cls.body if isinstance(node, ast.AnnAssign)}
            | {node.name for node in cls.body if isinstance(node, ast.FunctionDef)})


SAMPLES_PROTOCOL = PACKAGE / "operators" / "samples.py"


def test_the_solver_facing_samples_protocol_is_narrow():
    members = protocol_members(SAMPLES_PROTOCOL, "SolverSamples")
    assert len(members) <= 10, sorted(members)
    assert {"shape", "dtype", "rows", "reduce", "map", "kernel_of"} <= members


def samples_calls_of(path: Path, forbidden: set[str]) -> list[str]:
    """Where a solver module reads one of the ``forbidden`` members of its samples (a name ending in ``samples``:
    ``samples``, ``self.samples``, ``fast_samples``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in forbidden:
            owner = node.value
            name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            if name.endswith("samples"):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", sorted((PACKAGE / "solvers").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_solvers_ask_their_samples_only_what_the_protocol_declares(path):
    """The engine-facing rest (the kernel's forms with the kernel passed, bind, astype; the engine, its figures,
    the samples over a copy) is reached through ``samples.kernel_of(kernel)`` or not at all."""
    engine_facing = protocol_members(SAMPLES_PROTOCOL, "KernelSource") | {"engine", "info", "over"}
    assert not engine_facing & protocol_members(SAMPLES_PROTOCOL, "SolverSamples")
    assert samples_calls_of(path, engine_facing) == []


def test_the_samples_check_finds_what_it_looks_for(tmp_path):
    found = findings_of(lambda p: samples_calls_of(p, {"plan", "kernel_matrix", "bind"}),
                        "def f(samples, kernel):\n"
                        "    n = samples.shape[0]\n"
                        "    plan = samples.plan(kernel, block_size=1)\n"
                        "    return self.samples.kernel_matrix(kernel), fast_samples.bind(kernel)\n", tmp_path)
    assert_finds(found, ("samples.plan", "self.samples.kernel_matrix", "fast_samples.bind"))
    assert not any("samples.shape" in line for line in found)
