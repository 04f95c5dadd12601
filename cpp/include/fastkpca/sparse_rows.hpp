// Sparse samples: the rows of a CSR matrix (int64 row pointers, int32 column indices sorted within each row
// and without repeats, values of S), as the sparse kernel tiles (sparse_tiles.hpp) read them, and the
// per-thread scatter structure that turns a slab of rows into lists by column.
#pragma once

#include <cstdint>
#include <vector>

#include "fastkpca/types.hpp"

namespace fastkpca {

// A CSR matrix held by the caller: rows × cols, row i's entries at [indptr[i], indptr[i + 1]).
template <class S>
struct SparseView {
  const std::int64_t* indptr = nullptr;
  const std::int32_t* indices = nullptr;
  const S* values = nullptr;
  Index rows = 0, cols = 0;
};

// A CSR matrix owned by the core (the working copy of the samples an operator keeps).
template <class S>
struct SparseRows {
  std::vector<std::int64_t> indptr;
  std::vector<std::int32_t> indices;
  std::vector<S> values;
  Index rows = 0, cols = 0;

  SparseRows() = default;
  explicit SparseRows(const SparseView<S>& v)
      : indptr(v.indptr, v.indptr + v.rows + 1), indices(v.indices + v.indptr[0], v.indices + v.indptr[v.rows]),
        values(v.values + v.indptr[0], v.values + v.indptr[v.rows]), rows(v.rows), cols(v.cols) {
    const std::int64_t first = indptr[0];
    for (auto& p : indptr) p -= first;  // a view of a slice of rows starts where it starts
  }
  std::int64_t begin(Index i) const { return indptr[static_cast<std::size_t>(i)]; }
  std::int64_t end(Index i) const { return indptr[static_cast<std::size_t>(i) + 1]; }
  std::size_t bytes() const {
    return indptr.size() * sizeof(std::int64_t) + indices.size() * sizeof(std::int32_t) + values.size() * sizeof(S);
  }
};

// The rows of one slab of a sparse block, listed by column: for every column k that any of the rows has, the
// entries (row within the slab, value) of that column, in a linked list from head[k] (-1: none). A slab's
// product with another slab's rows then visits only the entries both rows have (Gustavson's sparse
// accumulator): the work is the number of such pairs, not the rows' lengths. One per thread, reused from
// slab to slab: `owner` and `first_row` say which rows it indexes now, `touched` which heads to reset.
struct SparseScratch {
  std::uint64_t owner = 0;
  Index first_row = -1;
  std::vector<std::int32_t> head, next, row, touched;
  std::vector<double> value;
  std::vector<double> acc;  // the slab's sums, row-major
};

}  // namespace fastkpca
