"""The costs behind the library's thread rule (python/fastkpca/_threads.py), measured on this machine.

    python bench/thread_costs.py              # every figure, printed beside the constants the library holds
    python bench/thread_costs.py --json thread_costs.json

A native call runs on a team of OpenMP threads only where the work it shares pays for starting the team
(``_threads.TEAM_START_SECONDS``), and the work is predicted from the kernel entries it evaluates
(``ENTRY_SECONDS`` + ``FEATURE_SECONDS`` per feature, on one thread). This script measures each of those:

* **a native call's fixed cost**: ``gram_into`` of a 1 × 1 block on one thread, and the same through the public
  ``fastkpca.gram`` (the Python around it: validation, the output's allocation);
* **array pass**: ``center_cross_inplace`` (centering in place) and ``scan_square`` (the finiteness and
  symmetry scan) of a 1,000 × 1,000 stored matrix on one thread, per entry (``ARRAY_ENTRY_SECONDS``);
* **entry seconds**: ``gram_into`` on one thread of a 1,000 × 1,000 rbf block (a cross block, every entry
  evaluated) at d = 1, 4, 16, 64, 256, fitted by least squares to ENTRY_SECONDS + d · FEATURE_SECONDS;
* **team start**: the same call of about 0.3 ms of work on two threads minus on one, each call after the team
  has gone idle (5 ms apart: under the passive wait policy its threads sleep) — the cost a call pays to wake
  them — and back to back (the threads still awake);
* **break-even**: the rows of a square cross block at which two threads first beat one (the rule starts a team
  from TEAM_MIN_SECONDS of predicted work: the prediction there is printed beside it);
* **beside a spinning BLAS thread**: a short call right after a threaded BLAS call, on one thread, on the default
  team and on the short call's team (``SHORT_CALL_TEAM``, cut to the cores no other thread of the process holds),
  and what reading the threads' states costs.

Medians of 200 calls (30 for the large blocks). Quote the CPU (printed) with the figures.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_description, write_json  # noqa: E402


def _median_seconds(call, repeats: int, gap: float = 0.0) -> float:
    call()
    times = []
    for _ in range(repeats):
        if gap:
            time.sleep(gap)
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _gram_call(core, X, Y, threads):
    out = np.empty((X.shape[0], Y.shape[0]))
    return lambda: core.gram_into(X, Y, "rbf", 1.0 / X.shape[1], 3.0, 1.0, out, threads)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", default=None, help="write the figures to this file")
    args = parser.parse_args(argv)

    import fastkpca
    from fastkpca import _native, _threads

    core = _native.core
    rng = np.random.default_rng(0)
    print(f"# {cpu_description()}")
    print(f"# {core.__name__}, OpenMP threads {core.omp_max_threads()}")
    results: dict = {"cpu": cpu_description()}

    one = rng.standard_normal((1, 4))
    results["native_call_seconds"] = _median_seconds(_gram_call(core, one, one, 1), 2000)
    results["public_call_seconds"] = _median_seconds(lambda: fastkpca.gram(one, kernel="rbf"), 2000)
    print(f"\nfixed cost of a native call (1 × 1 gram_into, one thread): {results['native_call_seconds'] * 1e6:.1f} µs;"
          f" through fastkpca.gram: {results['public_call_seconds'] * 1e6:.1f} µs")

    K = rng.random((1000, 1000))
    means = K.mean(axis=0)
    center = _median_seconds(lambda: core.center_cross_inplace(K, means, float(means.mean()), 1), 30) / K.size
    scan = _median_seconds(lambda: core.scan_square(K, True, 1), 30) / K.size
    results["array_entry_seconds"] = {"center": center, "scan": scan}
    print(f"\narray pass, seconds per entry on one thread (1,000 × 1,000): centering {center * 1e9:.2f} ns, scan "
          f"{scan * 1e9:.2f} ns   (library: ARRAY_ENTRY_SECONDS {_threads.ARRAY_ENTRY_SECONDS * 1e9:.2f} ns)")

    depths = [1, 4, 16, 64, 256]
    per_entry = []
    for d in depths:
        X, Y = rng.standard_normal((1000, d)), rng.standard_normal((1000, d))
        per_entry.append(_median_seconds(_gram_call(core, X, Y, 1), 30) / 1e6)
    slope, intercept = np.polyfit(depths, per_entry, 1)
    results["entry_seconds_by_depth"] = dict(zip(depths, per_entry))
    results["entry_seconds"], results["feature_seconds"] = float(intercept), float(slope)
    print("\nseconds per kernel entry on one thread (rbf, 1,000 × 1,000 cross block):")
    for d, s in zip(depths, per_entry):
        model = _threads.ENTRY_SECONDS + d * _threads.FEATURE_SECONDS
        print(f"  d = {d:>3}: {s * 1e9:6.2f} ns   (the library's model: {model * 1e9:6.2f} ns)")
    print(f"  fit: {intercept * 1e9:.2f} ns + d · {slope * 1e9:.3f} ns   (library: ENTRY_SECONDS "
          f"{_threads.ENTRY_SECONDS * 1e9:.2f} ns, FEATURE_SECONDS {_threads.FEATURE_SECONDS * 1e9:.3f} ns)")

    threads = min(2, max(1, core.omp_max_threads()))
    if threads < 2:
        print("\none OpenMP thread here: no team to measure")
    else:
        X = rng.standard_normal((180, 16))
        for label, gap in (("idle team (5 ms apart)", 0.005), ("awake team (back to back)", 0.0)):
            single = _median_seconds(_gram_call(core, X, X, 1), 200, gap)
            team = _median_seconds(_gram_call(core, X, X, 2), 200, gap)
            results[f"team_{'idle' if gap else 'awake'}"] = {"one_thread": single, "two_threads": team}
            # two threads would take single/2 with a free start: the rest is the start
            print(f"\n{label}: {X.shape[0]}² entries, one thread {single * 1e6:.0f} µs, two {team * 1e6:.0f} µs:"
                  f" start {max(team - single / 2, 0) * 1e6:.0f} µs")
        idle = results["team_idle"]
        results["team_start_seconds"] = max(idle["two_threads"] - idle["one_thread"] / 2, 0.0)
        print(f"  library: TEAM_START_SECONDS {_threads.TEAM_START_SECONDS * 1e6:.0f} µs, a team from "
              f"TEAM_MIN_SECONDS {_threads.TEAM_MIN_SECONDS * 1e6:.0f} µs of predicted one-thread work")
        print("\nbreak-even (square cross blocks, d = 16, 5 ms apart):")
        for rows in (40, 60, 90, 130, 180, 260, 380):
            X = rng.standard_normal((rows, 16))
            single = _median_seconds(_gram_call(core, X, X, 1), 100, 0.005)
            team = _median_seconds(_gram_call(core, X, X, 2), 100, 0.005)
            predicted = _threads.kernel_seconds(rows * rows, 16)
            rule = 1 if _threads.pass_threads(0, predicted) == 1 else threads
            results.setdefault("break_even", []).append({"rows": rows, "one_thread": single, "two_threads": team,
                                                         "predicted": predicted, "rule_threads": rule})
            print(f"  {rows:>4} rows: one thread {single * 1e6:7.0f} µs, two {team * 1e6:7.0f} µs "
                  f"({single / team:4.2f}×); predicted {predicted * 1e6:6.0f} µs: the rule takes {rule}")
        _beside_spinning_blas(core, _threads, rng, results)
    write_json(args.json, results)
    return 0


def _beside_spinning_blas(core, _threads, rng, results) -> None:
    """A short call started right after a threaded BLAS call (NumPy's product of 1,500² matrices on every BLAS
    thread), whose threads spin on for BLAS_SPIN_SECONDS: on one thread, on the plain default team, and on the
    short call's team (SHORT_CALL_TEAM: cut to the cores no other thread holds); then the short call's team with
    the BLAS threads asleep again (BLAS_SPIN_SECONDS × 3 later), and what reading the threads' states costs."""
    A = np.full((1500, 1500), 0.5)
    X = rng.standard_normal((600, 16))
    calls = {"one thread": 1, "default team": _threads.DEFAULT_TEAM, "short call's team": _threads.SHORT_CALL_TEAM}
    times: dict[str, list[float]] = {label: [] for label in calls}
    for _ in range(15):
        for label, threads in calls.items():
            call = _gram_call(core, X, X, threads)
            np.matmul(A, A)
            start = time.perf_counter()
            call()
            times[label].append(time.perf_counter() - start)
    quiet = _median_seconds(_gram_call(core, X, X, _threads.SHORT_CALL_TEAM), 15, 3 * _threads.BLAS_SPIN_SECONDS)
    np.matmul(A, A)
    time.sleep(3 * _threads.BLAS_SPIN_SECONDS)
    check = _median_seconds(core.short_call_team, 200)
    figures = {label: statistics.median(t) for label, t in times.items()}
    results["beside_spinning_blas"] = {**figures, "short call's team, BLAS asleep": quiet,
                                       "short_call_team seconds": check}
    print(f"\nright after a threaded BLAS call, {X.shape[0]}² entries (d = 16; predicted one-thread work "
          f"{_threads.kernel_seconds(X.shape[0] ** 2, 16) * 1e3:.2f} ms):")
    for label, seconds in figures.items():
        print(f"  {label:>18}: {seconds * 1e3:6.2f} ms")
    print(f"  the short call's team with the BLAS threads asleep: {quiet * 1e3:.2f} ms; reading the threads' states "
          f"(short_call_team): {check * 1e6:.0f} µs")
    print(f"  library: BLAS_SPIN_SECONDS {_threads.BLAS_SPIN_SECONDS:.2f} s, the default team beside busy cores from "
          f"BUSY_TEAM_MIN_SECONDS {_threads.BUSY_TEAM_MIN_SECONDS:.2f} s of predicted one-thread work")


if __name__ == "__main__":
    sys.exit(main())
