"""pytest plugin: run scikit-learn's own KernelPCA tests with fastkpca.KernelPCA swapped in.

Used by tests/test_decomposition.py as ``python -m pytest -p sklearn_swap --pyargs
sklearn.decomposition.tests.test_kernel_pca``: the installed test module is imported after the swap, so
its ``from sklearn.decomposition import KernelPCA`` gets fastkpca's class.
"""

import sys


def pytest_configure(config):
    import sklearn.decomposition

    import fastkpca

    sklearn.decomposition.KernelPCA = fastkpca.KernelPCA


def pytest_collection_modifyitems(session, config, items):
    import fastkpca

    module = sys.modules.get("sklearn.decomposition.tests.test_kernel_pca")
    assert module is not None and module.KernelPCA is fastkpca.KernelPCA, "the swap did not take"
