"""Fit times of the estimators against another build of the library, A/B in alternating fresh processes.

    python bench/fit_times.py --compare-pythonpath /path/to/previous/checkout/python
    python bench/fit_times.py --compare /path/to/previous/venv/bin/python --fits svc,gpc --rounds 5

Each measurement is a fresh process (``--child NAME``) that warms the library up on a small problem (imports
and first-call costs stay out of the timing), builds its data (seed 0) and times one ``fit``:

* ``svc``: ``SVC(kernel="rbf", C=1)`` on ``make_classification(6000, 20)``;
* ``nusvr``: ``NuSVR(kernel="rbf", nu=0.5)`` on ``make_regression(4000, 10, noise=5)`` (standardised target);
* ``gpr``: ``GaussianProcessRegressor(C(1) * RBF(ones(4)) + WhiteKernel(0.1))``, exact, on 1,500 samples of
  4 features (L-BFGS-B from the kernel's θ);
* ``gpc``: ``GaussianProcessClassifier(C(1) * RBF(ones(4)))``, exact, on 600 samples of 4 features;
* ``kpca``: ``KernelPCA(n_components=10, kernel="rbf")`` on 8,000 samples of 32 features;
* ``ridge``: ``KernelRidge(alpha=1e-2, kernel="rbf", solver="cg")`` on 8,000 samples of 32 features, and
  ``ridge_dense``: the same with ``solver="cholesky"`` on 3,000;
* ``--fits scale``: ``kpca_20k`` (``KernelPCA(10, kernel="rbf")``, 20,000 × 32), ``svc_20k`` (``SVC()`` on
  ``make_classification(20000, 20)``), ``gpr_2k`` (the ``gpr`` fit on 2,000 samples) and ``kmeans_20k``
  (``KernelKMeans(8, kernel="rbf")``, 20,000 × 16).

The new build is this interpreter with this checkout's package (or whatever ``import fastkpca`` finds); the
previous one ``--compare PYTHON`` and/or ``--compare-pythonpath DIR`` (prepended to PYTHONPATH for it). Rounds
alternate the order (AB, BA, ...); the table gives each side's median seconds and the ratio new / previous.
Quote the CPU (printed) with the figures. Keep both builds' files on the same file system (copies of one tree
under two different file systems have measured several percent apart here with identical code).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_description  # noqa: E402

FITS = ("svc", "nusvr", "gpr", "gpc", "kpca", "ridge", "ridge_dense")
#: The sizes every issue's "no regression at scale" names (``--fits scale``).
SCALE = ("kpca_20k", "svc_20k", "gpr_2k", "kmeans_20k")


def _problem(name: str, small: bool):
    """(estimator, X, y) of a measurement (``small``: the warm-up's)."""
    from sklearn.datasets import make_classification, make_regression
    from sklearn.gaussian_process.kernels import RBF, WhiteKernel
    from sklearn.gaussian_process.kernels import ConstantKernel as C

    import fastkpca

    rng = np.random.default_rng(0)
    scale = 10 if small else 1
    if name in SCALE:
        n = {"kpca_20k": 20000, "svc_20k": 20000, "gpr_2k": 2000, "kmeans_20k": 20000}[name] // scale
        if name == "svc_20k":
            X, y = make_classification(n, 20, random_state=0)
            return fastkpca.SVC(), X, y
        if name == "gpr_2k":
            X = rng.standard_normal((n, 4))
            y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
            return fastkpca.GaussianProcessRegressor(C(1.0) * RBF(np.ones(4)) + WhiteKernel(0.1)), X, y
        X = rng.standard_normal((n, 32 if name == "kpca_20k" else 16))
        if name == "kpca_20k":
            return fastkpca.KernelPCA(n_components=10, kernel="rbf", random_state=0), X, None
        return fastkpca.KernelKMeans(8, kernel="rbf", random_state=0), X, None
    if name == "svc":
        X, y = make_classification(6000 // scale, 20, random_state=0)
        return fastkpca.SVC(kernel="rbf", C=1.0), X, y
    if name == "nusvr":
        X, y = make_regression(4000 // scale, 10, noise=5.0, random_state=0)
        return fastkpca.NuSVR(kernel="rbf", nu=0.5), X, (y - y.mean()) / y.std()
    if name in ("gpr", "gpc"):
        n = (1500 if name == "gpr" else 600) // scale
        X = rng.standard_normal((n, 4))
        if name == "gpr":
            y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
            return fastkpca.GaussianProcessRegressor(C(1.0) * RBF(np.ones(4)) + WhiteKernel(0.1)), X, y
        y = (np.sin(2 * X[:, 0]) + X[:, 1] > 0.3).astype(int)
        return fastkpca.GaussianProcessClassifier(C(1.0) * RBF(np.ones(4)), random_state=0), X, y
    n = (3000 if name == "ridge_dense" else 8000) // scale
    X = rng.standard_normal((n, 32))
    if name == "kpca":
        return fastkpca.KernelPCA(n_components=10, kernel="rbf", random_state=0), X, None
    if name == "ridge_dense":
        return fastkpca.KernelRidge(alpha=1e-2, kernel="rbf", solver="cholesky"), X, np.sin(X[:, 0])
    # CG seeded (a commit before the solver objects, for A/B runs: as keywords)
    cg = dict(solver=fastkpca.CG(random_state=0)) if hasattr(fastkpca, "CG") else dict(solver="cg", random_state=0)
    return fastkpca.KernelRidge(alpha=1e-2, kernel="rbf", **cg), X, np.sin(X[:, 0])


def child(name: str) -> None:
    for small in (True, False):
        estimator, X, y = _problem(name, small)
        start = time.perf_counter()
        estimator.fit(X) if y is None else estimator.fit(X, y)
        seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds}))


def measure(python: str, pythonpath: str | None, name: str) -> float:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, env.get("PYTHONPATH")]))
    out = subprocess.run([python, __file__, "--child", name], capture_output=True, text=True, env=env, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(f"{name} under {python} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fits", default=",".join(FITS), help="a comma-separated list, or 'scale'")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--compare", default=sys.executable, help="the previous build's Python")
    parser.add_argument("--compare-pythonpath", default=None, help="prepended to PYTHONPATH for the previous build")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    print(f"# {cpu_description()}")
    sides = {"new": (sys.executable, None), "previous": (args.compare, args.compare_pythonpath)}
    print("| fit | new s (median) | previous s (median) | new / previous | rounds |")
    print("|---|---|---|---|---|")
    for name in (SCALE if args.fits == "scale" else args.fits.split(",")):
        times: dict[str, list[float]] = {"new": [], "previous": []}
        for r in range(args.rounds):
            for side in (("new", "previous") if r % 2 == 0 else ("previous", "new")):
                times[side].append(measure(*sides[side], name))
        new, previous = statistics.median(times["new"]), statistics.median(times["previous"])
        print(f"| {name} | {new:.3f} | {previous:.3f} | {new / previous:.3f} | "
              f"{', '.join(f'{a:.2f}/{b:.2f}' for a, b in zip(times['new'], times['previous']))} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
