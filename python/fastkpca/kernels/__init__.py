"""The kernels layer: what a kernel is (kernel.py: one interface every kind implements, kinds.py: which kind
an estimator's parameter names), the one registry of native kernels, native evaluation on dense or sparse
samples (Gram blocks, diagonals, products that never store K), the other kinds (a precomputed matrix, a
Python callable or scikit-learn metric, a scikit-learn kernel object, graph affinities), scikit-learn's
pairwise_kernels interface and the centering algebra of feature space. It imports nothing above it."""

from .centering import KernelCentering, double_center, double_center_distances
from .differentiable import DifferentiableKernel
from .kernel import CrossProduct, Kernel, KernelColumns
from .kinds import (AFFINITY_NAMES, GRAPHS, KERNEL_NAMES, constraint, differentiable, gamma_of, make, make_affinity,
                    register, takes_matrix, takes_vectors, unregister)
from .native import NativeKernel
from .pairwise import fitted_pairwise_kernels, gram, pairwise_kernels

__all__ = ["gram", "pairwise_kernels", "fitted_pairwise_kernels", "double_center", "double_center_distances",
           "KernelCentering", "Kernel", "DifferentiableKernel",
           "KernelColumns", "CrossProduct", "NativeKernel", "make", "make_affinity", "register", "unregister",
           "constraint", "takes_matrix", "takes_vectors", "gamma_of", "differentiable",
           "KERNEL_NAMES", "AFFINITY_NAMES", "GRAPHS"]
