"""GaussianProcessRegressor against scikit-learn's (issue "Gaussian process regression"), every fit in a fresh
process (its own peak RSS), the two libraries alternated:

    python bench/gaussian_process.py                        # agreement, and fits at N = 1,000 and 2,000
    python bench/gaussian_process.py --sizes 2000,5000      # the issue's fit sizes (scikit-learn: ~8 min at 5,000)
    python bench/gaussian_process.py --evaluation 20000     # one exact likelihood + gradient at N = 20,000

Data: X ~ N(0, 1) with d = 8, y = sin(2x₀) + ½x₁² − x₂x₃ + N(0, 0.1²); kernel ``C(1.0) * RBF(np.ones(8)) +
WhiteKernel(0.1)``, ``normalize_y=True``, scikit-learn's default optimizer and ``alpha``; 500 test points from
the same distribution.

- **agreement**: ``log_marginal_likelihood(theta, eval_gradient=True)`` of both at three random θ (the kernel's
  theta plus U(−0.7, 0.7)) for every natively evaluated form, N = 1,000; the largest relative difference of the
  value and of any gradient entry.
- **fit**: seconds of the whole fit, likelihood evaluations, seconds per evaluation, peak RSS growth over the data
  (the peak RSS, reset after the data are made, less the RSS before the fit) in units of N²·8 bytes, and the
  fitted θ, predictions and standard deviations of the two compared.
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=C.parse_ints, default=[1000, 2000])
    parser.add_argument("--repeats", type=int, default=1, help="fits per library and size (alternated)")
    parser.add_argument("--agreement-n", type=int, default=1000, help="0: skip the agreement table")
    parser.add_argument("--evaluation", type=int, default=0, help="N of the one-evaluation run (0: none)")
    parser.add_argument("--out", default=None, help="folder for gaussian_process.json")
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return C.serve_child({"fit": child_fit, "evaluation": child_evaluation}, args.child)
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
