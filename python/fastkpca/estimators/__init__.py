"""The estimators layer: scikit-learn's estimators (and fastkpca's own) built on the layers below. Each
fit validates, gets an engine from engines.select, plans, calls a solver and stores the fitted state; no
estimator knows which engine or storage it runs on.

Each name is imported from its module on first access (PEP 562), so that a process that needs one estimator (a
joblib worker unpickling an SVC) imports its module alone, not every family's solvers."""

from __future__ import annotations

from typing import TYPE_CHECKING

#: Each public name: (its module here, the scikit-learn module whose name of the same name it replaces under
#: patch_sklearn, None for a name it does not replace). Adding an estimator: its module, a line here, a line in
#: __all__ and the TYPE_CHECKING imports below; the package's root, patch_sklearn and the lazy imports read this.
_MODULES = {
    "KernelPCA": ("decomposition", "sklearn.decomposition"),
    "GaussianProcessRegressor": ("gaussian_process", "sklearn.gaussian_process"),
    "GaussianProcessClassifier": ("gaussian_process_classifier", "sklearn.gaussian_process"),
    "Nystroem": ("kernel_approximation", "sklearn.kernel_approximation"),
    "KernelKMeans": ("kernel_kmeans", None),
    "KernelRidge": ("kernel_ridge", "sklearn.kernel_ridge"),
    "KernelRidgeCV": ("kernel_ridge", None),
    "ClassicalMDS": ("manifold", None),
    "classical_mds": ("manifold", None),
    "KernelCenterer": ("preprocessing", "sklearn.preprocessing"),
    "SpectralEmbedding": ("spectral", "sklearn.manifold"),
    "spectral_embedding": ("spectral", "sklearn.manifold"),
    "SpectralClustering": ("clustering", "sklearn.cluster"),
    "spectral_clustering": ("clustering", "sklearn.cluster"),
    "SVC": ("svm", "sklearn.svm"),
    "NuSVC": ("svm", "sklearn.svm"),
    "SVR": ("svm", "sklearn.svm"),
    "NuSVR": ("svm", "sklearn.svm"),
    "OneClassSVM": ("svm", "sklearn.svm"),
    "CG": ("solver_settings", None),
    "Nystrom": ("solver_settings", None),
    "progress": ("_base", None),
}

__all__ = ["KernelPCA", "GaussianProcessRegressor", "GaussianProcessClassifier", "Nystroem", "KernelRidge",
           "KernelRidgeCV", "KernelKMeans", "ClassicalMDS", "classical_mds", "KernelCenterer", "SpectralEmbedding",
           "spectral_embedding", "SpectralClustering", "spectral_clustering", "SVC", "NuSVC", "SVR", "NuSVR",
           "OneClassSVM", "CG", "Nystrom", "progress"]

if TYPE_CHECKING:
    from .clustering import SpectralClustering, spectral_clustering
    from .decomposition import KernelPCA
    from .gaussian_process import GaussianProcessRegressor
    from .gaussian_process_classifier import GaussianProcessClassifier
    from .kernel_approximation import Nystroem
    from .kernel_kmeans import KernelKMeans
    from .kernel_ridge import KernelRidge, KernelRidgeCV
    from .manifold import ClassicalMDS, classical_mds
    from ._base import progress
    from .preprocessing import KernelCenterer
    from .solver_settings import CG, Nystrom
    from .spectral import SpectralEmbedding, spectral_embedding
    from .svm import SVC, SVR, NuSVC, NuSVR, OneClassSVM


def __getattr__(name):
    if name in _MODULES:
        import importlib

        value = getattr(importlib.import_module(f".{_MODULES[name][0]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fastkpca.estimators' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_MODULES))
