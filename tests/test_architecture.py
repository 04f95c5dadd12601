"""The structure the layers contract (pyproject.toml, `lint-imports` in CI) does not check by itself: no
import cycle anywhere in the package, no engine-specific word in an estimator module, and estimators that
stay small (solver code belongs in the solvers layer)."""

from __future__ import annotations

import ast
import tokenize
from pathlib import Path

import pytest

import fastkpca

grimp = pytest.importorskip("grimp")  # import-linter's graph builder (a test extra)

PACKAGE = Path(fastkpca.__file__).parent
ESTIMATORS = sorted((PACKAGE / "estimators").glob("*.py"))


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
            assert _code_lines(node, lines) <= 250, f"{node.name} has {_code_lines(node, lines)} lines of code"


def test_the_dask_engine_module_imports_neither_scikit_learn_nor_scipy():
    """A Dask worker imports fastkpca.engines.dask to run a task's function: it must stay light (importing
    scikit-learn there cost 0.7 s of the first task of every fit)."""
    import subprocess
    import sys

    code = "import sys, fastkpca.engines.dask; print(sorted(m for m in ('sklearn', 'scipy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
