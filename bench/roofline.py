"""The kernel pass against the machine's limits, in one process: the FMA peak, NumPy's GEMM and the pass.

    python bench/roofline.py                     # N = 20,000, d = 64, b = 24, float64 and float32
    python bench/roofline.py --quick             # N = 6,000
    python bench/roofline.py --isa v3 --out results
    python bench/roofline.py --compare /path/to/previous/venv/bin/python   # A/B, alternating, medians

For each dtype and each ISA module the CPU runs (FASTKPCA_ISA levels; --isa picks some), on --threads
threads (default all):

* **FMA peak**: the module's own loop of independent fused multiply-adds on its vectors
  (``_core.fma_rate``: 2 flops per lane and FMA), the most this module can do per second;
* **GEMM**: NumPy's ``A @ B`` (OpenBLAS DGEMM / SGEMM) of two 4000 × 4000 matrices on the same threads
  (threadpoolctl), best of 3: the practical peak;
* **pass**: one product of the matrix-free rbf kernel operator (γ = 1/d) of N samples with a block of b
  vectors, best of 5 after a warm-up: the N(N+1)/2 entries of one triangle, each evaluated (a GEMM of
  depth d and an exp) and used for two products, counted as 2d + 4b flops per entry (the convention of
  the issue: N²/2 entries), with NumPy's BLAS on one thread (its idle threads spin after the GEMM). A
  float32 kernel is timed in both arithmetics of its products (operators/arithmetic.py): float64, what
  every product but the eigensolver's uses, and float32, what the eigensolver takes at tol >= 1e-6.

With --compare, every measurement also runs under another interpreter (a virtual environment with the
previous commit's build), the two alternating in order round by round; the medians and the speed-up are
reported. Each measurement runs in a fresh process.

Prints the pass's rate in GFLOP/s and its fraction of both limits, the pass's seconds and entries per
second; --out writes roofline.json. Quote it with the CPU it ran on (printed: lscpu's model name and
whether it has AVX-512).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_description  # noqa: E402


def best(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(isa: str, dtype: str, products: str, n: int, d: int, b: int, threads: int) -> dict:
    os.environ["FASTKPCA_ISA"] = isa
    from threadpoolctl import threadpool_limits

    import fastkpca
    from fastkpca import _native

    core = _native.load(isa)
    _native.core = core
    fma = core.fma_rate(threads, 1.0, dtype) if hasattr(core, "fma_rate") else float("nan")
    rng = np.random.default_rng(0)
    A = rng.standard_normal((4000, 4000)).astype(dtype)
    B = rng.standard_normal((4000, 4000)).astype(dtype)
    with threadpool_limits(threads, user_api="blas"):
        A @ B
        gemm = 2 * 4000**3 / best(functools.partial(np.matmul, A, B), 3)
    del A, B
    X = rng.standard_normal((n, d)).astype(dtype)
    op = fastkpca.kernel_operator(X, kernel="rbf", gamma=1.0 / d, storage="matrix_free", n_jobs=threads)
    native = getattr(op, "native", None) or op._native_operator  # (the name before the layers, for A/B runs)
    V = np.asfortranarray(rng.standard_normal((n, b)))
    try:
        native.matmat(V, threads, products)  # the row sums come with the first pass
        def run():
            return native.matmat(V, threads, products)
    except TypeError:  # a build before the choice of arithmetic: float32 entries always multiply in float64
        products = "float64"
        def run():
            return native.matmat(V, threads)
        run()
    # OpenBLAS's threads spin for a while after the GEMM and would take cores from the pass.
    with threadpool_limits(1, user_api="blas"):
        seconds = best(run, 5)
    entries = n * n / 2
    rate = entries * (2 * d + 4 * b) / seconds
    return {"isa": isa, "dtype": dtype, "products": products, "threads": threads, "n": n, "d": d, "b": b,
            "fma_gflops": fma / 1e9, "gemm_gflops": gemm / 1e9, "pass_seconds": seconds, "pass_gflops": rate / 1e9,
            "entries_per_second": n * n / 2 / seconds, "of_fma": rate / fma, "of_gemm": rate / gemm}


def child(python: str, isa: str, dtype: str, products: str, args, n: int, threads: int) -> dict:
    import subprocess

    out = subprocess.run([python, __file__, "--child", isa, dtype, products, "--n", str(n), "--d", str(args.d),
                          "--b", str(args.b), "--threads", str(threads)], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="N = 6,000")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--b", type=int, default=24)
    parser.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")
    parser.add_argument("--isa", default=None, help="comma-separated ISA levels (default: every one this CPU runs)")
    parser.add_argument("--dtypes", default="float64,float32")
    parser.add_argument("--compare", default=None, metavar="PYTHON",
                        help="an interpreter with another build of fastkpca (the previous commit's): each "
                             "measurement is also run there, alternating, and the speed-up reported")
    parser.add_argument("--rounds", type=int, default=None,
                        help="alternating rounds; medians are reported (default 3 with --compare, else 1)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help="folder for roofline.json")
    args = parser.parse_args(argv)
    n = args.n or (6000 if args.quick else 20000)
    threads = args.threads or len(os.sched_getaffinity(0))
    if args.child:  # one (isa, dtype, products) in a fresh process: the ISA module is chosen at import
        print(json.dumps(measure(*args.child, n, args.d, args.b, threads)))
        return 0
    from fastkpca import _native

    isas = (args.isa.split(",") if args.isa
            else [lv for lv in _native.runnable_levels() if lv != "baseline"] or ["baseline"])
    rounds = args.rounds or (3 if args.compare else 1)
    cases = [(isa, dtype, products) for isa in isas for dtype in args.dtypes.split(",")
             for products in (("float64", "float32") if dtype == "float32" else ("float64",))]
    print(f"# Roofline of the kernel pass: N = {n}, d = {args.d}, b = {args.b}, rbf, {threads} threads, "
          f"medians of {rounds} round(s)" + (f", A/B against {args.compare}" if args.compare else ""))
    print(f"# CPU: {cpu_description()}\n")
    head = ("| ISA | dtype | products | FMA peak GFLOP/s | GEMM GFLOP/s | pass s | pass GFLOP/s | of FMA peak "
            "| of GEMM |")
    if args.compare:
        head += " previous pass s | speed-up |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    rows = []
    for isa, dtype, products in cases:
        ours, theirs = [], []
        try:
            for r in range(rounds):  # alternate which build goes first
                pair = [(ours, sys.executable), (theirs, args.compare)] if args.compare else [(ours, sys.executable)]
                for store, python in (pair if r % 2 == 0 else pair[::-1]):
                    store.append(child(python, isa, dtype, products, args, n, threads))
        except RuntimeError as e:
            print(f"| {isa} | {dtype} | {products} | failed: {e} |")
            continue
        def med(runs, key):
            return float(np.median([x[key] for x in runs]))

        row = {key: med(ours, key) for key in ("fma_gflops", "gemm_gflops", "pass_seconds", "pass_gflops",
                                                 "entries_per_second")}
        row.update(isa=isa, dtype=dtype, products=products, threads=threads, n=n, d=args.d, b=args.b,
                   rounds=[x["pass_seconds"] for x in ours])
        row["of_fma"] = row["pass_gflops"] / row["fma_gflops"]
        row["of_gemm"] = row["pass_gflops"] / row["gemm_gflops"]
        line = (f"| {isa} | {dtype} | {products} | {row['fma_gflops']:.1f} | {row['gemm_gflops']:.1f} | "
                f"{row['pass_seconds']:.3f} | {row['pass_gflops']:.1f} | {row['of_fma']:.0%} | {row['of_gemm']:.0%} |")
        if args.compare:
            row["previous_pass_seconds"] = med(theirs, "pass_seconds")
            row["previous_rounds"] = [x["pass_seconds"] for x in theirs]
            row["previous_products"] = theirs[0]["products"]
            row["speedup"] = row["previous_pass_seconds"] / row["pass_seconds"]
            line += f" {row['previous_pass_seconds']:.3f} | {row['speedup']:.2f}× |"
        rows.append(row)
        print(line, flush=True)
    by = {(r["isa"], r["dtype"], r["products"]): r for r in rows}
    for isa in isas:
        f64 = by.get((isa, "float64", "float64"))
        for products in ("float32", "float64"):
            f32 = by.get((isa, "float32", products))
            if f64 and f32:
                print(f"\n{isa}: float32 pass ({products} products) / float64 pass, in rate: "
                      f"{f32['pass_gflops'] / f64['pass_gflops']:.2f}")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "roofline.json").write_text(json.dumps({"cpu": cpu_description(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
