// A kernel block's kept tiles and its two-sided pass (kernel_block.hpp) for any KernelTiles: what the
// bindings of single kernels (blocks.cpp) and of sums of kernels (gaussian_process.cpp) both hand to the
// distributed passes of python/fastkpca/engines/dask.py.
#pragma once

#include <optional>
#include <vector>

#include "common.hpp"
#include "fastkpca/kernel_block.hpp"

namespace fastkpca::bindings {

// The tiles of the block in the panel form block_product reads.
template <class S>
py::array_t<S> kept_tiles(const KernelTiles<S>& tiles, int n_threads) {
  const Index rows = packed_tiles(tiles.n());
  py::array_t<S> out(kernel_block_elements(tiles, rows));
  S* o = out.mutable_data();
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    kernel_block_tiles(tiles, rows, o, interrupt);
    return 0;
  });
  return out;
}

// (K·vb, Kᵀ·va) of a cross block, (K·va, None) of a symmetric one; kept tiles (or None) read instead of
// computed. va has a row per row of the block, vb (given exactly for a cross block) one per column.
template <class S>
py::tuple block_product(const KernelTiles<S>& tiles, const std::optional<Input<S>>& kept, const Input<double>& va,
                        const std::optional<Input<double>>& vb, Index blocks, int n_threads) {
  using RArrayD = py::array_t<double, py::array::c_style>;
  const bool cross = !tiles.symmetric();
  require_matrix(va, "va");
  if (va.shape(0) != tiles.n()) throw py::value_error("va must have one row per row of a");
  if (cross != vb.has_value()) throw py::value_error("vb must be given exactly when b is");
  if (vb) {
    require_matrix(*vb, "vb");
    if (vb->shape(0) != tiles.cols() || vb->shape(1) != va.shape(1))
      throw py::value_error("vb must have one row per row of b and as many columns as va");
  }
  const Index rows = packed_tiles(tiles.n());
  if (kept && kept->size() != kernel_block_elements(tiles, rows))
    throw py::value_error("the kept tiles do not match this block (made by kernel_block_tiles for the same a and b?)");
  const Index width = va.shape(1);
  RArrayD wa({static_cast<Index>(tiles.n()), width});
  std::optional<RArrayD> wb;
  if (cross) wb.emplace(std::vector<py::ssize_t>{tiles.cols(), width});
  ConstRowMatrixMap<double> vam(va.data(), va.shape(0), width);
  std::optional<ConstRowMatrixMap<double>> vbm;
  if (vb) vbm.emplace(vb->data(), vb->shape(0), width);
  RowMatrixMap<double> wam(wa.mutable_data(), tiles.n(), width);
  std::optional<RowMatrixMap<double>> wbm;
  if (wb) wbm.emplace(wb->mutable_data(), tiles.cols(), width);
  const S* stored = kept ? kept->data() : nullptr;
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    kernel_block_product(tiles, stored, stored ? rows : 0, &vam, vbm ? &*vbm : nullptr, wam, wbm ? &*wbm : nullptr,
                         interrupt, blocks);
    return 0;
  });
  return py::make_tuple(wa, wb ? py::object(*wb) : py::object(py::none()));
}

}  // namespace fastkpca::bindings
