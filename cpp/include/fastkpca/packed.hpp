// Packed lower-tile storage of a symmetric N×N matrix: only the tiles (I, J) with J <= I of a fixed
// T×T grid are kept, each as a contiguous T×T block, tile row after tile row:
//
//   tile (I, J) starts at element (I·(I+1)/2 + J)·T²,   nt = ceil(N / T) tiles per side.
//
// Inside a tile, rows go in panels of P = 8, each panel column by column: element (r, j) of a tile sits at
// (r / P)·P·T + j·P + r % P. A pass reads the P entries of a column of a panel with one load, and a whole
// tile as one sequential run (row-major tiles, read 8 rows at a time, made eight short streams per
// panel, which the hardware prefetchers followed badly: passes were 10–25% slower).
//
// That is nt(nt+1)/2 · T² ≈ N²/2 elements: half the memory of the full matrix, and half the traffic of a
// pass over it (every entry below the diagonal serves both A_ij and A_ji). Diagonal tiles are stored in
// full (both triangles, exactly symmetric). Edge tiles are padded with zeros to T×T, so products with a
// zero-padded block need no bounds checks and the padding contributes nothing.
#pragma once

#include "fastkpca/types.hpp"

namespace fastkpca {

constexpr Index kPackedTile = 256;
constexpr Index kPanelRows = 8;
static_assert(kPackedTile % kPanelRows == 0, "panels tile a tile");

// Tiles per side of the packed form of an n×n matrix.
inline Index packed_tiles(Index n) { return (n + kPackedTile - 1) / kPackedTile; }

// Elements of the packed form's first `tile_rows` tile rows (the kept prefix of a cached operator).
inline Index packed_prefix_size(Index tile_rows) { return tile_rows * (tile_rows + 1) / 2 * kPackedTile * kPackedTile; }

// Elements of the packed form of an n×n matrix.
inline Index packed_size(Index n) { return packed_prefix_size(packed_tiles(n)); }

// Elements of a rectangular block of whole tiles (a cross block k(A, B) kept tile by tile, tile (I, J) at
// (I·col_tiles + J)·T²).
inline Index tiled_block_size(Index row_tiles, Index col_tiles) { return row_tiles * col_tiles * kPackedTile * kPackedTile; }

// First element of tile (I, J), J <= I.
inline Index packed_tile_offset(Index I, Index J) { return (I * (I + 1) / 2 + J) * kPackedTile * kPackedTile; }

// Position of element (r, j) inside a tile.
inline Index packed_in_tile(Index r, Index j) {
  return (r / kPanelRows) * kPanelRows * kPackedTile + j * kPanelRows + r % kPanelRows;
}

// Writes a row-major T×T tile (leading dimension ld) into the panel form at dst.
template <class S>
void pack_tile(const S* src, Index ld, S* dst) {
  for (Index r0 = 0; r0 < kPackedTile; r0 += kPanelRows)
    for (Index j = 0; j < kPackedTile; ++j)
      for (Index r = 0; r < kPanelRows; ++r) dst[packed_in_tile(r0 + r, j)] = src[(r0 + r) * ld + j];
}

}  // namespace fastkpca
