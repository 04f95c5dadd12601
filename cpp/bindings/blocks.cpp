// Kernel blocks (kernel_block.hpp): the tiles of k(A, B) (or k(A, A)) to keep in a worker's memory, one
// pass of such a block over thin blocks of vectors, reading the kept tiles or computing them, and the
// one-sided product K(X, Y)·V of predictions and transforms. The Python layer validates and decides what
// is kept.
#include <optional>
#include <utility>

#include "block_passes.hpp"
#include "common.hpp"
#include "fastkpca/kernel_block.hpp"

namespace fastkpca::bindings {

namespace {

template <class S>
std::unique_ptr<KernelTiles<S>> block_tiles(const Input<S>& a, const std::optional<Input<S>>& b,
                                            const std::string& kernel, double gamma, double degree, double coef0,
                                            std::optional<ConstRowMatrixMap<S>>& bm, bool zero_diagonal,
                                            int n_threads) {
  require_matrix(a, "a");
  if (a.shape(0) < 1 || a.shape(1) < 1) throw py::value_error("a must have at least one row and one column");
  if (b) {
    require_matrix(*b, "b");
    if (b->shape(1) != a.shape(1)) throw py::value_error("a and b have different numbers of columns");
    if (b->shape(0) < 1) throw py::value_error("b must have at least one row");
    bm.emplace(b->data(), b->shape(0), b->shape(1));
  }
  ConstRowMatrixMap<S> am(a.data(), a.shape(0), a.shape(1));
  const KernelParams params = kernel_params(kernel, gamma, degree, coef0);
  // The operands are prepared on the call's threads (the preparation may use the team).
  return release_and_run(
      n_threads, [&](Interrupt&) { return make_kernel_tiles<S>(am, params, bm ? &*bm : nullptr, zero_diagonal); });
}

template <class S>
py::array_t<S> kernel_block_tiles_of(const Input<S>& a, const std::optional<Input<S>>& b, const std::string& kernel,
                                     double gamma, double degree, double coef0, int n_threads, bool zero_diagonal) {
  std::optional<ConstRowMatrixMap<S>> bm;
  auto tiles = block_tiles<S>(a, b, kernel, gamma, degree, coef0, bm, zero_diagonal, n_threads);
  return kept_tiles(*tiles, n_threads);
}

template <class S>
py::tuple kernel_block_product_of(const Input<S>& a, const std::optional<Input<S>>& b, const std::string& kernel,
                                  double gamma, double degree, double coef0, const std::optional<Input<S>>& kept,
                                  const Input<double>& va, const std::optional<Input<double>>& vb, Index blocks,
                                  int n_threads, bool zero_diagonal) {
  std::optional<ConstRowMatrixMap<S>> bm;
  auto tiles = block_tiles<S>(a, b, kernel, gamma, degree, coef0, bm, zero_diagonal, n_threads);
  return block_product(*tiles, kept, va, vb, blocks, n_threads);
}

template <class S>
void def_blocks(py::module_& m) {
  m.def("kernel_block_tiles", &kernel_block_tiles_of<S>, py::arg("a"), py::arg("b"), py::arg("kernel"),
        py::arg("gamma"), py::arg("degree"), py::arg("coef0"), py::arg("n_threads"), py::arg("zero_diagonal") = false,
        "The tiles of k(a, b) (b=None: the lower tiles of k(a, a), zero_diagonal: without its diagonal) in the "
        "panel form kernel_block_product reads.");
  m.def("kernel_block_product", &kernel_block_product_of<S>, py::arg("a"), py::arg("b"), py::arg("kernel"),
        py::arg("gamma"), py::arg("degree"), py::arg("coef0"), py::arg("kept"), py::arg("va"), py::arg("vb"),
        py::arg("blocks"), py::arg("n_threads"), py::arg("zero_diagonal") = false,
        "(k(a, b)·vb, k(a, b)ᵀ·va), or (k(a, a)·va, None) for b=None, each tile used once; kept tiles (or "
        "None) from kernel_block_tiles replace computing them, with the same result bit for bit. `blocks` "
        "(1 to 16) fixed work units, each with a buffer for the transposed side: 1 on one thread.");
}

}  // namespace

void init_blocks(py::module_& m) {
  def_blocks<double>(m);
  def_blocks<float>(m);
  m.def(
      "kernel_block_elements",
      [](Index rows_a, Index rows_b, bool symmetric) {
        return symmetric ? packed_size(rows_a) : tiled_block_size(packed_tiles(rows_a), packed_tiles(rows_b));
      },
      py::arg("rows_a"), py::arg("rows_b"), py::arg("symmetric"),
      "Elements of the kept tiles of a kernel block of rows_a × rows_b (symmetric: the packed lower tiles).");
}

}  // namespace fastkpca::bindings
