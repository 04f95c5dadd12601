"""Exact fits at scale, A/B against another build: KernelPCA, KernelRidge cg, a product, the Gram build.

    python bench/exact_fits.py --n 100000 --compare /path/to/previous/venv/bin/python
    python bench/exact_fits.py --n 20000 --fits pca --rounds 1

Each measurement is a fresh process (``--child``) that warms up on 300 samples (the imports a library
makes on first use stay out of the timing), builds anisotropic Gaussian data (d = 64, the
columns scaled by 1/sqrt(j+1) and normalised to mean variance 1, seed 0), then times

* ``pca``:   ``KernelPCA(n_components=10, kernel="rbf", gamma=1/d, memory_limit="1GiB",
  random_state=0).fit(X)``: exact, block Lanczos on the kernel's tiles (at N = 100,000 the limit keeps
  2.5% of them, the rest are recomputed on every pass);
* ``ridge``: ``KernelRidge(alpha=1e-3, kernel="rbf", gamma=1/d, solver="cg", tol=1e-6,
  memory_limit="1GiB", random_state=0).fit(X, y)`` with y = sin(x₀) + 0.1·noise: exact, conjugate gradients
  with the default preconditioner;
* ``product``: one product K·v (a single vector, the product conjugate gradients repeats) by
  ``kernel_operator(X, kernel="rbf", gamma=1/d, memory_limit="1GiB", block_size=1)``, the median of 3
  after a first one (which also finds the row sums): the unit of the ridge fit's time, which at
  N = 100,000 takes hundreds of them (an A/B of the whole fit takes hours on 2 cores);
* ``gram``: ``fastkpca.gram(X, kernel="rbf", gamma=1/d)``, the full N×N matrix, timed the same way.

and reports the fit's seconds, the passes or products by K (solver_info_) and the peak RSS growth. With
``--compare PYTHON`` every measurement also runs under that interpreter (a virtual environment with the
previous commit's build; run from a directory where ``import fastkpca`` finds that build), the two
alternating in order round by round; the medians and the ratio new/previous are printed. ``--threads``
sets n_jobs (default: every core); quote the CPU (printed) with the figures.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import available_cores, cpu_description  # noqa: E402


def data(n: int, d: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d)) / np.sqrt(np.arange(1, d + 1))
    return X / np.sqrt((X**2).mean())


def repeated(call) -> float:
    """The median seconds of 3 calls after a first, untimed one."""
    call()
    times = []
    for _ in range(3):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def measure(fit: str, n: int, d: int, threads: int) -> dict:
    import fastkpca

    # Warm-up on 300 samples: the imports and first calls a library makes lazily stay out of the timing.
    small = data(300, d)
    fastkpca.KernelPCA(n_components=10, kernel="rbf", gamma=1.0 / d, n_jobs=threads).fit(small)
    fastkpca.KernelRidge(alpha=1e-3, kernel="rbf", gamma=1.0 / d, solver="cg", n_jobs=threads).fit(small, small[:, 0])
    X = data(n, d)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    if fit == "pca":
        est = fastkpca.KernelPCA(n_components=10, kernel="rbf", gamma=1.0 / d, memory_limit="1GiB", random_state=0,
                                 n_jobs=threads).fit(X)
        info = est.solver_info_
        work = info.get("n_passes")
    elif fit == "product":
        op = fastkpca.kernel_operator(X, kernel="rbf", gamma=1.0 / d, memory_limit="1GiB", block_size=1,
                                      n_jobs=threads)
        v = np.random.default_rng(1).standard_normal((n, 1))
        info, work, seconds = {"storage": op.storage}, 1, repeated(lambda: op @ v)
    elif fit == "gram":
        info, work = {"storage": "full"}, 1
        seconds = repeated(lambda: fastkpca.gram(X, kernel="rbf", gamma=1.0 / d, n_jobs=threads))
    else:
        y = np.sin(X[:, 0]) + 0.1 * np.random.default_rng(1).standard_normal(n)
        est = fastkpca.KernelRidge(alpha=1e-3, kernel="rbf", gamma=1.0 / d,
                                   solver=fastkpca.CG(tol=1e-6, random_state=0),
                                   memory_limit="1GiB", n_jobs=threads).fit(X, y)
        info = est.solver_info_
        work = info.get("iterations")
    if fit in ("pca", "ridge"):
        seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"fit": fit, "n": n, "d": d, "threads": threads, "seconds": seconds, "work": work,
            "storage": info.get("storage"), "block_size": info.get("block_size"),
            "peak_rss_growth_mib": (peak - base) / 1024, "version": getattr(fastkpca, "__version__", "?")}


def child(python: str, fit: str, n: int, d: int, threads: int, cwd: str | None) -> dict:
    out = subprocess.run([python, str(Path(__file__).resolve()), "--child", fit, "--n", str(n), "--d", str(d),
                          "--threads", str(threads)], capture_output=True, text=True, cwd=cwd)
    if out.returncode:
        raise RuntimeError(out.stderr.strip()[-2000:] or f"exit {out.returncode}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--fits", default="pca,ridge", help="comma-separated: pca, ridge, product, gram")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--compare", default=None, metavar="PYTHON", help="interpreter with the previous build")
    parser.add_argument("--compare-cwd", default=None, help="working directory for the --compare runs")
    parser.add_argument("--rounds", type=int, default=None, help="alternating rounds (default 3 with --compare)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help="folder for exact_fits.json")
    args = parser.parse_args(argv)
    threads = args.threads or available_cores()
    if args.child:
        print(json.dumps(measure(args.child, args.n, args.d, threads)))
        return 0
    rounds = args.rounds or (3 if args.compare else 1)
    print(f"# Exact fits: N = {args.n}, d = {args.d}, {threads} threads, medians of {rounds} round(s)")
    print(f"# CPU: {cpu_description()}\n")
    head = "| fit | seconds | passes or products | storage | block | peak RSS growth MiB |"
    if args.compare:
        head += " previous seconds | previous passes | new / previous |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1), flush=True)
    results = []
    for fit in args.fits.split(","):
        ours, theirs = [], []
        runs = [(ours, sys.executable, None), (theirs, args.compare, args.compare_cwd)] if args.compare else \
            [(ours, sys.executable, None)]
        for r in range(rounds):
            for store, python, cwd in (runs if r % 2 == 0 else runs[::-1]):
                store.append(child(python, fit, args.n, args.d, threads, cwd))
        med = float(np.median([x["seconds"] for x in ours]))
        row = {**ours[0], "seconds": med, "rounds": [x["seconds"] for x in ours]}
        line = (f"| {fit} | {med:.1f} | {ours[0]['work']} | {ours[0]['storage']} | {ours[0]['block_size']} | "
                f"{max(x['peak_rss_growth_mib'] for x in ours):.0f} |")
        if args.compare:
            prev = float(np.median([x["seconds"] for x in theirs]))
            row.update(previous_seconds=prev, previous_rounds=[x["seconds"] for x in theirs],
                       previous_work=theirs[0]["work"], ratio=med / prev)
            line += f" {prev:.1f} | {theirs[0]['work']} | {med / prev:.2f} |"
        results.append(row)
        print(line, flush=True)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        report = {"cpu": cpu_description(), "rows": results}
        (Path(args.out) / "exact_fits.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
