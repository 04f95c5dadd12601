"""pytest plugin: ``fastkpca.patch_sklearn()`` before any test module is imported, so that a downstream package's
own tests (``python -m pytest -p clients_patch --pyargs <its tests>``) import scikit-learn's names as fastkpca's
classes, as that package's users get them under the patch (tests/test_clients.py)."""


def pytest_configure(config):
    import fastkpca

    fastkpca.patch_sklearn()
