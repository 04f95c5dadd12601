// Kernel blocks (kernel_block.hpp): the tiles of k(A, B) (or k(A, A)) to keep in a worker's memory, one
// pass of such a block over thin blocks of vectors, reading the kept tiles or computing them, and the
// one-sided product K(X, Y)·V of predictions and transforms. The Python layer validates and decides what
// is kept.
#include <optional>
#include <utility>

#include "common.hpp"
#include "fastkpca/kernel_block.hpp"

namespace fastkpca::bindings {

namespace {

using RArrayD = py::array_t<double, py::array::c_style>;  // results made here

template <class S>
std::unique_ptr<KernelTiles<S>> block_tiles(const Input<S>& a, const std::optional<Input<S>>& b,
                                            const std::string& kernel, double gamma, double degree, double coef0,
                                            std::optional<ConstRowMatrixMap<S>>& bm, bool zero_diagonal) {
  require_matrix(a, "a");
  if (a.shape(0) < 1 || a.shape(1) < 1) throw py::value_error("a must have at least one row and one column");
  if (b) {
    require_matrix(*b, "b");
    if (b->shape(1) != a.shape(1)) throw py::value_error("a and b have different numbers of columns");
    if (b->shape(0) < 1) throw py::value_error("b must have at least one row");
    bm.emplace(b->data(), b->shape(0), b->shape(1));
  }
  ConstRowMatrixMap<S> am(a.data(), a.shape(0), a.shape(1));
  return make_kernel_tiles<S>(am, kernel_params(kernel, gamma, degree, coef0), bm ? &*bm : nullptr, zero_diagonal);
}

template <class S>
py::array_t<S> kernel_block_tiles_of(const Input<S>& a, const std::optional<Input<S>>& b, const std::string& kernel,
                                     double gamma, double degree, double coef0, int n_threads, bool zero_diagonal) {
  std::optional<ConstRowMatrixMap<S>> bm;
  auto tiles = block_tiles<S>(a, b, kernel, gamma, degree, coef0, bm, zero_diagonal);
  const Index rows = packed_tiles(tiles->n());
  py::array_t<S> out(kernel_block_elements(*tiles, rows));
  S* o = out.mutable_data();
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    kernel_block_tiles(*tiles, rows, o, interrupt);
    return 0;
  });
  return out;
}

template <class S>
py::tuple kernel_block_product_of(const Input<S>& a, const std::optional<Input<S>>& b, const std::string& kernel,
                                  double gamma, double degree, double coef0, const std::optional<Input<S>>& kept,
                                  const Input<double>& va, const std::optional<Input<double>>& vb, Index blocks,
                                  int n_threads, bool zero_diagonal) {
  std::optional<ConstRowMatrixMap<S>> bm;
  auto tiles = block_tiles<S>(a, b, kernel, gamma, degree, coef0, bm, zero_diagonal);
  require_matrix(va, "va");
  if (va.shape(0) != a.shape(0)) throw py::value_error("va must have one row per row of a");
  if (b.has_value() != vb.has_value()) throw py::value_error("vb must be given exactly when b is");
  if (vb) {
    require_matrix(*vb, "vb");
    if (vb->shape(0) != b->shape(0) || vb->shape(1) != va.shape(1))
      throw py::value_error("vb must have one row per row of b and as many columns as va");
  }
  const Index rows = packed_tiles(tiles->n());
  if (kept && kept->size() != kernel_block_elements(*tiles, rows))
    throw py::value_error("the kept tiles do not match this block (made by kernel_block_tiles for the same a and b?)");
  const Index width = va.shape(1);
  RArrayD wa({a.shape(0), width});
  std::optional<RArrayD> wb;
  if (b) wb.emplace(std::vector<py::ssize_t>{b->shape(0), width});
  ConstRowMatrixMap<double> vam(va.data(), va.shape(0), width);
  std::optional<ConstRowMatrixMap<double>> vbm;
  if (vb) vbm.emplace(vb->data(), vb->shape(0), width);
  RowMatrixMap<double> wam(wa.mutable_data(), a.shape(0), width);
  std::optional<RowMatrixMap<double>> wbm;
  if (wb) wbm.emplace(wb->mutable_data(), b->shape(0), width);
  const S* stored = kept ? kept->data() : nullptr;
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    kernel_block_product(*tiles, stored, stored ? rows : 0, &vam, vbm ? &*vbm : nullptr, wam, wbm ? &*wbm : nullptr,
                         interrupt, blocks);
    return 0;
  });
  return py::make_tuple(wa, wb ? py::object(*wb) : py::object(py::none()));
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
