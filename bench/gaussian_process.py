"""GaussianProcessRegressor against scikit-learn's (issue "Gaussian process regression"), every fit in a fresh
process (its own peak RSS), the two libraries alternated:

    python bench/gaussian_process.py                        # agreement, and fits at N = 1,000 and 2,000
    python bench/gaussian_process.py --sizes 2000,5000      # the issue's fit sizes (scikit-learn: ~8 min at 5,000)
    python bench/gaussian_process.py --evaluation 20000     # one exact likelihood + gradient at N = 20,000
    python bench/gaussian_process.py --sizes "" --agreement-n 0 --cg-agreement 5000 --cg-fits 5000
                                                            # solver="cg" against the Cholesky solver
    python bench/gaussian_process.py --sizes "" --agreement-n 0 --cg-products 5000,20000 --ranks 64,256,1024
                                                            # cg's products per solve against rank and N

Data: X ~ N(0, 1) with d = 8, y = sin(2x₀) + ½x₁² − x₂x₃ + N(0, 0.1²); kernel ``C(1.0) * RBF(np.ones(8)) +
WhiteKernel(0.1)``, ``normalize_y=True``, scikit-learn's default optimizer and ``alpha``; 500 test points from
the same distribution.

- **agreement**: ``log_marginal_likelihood(theta, eval_gradient=True)`` of both at three random θ (the kernel's
  theta plus U(−0.7, 0.7)) for every natively evaluated form, N = 1,000; the largest relative difference of the
  value and of any gradient entry.
- **fit**: seconds of the whole fit, likelihood evaluations, seconds per evaluation, peak RSS growth over the data
  (the peak RSS, reset after the data are made, less the RSS before the fit) in units of N²·8 bytes, and the
  fitted θ, predictions and standard deviations of the two compared.
- **cg agreement** (issue "Gaussian processes past the Cholesky wall"): fastkpca's ``solver="cg"`` against its
  ``solver="cholesky"`` at three random θ (theta + U(−0.7, 0.7)) for C·RBF(ARD) + White and C·Matern5/2(ARD) +
  White: the likelihood's relative difference and its reported standard error, the gradient's cosine and
  largest relative entry difference, block products per evaluation, seconds.
- **cg fits**: both solvers fit (fresh processes): seconds, evaluations, products, peak, the fitted
  hyperparameters' largest relative difference (exp θ), test RMSE against the noiseless function and the
  standard deviations' largest relative difference.
- **cg products**: at a fixed θ (C·RBF(ARD) + White, noise 0.01 of normalised targets), for each N and
  preconditioner rank: the block products (and the largest column's iterations) of one likelihood + gradient
  evaluation at the training tolerance, and of a final solve to 1e-6 from zero; and the floor, the mean residual
  diagonal of the rank-r factor over the noise (the iterations stay high while it is well above 1).
- **evaluation**: fastkpca only (scikit-learn would need about 30·N²·8 bytes): a fit with ``optimizer=None``
  (one factor), then one ``log_marginal_likelihood(theta, eval_gradient=True)`` timed; the process's peak RSS
  growth in N²·8 bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

D = 8
N_TEST = 500


def data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2 - X[:, 2] * X[:, 3] + 0.1 * rng.standard_normal(n)
    return X, y


def kernel():
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    return ConstantKernel(1.0) * RBF(np.ones(D)) + WhiteKernel(0.1)


def forms() -> dict:
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel as Ck, Matern, WhiteKernel

    ones = np.ones(D)
    return {
        "C·RBF(ARD) + White": Ck(1.0) * RBF(ones) + WhiteKernel(0.1),
        "C·RBF + White": Ck(1.0) * RBF(1.0) + WhiteKernel(0.1),
        "C·Matern½(ARD) + White": Ck(1.0) * Matern(ones, nu=0.5) + WhiteKernel(0.1),
        "C·Matern3/2 + White": Ck(1.0) * Matern(1.0, nu=1.5) + WhiteKernel(0.1),
        "C·Matern5/2(ARD) + White": Ck(1.0) * Matern(ones, nu=2.5) + WhiteKernel(0.1),
        "C₁·RBF + C₂·Matern5/2(ARD) + White": Ck(1.0) * RBF(2.0) + Ck(0.5) * Matern(ones, nu=2.5) + WhiteKernel(0.1),
    }


def _classes(lib: str):
    if lib == "sklearn":
        from sklearn.gaussian_process import GaussianProcessRegressor
    else:
        from fastkpca import GaussianProcessRegressor
    return GaussianProcessRegressor


def child_fit(spec: dict) -> dict:
    warnings.simplefilter("ignore")
    X, y = data(spec["n"])
    new = data(N_TEST, seed=1)[0]
    gpr = _classes(spec["lib"])
    gpr(kernel(), normalize_y=True).fit(X[:50], y[:50])  # first-use imports and the native module
    calls = [0]
    original = gpr.log_marginal_likelihood

    def counted(self, *args, **kwargs):
        calls[0] += 1
        return original(self, *args, **kwargs)

    gpr.log_marginal_likelihood = counted
    C.reset_peak_rss()
    before = C.rss_bytes()
    start = time.perf_counter()
    est = gpr(kernel(), normalize_y=True).fit(X, y)
    seconds = time.perf_counter() - start
    peak = C.peak_rss_bytes() - before
    gpr.log_marginal_likelihood = original
    mean, std = est.predict(new, return_std=True)
    if spec.get("save"):
        np.savez(spec["save"], theta=est.kernel_.theta, mean=mean, std=std)
    return {"seconds": seconds, "evaluations": calls[0], "peak_bytes": peak,
            "lml": float(est.log_marginal_likelihood_value_)}


def child_evaluation(spec: dict) -> dict:
    from fastkpca import GaussianProcessRegressor

    X, y = data(spec["n"])
    C.reset_peak_rss()
    before = C.rss_bytes()
    start = time.perf_counter()
    est = GaussianProcessRegressor(kernel(), normalize_y=True, optimizer=None).fit(X, y)
    fit_seconds = time.perf_counter() - start
    theta = est.kernel_.theta + 0.1
    start = time.perf_counter()
    value, gradient = est.log_marginal_likelihood(theta, eval_gradient=True)
    seconds = time.perf_counter() - start
    peak = C.peak_rss_bytes() - before
    return {"seconds": seconds, "fit_seconds": fit_seconds, "peak_bytes": peak, "value": float(value),
            "gradient": gradient.tolist()}


def agreement(n: int) -> list[dict]:
    """Both libraries' likelihood and gradient at random θ, in this process."""
    from sklearn.gaussian_process import GaussianProcessRegressor as Theirs

    from fastkpca import GaussianProcessRegressor as Ours

    X, y = data(n)
    rows = []
    for name, k in forms().items():
        ours = Ours(k, optimizer=None, normalize_y=True).fit(X, y)
        theirs = Theirs(k, optimizer=None, normalize_y=True).fit(X, y)
        rng = np.random.default_rng(1)
        value_rel = grad_rel = 0.0
        t_ours = t_theirs = 0.0
        for _ in range(3):
            theta = k.theta + rng.uniform(-0.7, 0.7, k.theta.shape)
            t0 = time.perf_counter()
            a, ga = ours.log_marginal_likelihood(theta, eval_gradient=True)
            t1 = time.perf_counter()
            b, gb = theirs.log_marginal_likelihood(theta, eval_gradient=True)
            t2 = time.perf_counter()
            t_ours, t_theirs = t_ours + t1 - t0, t_theirs + t2 - t1
            value_rel = max(value_rel, abs(a - b) / abs(b))
            grad_rel = max(grad_rel, float(np.max(np.abs(ga - gb) / np.abs(gb))))
        rows.append({"form": name, "value_rel": value_rel, "gradient_rel": grad_rel,
                     "seconds": {"fastkpca": t_ours / 3, "sklearn": t_theirs / 3}})
    return rows


CG_FORMS = ("C·RBF(ARD) + White", "C·Matern5/2(ARD) + White")


def cg_agreement(n: int) -> list[dict]:
    """solver="cg" against solver="cholesky" (both fastkpca), in this process."""
    from fastkpca import GaussianProcessRegressor as Ours

    X, y = data(n)
    rows = []
    for name in CG_FORMS:
        k = forms()[name]
        exact = Ours(k, optimizer=None, normalize_y=True, solver="cholesky").fit(X, y)
        cg = Ours(k, optimizer=None, normalize_y=True, solver="cg", random_state=0).fit(X, y)
        rng = np.random.default_rng(1)
        for _ in range(3):
            theta = k.theta + rng.uniform(-0.7, 0.7, k.theta.shape)
            t0 = time.perf_counter()
            a, ga = exact.log_marginal_likelihood(theta, eval_gradient=True)
            t1 = time.perf_counter()
            before = cg._iterative.figures["products"]
            b, gb = cg.log_marginal_likelihood(theta, eval_gradient=True)
            t2 = time.perf_counter()
            rows.append({"form": name, "value_rel": abs(a - b) / abs(a),
                         "standard_error_rel": cg._iterative.figures["standard_error"] / abs(a),
                         "cosine": float(ga @ gb / np.linalg.norm(ga) / np.linalg.norm(gb)),
                         "gradient_rel": float(np.max(np.abs(ga - gb)) / np.max(np.abs(ga))),
                         "products": cg._iterative.figures["products"] - before,
                         "seconds": {"cholesky": t1 - t0, "cg": t2 - t1}})
    return rows


def child_cg_fit(spec: dict) -> dict:
    from fastkpca import GaussianProcessRegressor

    warnings.simplefilter("ignore")
    X, y = data(spec["n"])
    new = data(N_TEST, seed=1)[0]
    truth = np.sin(2 * new[:, 0]) + 0.5 * new[:, 1] ** 2 - new[:, 2] * new[:, 3]
    GaussianProcessRegressor(forms()[spec["form"]], normalize_y=True).fit(X[:50], y[:50])
    C.reset_peak_rss()
    before = C.rss_bytes()
    start = time.perf_counter()
    est = GaussianProcessRegressor(forms()[spec["form"]], normalize_y=True, solver=spec["solver"],
                                   random_state=0, memory_limit=spec.get("memory_limit")).fit(X, y)
    seconds = time.perf_counter() - start
    peak = C.peak_rss_bytes() - before
    mean, std = est.predict(new, return_std=True)
    np.savez(spec["save"], theta=est.kernel_.theta, mean=mean, std=std)
    info = est.solver_info_
    return {"seconds": seconds, "evaluations": info["evaluations"], "products": info.get("products", 0),
            "peak_bytes": peak, "rmse": float(np.sqrt(np.mean((mean - truth) ** 2))),
            "lml": float(est.log_marginal_likelihood_value_)}


def cg_fits(n: int, verdicts: list) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for form in CG_FORMS:
            runs = {}
            for solver in ("cholesky", "cg"):
                spec = {"n": n, "form": form, "solver": solver, "save": str(Path(tmp) / f"{solver}.npz")}
                runs[solver] = C.run_child(__file__, "cg_fit", spec, timeout=7200)
            if any("failed" in r for r in runs.values()):
                print(f"| {form} | {n:,} | failed: {runs!r} |")
                rows.append({"form": form, "n": n, "failed": runs})
                continue
            a, b = np.load(str(Path(tmp) / "cg.npz")), np.load(str(Path(tmp) / "cholesky.npz"))
            theta_rel = float(np.max(np.abs(np.exp(a["theta"] - b["theta"]) - 1)))
            std_rel = float(np.max(np.abs(a["std"] - b["std"]) / b["std"]))
            rmse_rel = runs["cg"]["rmse"] / runs["cholesky"]["rmse"] - 1
            r = {"form": form, "n": n, "runs": runs, "theta_rel": theta_rel, "std_rel": std_rel, "rmse_rel": rmse_rel}
            rows.append(r)
            print(f"| {form} | {n:,} | {runs['cholesky']['seconds']:.1f} / {runs['cg']['seconds']:.1f} | "
                  f"{runs['cholesky']['evaluations']} / {runs['cg']['evaluations']} | {runs['cg']['products']} | "
                  f"{runs['cholesky']['peak_bytes'] / 2**30:.2f} / {runs['cg']['peak_bytes'] / 2**30:.2f} | "
                  f"{theta_rel:.1e} | {runs['cholesky']['rmse']:.4f} / {runs['cg']['rmse']:.4f} ({rmse_rel:+.1%}) | "
                  f"{std_rel:.1e} |", flush=True)
            verdicts.append((f"cg fit {form} N = {n:,}: θ within 5%", theta_rel <= 0.05, f"{theta_rel:.1e}"))
            verdicts.append((f"cg fit {form} N = {n:,}: RMSE within 1%", abs(rmse_rel) <= 0.01, f"{rmse_rel:+.2%}"))
            verdicts.append((f"cg fit {form} N = {n:,}: std within 5%", std_rel <= 0.05, f"{std_rel:.1e}"))
    return rows


PRODUCTS_FORM = "C·RBF(ARD) + White"


def products_kernel():
    """C·RBF(ARD) + White at a fitted-looking θ for this data: short length scales on the four features the
    function uses, long on the others, noise a hundredth of the (normalised) signal."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    return ConstantKernel(1.0) * RBF(np.array([0.7, 1.0, 1.0, 1.0, 5.0, 5.0, 5.0, 5.0])) + WhiteKernel(0.01)


def child_products(spec: dict) -> dict:
    """One likelihood + gradient evaluation (training tolerance) and one final solve at a given N and
    preconditioner rank: block products of each, seconds, and the preconditioner's floor."""
    from fastkpca import kernels
    from fastkpca.engines.local import LOCAL
    from fastkpca.solvers.gaussian_process_cg import IterativeGaussianProcess, IterativeSettings

    warnings.simplefilter("ignore")
    X, y = data(spec["n"])
    y = (y - y.mean()) / y.std()
    kobj = products_kernel()
    kernel = kernels.make(kobj, n_features=0)
    settings = IterativeSettings(rank=spec["rank"])
    solver = IterativeGaussianProcess(LOCAL.samples(X), y[:, None], 1e-10, settings, memory_limit=2**31,
                                      random_state=0)
    start = time.perf_counter()
    solver.log_marginal_likelihood(kernel, True)
    evaluation = {"products": solver.figures["products"], "seconds": time.perf_counter() - start,
                  "iterations": solver.figures["iterations"][-1]}
    solver.warm = None  # the final solve from zero: its products alone
    start = time.perf_counter()
    solver.solve(kernel)
    final = {"products": solver.figures["products"] - evaluation["products"], "seconds": time.perf_counter() - start}
    pre = solver.preconditioner
    noise = 0.01 + 1e-10
    # P = FFᵀ + D, D = noise + the residual diagonal of the kernel beyond rank r: its mean over the noise is
    # how far P is from K̂ (the iterations fall to a few once it is well below 1)
    floor = float(np.mean(pre.d - noise) / noise)
    return {"evaluation": evaluation, "final": final, "rank": pre.rank, "residual_over_noise": floor,
            "preconditioner_seconds": solver.figures["seconds"]["preconditioner"]}


def products_table(sizes: list, ranks: list) -> list[dict]:
    rows = []
    print(f"\n## Products per solve against rank and N ({PRODUCTS_FORM} at a fixed θ, noise 0.01, normalised "
          "targets; 16 probes)\n")
    print("| N | rank | mean residual diag ÷ noise | likelihood + gradient: products (iterations) | s | "
          "final solve (tol 1e-6): products | s | preconditioner s (both) |\n|---|---|---|---|---|---|---|---|")
    for n in sizes:
        for rank in ranks:
            r = C.run_child(__file__, "products", {"n": n, "rank": rank}, timeout=7200)
            if "failed" in r:
                print(f"| {n:,} | {rank} | failed: {r['failed'][-200:]!r} |", flush=True)
                continue
            e, f = r["evaluation"], r["final"]
            print(f"| {n:,} | {r['rank']} | {r['residual_over_noise']:.2f} | {e['products']} ({e['iterations']}) | "
                  f"{e['seconds']:.1f} | {f['products']} | {f['seconds']:.1f} | {r['preconditioner_seconds']:.1f} |",
                  flush=True)
            rows.append({"n": n, **r})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=C.parse_ints, default=[1000, 2000])
    parser.add_argument("--repeats", type=int, default=1, help="fits per library and size (alternated)")
    parser.add_argument("--agreement-n", type=int, default=1000, help="0: skip the agreement table")
    parser.add_argument("--evaluation", type=int, default=0, help="N of the one-evaluation run (0: none)")
    parser.add_argument("--cg-agreement", type=int, default=0, help="N of solver='cg' against 'cholesky' (0: none)")
    parser.add_argument("--cg-fits", type=C.parse_ints, default=[], help="N of whole fits by both solvers")
    parser.add_argument("--cg-products", type=C.parse_ints, default=[], help="N of the products-per-solve table")
    parser.add_argument("--ranks", type=C.parse_ints, default=[64, 256, 1024], help="ranks of that table")
    parser.add_argument("--out", default=None, help="folder for gaussian_process.json")
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return C.serve_child({"fit": child_fit, "evaluation": child_evaluation, "cg_fit": child_cg_fit,
                              "products": child_products}, args.child)
    print(f"# GaussianProcessRegressor against scikit-learn; CPU: {C.cpu_description()}\n")
    payload: dict = {"cpu": C.cpu_description()}
    verdicts = []
    if args.agreement_n:
        rows = agreement(args.agreement_n)
        payload["agreement"] = rows
        print(f"## log_marginal_likelihood(theta, eval_gradient=True) at N = {args.agreement_n}, 3 random θ\n")
        print("| kernel | value, rel. difference | gradient, largest entry's rel. difference | fastkpca s | "
              "scikit-learn s |\n|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['form']} | {r['value_rel']:.1e} | {r['gradient_rel']:.1e} | {r['seconds']['fastkpca']:.3f} "
                  f"| {r['seconds']['sklearn']:.3f} |")
        print()
        worst = max(max(r["value_rel"], r["gradient_rel"]) for r in rows)
        verdicts.append(("likelihood and gradient ≤ 1e-9 relative", worst <= 1e-9, f"{worst:.1e}"))
    fits = []
    if args.sizes:
        print("## Whole fits (C·RBF(ARD) + White, normalize_y, L-BFGS-B)\n")
        print("| N | fastkpca s | scikit-learn s | speed-up | evaluations (ours/theirs) "
              "| s per evaluation (ours/theirs) | peak ÷ N²·8 B (ours/theirs) | θ max abs diff | mean max rel "
              "| std max rel |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            runs: dict[str, list] = {"fastkpca": [], "sklearn": []}
            saved = {lib: str(Path(tmp) / f"{lib}-{n}.npz") for lib in runs}
            for rep in range(args.repeats):
                for lib in (("fastkpca", "sklearn") if rep % 2 == 0 else ("sklearn", "fastkpca")):
                    spec = {"n": n, "lib": lib, "save": saved[lib] if rep == 0 else None}
                    runs[lib].append(C.run_child(__file__, "fit", spec, timeout=7200))
            failed = {lib: r[0]["failed"][-300:] for lib, r in runs.items() if any("failed" in x for x in r)}
            if failed:
                print(f"| {n} | failed: {failed!r} |", flush=True)
                fits.append({"n": n, "failed": failed})
                continue
            med = {lib: {key: C.median([r[key] for r in rs]) for key in ("seconds", "evaluations", "peak_bytes")}
                   for lib, rs in runs.items()}
            a, b = np.load(saved["fastkpca"]), np.load(saved["sklearn"])
            theta_diff = float(np.abs(a["theta"] - b["theta"]).max())
            mean_rel = float(np.abs(a["mean"] - b["mean"]).max() / np.abs(b["mean"]).max())
            std_rel = float(np.max(np.abs(a["std"] - b["std"]) / b["std"]))
            speedup = med["sklearn"]["seconds"] / med["fastkpca"]["seconds"]
            per = {lib: m["seconds"] / max(1, m["evaluations"]) for lib, m in med.items()}
            units = {lib: m["peak_bytes"] / (n * n * 8) for lib, m in med.items()}
            print(f"| {n:,} | {med['fastkpca']['seconds']:.2f} | {med['sklearn']['seconds']:.2f} | {speedup:.2f}× | "
                  f"{med['fastkpca']['evaluations']:.0f} / {med['sklearn']['evaluations']:.0f} | "
                  f"{per['fastkpca']:.3f} / {per['sklearn']:.3f} | {units['fastkpca']:.2f} / {units['sklearn']:.2f} | "
                  f"{theta_diff:.1e} | {mean_rel:.1e} | {std_rel:.1e} |", flush=True)
            fits.append({"n": n, "median": med, "speedup": speedup, "theta_max_abs_diff": theta_diff,
                         "mean_max_rel": mean_rel, "std_max_rel": std_rel,
                         "all": {lib: rs for lib, rs in runs.items()}})
            if n in (2000, 5000):
                want = 3.0 if n == 2000 else 5.0
                verdicts.append((f"fit at N = {n:,} ≥ {want:g}× scikit-learn", speedup >= want, f"{speedup:.2f}×"))
            if n == 5000:
                verdicts.append(("fit at N = 5,000 peak ≤ 3·N²·8 B", units["fastkpca"] <= 3,
                                 f"{units['fastkpca']:.2f}·N²·8 B"))
            verdicts.append((f"fitted θ at N = {n:,} equal to 1e-5", theta_diff <= 1e-5, f"{theta_diff:.1e}"))
    payload["fits"] = fits
    if args.cg_agreement:
        rows = cg_agreement(args.cg_agreement)
        payload["cg_agreement"] = rows
        print(f"\n## solver='cg' against solver='cholesky' at N = {args.cg_agreement:,}, 3 random θ per kernel\n")
        print("| kernel | lml rel. diff | its std. error (rel.) | gradient cosine | gradient max rel. | products "
              "| Cholesky s | cg s |\n|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['form']} | {r['value_rel']:.1e} | {r['standard_error_rel']:.1e} | {r['cosine']:.5f} | "
                  f"{r['gradient_rel']:.1e} | {r['products']} | {r['seconds']['cholesky']:.2f} | "
                  f"{r['seconds']['cg']:.2f} |")
        worst = max(r["value_rel"] for r in rows)
        verdicts.append((f"cg lml within 0.1% at N = {args.cg_agreement:,}", worst <= 1e-3, f"{worst:.1e}"))
        cos = min(r["cosine"] for r in rows)
        verdicts.append((f"cg gradient cosine ≥ 0.99 at N = {args.cg_agreement:,}", cos >= 0.99, f"{cos:.5f}"))
    if args.cg_fits:
        print("\n## Fits by solver='cholesky' / solver='cg' (normalize_y, L-BFGS-B)\n")
        print("| kernel | N | seconds | evaluations | cg products | peak GiB | hyperparameters max rel. | "
              "test RMSE | std max rel. |\n|---|---|---|---|---|---|---|---|---|")
        payload["cg_fits"] = [row for n in args.cg_fits for row in cg_fits(n, verdicts)]
    if args.cg_products:
        payload["cg_products"] = products_table(args.cg_products, args.ranks)
    if args.evaluation:
        n = args.evaluation
        r = C.run_child(__file__, "evaluation", {"n": n}, timeout=7200)
        payload["evaluation"] = r
        if "failed" in r:
            print(f"\nOne evaluation at N = {n:,}: failed: {r['failed'][-500:]}")
            verdicts.append((f"one evaluation at N = {n:,}", False, "failed"))
        else:
            units = r["peak_bytes"] / (n * n * 8)
            print(f"\n## One exact likelihood-and-gradient evaluation at N = {n:,}\n\n"
                  f"evaluation {r['seconds']:.1f} s (the fit's one factor before it: {r['fit_seconds']:.1f} s); "
                  f"peak RSS growth {r['peak_bytes'] / 2**30:.2f} GiB = {units:.2f}·N²·8 B\n")
            verdicts.append((f"one evaluation at N = {n:,} ≤ 150 s", r["seconds"] <= 150, f"{r['seconds']:.1f} s"))
            verdicts.append((f"one evaluation at N = {n:,} within 3·N²·8 B", units <= 3, f"{units:.2f}·N²·8 B"))
    C.print_verdicts(verdicts)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "gaussian_process.json").write_text(json.dumps(C._jsonable(payload), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
