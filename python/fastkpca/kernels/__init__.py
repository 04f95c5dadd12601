"""The kernels layer: the one registry of native kernels, native evaluation (Gram matrices, diagonals,
products that never store K, column sources), scikit-learn's pairwise_kernels interface and the centering
algebra of feature space. It imports nothing above it."""

from .centering import KernelCentering, double_center, double_center_distances
from .native import KernelColumns, KernelProduct, MatrixColumns, NativeKernel
from .pairwise import ChunkedProduct, MatrixKernel, gram, pairwise_kernels

__all__ = ["gram", "pairwise_kernels", "double_center", "double_center_distances", "KernelCentering",
           "NativeKernel", "KernelColumns", "MatrixColumns", "KernelProduct", "MatrixKernel", "ChunkedProduct"]
