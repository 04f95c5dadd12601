"""How each path of the library scales with its threads, beside the cost model's prediction and the anchors.

    python bench/scaling.py                              # 1, 2, 4, ... threads up to the cores here
    python bench/scaling.py --threads 1,2 --repeats 3 --json scaling.json
    python bench/scaling.py --paths ridge --ridge-n 17000 --no-anchors   # where OpenBLAS's threaded dpotrf crashes
    python bench/scaling.py --plot scaling.png

Every (thread count, repeat) runs in a fresh process with ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and
``MKL_NUM_THREADS`` set to the count, so the core's OpenMP team and NumPy's BLAS both get that many threads (the
cost model, fastkpca/solvers/choice.py, reads the same counts); the process first runs each path once on a quarter
of its samples (the imports, the rate the cost model measures, the code's first calls). The thread counts alternate
within each repeat; the figures are medians. The paths:

* ``gram64`` / ``gram32``: the fused kernel pass, the core's ``gram_into`` of a 4,000 × 4,000 cross block of 64
  features (rbf) into a preallocated output, in float64 and float32, the best of three passes; predicted:
  ``choice.kernel_pass_seconds``
  (float32: half of it, twice the lanes);
* ``kpca``: ``KernelPCA(8 components, rbf).fit`` of 5,000 × 16 samples; predicted: its choice's picked candidate;
* ``gpr_exact``: ``GaussianProcessRegressor(RBF() + WhiteKernel(), optimizer=None, solver="cholesky").fit`` of
  5,000 × 8 samples (the kernel and its one factor: no gradient, so no inverse); predicted: its choice's cholesky
  candidate, priced for a fit without an optimiser;
* ``gpr_cg``: the same with ``solver="cg"`` (one evaluation of the likelihood without its gradient, and the final
  solve); predicted: its choice's cg candidate (``choice.gp_cg_fit_seconds``, at the model's iteration counts);
* ``svc``: ``SVC(rbf).fit`` of 20,000 × 20 samples of ``make_classification``, with its stages (kernel columns,
  working-set selection, local SMO, gradient update) from ``solver_info_``; predicted: the choice's sweeps plus the
  columns it evaluated and the entries of its gradients' products at the kernel pass's rate;
* ``ridge``: ``KernelRidge(rbf, solver="cholesky").fit`` of ``--ridge-n`` (5,000) × 16 samples; predicted: its
  choice's cholesky candidate;
* ``kmeans``: ``KernelKMeans(8 clusters, n_init=1).fit`` of 20,000 × 16 samples; predicted: the model's seconds
  (``choice.operator_passes_seconds``) for the Lloyd passes the fit took: the choice itself assumes
  ``KMEANS_PASSES``, a guess that the data decide.

Anchors at the same thread counts (unless ``--no-anchors``): scikit-learn's KernelPCA, GaussianProcessRegressor, SVC
and KernelRidge on the same data, and scikit-learn-intelex's SVC where it is installed. For each path the script
prints the speedup over the smallest count (one thread unless ``--threads`` leaves it out: then the efficiency and
the serial share are relative to that count), the parallel efficiency (speedup / threads), the serial share that
Amdahl's law gives at each count (s = (p / S - 1) / (p - 1)) and the speedup that share predicts at 16 and 64 cores
(1 / (s + (1 - s) / P)). A child that dies (scikit-learn's KernelRidge crashes in OpenBLAS's threaded ``dpotrf``
from about 16,000 samples) is reported and its figures left out. ``--json FILE`` writes one record per (path,
threads): ``path``, ``threads``, ``seconds``, ``predicted_seconds`` (and the stages, the repeats). Beside the
seconds the table gives the minor page faults and the system seconds of the timed call (``getrusage``; the kernel
pass's include its three passes and the first, which touches the output): where fresh memory is dear (a virtual
machine's page faults), they show how much of a path's time is spent getting it. Quote the CPU (printed) with the
figures.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import available_cores, cpu_description, fmt, markdown_table, write_json  # noqa: E402

PATHS = ("gram64", "gram32", "kpca", "gpr_exact", "gpr_cg", "svc", "ridge", "kmeans")
SVC_STAGES = ("columns", "select", "local", "update")


# ------------------------------------------------------------------------------------- one process, one count

def _data(path: str, ridge_n: int):
    import numpy as np

    rng = np.random.default_rng(0)
    if path in ("gram64", "gram32"):
        return rng.standard_normal((4000, 64)), None
    if path == "kpca":
        return rng.standard_normal((5000, 16)), None
    if path in ("gpr_exact", "gpr_cg"):
        X = rng.standard_normal((5000, 8))
        return X, np.sin(X[:, 0]) + 0.1 * rng.standard_normal(5000)
    if path == "svc":
        from sklearn.datasets import make_classification

        return make_classification(20_000, 20, random_state=0)
    if path == "ridge":
        X = rng.standard_normal((ridge_n, 16))
        return X, np.sin(X[:, 0])
    if path == "kmeans":
        centres = 3 * rng.standard_normal((8, 16))
        return centres[rng.integers(0, 8, 20_000)] + rng.standard_normal((20_000, 16)), None
    raise ValueError(path)


def _picked_seconds(info: dict) -> float:
    record = info["choice"]
    return float(record["candidates"][record["picked"]]["seconds"])


def _fastkpca(path: str, X, y) -> tuple[float, float, dict]:
    """(seconds, predicted seconds, extra figures) of one fastkpca call of ``path``."""
    import time

    import numpy as np

    import fastkpca
    from fastkpca.solvers import choice

    extra: dict = {}
    start = time.perf_counter()
    if path in ("gram64", "gram32"):
        from fastkpca import _native

        data = X.astype(np.float32) if path == "gram32" else X
        other, out = data.copy(), np.empty((X.shape[0], X.shape[0]), dtype=data.dtype)
        call = lambda: _native.core.gram_into(data, other, "rbf", 1.0 / X.shape[1], 3.0, 1.0, out, 0)  # noqa: E731
        call()  # the output's pages touched
        seconds = math.inf
        for _ in range(3):  # the best of three: a single pass of 30 ms took 1.5 times as long in half the runs here
            start = time.perf_counter()
            call()
            seconds = min(seconds, time.perf_counter() - start)
        predicted = choice.kernel_pass_seconds(X.shape[0], X.shape[0], X.shape[1], 0) / (2 if path == "gram32" else 1)
        return seconds, predicted, extra
    if path == "kpca":
        model = fastkpca.KernelPCA(n_components=8, kernel="rbf").fit(X)
        seconds = time.perf_counter() - start
        return seconds, _picked_seconds(model.solver_info_), {"solver": model.solver_info_["solver"]}
    if path in ("gpr_exact", "gpr_cg"):
        from sklearn.gaussian_process.kernels import RBF, WhiteKernel

        solver = "cholesky" if path == "gpr_exact" else "cg"
        model = fastkpca.GaussianProcessRegressor(RBF() + WhiteKernel(0.01), optimizer=None, solver=solver,
                                                  random_state=0).fit(X, y)
        seconds = time.perf_counter() - start
        info = model.solver_info_
        return seconds, float(info["choice"]["candidates"][solver]["seconds"]), {}
    if path == "svc":
        model = fastkpca.SVC().fit(X, y)
        seconds = time.perf_counter() - start
        pair = model.solver_info_["pairs"][0]
        extra = {"stages": {stage: float(pair["seconds"][stage]) for stage in SVC_STAGES}}
        columns = float(pair["column_entries"]) / X.shape[0]  # columns evaluated (each of n entries)
        products = float(pair["product_entries"]) / X.shape[0]  # the rebuilt gradients' kernel entries, as columns
        predicted = (_picked_seconds(pair) + choice.kernel_pass_seconds(X.shape[0], columns, X.shape[1], 0)
                     + choice.kernel_pass_seconds(X.shape[0], products, X.shape[1], 1))
        return seconds, predicted, extra
    if path == "ridge":
        model = fastkpca.KernelRidge(kernel="rbf", alpha=0.1, solver="cholesky").fit(X, y)
        seconds = time.perf_counter() - start
        return seconds, float(model.solver_info_["choice"]["candidates"]["cholesky"]["seconds"]), {}
    if path == "kmeans":
        model = fastkpca.KernelKMeans(n_clusters=8, n_init=1, random_state=0).fit(X)
        seconds = time.perf_counter() - start
        info = model.solver_info_
        n, d = X.shape  # the model's seconds for the passes this fit took (the choice assumes KMEANS_PASSES)
        predicted = choice.operator_passes_seconds(n, d, 8, info["passes"], info["memory_limit"])
        return seconds, predicted, {"passes": info["passes"], "choice_seconds": info["choice"]["candidates"]["exact"][
            "seconds"]}
    raise ValueError(path)


def _anchor(path: str, X, y) -> tuple[str, float] | None:
    """(library, seconds) of the anchor's call of ``path``, or None where it has none."""
    import time

    if path == "kpca":
        from sklearn.decomposition import KernelPCA

        start = time.perf_counter()
        KernelPCA(n_components=8, kernel="rbf").fit(X)
    elif path == "gpr_exact":
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import RBF, WhiteKernel

        start = time.perf_counter()
        GaussianProcessRegressor(RBF() + WhiteKernel(0.01), optimizer=None).fit(X, y)
    elif path == "svc":
        from sklearn.svm import SVC

        start = time.perf_counter()
        SVC().fit(X, y)
    elif path == "ridge":
        from sklearn.kernel_ridge import KernelRidge

        start = time.perf_counter()
        KernelRidge(kernel="rbf", alpha=0.1).fit(X, y)
    else:
        return None
    return "sklearn", time.perf_counter() - start


def _intelex(path: str, X, y) -> float | None:
    import time

    if path != "svc":
        return None
    try:
        import daal4py
        from sklearnex.svm import SVC
    except ImportError:
        return None
    # oneDAL runs on its own (TBB) threads, which OMP_NUM_THREADS does not set
    daal4py.daalinit(int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1)))
    SVC().fit(X[: X.shape[0] // 4], y[: X.shape[0] // 4])  # its first call's costs, as for the others
    start = time.perf_counter()
    SVC().fit(X, y)
    return time.perf_counter() - start


def child(paths: list[str], anchors: bool, ridge_n: int) -> None:
    """Runs each path once (after a small call of it that loads everything) and prints one JSON line per path."""
    import resource

    from fastkpca import _native

    for path in paths:
        X, y = _data(path, ridge_n)
        quarter = X.shape[0] // 4
        _fastkpca(path, X[:quarter], None if y is None else y[:quarter])
        before = resource.getrusage(resource.RUSAGE_SELF)
        seconds, predicted, extra = _fastkpca(path, X, y)
        after = resource.getrusage(resource.RUSAGE_SELF)
        record = {"path": path, "threads": int(_native.core.omp_max_threads()), "seconds": seconds,
                  "predicted_seconds": predicted, "page_faults": after.ru_minflt - before.ru_minflt,
                  "system_seconds": after.ru_stime - before.ru_stime, **extra}
        if anchors:
            anchor = _anchor(path, X, y)
            if anchor is not None:
                record["sklearn_seconds"] = anchor[1]
            intelex = _intelex(path, X, y)
            if intelex is not None:
                record["sklearnex_seconds"] = intelex
        print(json.dumps(record), flush=True)


# ------------------------------------------------------------------------------------------------ the parent

def _counts(spec: str | None) -> list[int]:
    if spec:
        return sorted({int(t) for t in spec.split(",")})
    cores, counts, t = available_cores(), [], 1
    while t < cores:
        counts.append(t)
        t *= 2
    return counts + [cores]


def _run(threads: int, paths: list[str], anchors: bool, ridge_n: int) -> list[dict]:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads))
    command = [sys.executable, __file__, "--child", ",".join(paths), "--ridge-n", str(ridge_n)]
    if not anchors:
        command.append("--no-anchors")
    out = subprocess.run(command, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        print(f"# {threads} threads: the child exited {out.returncode} (its paths after the last printed are left "
              f"out):\n# {out.stderr.strip()[-500:]}", file=sys.stderr)
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def _amdahl(speedup: float, threads: int) -> float:
    """The serial share s with 1 / (s + (1 - s) / threads) = speedup (0 where the speedup is perfect or better)."""
    if threads <= 1:
        return float("nan")
    return min(max((threads / speedup - 1) / (threads - 1), 0.0), 1.0)


def _predicted_speedup(serial: float, cores: int) -> float:
    return 1.0 / (serial + (1 - serial) / cores)


def summarise(records: list[dict], counts: list[int]) -> list[dict]:
    """One row per (path, threads): the medians over the repeats, the speedups and Amdahl's figures."""
    rows = []
    by_path: dict[str, dict[int, list[dict]]] = {}
    for r in records:
        by_path.setdefault(r["path"], {}).setdefault(r["requested_threads"], []).append(r)
    for path, per_count in by_path.items():
        base = {key: statistics.median(x[key] for x in per_count[min(per_count)] if key in x)
                for key in ("seconds", "sklearn_seconds", "sklearnex_seconds") if key in per_count[min(per_count)][0]}
        for threads in counts:
            runs = per_count.get(threads)
            if not runs:
                continue
            row: dict = {"path": path, "threads": threads, "repeats": [x["seconds"] for x in runs]}
            for key in ("seconds", "predicted_seconds", "page_faults", "system_seconds", "sklearn_seconds",
                        "sklearnex_seconds"):
                if key in runs[0]:
                    row[key] = statistics.median(x[key] for x in runs)
            if "stages" in runs[0]:
                row["stages"] = {s: statistics.median(x["stages"][s] for x in runs) for s in SVC_STAGES}
            row["measured_over_predicted"] = row["seconds"] / row["predicted_seconds"]
            row["speedup"] = base["seconds"] / row["seconds"]
            row["efficiency"] = row["speedup"] / threads
            for key, name in (("sklearn_seconds", "sklearn_speedup"), ("sklearnex_seconds", "sklearnex_speedup")):
                if key in row and key in base:
                    row[name] = base[key] / row[key]
            if threads > 1:
                row["serial_share"] = _amdahl(row["speedup"], threads)
                row["speedup_16"] = _predicted_speedup(row["serial_share"], 16)
                row["speedup_64"] = _predicted_speedup(row["serial_share"], 64)
            rows.append(row)
    return rows


def _plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name in dict.fromkeys(r["path"] for r in rows):
        mine = [r for r in rows if r["path"] == name]
        ax.plot([r["threads"] for r in mine], [r["speedup"] for r in mine], marker="o", label=name)
    top = max(r["threads"] for r in rows)
    ax.plot([1, top], [1, top], color="grey", linestyle=":", label="linear")
    ax.set_xlabel("threads")
    ax.set_ylabel("speedup over one thread")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paths", default=",".join(PATHS), help="comma-separated, of " + ", ".join(PATHS))
    parser.add_argument("--threads", default=None, help="thread counts (default 1, 2, 4, ... up to the cores)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ridge-n", type=int, default=5000, help="samples of the ridge path (default 5,000)")
    parser.add_argument("--no-anchors", action="store_true", help="skip scikit-learn and scikit-learn-intelex")
    parser.add_argument("--json", default=None, help="write one record per (path, threads) to this file")
    parser.add_argument("--plot", default=None, help="draw the speedups to this image (matplotlib)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    paths = [p for p in args.paths.split(",") if p]
    unknown = set(paths) - set(PATHS)
    if unknown:
        parser.error(f"unknown paths: {', '.join(sorted(unknown))}")
    if args.child is not None:
        child(args.child.split(","), not args.no_anchors, args.ridge_n)
        return 0

    counts = _counts(args.threads)
    print(f"# {cpu_description()}")
    print(f"# threads {counts}, {args.repeats} repeats, counts alternated; medians")
    records = []
    for repeat in range(args.repeats):
        for threads in (counts if repeat % 2 == 0 else counts[::-1]):
            for record in _run(threads, paths, not args.no_anchors, args.ridge_n):
                record["requested_threads"] = threads
                records.append(record)
    rows = summarise(records, counts)
    print()
    print(markdown_table(rows, [("path", "path", ""), ("threads", "threads", ""), ("seconds", "seconds", ".3g"),
                                ("predicted", "predicted_seconds", ".3g"),
                                ("measured / predicted", "measured_over_predicted", ".2f"),
                                ("page faults", "page_faults", ".3g"), ("system s", "system_seconds", ".2g"),
                                ("speedup", "speedup", ".2f"), ("efficiency", "efficiency", ".2f"),
                                ("serial share", "serial_share", ".2f"), ("at 16 cores", "speedup_16", ".1f"),
                                ("at 64 cores", "speedup_64", ".1f"), ("sklearn s", "sklearn_seconds", ".3g"),
                                ("sklearn speedup", "sklearn_speedup", ".2f"),
                                ("sklearnex speedup", "sklearnex_speedup", ".2f")]))
    stages = [dict(threads=r["threads"], **{s: fmt(r["stages"][s], ".3g") for s in SVC_STAGES})
              for r in rows if "stages" in r]
    if stages:
        print("\nSVC's stages (seconds):\n")
        print(markdown_table(stages, [("threads", "threads", "")] + [(s, s, "") for s in SVC_STAGES]))
        one, top = stages[0], stages[-1]
        if top["threads"] > 1:
            print("speedups: " + ", ".join(
                f"{s} {float(one[s]) / max(float(top[s]), 1e-12):.2f}" for s in SVC_STAGES))
    write_json(args.json, {"cpu": cpu_description(), "threads": counts, "repeats": args.repeats,
                           "records": [{k: r[k] for k in r} for r in rows]})
    if args.plot:
        _plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
