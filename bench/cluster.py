"""The Dask issue's targets: the overhead of distributing an exact kernel PCA fit, what a distributed pass
moves and costs, and a cost model of a pass checked against measured 1- and 2-worker runs.

    python bench/cluster.py --quick              # N = 12,000, a couple of minutes
    python bench/cluster.py --out results        # the issue's N = 50,000 (about 15 minutes on 2 cores)

Every fit runs in a fresh child process (the cluster, when there is one, is started inside it, before the
clock starts). Prints markdown tables and PASS/FAIL lines; --out writes cluster.json.

Target (issue "Beyond one machine"), d = 64, rbf with gamma = 1/d, k = 10, exact (lanczos, tol 1e-10):
  overhead   KernelPCA.fit of a dask array on a LocalCluster of 2 worker processes × 1 thread, nothing kept
             (every pass recomputes the kernel, as matrix-free does) <= 1.25 × the single-process
             matrix-free fit on 2 threads, alternating runs, medians. Reported per pass: bytes moved (to and
             from the driver, and between workers from their transfer logs) and the scheduler overhead (a
             pass's wall time less its kernel work divided among the worker threads).
  model      The cost model of a pass (cost_model below), its constants measured here: the time per kernel
             entry of one task on one core (a microbenchmark of the native block product over d and b, at
             the panels' size) and the scheduler's cost per task (passes of a problem too small to compute
             anything). Its predictions are checked against the measured pass times of 1- and 2-worker
             fits, and it predicts passes at N = 1,000,000 and 10,000,000 on 16 and 64 workers of 16 cores.
"""

from __future__ import annotations

import argparse
import heapq
import statistics
import sys
import time
from pathlib import Path

from _common import print_verdicts, run_child, serve_child, write_json

HERE = Path(__file__).resolve().parent
D, K, SEED = 64, 10, 0


# ------------------------------------------------------------------------------------------ the model

def cost_model(n, d, b, workers, cores, bandwidth, *, entry_seconds, task_seconds, panels=None, panel_rows=None):
    """Seconds of one distributed pass (the Dask engine's, python/fastkpca/engines/dask.py) and its parts.

    - compute: the P(P−1)/2 cross pairs of R² kernel entries and P diagonal pairs of R²/2 (R rows per
      panel) run on the workers × cores task slots, one core per task, largest first (the engine's task
      priorities): the makespan of that list schedule, in units of R²·t_entry(d, b) (t_entry =
      entry_seconds(d, b), seconds per entry on one core, kernel and product included). With many pairs
      per slot this tends to N²/2·t_entry / slots; with few, the last wave is part empty.
    - moving: the driver sends V (N·b·8 bytes) and receives K·V (the same) through its link; a pair task
      fetches the panels it does not hold (X_I or X_J: R·d·8, V_I and V_J: 2·R·b·8) and its two results
      go to the sums (2·R·b·8): with W workers a share (W−1)/W of that crosses the network, spread over
      the W workers' links: (N·b·16 + pairs·R·(d + 4b)·8·(W−1)/W / W) / bandwidth.
    - scheduling: the scheduler handles the pairs and P sums one by one: (pairs + 2P)·task_seconds.
    The three are added (no overlap assumed).
    """
    from fastkpca.engines import dask as _dask

    if panel_rows is None:
        panel_rows = _dask.block_rows(n)
    P = panels if panels is not None else -(-n // panel_rows)
    R = n / P
    pairs = P * (P + 1) // 2
    slots = workers * cores
    finish = [0.0] * min(slots, pairs)  # a heap of the slots' finishing times, in units of R² entries
    for cost in [1.0] * (pairs - P) + [0.5] * P:  # largest first
        heapq.heappush(finish, heapq.heappop(finish) + cost)
    waves = max(finish)
    compute = waves * R * R * entry_seconds(d, b)
    remote = (workers - 1) / workers
    moving = (n * b * 16 + pairs * R * (d + 4 * b) * 8 * remote / workers) / bandwidth
    scheduling = (pairs + 2 * P) * task_seconds
    return {"seconds": compute + moving + scheduling, "compute": compute, "moving": moving,
            "scheduling": scheduling, "panels": P, "pairs": pairs, "waves": waves,
            "ideal_compute": n * n / 2 * entry_seconds(d, b) / slots}


def fit_entry_model(samples):
    """t_entry(d, b) = c0 + c1·d + c2·ldv (ldv = b rounded up to 8) by least squares over the
    microbenchmark's (d, b, seconds per entry)."""
    import numpy as np

    A = np.array([[1.0, s["d"], -(-s["b"] // 8) * 8] for s in samples])
    y = np.array([s["entry_seconds"] for s in samples])
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    return [float(c) for c in coef]


# ---------------------------------------------------------------------------------------- children

def _data(n):
    from _e2e_worker import make_data

    return make_data(n, D, SEED)[0]


def child_rate(spec):
    """Seconds per kernel entry of one cross-block task on one thread (the native block product, both
    directions), for d in spec["ds"] and b in spec["bs"]: the median of 3 runs."""
    import numpy as np

    from fastkpca import _native

    rows = spec["rows"]
    out = []
    for d in spec["ds"]:
        rng = np.random.default_rng(d)
        a, c = rng.standard_normal((rows, d)), rng.standard_normal((rows, d))
        for b in spec["bs"]:
            va, vb = rng.standard_normal((rows, b)), rng.standard_normal((rows, b))
            times = []
            for _ in range(3):
                t = time.perf_counter()
                _native.core.kernel_block_product(a, c, "rbf", 1.0 / d, 3.0, 1.0, None, va, vb, 1, 1)
                times.append(time.perf_counter() - t)
            out.append({"d": d, "b": b, "entry_seconds": statistics.median(times) / rows**2})
    return {"samples": out}


def child_single(spec):
    """The single-process matrix-free fit (the memory limit leaves no room for a kept tile)."""
    from fastkpca import KernelPCA
    from fastkpca.operators.storage import fixed_bytes
    from fastkpca.solvers.krylov import lanczos

    X = _data(spec["n"])
    n = X.shape[0]
    b = lanczos.default_block_size(K, n, compute_bound=True)
    limit = fixed_bytes(n, D, 8) + lanczos.solver_bytes(K, b, n) + 4096
    est = KernelPCA(n_components=K, kernel="rbf", eigen_solver="lanczos", memory_limit=limit, n_jobs=spec["threads"],
                    random_state=0)
    t = time.perf_counter()
    est.fit(X)
    seconds = time.perf_counter() - t
    info = est.solver_info_
    return {"seconds": seconds, "storage": info["storage"], "passes": info["n_passes"],
            "block_size": info["block_size"], "seconds_per_pass": info["seconds_per_pass"],
            "eigenvalues": est.eigenvalues_.tolist()}


def _transfer_totals(client):
    def totals(dask_worker):
        return sum(e["total"] for e in dask_worker.transfer_incoming_log)

    return sum(client.run(totals).values())


def child_dask(spec):
    """KernelPCA.fit of a dask array on a LocalCluster of spec["workers"] processes × 1 thread; the cluster
    is up before the clock starts, the data goes from this process to the workers inside the fit."""
    import dask.array as da
    import distributed

    from fastkpca import KernelPCA
    from fastkpca.engines import dask as _dask

    X = _data(spec["n"])
    n = X.shape[0]
    with distributed.LocalCluster(n_workers=spec["workers"], threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        Xd = da.from_array(X, chunks=(_dask.block_rows(n), D))
        before = _transfer_totals(client)
        est = KernelPCA(n_components=K, kernel="rbf", memory_limit=spec.get("worker_bytes", 1), random_state=0)
        t = time.perf_counter()
        est.fit(Xd)
        seconds = time.perf_counter() - t
        moved = _transfer_totals(client) - before
    info = est.solver_info_
    passes = info["distributed_passes"]
    threads = info["worker_threads"]
    walls, tasks = info["pass_seconds"], info["task_seconds"]
    overhead = [w - t / threads for w, t in zip(walls, tasks)]
    return {"seconds": seconds, "storage": info["storage"], "passes": info["n_passes"],
            "block_size": info["block_size"], "distributed_passes": passes, "panels": info["row_blocks"],
            "panel_rows": info["block_rows"],
            "pair_tasks": info["pair_tasks"], "pass_seconds": statistics.median(walls),
            "task_seconds_per_pass": statistics.median(tasks),
            "scheduler_overhead_per_pass": statistics.median(overhead),
            "driver_bytes_per_pass": info["driver_bytes_per_pass"], "worker_bytes_per_pass": moved / max(passes, 1),
            "eigenvalues": est.eigenvalues_.tolist()}


def child_overhead(spec):
    """The scheduler's cost per task: passes (b = 24) over a problem of spec["panels"] panels of 256 rows
    and 1 feature, whose kernel work is negligible; the pass's wall time less its task time, per task."""
    import dask.array as da
    import distributed
    import numpy as np

    from fastkpca.engines import dask as _dask
    from fastkpca.kernels import NativeKernel

    P = spec["panels"]
    n = 256 * P
    X = np.random.default_rng(0).standard_normal((n, 1))
    _dask.TARGET_BLOCK_ROWS = 256
    with distributed.LocalCluster(n_workers=spec["workers"], threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        samples = _dask.DaskSamples(_dask.DaskEngine(), client, da.from_array(X, chunks=(256, 1)))
        kernel = NativeKernel("rbf", 1.0, 3.0, 1.0, 1)
        op = _dask.DistributedKernel(samples, kernel, samples.plan(kernel, block_size=24, memory_limit=1))
        V = np.random.default_rng(1).standard_normal((n, 24))
        for _ in range(3):  # warm up
            op.matmat(V)
        op.passes.clear()
        for _ in range(spec["repeats"]):
            op.matmat(V)
        tasks = len(op.pairs) + 2 * P  # pairs, sums, and the tasks carrying V's panels
        per_pass = statistics.median(p["seconds"] - p["task_seconds"] / spec["workers"] for p in op.passes)
    return {"panels": P, "tasks_per_pass": tasks, "overhead_per_pass": per_pass, "task_seconds": per_pass / tasks}


CHILDREN = {"rate": child_rate, "single": child_single, "dask": child_dask, "overhead": child_overhead}


# ------------------------------------------------------------------------------------------ driver

def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="N = 12,000 instead of 50,000")
    ap.add_argument("--repeats", type=int, default=2, help="alternating runs of the two timed fits")
    ap.add_argument("--out", help="folder for cluster.json")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return serve_child(CHILDREN, args.child)
    sys.path.insert(0, str(HERE.parent / "python"))
    from fastkpca.engines import dask as _dask

    n = 12_000 if args.quick else 50_000
    script = str(Path(__file__).resolve())
    print(f"# Dask engine, N = {n}, d = {D}, rbf, k = {K}\n")
    # The tasks' own size: per-call costs weigh more on smaller blocks (8.1 ns per entry at 2,048 rows, 7.1 at
    # 6,400, d = 64, b = 24, on this VM).
    rate = run_child(script, "rate", {"rows": _dask.block_rows(n), "ds": [16, 64, 256], "bs": [8, 24, 40]})
    coef = fit_entry_model(rate["samples"])

    def entry_seconds(d, b):
        return coef[0] + coef[1] * d + coef[2] * (-(-b // 8) * 8)

    P = -(-n // _dask.block_rows(n))
    overhead = run_child(script, "overhead", {"panels": P, "workers": 2, "repeats": 10})
    print(f"scheduler: {overhead['overhead_per_pass'] * 1e3:.1f} ms per pass of {overhead['tasks_per_pass']} tasks, "
          f"{overhead['task_seconds'] * 1e3:.2f} ms per task")
    runs = {"single": [], "dask2": []}
    for r in range(args.repeats):
        order = ("single", "dask2") if r % 2 == 0 else ("dask2", "single")
        for name in order:
            res = run_child(script, "single", {"n": n, "threads": 2}) if name == "single" else \
                run_child(script, "dask", {"n": n, "workers": 2})
            if "failed" in res:
                print(f"{name} failed: {res['failed']}")
                return 1
            runs[name].append(res)
            print(f"{name}: {res['seconds']:.1f} s, {res['passes']} passes ({res['storage']})", flush=True)
    one = run_child(script, "dask", {"n": n, "workers": 1})
    if "failed" in one:
        print(f"1-worker run failed: {one['failed']}")
        return 1
    single = statistics.median(r["seconds"] for r in runs["single"])
    dask2 = statistics.median(r["seconds"] for r in runs["dask2"])
    ratio = dask2 / single
    d2 = runs["dask2"][-1]
    rows = [("single process, matrix-free, 2 threads", single, runs["single"][-1]["passes"],
             runs["single"][-1]["seconds_per_pass"]),
            ("LocalCluster 2 workers × 1 thread", dask2, d2["passes"], d2["pass_seconds"]),
            ("LocalCluster 1 worker × 1 thread", one["seconds"], one["passes"], one["pass_seconds"])]
    table = ["| fit | seconds (median) | passes | seconds per pass |", "|---|---|---|---|"]
    table += [f"| {name} | {s:.1f} | {p} | {sp:.2f} |" for name, s, p, sp in rows]
    table += ["", "| per distributed pass (2 workers) | value |", "|---|---|",
              f"| row blocks × rows | {d2['panels']} × {d2['panel_rows']} ({d2['pair_tasks']} pair tasks) |",
              f"| bytes to and from the driver | {d2['driver_bytes_per_pass'] / 2**20:.1f} MiB |",
              f"| bytes between workers | {d2['worker_bytes_per_pass'] / 2**20:.1f} MiB |",
              f"| kernel work (task seconds) | {d2['task_seconds_per_pass']:.2f} s |",
              f"| scheduler overhead (wall − task seconds / 2 threads) | {d2['scheduler_overhead_per_pass']:.3f} s |",
              f"| scheduler overhead, 1 worker | {one['scheduler_overhead_per_pass']:.3f} s |"]
    # The model against the measured passes (loopback: the bandwidth does not limit; 2 GB/s assumed).
    b = d2["block_size"]
    model_rows = ["", "| pass | measured s | model s (compute + moving + scheduling) |", "|---|---|---|"]
    checks = []
    for label, res, workers in (("1 worker", one, 1), ("2 workers", d2, 2)):
        m = cost_model(n, D, b, workers, 1, 2e9, entry_seconds=entry_seconds, task_seconds=overhead["task_seconds"])
        checks.append((label, res["pass_seconds"], m["seconds"]))
        model_rows.append(f"| {label} | {res['pass_seconds']:.2f} | {m['seconds']:.2f} ({m['compute']:.2f} + "
                          f"{m['moving']:.3f} + {m['scheduling']:.3f}) |")
    predictions = []
    model_rows += ["", "| N | workers × 16 cores, 10 Gb/s | row blocks (pairs) | makespan (R² units) | predicted s per "
                   "pass (compute + moving + scheduling) | perfectly balanced compute | 12 passes |",
                   "|---|---|---|---|---|---|---|"]
    for big in (1_000_000, 10_000_000):
        for workers in (16, 64):
            m = cost_model(big, D, 24, workers, 16, 1.25e9, entry_seconds=entry_seconds,
                           task_seconds=overhead["task_seconds"])
            predictions.append({"n": big, "workers": workers, **m})
            model_rows.append(f"| {big:,} | {workers} | {m['panels']} ({m['pairs']}) | {m['waves']:g} | "
                              f"{m['seconds']:.1f} ({m['compute']:.1f} + {m['moving']:.2f} + {m['scheduling']:.2f}) | "
                              f"{m['ideal_compute']:.1f} | {12 * m['seconds'] / 60:.1f} min |")
    print("\n".join(table + model_rows))
    print(f"\nt_entry(d, b) = {coef[0]:.3g} + {coef[1]:.3g}·d + {coef[2]:.3g}·ldv s "
          f"(at d = 64, b = 24: {entry_seconds(64, 24) * 1e9:.2f} ns per entry per core)")
    verdicts = [(f"N = {n:,}: 2 workers × 1 thread <= 1.25 × single process 2 threads", ratio <= 1.25,
                 f"{dask2:.1f} s vs {single:.1f} s = {ratio:.2f}×")]
    for label, measured, predicted in checks:
        verdicts.append((f"cost model within 25% of the measured {label} pass", abs(predicted / measured - 1) <= 0.25,
                         f"{predicted:.2f} vs {measured:.2f} s"))
    print_verdicts(verdicts)
    write_json(args.out and str(Path(args.out) / "cluster.json"),
               {"n": n, "runs": runs, "one_worker": one, "rate": rate, "entry_model": coef, "overhead": overhead,
                "model_checks": checks, "predictions": predictions, "ratio": ratio})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
