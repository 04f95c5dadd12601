// Sparse samples at the binding boundary: a canonical CSR matrix crosses as the tuple (indptr int64, indices
// int32, values, n_columns) the Python layer makes (fastkpca.kernels.native.native_operand); its structure is
// checked here, so no entry point reads out of bounds whatever it is given.
#pragma once

#include <cstdint>
#include <string>

#include "common.hpp"
#include "fastkpca/sparse_rows.hpp"

namespace fastkpca::bindings {

// The arrays of a CSR matrix, each through the Input caster (aligned, exact dtype), and the number of columns.
template <class S>
struct SparseInput {
  Input<std::int64_t> indptr;
  Input<std::int32_t> indices;
  Input<S> values;
  Index cols = 0;
};

}  // namespace fastkpca::bindings

namespace pybind11::detail {

// A tuple (indptr int64, indices int32, values S, n_columns): the caster of SparseInput<S> takes it when the
// values are of exactly S (so the float32 and float64 overloads select themselves) and the index arrays of
// exactly their types.
template <class S>
struct type_caster<fastkpca::bindings::SparseInput<S>> {
  using Value = fastkpca::bindings::SparseInput<S>;
  PYBIND11_TYPE_CASTER(Value, const_name("tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray, int]"));
  bool load(handle src, bool) {
    if (!isinstance<tuple>(src)) return false;
    const tuple t = reinterpret_borrow<tuple>(src);
    if (t.size() != 4 || !array_t<S>::check_(t[2]) || !array_t<std::int64_t>::check_(t[0]) ||
        !array_t<std::int32_t>::check_(t[1]) || !isinstance<int_>(t[3]))
      return false;
    make_caster<fastkpca::bindings::Input<std::int64_t>> indptr;
    make_caster<fastkpca::bindings::Input<std::int32_t>> indices;
    make_caster<fastkpca::bindings::Input<S>> values;
    if (!indptr.load(t[0], false) || !indices.load(t[1], false) || !values.load(t[2], false)) return false;
    value.indptr = cast_op<fastkpca::bindings::Input<std::int64_t>&&>(std::move(indptr));
    value.indices = cast_op<fastkpca::bindings::Input<std::int32_t>&&>(std::move(indices));
    value.values = cast_op<fastkpca::bindings::Input<S>&&>(std::move(values));
    value.cols = t[3].cast<fastkpca::Index>();
    return true;
  }
};

}  // namespace pybind11::detail

namespace fastkpca::bindings {

// The CSR structure a sparse kernel reads: row pointers from 0, non-decreasing, spanning the entries; column
// indices within [0, cols); at least one row and one column. ValueError otherwise.
template <class S>
SparseView<S> checked(const SparseInput<S>& in, const char* name) {
  const std::string who(name);
  if (in.indptr.ndim() != 1 || in.indices.ndim() != 1 || in.values.ndim() != 1)
    throw py::value_error(who + "'s arrays must be 1-D");
  const Index rows = static_cast<Index>(in.indptr.size()) - 1, nnz = static_cast<Index>(in.indices.size());
  if (rows < 1 || in.cols < 1) throw py::value_error(who + " must have at least one row and one column");
  if (static_cast<Index>(in.values.size()) != nnz)
    throw py::value_error(who + "'s indices and values differ in length");
  const std::int64_t* p = in.indptr.data();
  if (p[0] != 0 || p[rows] != nnz) throw py::value_error(who + "'s indptr does not span its entries");
  for (Index i = 0; i < rows; ++i)
    if (p[i + 1] < p[i]) throw py::value_error(who + "'s indptr decreases");
  const std::int32_t* k = in.indices.data();
  for (Index e = 0; e < nnz; ++e)
    if (k[e] < 0 || k[e] >= in.cols) throw py::value_error(who + " has a column index out of range");
  return SparseView<S>{p, k, in.values.data(), rows, in.cols};
}

}  // namespace fastkpca::bindings
