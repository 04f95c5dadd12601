"""End-to-end benchmark suite: fastkpca.KernelPCA against scikit-learn's KernelPCA.

What it measures
----------------
**End to end.** For every configuration (kernel, N samples, d features, k components, dtype) of the
grid, ``KernelPCA(n_components=k, kernel=..., gamma=1/d, degree=3, coef0=1, eigen_solver=...,
random_state=seed).fit_transform(X)`` and then ``transform`` of ``--transform-samples`` (500) new
samples, for

* fastkpca (``n_jobs=--threads``), each solver of ``--fastkpca-solvers`` (``auto`` = block Lanczos
  here; ``dense``, ``arpack``, ``randomized`` are scikit-learn's solvers on fastkpca's kernel), and
* scikit-learn, each solver of ``--sklearn-solvers`` (``auto`` runs ARPACK when k < 10, else dense
  LAPACK; both libraries are run under threadpoolctl's limit of --threads BLAS threads).
  scikit-learn's KernelPCA has no laplacian kernel: for it the suite times
  ``KernelPCA(kernel="precomputed")`` on ``sklearn.metrics.pairwise.laplacian_kernel(X)`` (and
  ``laplacian_kernel(X_new, X)`` for transform), the kernel's time and memory included (that kernel
  is float64 even for float32 input).

A solver that is the same as another one in the list (``auto`` resolving to it) is run once and
reported under both names; ``dense`` (whoever runs it) is skipped above ``--max-dense-n`` samples, and a
(library, solver) that timed out or failed is skipped for the larger N of the same kernel/d/k/dtype.

Data: anisotropic Gaussian X (column j of a standard normal matrix scaled by 1/sqrt(j+1), normalised
to mean variance 1 per feature), float64 or cast to float32, the same for every library.

Every run is a fresh subprocess (``bench/_e2e_worker.py``) that warms up on 300 samples, touches and
frees 3·N²·8 bytes of memory (``--no-prefault`` skips it: on a VM whose host reclaims freed guest memory,
first touches cost 1–2 s/GB and land on whichever run comes first), resets its peak RSS, measures its RSS
(the baseline), runs fit_transform, reads the peak
``resource.getrusage(RUSAGE_SELF).ru_maxrss``, then times transform (median of 3). Reported: the
median fit_transform and transform times over ``--repeats`` runs (runs alternate between libraries and
solvers: A B C, C B A, ...), the peak RSS increase of the fit (peak − baseline, the largest over the
repeats) and its ratio to N²·8 bytes, and the accuracy against an exact reference of the same data:

* ``λ err``: max_i |λ_i − λ_i,ref| / λ_1,ref over the k eigenvalues (eigenvalues of the centered kernel);
* ``angle``: the largest principal angle (radians) between the returned eigenvectors' span and the
  reference's (scipy.linalg.subspace_angles).

The reference is computed once per (kernel, N, d) in its own subprocess, for the largest k of the grid
plus one, on the doubly centered float64 kernel (fastkpca.gram + fastkpca.double_center):
scipy.linalg.eigh(subset_by_index) for N <= ``--eigh-max-n`` (5000), else ARPACK
(scipy.sparse.linalg.eigsh, tol=0). It is cached as ``refs/*.npy`` in the output folder, so a second
run with the same --out and --seed reuses it. The float32 runs are compared with the float64 reference.
For fastkpca's Lanczos runs the table also gives the passes over K and the solver's bandwidth: bytes
read per pass (the packed kernel's, about N²/2 entries, when the fit packed it; else N²) · passes /
solve time (``solver_info_``).

**Roofline and thread scaling** (one more subprocess; skip with ``--no-roofline``), for each thread
count of ``--scaling-threads`` (default 1, 2, 4, ... up to the available cores, and that count):

* Gram build: ``fastkpca.gram(X, kernel="rbf")`` for N = ``--roofline-n`` (10000) and each d of
  ``--roofline-dims`` (64, 256), against NumPy's ``X @ X.T`` of the same shape (which NumPy computes as a
  BLAS syrk: one triangle, like fastkpca.gram), both best of 3. Flop convention: 2·N²·d for the full
  N×N matrix for both, although each computes one triangle; so ``of GEMM`` = t(GEMM) / t(gram).
  Also the entry rates N²/t.
* Solver: the block Lanczos solve of a k=10 fit (implicit centering) on the packed float64 rbf kernel
  that KernelPCA builds for it; bandwidth per pass = the packed matrix's bytes (about N²·4) /
  (solve seconds / n_passes) (best of 3), against the read bandwidth of NumPy summing the full N×N
  matrix (best of 5):
  ``A.sum()`` on one thread, and the matrix split into p row blocks summed by p threads for p threads.
* Parallel efficiency t1 / (p · tp) for both (per pass for the solver).

**Targets** (PASS / FAIL / not measured lines at the end, from this run only):

* rbf, d=64, k=10, N=20000, float64: fastkpca (auto) fit_transform >= 10× faster than scikit-learn's
  fastest solver, with eigenvalues within 1e-8 relative (max_i |Δλ_i| / λ_i) of the ARPACK tol=0
  reference; scikit-learn's randomized solver's eigenvalue error is printed beside it;
* rbf, d=64, k=10, N=10000, float64, both at defaults (eigen_solver="auto"; scikit-learn's is dense
  there): >= 25× faster;
* peak RSS increase of fastkpca's fit <= 1.1·N²·8 bytes + 200 MB (float64 input) and <= 0.6·N²·8 bytes
  + 200 MB (float32 input), worst over the runs; float32 eigenvalues within 1e-4 relative of the
  float64 reference;
* Gram build >= 60% of the GEMM roofline at d=256 and solver passes >= 70% of the read bandwidth (all
  threads); 2-thread parallel efficiency >= 85% for both.

How to run
----------
From the repository root, with fastkpca importable (installed, or ``PYTHONPATH=python``)::

    python bench/run.py --quick                     # about 1 minute on 2 cores (55 s measured)
    python bench/run.py                             # default grid, see below
    python bench/run.py --full --out results/e2e    # the whole grid of the issue
    python bench/run.py --sizes 20000 --dims 64 --ks 10 --kernels rbf --dtypes float64 --no-roofline
    python bench/run.py --list                      # print the runs a grid would make, run nothing

Grids (each option overrides its part of the grid; solvers are fastkpca's / scikit-learn's):

* ``--quick``: N 2000, 5000; d 16; k 2, 10; rbf; float64 plus one float32 run (rbf, N=5000, k=10);
  auto / auto, arpack, randomized; 1 repeat; roofline at N=4000.
* default: N 2000, 5000, 10000, 20000; d 64; k 10; rbf, poly, laplacian; float64, float32;
  auto / auto, arpack, randomized, dense; 3 repeats; roofline at N=10000.
* ``--full``: N 2000, 5000, 10000, 20000; d 16, 64; k 2, 10, 50; rbf, poly, laplacian; float64,
  float32; auto, dense, arpack, randomized / auto, arpack, randomized, dense; 3 repeats.

Expected duration: ``--quick`` about 1 minute on 2 cores (55 s measured, an AMD EPYC with 2 cores).
The default grid makes about 270 runs (each costs ~2 s of interpreter start, imports and warm-up
besides the measured work) and is dominated by scikit-learn at N=10000 (dense LAPACK, O(N³): ~45 s
per fit on 2 cores) and N=20000 (ARPACK and randomized on a 3.2 GB kernel), plus the ARPACK tol=0
references for N >= 10000: extrapolated from measurements up to N=5000, about 45–90 minutes on 2
cores and less on 16 cores. ``--full`` is roughly 8× the default (several hours on 2 cores). Lower
``--repeats``, restrict the grid, or set ``--timeout`` (per run, default 900 s) to shorten it.

Memory: one run at a time, so one N×N kernel at a time: 3.2 GB for N=20000 float64, plus
scikit-learn's extra arrays where it makes them (measured: its dense solver holds two N×N arrays, its
precomputed laplacian path two to three; ARPACK and randomized about one), so up to ~10 GB at N=20000.

Output (in ``--out``, default ``bench/results/e2e``): the markdown tables on stdout, ``results.json``
(machine, arguments, every run, aggregated rows, roofline, scaling, targets), ``refs/`` (cached
references), and PNG plots: ``time_vs_n_d{d}_{dtype}.png`` (fit_transform time vs N, log-log, one line
per library/solver, one panel per kernel and k), ``memory_vs_n.png`` (peak RSS increase of the fit vs N
with the N²·8 line and the targets), ``speedup.png`` (fastkpca auto vs scikit-learn's fastest solver
per configuration) and ``scaling.png`` (parallel efficiency vs threads).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import _common as C  # noqa: E402
from _e2e_worker import FIT_START_MARKER, RESULT_MARKER  # noqa: E402

WORKER = BENCH / "_e2e_worker.py"
KERNELS = ["rbf", "poly", "laplacian"]
DTYPES = ["float64", "float32"]
LIBS = ["fastkpca", "sklearn"]
SOLVERS = {"fastkpca": ["auto", "lanczos", "dense", "arpack", "randomized"],
           "sklearn": ["auto", "arpack", "randomized", "dense"]}

GRIDS = {
    "quick": dict(sizes=[2000, 5000], dims=[16], ks=[2, 10], kernels=["rbf"], dtypes=["float64"],
                  fastkpca_solvers=["auto"], sklearn_solvers=["auto", "arpack", "randomized"], repeats=1,
                  roofline_n=4000),
    "default": dict(sizes=[2000, 5000, 10000, 20000], dims=[64], ks=[10], kernels=KERNELS, dtypes=DTYPES,
                    fastkpca_solvers=["auto"], sklearn_solvers=["auto", "arpack", "randomized", "dense"],
                    repeats=3, roofline_n=10000),
    "full": dict(sizes=[2000, 5000, 10000, 20000], dims=[16, 64], ks=[2, 10, 50], kernels=KERNELS,
                 dtypes=DTYPES, fastkpca_solvers=["auto", "dense", "arpack", "randomized"],
                 sklearn_solvers=["auto", "arpack", "randomized", "dense"], repeats=3, roofline_n=10000),
}
MB = 1e6
# Reference files carry this tag: change it when make_data changes, so stale caches are not reused.
DATA_VERSION = "v1"


@dataclass(frozen=True)
class Config:
    kernel: str
    n: int
    d: int
    k: int
    dtype: str

    def label(self) -> str:
        return f"{self.kernel} N={self.n} d={self.d} k={self.k} {self.dtype}"


# --------------------------------------------------------------------------------------------- arguments

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small grid, < 3 minutes on 2 cores")
    size.add_argument("--full", action="store_true", help="the issue's whole grid (hours)")
    p.add_argument("--out", default=str(BENCH / "results" / "e2e"),
                   help="output folder: results.json, plots, cached references (default bench/results/e2e)")
    p.add_argument("--sizes", type=C.parse_ints, help="comma-separated N")
    p.add_argument("--dims", type=C.parse_ints, help="comma-separated d")
    p.add_argument("--ks", type=C.parse_ints, help="comma-separated k (n_components)")
    p.add_argument("--kernels", type=C.parse_list, help=f"comma-separated, from {','.join(KERNELS)}")
    p.add_argument("--dtypes", type=C.parse_list, help="comma-separated, from float64,float32")
    p.add_argument("--libs", type=C.parse_list, default=LIBS, help="comma-separated (default fastkpca,sklearn)")
    p.add_argument("--fastkpca-solvers", type=C.parse_list,
                   help=f"comma-separated, from {','.join(SOLVERS['fastkpca'])}")
    p.add_argument("--sklearn-solvers", type=C.parse_list,
                   help=f"comma-separated, from {','.join(SOLVERS['sklearn'])}")
    p.add_argument("--repeats", type=int, help="runs per (configuration, solver); medians reported")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="seconds per run (one subprocess) before it is killed (default 900)")
    p.add_argument("--max-dense-n", type=int, default=10000,
                   help="skip the dense solver (also scikit-learn's auto when it means dense) above this N")
    p.add_argument("--eigh-max-n", type=int, default=5000,
                   help="reference by scipy.linalg.eigh up to this N, ARPACK tol=0 above (default 5000)")
    p.add_argument("--threads", type=int, default=None,
                   help="threads of every end-to-end run (default: the cores available)")
    p.add_argument("--scaling-threads", type=C.parse_ints,
                   help="thread counts of the roofline/scaling runs (default 1, 2, 4, ... and all cores)")
    p.add_argument("--roofline-n", type=int, help="N of the roofline/scaling runs (default 10000; 4000 quick)")
    p.add_argument("--roofline-dims", type=C.parse_ints, default=[64, 256],
                   help="d of the Gram roofline (default 64,256)")
    p.add_argument("--no-roofline", action="store_true", help="skip the roofline and thread scaling")
    p.add_argument("--no-prefault", action="store_true",
                   help="do not touch 3·N²·8 bytes of memory before each timed fit (see _e2e_worker.prefault)")
    p.add_argument("--transform-samples", type=int, default=500, help="new samples for transform (default 500)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-plots", action="store_true", help="write no PNG files")
    p.add_argument("--list", action="store_true", help="print the planned runs and exit")
    args = p.parse_args(argv)

    grid = GRIDS["quick" if args.quick else "full" if args.full else "default"]
    # The quick grid adds one float32 run unless the dtypes are chosen explicitly.
    args.quick_float32 = args.quick and args.dtypes is None
    for key, value in grid.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    args.ks = sorted(set(args.ks))
    args.sizes = sorted(set(args.sizes))
    cores = C.available_cores()
    args.threads = args.threads or cores
    if not args.scaling_threads:
        args.scaling_threads = sorted({2**i for i in range(cores.bit_length()) if 2**i <= cores} | {cores})
    for name, allowed in (("kernels", KERNELS), ("dtypes", DTYPES), ("libs", LIBS),
                          ("fastkpca_solvers", SOLVERS["fastkpca"]), ("sklearn_solvers", SOLVERS["sklearn"])):
        bad = [x for x in getattr(args, name) if x not in allowed]
        if bad:
            raise SystemExit(f"--{name.replace('_', '-')}: unknown {', '.join(bad)}; choose from {', '.join(allowed)}")
    return args


def configs_of(args) -> list[Config]:
    """The grid in run order: N ascending first (a timed-out solver is then skipped for larger N)."""
    out = [Config(kernel, n, d, k, dtype)
           for n, kernel, d, k, dtype in itertools.product(args.sizes, args.kernels, args.dims, args.ks, args.dtypes)
           if k < n]
    if args.quick_float32:
        out.append(Config(args.kernels[0], max(args.sizes), args.dims[0], max(args.ks), "float32"))
    return out


def runners_of(args) -> list[tuple[str, str]]:
    out = []
    for lib in args.libs:
        out += [(lib, s) for s in getattr(args, f"{lib}_solvers")]
    return out


def resolve(lib: str, solver: str, n: int, k: int) -> str:
    """The solver an 'auto' will run (the libraries' own rules), to run each distinct one once."""
    if solver != "auto":
        return solver
    if lib == "fastkpca":
        return "lanczos" if n > 200 else "dense"
    return "arpack" if n > 200 and k < 10 else "dense"  # sklearn.decomposition.KernelPCA's rule


# --------------------------------------------------------------------------------------------- subprocesses

def run_worker(mode: str, spec: dict, timeout: float | None) -> tuple[str, dict | None]:
    """Run ``_e2e_worker.py mode spec`` in a fresh interpreter: (status, result). status is 'ok',
    'timeout', 'killed (signal N)' or 'error: <last line of stderr>'. On a timeout the result is
    {"fit_lower_bound_s": seconds the fit had run when it was killed} if the fit had started."""
    cmd = [sys.executable, str(WORKER), mode, json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=os.environ.copy())
    except subprocess.TimeoutExpired as exc:
        killed = time.time()
        stdout = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        starts = [float(ln[len(FIT_START_MARKER):]) for ln in stdout.splitlines() if ln.startswith(FIT_START_MARKER)]
        return "timeout", ({"fit_lower_bound_s": killed - starts[-1]} if starts else None)
    if proc.returncode < 0:
        return f"killed (signal {-proc.returncode}{', out of memory?' if proc.returncode == -9 else ''})", None
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_MARKER):
            return "ok", json.loads(line[len(RESULT_MARKER):])
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    return "error: " + (lines[-1][:200] if lines else f"exit code {proc.returncode}"), None


class References:
    """Exact eigenpairs per (kernel, N, d), computed on first use and cached as .npy in out/refs/."""

    def __init__(self, args):
        self.args = args
        self.folder = Path(args.out) / "refs"
        self.meta: dict[str, dict] = {}

    def prefix(self, kernel: str, n: int, d: int) -> str | None:
        k_need = min(max(self.args.ks) + 1, n - 1)
        stem = f"ref_{DATA_VERSION}_{kernel}_n{n}_d{d}_s{self.args.seed}_k"
        for values in sorted(self.folder.glob(stem + "*_values.npy")):
            k = int(values.name[len(stem):-len("_values.npy")])
            if k >= k_need and values.with_name(values.name.replace("_values", "_vectors")).exists():
                prefix = str(values)[:-len("_values.npy")]
                self.meta.setdefault(Path(prefix).name, {"kernel": kernel, "N": n, "d": d, "status": "cached"})
                return prefix
        self.folder.mkdir(parents=True, exist_ok=True)
        prefix = str(self.folder / f"{stem}{k_need}")
        spec = {"kernel": kernel, "n": n, "d": d, "k": k_need, "seed": self.args.seed,
                "eigh_max_n": self.args.eigh_max_n, "prefix": prefix}
        t0 = time.perf_counter()
        status, result = run_worker("reference", spec, 4 * self.args.timeout)
        wall = time.perf_counter() - t0
        self.meta[Path(prefix).name] = {"kernel": kernel, "N": n, "d": d, "status": status, "wall_s": wall,
                                        **(result or {})}
        if status != "ok":
            print(f"WARNING: reference for {kernel} N={n} d={d} failed ({status}); no accuracy for it",
                  file=sys.stderr)
            return None
        print(f"<!-- reference {kernel} N={n} d={d} k={k_need}: {result['method']}, "
              f"{result['solve_s']:.1f} s (kernel {result['kernel_s']:.1f} s) -->", flush=True)
        return prefix


# --------------------------------------------------------------------------------------------- end to end

COLUMNS = [
    ("kernel", "kernel", ""), ("N", "N", ""), ("d", "d", ""), ("k", "k", ""), ("dtype", "dtype", ""),
    ("library", "lib", ""), ("solver", "solver_label", ""), ("fit_transform s", "fit_s", ".3g"),
    ("transform ms", "transform_ms", ".3g"), ("t / t(fastkpca)", "vs_fastkpca", ".3g"),
    ("fit peak MB", "fit_peak_mb", ".0f"), ("peak / N²·8", "peak_ratio", ".2f"),
    ("λ err", "value_err", ".1e"), ("angle", "max_angle", ".1e"), ("passes", "passes", ""),
    ("solver GB/s", "solver_gbs", ".1f"), ("status", "status", ""),
]


def aggregate(cfg: Config, lib: str, solver: str, resolved: str, results: list[dict], status: str) -> dict:
    """One table row from the runs of one (configuration, solver): medians of times, worst of the rest."""
    row = {"kernel": cfg.kernel, "N": cfg.n, "d": cfg.d, "k": cfg.k, "dtype": cfg.dtype, "lib": lib,
           "solver": solver, "resolved_solver": resolved, "status": status, "repeats": len(results),
           "solver_label": solver if solver == resolved else f"{solver} ({resolved})"}
    if cfg.kernel == "laplacian" and lib == "sklearn":
        row["solver_label"] += " [precomputed]"
    if not results:
        return row
    med = lambda key: C.median([r[key] for r in results if r.get(key) is not None])  # noqa: E731
    worst = lambda key: max((r[key] for r in results if r.get(key) is not None), default=math.nan)  # noqa: E731
    row.update({
        "fit_s": med("fit_s"), "fit_times_s": [r["fit_s"] for r in results],
        "transform_s": med("transform_s"), "transform_ms": 1e3 * med("transform_s"),
        "fit_peak_bytes": worst("fit_peak_bytes"), "peak_rss": worst("peak_rss"),
        "baseline_rss": med("baseline_rss"),
        "value_err": worst("value_err"), "value_err_each": worst("value_err_each"),
        "max_angle": worst("max_angle"), "rel_gap_k": results[0].get("rel_gap_k"),
    })
    row["fit_peak_mb"] = row["fit_peak_bytes"] / MB
    row["peak_ratio"] = row["fit_peak_bytes"] / (cfg.n * cfg.n * 8)
    if lib == "fastkpca":
        row["resolved_solver"] = results[0].get("resolved_solver") or resolved
        for key in ("solve_s", "kernel_s", "center_s", "passes", "solver_gbs"):
            if any(r.get(key) is not None for r in results):
                row[key] = med(key)
        if row.get("passes") is not None:
            row["passes"] = int(round(row["passes"]))
    return row


def run_config(cfg: Config, runners, args, refs: References, failed: dict) -> tuple[list[dict], list[dict]]:
    """All runners of one configuration, alternating over the repeats. Returns (rows, raw runs)."""
    ref_prefix = refs.prefix(cfg.kernel, cfg.n, cfg.d)
    # Distinct runs: (lib, resolved solver) -> the requested names it stands for.
    distinct: dict[tuple[str, str], list[str]] = {}
    skipped: dict[tuple[str, str], str] = {}
    for lib, solver in runners:
        resolved = resolve(lib, solver, cfg.n, cfg.k)
        family = (lib, resolved, cfg.kernel, cfg.d, cfg.k, cfg.dtype)
        if resolved == "dense" and cfg.n > args.max_dense_n:
            skipped[(lib, solver)] = f"skipped (dense above N={args.max_dense_n})"
        elif family in failed:
            skipped[(lib, solver)] = f"skipped ({failed[family]})"
        else:
            distinct.setdefault((lib, resolved), []).append(solver)

    keys = list(distinct)
    results = {key: [] for key in keys}
    status = {key: "ok" for key in keys}
    lower_bound: dict[tuple[str, str], float | None] = {}
    raw = []
    for r in range(args.repeats):
        for key in (keys if r % 2 == 0 else keys[::-1]):
            if status[key] != "ok":
                continue
            lib, resolved = key
            spec = {"lib": lib, "solver": resolved, "kernel": cfg.kernel, "n": cfg.n, "d": cfg.d, "k": cfg.k,
                    "dtype": cfg.dtype, "seed": args.seed, "threads": args.threads,
                    "transform_samples": args.transform_samples, "ref_prefix": ref_prefix,
                    "prefault_bytes": 0 if args.no_prefault else 3 * cfg.n * cfg.n * 8}
            st, result = run_worker("fit", spec, args.timeout)
            raw.append({**spec, "repeat": r, "status": st, "result": result})
            if st == "ok":
                results[key].append(result)
            else:
                status[key] = st
                lower_bound[key] = (result or {}).get("fit_lower_bound_s")
                failed[(lib, resolved, cfg.kernel, cfg.d, cfg.k, cfg.dtype)] = (
                    f"{'timed out' if st == 'timeout' else 'failed'} at N={cfg.n}")

    rows = []
    for lib, solver in runners:
        if (lib, solver) in skipped:
            rows.append(aggregate(cfg, lib, solver, resolve(lib, solver, cfg.n, cfg.k), [], skipped[(lib, solver)]))
            continue
        key = (lib, resolve(lib, solver, cfg.n, cfg.k))
        st = status[key]
        if st == "timeout":
            bound = lower_bound.get(key)
            st = (f"timeout (fit > {bound:.0f} s)" if bound is not None
                  else f"timeout (> {args.timeout:g} s before the fit started)")
        if status[key] != "ok" and results[key]:
            st = f"{len(results[key])} ok, then {st}"
        row = aggregate(cfg, lib, solver, key[1], results[key], st)
        if status[key] == "timeout" and not results[key] and lower_bound.get(key) is not None:
            row["fit_s_lower_bound"] = lower_bound[key]
        if distinct[key][0] != solver:
            row["same_run_as"] = distinct[key][0]
        rows.append(row)

    # Comparisons within the configuration.
    fk = next((r for r in rows if r["lib"] == "fastkpca" and r["solver"] == "auto" and "fit_s" in r), None)
    sk = [r for r in rows if r["lib"] == "sklearn" and "fit_s" in r]
    sk_best = min(sk, key=lambda r: r["fit_s"], default=None)
    sk_bounds = [r["fit_s_lower_bound"] for r in rows if r["lib"] == "sklearn" and "fit_s_lower_bound" in r]
    for r in rows:
        if fk and "fit_s" in r:
            r["vs_fastkpca"] = r["fit_s"] / fk["fit_s"]
    if fk:
        if sk_best:
            fk["sklearn_best_solver"] = sk_best["solver_label"]
            fk["sklearn_best_s"] = sk_best["fit_s"]
            fk["speedup"] = sk_best["fit_s"] / fk["fit_s"]
        elif sk_bounds:  # every scikit-learn solver that ran timed out: a lower bound
            fk["speedup"] = min(sk_bounds) / fk["fit_s"]
            fk["speedup_is_lower_bound"] = True
            fk["sklearn_best_solver"] = "all timed out"
        sk_auto = next((r for r in sk if r["solver"] == "auto"), None)
        if sk_auto:
            fk["speedup_vs_sklearn_auto"] = sk_auto["fit_s"] / fk["fit_s"]
    return rows, raw


# --------------------------------------------------------------------------------------------- roofline

GRAM_COLUMNS = [
    ("d", "d", ""), ("threads", "threads", ""), ("gram s", "gram_s", ".3g"), ("gram GFLOP/s", "gram_gflops", ".1f"),
    ("GEMM s", "gemm_s", ".3g"), ("GEMM GFLOP/s", "gemm_gflops", ".1f"), ("of GEMM", "of_gemm", ".0%"),
    ("gram M entries/s", "gram_meps", ".0f"), ("GEMM M entries/s", "gemm_meps", ".0f"), ("par. eff.", "par_eff", ".0%"),
]
SOLVER_COLUMNS = [
    ("threads", "threads", ""), ("passes", "passes", ""), ("solve s", "solve_s", ".3g"),
    ("s / pass", "s_per_pass", ".3g"), ("GB/s", "solver_gbs", ".1f"), ("read GB/s", "read_gbs", ".1f"),
    ("of read", "of_read", ".0%"), ("block", "block_size", ""), ("product GFLOP/s", "pass_gflops", ".1f"),
    ("par. eff.", "par_eff", ".0%"),
]


def run_roofline(args) -> dict | None:
    spec = {"n": args.roofline_n, "dims": args.roofline_dims, "threads": args.scaling_threads, "repeats": 3,
            "solver_d": 64, "k": 10, "seed": args.seed}
    status, result = run_worker("roofline", spec, 4 * args.timeout)
    if status != "ok":
        print(f"\nroofline / scaling run failed: {status}")
        return None
    print(f"\n## Gram roofline: rbf, N={args.roofline_n}, float64; GEMM = NumPy X @ X.T (syrk); "
          f"GFLOP/s counted as 2·N²·d for both\n")
    print(C.markdown_table(result["gram"], GRAM_COLUMNS))
    print(f"\n## Solver passes: the lanczos solve of a KernelPCA(k=10, rbf) fit on its packed kernel, "
          f"N={args.roofline_n}, float64 ({result['packed_bytes'] / 1e9:.2f} GB read per pass); "
          f"read = NumPy sum of the full {result['matrix_bytes'] / 1e9:.2f} GB matrix "
          f"(p threads on p row blocks); A.sum() on 1 thread: {result['read_gbs_sum_1thread']:.1f} GB/s; "
          f"product GFLOP/s = 2·N²·(vectors multiplied) / solve s, to compare with the GEMM rates above\n")
    print(C.markdown_table(result["solver"], SOLVER_COLUMNS), flush=True)
    return {"spec": spec, **result}


# --------------------------------------------------------------------------------------------- targets

def evaluate_targets(rows: list[dict], roof: dict | None, args) -> C.Targets:
    targets = C.Targets()

    def row(lib, solver, **key):
        return next((r for r in rows if r["lib"] == lib and r["solver"] == solver and "fit_s" in r
                     and all(r[k] == v for k, v in key.items())), None)

    big = dict(kernel="rbf", d=64, k=10, N=20000, dtype="float64")
    fk = row("fastkpca", "auto", **big)
    name = "rbf d=64 k=10 N=20000 float64: fastkpca >= 10x faster than sklearn's fastest solver"
    if fk and "speedup" in fk:
        bound = "at least " if fk.get("speedup_is_lower_bound") else ""
        targets.check(name, f"{bound}{fk['speedup']:.1f}x ({fk['fit_s']:.2f} s vs sklearn "
                            f"{fk['sklearn_best_solver']} {fk.get('sklearn_best_s', math.nan):.2f} s)",
                      fk["speedup"] >= 10)
    else:
        targets.check(name, None, None)
    name = "rbf d=64 k=10 N=20000 float64: fastkpca eigenvalues within 1e-8 relative of ARPACK tol=0"
    if fk and fk.get("value_err_each") is not None and not math.isnan(fk["value_err_each"]):
        rnd = row("sklearn", "randomized", **big)
        extra = ""
        if rnd and rnd.get("value_err_each") is not None:
            extra = (f"; sklearn randomized: {rnd['value_err_each']:.1e} "
                     f"({rnd['value_err_each'] / max(fk['value_err_each'], 1e-300):.1e}x less accurate)")
        targets.check(name, f"max |Δλ|/λ = {fk['value_err_each']:.1e} (/λ1: {fk['value_err']:.1e}){extra}",
                      fk["value_err_each"] <= 1e-8)
    else:
        targets.check(name, None, None)

    name = "rbf d=64 k=10 N=10000 float64, both eigen_solver='auto': fastkpca >= 25x faster"
    fk = row("fastkpca", "auto", kernel="rbf", d=64, k=10, N=10000, dtype="float64")
    if fk and "speedup_vs_sklearn_auto" in fk:
        sk = row("sklearn", "auto", kernel="rbf", d=64, k=10, N=10000, dtype="float64")
        targets.check(name, f"{fk['speedup_vs_sklearn_auto']:.1f}x ({fk['fit_s']:.2f} s vs sklearn "
                            f"{sk['solver_label']} {sk['fit_s']:.2f} s)", fk["speedup_vs_sklearn_auto"] >= 25)
    else:
        targets.check(name, None, None)

    for dtype, factor in (("float64", 1.1), ("float32", 0.6)):
        name = f"fit peak RSS increase <= {factor}·N²·8 B + 200 MB, {dtype} input (fastkpca auto, worst run)"
        found = [r for r in rows if r["lib"] == "fastkpca" and r["solver"] == "auto" and r["dtype"] == dtype
                 and "fit_peak_bytes" in r]
        if not found:
            targets.check(name, None, None)
            continue
        margin = lambda r: r["fit_peak_bytes"] / (factor * r["N"] ** 2 * 8 + 200 * MB)  # noqa: E731
        w = max(found, key=margin)
        targets.check(name, f"worst {w['fit_peak_mb']:.0f} MB = {margin(w):.0%} of the limit "
                            f"({w['kernel']} N={w['N']} d={w['d']} k={w['k']}; peak/N²·8 = {w['peak_ratio']:.2f}) "
                            f"over {len(found)} configurations", margin(w) <= 1)
    name = "float32 input: eigenvalues within 1e-4 relative of the float64 reference (fastkpca auto, worst)"
    found = [r for r in rows if r["lib"] == "fastkpca" and r["solver"] == "auto" and r["dtype"] == "float32"
             and r.get("value_err_each") is not None and not math.isnan(r["value_err_each"])]
    if found:
        w = max(found, key=lambda r: r["value_err_each"])
        targets.check(name, f"worst max |Δλ|/λ = {w['value_err_each']:.1e} ({w['kernel']} N={w['N']} d={w['d']} "
                            f"k={w['k']}) over {len(found)} configurations", w["value_err_each"] <= 1e-4)
    else:
        targets.check(name, None, None)

    gram_rows = roof["gram"] if roof else []
    solver_rows = roof["solver"] if roof else []
    p_max = max(args.scaling_threads)
    g = next((r for r in gram_rows if r["d"] == 256 and r["threads"] == p_max), None)
    targets.check("Gram build >= 60% of the GEMM roofline at d=256",
                  f"{g['of_gemm']:.0%} ({g['gram_gflops']:.0f} vs {g['gemm_gflops']:.0f} GFLOP/s, N={g['N']}, "
                  f"{p_max} threads)" if g else None, g["of_gemm"] >= 0.6 if g else None)
    s = next((r for r in solver_rows if r["threads"] == p_max), None)
    targets.check("solver passes >= 70% of the measured read bandwidth",
                  f"{s['of_read']:.0%} ({s['solver_gbs']:.1f} vs {s['read_gbs']:.1f} GB/s, N={s['N']}, "
                  f"{p_max} threads)" if s else None, s["of_read"] >= 0.7 if s else None)
    for what, found in (("Gram build (d=256)", [r for r in gram_rows if r["d"] == 256 and r["threads"] == 2]),
                        ("solver pass", [r for r in solver_rows if r["threads"] == 2])):
        r = found[0] if found else None
        targets.check(f"{what}: 2-thread parallel efficiency >= 85%",
                      f"{r['par_eff']:.0%}" if r else None, r["par_eff"] >= 0.85 if r else None)
    return targets


def print_speedups(rows: list[dict]) -> None:
    fk = [r for r in rows if r["lib"] == "fastkpca" and r["solver"] == "auto" and "speedup" in r]
    if not fk:
        return
    cols = [("kernel", "kernel", ""), ("N", "N", ""), ("d", "d", ""), ("k", "k", ""), ("dtype", "dtype", ""),
            ("fastkpca s", "fit_s", ".3g"), ("sklearn fastest", "sklearn_best_solver", ""),
            ("sklearn s", "sklearn_best_s", ".3g"), ("speedup", "speedup", ".1f"),
            ("vs sklearn auto", "speedup_vs_sklearn_auto", ".1f")]
    print("\n## Speedup: fastkpca (auto) vs scikit-learn's fastest solver, fit_transform\n")
    print(C.markdown_table(fk, cols))


# --------------------------------------------------------------------------------------------- main

def main(argv=None) -> int:
    args = parse_args(argv)
    configs = configs_of(args)
    runners = runners_of(args)
    if args.list:
        for cfg in configs:
            runs = sorted({(lib, resolve(lib, s, cfg.n, cfg.k)) for lib, s in runners
                           if not (resolve(lib, s, cfg.n, cfg.k) == "dense" and cfg.n > args.max_dense_n)})
            print(f"{cfg.label()}: {args.repeats} x " + ", ".join(f"{lib} {s}" for lib, s in runs))
        print(f"{len(configs)} configurations; roofline N={args.roofline_n}, threads {args.scaling_threads}")
        return 0

    start = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    info = C.machine_info()
    C.print_machine(info)
    print(f"# end to end: {len(configs)} configurations (N {args.sizes}, d {args.dims}, k {args.ks}, "
          f"kernels {args.kernels}, dtypes {args.dtypes}{' + one float32' if args.quick_float32 else ''}); "
          f"fastkpca {args.fastkpca_solvers if 'fastkpca' in args.libs else '-'}, "
          f"sklearn {args.sklearn_solvers if 'sklearn' in args.libs else '-'}; {args.threads} threads, "
          f"{args.repeats} repeat(s) (medians), timeout {args.timeout:g} s per run, dense up to N={args.max_dense_n}")
    print("# each run in a fresh process; fit peak = ru_maxrss after fit_transform − RSS before it; "
          "λ err = max|Δλ|/λ1, angle = largest principal angle (rad), against eigh (N <= "
          f"{args.eigh_max_n}) or ARPACK tol=0 on the float64 kernel")
    if "laplacian" in args.kernels and "sklearn" in args.libs:
        print("# sklearn laplacian: KernelPCA(kernel='precomputed') on sklearn.metrics.pairwise.laplacian_kernel(X) "
              "(kernel time and memory included)")
    print()
    print(C.markdown_table([], COLUMNS), flush=True)

    refs = References(args)
    failed: dict = {}
    rows, raw = [], []
    for cfg in configs:
        new_rows, new_raw = run_config(cfg, runners, args, refs, failed)
        for r in new_rows:
            print(C.markdown_table([r], COLUMNS).splitlines()[-1], flush=True)
        rows += new_rows
        raw += new_raw
    print_speedups(rows)

    roof = None if args.no_roofline else run_roofline(args)
    targets = evaluate_targets(rows, roof, args)
    targets.print()

    plots = []
    if not args.no_plots:
        import _plots

        plots = _plots.make_all(rows, roof, out)
        print("\nplots: " + ", ".join(str(p) for p in plots))
    duration = time.perf_counter() - start
    print(f"\nsuite took {duration:.0f} s")
    C.write_json(str(out / "results.json"), {
        "benchmark": "e2e", "machine": info, "args": vars(args), "duration_s": duration, "rows": rows, "runs": raw,
        "references": refs.meta, "roofline": roof, "targets": targets.results, "plots": [str(p) for p in plots]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
