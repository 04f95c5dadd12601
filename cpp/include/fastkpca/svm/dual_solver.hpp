// The support vector machine's dual, solved to LIBSVM's stopping rule with the kernel work batched:
//
//   min ½ αᵀQα + pᵀα   s.t.  the formulation's equalities (yᵀα = Δ, or one per sign of y: formulation.hpp),
//                             0 <= α_t <= C_t,     Q_tu = y_t y_u k(x_{s(t)}, x_{s(u)}),
//
// over l variables t, each standing for a sample s(t) of the kernel (ε-SVR's 2N variables stand for N samples
// twice, with y = +1 and -1: its kernel columns are evaluated once per sample). The solver is a template over the
// equalities (OneEquality: LIBSVM's Solver; PerSignEqualities: its Solver_NU).
//
// Each outer step selects a working set B of at most q variables (the most violating: the largest
// s_t = -y_t G_t in I_up and the smallest in I_low of each group, formulation.hpp; the more recent part of the
// previous set kept), brings the kernel columns of B's samples into the column cache (those missing evaluated in one
// multithreaded pass of the fused micro-kernel, kernel_columns.hpp), solves the subproblem on B's q × q block
// by SMO with second-order pair selection, and adds the change to the gradient of every row in one product,
// G += Q[:, B]·Δα_B, over the cached columns. It stops when the maximal violating pair's gap is below tol,
// LIBSVM's rule, so the solution is LIBSVM's to within it. When the caller takes the whole problem as one
// working set (DualSettings::whole: every column in the cache), the first step is LIBSVM's own iteration on the
// whole matrix.
//
// Shrinking (LIBSVM's rule): a variable at a bound whose s lies beyond the current extremes cannot join a
// violating pair soon; when at least half the rows (kShrinkFraction) have only such variables, those rows are
// dropped — their columns are no longer evaluated nor their gradients updated, and the cached columns are
// compacted. Their gradients stay as they were at the drop; before the final check they are brought up to date
// by one product a drop with the moves of the variables since then (the kernel entries evaluated, never stored),
// and every row is back.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "fastkpca/parallel.hpp"
#include "fastkpca/svm/column_cache.hpp"
#include "fastkpca/svm/formulation.hpp"
#include "fastkpca/svm/kernel_columns.hpp"
#include "fastkpca/svm/local_smo.hpp"

namespace fastkpca::svm {

struct DualProblem {
  Index l = 0;
  const Index* sample = nullptr;    // s(t): a sample of the kernel columns
  const std::int8_t* y = nullptr;   // ±1
  const double* p = nullptr;        // the linear term
  const double* upper = nullptr;    // C_t > 0
  const double* diagonal = nullptr; // k(x_s, x_s) for every sample of the kernel columns
};

// What the caller sets, every field (no defaults here: the Python layer's DualSettings holds them, and the
// binding sets each field by name).
struct DualSettings {
  double tol;               // the stopping tolerance on the maximal violating pair's gap
  long long max_iter;       // SMO steps in all (< 0: no limit)
  bool shrinking;           // LIBSVM's shrinking
  bool whole;               // the whole problem as one working set (the cache must hold every column), else
                            // working sets of at most working_set variables
  Index working_set;        // q of a batched solve, at most (at least four are taken: both ends of both groups)
  std::size_t cache_bytes;  // the column cache's bytes
};

// How the batched solver works its outer steps (constants: no caller sets them).
// A subproblem is solved to max(tol, kLocalRatio·gap): its working set changes at the next step, so it is solved
// only a decade below the whole problem's gap (to tol once the working set is the whole remaining problem).
constexpr double kLocalRatio = 0.1;
// A subproblem takes at most kLocalSteps·|B| SMO steps.
constexpr double kLocalSteps = 20;
// Rows are dropped when at least this share of them can go (each drop prepares the rows anew and compacts the
// cache).
constexpr double kShrinkFraction = 0.5;
// The share of a working set selected anew at each outer step (the rest kept from the last).
constexpr double kFreshShare = 0.5;
// One thread's seconds a variable takes in the three sweeps of an outer step together (the extremes 3.0-3.2 ns,
// shrinking's test 2.4-2.5 ns, the selection with its lists 4.8-5.1 ns, measured at 20,000 variables): each of
// them starts the team where the three together pay for a sleeping team's start (the first wakes it, the other two
// find it awake); and an entry of the working set's block gathered from the cached columns (a read far from the
// last, mostly from memory: 4.2 ns, measured at 256 × 256 over 20,000 rows). The work by which those regions start
// the team or not (parallel.hpp).
constexpr double kSelectionSeconds = 10e-9;
constexpr double kCopySeconds = 4e-9;

struct SolveStats {
  double rho = 0, r = 0, obj = 0, gap = 0;
  long long iterations = 0;       // SMO steps (LIBSVM's #iter)
  int status = 0;                 // 0: the gap fell below tol; 1: max_iter steps were taken
  long long outer_steps = 0;
  long long columns = 0;          // kernel columns evaluated into the cache
  double column_entries = 0;      // their entries
  double update_entries = 0;      // column entries read by the gradient's updates
  double product_entries = 0;     // entries of the products (start, rebuilt gradients)
  long long reconstructions = 0;
  Index working_set = 0;          // q
  Index cache_slots = 0;          // columns the cache held at the full rows
  Index min_rows = 0;             // fewest rows during the solve
  Index rows = 0;                 // rows now
  double seconds_columns = 0, seconds_local = 0, seconds_update = 0, seconds_select = 0, seconds_rebuild = 0,
         seconds_shrink = 0, seconds_product = 0;
};

using Progress = std::function<void(const SolveStats&)>;

template <class Equalities>
class DualSolver {
 public:
  DualSolver(const KernelColumns& kernel, const DualProblem& problem, double* alpha, const DualSettings& settings,
             Interrupt& interrupt, Progress progress = {})
      : kernel_(kernel), pr_(problem), alpha_(alpha), opt_(settings), interrupt_(interrupt),
        progress_(std::move(progress)) {}

  SolveStats solve() {
    setup();
    initial_gradient();
    while (true) {
      if (interrupt_.poll()) break;
      auto t0 = Clock::now();
      const Extremes e = extremes();
      stats_.gap = e.gap();
      stats_.seconds_select += seconds_since(t0);
      if (e.gap() < opt_.tol) {
        if (n_rows() == n_ps()) break;
        rebuild_gradients();
        continue;
      }
      if (opt_.max_iter >= 0 && stats_.iterations >= opt_.max_iter) {
        stats_.status = 1;
        break;
      }
      if (opt_.shrinking && stats_.outer_steps > 0) shrink(e);
      step(e);
      ++stats_.outer_steps;
      stats_.rows = n_rows();
      if (progress_) progress_(stats_);
    }
    interrupt_.throw_if_stopped();
    if (n_rows() < n_ps()) {  // stopped by max_iter with rows dropped: the figures over every row
      rebuild_gradients();
      stats_.gap = extremes().gap();
    }
    finish();
    return stats_;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
  static constexpr double kInf = std::numeric_limits<double>::infinity();

  static constexpr int kGroups = Equalities::kGroups;

  // The extremes of s = -yG over I_up and I_low of each group (formulation.hpp).
  struct Extremes {
    double up[kGroups], low[kGroups];
    Extremes() {
      std::fill(up, up + kGroups, -kInf);
      std::fill(low, low + kGroups, kInf);
    }
    double gap() const {
      double g = up[0] - low[0];
      for (int c = 1; c < kGroups; ++c) g = std::max(g, up[c] - low[c]);
      return g;
    }
  };

  Index n_ps() const { return static_cast<Index>(ps_sample_.size()); }
  Index n_rows() const { return static_cast<Index>(rows_.size()); }
  // Variables whose rows are kept (their gradients up to date).
  Index maintained() const { return static_cast<Index>(mvars_.size()); }
  // mvars_ = the variables of the rows, in row order; called whenever the rows change.
  void collect_maintained() {
    mvars_.clear();
    for_each_row_variable([&](Index t, Index) { mvars_.push_back(t); });
  }

  template <class F>
  void for_each_row_variable(F&& f) const {
    for (Index r = 0; r < n_rows(); ++r) {
      const Index ps = rows_[static_cast<std::size_t>(r)];
      for (Index k = var_ptr_[ps]; k < var_ptr_[ps + 1]; ++k) f(vars_[static_cast<std::size_t>(k)], r);
    }
  }

  void setup() {
    const Index l = pr_.l;
    if (l <= 0) throw std::invalid_argument("the dual has no variables");
    stats_ = SolveStats{};
    G_.assign(static_cast<std::size_t>(l), 0.0);
    // The problem's samples (increasing) and each one's variables.
    std::vector<Index> order(static_cast<std::size_t>(l));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return pr_.sample[a] < pr_.sample[b]; });
    ps_of_.assign(static_cast<std::size_t>(l), -1);
    var_ptr_.assign(1, 0);
    for (Index k = 0; k < l; ++k) {
      const Index t = order[static_cast<std::size_t>(k)];
      if (ps_sample_.empty() || ps_sample_.back() != pr_.sample[t]) {
        ps_sample_.push_back(pr_.sample[t]);
        var_ptr_.push_back(var_ptr_.back());
      }
      ps_of_[static_cast<std::size_t>(t)] = n_ps() - 1;
      vars_.push_back(t);
      ++var_ptr_.back();
    }
    // q: the whole problem when the caller takes it whole (its every column cached); else no more than the cache
    // holds at the full rows, nor the variables, and at least four (both ends of both groups' violations), as far
    // as there are.
    const std::size_t floats = opt_.cache_bytes / sizeof(float);
    const Index slots = static_cast<Index>(floats / static_cast<std::size_t>(n_ps()));
    if (slots < 4)
      throw std::invalid_argument("the column cache holds fewer than four kernel columns: give it more memory");
    if (opt_.whole && slots < n_ps())
      throw std::invalid_argument("the whole problem as one working set needs every kernel column in the cache");
    q_ = opt_.whole ? l : std::min<Index>({std::max<Index>(opt_.working_set, 4), l, slots});
    stats_.working_set = q_;
    stats_.cache_slots = slots;
    cache_ = std::make_unique<ColumnCache>(n_ps(), floats);
    session_ = kernel_.session();
    rows_.resize(static_cast<std::size_t>(n_ps()));
    std::iota(rows_.begin(), rows_.end(), 0);
    row_of_ = rows_;
    set_rows();
    in_set_.assign(static_cast<std::size_t>(l), 0);
    column_of_.assign(static_cast<std::size_t>(n_ps()), nullptr);
    w_.assign(static_cast<std::size_t>(n_ps()), 0.0);
    score_.assign(static_cast<std::size_t>(l), 0.0);
    side_.assign(static_cast<std::size_t>(l), 0);
  }

  void set_rows() {
    collect_maintained();
    std::vector<Index> samples(rows_.size());
    for (std::size_t r = 0; r < rows_.size(); ++r) samples[r] = ps_sample_[static_cast<std::size_t>(rows_[r])];
    session_->set_rows(samples, interrupt_);
    cache_->reset(n_rows());
    stats_.min_rows = stats_.min_rows ? std::min(stats_.min_rows, n_rows()) : n_rows();
  }

  // For every variable t of the problem samples `targets`: G_t = b_t + y_t Σ_ps k(x_s(t), x_ps)·w_ps over the samples
  // ps with w_ps ≠ 0, by one product, where b_t is p_t, or G_t itself where `add`.
  void gradient_product(const std::vector<Index>& targets, const std::vector<double>& w, bool add) {
    std::vector<Index> cols, target_samples;
    std::vector<double> weights;
    for (Index ps = 0; ps < n_ps(); ++ps)
      if (w[static_cast<std::size_t>(ps)] != 0) {
        cols.push_back(ps_sample_[static_cast<std::size_t>(ps)]);
        weights.push_back(w[static_cast<std::size_t>(ps)]);
      }
    for (Index ps : targets) target_samples.push_back(ps_sample_[static_cast<std::size_t>(ps)]);
    std::vector<double> h(targets.size(), 0.0);
    if (!cols.empty())
      session_->product(target_samples.data(), static_cast<Index>(targets.size()), cols.data(),
                        static_cast<Index>(cols.size()), weights.data(), h.data(), interrupt_);
    stats_.product_entries += static_cast<double>(targets.size()) * static_cast<double>(cols.size());
    for (std::size_t k = 0; k < targets.size(); ++k) {
      const Index ps = targets[k];
      for (Index v = var_ptr_[ps]; v < var_ptr_[ps + 1]; ++v) {
        const Index t = vars_[static_cast<std::size_t>(v)];
        const double base = add ? G_[static_cast<std::size_t>(t)] : pr_.p[t];
        G_[static_cast<std::size_t>(t)] = base + pr_.y[t] * h[k];
      }
    }
  }

  // w_ps += Σ_{t of ps} y_t α_t: the weights of G = Qα + p by samples.
  void add_alpha_weights(std::vector<double>& w) const {
    for (Index t = 0; t < pr_.l; ++t)
      if (alpha_[t] != 0) w[static_cast<std::size_t>(ps_of_[static_cast<std::size_t>(t)])] += pr_.y[t] * alpha_[t];
  }

  // Σ_u Q_tu α_u + p_t for every variable t of the problem samples `targets`, from the nonzero α by one product.
  void gradient_from_alpha(const std::vector<Index>& targets) {
    std::vector<double> w(static_cast<std::size_t>(n_ps()), 0.0);
    add_alpha_weights(w);
    gradient_product(targets, w, false);
  }

  // G = Qα + p. When the whole problem is one working set, as LIBSVM does it: from the (float) columns, summed
  // over the nonzero α_u in order, so the iterates are LIBSVM's; otherwise by one product in float64.
  void initial_gradient() {
    for (Index t = 0; t < pr_.l; ++t) G_[static_cast<std::size_t>(t)] = pr_.p[t];
    bool any = false;
    for (Index t = 0; t < pr_.l && !any; ++t) any = alpha_[t] != 0;
    if (!any) return;
    if (q_ < pr_.l) {
      gradient_from_alpha(rows_);
      return;
    }
    std::vector<const float*> column_of(static_cast<std::size_t>(n_ps()), nullptr);
    fetch_columns(rows_, column_of);
    for (Index u = 0; u < pr_.l; ++u) {
      if (alpha_[u] == 0) continue;
      const float* col = column_of[static_cast<std::size_t>(ps_of_[static_cast<std::size_t>(u)])];
      const float yu = pr_.y[u];
      for (Index t = 0; t < pr_.l; ++t) {
        const float q = yu * static_cast<float>(pr_.y[t]) * col[ps_of_[static_cast<std::size_t>(t)]];
        G_[static_cast<std::size_t>(t)] += alpha_[u] * static_cast<double>(q);
      }
    }
  }

  // The columns of the problem samples `wanted` (increasing) into `column_of`, the missing ones evaluated in one
  // pass and pinned with the others until unpinned. Returns whether a pass ran (on the team).
  bool fetch_columns(const std::vector<Index>& wanted, std::vector<const float*>& column_of) {
    std::vector<Index> missing;
    std::vector<float*> targets;
    for (Index ps : wanted) {
      float* c = cache_->find(ps);
      if (!c) {
        c = cache_->insert(ps);
        if (!c) throw std::logic_error("the column cache cannot hold the working set");
        missing.push_back(ps_sample_[static_cast<std::size_t>(ps)]);
        targets.push_back(c);
      }
      cache_->pin(ps, true);
      column_of[static_cast<std::size_t>(ps)] = c;
    }
    if (!missing.empty()) {
      if (!every_row_in_place(missing, targets) || !session_->all_columns(targets[0], interrupt_))
        session_->columns(missing.data(), static_cast<Index>(missing.size()), targets.data(), interrupt_);
      stats_.columns += static_cast<long long>(missing.size());
      stats_.column_entries += static_cast<double>(missing.size()) * static_cast<double>(n_rows());
    }
    return !missing.empty();
  }

  // Whether the columns `missing` (samples) are every row's, in the rows' order, and their slots `targets` follow
  // one another (the whole problem's first step in a fresh cache): then they are the rows × rows kernel in one
  // block, which the session's symmetric pass fills at half the work.
  bool every_row_in_place(const std::vector<Index>& missing, const std::vector<float*>& targets) const {
    if (static_cast<Index>(missing.size()) != n_rows()) return false;
    for (std::size_t k = 0; k < missing.size(); ++k)
      if (missing[k] != ps_sample_[static_cast<std::size_t>(rows_[k])] ||
          targets[k] != targets[0] + static_cast<std::ptrdiff_t>(k) * n_rows())
        return false;
    return true;
  }

  // The gradients of the dropped rows' variables brought up to date, and every row back. A drop's rows kept the
  // gradients they had then, and since then only the variables it kept have moved: their moves (Δα since the drop)
  // bring those gradients up to date by one product a drop, G_t += y_t Σ_ps k(x_s(t), x_ps)·Δw_ps, over the samples
  // that moved. Where more samples moved than have a nonzero α, that drop's gradients are rebuilt from α instead
  // (a product's cost is its targets times its columns).
  void rebuild_gradients() {
    auto t0 = Clock::now();
    std::vector<double> from_alpha(static_cast<std::size_t>(n_ps()), 0.0);
    add_alpha_weights(from_alpha);
    const auto nonzero = std::count_if(from_alpha.begin(), from_alpha.end(), [](double v) { return v != 0; });
    std::vector<double>& w = w_;  // zero outside a step: each drop's moves, zeroed again after the last
    for (const Drop& drop : drops_) {
      std::fill(w.begin(), w.end(), 0.0);
      for (std::size_t k = 0; k < drop.kept.size(); ++k) {
        const Index t = drop.kept[k];
        const double delta = alpha_[t] - drop.alpha[k];
        if (delta != 0) w[static_cast<std::size_t>(ps_of_[static_cast<std::size_t>(t)])] += pr_.y[t] * delta;
      }
      const auto moved = std::count_if(w.begin(), w.end(), [](double v) { return v != 0; });
      if (moved <= nonzero) gradient_product(drop.samples, w, true);
      else gradient_product(drop.samples, from_alpha, false);
    }
    std::fill(w.begin(), w.end(), 0.0);
    drops_.clear();
    stats_.seconds_product += seconds_since(t0);
    rows_.resize(static_cast<std::size_t>(n_ps()));
    std::iota(rows_.begin(), rows_.end(), 0);
    row_of_ = rows_;
    set_rows();
    stats_.rows = n_rows();
    ++stats_.reconstructions;
    stats_.seconds_rebuild += seconds_since(t0);
  }

  // The extremes of s over I_up and I_low, and every maintained variable's s and sides (bit 0: in I_up, bit 1:
  // in I_low) for the shrinking test and the selection that follow. The sweep has no branch on a variable's data (its
  // sides are as good as random from one variable to the next), and reads the vectors through local pointers (a
  // store to side_, bytes, could otherwise alias every vector's data pointer, reloaded at each variable).
  Extremes extremes() {
    Extremes e;
    const Index count = maintained();
    const Index* vars = mvars_.data();
    const std::int8_t* y = pr_.y;
    const double *G = G_.data(), *alpha = alpha_, *upper = pr_.upper;
    double* score = score_.data();
    std::uint8_t* side = side_.data();
#pragma omp parallel if (team_pays(static_cast<double>(count) * kSelectionSeconds))
    {
      Extremes mine;
#pragma omp for schedule(static) nowait
      for (Index i = 0; i < count; ++i) {
        const Index t = vars[i];
        const double s = -y[t] * G[t];
        const bool up = in_up(y[t], alpha[t], upper[t]), low = in_low(y[t], alpha[t], upper[t]);
        score[t] = s;
        side[t] = static_cast<std::uint8_t>(up | (low << 1));
        const int c = Equalities::group(y[t]);
        mine.up[c] = std::max(mine.up[c], choose(up, s, -kInf));
        mine.low[c] = std::min(mine.low[c], choose(low, s, kInf));
      }
#pragma omp critical
      for (int c = 0; c < kGroups; ++c) {
        e.up[c] = std::max(e.up[c], mine.up[c]);
        e.low[c] = std::min(e.low[c], mine.low[c]);
      }
    }
    return e;
  }

  // `pick ? a : b` by a mask on the bits: GCC compiles the conditional expression to a branch, which the sweeps'
  // data leave unpredictable (keep it a mask).
  static double choose(bool pick, double a, double b) {
    std::uint64_t ua, ub;
    std::memcpy(&ua, &a, sizeof a);
    std::memcpy(&ub, &b, sizeof b);
    const std::uint64_t mask = std::uint64_t(0) - static_cast<std::uint64_t>(pick);
    const std::uint64_t bits = (ua & mask) | (ub & ~mask);
    double out;
    std::memcpy(&out, &bits, sizeof out);
    return out;
  }

  // LIBSVM's shrinking rule: a variable at a bound is in one of I_up and I_low only; it cannot join a violating
  // pair soon when its s is beyond the other set's extreme in its group (below every I_low of an I_up variable,
  // above every I_up of an I_low one). A free variable (in both) stays. From the sides and s of the last sweep
  // (extremes()).
  static bool shrinkable(std::uint8_t sides, double s, int c, const Extremes& e) {
    const bool up = sides & 1, low = sides & 2;
    return (up & !low & (s < e.low[c])) | (low & !up & (s > e.up[c]));
  }

  // Drops the rows whose every variable is shrinkable, where at least kShrinkFraction of them are; right after
  // extremes(), whose sides and s it reads.
  void shrink(const Extremes& e) {
    auto t0 = Clock::now();
    // Each row's test is its own (the team splits them where they pay for it); the kept positions then in order.
    const Index n = n_rows();
    drop_.resize(static_cast<std::size_t>(n));
    char* drop = drop_.data();
    const Index *row_samples = rows_.data(), *var_ptr = var_ptr_.data(), *vars = vars_.data();
    const std::int8_t* y = pr_.y;
    const double* score = score_.data();
    const std::uint8_t* side = side_.data();
    Index dropped = 0;
#pragma omp parallel for schedule(static) \
    reduction(+ : dropped) if (team_pays(static_cast<double>(maintained()) * kSelectionSeconds))
    for (Index r = 0; r < n; ++r) {
      const Index ps = row_samples[r];
      bool all = true;
      for (Index v = var_ptr[ps]; v < var_ptr[ps + 1]; ++v) {
        const Index t = vars[v];
        all &= shrinkable(side[t], score[t], Equalities::group(y[t]), e);
      }
      drop[r] = all;
      dropped += all;
    }
    if (static_cast<double>(dropped) < kShrinkFraction * static_cast<double>(n) || dropped < 1 || n - dropped < 2) {
      stats_.seconds_select += seconds_since(t0);
      return;
    }
    std::vector<Index> keep;  // positions in the current rows
    keep.reserve(static_cast<std::size_t>(n - dropped));
    Drop record;
    record.samples.reserve(static_cast<std::size_t>(dropped));
    for (Index r = 0; r < n; ++r)
      if (drop[r]) record.samples.push_back(rows_[static_cast<std::size_t>(r)]);
      else keep.push_back(r);
    std::vector<Index> rows(keep.size());
    for (std::size_t k = 0; k < keep.size(); ++k) rows[k] = rows_[static_cast<std::size_t>(keep[k])];
    for (Index ps : rows_) row_of_[static_cast<std::size_t>(ps)] = -1;
    rows_ = std::move(rows);
    for (std::size_t r = 0; r < rows_.size(); ++r) row_of_[static_cast<std::size_t>(rows_[r])] = static_cast<Index>(r);
    collect_maintained();
    record.kept = mvars_;
    record.alpha.resize(record.kept.size());
    for (std::size_t k = 0; k < record.kept.size(); ++k) record.alpha[k] = alpha_[record.kept[k]];
    drops_.push_back(std::move(record));
    std::vector<Index> samples(rows_.size());
    for (std::size_t r = 0; r < rows_.size(); ++r) samples[r] = ps_sample_[static_cast<std::size_t>(rows_[r])];
    session_->set_rows(samples, interrupt_);
    cache_->compact(keep);
    stats_.min_rows = std::min(stats_.min_rows, n_rows());
    // The previous working set keeps only variables whose rows stay.
    std::vector<Index> set;
    for (Index t : set_)
      if (row_of_[static_cast<std::size_t>(ps_of_[static_cast<std::size_t>(t)])] >= 0) set.push_back(t);
      else in_set_[static_cast<std::size_t>(t)] = 0;
    set_ = std::move(set);
    stats_.seconds_shrink += seconds_since(t0);
  }

  // The next working set: the more recent part of the last one, then the most violating variables, taken
  // from the top of I_up and the bottom of I_low in turn (of each group). Returns whether its sweep ran on the team.
  bool select(const Extremes& e) {
    // At least four fresh ones, so that both ends of every side's violation are in (then the subproblem's gap is
    // at least the whole problem's, and every step makes progress).
    const bool first = set_.empty();
    const Index fresh =
        first ? q_ : std::max<Index>(static_cast<Index>(kFreshShare * static_cast<double>(q_)), std::min<Index>(q_, 4));
    // Keep the most recent q - fresh of the last set.
    const Index keep = std::max<Index>(q_ - fresh, 0);
    if (static_cast<Index>(set_.size()) > keep) {
      for (std::size_t k = 0; k + keep < set_.size(); ++k) in_set_[static_cast<std::size_t>(set_[k])] = 0;
      set_.erase(set_.begin(), set_.end() - keep);
    }
    if (maintained() <= q_) {  // the whole remaining problem is the working set
      set_ = mvars_;
      std::fill(in_set_.begin(), in_set_.end(), 0);
      for (Index t : set_) in_set_[static_cast<std::size_t>(t)] = 1;
      return false;
    }
    // Candidates: up[c] violating in I_up (s above the bottom of I_low), low[c] in I_low (s below the top), each
    // kept to its `take` most violating (sorted, ties by index).
    auto* list = candidates_;
    constexpr int lists = 2 * kGroups;
    const Index take = std::min<Index>(fresh, q_ - static_cast<Index>(set_.size()));
    if (take <= 0) return false;
    const Index count = maintained();
    // Every thread's lists emptied and reserved before the region (a smaller team must not merge stale lists, and
    // no list grows past 4·take, so nothing allocates inside it).
    thread_lists_.resize(static_cast<std::size_t>(omp_get_max_threads()));
    for (auto& lists_of_thread : thread_lists_)
      for (auto& l : lists_of_thread) {
        l.clear();
        l.reserve(static_cast<std::size_t>(4 * take + 1));
      }
    const bool on_team = team_pays(static_cast<double>(count) * kSelectionSeconds);
    const Index* vars = mvars_.data();
    const std::int8_t* y = pr_.y;
    const char* in_set = in_set_.data();
    const double* score = score_.data();
    const std::uint8_t* side = side_.data();
#pragma omp parallel if (on_team)
    {
      // Each thread its share of the rows, its lists cut to their `take` best before they are merged.
      // A list that grows past 4·take is cut back to its take best, and what ranks below its worst is no longer
      // kept: the work stays linear in the rows, the memory a few working sets.
      auto& mine = thread_lists_[static_cast<std::size_t>(omp_get_thread_num())];
      std::pair<double, Index> bar[4];
      double bar_key[4];  // bar[k].first, read by the sweep's test
      for (int k = 0; k < 4; ++k) bar[k] = {kInf, std::numeric_limits<Index>::max()}, bar_key[k] = kInf;
      const auto keep = [&](int k, double key, Index t) {
        auto& v = mine[k];
        if (!(std::make_pair(key, t) < bar[k])) return;
        v.emplace_back(key, t);
        if (static_cast<Index>(v.size()) >= 4 * take) {
          std::nth_element(v.begin(), v.begin() + (take - 1), v.end());
          v.resize(static_cast<std::size_t>(take));
          bar[k] = *std::max_element(v.begin(), v.end());
          bar_key[k] = bar[k].first;
        }
      };
      const Extremes ends = e;  // a local copy: the lists' stores cannot alias it
#pragma omp for schedule(static)
      for (Index i = 0; i < count; ++i) {
        const Index t = vars[i];
        const int c = Equalities::group(y[t]);
        const double s = score[t];
        // The tests without a branch (the violating ones, and no worse than their list's worst kept), then one on
        // their outcome, rarely taken once the lists are full.
        const bool up = static_cast<bool>(side[t] & 1) & (s > ends.low[c]) & (-s <= bar_key[2 * c]);
        const bool low = static_cast<bool>(side[t] & 2) & (s < ends.up[c]) & (s <= bar_key[2 * c + 1]);
        if (!((up | low) & !in_set[t])) continue;
        if (up) keep(2 * c, -s, t);
        if (low) keep(2 * c + 1, s, t);
      }
      for (int k = 0; k < lists; ++k) {
        auto& v = mine[k];
        if (static_cast<Index>(v.size()) > take) {
          std::nth_element(v.begin(), v.begin() + take, v.end());
          v.resize(static_cast<std::size_t>(take));
        }
      }
    }
    for (int k = 0; k < lists; ++k) {
      auto& v = list[k];
      v.clear();
      for (auto& mine : thread_lists_) v.insert(v.end(), mine[k].begin(), mine[k].end());
      if (static_cast<Index>(v.size()) > take) {
        std::nth_element(v.begin(), v.begin() + take, v.end());
        v.resize(static_cast<std::size_t>(take));
      }
      std::sort(v.begin(), v.end());  // (score, index): the same order at any thread count
    }
    std::size_t next[4] = {0, 0, 0, 0};
    Index added = 0;
    for (bool more = true; more && added < take;) {
      more = false;
      for (int k = 0; k < lists && added < take; ++k) {
        auto& v = list[k];
        while (next[k] < v.size() && in_set_[static_cast<std::size_t>(v[next[k]].second)]) ++next[k];
        if (next[k] == v.size()) continue;
        const Index t = v[next[k]++].second;
        in_set_[static_cast<std::size_t>(t)] = 1;
        set_.push_back(t);
        ++added;
        more = true;
      }
    }
    return on_team;
  }

  // One outer step: select, bring the columns, solve the subproblem, update the gradient.
  void step(const Extremes& e) {
    auto t0 = Clock::now();
    const bool selected_on_team = select(e);
    const Index m = static_cast<Index>(set_.size());
    const bool whole = m == maintained();
    stats_.seconds_select += seconds_since(t0);

    // The working set's samples and their columns, the missing ones evaluated in one pass.
    t0 = Clock::now();
    std::vector<Index> set_ps;
    for (Index t : set_) set_ps.push_back(ps_of_[static_cast<std::size_t>(t)]);
    std::sort(set_ps.begin(), set_ps.end());
    set_ps.erase(std::unique(set_ps.begin(), set_ps.end()), set_ps.end());
    std::vector<const float*>& column_of = column_of_;
    // The team is awake where a region of this step has just run on it (its threads still spin: parallel.hpp).
    const bool team_awake = fetch_columns(set_ps, column_of) || selected_on_team;
    stats_.seconds_columns += seconds_since(t0);

    // The subproblem on the m × m block.
    t0 = Clock::now();
    std::vector<std::int8_t> y(static_cast<std::size_t>(m));
    std::vector<double> upper(static_cast<std::size_t>(m)), diag(static_cast<std::size_t>(m)),
        alpha(static_cast<std::size_t>(m)), grad(static_cast<std::size_t>(m));
    // Row b of the block is column b (LIBSVM's Q_b: k(x_a, x_b) for every a of the set).
    std::vector<Index> row(static_cast<std::size_t>(m));
    for (Index a = 0; a < m; ++a)
      row[static_cast<std::size_t>(a)] =
          row_of_[static_cast<std::size_t>(ps_of_[static_cast<std::size_t>(set_[static_cast<std::size_t>(a)])])];
    // Where variable b is row b and its column lies b columns after the first (one variable a sample, every row:
    // the whole problem of a classifier or a one-class model, its columns filled in one block), the cache's columns
    // are the block itself: read in place, not copied.
    const float* in_place = column_of[static_cast<std::size_t>(ps_of_[static_cast<std::size_t>(set_[0])])];
    for (Index b = 0; b < m && in_place; ++b) {
      const Index t = set_[static_cast<std::size_t>(b)];
      if (row[static_cast<std::size_t>(b)] != b || n_rows() != m ||
          column_of[static_cast<std::size_t>(ps_of_[static_cast<std::size_t>(t)])] != in_place + b * m)
        in_place = nullptr;
    }
    if (!in_place) block_.resize(static_cast<std::size_t>(m * m));
    // The block is symmetric (entry (a, b) is k(x_s(a), x_s(b)) either way), so only its lower triangle is
    // gathered from the columns, each entry a read far from the last, and then mirrored within the block, which
    // stays in cache: half the reads from memory, and the same block on any team. Both passes go by strips of
    // kStrip rows, each thread writing only its own strips' rows; strips s and S - 1 - s go to the same thread, so
    // that a static split of the pairs is even in both passes (a strip gathers more the lower it is, and mirrors
    // less). The mirror copies kStrip × kStrip tiles, so the rows it reads from other threads' strips cross
    // between cores a whole line of kStrip entries at a time.
    // The entries the loop reads from the columns (m(m + 1)/2 with the block, m where it is read in place)
    // decide the team: as an awake one where a region of this step (the columns' pass, the selection) has just run
    // on it, else as a sleeping one.
    constexpr Index kStrip = 16;
    const double gathered = static_cast<double>(m) * (in_place ? 1.0 : 0.5 * static_cast<double>(m + 1));
    const Index strips = (m + kStrip - 1) / kStrip, pairs = (strips + 1) / 2;
    float* block = block_.data();
    const auto gather_strip = [&](Index s) {
      for (Index b = s * kStrip; b < std::min(m, (s + 1) * kStrip); ++b) {
        const Index t = set_[static_cast<std::size_t>(b)];
        y[static_cast<std::size_t>(b)] = pr_.y[t];
        upper[static_cast<std::size_t>(b)] = pr_.upper[t];
        diag[static_cast<std::size_t>(b)] = pr_.diagonal[pr_.sample[t]];
        alpha[static_cast<std::size_t>(b)] = alpha_[t];
        grad[static_cast<std::size_t>(b)] = G_[static_cast<std::size_t>(t)];
        if (in_place) continue;
        const float* col = column_of[static_cast<std::size_t>(ps_of_[static_cast<std::size_t>(t)])];
        for (Index a = 0; a <= b; ++a) block[b * m + a] = col[row[static_cast<std::size_t>(a)]];
      }
    };
    // Entry (a, b) above the diagonal from (b, a), for the rows a of strip s, tile by tile across the columns.
    const auto mirror_strip = [&](Index s) {
      const Index a0 = s * kStrip, a1 = std::min(m, a0 + kStrip);
      for (Index b0 = a0; b0 < m; b0 += kStrip) {
        const Index b1 = std::min(m, b0 + kStrip);
        for (Index a = a0; a < a1; ++a)
          for (Index b = std::max(b0, a + 1); b < b1; ++b) block[a * m + b] = block[b * m + a];
      }
    };
    // Strips s and S - 1 - s to the same thread (called by the whole team: the loop is shared among it).
    const auto by_strip_pairs = [&](const auto& work) {
#pragma omp for schedule(static)
      for (Index pair = 0; pair < pairs; ++pair) {
        work(pair);
        if (strips - 1 - pair != pair) work(strips - 1 - pair);
      }
    };
    const double gather_seconds = gathered * kCopySeconds;
#pragma omp parallel if (team_awake ? awake_team_pays(gather_seconds) : team_pays(gather_seconds))
    {
      by_strip_pairs(gather_strip);
      if (!in_place) by_strip_pairs(mirror_strip);
    }
    LocalProblem local{
        m, y.data(), upper.data(), diag.data(), in_place ? in_place : block_.data(), alpha.data(), grad.data()};
    const double eps = whole ? opt_.tol : std::max(opt_.tol, kLocalRatio * e.gap());
    long long cap = whole ? -1 : std::max<long long>(1, static_cast<long long>(kLocalSteps * static_cast<double>(m)));
    if (opt_.max_iter >= 0) {
      const long long left = opt_.max_iter - stats_.iterations;
      cap = cap < 0 ? left : std::min(cap, left);
    }
    const LocalResult result = solve_local<Equalities>(local, eps, cap, interrupt_);
    stats_.iterations += result.iterations;
    stats_.seconds_local += seconds_since(t0);
    // A step that moves nothing while the whole problem's gap is above tol would repeat forever: the selection
    // always holds both ends of the largest violation, so this is a defect, reported rather than looped on.
    stalled_ = result.iterations == 0 ? stalled_ + 1 : 0;
    if (stalled_ > 2) throw std::logic_error("the SVM solver made no progress in three working sets");

    // G += Q[:, B]·Δα_B over every row, from the cached columns (one weight per sample); the whole problem's
    // gradient is the subproblem's own.
    t0 = Clock::now();
    std::vector<double>& w = w_;
    std::vector<Index> moved;
    for (Index b = 0; b < m; ++b) {
      const Index t = set_[static_cast<std::size_t>(b)];
      const double delta = alpha[static_cast<std::size_t>(b)] - alpha_[t];
      alpha_[t] = alpha[static_cast<std::size_t>(b)];
      if (whole) G_[static_cast<std::size_t>(t)] = grad[static_cast<std::size_t>(b)];
      if (delta == 0) continue;
      const Index ps = ps_of_[static_cast<std::size_t>(t)];
      if (w[static_cast<std::size_t>(ps)] == 0) moved.push_back(ps);
      w[static_cast<std::size_t>(ps)] += pr_.y[t] * delta;
    }
    if (!whole && !moved.empty()) {
      update_gradient(moved, w, column_of);
      stats_.update_entries += static_cast<double>(moved.size()) * static_cast<double>(n_rows());
    }
    for (Index ps : set_ps) {
      cache_->pin(ps, false);
      column_of[static_cast<std::size_t>(ps)] = nullptr;
    }
    for (Index ps : moved) w[static_cast<std::size_t>(ps)] = 0.0;
    stats_.seconds_update += seconds_since(t0);
  }

  void update_gradient(const std::vector<Index>& moved, const std::vector<double>& w,
                       const std::vector<const float*>& column_of) {
    const Index rows = n_rows(), k = static_cast<Index>(moved.size());
    std::vector<const float*> cols(static_cast<std::size_t>(k));
    std::vector<double> weight(static_cast<std::size_t>(k));
    for (Index c = 0; c < k; ++c) {
      cols[static_cast<std::size_t>(c)] = column_of[static_cast<std::size_t>(moved[static_cast<std::size_t>(c)])];
      weight[static_cast<std::size_t>(c)] = w[static_cast<std::size_t>(moved[static_cast<std::size_t>(c)])];
    }
    // Chunks of rows, at most kMaxChunk, and at least four to a thread once shrinking has left a few thousand rows
    // (two chunks of 2,048 and 70 rows gave one thread nearly all the work); each row's sum is over the columns in
    // their order whatever the chunk, so the gradient is the same on any team.
    constexpr Index kMaxChunk = 2048;
    const Index per_thread = (rows + 4 * omp_get_max_threads() - 1) / (4 * omp_get_max_threads());
    const Index chunk = std::clamp<Index>((per_thread + 63) / 64 * 64, 256, kMaxChunk);
#pragma omp parallel
    {
      alignas(64) double h[kMaxChunk];
#pragma omp for schedule(dynamic, 1)
      for (Index r0 = 0; r0 < rows; r0 += chunk) {
        const Index n = std::min(chunk, rows - r0);
        std::fill(h, h + n, 0.0);
        // Four columns a sweep: four read streams, and h loaded and stored a quarter as often.
        Index c = 0;
        for (; c + 4 <= k; c += 4) {
          const float* c0 = cols[static_cast<std::size_t>(c)] + r0;
          const float* c1 = cols[static_cast<std::size_t>(c + 1)] + r0;
          const float* c2 = cols[static_cast<std::size_t>(c + 2)] + r0;
          const float* c3 = cols[static_cast<std::size_t>(c + 3)] + r0;
          const double w0 = weight[static_cast<std::size_t>(c)], w1 = weight[static_cast<std::size_t>(c + 1)];
          const double w2 = weight[static_cast<std::size_t>(c + 2)], w3 = weight[static_cast<std::size_t>(c + 3)];
#pragma omp simd
          for (Index r = 0; r < n; ++r)
            h[r] += (w0 * static_cast<double>(c0[r]) + w1 * static_cast<double>(c1[r])) +
                    (w2 * static_cast<double>(c2[r]) + w3 * static_cast<double>(c3[r]));
        }
        for (; c < k; ++c) {
          const float* col = cols[static_cast<std::size_t>(c)] + r0;
          const double wc = weight[static_cast<std::size_t>(c)];
#pragma omp simd
          for (Index r = 0; r < n; ++r) h[r] += wc * static_cast<double>(col[r]);
        }
        for (Index r = 0; r < n; ++r) {
          const Index ps = rows_[static_cast<std::size_t>(r0 + r)];
          for (Index v = var_ptr_[ps]; v < var_ptr_[ps + 1]; ++v) {
            const Index t = vars_[static_cast<std::size_t>(v)];
            G_[static_cast<std::size_t>(t)] += pr_.y[t] * h[r];
          }
        }
      }
    }
  }

  // The offsets ρ and r (formulation.hpp) and the objective.
  void finish() {
    const Offsets offsets = Equalities::offsets(pr_.l, pr_.y, G_.data(), alpha_, pr_.upper);
    stats_.rho = offsets.rho;
    stats_.r = offsets.r;
    double obj = 0;
    for (Index t = 0; t < pr_.l; ++t) obj += alpha_[t] * (G_[static_cast<std::size_t>(t)] + pr_.p[t]);
    stats_.obj = obj / 2;
  }

  const KernelColumns& kernel_;
  DualProblem pr_;
  double* alpha_;
  DualSettings opt_;
  Interrupt& interrupt_;
  Progress progress_;
  SolveStats stats_;
  Index q_ = 0;
  std::vector<double> G_;
  std::vector<Index> ps_sample_, ps_of_, var_ptr_, vars_;
  std::vector<Index> rows_, row_of_;
  std::vector<Index> set_;
  std::vector<char> in_set_;
  std::vector<char> drop_;  // shrink's test of each row
  std::vector<std::pair<double, Index>> candidates_[4];
  std::vector<std::array<std::vector<std::pair<double, Index>>, 4>> thread_lists_;
  std::vector<Index> mvars_;
  std::vector<double> score_;
  std::vector<std::uint8_t> side_;
  std::vector<float> block_;
  std::vector<const float*> column_of_;  // the working set's columns (null elsewhere: reset after each step)
  std::vector<double> w_;                // the update's weight per sample (zero elsewhere: reset after each step)
  int stalled_ = 0;
  // One shrinking drop since the rows were last all back: the problem samples it dropped (their variables' gradients
  // are left as they were then), and the variables it kept with their α then (the only ones that can move until the
  // rows come back). A drop takes at least kShrinkFraction (half) of the rows, and the estimators' problems give
  // every sample as many variables (one, or two for ε- and ν-SVR), so the kept variables halve from drop to drop
  // and all the drops' kept lists together hold fewer entries than the problem has variables (plan.py's
  // VARIABLE_BYTES counts them).
  struct Drop {
    std::vector<Index> samples;
    std::vector<Index> kept;
    std::vector<double> alpha;
  };
  std::vector<Drop> drops_;
  std::unique_ptr<ColumnCache> cache_;
  std::unique_ptr<ColumnSession> session_;
};

}  // namespace fastkpca::svm
