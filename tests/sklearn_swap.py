"""pytest plugin: run scikit-learn's own KernelPCA tests with fastkpca.KernelPCA swapped in.

Used by tests/test_decomposition.py as ``python -m pytest -p sklearn_swap --pyargs
sklearn.decomposition.tests.test_kernel_pca``: the installed test module is imported after the swap, so
its ``from sklearn.decomposition import KernelPCA`` gets fastkpca's class.

With ``FASTKPCA_TEST_STORAGE=matrix_free`` (or ``cached``) in the environment, every lanczos fit keeps its
kernel in that storage mode instead of the one its memory limit allows (see ``force_storage``).
"""

import os
import sys


def force_storage(storage):
    """Make operators.plan_storage choose `storage` ("matrix_free", or "cached" with half the tile rows)
    wherever it would pick a tiled mode; returns a function that undoes it."""
    from fastkpca import operators

    original = operators.plan_storage

    def plan(n, n_features, itemsize, **kw):
        chosen = original(n, n_features, itemsize, **kw)
        if kw.get("storage", "auto") != "auto" or chosen.storage == "full":
            return chosen
        rows = 0 if storage == "matrix_free" else max(1, -(-n // 256) // 2)
        return operators.StoragePlan(storage, rows, 0, chosen.budget_bytes, f"forced by the tests ({storage})")

    operators.plan_storage = plan
    return lambda: setattr(operators, "plan_storage", original)


def pytest_configure(config):
    import sklearn.decomposition

    import fastkpca

    sklearn.decomposition.KernelPCA = fastkpca.KernelPCA
    if os.environ.get("FASTKPCA_TEST_STORAGE"):
        force_storage(os.environ["FASTKPCA_TEST_STORAGE"])


def pytest_collection_modifyitems(session, config, items):
    import fastkpca

    module = sys.modules.get("sklearn.decomposition.tests.test_kernel_pca")
    assert module is not None and module.KernelPCA is fastkpca.KernelPCA, "the swap did not take"
