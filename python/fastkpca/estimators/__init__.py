"""The estimators layer: scikit-learn's estimators (and fastkpca's own) built on the layers below. Each
fit validates, gets an engine from engines.select, plans, calls a solver and stores the fitted state; no
estimator knows which engine or storage it runs on."""

from .decomposition import KernelPCA
from .gaussian_process import GaussianProcessRegressor
from .gaussian_process_classifier import GaussianProcessClassifier
from .kernel_approximation import Nystroem
from .kernel_kmeans import KernelKMeans
from .kernel_ridge import KernelRidge, KernelRidgeCV
from .manifold import ClassicalMDS, classical_mds
from .preprocessing import KernelCenterer
from .spectral import SpectralEmbedding, spectral_embedding
from .clustering import SpectralClustering, spectral_clustering
from .svm import SVC, SVR, NuSVC, NuSVR, OneClassSVM

__all__ = ["KernelPCA", "GaussianProcessRegressor", "GaussianProcessClassifier", "Nystroem", "KernelRidge",
           "KernelRidgeCV", "KernelKMeans", "ClassicalMDS", "classical_mds", "KernelCenterer", "SpectralEmbedding",
           "spectral_embedding", "SpectralClustering", "spectral_clustering", "SVC", "NuSVC", "SVR", "NuSVR",
           "OneClassSVM"]
