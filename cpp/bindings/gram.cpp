// fastkpca.gram's native half: the Python layer validates and allocates `out`.
#include "fastkpca/gram.hpp"

#include "fastkpca/kernel_block.hpp"

#include <optional>

#include "common.hpp"

namespace fastkpca::bindings {

namespace {

template <class S>
void gram_into(const Input<S>& x, const std::optional<Input<S>>& y, const std::string& kernel, double gamma,
               double degree, double coef0, InPlace<S>& out, int n_threads) {
  const KernelParams params = kernel_params(kernel, gamma, degree, coef0);
  require_matrix(x, "x");
  if (y) {
    require_matrix(*y, "y");
    if (y->shape(1) != x.shape(1)) throw py::value_error("x and y have different numbers of columns");
  }
  const Index m = y ? y->shape(0) : x.shape(0);
  if (out.ndim() != 2 || out.shape(0) != x.shape(0) || out.shape(1) != m)
    throw py::value_error("out has the wrong shape");
  ConstRowMatrixMap<S> xm(x.data(), x.shape(0), x.shape(1));
  std::optional<ConstRowMatrixMap<S>> ym;
  if (y) ym.emplace(y->data(), y->shape(0), y->shape(1));
  RowMatrixMap<S> om(out.mutable_data(), out.shape(0), out.shape(1));
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    gram<S>(xm, ym ? &*ym : nullptr, params, om, interrupt);
    return 0;
  });
}

template <class S>
void kernel_diagonal_into(const Input<S>& x, const std::string& kernel, double gamma, double degree, double coef0,
                          InPlace<S>& out, int n_threads) {
  const KernelParams params = kernel_params(kernel, gamma, degree, coef0);
  require_matrix(x, "x");
  if (out.ndim() != 1 || out.shape(0) != x.shape(0)) throw py::value_error("out has the wrong shape");
  ConstRowMatrixMap<S> xm(x.data(), x.shape(0), x.shape(1));
  S* o = out.mutable_data();
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    kernel_diagonal<S>(xm, params, o, interrupt);
    return 0;
  });
}

template <class S>
void cross_product_into(const Input<S>& x, const Input<S>& y, const std::string& kernel, double gamma, double degree,
                        double coef0, const Input<double>& v, InPlace<double>& out, int n_threads) {
  const KernelParams params = kernel_params(kernel, gamma, degree, coef0);
  require_matrix(x, "x");
  require_matrix(y, "y");
  require_matrix(v, "v");
  if (y.shape(1) != x.shape(1)) throw py::value_error("x and y have different numbers of columns");
  if (v.shape(0) != y.shape(0)) throw py::value_error("v must have one row per row of y");
  if (out.ndim() != 2 || out.shape(0) != x.shape(0) || out.shape(1) != v.shape(1))
    throw py::value_error("out has the wrong shape");
  ConstRowMatrixMap<S> xm(x.data(), x.shape(0), x.shape(1)), ym(y.data(), y.shape(0), y.shape(1));
  ConstRowMatrixMap<double> vm(v.data(), v.shape(0), v.shape(1));
  RowMatrixMap<double> om(out.mutable_data(), out.shape(0), out.shape(1));
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    // The one-sided cross block: K(x, y)·v tile by tile, never storing K (kernel_block.hpp).
    const auto tiles = make_kernel_tiles<S>(xm, params, &ym);
    kernel_block_product(*tiles, static_cast<const S*>(nullptr), 0, nullptr, &vm, om, nullptr, interrupt);
    return 0;
  });
}

template <class S>
void def_gram(py::module_& m) {
  m.def("gram_into", &gram_into<S>, py::arg("x"), py::arg("y"), py::arg("kernel"), py::arg("gamma"), py::arg("degree"),
        py::arg("coef0"), py::arg("out"), py::arg("n_threads"),
        "out[i, j] = k(x_i, y_j) (y=None: y = x, symmetric). Arrays: C-contiguous, one dtype.");
  m.def("kernel_diagonal_into", &kernel_diagonal_into<S>, py::arg("x"), py::arg("kernel"), py::arg("gamma"),
        py::arg("degree"), py::arg("coef0"), py::arg("out"), py::arg("n_threads"),
        "out[i] = k(x_i, x_i), equal to the diagonal of gram_into(x, None). Arrays: C-contiguous, one dtype.");
  m.def("cross_product_into", &cross_product_into<S>, py::arg("x"), py::arg("y"), py::arg("kernel"), py::arg("gamma"),
        py::arg("degree"), py::arg("coef0"), py::arg("v"), py::arg("out"), py::arg("n_threads"),
        "out = K(x, y) @ v without storing K (v, out: C-contiguous float64).");
}

}  // namespace

void init_gram(py::module_& m) {
  py::list registry;
  for (const KernelInfo& info : kernel_registry) {
    py::dict d;
    d["name"] = info.name;
    d["parameters"] = info.parameters;
    d["unit_diagonal"] = info.unit_diagonal;
    d["positive_semidefinite"] = info.positive_semidefinite;
    d["aliases"] = info.aliases;
    registry.append(d);
  }
  m.attr("KERNELS") = registry;
  def_gram<double>(m);
  def_gram<float>(m);
}

}  // namespace fastkpca::bindings
