"""How far solver="cg"'s log marginal likelihood is from the exact one, and whether its standard error says so.

At θ drawn around the exact fit's optimum (each log-hyperparameter + U(−0.3, 0.3), five draws), the exact
(Cholesky) likelihood against ``GaussianProcessRegressor(solver="cg").log_marginal_likelihood(theta)`` with
its default refinement (``likelihood_rtol``: more probes until the standard error is within it), on two data
sets of high effective rank (many kernel eigenvalues above a small noise, where the stochastic estimate's error
is largest):

- ``hard``: bench/gaussian_process.py's hard data (a Matérn-5/2 random field with two short length scales on
  eight Gaussian features, noise 1% of the field's variance), N = 5,000, C·Matern(ARD, 5/2) + White, and
  the exact optimum recorded in bench/reference/gp_hard_cholesky_5000.json;
- ``sf_temps``: the hourly air temperature at San Francisco in 2010 (vega_datasets' ``sf-temps``, real
  measurements), its first N = 2,000 hours against the time in days, C·Matern(5/2) + White: the fitted length
  scale is a fraction of a day, so thousands of the kernel's eigenvalues stand above the noise; the optimum is
  found here by an exact fit.

    python bench/likelihood_error.py                   # both
    python bench/likelihood_error.py --data sf_temps

Targets (the issue's): every value within 1e-3 relative of the exact one and within three of its reported
standard errors.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

RELATIVE_TARGET = 1e-3
ERRORS_TARGET = 3.0
HERE = Path(__file__).resolve().parent
DEFAULT_N = {"hard": 5000, "sf_temps": 2000}


def hard(n: int):
    from gaussian_process import hard_data, hard_kernel

    X, y = hard_data(n)
    theta = np.array(json.loads((HERE / "reference" / "gp_hard_cholesky_5000.json").read_text())["hard"]["exact"]
                     ["theta"]) if n == 5000 else None
    return X, y, hard_kernel(), theta, f"hard data, N = {n:,}, C·Matern(ARD 8, 5/2) + White"


def sf_temps(n: int):
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel
    from vega_datasets import local_data

    data = local_data.sf_temps().iloc[:n]
    hours = (data["date"] - data["date"].iloc[0]).dt.total_seconds().to_numpy() / 3600.0
    X = (hours / 24.0)[:, None]  # days
    y = data["temp"].to_numpy(dtype=np.float64)
    kernel = ConstantKernel(1.0) * Matern(1.0, nu=2.5) + WhiteKernel(0.01)
    what = f"San Francisco hourly temperature 2010, first N = {X.shape[0]:,} hours, C·Matern(5/2) + White"
    return X, y, kernel, None, what


def run(name: str, n: int, draws: int, seed: int) -> tuple[list[dict], str]:
    import fastkpca

    X, y, kernel, theta, what = {"hard": hard, "sf_temps": sf_temps}[name](n)
    if theta is None:  # the exact optimum, found here
        t = time.perf_counter()
        fit = fastkpca.GaussianProcessRegressor(kernel, solver="cholesky", normalize_y=True).fit(X, y)
        theta = fit.kernel_.theta
        print(f"{name}: exact fit in {time.perf_counter() - t:.1f} s, θ = {np.round(theta, 3).tolist()}", flush=True)
    kernel = kernel.clone_with_theta(theta)
    rng = np.random.default_rng(seed)
    thetas = [theta + rng.uniform(-0.3, 0.3, theta.shape) for _ in range(draws)]
    exact = fastkpca.GaussianProcessRegressor(kernel, optimizer=None, solver="cholesky", normalize_y=True).fit(X, y)
    model = fastkpca.GaussianProcessRegressor(kernel, optimizer=None, solver="cg", normalize_y=True,
                                              random_state=0).fit(X, y)
    rows = []
    for i, th in enumerate(thetas):
        t = time.perf_counter()
        expected = float(exact.log_marginal_likelihood(th))
        exact_seconds = time.perf_counter() - t
        t = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = float(model.log_marginal_likelihood(th))
        seconds = time.perf_counter() - t
        info = model.log_marginal_likelihood_info_
        error = value - expected
        rows.append({"data": name, "theta": i, "exact": expected, "cg": value, "relative": abs(error) / abs(expected),
                     "standard_error": info["standard_error"], "errors": abs(error) / info["standard_error"]
                     if info["standard_error"] else float("inf"), "probes": info["probes"],
                     "rounds": len(info["rounds"]), "reached": info["reached"], "seconds": seconds,
                     "exact_seconds": exact_seconds, "warned": bool(caught)})
        r = rows[-1]
        print(f"{name} θ{i}: exact {expected:.3f}, cg {value:.3f} (relative {r['relative']:.2e}, standard error "
              f"{r['standard_error']:.3g}, {r['errors']:.2f} of them), {r['probes']} probes in {r['rounds']} rounds, "
              f"{seconds:.1f} s (exact {exact_seconds:.1f} s)", flush=True)
    return rows, what


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="hard,sf_temps", help="comma-separated: hard, sf_temps")
    p.add_argument("--n", type=int, default=None,
                   help="samples of each data set (default: hard 5,000; sf_temps 2,000, where the noise at 5,000 "
                        "hours, 1.4e-4 of the variance, makes one refined cg value take over ten minutes on 2 cores)")
    p.add_argument("--draws", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    info = c.machine_info()
    c.print_machine(info)
    rows, verdicts = [], []
    for name in c.parse_list(args.data):
        found, what = run(name, args.n or DEFAULT_N[name], args.draws, args.seed)
        rows += found
        worst = max(r["relative"] for r in found)
        most = max(r["errors"] for r in found)
        verdicts.append((f"{what}: cg within {RELATIVE_TARGET:g} relative of the exact likelihood at {len(found)} θ",
                         worst <= RELATIVE_TARGET, f"worst {worst:.2e}"))
        verdicts.append((f"{what}: within {ERRORS_TARGET:g} of its standard errors", most <= ERRORS_TARGET,
                         f"worst {most:.2f} standard errors"))
    table = c.markdown_table(rows, [("data", "data", "s"), ("θ", "theta", "d"), ("exact", "exact", ".3f"),
                                    ("cg", "cg", ".3f"), ("relative error", "relative", ".2e"),
                                    ("standard error", "standard_error", ".3g"), ("errors / SE", "errors", ".2f"),
                                    ("probes", "probes", "d"), ("cg s", "seconds", ".1f"),
                                    ("exact s", "exact_seconds", ".1f")])
    c.print_verdicts(verdicts, [table])
    c.write_json(args.json, {"machine": info, "rows": rows,
                             "verdicts": [{"target": t, "met": ok, "figure": f} for t, ok, f in verdicts]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
