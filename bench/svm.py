"""The support vector machine issue's figures: fastkpca.SVC against scikit-learn (LIBSVM) and scikit-learn-intelex
(oneDAL) in the same run.

    python bench/svm.py                                   # N = 10,000 / 20,000 / 50,000, 3 alternating repeats
    python bench/svm.py --sizes 20000 --repeats 5
    python bench/svm.py --sizes "" --multiclass 50000     # the 5-class problem
    python bench/svm.py --sizes "" --scale 1000000        # N = 1,000,000, memory_limit="4GB" (about an hour)
    python bench/svm.py --sizes 50000 --threads 1,2,4,8,16 --libs fastkpca,sklearnex   # a thread sweep

Every fit runs in a fresh child process (its own peak RSS, reset after the data is made, so figures are "above
X"); the libraries alternate (ABC, CBA, ...) and the tables give medians. Prints the CPU, markdown tables and
PASS/FAIL lines; --out writes svm.json. scikit-learn-intelex comes with the ``bench`` extra on Linux x86-64 (its
only platform); where it is not installed its columns say "not measured".

Data (the issue's): ``make_classification(n + 2000, n_features=32, n_informative=16, n_classes=2,
flip_y=0.05, random_state=0)``, standardized, the last 2,000 rows held out; ``SVC(C=1.0, kernel="rbf",
gamma="scale")``. The multi-class problem: the same with ``n_classes=5``. Targets (issue "Support vector
machines"):
  speed      fit >= 10x scikit-learn and >= 2x scikit-learn-intelex at N = 20,000 and 50,000; predict of the
             2,000 held-out rows at least as fast as either; accuracy within 0.2% (absolute) of scikit-learn's;
  multiclass about 50,000 rows, 5 classes: fit >= 2x scikit-learn-intelex;
  scale      N = 1,000,000, memory_limit="4GB": fit >= 2x scikit-learn-intelex's (same run) and <= 30 min, the
             fit's peak above X <= 4 GB (the limit's meaning here: what a fit may use beyond X; the process's peak
             is printed beside it), fit_status_ 0; kernel columns evaluated / N and seconds per column batch against
             the floor (one evaluation of each support vector's column: n_SV × N kernel entries at the rate the same
             process measures for a cross block of the same width).
A thread sweep (--threads) times fastkpca and scikit-learn-intelex on 1, 2, 4, ... cores (each child pinned to
that many cores by its affinity mask; counts above the machine's are skipped).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from _common import (cpu_description, median, parse_ints, parse_list, peak_rss_bytes, print_verdicts, reset_peak_rss,
                     rss_bytes, run_child, serve_child, write_json)

HERE = Path(__file__).resolve().parent
HELD_OUT = 2000
LIBS = ("fastkpca", "sklearn", "sklearnex")


def _data(n: int, classes: int = 2, seed: int = 0):
    import numpy as np
    from sklearn.datasets import make_classification

    X, y = make_classification(n + HELD_OUT, n_features=32, n_informative=16, n_classes=classes, flip_y=0.05,
                               random_state=seed)
    X = (X - X.mean(0)) / X.std(0)
    return np.ascontiguousarray(X[:n]), y[:n], np.ascontiguousarray(X[n:]), y[n:]


def _estimator(lib: str, spec: dict):
    params = {"C": 1.0, "kernel": "rbf", "gamma": "scale", "tol": spec.get("tol", 1e-3)}
    if lib == "fastkpca":
        import fastkpca

        return fastkpca.SVC(memory_limit=spec.get("memory_limit"), **params)
    if lib == "sklearnex":
        from sklearnex.svm import SVC
    else:
        from sklearn.svm import SVC
    return SVC(**params)


def _column_rate(X, n_columns: int = 256, n_rows: int = 65536) -> float:
    """Kernel entries per second of one column batch (n_columns columns against n_rows rows; the solver's rows are
    prepared once per shrink, so their preparation is left out), in the precision the solver evaluates them (float32
    for a problem of more than 4,096 samples): the floor's rate, measured in this process."""
    import numpy as np

    from fastkpca import _native

    source = X.astype(np.float32) if X.shape[0] > 4096 else X
    columns = _native.core.svm_dense_columns(source, "rbf", 1.0 / X.shape[1], 3, 0, 0)
    rows = np.arange(min(n_rows, X.shape[0]), dtype=np.int64)
    cols = np.arange(min(n_columns, X.shape[0]), dtype=np.int64)
    out = np.empty((cols.size, rows.size), dtype=np.float32)
    _native.core.svm_kernel_columns(columns, rows, cols, out, 0)  # touches `out` once
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        _native.core.svm_kernel_columns(columns, rows, cols, out, 0)
        best = min(best, time.perf_counter() - t)
    return cols.size * rows.size / best


def _fit_child(spec: dict) -> dict:
    """One fit (and the held-out predictions) in this process."""
    cores = spec.get("cores")
    if cores:
        os.sched_setaffinity(0, set(range(cores)))
    import numpy as np

    X, y, Xt, yt = _data(spec["n"], spec.get("classes", 2))
    lib = spec["lib"]
    model = _estimator(lib, spec)
    rate = _column_rate(X) if spec.get("floor") else None
    base = rss_bytes()
    reset_peak_rss()
    t = time.perf_counter()
    model.fit(X, y)
    fit_seconds = time.perf_counter() - t
    peak = peak_rss_bytes()
    t = time.perf_counter()
    predicted = model.predict(Xt)
    predict_seconds = time.perf_counter() - t
    out = {"lib": lib, "n": spec["n"], "fit_seconds": fit_seconds, "predict_seconds": predict_seconds,
           "accuracy": float(np.mean(predicted == yt)), "n_sv": int(np.sum(model.n_support_)),
           "peak_above_x_gib": (peak - base) / 2**30, "peak_gib": peak / 2**30, "cores": cores}
    if lib == "fastkpca":
        pairs = model.solver_info_["pairs"]
        columns = sum(p["columns"] for p in pairs)
        out.update(fit_status=int(model.fit_status_), columns=columns, columns_per_n=columns / spec["n"],
                   outer_steps=sum(p["outer_steps"] for p in pairs), iterations=int(np.sum(model.n_iter_)),
                   reconstructions=sum(p["reconstructions"] for p in pairs),
                   seconds={k: sum(p["seconds"][k] for p in pairs) for k in pairs[0]["seconds"]},
                   column_entries=sum(p["column_entries"] for p in pairs),
                   product_entries=sum(p["product_entries"] for p in pairs))
        if rate:
            floor = out["n_sv"] * spec["n"] / rate
            out.update(column_rate=rate, floor_seconds=floor, fit_over_floor=fit_seconds / floor,
                       columns_seconds_over_floor=out["seconds"]["columns"] / floor)
    if spec.get("decisions"):
        out["decisions"] = model.decision_function(Xt[:200]).tolist()
    return out


CHILDREN = {"fit": _fit_child}


def _available(lib: str) -> bool:
    import importlib.util

    return lib != "sklearnex" or importlib.util.find_spec("sklearnex") is not None


def _run(libs, n, repeats, classes=2, extra=None, timeout=7200):
    """{lib: [child results]} with the libraries alternating (ABC, CBA, ...)."""
    results: dict[str, list] = {lib: [] for lib in libs}
    for r in range(repeats):
        for lib in (libs if r % 2 == 0 else libs[::-1]):
            spec = {"lib": lib, "n": n, "classes": classes, **(extra or {})}
            res = run_child(__file__, "fit", spec, timeout=timeout)
            if "failed" in res:
                print(f"  {lib} n={n}: FAILED {res['failed'][-400:]}", flush=True)
                continue
            results[lib].append(res)
            print(f"  {lib:9s} n={n:>8} fit {res['fit_seconds']:8.2f} s  predict {res['predict_seconds']:.3f} s  "
                  f"n_SV {res['n_sv']}  acc {res['accuracy']:.4f}  peak {res['peak_gib']:.2f} GiB", flush=True)
    return results


def _summary(results: dict) -> dict:
    out = {}
    for lib, runs in results.items():
        if runs:
            out[lib] = {"fit": median([r["fit_seconds"] for r in runs]),
                        "predict": median([r["predict_seconds"] for r in runs]),
                        "accuracy": runs[0]["accuracy"], "n_sv": runs[0]["n_sv"],
                        "peak_gib": max(r["peak_gib"] for r in runs),
                        "peak_above_x_gib": max(r["peak_above_x_gib"] for r in runs), "runs": len(runs)}
            if lib == "fastkpca":
                out[lib]["solver"] = {k: runs[-1][k] for k in ("columns", "columns_per_n", "outer_steps", "iterations",
                                                                "seconds", "fit_status", "reconstructions")
                                      if k in runs[-1]}
                for key in ("floor_seconds", "fit_over_floor", "columns_seconds_over_floor", "column_rate"):
                    if key in runs[-1]:
                        out[lib]["solver"][key] = runs[-1][key]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,20000,50000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--libs", default=",".join(LIBS))
    parser.add_argument("--multiclass", type=int, default=0, help="rows of the 5-class problem (0: none)")
    parser.add_argument("--scale", type=int, default=0, help="N of the scale run (0: none)")
    parser.add_argument("--scale-libs", default="fastkpca,sklearnex")
    parser.add_argument("--threads", default="", help="a thread sweep over these core counts")
    parser.add_argument("--out", default=None)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return serve_child(CHILDREN, args.child)

    cpu = cpu_description()
    print(f"# {cpu}")
    libs = [lib for lib in parse_list(args.libs) if _available(lib)]
    missing = [lib for lib in parse_list(args.libs) if lib not in libs]
    if missing:
        print(f"# not installed (not measured): {', '.join(missing)}")
    verdicts, tables, payload = [], [], {"cpu": cpu, "sizes": {}, "multiclass": None, "scale": None, "threads": None}

    rows = []
    for n in parse_ints(args.sizes):
        summary = _summary(_run(libs, n, args.repeats, extra={"floor": True}))
        payload["sizes"][n] = summary
        ours = summary.get("fastkpca")
        for lib in libs:
            s = summary.get(lib)
            if s:
                rows.append(f"| {n:,} | {lib} | {s['fit']:.3g} s | {s['predict']:.3g} s | {s['n_sv']:,} | "
                            f"{s['accuracy']:.4f} | {s['peak_gib']:.2f} |")
        if ours and n in (20000, 50000):
            for lib, factor in (("sklearn", 10), ("sklearnex", 2)):
                s = summary.get(lib)
                if s:
                    verdicts.append((f"fit >= {factor}x {lib} at N = {n:,}", s["fit"] >= factor * ours["fit"],
                                     f"{s['fit'] / ours['fit']:.2f}x ({ours['fit']:.3g} s vs {s['fit']:.3g} s)"))
                    verdicts.append((f"predict at least as fast as {lib} at N = {n:,}",
                                     ours["predict"] <= s["predict"],
                                     f"{ours['predict']:.3g} s vs {s['predict']:.3g} s"))
            s = summary.get("sklearn")
            if s:
                verdicts.append((f"accuracy within 0.2% of scikit-learn's at N = {n:,}",
                                 abs(ours["accuracy"] - s["accuracy"]) <= 0.002,
                                 f"{ours['accuracy']:.4f} vs {s['accuracy']:.4f}"))
        if ours:
            sol = ours["solver"]
            print(f"  fastkpca n={n}: columns {sol['columns']} ({sol['columns_per_n']:.2f} N), outer steps "
                  f"{sol['outer_steps']}, SMO steps {sol['iterations']}, seconds {sol['seconds']}, "
                  f"fit/floor {sol.get('fit_over_floor', float('nan')):.2f}")
    if rows:
        header = "| N | library | fit | predict 2,000 | n_SV | accuracy | peak GiB |\n|---|---|---|---|---|---|---|\n"
        tables.append(header + "\n".join(rows))

    if args.multiclass:
        mlibs = [lib for lib in libs if lib != "sklearn" or args.multiclass <= 20000]
        summary = _summary(_run(mlibs, args.multiclass, args.repeats, classes=5))
        payload["multiclass"] = summary
        ours, theirs = summary.get("fastkpca"), summary.get("sklearnex")
        tables.append("| 5 classes, N | library | fit | predict 2,000 | n_SV | accuracy |\n|---|---|---|---|---|---|\n"
                      + "\n".join(f"| {args.multiclass:,} | {lib} | {s['fit']:.3g} s | {s['predict']:.3g} s | "
                                  f"{s['n_sv']:,} | {s['accuracy']:.4f} |" for lib, s in summary.items()))
        if ours and theirs:
            verdicts.append((f"5-class fit >= 2x scikit-learn-intelex at N = {args.multiclass:,}",
                             theirs["fit"] >= 2 * ours["fit"], f"{theirs['fit'] / ours['fit']:.2f}x "
                             f"({ours['fit']:.3g} s vs {theirs['fit']:.3g} s)"))

    if args.scale:
        slibs = [lib for lib in parse_list(args.scale_libs) if _available(lib)]
        summary = _summary(_run(slibs, args.scale, 1, extra={"memory_limit": "4GB", "floor": True}, timeout=4 * 3600))
        payload["scale"] = summary
        ours, theirs = summary.get("fastkpca"), summary.get("sklearnex")
        if ours:
            sol = ours["solver"]
            tables.append(
                f"N = {args.scale:,}: fastkpca fit {ours['fit']:.0f} s, peak {ours['peak_gib']:.2f} GiB, "
                f"n_SV {ours['n_sv']:,}, columns evaluated {sol['columns']:,} = {sol['columns_per_n']:.3f} N, "
                f"outer steps {sol['outer_steps']}, SMO steps {sol['iterations']:,}, rebuilt gradients "
                f"{sol['reconstructions']}, seconds {sol['seconds']}, floor {sol.get('floor_seconds', 0):.0f} s "
                f"(fit/floor {sol.get('fit_over_floor', float('nan')):.2f}, columns/floor "
                f"{sol.get('columns_seconds_over_floor', float('nan')):.2f}), fit_status_ {sol['fit_status']}")
            verdicts.append((f"fit <= 30 min at N = {args.scale:,}", ours["fit"] <= 1800, f"{ours['fit']:.0f} s"))
            verdicts.append((f"fit's peak above X <= 4 GB (memory_limit) at N = {args.scale:,}",
                             ours["peak_above_x_gib"] * 2**30 <= 4e9,
                             f"{ours['peak_above_x_gib'] * 2**30 / 1e9:.2f} GB (the process: "
                             f"{ours['peak_gib'] * 2**30 / 1e9:.2f} GB)"))
            verdicts.append((f"fit_status_ 0 at N = {args.scale:,}", sol["fit_status"] == 0, str(sol["fit_status"])))
        if ours and theirs:
            verdicts.append((f"fit >= 2x scikit-learn-intelex at N = {args.scale:,}", theirs["fit"] >= 2 * ours["fit"],
                             f"{theirs['fit'] / ours['fit']:.2f}x ({ours['fit']:.0f} s vs {theirs['fit']:.0f} s)"))

    if args.threads:
        sweep: dict = {}
        n = parse_ints(args.sizes)[-1] if args.sizes else 50000
        for cores in parse_ints(args.threads):
            if cores > (os.cpu_count() or 1):
                print(f"# {cores} cores: more than this machine has, skipped")
                continue
            summary = _summary(_run([lib for lib in libs if lib != "sklearn"], n, max(1, args.repeats // 2),
                                    extra={"cores": cores}))
            sweep[cores] = {lib: s["fit"] for lib, s in summary.items()}
        payload["threads"] = {"n": n, "fit_seconds": sweep}
        tables.append("| cores | " + " | ".join(f"{lib} fit (N = {n:,})" for lib in libs if lib != "sklearn")
                      + " |\n|---|" + "---|" * len([lib for lib in libs if lib != "sklearn"]) + "\n"
                      + "\n".join(f"| {c} | " + " | ".join(f"{v.get(lib, float('nan')):.3g} s" for lib in libs
                                                            if lib != "sklearn") + " |" for c, v in sweep.items()))

    print_verdicts(verdicts, tables)
    write_json(args.out and str(Path(args.out) / "svm.json"), payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
