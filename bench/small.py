"""Small problems: every estimator's fit and its prediction against scikit-learn's, at N = 10 … 1,000.

    python bench/small.py                                  # every estimator, N = 10, 30, 100, 300, 1000
    python bench/small.py --estimators svc,gpr --sizes 100 --rounds 3
    python bench/small.py --beside                         # the same beside a second process's fit
    python bench/small.py --json small.json

Each round runs one fresh process per library, the libraries' order alternating from round to round (A B, B A,
...). A process builds every problem (5 features, seed 0; a regression target sin(x₀) + noise, two balanced
classes from its sign), then for each estimator and N: one untimed fit and prediction (imports and first-call
costs out of the figure), then the median of several timed calls of each (as many as fit in about 20 ms, 3 to 15).
Predictions are of 10 new points, as a model in a loop of model selection or optimisation makes them. The table
gives, per estimator, operation and N, each library's median over the rounds and the ratio scikit-learn /
fastkpca (above 1: fastkpca faster).

The estimators (fastkpca's class against scikit-learn's of the same name, the same parameters):
``KernelPCA(2, kernel="rbf")`` fit / transform; ``Nystroem(kernel="rbf", n_components=min(N, 100))`` fit /
transform; ``KernelRidge(kernel="rbf")`` fit / predict; ``KernelCenterer`` fit / transform (of the rbf kernel);
``SpectralEmbedding(2, affinity="rbf")`` fit; ``SpectralClustering(2, random_state=0)`` fit;
``ClassicalMDS(2)`` fit; ``GaussianProcessRegressor(C·Matern(ℓ per feature, ν = 2.5) + White, normalize_y=True,
n_restarts_optimizer=1, random_state=0)`` fit / predict(return_std=True);
``GaussianProcessClassifier(C·RBF, random_state=0)`` fit / predict_proba; ``SVC()`` fit / decision_function;
``SVC(probability=True, random_state=0)`` fit / predict_proba; ``NuSVC(nu=0.3)``, ``OneClassSVM()`` fit /
decision_function; ``SVR()``, ``NuSVR()`` fit / predict.

``--beside`` runs a second process for the whole measurement, fitting fastkpca's KernelPCA (3,000 × 20) and SVC
(2,000 × 20) in a loop on the default threads: how a fit fares beside another notebook or worker. Quote the CPU
(printed) with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_description, write_json  # noqa: E402

SIZES = (10, 30, 100, 300, 1000)
QUERIES = 10
#: name: (class name, module of scikit-learn's, constructor, fit data, operation)
ESTIMATORS = ("kpca", "nystroem", "ridge", "centerer", "embedding", "clustering", "mds", "gpr", "gpc", "svc",
              "svc_proba", "nusvc", "svr", "nusvr", "ocsvm")


def _problem(name: str, n: int, library: str):
    """(estimator, fit arguments, (operation name, its call)) of one case."""
    import warnings

    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

    warnings.filterwarnings("ignore")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 5))
    Xq = rng.standard_normal((QUERIES, 5))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)
    labels = (X[:, 0] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    labels[:2] = (0, 1)  # both classes at every N

    def cls(sklearn_module: str, class_name: str):
        if library == "fastkpca":
            import fastkpca

            return getattr(fastkpca, class_name)
        import importlib

        return getattr(importlib.import_module(sklearn_module), class_name)

    if name == "kpca":
        est = cls("sklearn.decomposition", "KernelPCA")(2, kernel="rbf")
        return est, (X,), ("transform", lambda: est.transform(Xq))
    if name == "nystroem":
        est = cls("sklearn.kernel_approximation", "Nystroem")(kernel="rbf", n_components=min(n, 100), random_state=0)
        return est, (X,), ("transform", lambda: est.transform(Xq))
    if name == "ridge":
        est = cls("sklearn.kernel_ridge", "KernelRidge")(kernel="rbf")
        return est, (X, y), ("predict", lambda: est.predict(Xq))
    if name == "centerer":
        from sklearn.metrics.pairwise import rbf_kernel

        K, Kq = rbf_kernel(X), rbf_kernel(Xq, X)
        est = cls("sklearn.preprocessing", "KernelCenterer")()
        return est, (K,), ("transform", lambda: est.transform(Kq))
    if name == "embedding":
        return cls("sklearn.manifold", "SpectralEmbedding")(2, affinity="rbf", random_state=0), (X,), None
    if name == "clustering":
        return cls("sklearn.cluster", "SpectralClustering")(2, random_state=0), (X,), None
    if name == "mds":
        return cls("sklearn.manifold", "ClassicalMDS")(2), (X,), None
    if name == "gpr":
        kernel = ConstantKernel() * Matern(np.ones(5), nu=2.5) + WhiteKernel()
        est = cls("sklearn.gaussian_process", "GaussianProcessRegressor")(kernel, normalize_y=True,
                                                                           n_restarts_optimizer=1, random_state=0)
        return est, (X, y), ("predict_std", lambda: est.predict(Xq, return_std=True))
    if name == "gpc":
        est = cls("sklearn.gaussian_process", "GaussianProcessClassifier")(ConstantKernel() * RBF(), random_state=0)
        return est, (X, labels), ("predict_proba", lambda: est.predict_proba(Xq))
    if name == "svc":
        est = cls("sklearn.svm", "SVC")()
        return est, (X, labels), ("decision_function", lambda: est.decision_function(Xq))
    if name == "svc_proba":
        est = cls("sklearn.svm", "SVC")(probability=True, random_state=0)
        return est, (X, labels), ("predict_proba", lambda: est.predict_proba(Xq))
    if name == "nusvc":
        est = cls("sklearn.svm", "NuSVC")(nu=0.3)
        return est, (X, labels), ("decision_function", lambda: est.decision_function(Xq))
    if name == "ocsvm":
        est = cls("sklearn.svm", "OneClassSVM")()
        return est, (X,), ("decision_function", lambda: est.decision_function(Xq))
    if name == "svr":
        est = cls("sklearn.svm", "SVR")()
        return est, (X, y), ("predict", lambda: est.predict(Xq))
    if name == "nusvr":
        est = cls("sklearn.svm", "NuSVR")()
        return est, (X, y), ("predict", lambda: est.predict(Xq))
    raise ValueError(f"unknown estimator {name!r}")


def _median_call(call, budget: float = 0.02, least: int = 3, most: int = 15) -> float:
    times = []
    spent = 0.0
    while len(times) < least or (spent < budget and len(times) < most):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
        spent += times[-1]
    return statistics.median(times)


def child(library: str, estimators: list[str], sizes: list[int]) -> None:
    """One library's figures, a JSON line per case."""
    if library == "fastkpca":
        import fastkpca  # noqa: F401
    for name in estimators:
        for n in sizes:
            est, data, operation = _problem(name, n, library)
            est.fit(*data)  # warm-up
            if operation is not None:
                operation[1]()
            record = {"estimator": name, "n": n, "fit": _median_call(lambda: est.fit(*data))}
            if operation is not None:
                record[operation[0]] = _median_call(operation[1])
            print(json.dumps(record), flush=True)


def _background():
    """A second process fitting in a loop until killed (--beside)."""
    return subprocess.Popen([sys.executable, "-c", (
        "import numpy as np, fastkpca\n"
        "rng = np.random.default_rng(1)\n"
        "X = rng.standard_normal((3000, 20)); y = X[:2000, 0] > 0\n"
        "while True:\n"
        "    fastkpca.KernelPCA(5, kernel='rbf').fit(X)\n"
        "    fastkpca.SVC().fit(X[:2000], y)\n")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--estimators", default=",".join(ESTIMATORS))
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--rounds", type=int, default=5, help="alternated rounds of fresh processes (median)")
    parser.add_argument("--beside", action="store_true", help="beside a second process running fastkpca fits")
    parser.add_argument("--json", default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    estimators = [e for e in args.estimators.split(",") if e]
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.child:
        child(args.child, estimators, sizes)
        return 0

    print(f"# {cpu_description()}")
    where = "beside a second process fitting" if args.beside else "alone"
    print(f"# {args.rounds} rounds, libraries alternated; {where}")
    figures: dict = {}
    background = _background() if args.beside else None
    # a SIGTERM (a killed run) unwinds like Ctrl-C, so that the finally below stops the background process
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        if background is not None:
            time.sleep(2.0)  # its imports done, its fits running
        for r in range(args.rounds):
            order = ("fastkpca", "sklearn") if r % 2 == 0 else ("sklearn", "fastkpca")
            for library in order:
                out = subprocess.run([sys.executable, __file__, "--child", library, "--estimators", args.estimators,
                                      "--sizes", args.sizes], capture_output=True, text=True,
                                     env={**os.environ, "PYTHONWARNINGS": "ignore"})
                if out.returncode != 0:
                    print(out.stderr[-3000:], file=sys.stderr)
                    return 1
                for line in out.stdout.splitlines():
                    record = json.loads(line)
                    for op, seconds in record.items():
                        if op in ("estimator", "n"):
                            continue
                        figures.setdefault((record["estimator"], op, record["n"]), {}).setdefault(library,
                                                                                                  []).append(seconds)
    finally:
        if background is not None:
            background.kill()
            background.wait()

    rows = []
    print("\n| estimator | operation | " + " | ".join(f"N = {n}" for n in sizes) + " |")
    print("|---|---|" + "---|" * len(sizes))
    below = 0
    for name in estimators:
        ops = sorted({op for (e, op, _) in figures if e == name}, key=lambda op: op != "fit")
        for op in ops:
            cells = []
            for n in sizes:
                f = figures.get((name, op, n), {})
                ours, theirs = statistics.median(f["fastkpca"]), statistics.median(f["sklearn"])
                ratio = theirs / ours
                below += ratio < 1.0
                rows.append({"estimator": name, "operation": op, "n": n, "fastkpca_seconds": ours,
                             "sklearn_seconds": theirs, "ratio": ratio})
                cells.append(f"{'**' if ratio < 1 else ''}{ratio:.2f}{'**' if ratio < 1 else ''} "
                             f"({ours * 1e3:.3g} ms)")
            print(f"| {name} | {op} | " + " | ".join(cells) + " |")
    print(f"\nratio = scikit-learn's median / fastkpca's (fastkpca's median in brackets); {below} of {len(rows)} "
          "below 1")
    write_json(args.json, {"cpu": cpu_description(), "beside": args.beside, "rounds": args.rounds, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
