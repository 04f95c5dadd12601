"""GaussianProcessClassifier against scikit-learn's (issue "Gaussian process classification"), every fit in a fresh
process (its own peak RSS), the two libraries alternated:

    python bench/gaussian_process_classification.py                   # agreement; fits at 1,000 and 2,000
    python bench/gaussian_process_classification.py --sizes 1000,2000,5000 --sklearn-sizes 1000,2000
                                                                      # the issue's sizes (about 10 min)
    python bench/gaussian_process_classification.py --sizes "" --agreement-n 0 --cg-fit 5000
                                                                      # solver="cg" against "cholesky"
    python bench/gaussian_process_classification.py --sizes "" --agreement-n 0 --scale 100000
                                                                      # cg past the exact solver's reach
    python bench/gaussian_process_classification.py --sizes "" --agreement-n 0 --solver-costs 500,1000,2000,3000
                                                                      # the cost model's constants

Data (the issue's): X uniform on [−2, 2]⁸, y = [sin(2x₀) + ½x₁² − x₂x₃ + 0.3·N(0, 1) > 0.5]; kernel
``C(1.0) * RBF(np.ones(8))``, scikit-learn's default optimizer; 2,000 test points from the same distribution.

- **agreement**: ``log_marginal_likelihood(theta, eval_gradient=True)`` of both at three random θ (the kernel's
  theta plus U(−0.7, 0.7)) for every natively evaluated form, N = 500 (d = 8); the largest relative
  difference of the value and of any gradient entry, and of ``predict_proba`` at the same θ (fixed kernels).
- **fit**: seconds of the whole fit, likelihood evaluations, the peak RSS growth over the data (the peak RSS,
  reset after the data are made, less the RSS before the fit) in units of N²·8 bytes, the fitted likelihood,
  and held-out accuracy and log loss; scikit-learn only at ``--sklearn-sizes`` (5,000 would take about 40
  minutes and 6 GB).
- **cg fit**: ``solver="cg"`` and ``solver="cholesky"`` fit on the same N samples (fresh processes): seconds,
  the fitted θ's largest difference (log), ``predict_proba``'s largest difference on the test points, and each
  one's accuracy and log loss; then where a difference comes from: the cg solver at the exact fit's θ
  (``optimizer=None``: the solver's own error) and the exact solver from cg's start (the subset fit's θ: the
  path from there).
- **solver costs**: one evaluation of the likelihood and its gradient within a fit (Newton from the mode at a
  θ nearby, as the optimiser's evaluations run) by each solver — the exact one with its Newton steps factored
  and by CG, and cg — at each N, beside the seconds the library's cost model predicts for it
  (solvers/choice.py: gaussian_process_classification, laplace_newton_steps): the measured/predicted ratios,
  and the Newton steps and products the model counts, are what its constants are set from. The median of
  REPEATS evaluations, at the fitted θ of an exact fit on 500 samples. On a machine others are using, run it
  on one thread (``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1``) and read the CPU seconds: a process's own CPU
  time is what it would take alone, and the model's rates (``gemm_rate``, the best of five short products once
  the clock has risen) are then one thread's too.
- **scale**: ``solver="cg"``, ``memory_limit="2GB"`` (``--memory-limit``), the default start (an exact fit on
  3,000 samples, beyond 30,000 samples then a cg fit on √(3,000·n), then L-BFGS-B on all of them), against an
  exact fit on a random 5,000-sample subset (timed apart): seconds, evaluations, peak RSS growth over the
  data, accuracy and log loss on 500 test points (N_TEST_SCALE), predict_proba's seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import _common as C  # noqa: E402

D = 8
N_TEST = 2000
#: Held-out points of the scale table: a cg model's predictive variance is a CG solve per point (about 1 s
#: each at 100,000 samples on 2 cores), so 2,000 would take longer than the fit.
N_TEST_SCALE = 500


def data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, D))
    latent = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2 - X[:, 2] * X[:, 3] + 0.3 * rng.standard_normal(n)
    return X, (latent > 0.5).astype(int)


def kernel():
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    return ConstantKernel(1.0) * RBF(np.ones(D))


def forms() -> dict:
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

    return {"C·RBF(ARD)": kernel(), "C·RBF + White": ConstantKernel(1.5) * RBF(0.8) + WhiteKernel(0.1),
            "C·Matern½": ConstantKernel(0.7) * Matern(0.8, nu=0.5),
            "C·Matern3/2(ARD)": ConstantKernel(0.7) * Matern(np.linspace(0.7, 1.4, D), nu=1.5),
            "C·Matern5/2 + White": ConstantKernel(2.0) * Matern(1.0, nu=2.5) + WhiteKernel(0.2)}


def _classes(lib: str):
    if lib == "sklearn":
        from sklearn.gaussian_process import GaussianProcessClassifier
    else:
        from fastkpca import GaussianProcessClassifier
    return GaussianProcessClassifier


def child_fit(spec: dict) -> dict:
    from sklearn.metrics import log_loss

    warnings.simplefilter("ignore")
    X, y = data(spec["n"])
    X_test, y_test = data(spec.get("n_test", N_TEST), seed=1)
    gpc = _classes(spec["lib"])
    gpc(kernel()).fit(X[:50], y[:50])  # first-use imports and the native module
    if spec.get("log"):
        _log_evaluations(gpc, spec["log"])
    C.reset_peak_rss()
    before = C.rss_bytes()
    start = time.perf_counter()
    k = kernel()
    if spec.get("theta") is not None:  # a start other than the kernel's initial θ
        k.theta = np.asarray(spec["theta"], dtype=float)
    est = gpc(k, **spec.get("params", {})).fit(X, y)
    seconds = time.perf_counter() - start
    peak = C.peak_rss_bytes() - before
    begin = time.perf_counter()
    proba = est.predict_proba(X_test)
    predict_seconds = time.perf_counter() - begin
    info = getattr(est.base_estimator_, "solver_info_", {})
    at = spec.get("evaluate_at")
    return {"lml_at": None if at is None else float(est.log_marginal_likelihood(np.asarray(at))),
            "seconds": seconds, "predict_proba_seconds": predict_seconds, "peak_bytes": peak,
            "lml": float(est.log_marginal_likelihood_value_),
            "theta": est.kernel_.theta.tolist(), "accuracy": float(np.mean(est.predict(X_test) == y_test)),
            "log_loss": float(log_loss(y_test, proba[:, 1])), "evaluations": info.get("evaluations"),
            "newton_steps": info.get("newton_steps"), "proba": proba[:, 1].tolist(),
            "info": {key: info.get(key) for key in ("solver", "start", "products", "standard_error", "stages")}}


def _log_evaluations(gpc, path: str) -> None:
    """Append a line per likelihood evaluation of the binary models to ``path`` (a long fit's progress)."""
    from fastkpca.estimators import gaussian_process_classifier as module

    original = module._BinaryLaplaceClassifier._evaluate
    begin = time.perf_counter()

    def logged(self, theta, eval_gradient, start):
        value, gradient = original(self, theta, eval_gradient, start)
        with open(path, "a") as f:
            f.write(f"{time.perf_counter() - begin:8.1f} s  n={len(self._labels)}  lml={float(value):.4f}  "
                    f"theta={np.round(theta, 3).tolist()}\n")
        return value, gradient

    module._BinaryLaplaceClassifier._evaluate = logged


def child_subset_fit(spec: dict) -> dict:
    """An exact fit on a random ``size`` of the ``n`` training samples (the scale table's reference)."""
    from sklearn.metrics import log_loss

    from fastkpca import GaussianProcessClassifier

    warnings.simplefilter("ignore")
    X, y = data(spec["n"])
    X_test, y_test = data(spec.get("n_test", N_TEST), seed=1)
    index = np.random.default_rng(5).choice(spec["n"], spec["size"], replace=False)
    start = time.perf_counter()
    est = GaussianProcessClassifier(kernel(), solver="cholesky").fit(X[index], y[index])
    seconds = time.perf_counter() - start
    proba = est.predict_proba(X_test)
    return {"seconds": seconds, "theta": est.kernel_.theta.tolist(),
            "accuracy": float(np.mean(est.predict(X_test) == y_test)), "log_loss": float(log_loss(y_test, proba[:, 1])),
            "proba": proba[:, 1].tolist()}


#: Evaluations timed per solver and size (solver costs: their median).
REPEATS = 3


def solver_costs(sizes: list) -> list[dict]:
    """One within-fit evaluation of each Laplace solver at each size, beside the cost model's prediction (the
    module's documentation)."""
    from fastkpca import GaussianProcessClassifier, kernels
    from fastkpca.engines.local import LOCAL
    from fastkpca.solvers import choice
    from fastkpca.solvers.gaussian_process import ExactLaplace, IterativeLaplace, LaplaceSettings, laplace_choice

    warnings.simplefilter("ignore")
    X, y = data(500)
    theta = GaussianProcessClassifier(kernel(), solver="cholesky").fit(X, y).kernel_.theta
    rows = []
    print(f"gemm_rate {choice.gemm_rate() / 1e9:.1f} GFlop/s\n")
    print("| N | solver | measured s | CPU s | predicted s | measured ÷ predicted | CPU ÷ predicted | Newton steps | "
          "products | cg's rank |\n|---|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        X, y = data(n)
        labels = y.astype(np.float64)
        native = kernels.make(kernel(), n_features=0)
        near, at = native.with_theta(theta + 0.01), native.with_theta(theta)
        settings = LaplaceSettings()
        model = laplace_choice("auto", n, D, settings, memory_limit=2**40)
        steps = choice.laplace_newton_steps(n)

        def predicted(name: str, newton_steps: int, n=n, settings=settings, model=model) -> float:
            """The model's seconds for the solver, its exact Newton steps as many as measured."""
            if name == "cg":
                return next(c.seconds for c in model.candidates if c.name == "cg")
            exact = choice.gaussian_process_classification(
                "auto", n=n, d=D, probes=settings.probes, rank=1, cg_bytes=1, memory_limit=2**40,
                steps=newton_steps).candidates[0].seconds
            ways = {c.name: c.seconds for c in choice.laplace_newton_steps(n, steps=newton_steps).candidates}
            return exact - min(ways.values()) + ways[name.rsplit(" ", 1)[-1]]

        solvers = {f"cholesky, steps by {name}": lambda name=name: ExactLaplace(X, labels, memory_limit=2**40,
                                                                               newton_steps=name)
                   for name in ("factor", "cg")}
        solvers["cg"] = lambda: IterativeLaplace(LOCAL.samples(X), labels, settings, memory_limit=2**40,
                                                 random_state=0)
        for name, make in solvers.items():
            solver = make()
            _, _, mode = solver.evaluate(near, ("settled", None), 100, True)  # the mode at a θ nearby
            times, cpu, counts = [], [], []
            for _ in range(REPEATS):
                before = dict(solver.info())
                begin, begin_cpu = time.perf_counter(), time.process_time()
                _, _, found = solver.evaluate(at, ("settled", mode.f), 100, True)
                times.append(time.perf_counter() - begin)
                cpu.append(time.process_time() - begin_cpu)
                after = solver.info()
                products = (after.get("products", 0) - before.get("products", 0)
                            + after.get("newton", {}).get("cg_products", 0)
                            - before.get("newton", {}).get("cg_products", 0))
                counts.append((found.iterations, products))
            seconds, cpu_seconds = float(np.median(times)), float(np.median(cpu))
            expected = predicted(name, counts[-1][0])
            row = {"n": n, "solver": name, "seconds": seconds, "cpu_seconds": cpu_seconds,
                   "predicted": expected, "ratio": seconds / expected,
                   "cpu_ratio": cpu_seconds / expected, "newton_steps": counts[-1][0],
                   "products": counts[-1][1], "rank": solver.info().get("preconditioner", {}).get("rank")}
            rows.append(row)
            print(f"| {n:,} | {name} | {seconds:.4f} | {cpu_seconds:.4f} | {row['predicted']:.4f} | "
                  f"{row['ratio']:.2f} | {row['cpu_ratio']:.2f} | {row['newton_steps']} | {row['products']} | "
                  f"{row['rank'] or ''} |",
                  flush=True)
        print(f"| {n:,} | auto picks | {model.picked} (steps by {steps.picked}) | | | | | | | |", flush=True)
    return rows


def agreement(n: int) -> list[dict]:
    from sklearn.gaussian_process import GaussianProcessClassifier as Theirs

    from fastkpca import GaussianProcessClassifier as Ours

    X, y = data(n)
    X_test = data(500, seed=1)[0]
    rng = np.random.default_rng(0)
    rows = []
    for name, k in forms().items():
        ours, theirs = Ours(k, optimizer=None).fit(X, y), Theirs(k, optimizer=None).fit(X, y)
        value_rel = gradient_rel = proba = 0.0
        seconds = {"fastkpca": 0.0, "sklearn": 0.0}
        for _ in range(3):
            theta = k.theta + rng.uniform(-0.7, 0.7, k.theta.shape)
            t = time.perf_counter()
            a, ga = ours.log_marginal_likelihood(theta, eval_gradient=True)
            seconds["fastkpca"] += time.perf_counter() - t
            t = time.perf_counter()
            b, gb = theirs.log_marginal_likelihood(theta, eval_gradient=True)
            seconds["sklearn"] += time.perf_counter() - t
            value_rel = max(value_rel, abs(a - b) / abs(b))
            gradient_rel = max(gradient_rel, float(np.max(np.abs(ga - gb) / np.maximum(np.abs(gb), 1e-300))))
            fixed = k.clone_with_theta(theta)
            proba = max(proba, float(np.abs(Ours(fixed, optimizer=None).fit(X, y).predict_proba(X_test)
                                            - Theirs(fixed, optimizer=None).fit(X, y).predict_proba(X_test)).max()))
        rows.append({"form": name, "value_rel": value_rel, "gradient_rel": gradient_rel, "proba_abs": proba,
                     "seconds": seconds})
    return rows


def cg_fit_table(n: int, log: str | None, verdicts: list) -> dict:
    runs = {"cg": C.run_child(__file__, "fit", {"n": n, "lib": "fastkpca", "log": log,
                                                "params": {"solver": "cg", "random_state": 0}}, timeout=7200)}
    at = runs["cg"].get("theta")
    runs["cholesky"] = C.run_child(__file__, "fit", {"n": n, "lib": "fastkpca", "evaluate_at": at,
                                                     "params": {"solver": "cholesky", "random_state": 0}},
                                   timeout=7200)
    print(f"\n## solver='cg' against solver='cholesky', N = {n:,} (C·RBF(ARD), L-BFGS-B)\n")
    if any("failed" in r for r in runs.values()):
        print(f"failed: {[r.get('failed', '')[-300:] for r in runs.values()]}")
        return {"n": n, "runs": runs}
    exact, cg = runs["cholesky"], runs["cg"]
    theta = float(np.max(np.abs(np.subtract(cg["theta"], exact["theta"]))))
    # the hyperparameters y depends on: C and the length scales of x₀…x₃ (the others drift along a flat
    # likelihood towards their upper bound, in either solver)
    relevant = float(np.max(np.abs(np.subtract(cg["theta"][:5], exact["theta"][:5]))))
    proba = float(np.max(np.abs(np.subtract(cg["proba"], exact["proba"]))))
    print("| solver | seconds | evaluations | θ | lml | accuracy | log loss |\n|---|---|---|---|---|---|---|")
    for name, r in runs.items():
        print(f"| {name} | {r['seconds']:.1f} | {r['evaluations']} | {np.round(r['theta'], 3).tolist()} | "
              f"{r['lml']:.3f} | {r['accuracy']:.4f} | {r['log_loss']:.4f} |")
    print(f"\nθ's largest difference (log): {theta:.3f} (C and the length scales of x₀…x₃: {relevant:.3f}); "
          f"the exact likelihood at cg's θ: {exact['lml_at']:.4f} (at its own: {exact['lml']:.4f}); "
          f"predict_proba's largest difference: {proba:.4f}\n")
    verdicts.append((f"cg θ at N = {n:,} within 0.05 (log) of the exact fit's", theta <= 0.05, f"{theta:.3f}"))
    verdicts.append((f"cg θ at N = {n:,} within 0.05 (log), the hyperparameters y depends on", relevant <= 0.05,
                     f"{relevant:.3f}"))
    verdicts.append((f"cg predict_proba at N = {n:,} within 0.01", proba <= 0.01, f"{proba:.4f}"))
    # Where the difference comes from: the cg solver at the exact fit's θ (its own error), and the exact solver
    # from cg's start (the subset fit's θ: the path L-BFGS-B takes from there)
    start_theta = (cg["info"].get("start") or {}).get("theta")
    checks = {"cg at the exact fit's θ": {"theta": exact["theta"], "params": {"solver": "cg", "optimizer": None,
                                                                            "random_state": 0}}}
    if start_theta is not None:
        checks["cholesky from cg's start"] = {"theta": start_theta, "params": {"solver": "cholesky"}}
    sources = {}
    for name, spec in checks.items():
        r = C.run_child(__file__, "fit", {"n": n, "lib": "fastkpca", **spec}, timeout=7200)
        if "failed" in r:
            print(f"{name}: failed: {r['failed'][-300:]}")
            continue
        sources[name] = {"theta": r["theta"], "lml": r["lml"], "evaluations": r["evaluations"],
                         "proba_max_abs_diff": float(np.max(np.abs(np.subtract(r["proba"], exact["proba"]))))}
    if sources:
        print("| where from | evaluations | θ | lml (its solver's) | predict_proba's largest difference from the "
              "exact fit |\n|---|---|---|---|---|")
        for name, r in sources.items():
            print(f"| {name} | {r['evaluations']} | {np.round(r['theta'], 3).tolist()} | {r['lml']:.4f} | "
                  f"{r['proba_max_abs_diff']:.2e} |")
        print()
    for r in runs.values():
        r.pop("proba")
    return {"n": n, "runs": runs, "theta_max_abs_diff": theta, "proba_max_abs_diff": proba, "sources": sources}


def scale_table(sizes: list, limit: str, log: str | None, verdicts: list) -> list:
    rows = []
    print("\n## solver='cg' past the exact solver, memory_limit=" + limit + f" ({N_TEST_SCALE} held-out points)\n")
    print("| N | seconds | start (samples, s) | evaluations | products | peak GiB | accuracy (cg / exact on 5,000) "
          "| log loss (cg / exact on 5,000) | lml |\n|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        fit = C.run_child(__file__, "fit", {"n": n, "lib": "fastkpca", "log": log, "n_test": N_TEST_SCALE,
                                            "params": {"solver": "cg", "memory_limit": limit, "random_state": 0}},
                          timeout=10800)
        subset = C.run_child(__file__, "subset_fit", {"n": n, "size": 5000, "n_test": N_TEST_SCALE}, timeout=7200)
        if "failed" in fit or "failed" in subset:
            print(f"| {n:,} | failed: {fit.get('failed', '')[-300:]} {subset.get('failed', '')[-300:]} |")
            rows.append({"n": n, "fit": fit, "subset": subset})
            continue
        fit.pop("proba"), subset.pop("proba")
        start = fit["info"]["start"] or {}
        peak = fit["peak_bytes"] / 2**30
        print(f"| {n:,} | {fit['seconds']:.0f} | {start.get('samples')}, {start.get('seconds', 0):.0f} | "
              f"{fit['evaluations']} | {fit['info']['products']} | {peak:.2f} | {fit['accuracy']:.4f} / "
              f"{subset['accuracy']:.4f} | {fit['log_loss']:.4f} / {subset['log_loss']:.4f} | {fit['lml']:.2f} |",
              flush=True)
        print(f"\n(N = {n:,}: predict_proba of the {N_TEST_SCALE} points took {fit['predict_proba_seconds']:.0f} s; "
              f"θ {np.round(fit['theta'], 3).tolist()})\n", flush=True)
        limit_gib = _limit_bytes(limit) / 2**30
        verdicts.append((f"cg fit at N = {n:,} ≤ 30 minutes", fit["seconds"] <= 1800, f"{fit['seconds']:.0f} s"))
        verdicts.append((f"cg fit at N = {n:,} within {limit}", peak <= limit_gib, f"{peak:.2f} GiB"))
        verdicts.append((f"cg at N = {n:,}: accuracy and log loss better than the 5,000-subset exact fit",
                         fit["accuracy"] > subset["accuracy"] and fit["log_loss"] < subset["log_loss"],
                         f"{fit['accuracy']:.4f} / {subset['accuracy']:.4f}, {fit['log_loss']:.4f} / "
                         f"{subset['log_loss']:.4f}"))
        rows.append({"n": n, "fit": fit, "subset": subset})
    return rows


def _limit_bytes(limit: str) -> int:
    from fastkpca import _validation

    return int(_validation.memory_limit(limit))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=C.parse_ints, default=[1000, 2000], help="N of fastkpca's fits")
    parser.add_argument("--sklearn-sizes", type=C.parse_ints, default=[1000, 2000], help="N of scikit-learn's")
    parser.add_argument("--agreement-n", type=int, default=500, help="0: skip the agreement table")
    parser.add_argument("--cg-fit", type=int, default=0, help="N of solver='cg' against 'cholesky' (0: none)")
    parser.add_argument("--scale", type=C.parse_ints, default=[], help="N of cg fits against a subset's exact fit")
    parser.add_argument("--memory-limit", default="2GB", help="memory_limit of the scale fits")
    parser.add_argument("--solver-costs", type=C.parse_ints, default=[],
                        help="N of one evaluation of each solver timed beside the cost model's prediction")
    parser.add_argument("--log", default=None, help="file the cg fits append each evaluation to")
    parser.add_argument("--out", default=None, help="folder for gaussian_process_classification.json")
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return C.serve_child({"fit": child_fit, "subset_fit": child_subset_fit}, args.child)
    print(f"# GaussianProcessClassifier against scikit-learn; CPU: {C.cpu_description()}\n")
    payload: dict = {"machine": C.machine_info()}
    verdicts = []
    if args.agreement_n:
        rows = agreement(args.agreement_n)
        payload["agreement"] = rows
        print(f"## log_marginal_likelihood(theta, eval_gradient=True) at N = {args.agreement_n}, 3 random θ\n")
        print("| kernel | value, rel. difference | gradient, largest entry's rel. difference | predict_proba, "
              "largest abs. difference | fastkpca s | scikit-learn s |\n|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['form']} | {r['value_rel']:.1e} | {r['gradient_rel']:.1e} | {r['proba_abs']:.1e} | "
                  f"{r['seconds']['fastkpca']:.3f} | {r['seconds']['sklearn']:.3f} |")
        print()
        worst = max(max(r["value_rel"], r["gradient_rel"]) for r in rows)
        verdicts.append(("likelihood and gradient ≤ 1e-9 relative", worst <= 1e-9, f"{worst:.1e}"))
        worst = max(r["proba_abs"] for r in rows)
        verdicts.append(("predict_proba ≤ 1e-6", worst <= 1e-6, f"{worst:.1e}"))
    fits = []
    if args.sizes:
        print("## Whole fits (C·RBF(ARD), L-BFGS-B), each in a fresh process\n")
        print("| N | fastkpca s | scikit-learn s | speed-up | evaluations (ours/theirs) | Newton steps (ours) | "
              "peak ÷ N²·8 B (ours/theirs) | lml (ours/theirs) | accuracy (ours/theirs) | log loss (ours/theirs) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        libs = ("fastkpca", "sklearn") if n in args.sklearn_sizes else ("fastkpca",)
        runs = {lib: C.run_child(__file__, "fit", {"n": n, "lib": lib}, timeout=7200) for lib in libs}
        failed = {lib: r["failed"][-300:] for lib, r in runs.items() if "failed" in r}
        if failed:
            print(f"| {n} | failed: {failed!r} |", flush=True)
            fits.append({"n": n, "failed": failed})
            continue
        ours, theirs = runs["fastkpca"], runs.get("sklearn")

        def pair(key, spec, ours=ours, theirs=theirs):
            return f"{ours[key]:{spec}}" + ("" if theirs is None else f" / {theirs[key]:{spec}}")

        units = {lib: r["peak_bytes"] / (n * n * 8) for lib, r in runs.items()}
        speedup = None if theirs is None else theirs["seconds"] / ours["seconds"]
        evaluations = f"{ours['evaluations']}" + ("" if theirs is None else " / —")
        print(f"| {n:,} | {ours['seconds']:.1f} | {'—' if theirs is None else format(theirs['seconds'], '.1f')} | "
              f"{'—' if speedup is None else format(speedup, '.1f') + '×'} | {evaluations} | {ours['newton_steps']} | "
              f"{units['fastkpca']:.2f}" + ("" if theirs is None else f" / {units['sklearn']:.2f}") + " | "
              f"{pair('lml', '.3f')} | {pair('accuracy', '.3f')} | {pair('log_loss', '.4f')} |", flush=True)
        fits.append({"n": n, "runs": runs, "speedup": speedup, "peak_units": units})
        if speedup is not None:
            verdicts.append((f"fit at N = {n:,} ≥ 10× scikit-learn", speedup >= 10, f"{speedup:.1f}×"))
            verdicts.append((f"fitted likelihood at N = {n:,} ≥ scikit-learn's − 1e-6·|value|",
                             ours["lml"] >= theirs["lml"] - 1e-6 * abs(theirs["lml"]),
                             f"{ours['lml']:.6f} against {theirs['lml']:.6f}"))
        if n == 5000:
            verdicts.append(("fit at N = 5,000 ≤ 4 minutes", ours["seconds"] <= 240, f"{ours['seconds']:.0f} s"))
        verdicts.append((f"peak at N = {n:,} ≤ 3·N²·8 B", units["fastkpca"] <= 3, f"{units['fastkpca']:.2f}·N²·8 B"))
    payload["fits"] = fits
    if args.cg_fit:
        payload["cg_fit"] = cg_fit_table(args.cg_fit, args.log, verdicts)
    if args.scale:
        payload["scale"] = scale_table(args.scale, args.memory_limit, args.log, verdicts)
    if args.solver_costs:
        print("\n## One evaluation of each solver against the cost model (solvers/choice.py)\n")
        payload["solver_costs"] = solver_costs(args.solver_costs)
    C.print_verdicts(verdicts)
    if args.out:
        C.write_json(str(Path(args.out) / "gaussian_process_classification.json"), payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
