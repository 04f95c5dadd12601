// The register-blocked micro-kernels every kernel evaluation and every block product runs on.
//
// A kernel entry is f(Σ_k a_ik ⊙ b_jk): an accumulation over a depth of prepared operand columns (⊙ a
// product for the inner-product and distance kernels, |a − b| for the L1 one), finished by the kernel's
// function (kernels.hpp). The operands are packed once, when a kernel block is prepared, into panels the
// micro-kernel streams: the rows of the left operand in panels of MR (or, to fill a slab, MR_TAIL) rows,
// those of the right one in panels of NR rows, each panel depth-major, zero-padded to whole slabs.
//
// distance_block() keeps an MR × NR block of accumulators in registers (MR rows × NV vectors of kLanes
// elements) over the whole depth, hands it to the kernel's finish (the exp applied in registers), and
// stores it. product_block() is the same register blocking for W += A·B, A read by broadcasts with any
// strides (a slab of kernel entries, by rows or by columns, or rows of a dense matrix), B a block of
// vectors: the products K·V and Kᵀ·V of a slab while it is in L1 (kernel_block.hpp), and the dense
// operator's passes (dense_operator.hpp); symmetric_block() does both products of a block in one sweep.
//
// Blocking per ISA (simd.hpp's vector): AVX-512 8 × 2 vectors (16 doubles or 32 floats) of accumulators,
// AVX2 6 × 2 (8 doubles, 16 floats; 4 × 2 for the l1 sum and a slab's last rows), SSE2 the same with 2
// doubles or 4 floats a vector; the products 8 or 4 rows × up to 3 vectors. Each block's sums run in a
// fixed order, so results do not depend on the thread count.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <vector>

#include "fastkpca/packed.hpp"
#include "fastkpca/parallel.hpp"
#include "fastkpca/simd.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca::micro {

template <class S>
using Vec = simd::Vec<S>;
template <class S>
constexpr int kLanes = simd::kLanes<S>;

enum class Accumulate { product, l1 };

// Rows of a distance block: MR<A> (its accumulators MR × NV vectors: 12 of the 16 AVX2/SSE registers for
// products, the FMA pipes' latency × throughput being 8 on Zen 3 and 10 on Skylake; 8 for the l1 sum, whose
// subtraction needs a temporary and the sign mask a register; 16 of AVX-512's 32), and the tail height
// that completes a slab of rows (slabs of 32 doubles or 64 floats: 6+6+6+6+4+4, 6·10+4). Its columns:
// NR = NV vectors.
template <Accumulate A>
constexpr int MR = simd::kBytes == 64 ? 8 : (A == Accumulate::product ? 6 : 4);
template <Accumulate A>
constexpr int MR_TAIL = simd::kBytes == 64 ? 8 : 4;
constexpr int NV = 2;
template <class S>
constexpr int NR = NV * kLanes<S>;
// Rows of a product block, and the most vectors of its columns; the rows of a block of one or two vectors.
constexpr int PR = simd::kBytes == 64 ? 8 : 4;
constexpr int PV = 3;
constexpr int PR_NARROW = simd::kBytes == 64 ? 8 : 6;

// One thread's seconds per byte of packed rows written into fresh memory, the work by which packing starts the
// team: the page faults dominate it (a first write of a 4 KiB page costs 1 to 1.5 µs on the VMs of
// docs/user_guide/threads.md, 0.25 to 0.37 ns a byte), the copy and the zero padding the rest.
constexpr double kPackSecondsPerByte = 0.4e-9;

// Operand rows packed for the micro-kernel: each slab of kSlab<S> rows (packed.hpp) split into panels of
// `height` rows, followed by panels of `tail` rows for what is left (height·m + tail·t = kSlab<S>, m as
// large as possible); each panel depth-major, element (r, k) of the panel starting at row p at
// p·depth + k·h + (r - p). The panels of every slab are whole, so the blocks of any slab, any tile and
// any Gram tile (multiples of kSlab rows) are whole panels. Rows past n are zero.
template <class S>
class PackedRows {
 public:
  PackedRows() = default;
  // row(i, dst) writes row i's `depth` values into dst; it is called from the team's threads at once. The
  // slabs are independent runs of the buffer, so each thread fills (and takes the page faults of) its own.
  // Constructed under the call's thread count (the binding's release_and_run), never inside a parallel region.
  template <class RowFn>
  PackedRows(Index n, Index depth, int height, int tail, RowFn&& row)
      : n_(n), depth_(depth), height_(height), tail_(tail) {
    constexpr Index G = kSlab<S>;
    main_rows_ = G / height_ * height_;
    while ((G - main_rows_) % tail_ != 0) main_rows_ -= height_;
    const Index slabs = (n + G - 1) / G;
    size_ = static_cast<std::size_t>(slabs * G * depth_);
    data_.reset(size_ > 0 ? new S[size_] : nullptr);  // uninitialised: every element is written below
    // A small pack stays out of any parallel region: even one that does not start the team costs a small call.
    if (slabs < 2 || !team_pays(kPackSecondsPerByte * static_cast<double>(size_ * sizeof(S)))) {
      std::vector<S> buf(static_cast<size_t>(depth));
      std::fill(data_.get(), data_.get() + size_, S(0));
      for (Index i = 0; i < n; ++i) put_row(i, row, buf.data());
    } else {
      fill_on_team(slabs, row);
    }
  }
  // The first row of the panel holding row i, and the height of the panel starting at row p.
  Index panel_start(Index i) const {
    const Index slab = i - i % kSlab<S>, r = i - slab;
    return slab + (r < main_rows_ ? r / height_ * height_ : main_rows_ + (r - main_rows_) / tail_ * tail_);
  }
  int height_at(Index p) const { return p % kSlab<S> < main_rows_ ? height_ : tail_; }
  // The panel starting at row p.
  const S* panel(Index p) const { return data_.get() + p * depth_; }
  Index rows() const { return n_; }
  Index depth() const { return depth_; }
  std::size_t bytes() const { return size_ * sizeof(S); }

 private:
  // Slab `slab` of the buffer: zeros, then its rows (rows past n stay zero); buf holds one row.
  template <class RowFn>
  void fill_slab(Index slab, RowFn& row, S* buf) {
    constexpr Index G = kSlab<S>;
    std::fill(data_.get() + slab * G * depth_, data_.get() + (slab + 1) * G * depth_, S(0));
    for (Index i = slab * G; i < std::min(n_, (slab + 1) * G); ++i) put_row(i, row, buf);
  }
  // Row i into its panel, through buf.
  template <class RowFn>
  void put_row(Index i, RowFn& row, S* buf) {
    row(i, buf);
    const Index p = panel_start(i);
    const int h = height_at(p);
    for (Index k = 0; k < depth_; ++k) data_[static_cast<size_t>(p * depth_ + k * h + (i - p))] = buf[k];
  }
  // Every slab on the team, each thread with its row buffer allocated before the region (nothing inside may throw).
  template <class RowFn>
  void fill_on_team(Index slabs, RowFn& row) {
    std::vector<S> bufs(static_cast<size_t>(omp_get_max_threads() * depth_));
#pragma omp parallel
    {
      S* buf = bufs.data() + omp_get_thread_num() * depth_;
#pragma omp for schedule(static)
      for (Index slab = 0; slab < slabs; ++slab) fill_slab(slab, row, buf);
    }
  }

  Index n_ = 0, depth_ = 0, main_rows_ = 0;
  int height_ = 1, tail_ = 1;
  std::unique_ptr<S[]> data_;
  std::size_t size_ = 0;
};

// acc[r][v] = Σ_k a[k·R + r] ⊙ b[k·NR + v·kLanes + lane], for an A panel of R rows and a B panel of
// `depth`.
// The sums run in a local array that nothing else sees, so the compiler keeps it in registers (the
// caller's `acc` is handed to the kernel's finish by reference, which would pin it to memory), and are
// copied out at the end.
template <class S, Accumulate A, int R>
inline void accumulate(const S* a, const S* b, Index depth, Vec<S> (&acc)[R][NV]) {
  Vec<S> sum[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) sum[r][v] = Vec<S>{};
  for (Index k = 0; k < depth; ++k) {
    Vec<S> bv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) bv[v] = simd::load(b + k * NR<S> + v * kLanes<S>);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const Vec<S> av = simd::broadcast_load(a + k * R + r);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) {
        if constexpr (A == Accumulate::product) sum[r][v] += av * bv[v];
        else sum[r][v] += simd::abs<S>(av - bv[v]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[r][v] = sum[r][v];
}

// The block of rows [i0, i0 + R) × columns [j0, j0 + NR) of f(A ⊙ B) into out (row-major, ld), i0 the
// start of an R-row panel, finished in registers by kernel.finish(acc, i0, j0); only the first `rows` ×
// `cols` are written.
template <class S, Accumulate A, int R, class Kernel, class Operands>
inline void distance_block(const Kernel& kernel, const Operands& op, Index i0, Index j0, S* out, Index ld, Index rows,
                           Index cols) {
  Vec<S> acc[R][NV];
  accumulate<S, A, R>(op.a.panel(i0), op.b.panel(j0), op.a.depth(), acc);
  kernel.finish(acc, i0, j0, op);
  if (rows == R && cols == NR<S>) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) simd::store(out + r * ld + v * kLanes<S>, acc[r][v]);
    return;
  }
  alignas(64) S block[R * NR<S>];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) simd::store(block + r * NR<S> + v * kLanes<S>, acc[r][v]);
  for (Index r = 0; r < rows; ++r) std::copy(block + r * NR<S>, block + r * NR<S> + cols, out + r * ld);
}

// The rectangle [i0, i0 + ni) × [j0, j0 + nj) of the kernel into out (row-major, ld): i0 a multiple of
// kSlab<S>, j0 of NR (the operands are padded to whole slabs, so edge blocks read zeros). Row panel by row
// panel, each against the columns' panels in turn.
template <class S, Accumulate A, class Kernel, class Operands>
inline void distance_rect(const Kernel& kernel, const Operands& op, Index i0, Index ni, Index j0, Index nj, S* out,
                          Index ld) {
  for (Index i = 0; i < ni;) {
    const int h = op.a.height_at(i0 + i);
    const Index rows = std::min<Index>(h, ni - i);
    for (Index j = 0; j < nj; j += NR<S>) {
      const Index cols = std::min<Index>(NR<S>, nj - j);
      S* o = out + i * ld + j;
      if (h == MR<A>) distance_block<S, A, MR<A>>(kernel, op, i0 + i, j0 + j, o, ld, rows, cols);
      else distance_block<S, A, MR_TAIL<A>>(kernel, op, i0 + i, j0 + j, o, ld, rows, cols);
    }
    i += h;
  }
}

// *a in every lane of a vector of T (a float entry widened to double when T is).
template <class T, class S>
inline Vec<T> broadcast_entry(const S* a) {
  if constexpr (std::is_same_v<T, S>) return simd::broadcast_load(a);
  else return simd::broadcast(static_cast<T>(*a));
}

// w[0 .. kLanes<T>) += v, with w in double: a float vector widened first.
template <class T>
inline void add_to(double* w, Vec<T> v) {
  if constexpr (std::is_same_v<T, double>) {
    simd::store(w, simd::load(w) + v);
  } else {
    typedef double Wide __attribute__((vector_size(2 * simd::kBytes)));
    typedef double WideU __attribute__((vector_size(2 * simd::kBytes), aligned(8)));
    *reinterpret_cast<WideU*>(w) = *reinterpret_cast<const WideU*>(w) + __builtin_convertvector(v, Wide);
  }
}

// W[r][c] += Σ_k A[r·a_rs + k·a_ks] · B[k·ldb + c] for r < R and c < NVp·kLanes<T>, the sums over k in
// registers in type T: one block of a product of a slab of kernel entries (A, by rows or, transposed, by
// columns) or of rows of a dense matrix with a block of vectors (B, in T). W is double: a float32 slab's
// products run in float32 over the slab's depth (at most 64 terms) and are added to W in double.
template <int R, int NVp, class T, class S>
inline void product_block(const S* a, Index a_rs, Index a_ks, Index depth, const T* b, Index ldb, double* w,
                          Index ldw) {
  Vec<T> acc[R][NVp];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NVp; ++v) acc[r][v] = Vec<T>{};
  for (Index k = 0; k < depth; ++k) {
    Vec<T> bv[NVp];
#pragma GCC unroll 4
    for (int v = 0; v < NVp; ++v) bv[v] = simd::load(b + k * ldb + v * kLanes<T>);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const Vec<T> av = broadcast_entry<T>(a + r * a_rs + k * a_ks);
#pragma GCC unroll 4
      for (int v = 0; v < NVp; ++v) acc[r][v] += av * bv[v];
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NVp; ++v) add_to<T>(w + r * ldw + v * kLanes<T>, acc[r][v]);
}

// Cache lines of `ahead` (the next stored slab, `bytes` long; none when null) asked for while the rows of
// this one are multiplied: before the block ending at row `until_row`, the share of `ahead` up to that
// row, so that the requests are spread over the blocks and do not queue up behind each other.
struct SlabPrefetch {
  const char* ahead;
  Index bytes, rows, fetched = 0;
  void operator()(Index until_row) {
    if (!ahead) return;
    const Index until = bytes * std::min<Index>(rows, until_row) / rows;
    for (; fetched < until; fetched += 64) __builtin_prefetch(ahead + fetched, 0, 3);
  }
};

// Rows [0, R) of product(): blocks of PV vectors of columns, then what is left, a last 3 + 1 vectors as all
// four vectors for each half of the rows, the two halves taking turns over chunks of the depth whose rows
// of B (16 KiB) the second half then reads from L1. (A block of one vector next to wider ones is bound by
// its broadcasts; as 2 + 2, each entry of A is read in two sweeps, and without the chunks B's rows twice
// from L2: at N = 16,000 on Zen 4, a dense pass took 0.178 s so at b = 32 (AVX-512), against 0.169 s in
// halves; at b = 16 in AVX2 1.07× the time of the loops it replaced without the chunks, 1.01× with them.)
// A slab's depth (at most 64) is one chunk, so the sums of a column of a kernel block run in the same order
// whatever block it falls in; a deeper product's four-vector block adds its sums to W chunk by chunk.
template <int R, class T, class S>
inline void product_rows(const S* a, Index a_rs, Index a_ks, Index depth, const T* b, Index ldb, double* w, Index ldw,
                         Index ldv) {
  static_assert(PV == 3, "what is left is split for blocks of three vectors");
  constexpr Index chunk = 16384 / (4 * simd::kBytes);
  static_assert(chunk >= kSlab<float>, "a slab is one chunk");
  Index c = 0, left = ldv / kLanes<T>;
  for (; left > PV && left != PV + 1; left -= PV, c += PV * kLanes<T>)
    product_block<R, PV>(a, a_rs, a_ks, depth, b + c, ldb, w + c, ldw);
  switch (left) {
    case 4:
      if constexpr (R % 2 == 0) {
        for (Index k0 = 0; k0 < depth; k0 += chunk) {
          const Index kd = std::min(chunk, depth - k0);
          const S* ak = a + k0 * a_ks;
          const T* bk = b + k0 * ldb + c;
          product_block<R / 2, 4>(ak, a_rs, a_ks, kd, bk, ldb, w + c, ldw);
          product_block<R / 2, 4>(ak + R / 2 * a_rs, a_rs, a_ks, kd, bk, ldb, w + R / 2 * ldw + c, ldw);
        }
      } else {
        product_block<R, 4>(a, a_rs, a_ks, depth, b + c, ldb, w + c, ldw);
      }
      break;
    case 3: product_block<R, 3>(a, a_rs, a_ks, depth, b + c, ldb, w + c, ldw); break;
    case 2: product_block<R, 2>(a, a_rs, a_ks, depth, b + c, ldb, w + c, ldw); break;
    case 1: product_block<R, 1>(a, a_rs, a_ks, depth, b + c, ldb, w + c, ldw); break;
    default: break;
  }
}

// Whether product_rows() keeps fewer than R·PV sums in registers for a block of `vectors` vectors: one or
// two vectors, or four in two blocks of half the rows.
constexpr bool narrow_blocks(Index vectors) { return vectors <= 2 || vectors == PV + 1; }

// W[rows × ldv] += A·B over all of B's ldv columns (a multiple of kLanes<T>), for any depth: a slab of kernel
// entries (kernel_block.hpp) or rows of a dense matrix (dense_operator.hpp). Blocks of PR rows; where
// product_rows() would keep fewer sums (narrow_blocks: b <= 8 or 9 .. 16 in double on AVX2) blocks of
// PR_NARROW rows instead (then PR for what is left), so that they too keep 12 sums in flight. Rows past
// the last whole block of PR (a dense matrix's last rows; a slab has none) one at a time.
template <class T, class S>
inline void product(const S* a, Index a_rs, Index a_ks, Index rows, Index depth, const T* b, Index ldb, double* w,
                    Index ldw, Index ldv, const char* ahead = nullptr, Index ahead_bytes = 0) {
  const Index whole = rows - rows % PR;
  SlabPrefetch prefetch{ahead, ahead_bytes, rows};
  Index r = 0;
  if (narrow_blocks(ldv / kLanes<T>)) {
    Index narrow = whole / PR_NARROW * PR_NARROW;
    while ((whole - narrow) % PR != 0) narrow -= PR_NARROW;
    for (; r < narrow; r += PR_NARROW) {
      prefetch(r + PR_NARROW);
      product_rows<PR_NARROW>(a + r * a_rs, a_rs, a_ks, depth, b, ldb, w + r * ldw, ldw, ldv);
    }
  }
  for (; r < whole; r += PR) {
    prefetch(r + PR_NARROW);
    product_rows<PR>(a + r * a_rs, a_rs, a_ks, depth, b, ldb, w + r * ldw, ldw, ldv);
  }
  for (; r < rows; ++r) product_rows<1>(a + r * a_rs, a_rs, a_ks, depth, b, ldb, w + r * ldw, ldw, ldv);
}

// Both products of an off-diagonal block in one sweep, each entry read once: for R rows of the block from
// `a` (row-major, leading dimension lda) and its `depth` columns,
//   wi[r] += Σ_j a[r, j] vj[j]   (the sums over j in registers, added to wi at the end) and
//   col[j] += a[r, j] vi[r]      (the mirrored sums, one per column, kept in memory: a slab's L1 buffer, or
//                                 W_J itself for a deeper block),
// over one slice of NVp vectors of the block (vi, vj, col in T; wi in double; all with leading dimension
// ldv). The columns' chains are independent, so their FMAs overlap. One broadcast of an entry feeds both
// products' FMAs. With the buffer (a slab), every sum runs in the order of the two-sweep product() (j
// ascending for wi, rows ascending for col), so both give the same numbers.
template <int R, int NVp, class T, class S>
inline void symmetric_block(const S* a, Index lda, Index depth, const T* vi, const T* vj, Index ldv, double* wi,
                            T* col) {
  Vec<T> acc[R][NVp], x[R][NVp];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NVp; ++v) {
      acc[r][v] = Vec<T>{};
      x[r][v] = simd::load(vi + r * ldv + v * kLanes<T>);
    }
  for (Index j = 0; j < depth; ++j) {
    Vec<T> bv[NVp], c[NVp];
#pragma GCC unroll 2
    for (int v = 0; v < NVp; ++v) {
      bv[v] = simd::load(vj + j * ldv + v * kLanes<T>);
      c[v] = simd::load(col + j * ldv + v * kLanes<T>);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const Vec<T> av = broadcast_entry<T>(a + r * lda + j);
#pragma GCC unroll 2
      for (int v = 0; v < NVp; ++v) {
        acc[r][v] += av * bv[v];
        c[v] += av * x[r][v];
      }
    }
#pragma GCC unroll 2
    for (int v = 0; v < NVp; ++v) simd::store(col + j * ldv + v * kLanes<T>, c[v]);
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NVp; ++v) add_to<T>(wi + r * ldv + v * kLanes<T>, acc[r][v]);
}

// Whether symmetric_product handles a slab's block of ldv columns: one or two vectors (b <= 8 in double on
// AVX2, b <= 16 on AVX-512), the memory-bound passes over a stored kernel; wider blocks take two sweeps.
template <class T>
constexpr bool symmetric_fits(Index ldv) {
  return ldv / kLanes<T> <= 2;
}

// Rows per block of symmetric_block: R·NVp sums and R·NVp rows of V_I in registers.
constexpr int SR = simd::kBytes == 64 ? 8 : 4;

// Rows [0, R) of symmetric_product: its columns in slices of up to two vectors.
template <int R, class T, class S>
inline void symmetric_rows(const S* a, Index lda, Index depth, const T* vi, const T* vj, Index ldv, double* wi,
                           T* col) {
  for (Index c = 0; c < ldv; c += 2 * kLanes<T>) {
    if (ldv - c >= 2 * kLanes<T>) symmetric_block<R, 2>(a, lda, depth, vi + c, vj + c, ldv, wi + c, col + c);
    else symmetric_block<R, 1>(a, lda, depth, vi + c, vj + c, ldv, wi + c, col + c);
  }
}

// An off-diagonal block's W_I += A·V_J and W_J += Aᵀ·V_I (A: rows × depth, row-major, leading dimension
// lda) in one sweep. A kernel slab's (depth <= kSlab, symmetric_fits(ldv)) mirrored sums go to an L1
// buffer, added to W_J once at the end, as product() adds its own; a deeper or wider block (rows of a
// dense matrix, thousands of columns; T double) adds them straight into W_J, whose rows stay in cache
// from one block of rows to the next. Rows in blocks of SR, the last ones (none in a slab) one at a time;
// columns in slices of up to two vectors. `ahead` as in product().
template <class T, class S>
inline void symmetric_product(const S* a, Index lda, Index rows, Index depth, const T* vi, const T* vj, double* wi,
                              double* wj, Index ldv, const char* ahead = nullptr, Index ahead_bytes = 0) {
  constexpr Index most = kSlab<S> * 2 * simd::kBytes / Index(sizeof(T));
  alignas(64) T buffer[most];
  T* col = buffer;
  if constexpr (std::is_same_v<T, double>) {
    if (depth > kSlab<S> || !symmetric_fits<T>(ldv)) col = wj;
  }
  if (col == buffer) std::fill(col, col + depth * ldv, T(0));
  SlabPrefetch prefetch{ahead, ahead_bytes, rows};
  const Index whole = rows - rows % SR;
  Index r = 0;
  for (; r < whole; r += SR) {
    prefetch(r + SR);
    symmetric_rows<SR>(a + r * lda, lda, depth, vi + r * ldv, vj, ldv, wi + r * ldv, col);
  }
  for (; r < rows; ++r) symmetric_rows<1>(a + r * lda, lda, depth, vi + r * ldv, vj, ldv, wi + r * ldv, col);
  if (col == buffer)
    for (Index j = 0; j < depth; ++j)
      for (Index c = 0; c < ldv; c += kLanes<T>) add_to<T>(wj + j * ldv + c, simd::load(col + j * ldv + c));
}

// kLanes<T> consecutive entries of a slab's row as a vector of T (float entries widened when T is double).
template <class T, class S>
inline Vec<T> load_entries(const S* a) {
  if constexpr (std::is_same_v<T, S>) {
    return simd::load(a);
  } else {
    typedef S Entries __attribute__((vector_size(kLanes<T> * sizeof(S)), aligned(sizeof(S))));
    return __builtin_convertvector(*reinterpret_cast<const Entries*>(a), Vec<T>);
  }
}

// The lanes of v added in lane order, in double.
template <class T>
inline double lane_sum(Vec<T> v) {
  double s = static_cast<double>(v[0]);
#pragma GCC unroll 16
  for (int l = 1; l < kLanes<T>; ++l) s += static_cast<double>(v[l]);
  return s;
}

// A slab's products with a block of one vector (ldv = 1: not padded to whole vectors; depth a multiple of G,
// as a whole slab's is):
//   wi[r] += Σ_j a[r, j] vj[j]   and, when wj is given (an off-diagonal slab), wj[j] += Σ_r a[r, j] vi[r],
// along the rows of the slab, G = C·kLanes<T> entries of a row at a time: the G entries' products with vj
// summed in the kLanes<T> lanes of one vector (lane l takes the entries j0 + l, j0 + kLanes<T> + l, …),
// whose lanes are then added to wi[r] in order; the G mirrored sums kept in C vectors over all the rows,
// added to wj once. Each entry costs half an FMA per product, where a padded block (products with ldv >= 8
// columns) costs one per padded vector. The sums' order is fixed by the slab's shape alone: deterministic,
// independent of threads, but not the order of a wider block's product(), so the last bits of a one-vector
// product may differ from the same column's in a wider block.
template <class T, class S>
inline void one_vector_product(const S* a, Index lda, Index rows, Index depth, const T* vi, const T* vj, double* wi,
                               double* wj, const char* ahead = nullptr, Index ahead_bytes = 0) {
  constexpr int C = std::min<int>(4, kSlab<S> / kLanes<T>);
  constexpr Index G = C * kLanes<T>;
  SlabPrefetch prefetch{ahead, ahead_bytes, rows};
  for (Index j0 = 0; j0 < depth; j0 += G) {
    Vec<T> x[C], col[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      x[c] = simd::load(vj + j0 + c * kLanes<T>);
      col[c] = Vec<T>{};
    }
    for (Index r = 0; r < rows; ++r) {
      if (j0 == 0) prefetch(r + 1);
      const S* ar = a + r * lda + j0;
      Vec<T> e = load_entries<T>(ar), acc = e * x[0];
      if (wj) {
        const Vec<T> xi = simd::broadcast(vi[r]);
        col[0] += e * xi;
#pragma GCC unroll 4
        for (int c = 1; c < C; ++c) {
          e = load_entries<T>(ar + c * kLanes<T>);
          acc += e * x[c];
          col[c] += e * xi;
        }
      } else {
#pragma GCC unroll 4
        for (int c = 1; c < C; ++c) acc += load_entries<T>(ar + c * kLanes<T>) * x[c];
      }
      wi[r] += lane_sum<T>(acc);
    }
    if (wj)
      for (int c = 0; c < C; ++c) add_to<T>(wj + j0 + c * kLanes<T>, col[c]);
  }
}

}  // namespace fastkpca::micro
