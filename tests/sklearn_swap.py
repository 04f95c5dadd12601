"""pytest plugin: run scikit-learn's own KernelPCA, Nystroem, KernelRidge, SpectralEmbedding, SpectralClustering,
GaussianProcessRegressor, GaussianProcessClassifier and SVM tests with fastkpca's classes (and
spectral_embedding, spectral_clustering) swapped in.

Used by tests/test_sklearn_suites.py through ``run_swapped``: ``python -m pytest -p sklearn_swap --pyargs
<modules>`` in a subprocess, so that the installed test modules are imported after the swap and their
``from sklearn.decomposition import KernelPCA`` gets fastkpca's class.

With ``FASTKPCA_TEST_STORAGES=matrix_free,cached`` in the environment, each test of scikit-learn's KernelPCA
module runs once as it is and once for each storage named, where "auto" takes the lanczos solver wherever it
can (``prefer_lanczos``) and every lanczos fit keeps its kernel in that storage (``force_storage``) instead of
the one its memory limit allows; the variants run in the same process as the rest, whose start (scikit-learn's
import) is most of a run's cost at these sizes.
"""

import os
import sys

import pytest

KERNEL_PCA_TESTS = "sklearn.decomposition.tests.test_kernel_pca"


def force_storage(storage):
    """Make the storage planner (operators/storage.py) choose `storage` ("matrix_free", or "cached" with half
    the tile rows) wherever it would pick a tiled mode; returns a function that undoes it."""
    from fastkpca.operators import storage as operators

    original = operators.plan_storage

    def plan(n, n_features, itemsize, **kw):
        chosen = original(n, n_features, itemsize, **kw)
        if kw.get("storage", "auto") != "auto" or chosen.storage == "full":
            return chosen
        rows = 0 if storage == "matrix_free" else max(1, -(-n // 256) // 2)
        return operators.StoragePlan(storage, rows, 0, chosen.budget_bytes, f"forced by the tests ({storage})")

    operators.plan_storage = plan
    return lambda: setattr(operators, "plan_storage", original)


def prefer_lanczos():
    """Make KernelPCA's "auto" take the lanczos solver wherever it can solve the fit (a symmetric kernel, fewer
    components than samples) instead of the dense one the cost model picks at scikit-learn's test sizes, so that
    a forced storage has fits to hold; returns a function that undoes it."""
    from fastkpca.solvers import choice

    original = choice.kernel_pca

    def kernel_pca(requested, **kw):
        lanczos = requested == "auto" and kw["symmetric"] and not kw["all_components"]
        return original("lanczos" if lanczos else requested, **kw)

    choice.kernel_pca = kernel_pca
    return lambda: setattr(choice, "kernel_pca", original)


# (module scikit-learn's tests import the class from, class name, the test module that uses it)
SWAPS = (("sklearn.decomposition", "KernelPCA", "sklearn.decomposition.tests.test_kernel_pca"),
         ("sklearn.kernel_approximation", "Nystroem", "sklearn.tests.test_kernel_approximation"),
         ("sklearn.kernel_ridge", "KernelRidge", "sklearn.tests.test_kernel_ridge"),
         ("sklearn.manifold", "SpectralEmbedding", "sklearn.manifold.tests.test_spectral_embedding"),
         ("sklearn.manifold", "spectral_embedding", "sklearn.manifold.tests.test_spectral_embedding"),
         ("sklearn.cluster", "SpectralClustering", "sklearn.cluster.tests.test_spectral"),
         ("sklearn.cluster", "spectral_clustering", "sklearn.cluster.tests.test_spectral"),
         ("sklearn.gaussian_process", "GaussianProcessRegressor", "sklearn.gaussian_process.tests.test_gpr"),
         ("sklearn.gaussian_process", "GaussianProcessClassifier", "sklearn.gaussian_process.tests.test_gpc"),
         *(("sklearn.svm", name, test) for name in ("SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM")
           for test in ("sklearn.svm.tests.test_svm", "sklearn.svm.tests.test_sparse")))


def pytest_configure(config):
    import importlib

    import fastkpca

    for module, name, _ in SWAPS:
        setattr(importlib.import_module(module), name, getattr(fastkpca, name))


@pytest.fixture(autouse=True)
def fastkpca_storage(request):
    """The storage forced for this test (its parameter, from pytest_generate_tests), undone after it; none
    for a test without one."""
    storage = getattr(request, "param", None)
    undo = [force_storage(storage), prefer_lanczos()] if storage else []
    yield storage
    for step in undo:
        step()


def pytest_generate_tests(metafunc):
    storages = os.environ.get("FASTKPCA_TEST_STORAGES")
    if storages and metafunc.module.__name__ == KERNEL_PCA_TESTS:
        forced = [None, *storages.split(",")]
        metafunc.parametrize("fastkpca_storage", forced, indirect=True,
                             ids=[storage or "planned" for storage in forced])


def pytest_collection_modifyitems(session, config, items):
    import fastkpca

    import importlib

    loaded = [(source, sys.modules[test], name) for source, name, test in SWAPS if test in sys.modules]
    assert loaded, "no swapped test module was collected"
    for source, module, name in loaded:
        # The test module holds the name itself, or reaches it through its module (``svm.SVC``).
        held = getattr(module, name, None)
        if held is None:
            held = getattr(importlib.import_module(source), name)
        assert held is getattr(fastkpca, name), f"the {name} swap did not take"
    if os.environ.get("FASTKPCA_TEST_STORAGES"):  # every storage named got its runs of the KernelPCA module
        forced = {item.callspec.params.get("fastkpca_storage") for item in items
                  if item.module.__name__ == KERNEL_PCA_TESTS and hasattr(item, "callspec")}
        assert forced == {None, *os.environ["FASTKPCA_TEST_STORAGES"].split(",")}, forced


def run_swapped(*test_modules: str, environment: dict | None = None, deselect: str | None = None) -> dict:
    """``python -m pytest -p sklearn_swap --pyargs <test_modules>`` in one subprocess (this folder on its path):
    the installed scikit-learn test modules with fastkpca's classes swapped in, ``environment`` added to its
    environment, ``deselect`` a ``-k`` expression of the tests left out. Checks that it passed and that every
    module ran tests; returns each module's counts (passed, skipped, failed) from its JUnit report."""
    import collections
    import subprocess
    import tempfile
    import xml.etree.ElementTree as ElementTree
    from pathlib import Path

    here = Path(__file__).parent
    env = {**os.environ, **(environment or {}),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(here), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.xml"
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "sklearn_swap", "-p", "no:cacheprovider",
                              "-o", "junit_family=xunit1", f"--junitxml={report}",
                              *(["-k", f"not ({deselect})"] if deselect else []), "--pyargs", *test_modules],
                             capture_output=True, text=True, env=env, cwd=here.parent)
        assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
        counts: dict = collections.defaultdict(collections.Counter)
        for case in ElementTree.parse(report).getroot().iter("testcase"):
            module = Path(case.get("file", "")).with_suffix("").as_posix().replace("/", ".")
            outcome = {child.tag for child in case} & {"failure", "error", "skipped"}
            counts[module]["failed" if outcome & {"failure", "error"} else outcome.pop() if outcome else "passed"] += 1
    by_module = {}
    for test_module in test_modules:
        found = [c for name, c in counts.items() if name.endswith(test_module)]
        assert len(found) == 1 and found[0]["passed"] > 0 and not found[0]["failed"], (test_module, dict(counts))
        by_module[test_module] = dict(found[0])
    return by_module
