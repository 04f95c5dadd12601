// The one declaration of fastkpca's kernels. Everything else derives from this list: the KernelKind enum,
// the registry table the bindings expose (and the Python layer's validation, pairwise_kernels, backend
// switch, command line and stubs read), and the dispatch switch in kernel_registry.hpp, which the compiler
// checks is exhaustive (no default case: a kernel cannot fall through to another one).
//
// X(name, functor, parameters, unit_diagonal, positive_semidefinite, aliases)
//   name        : the kernel's name, as scikit-learn spells it;
//   functor     : the tile functor of kernels.hpp that evaluates it;
//   parameters  : the keyword parameters it reads, comma-separated, from gamma (default 1/n_features),
//                 degree (default 3) and coef0 (default 1), scikit-learn's defaults;
//   unit_diagonal: k(x, x) = 1 for every x (the symmetric build writes an exact 1);
//   positive_semidefinite: every Gram matrix is PSD, for any data and valid parameters;
//   aliases     : other accepted names, comma-separated.
#pragma once

#define FASTKPCA_KERNEL_LIST(X)                                        \
  X(linear, DotKernel, "", false, true, "")                            \
  X(poly, DotKernel, "gamma,degree,coef0", false, false, "polynomial") \
  X(rbf, RadialKernel, "gamma", true, true, "")                        \
  X(matern12, RadialKernel, "gamma", true, true, "")                   \
  X(matern32, RadialKernel, "gamma", true, true, "")                   \
  X(matern52, RadialKernel, "gamma", true, true, "")                   \
  X(laplacian, LaplacianKernel, "gamma", true, true, "")               \
  X(sigmoid, DotKernel, "gamma,coef0", false, false, "")               \
  X(cosine, DotKernel, "", false, true, "")

namespace fastkpca {

enum class KernelKind {
#define FASTKPCA_KERNEL_ENUM(name, functor, params, unit, psd, aliases) name,
  FASTKPCA_KERNEL_LIST(FASTKPCA_KERNEL_ENUM)
#undef FASTKPCA_KERNEL_ENUM
};

struct KernelParams {
  KernelKind kind = KernelKind::linear;
  double gamma = 1.0;
  double degree = 3.0;
  double coef0 = 1.0;
};

}  // namespace fastkpca
