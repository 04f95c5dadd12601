// Packed lower-tile storage of a symmetric N×N matrix: only the tiles (I, J) with J <= I of a fixed
// T×T grid are kept, each as a contiguous T×T block, tile row after tile row:
//
//   tile (I, J) starts at element (I·(I+1)/2 + J)·T²,   nt = ceil(N / T) tiles per side.
//
// Inside a tile, the entries go in slabs of B × B (kSlab: 32 doubles or 64 floats, 8 or 16 KiB), slab
// (a, b) at (a·(T/B) + b)·B², each row-major. A pass reads or computes a slab, multiplies it into both of
// its products while it is in L1 (kernel_block.hpp), and moves on: a stored tile is one sequential run.
//
// That is nt(nt+1)/2 · T² ≈ N²/2 elements: half the memory of the full matrix, and half the traffic of a
// pass over it (every entry below the diagonal serves both A_ij and A_ji). A diagonal tile's slabs below
// and on the diagonal are used (the diagonal slabs exactly symmetric); those above it are zero. Edge
// tiles are padded with zeros to T×T, so products with a zero-padded block need no bounds checks and the
// padding contributes nothing.
#pragma once

#include "fastkpca/types.hpp"

namespace fastkpca {

constexpr Index kPackedTile = 256;
template <class S>
constexpr Index kSlab = 256 / static_cast<Index>(sizeof(S));
static_assert(kPackedTile % kSlab<double> == 0 && kPackedTile % kSlab<float> == 0, "slabs tile a tile");

// First element of slab (a, b) inside a tile.
template <class S>
constexpr Index slab_offset(Index a, Index b) {
  constexpr Index per_row = kPackedTile / kSlab<S>;  // slabs per row of slabs
  return (a * per_row + b) * kSlab<S> * kSlab<S>;
}

// Tiles per side of the packed form of an n×n matrix.
inline Index packed_tiles(Index n) { return (n + kPackedTile - 1) / kPackedTile; }

// Elements of the packed form's first `tile_rows` tile rows (the kept prefix of a cached operator).
inline Index packed_prefix_size(Index tile_rows) { return tile_rows * (tile_rows + 1) / 2 * kPackedTile * kPackedTile; }

// Elements of the packed form of an n×n matrix.
inline Index packed_size(Index n) { return packed_prefix_size(packed_tiles(n)); }

// Elements of a rectangular block of whole tiles (a cross block k(A, B) kept tile by tile, tile (I, J) at
// (I·col_tiles + J)·T²).
inline Index tiled_block_size(Index row_tiles, Index col_tiles) {
  return row_tiles * col_tiles * kPackedTile * kPackedTile;
}

// First element of tile (I, J), J <= I.
inline Index packed_tile_offset(Index I, Index J) { return (I * (I + 1) / 2 + J) * kPackedTile * kPackedTile; }

}  // namespace fastkpca
