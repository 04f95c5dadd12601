// Kernels of sparse samples (sparse_tiles.hpp): the Gram matrix, the diagonal, the one-sided product K(x, y)·v
// and the kernel operator (packed, cached or matrix-free). A sparse matrix crosses as the tuple
// (indptr int64, indices int32, values, n_columns) of a canonical CSR matrix, which the Python layer makes
// (fastkpca.kernels.native.native_operand); its structure is checked here, so no entry point reads out of
// bounds whatever it is given.
#include <cstdint>
#include <optional>
#include <string>

#include "common.hpp"
#include "fastkpca/kernel_block.hpp"
#include "fastkpca/sparse_tiles.hpp"
#include "fastkpca/tiled_operator.hpp"
#include "sparse_input.hpp"

namespace fastkpca::bindings {

namespace {

template <class S>
void sparse_gram_into(const SparseInput<S>& x, const std::optional<SparseInput<S>>& y, const std::string& kernel,
                      double gamma, double degree, double coef0, InPlace<S>& out, int n_threads) {
  const KernelParams params = kernel_params(kernel, gamma, degree, coef0);
  const SparseView<S> xv = checked<S>(x, "x");
  std::optional<SparseView<S>> yv;
  if (y) {
    yv = checked<S>(*y, "y");
    if (yv->cols != xv.cols) throw py::value_error("x and y have different numbers of columns");
  }
  const Index m = yv ? yv->rows : xv.rows;
  if (out.ndim() != 2 || out.shape(0) != xv.rows || out.shape(1) != m) throw py::value_error("out has the wrong shape");
  S* o = out.mutable_data();
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    const auto tiles = make_sparse_kernel_tiles<S>(xv, params, yv ? &*yv : nullptr);
    gram_from_tiles(*tiles, o, m, interrupt);
    return 0;
  });
}

template <class S>
void sparse_kernel_diagonal_into(const SparseInput<S>& x, const std::string& kernel, double gamma, double degree,
                                 double coef0, InPlace<S>& out, int n_threads) {
  const KernelParams params = kernel_params(kernel, gamma, degree, coef0);
  const SparseView<S> xv = checked<S>(x, "x");
  if (out.ndim() != 1 || out.shape(0) != xv.rows) throw py::value_error("out has the wrong shape");
  S* o = out.mutable_data();
  release_and_run(n_threads, [&](Interrupt&) {
    sparse_kernel_diagonal<S>(xv, params, o);
    return 0;
  });
}

template <class S>
void sparse_cross_product_into(const SparseInput<S>& x, const SparseInput<S>& y, const std::string& kernel,
                               double gamma, double degree, double coef0, const Input<double>& v, InPlace<double>& out,
                               int n_threads) {
  const KernelParams params = kernel_params(kernel, gamma, degree, coef0);
  const SparseView<S> xv = checked<S>(x, "x"), yv = checked<S>(y, "y");
  if (yv.cols != xv.cols) throw py::value_error("x and y have different numbers of columns");
  require_matrix(v, "v");
  if (v.shape(0) != yv.rows) throw py::value_error("v must have one row per row of y");
  if (out.ndim() != 2 || out.shape(0) != xv.rows || out.shape(1) != v.shape(1))
    throw py::value_error("out has the wrong shape");
  ConstRowMatrixMap<double> vm(v.data(), v.shape(0), v.shape(1));
  RowMatrixMap<double> om(out.mutable_data(), out.shape(0), out.shape(1));
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    // The one-sided cross block: K(x, y)·v tile by tile, never storing K (kernel_block.hpp).
    const auto tiles = make_sparse_kernel_tiles<S>(xv, params, &yv);
    kernel_block_product(*tiles, static_cast<const S*>(nullptr), 0, nullptr, &vm, om, nullptr, interrupt);
    return 0;
  });
}

template <class S>
std::shared_ptr<Operator> sparse_kernel_operator(const SparseInput<S>& x, const std::string& kernel, double gamma,
                                                 double degree, double coef0, Index cached_tile_rows, int n_threads,
                                                 bool zero_diagonal) {
  const KernelParams params = kernel_params(kernel, gamma, degree, coef0);
  const SparseView<S> xv = checked<S>(x, "x");
  return release_and_run(n_threads, [&](Interrupt& interrupt) -> std::shared_ptr<Operator> {
    return std::make_shared<TiledKernelOperator<S>>(make_sparse_kernel_tiles<S>(xv, params, nullptr, zero_diagonal),
                                                    cached_tile_rows, interrupt);
  });
}

template <class S>
void def_sparse(py::module_& m) {
  m.def("sparse_gram_into", &sparse_gram_into<S>, py::arg("x"), py::arg("y"), py::arg("kernel"), py::arg("gamma"),
        py::arg("degree"), py::arg("coef0"), py::arg("out"), py::arg("n_threads"),
        "out[i, j] = k(x_i, y_j) of sparse rows (y=None: y = x, symmetric).");
  m.def("sparse_kernel_diagonal_into", &sparse_kernel_diagonal_into<S>, py::arg("x"), py::arg("kernel"),
        py::arg("gamma"), py::arg("degree"), py::arg("coef0"), py::arg("out"), py::arg("n_threads"),
        "out[i] = k(x_i, x_i) of sparse rows.");
  m.def("sparse_cross_product_into", &sparse_cross_product_into<S>, py::arg("x"), py::arg("y"), py::arg("kernel"),
        py::arg("gamma"), py::arg("degree"), py::arg("coef0"), py::arg("v"), py::arg("out"), py::arg("n_threads"),
        "out = K(x, y) @ v of sparse rows, without storing K.");
  m.def("sparse_kernel_operator", &sparse_kernel_operator<S>, py::arg("x"), py::arg("kernel"), py::arg("gamma"),
        py::arg("degree"), py::arg("coef0"), py::arg("cached_tile_rows"), py::arg("n_threads"),
        py::arg("zero_diagonal") = false,
        "k(x, x) of sparse rows over its lower tiles, the first cached_tile_rows tile rows kept; zero_diagonal: "
        "without its diagonal.");
}

}  // namespace

void init_sparse(py::module_& m) {
  def_sparse<double>(m);
  def_sparse<float>(m);
}

}  // namespace fastkpca::bindings
