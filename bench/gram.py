"""Benchmark: fastkpca.gram against scikit-learn's pairwise kernels.

What it measures
----------------
For every kernel, sample count N, feature count d, dtype (float64, float32) and thread count, the time
to build the full N×N kernel matrix of Gaussian data X (N×d) with

* ``fastkpca.gram(X, kernel=..., gamma=1/d, n_jobs=threads)``, and
* scikit-learn's ``rbf_kernel`` / ``laplacian_kernel`` / ``polynomial_kernel`` (degree 3, coef0 1) on
  the same X, in the same process, inside ``threadpoolctl.threadpool_limits(threads)``.

The two are timed alternately (A B, then B A, ...) with time.perf_counter, after a small warm-up, and
the medians are reported. Columns: the medians, the speedup (sklearn / fastkpca), throughput in
million kernel entries per second per core (entries counted over the full N×N, although fastkpca
computes one triangle of a symmetric result), and, on rows with more than one thread, the parallel
efficiency t(1 thread) / (threads · t(threads)). ``max |Δ|`` is the largest absolute difference between
fastkpca's matrix and scikit-learn's on the first ``--check-rows`` rows (the sanity check; measured on
every configuration, also where timing scikit-learn is skipped). Also checked: fastkpca's matrix is the
same bit for bit whatever the thread count (a warning is printed if not).

Targets (PASS / FAIL / not measured lines at the end, computed from this run):

* rbf, float64, N=20000, d=64: at least 10× faster than sklearn's rbf_kernel;
* rbf, float64, d=64 (largest N measured): at least 300 M entries/s/core, and float32 at least twice
  that (600 M entries/s/core);
* parallel efficiency with 2 threads at least 85% (rbf, d=64, largest N measured, each dtype).

How to run
----------
From the repository root, with fastkpca importable (installed, or ``PYTHONPATH=python``)::

    python bench/gram.py --quick                       # ~1 minute on 2 cores
    python bench/gram.py --out results/gram.json       # the full grid (long: N up to 20000)
    python bench/gram.py --sizes 20000 --dims 64 --kernels rbf --skip-sklearn-above 50000

The full grid holds one N=20000 float64 matrix (3.2 GB) at a time, plus scikit-learn's temporaries
(laplacian_kernel needs two: ~6.4 GB). Use ``--skip-sklearn-above 10000`` to time only fastkpca on the
largest sizes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

FULL_SIZES = [2000, 5000, 10000, 20000]
FULL_DIMS = [16, 64, 256]
FULL_KERNELS = ["rbf", "laplacian", "poly"]
QUICK_SIZES = [2000, 5000]
QUICK_DIMS = [16, 64]
QUICK_KERNELS = ["rbf", "laplacian"]
DTYPES = {"float64": np.float64, "float32": np.float32}


def sklearn_kernel(kernel: str):
    """scikit-learn's function for a fastkpca kernel name, and the keyword arguments to pass (given d)."""
    from sklearn.metrics import pairwise as P

    table = {
        "rbf": (P.rbf_kernel, lambda d: {"gamma": 1.0 / d}),
        "laplacian": (P.laplacian_kernel, lambda d: {"gamma": 1.0 / d}),
        "poly": (P.polynomial_kernel, lambda d: {"gamma": 1.0 / d, "degree": 3, "coef0": 1.0}),
        "sigmoid": (P.sigmoid_kernel, lambda d: {"gamma": 1.0 / d, "coef0": 1.0}),
        "linear": (P.linear_kernel, lambda d: {}),
        "cosine": (P.cosine_similarity, lambda d: {}),
    }
    if kernel not in table:
        raise SystemExit(f"unknown kernel {kernel!r}; choose from {', '.join(table)}")
    return table[kernel]


def fastkpca_kwargs(kernel: str, d: int) -> dict:
    kw = {"kernel": kernel}
    if kernel in ("rbf", "laplacian", "poly", "sigmoid"):
        kw["gamma"] = 1.0 / d
    if kernel == "poly":
        kw.update(degree=3, coef0=1.0)
    if kernel == "sigmoid":
        kw["coef0"] = 1.0
    return kw


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help=f"small grid: N in {QUICK_SIZES}, d in {QUICK_DIMS}, {'+'.join(QUICK_KERNELS)}, "
                        "3 repeats (~1 minute on 2 cores)")
    p.add_argument("--sizes", type=C.parse_ints, help=f"comma-separated N (default {FULL_SIZES})")
    p.add_argument("--dims", type=C.parse_ints, help=f"comma-separated d (default {FULL_DIMS})")
    p.add_argument("--kernels", type=C.parse_list,
                   help=f"comma-separated kernels (default {','.join(FULL_KERNELS)}; also sigmoid, linear, cosine)")
    p.add_argument("--dtypes", type=C.parse_list, default=list(DTYPES), help="default float64,float32")
    p.add_argument("--threads", default="1,all",
                   help="comma-separated thread counts; 'all' = the cores available (default 1,all)")
    p.add_argument("--repeats", type=int, help="timed repeats per configuration (default 5; 3 with --quick)")
    p.add_argument("--budget", type=float, default=30.0,
                   help="seconds per configuration after which repeats stop (at least 3 are done; default 30)")
    p.add_argument("--skip-sklearn-above", type=int, default=None, metavar="N",
                   help="do not time scikit-learn for N larger than this (its accuracy is still checked)")
    p.add_argument("--check-rows", type=int, default=1000,
                   help="rows compared with scikit-learn for max |Δ| (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="write the results as JSON to this file")
    args = p.parse_args(argv)
    args.sizes = args.sizes or (QUICK_SIZES if args.quick else FULL_SIZES)
    args.dims = args.dims or (QUICK_DIMS if args.quick else FULL_DIMS)
    args.kernels = args.kernels or (QUICK_KERNELS if args.quick else FULL_KERNELS)
    args.repeats = args.repeats or (3 if args.quick else 5)
    cores = C.available_cores()
    args.threads = sorted({cores if t == "all" else int(t) for t in C.parse_list(args.threads)})
    for name in args.dtypes:
        if name not in DTYPES:
            raise SystemExit(f"unknown dtype {name!r}; choose from {', '.join(DTYPES)}")
    return args


COLUMNS = [
    ("kernel", "kernel", ""), ("N", "N", ""), ("d", "d", ""), ("dtype", "dtype", ""),
    ("threads", "threads", ""), ("fastkpca s", "fastkpca_s", ".4g"), ("sklearn s", "sklearn_s", ".4g"),
    ("speedup", "speedup", ".1f"), ("fastkpca M/s/core", "fastkpca_meps_core", ".0f"),
    ("sklearn M/s/core", "sklearn_meps_core", ".0f"), ("par. eff.", "fastkpca_par_eff", ".0%"),
    ("max abs diff", "max_abs_diff", ".1e"),
]


def check_accuracy(fastkpca, X, kernel, kw, skfn, skkw, rows: int, threads: int):
    """First ``rows`` rows of fastkpca's full matrix (also a full-size warm-up) and their max |Δ| vs sklearn."""
    from threadpoolctl import threadpool_limits

    m = min(rows, X.shape[0])
    K = fastkpca.gram(X, **kw, n_jobs=threads)
    head = np.array(K[:m])
    del K
    C.free()
    with threadpool_limits(threads):
        ref = np.asarray(skfn(X[:m], X, **skkw))
    diff = np.abs(head.astype(np.float64) - ref.astype(np.float64))
    scale = float(np.max(np.abs(ref))) or 1.0
    return head, float(diff.max()), float(diff.max()) / scale


def bench_config(fastkpca, X, kernel, dtype_name, threads_list, args, print_row) -> list[dict]:
    """All thread counts of one (kernel, N, d, dtype): returns one row per thread count."""
    from threadpoolctl import threadpool_limits

    n, d = X.shape
    kw = fastkpca_kwargs(kernel, d)
    skfn, skkw_of = sklearn_kernel(kernel)
    skkw = skkw_of(d)
    time_sklearn = args.skip_sklearn_above is None or n <= args.skip_sklearn_above
    head, max_diff, rel_diff = check_accuracy(fastkpca, X, kernel, kw, skfn, skkw, args.check_rows,
                                              max(threads_list))
    out = []
    t1 = {}
    for threads in threads_list:
        def run_fastkpca(threads=threads):
            return fastkpca.gram(X, **kw, n_jobs=threads)

        def run_sklearn(threads=threads):
            with threadpool_limits(threads):
                return skfn(X, **skkw)

        fns = {"fastkpca": run_fastkpca}
        if time_sklearn:
            fns["sklearn"] = run_sklearn
        same_bits = []

        def keep(name, result):
            if name == "fastkpca":
                same_bits.append(bool(np.array_equal(result[: head.shape[0]], head)))

        # warm-up: small problems (the full-size fastkpca call in check_accuracy already ran)
        small = X[: min(256, n)]
        fastkpca.gram(small, **kw, n_jobs=threads)
        if time_sklearn:
            with threadpool_limits(threads):
                skfn(small, **skkw)
        times = C.alternate(fns, args.repeats, min_repeats=min(3, args.repeats), budget_s=args.budget,
                            keep=keep)
        tf = C.median(times["fastkpca"])
        ts = C.median(times["sklearn"]) if time_sklearn else float("nan")
        if threads == 1:
            t1 = {"fastkpca": tf, "sklearn": ts}
        row = {
            "kernel": kernel, "N": n, "d": d, "dtype": dtype_name, "threads": threads,
            "fastkpca_s": tf, "sklearn_s": ts, "speedup": ts / tf,
            "fastkpca_meps_core": n * n / tf / threads / 1e6,
            "sklearn_meps_core": n * n / ts / threads / 1e6,
            "fastkpca_par_eff": (t1["fastkpca"] / (threads * tf)) if threads > 1 and t1 else float("nan"),
            "sklearn_par_eff": (t1["sklearn"] / (threads * ts)) if threads > 1 and t1 else float("nan"),
            "max_abs_diff": max_diff, "max_rel_diff": rel_diff, "check_rows": head.shape[0],
            "bitwise_same_as_reference_rows": all(same_bits),
            "fastkpca_times_s": times["fastkpca"], "sklearn_times_s": times.get("sklearn", []),
        }
        if not all(same_bits):
            print(f"WARNING: fastkpca.gram({kernel}, N={n}, d={d}, {dtype_name}) with {threads} threads differs "
                  f"bitwise from the matrix computed with {max(threads_list)} threads", file=sys.stderr)
        print_row(row)
        out.append(row)
        C.free()
    return out


def evaluate_targets(rows: list[dict], threads_list: list[int]) -> C.Targets:
    targets = C.Targets()

    def find(**key):
        return [r for r in rows if all(r[k] == v for k, v in key.items())]

    # 1. rbf float64 N=20000 d=64: >= 10x sklearn
    name = "rbf float64 N=20000 d=64: >= 10x faster than sklearn rbf_kernel"
    found = [r for r in find(kernel="rbf", dtype="float64", N=20000, d=64) if np.isfinite(r["speedup"])]
    if not found:
        targets.check(name, None, None)
    for r in found:
        targets.check(f"{name} ({r['threads']} thread{'s' * (r['threads'] > 1)})",
                      f"{r['speedup']:.1f}x", r["speedup"] >= 10)

    # 2. throughput, rbf d=64, largest N measured
    rbf64 = find(kernel="rbf", d=64)
    n_max = max((r["N"] for r in rbf64), default=None)
    for dtype, goal in (("float64", 300.0), ("float32", 600.0)):
        name = f"rbf {dtype} d=64: >= {goal:.0f} M entries/s/core"
        found = find(kernel="rbf", d=64, dtype=dtype, N=n_max) if n_max else []
        if not found:
            targets.check(name, None, None)
        for r in found:
            extra = ""
            if dtype == "float32":
                twin = find(kernel="rbf", d=64, dtype="float64", N=n_max, threads=r["threads"])
                if twin:
                    extra = f" ({r['fastkpca_meps_core'] / twin[0]['fastkpca_meps_core']:.2f}x float64)"
            targets.check(f"{name} (N={n_max}, {r['threads']} thread{'s' * (r['threads'] > 1)})",
                          f"{r['fastkpca_meps_core']:.0f} M/s/core{extra}", r["fastkpca_meps_core"] >= goal)

    # 3. 2-thread parallel efficiency
    for dtype in ("float64", "float32"):
        name = f"rbf {dtype} d=64: 2-thread parallel efficiency >= 85%"
        found = [r for r in find(kernel="rbf", d=64, dtype=dtype, N=n_max, threads=2)
                 if np.isfinite(r["fastkpca_par_eff"])] if n_max else []
        if not found:
            targets.check(name, None, None)
        for r in found:
            targets.check(f"{name} (N={n_max})", f"{r['fastkpca_par_eff']:.0%}", r["fastkpca_par_eff"] >= 0.85)
    return targets


def main(argv=None) -> int:
    args = parse_args(argv)
    import fastkpca

    info = C.machine_info()
    C.print_machine(info)
    print(f"# sizes {args.sizes}, dims {args.dims}, kernels {args.kernels}, dtypes {args.dtypes}, "
          f"threads {args.threads}, up to {args.repeats} repeats (medians), max abs diff on the first "
          f"{args.check_rows} rows\n")
    print(C.markdown_table([], COLUMNS))
    sys.stdout.flush()

    def print_row(row):
        print(C.markdown_table([row], COLUMNS).splitlines()[-1], flush=True)

    rng = np.random.default_rng(args.seed)
    rows = []
    for n in args.sizes:
        for d in args.dims:
            X64 = rng.standard_normal((n, d))
            for dtype_name in args.dtypes:
                X = np.ascontiguousarray(X64, dtype=DTYPES[dtype_name])
                for kernel in args.kernels:
                    rows += bench_config(fastkpca, X, kernel, dtype_name, args.threads, args, print_row)
                del X
            del X64
            C.free()

    worst = [r for r in rows if r["threads"] == 2 and np.isfinite(r["fastkpca_par_eff"])]
    if worst:
        w = min(worst, key=lambda r: r["fastkpca_par_eff"])
        print(f"\nlowest 2-thread efficiency of fastkpca: {w['fastkpca_par_eff']:.0%} "
              f"({w['kernel']}, N={w['N']}, d={w['d']}, {w['dtype']})")
    targets = evaluate_targets(rows, args.threads)
    targets.print()
    C.write_json(args.out, {"benchmark": "gram", "machine": info, "args": vars(args), "rows": rows,
                            "targets": targets.results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
