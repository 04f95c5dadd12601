"""pytest plugin: run scikit-learn's own KernelPCA, Nystroem, KernelRidge, SpectralEmbedding, SpectralClustering,
GaussianProcessRegressor, GaussianProcessClassifier and SVM tests with fastkpca's classes (and
spectral_embedding, spectral_clustering) swapped in.

Used by tests/test_decomposition.py as ``python -m pytest -p sklearn_swap --pyargs
sklearn.decomposition.tests.test_kernel_pca`` (and by tests/test_kernel_approximation.py and
tests/test_kernel_ridge.py with ``sklearn.tests.test_kernel_approximation`` and
``sklearn.tests.test_kernel_ridge``): the installed test module is imported after the swap, so
its ``from sklearn.decomposition import KernelPCA`` gets fastkpca's class.

With ``FASTKPCA_TEST_STORAGE=matrix_free`` (or ``cached``) in the environment, every lanczos fit keeps its
kernel in that storage mode instead of the one its memory limit allows (see ``force_storage``).
"""

import os
import sys


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
    if os.environ.get("FASTKPCA_TEST_STORAGE"):
        force_storage(os.environ["FASTKPCA_TEST_STORAGE"])


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
