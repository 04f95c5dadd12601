"""scikit-learn's own test modules, run against fastkpca's classes (sklearn_swap.py swaps them in before the
modules import them): KernelPCA, Nystroem, KernelRidge, SpectralEmbedding / spectral_embedding,
SpectralClustering / spectral_clustering, GaussianProcessRegressor, GaussianProcessClassifier and the five SVM
classes, from the installed scikit-learn. All the modules run in one pytest process (scikit-learn's import is
most of a process's start), with its float32 variants on; each test of KernelPCA's module runs also with
every "auto" fit that Lanczos can solve given to Lanczos (sklearn_swap.prefer_lanczos: the cost model picks the
dense solver at these sizes) and its kernel forced matrix-free, then cached (sklearn_swap.force_storage:
instead of the packed matrix the memory limit allows).

Deselected, with the reason: test_svm.py's test_svr_errors fits a kernel that returns a 1×1 matrix for two
samples and expects the fit to pass; fastkpca refuses it at fit with a ValueError naming the kernel and the
shape. test_gpc.py's test_lml_gradient cases that scikit-learn marks xfail (its own gradient is off there,
scikit-learn issue 31366) pass here: they are reported as xpassed.
"""

from sklearn_swap import SWAPS, run_swapped

MODULES = tuple(dict.fromkeys(test for _, _, test in SWAPS))


def test_scikit_learns_test_modules_pass():
    counts = run_swapped(*MODULES, environment={"SKLEARN_RUN_FLOAT32_TESTS": "1",
                                                 "FASTKPCA_TEST_STORAGES": "matrix_free,cached"},
                         deselect="test_svr_errors")
    assert set(counts) == set(MODULES)
