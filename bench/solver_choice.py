"""The library's one solver choice (fastkpca/solvers/choice.py) against the clock: every candidate of a family,
forced by name, timed beside the cost model's prediction for it, at several sizes.

    python bench/solver_choice.py                                   # every family at its default sizes
    python bench/solver_choice.py --families ridge,pca --repeats 3
    python bench/solver_choice.py --families gpr --sizes 1000,2000,4000

For each family, size and candidate the table gives the measured seconds (median of ``--repeats`` runs,
candidates alternated), the model's predicted seconds, their ratio, and the figure the model's constant for that
candidate stands for (CG's iterations, Lanczos's passes), so that a constant of choice.py can be read off a run
on the machine at hand. The last columns say which candidate was fastest and which one "auto" picks: where they
differ the model's crossover is off at that size (within the noise of near-equal candidates, which the ratio
column shows). The anchor is the library itself: each exact candidate solves the same problem.

Families: ``ridge`` (KernelRidge: cholesky, cg), ``cv`` (KernelRidgeCV k-fold: eigh, multi-shift CG), ``pca``
(KernelPCA, k = 10: dense, lanczos), ``sparse-pca`` (the same on sparse rows of 20,000 columns with ``--dims``
values stored per row, Lanczos matrix-free: a memory limit short of the packed triangle), ``gpr`` (one evaluation
of a Gaussian process regressor's likelihood and gradient, as a fit with an optimiser repeats it, beside the model's
price of one: cholesky, cg), ``svm`` (SVC: whole, batched; the model prices the SMO's sweeps, not the kernel
columns). rbf kernels on standard normal data of ``--dims`` features (``svm``: ``make_classification``).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import alternate, machine_info, markdown_table, median, parse_ints, parse_list, print_machine  # noqa: E402

DEFAULT_SIZES = {"ridge": [1000, 2000, 4000, 8000], "cv": [500, 1000, 2000], "pca": [100, 200, 400, 800, 1600, 3200],
                 "sparse-pca": [1000, 2000, 4000], "gpr": [1000, 2000, 4000], "svm": [500, 1000, 1500, 2000, 3000]}


def _data(n: int, d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)


def ridge_runs(n: int, d: int):
    """{candidate: (fit function, reading of a fitted model)} for KernelRidge."""
    from fastkpca import CG, KernelRidge

    X, y = _data(n, d)

    def run(solver):
        seeded = CG(random_state=0) if solver == "cg" else solver  # cg's pivots seeded; auto's are not
        return lambda: KernelRidge(alpha=1e-2, kernel="rbf", gamma=1 / d, solver=seeded).fit(X, y)

    def read(model):
        return model.solver_info_["choice"], {"iterations": model.solver_info_.get("iterations")}

    return {"cholesky": run("cholesky"), "cg": run("cg")}, read, run("auto")


def cv_runs(n: int, d: int):
    """KernelRidgeCV (5 folds, 5 alphas), each method forced through the model's constant."""
    from fastkpca import KernelRidgeCV
    from fastkpca.solvers import choice

    X, y = _data(n, d)
    alphas = [1e-3, 1e-2, 1e-1, 1.0, 10.0]

    def run(iterations):
        def fit():
            saved = choice.MULTISHIFT_ITERATIONS
            choice.MULTISHIFT_ITERATIONS = saved if iterations is None else iterations
            try:
                return KernelRidgeCV(alphas=alphas, kernel="rbf", gammas=[1 / d], cv=5).fit(X, y)
            finally:
                choice.MULTISHIFT_ITERATIONS = saved
        return fit

    def read(model):
        return model.solver_info_["choice"], {}

    return {"eigh": run(10**9), "multishift-cg": run(0)}, read, run(None)


def pca_runs(n: int, d: int):
    """KernelPCA, 10 components."""
    from fastkpca import KernelPCA

    X, _ = _data(n, d)

    def run(solver):
        return lambda: KernelPCA(n_components=10, kernel="rbf", gamma=1 / d, eigen_solver=solver,
                                 random_state=0).fit(X)

    def read(model):
        return model.solver_info_["choice"], {"passes": model.solver_info_.get("n_passes")}

    return {"dense": run("dense"), "lanczos": run("lanczos")}, read, run("auto")


def sparse_pca_runs(n: int, d: int):
    """KernelPCA, 10 components, on sparse rows of 20,000 columns with ``d`` stored values each (a text-like
    matrix: the model's cost of a sparse kernel entry, SPARSE_VALUE_FLOPS)."""
    from scipy import sparse

    from fastkpca import KernelPCA

    from fastkpca.operators.storage import fixed_bytes, working_copies_bytes
    from fastkpca.solvers.krylov import lanczos

    X = sparse.random(n, 20_000, density=d / 20_000, format="csr", random_state=0)
    # Room for the Lanczos basis, the samples and the plan's slack, none for the kernel: matrix-free.
    matrix_free = lanczos.memory_needs(10, n)[1] + fixed_bytes(n, X.shape[1], 8, working_copies_bytes(X)) + 2**16

    def run(solver):
        limit = matrix_free if solver == "lanczos" else None
        return lambda: KernelPCA(n_components=10, kernel="rbf", gamma=1.0, eigen_solver=solver, random_state=0,
                                 memory_limit=limit).fit(X)

    def read(model):
        return model.solver_info_["choice"], {"passes": model.solver_info_.get("n_passes")}

    return {"dense": run("dense"), "lanczos": run("lanczos")}, read, run("auto")


def gpr_runs(n: int, d: int):
    """One evaluation of the likelihood and its gradient at the kernel's θ, after a fit without optimiser."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    from fastkpca import GaussianProcessRegressor

    X, y = _data(n, d)
    kernel = ConstantKernel(1.0) * RBF(np.ones(d)) + WhiteKernel(0.1)
    models = {solver: GaussianProcessRegressor(kernel, solver=solver, optimizer=None, random_state=0).fit(X, y)
              for solver in ("cholesky", "cg", "auto")}
    theta = models["auto"].kernel_.theta + 0.1

    def run(solver):
        return lambda: (models[solver].log_marginal_likelihood(theta, eval_gradient=True), models[solver])[1]

    def read(model):
        # the models were fitted without an optimiser, whose choice prices that fit; what is timed here is an
        # evaluation with the gradient, as a fit with an optimiser repeats it: the model's prices and pick for one
        from fastkpca.solvers import choice
        from fastkpca.solvers.gaussian_process import IterativeSettings
        from fastkpca.solvers.gaussian_process.rank import DEFAULT_RANK

        evaluation = choice.gaussian_process_regression(
            "auto", n=n, d=d, columns=1 + IterativeSettings().probes, rank=DEFAULT_RANK, exact_possible=True,
            memory_limit=model.solver_info_["choice"]["memory_limit"])
        return evaluation.as_dict(), {}

    return {"cholesky": run("cholesky"), "cg": run("cg")}, read, run("auto")


def svm_runs(n: int, d: int):
    """SVC (rbf, C=1) on ``make_classification(n, d)``: the whole problem as one working set, or working sets, forced
    through the solver's settings (tests and benchmarks set them; the estimator has no parameter for it). The
    model prices the SMO's sweeps only: the kernel columns, which the whole problem evaluates every one of and the
    working sets only those their variables need, are in the measured seconds, not the predicted."""
    import dataclasses

    from sklearn.datasets import make_classification

    from fastkpca import SVC

    X, y = make_classification(n, d, random_state=0)

    def run(solver):
        class Forced(SVC):
            def _settings(self, threads):
                settings = super()._settings(threads)
                return settings if solver == "auto" else dataclasses.replace(settings, solver=solver)

        return lambda: Forced().fit(X, y)

    def read(model):
        return model.solver_info_["choice"], {"outer steps": model.solver_info_["pairs"][0]["outer_steps"]}

    return {"whole": run("whole"), "batched": run("batched")}, read, run("auto")


FAMILIES = {"ridge": ridge_runs, "cv": cv_runs, "pca": pca_runs, "sparse-pca": sparse_pca_runs, "gpr": gpr_runs,
            "svm": svm_runs}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", default="ridge,cv,pca,gpr")
    parser.add_argument("--sizes", default="", help="sizes for every family asked for (default: each family's)")
    parser.add_argument("--dims", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print_machine(machine_info())
    rows, warmed = [], set()
    for family in parse_list(args.families):
        for n in (parse_ints(args.sizes) if args.sizes else DEFAULT_SIZES[family]):
            runs, read, auto = FAMILIES[family](n, args.dims)
            if family not in warmed:  # the process's first call of each candidate (imports, rates) is not timed
                warmed.add(family)
                for run in runs.values():
                    run()
            results = {}
            times = alternate(runs, args.repeats, keep=lambda name, model: results.setdefault(name, read(model)))
            picked = read(auto())[0]["picked"]
            measured = {name: median(t) for name, t in times.items()}
            fastest = min(measured, key=measured.get)
            for name, seconds in measured.items():
                chosen, figures = results[name]
                predicted = chosen["candidates"][name]["seconds"]
                rows.append({"family": family, "n": n, "candidate": name, "measured": seconds,
                             "predicted": predicted, "ratio": seconds / predicted if predicted else math.nan,
                             "figure": ", ".join(f"{k} {v}" for k, v in figures.items() if v is not None) or "—",
                             "fastest": fastest, "auto": picked})
            print(f"# {family} n={n}: " + ", ".join(f"{k} {v:.3g} s" for k, v in measured.items())
                  + f"; auto picks {picked}", flush=True)
    print(markdown_table(rows, [("family", "family", ""), ("n", "n", ""), ("candidate", "candidate", ""),
                                ("measured s", "measured", ".3g"), ("predicted s", "predicted", ".3g"),
                                ("measured / predicted", "ratio", ".2f"), ("figure", "figure", ""),
                                ("fastest", "fastest", ""), ("auto", "auto", "")]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
