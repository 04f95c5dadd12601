"""How long Ctrl-C takes to stop a long fit, wherever it lands.

Every case runs in a fresh process per delay: the data are made, then a timer fires
``_thread.interrupt_main()`` ``delay`` seconds into the fit, and the latency is the time from that
request to the KeyboardInterrupt reaching the caller. A fit that ends before its delay counts as
"finished" and gives no figure. ``--gaps`` instead runs each fit to its end once while a thread signals
the process every 5 ms (SIGUSR1, a handler that only notes the time): the handler runs only where the
fit polls for Ctrl-C (or between Python bytecodes), so the longest gaps between its calls are the longest
stretches an interrupt would wait, found wherever they lie rather than hit by chance. ``--busy`` runs
the same sweep with another process keeping both cores busy (a BLAS matrix product in a loop). The
targets: within 1 s on an idle machine, within 3 s on a busy one.

    python bench/interrupt_latency.py                       # every case, idle
    python bench/interrupt_latency.py --busy                # every case, another process on the cores
    python bench/interrupt_latency.py --cases kpca --delays 0.5,2,4
    python bench/interrupt_latency.py --gaps                # the longest stretches without a poll
    python bench/interrupt_latency.py --cases gp_exact:20000 --delays 1,5,20,40   # an exact path at a size
    python bench/interrupt_latency.py --exits 20 --delays 1 # 20 fresh processes a case: each exits in 5 s?
    python bench/interrupt_latency.py --speed 5000,10000    # the factorisations against SciPy's

The exact paths (``gp_exact``, ``kernel_ridge_cholesky``, ``kpca_dense``, ``kernel_ridge_cv``) take a size,
``name:N`` (10,000 by default). ``--exits N`` interrupts each case in N fresh processes at the first delay and
times each process from the interrupt to its exit (a process that has not exited 5 s after the interrupt
counts as hung; it is killed at 60 s). ``--speed`` times the Cholesky factor, its inverse and the symmetric
eigensolver (all pairs) against SciPy's ``cho_factor``, ``lapack.dpotri`` and ``eigh`` on the same matrices,
alternating, medians of ``--repeats``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import _common as c

IDLE_TARGET_S = 1.0
BUSY_TARGET_S = 3.0
DEFAULT_DELAYS = "0.3,0.8,1.5,2.5,4,6,9"
EXIT_TARGET_S = 5.0


def _regression(n: int, d: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, d))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2 - X[:, 2] * X[:, 3] + 0.3 * rng.standard_normal(n)
    return X, y


def _case(name: str):
    """(what it runs, a function that makes the data and returns the fit to interrupt)."""
    import fastkpca

    if name == "kpca":
        def make():
            X, _ = _regression(20000)
            return lambda: fastkpca.KernelPCA(n_components=200, kernel="rbf", gamma=0.1, random_state=0).fit(X)
        return "KernelPCA(200 components, rbf).fit, N = 20,000 (block Lanczos)", make
    if name == "kpca_matrix_free":
        def make():
            X, _ = _regression(60000)
            return lambda: fastkpca.KernelPCA(n_components=50, kernel="rbf", gamma=0.1, memory_limit="2GB",
                                              random_state=0).fit(X)
        return "KernelPCA(50 components, memory_limit 2GB).fit, N = 60,000 (tiles recomputed)", make
    if name == "nystroem":
        def make():
            X, _ = _regression(200000)
            return lambda: fastkpca.Nystroem(n_components=3000, gamma=0.1, random_state=0).fit(X).transform(X)
        return "Nystroem(3,000 components).fit(X).transform(X), N = 200,000", make
    if name == "kernel_ridge_cg":
        def make():
            X, y = _regression(40000)
            return lambda: fastkpca.KernelRidge(alpha=1e-4, kernel="rbf", gamma=0.1,
                                                solver=fastkpca.CG(tol=1e-12)).fit(X, y)
        return "KernelRidge(solver='cg', tol=1e-12).fit, N = 40,000", make
    if name == "svc":
        def make():
            X, y = _regression(40000)
            return lambda: fastkpca.SVC(C=100.0, gamma=0.5).fit(X, y > 0.5)
        return "SVC(C=100, gamma=0.5).fit, N = 40,000", make
    if name == "gp_cg":
        from sklearn.gaussian_process.kernels import RBF, WhiteKernel, ConstantKernel as C

        def make():
            X, y = _regression(3000, 4)
            return lambda: fastkpca.GaussianProcessRegressor(C(1.0) * RBF(np.ones(4)) + WhiteKernel(1e-3),
                                                             solver=fastkpca.CG(tol=1e-10), n_restarts_optimizer=5,
                                                             random_state=0).fit(X, y)
        return "GaussianProcessRegressor(solver='cg', tol=1e-10, 5 restarts).fit, N = 3,000", make
    exact = _exact_case(name)
    if exact is not None:
        return exact
    raise SystemExit(f"unknown case {name!r}")


def _exact_case(name: str):
    """The exact paths, ``name:N``: their long stretches are the n × n factorisations and eigensolvers."""
    base, _, size = name.partition(":")
    n = int(size or 10000)
    limit = f"{int(3.5 * n * n * 8 / 1e9) + 1}GB"
    if base == "gp_exact":
        from sklearn.gaussian_process.kernels import RBF, WhiteKernel, ConstantKernel as C

        def make():
            X, y = _regression(n, 4)
            return lambda: fastkpca_module().GaussianProcessRegressor(
                C(1.0) * RBF(np.ones(4)) + WhiteKernel(1e-2), solver="cholesky", memory_limit=limit).fit(X, y)
        return f"GaussianProcessRegressor(solver='cholesky').fit, N = {n:,} (factor, inverse)", make
    if base == "kernel_ridge_cholesky":
        def make():
            X, y = _regression(n)
            return lambda: fastkpca_module().KernelRidge(alpha=1e-3, kernel="rbf", gamma=0.1, solver="cholesky",
                                                         memory_limit=limit).fit(X, y)
        return f"KernelRidge(solver='cholesky').fit, N = {n:,} (factor)", make
    if base == "kpca_dense":
        def make():
            X, _ = _regression(n)
            return lambda: fastkpca_module().KernelPCA(n_components=10, kernel="rbf", gamma=0.1,
                                                       eigen_solver="dense", memory_limit=limit).fit(X)
        return f"KernelPCA(eigen_solver='dense').fit, N = {n:,} (symmetric eigensolver, 10 pairs)", make
    if base == "kernel_ridge_cv":
        def make():
            X, y = _regression(n)
            return lambda: fastkpca_module().KernelRidgeCV(alphas=(1e-3, 1e-2, 1e-1), kernel="rbf", gammas=(0.1,),
                                                           memory_limit=limit).fit(X, y)
        return f"KernelRidgeCV(3 alphas, leave-one-out).fit, N = {n:,} (symmetric eigensolver, all pairs)", make
    return None


def fastkpca_module():
    import fastkpca

    return fastkpca


CASES = ["kpca", "kpca_matrix_free", "nystroem", "kernel_ridge_cg", "svc", "gp_cg", "gp_exact:10000",
         "gp_exact:20000", "kernel_ridge_cholesky:10000", "kernel_ridge_cholesky:20000", "kpca_dense:10000",
         "kpca_dense:20000", "kernel_ridge_cv:10000", "kernel_ridge_cv:20000"]


def child(spec: dict) -> dict:
    import _thread
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.default_int_handler)  # a background shell may start us with SIGINT ignored
    _, make = _case(spec["case"])
    fit = make()
    fired: list[float] = []
    timer = threading.Timer(spec["delay"], lambda: (fired.append(time.perf_counter()), _thread.interrupt_main()))
    start = time.perf_counter()
    timer.start()
    try:
        fit()
        outcome, latency = "finished", None
    except KeyboardInterrupt:
        outcome, latency = "interrupted", time.perf_counter() - fired[0]
    finally:
        timer.cancel()
    return {"outcome": outcome, "latency": latency, "fit_seconds": time.perf_counter() - start}


def gaps_child(spec: dict) -> dict:
    import signal
    import threading

    _, make = _case(spec["case"])
    fit = make()
    ticks: list[float] = []
    signal.signal(signal.SIGUSR1, lambda *_: ticks.append(time.perf_counter()))
    done = threading.Event()

    def ticker():
        while not done.wait(0.005):
            os.kill(os.getpid(), signal.SIGUSR1)

    thread = threading.Thread(target=ticker, daemon=True)
    start = time.perf_counter()
    ticks.append(start)
    thread.start()
    try:
        fit()
    finally:
        done.set()
        thread.join()
    end = time.perf_counter()
    ticks.append(end)
    t = np.asarray(ticks)
    gaps = np.diff(t)
    order = np.argsort(gaps)[::-1][:5]
    return {"fit_seconds": end - start, "longest": [(float(gaps[i]), float(t[i] - start)) for i in order],
            "polls": len(ticks)}


def exit_child(spec: dict) -> dict:
    """Interrupt the fit, then leave through the interpreter's normal exit (its handlers and the libraries'):
    the driver times the exit."""
    result = child(spec)
    result["interrupted_at"] = time.perf_counter()
    return result


def _exits(name: str, processes: int, delay: float) -> list[dict]:
    """``processes`` fresh processes interrupted ``delay`` s into the fit; for each, seconds from its
    interrupt to its exit (None: not interrupted, or killed after 60 s)."""
    out = []
    for _ in range(processes):
        cmd = [sys.executable, __file__, "--child", "exit", json.dumps({"case": name, "delay": delay})]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        result: dict = {}
        for line in proc.stdout:
            if line.startswith(c.CHILD_MARKER):
                result = json.loads(line[len(c.CHILD_MARKER):])
                break
        try:
            proc.wait(timeout=60)
            ended = time.perf_counter()
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            ended = None
        if result.get("outcome") != "interrupted":
            out.append({"exit": None, "outcome": result.get("outcome", "failed"), "code": proc.returncode})
            continue
        out.append({"exit": None if ended is None else ended - result["interrupted_at"], "outcome": "interrupted",
                    "code": proc.returncode})
    return out


def speed(sizes: list[int], repeats: int, which=("factor", "inverse", "eigh")) -> list[dict]:
    """The factorisations' seconds against SciPy's on the same matrix (a Gram matrix plus a multiple of I),
    alternating the order, medians of ``repeats``."""
    from scipy import linalg as sla
    from scipy.linalg import lapack

    from fastkpca.solvers.dense import factorisations as bl
    from fastkpca.solvers.dense.eigh import symmetric_eigh
    from fastkpca.solvers.dense.threads import blocked_threads

    rows = []
    for n in sizes:
        rng = np.random.default_rng(0)
        G = rng.standard_normal((n, n))
        K = G @ G.T / n + np.eye(n)
        del G
        A = np.empty_like(K, order="F")
        times: dict = {}

        def ours_factor():
            with blocked_threads(n):
                assert bl.cholesky_in_place(A) == 0

        def ours_inverse():
            with blocked_threads(n):
                assert bl.cholesky_inverse_in_place(A) == 0

        def scipy_factor():
            sla.cho_factor(A, lower=True, overwrite_a=True, check_finite=False)

        def scipy_inverse():
            assert lapack.dpotri(A, lower=1, overwrite_c=1)[1] == 0

        pairs = {"Cholesky factor": (scipy_factor, ours_factor), "its inverse": (scipy_inverse, ours_inverse),
                 "eigh, all pairs": (lambda: sla.eigh(A, overwrite_a=True, check_finite=False),
                                     lambda: symmetric_eigh(A, overwrite_a=True))}
        names = {"factor": "Cholesky factor", "inverse": "its inverse", "eigh": "eigh, all pairs"}
        pairs = {names[w]: pairs[names[w]] for w in names if w in which or (w == "factor" and "inverse" in which)}
        for r in range(repeats):
            for who in ((0, 1) if r % 2 == 0 else (1, 0)):
                A[...] = K
                for what, calls in pairs.items():
                    if what == "eigh, all pairs":
                        A[...] = K
                    t = time.perf_counter()
                    calls[who]()
                    times.setdefault((what, who), []).append(time.perf_counter() - t)
        for what in pairs:
            theirs, ours = c.median(times[(what, 0)]), c.median(times[(what, 1)])
            rows.append({"n": n, "what": what, "scipy": theirs, "ours": ours, "ratio": ours / theirs})
            print(f"n = {n:6d} {what:16s} SciPy {theirs:7.3f} s, fastkpca {ours:7.3f} s: {ours / theirs:.3f}",
                  flush=True)
    return rows


def _busy_process() -> subprocess.Popen:
    code = ("import numpy as np\nA = np.random.rand(3000, 3000)\nwhile True:\n    A @ A\n")
    return subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "OPENBLAS_NUM_THREADS": "2",
                                                                "OMP_NUM_THREADS": "2"})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    p.add_argument("--delays", default=DEFAULT_DELAYS, help="seconds into the fit (comma-separated)")
    p.add_argument("--gaps", action="store_true", help="the longest stretches without a poll, over whole fits")
    p.add_argument("--busy", action="store_true", help="another process keeps the cores busy meanwhile")
    p.add_argument("--exits", type=int, default=0, help="fresh processes a case: time from interrupt to exit")
    p.add_argument("--speed", default=None, help="sizes: the factorisations against SciPy's")
    p.add_argument("--repeats", type=int, default=3, help="--speed's repetitions")
    p.add_argument("--speed-of", default="factor,inverse,eigh", help="--speed's factorisations (comma-separated)")
    p.add_argument("--json", default=None, help="write the results here")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        status = c.serve_child({"latency": child, "gaps": gaps_child, "exit": exit_child}, args.child)
        if args.child[0] == "exit":
            return status  # the normal exit: what --exits times
        sys.stdout.flush()
        os._exit(status)  # the result is out: the next case need not wait for this one's exit

    info = c.machine_info()
    c.print_machine(info)
    if args.speed:
        rows = speed([int(x) for x in c.parse_list(args.speed)], args.repeats, c.parse_list(args.speed_of))
        verdicts = [(f"{r['what']} at n = {r['n']:,} within 5% of SciPy's", r["ratio"] <= 1.05,
                     f"{r['ours']:.3f} s against {r['scipy']:.3f} s: {r['ratio']:.3f}") for r in rows]
        table = c.markdown_table(rows, [("n", "n", "d"), ("what", "what", "s"), ("SciPy (s)", "scipy", ".3f"),
                                        ("fastkpca (s)", "ours", ".3f"), ("ratio", "ratio", ".3f")])
        c.print_verdicts(verdicts, [table])
        c.write_json(args.json, {"machine": info, "rows": rows,
                                 "verdicts": [{"target": t, "met": ok, "figure": f} for t, ok, f in verdicts]})
        return 0
    delays = [float(s) for s in c.parse_list(args.delays)]
    busy = _busy_process() if args.busy else None
    target = BUSY_TARGET_S if args.busy else IDLE_TARGET_S
    rows, verdicts = [], []
    try:
        for name in c.parse_list(args.cases) if args.gaps else []:
            what, _ = _case(name)
            r = c.run_child(__file__, "gaps", {"case": name}, timeout=3600)
            if "failed" in r:
                raise SystemExit(f"{name}: {r['failed']}")
            worst = r["longest"][0][0]
            rows.append({"case": name, "fit": r["fit_seconds"], "gap": worst, "at": r["longest"][0][1],
                         "others": ", ".join(f"{g:.2f} s at {at:.1f}" for g, at in r["longest"][1:])})
            print(f"{name:18s} fit {r['fit_seconds']:.1f} s, longest stretches without a poll: "
                  + ", ".join(f"{g:.3f} s at {at:.1f} s" for g, at in r["longest"]), flush=True)
            verdicts.append((f"{what}: no stretch without a poll over {target:g} s", worst <= target,
                             f"longest {worst:.3f} s (at {r['longest'][0][1]:.1f} s of {r['fit_seconds']:.1f} s)"))
        for name in c.parse_list(args.cases) if args.exits else []:
            what, _ = _case(name)
            runs = _exits(name, args.exits, delays[0])
            times = [r["exit"] for r in runs if r["outcome"] == "interrupted"]
            hung = sum(1 for t in times if t is None or t > EXIT_TARGET_S)
            for r in runs:
                rows.append({"case": name, **r})
            finite = [t for t in times if t is not None]
            print(f"{name:28s} {len(times)} of {len(runs)} interrupted; exits: {hung} over {EXIT_TARGET_S:g} s; "
                  f"slowest {max(finite, default=float('nan')):.2f} s", flush=True)
            verdicts.append((f"{what}: every interrupted process exits within {EXIT_TARGET_S:g} s",
                             hung == 0 and len(times) == len(runs),
                             f"{len(times)} of {len(runs)} interrupted, {hung} late or hung, slowest "
                             f"{max(finite, default=float('nan')):.2f} s"))
        for name in [] if args.gaps or args.exits else c.parse_list(args.cases):
            what, _ = _case(name)
            latencies = []
            for delay in delays:
                r = c.run_child(__file__, "latency", {"case": name, "delay": delay}, timeout=1800)
                if "failed" in r:
                    raise SystemExit(f"{name} at {delay} s: {r['failed']}")
                rows.append({"case": name, "delay": delay, "outcome": r["outcome"],
                             "latency": r["latency"], "fit": r["fit_seconds"]})
                print(f"{name:18s} delay {delay:5.2f} s: {r['outcome']:11s} latency "
                      f"{c.fmt(r['latency'])} s (fit ran {r['fit_seconds']:.2f} s)", flush=True)
                if r["latency"] is not None:
                    latencies.append(r["latency"])
            if latencies:
                worst = max(latencies)
                verdicts.append((f"{what}: interrupt within {target:g} s{' (busy)' if args.busy else ''}",
                                 worst <= target, f"worst {worst:.3f} s over {len(latencies)} delays, "
                                 f"median {c.median(latencies):.3f} s"))
            else:
                verdicts.append((what, False, "the fit finished before every delay: no figure"))
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    table = c.markdown_table(rows, [("case", "case", "s"), ("outcome", "outcome", "s"),
                                    ("interrupt to exit (s)", "exit", ".2f"), ("exit code", "code", "d")]) \
        if args.exits else c.markdown_table(rows, [("case", "case", "s"), ("fit (s)", "fit", ".3g"),
                                    ("longest stretch (s)", "gap", ".3f"), ("at (s)", "at", ".3g"),
                                    ("next longest", "others", "s")] if args.gaps else
                             [("case", "case", "s"), ("delay (s)", "delay", ".3g"), ("outcome", "outcome", "s"),
                              ("latency (s)", "latency", ".3f"), ("fit ran (s)", "fit", ".3g")])
    c.print_verdicts(verdicts, [table])
    c.write_json(args.json, {"machine": info, "busy": args.busy, "rows": rows,
                             "verdicts": [{"target": t, "met": ok, "figure": f} for t, ok, f in verdicts]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
