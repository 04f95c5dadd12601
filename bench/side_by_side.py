"""fastkpca beside other work: a small call beside another process's fit and in joblib's thread pool, and the model
selection and optimisation loops that run many small fits side by side, patched against plain scikit-learn.

    python bench/side_by_side.py                     # everything, medians of 5 alternated fresh processes
    python bench/side_by_side.py --cases gram,cv --rounds 3
    python bench/side_by_side.py --json side_by_side.json

Cases:

* ``gram``: ``fastkpca.gram`` of 100 rows (5 features, rbf), the median of 300 calls 2 ms apart, alone; beside a
  second process that fits fastkpca's KernelPCA (3,000 × 20) and SVC (2,000 × 20) in a loop; and in joblib's
  threading backend (two threads calling it at once, ``Parallel(n_jobs=2, prefer="threads")``);
* ``cv``: ``cross_val_score(SVC(), X, y, cv=5, n_jobs=2)`` on ``make_classification(3000, 20)`` (joblib's loky
  workers: one thread each);
* ``grid``: ``GridSearchCV(KernelRidge(kernel="rbf"), {"alpha": [0.1, 1, 10], "gamma": [0.01, 0.1]}, cv=3,
  n_jobs=2)`` on 1,500 × 10 samples of a regression;
* ``bayes_opt``: bayesian-optimization's ``maximize(init_points=5, n_iter=20)`` on a 2-D function (25 evaluations;
  its GaussianProcessRegressor refitted at every step), where the package is installed.

``cv``, ``grid`` and ``bayes_opt`` run with ``fastkpca.patch_sklearn()`` ("patched") and without ("plain"), each
a fresh process, alternating; the table gives the medians and plain / patched. Quote the CPU (printed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_description, write_json  # noqa: E402

CASES = ("gram", "cv", "grid", "bayes_opt")

_GRAM = """
import json, time, statistics, numpy as np, fastkpca
X = np.random.default_rng(0).standard_normal((100, 5))
fastkpca.gram(X, kernel="rbf")
def one():
    times = []
    for _ in range(300):
        start = time.perf_counter(); fastkpca.gram(X, kernel="rbf"); times.append(time.perf_counter() - start)
        time.sleep(0.002)
    return statistics.median(times)
if "{mode}" == "threads":
    from joblib import Parallel, delayed
    seconds = statistics.median(Parallel(n_jobs=2, prefer="threads")(delayed(one)() for _ in range(2)))
else:
    seconds = one()
print(json.dumps({{"seconds": seconds}}))
"""

_BACKGROUND = """
import numpy as np, fastkpca
rng = np.random.default_rng(1)
X = rng.standard_normal((3000, 20)); y = X[:2000, 0] > 0
while True:
    fastkpca.KernelPCA(5, kernel="rbf").fit(X)
    fastkpca.SVC().fit(X[:2000], y)
"""

_CV = """
import json, time, warnings
warnings.filterwarnings("ignore")
{patch}
from sklearn.datasets import make_classification
from sklearn.model_selection import cross_val_score
from sklearn.svm import SVC
X, y = make_classification(3000, 20, random_state=0)
start = time.perf_counter()
scores = cross_val_score(SVC(), X, y, cv=5, n_jobs=2)
print(json.dumps({{"seconds": time.perf_counter() - start, "score": float(scores.mean()), "svc": SVC.__module__}}))
"""

_GRID = """
import json, time, warnings
warnings.filterwarnings("ignore")
{patch}
import numpy as np
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV
rng = np.random.default_rng(0)
X = rng.standard_normal((1500, 10)); y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(1500)
start = time.perf_counter()
search = GridSearchCV(KernelRidge(kernel="rbf"), {{"alpha": [0.1, 1.0, 10.0], "gamma": [0.01, 0.1]}}, cv=3,
                      n_jobs=2).fit(X, y)
print(json.dumps({{"seconds": time.perf_counter() - start, "score": float(search.best_score_),
                   "best": search.best_params_, "ridge": KernelRidge.__module__}}))
"""

_BAYES_OPT = """
import json, time, warnings
warnings.filterwarnings("ignore")
{patch}
import numpy as np
from bayes_opt import BayesianOptimization
def f(x, y):
    return -(x - 0.3) ** 2 - (y + 0.7) ** 2 + 0.1 * np.sin(5 * x)
start = time.perf_counter()
optimizer = BayesianOptimization(f=f, pbounds={{"x": (-2, 2), "y": (-3, 3)}}, random_state=1, verbose=0)
optimizer.maximize(init_points=5, n_iter=20)
print(json.dumps({{"seconds": time.perf_counter() - start, "score": float(optimizer.max["target"])}}))
"""


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def gram(rounds: int) -> list[dict]:
    """The 100-row Gram alone, beside a second process's fits, in joblib's threading backend (medians over rounds
    of one process each)."""
    rows = []
    alone, threads = [], []
    for _ in range(rounds):
        alone.append(_run(_GRAM.format(mode="alone"))["seconds"])
        threads.append(_run(_GRAM.format(mode="threads"))["seconds"])
    background = subprocess.Popen([sys.executable, "-c", _BACKGROUND], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
    try:
        time.sleep(2.0)
        beside = [_run(_GRAM.format(mode="beside"))["seconds"] for _ in range(rounds)]
    finally:
        background.kill()
        background.wait()
    base = statistics.median(alone)
    for label, values in (("alone", alone), ("beside a second process's fit", beside),
                          ("joblib threading backend, 2 threads", threads)):
        rows.append({"case": "gram 100 rows", "mode": label, "seconds": statistics.median(values),
                     "ratio_to_alone": statistics.median(values) / base})
    return rows


def patched_against_plain(name: str, template: str, rounds: int) -> dict:
    times: dict = {"patched": [], "plain": []}
    scores: dict = {"patched": [], "plain": []}
    for r in range(rounds):
        for mode in (("patched", "plain") if r % 2 == 0 else ("plain", "patched")):
            patch = "import fastkpca; fastkpca.patch_sklearn()" if mode == "patched" else ""
            result = _run(template.format(patch=patch))
            times[mode].append(result["seconds"])
            scores[mode].append(result["score"])
    patched, plain = statistics.median(times["patched"]), statistics.median(times["plain"])
    return {"case": name, "patched_seconds": patched, "plain_seconds": plain, "speedup": plain / patched,
            "patched_score": scores["patched"][0], "plain_score": scores["plain"][0]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    print(f"# {cpu_description()}")
    results: dict = {"cpu": cpu_description(), "rounds": args.rounds}
    if "gram" in cases:
        results["gram"] = gram(args.rounds)
        print("\n| call | where | median | against alone |\n|---|---|---|---|")
        for row in results["gram"]:
            print(f"| {row['case']} | {row['mode']} | {row['seconds'] * 1e6:.0f} µs | {row['ratio_to_alone']:.2f}× |")
    loops = []
    for name, template in (("cv", _CV), ("grid", _GRID), ("bayes_opt", _BAYES_OPT)):
        if name not in cases:
            continue
        if name == "bayes_opt":
            try:
                import bayes_opt  # noqa: F401
            except ImportError:
                print("\nbayes_opt: bayesian-optimization is not installed (the clients extra)")
                continue
        loops.append(patched_against_plain(name, template, args.rounds))
    if loops:
        results["loops"] = loops
        print("\n| loop | plain s | patched s | plain / patched | plain score | patched score |")
        print("|---|---|---|---|---|---|")
        for row in loops:
            print(f"| {row['case']} | {row['plain_seconds']:.3f} | {row['patched_seconds']:.3f} | "
                  f"{row['speedup']:.2f} | {row['plain_score']:.6g} | {row['patched_score']:.6g} |")
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
