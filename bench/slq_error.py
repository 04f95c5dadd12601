"""Where solver="cg"'s log-determinant error comes from: stochastic Lanczos quadrature's two errors, each measured
against a dense generalized eigendecomposition of the pencil (K̂, P) at the probes the estimator draws:

    python bench/slq_error.py                          # N = 3,000, 64 probes, C·RBF(ARD) + White, 3 random θ
    python bench/slq_error.py --n 5000 --form matern --probes 256

With K̂ V = P V Λ and Vᵀ P V = I, the whitened probe w = L⁻¹z (L Lᵀ = P) has wᵀ log(Â) w = Σ_k log λ_k (Vᵀz)_k²
exactly, whatever factor L the CG's Lanczos process uses. So per probe

- **quadrature error** = the Gauss quadrature from CG's coefficients (what the estimator uses) − that exact
  quadratic form, at each CG tolerance: the Lanczos process stopping early. For log, whose even derivatives are
  negative, Gauss quadrature can only overestimate (its error is f⁽²ᵐ⁾(η)/(2m)! times a positive integral);
- **Monte-Carlo error** = the mean of the exact quadratic forms over the probes − tr log Â = log det K̂ − log det P:
  the probes' randomness, with its standard error;
- **the data term**: ½ yᵀK̂⁻¹y (normalised targets) less ½ yᵀx for CG's x at each tolerance from zero (the
  evaluation warm-starts it; from zero the shortfall is ‖x* − x‖²_K̂/2 ≥ 0, the likelihood too high);
- **the probes' law**, exactly (no sampling): z = Mξ with random signs ξ (the estimator's draws) has
  covariance M Mᵀ, which must be P; then the expected estimate, tr B for B = (VᵀM)ᵀ log Λ (VᵀM), equals
  tr log Â, and a probe's standard deviation is √(2 Σ_{i≠k} B_ik²), to compare with the probes' sample
  standard deviation (what the reported standard error uses).

Data and kernels are bench/gaussian_process.py's (d = 8); θ = the kernel's theta + U(−0.7, 0.7), as its cg
agreement table draws them; the noise comes from the kernel's WhiteKernel. Dense arrays: N ≲ 5,000.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402
from gaussian_process import FIT_FORMS, data, forms  # noqa: E402

TOLS = (1e-2, 1e-3, 1e-5)


def one_theta(X: np.ndarray, y: np.ndarray, kobj, theta: np.ndarray, probes: int, seed: int) -> dict:
    from scipy.linalg import eigh

    from fastkpca import kernels
    from fastkpca.engines.local import LOCAL
    from fastkpca.solvers.gaussian_process import IterativeSettings, IterativeSolver
    from fastkpca.solvers.krylov.cg import pcg
    from fastkpca.solvers.krylov.lanczos_cg import quadrature_log

    n = X.shape[0]
    kernel = kernels.make(kobj.clone_with_theta(theta), n_features=0)
    solver = IterativeSolver(LOCAL.samples(X), y[:, None], 1e-10, IterativeSettings(probes=probes),
                             memory_limit=2**34, random_state=seed)
    pre = solver._preconditioner(kernel)
    Z = pre.sample(solver.signs)
    K = kobj.clone_with_theta(theta)(X)
    K[np.diag_indices(n)] += solver.noise
    P = pre.multiply(np.eye(n))
    lam, V = eigh(K, P)
    target = float(np.log(lam).sum())  # tr log Â
    W = V.T @ Z
    exact = (np.log(lam)[:, None] * W ** 2).sum(axis=0)
    row: dict = {"rank": pre.rank, "condition": float(lam.max() / lam.min()), "tr_log": target,
                 "monte_carlo": float(exact.mean() - target),
                 "standard_error": float(exact.std(ddof=1) / np.sqrt(probes)), "quadrature": {}}
    for tol in TOLS:
        with solver._operator(kernel, probes) as op:
            _, info = pcg(solver._matmat(op), Z, precondition=pre, tol=tol, maxiter=1000, verify=False,
                          record=True)
        q = np.array([info["start_norms"][i] * quadrature_log(info["steps"][i], info["ratios"][i])
                      for i in range(probes)])
        row["quadrature"][tol] = {"iterations": int(info["column_iterations"].max()), "mean": float((q - exact).mean()),
                                  "min": float((q - exact).min()), "max": float((q - exact).max())}
    # the probes' law, exactly: z = M ξ with random signs ξ, so E[ξᵀBξ] = tr B for B = (VᵀM)ᵀ log Λ (VᵀM), which
    # equals tr log Â when M Mᵀ = P; Var ξᵀBξ = 2 Σ_{i≠k} B_ik² (random signs have no diagonal variance)
    M = pre.sample(np.eye(n))
    B = V.T @ M
    B = B.T @ (np.log(lam)[:, None] * B)
    off = float(np.sum(B ** 2) - np.sum(np.diag(B) ** 2))
    # the data term −½ yᵀK̂⁻¹y from a CG solve at each tolerance, from zero: CG's iterate x_k minimises the
    # K̂-norm error over its Krylov space, so yᵀx_k falls short of yᵀK̂⁻¹y by exactly ‖x* − x_k‖²_K̂ ≥ 0
    quadratic = float(y @ np.linalg.solve(K, y))
    row["data_term"] = {}
    for tol in TOLS:
        with solver._operator(kernel, 1) as op:
            x, info = pcg(solver._matmat(op), y[:, None], precondition=pre, tol=tol, maxiter=1000,
                          verify=False, record=True)
        row["data_term"][tol] = {"shortfall": 0.5 * (quadratic - float(y @ x[:, 0])),
                                 "iterations": int(info["column_iterations"].max())}
    row["law"] = {"covariance_error": float(np.linalg.norm(M @ M.T - P) / np.linalg.norm(P)),
                  "trace_gap": float(np.trace(B) - target), "sd": float(np.sqrt(2 * off)),
                  "sample_sd": float(exact.std(ddof=1))}
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--form", default="rbf", choices=sorted(FIT_FORMS))
    parser.add_argument("--probes", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0, help="random_state of the estimator's draws")
    parser.add_argument("--out", default=None, help="folder for slq_error.json")
    args = parser.parse_args()
    print(f"# SLQ's errors, solver='cg'; CPU: {C.cpu_description()}\n")
    X, y = data(args.n)
    y = (y - y.mean()) / y.std()  # normalize_y
    kobj = forms()[FIT_FORMS[args.form]]
    rng = np.random.default_rng(1)
    thetas = [kobj.theta + rng.uniform(-0.7, 0.7, kobj.theta.shape) for _ in range(3)]
    print(f"{FIT_FORMS[args.form]}, N = {args.n:,}, {args.probes} probes (random_state={args.seed}); "
          "log-determinant errors in nats\n")
    print("| θ | rank | cond(Â) | tr log Â | Monte-Carlo error (its std. error) | "
          + " | ".join(f"quadrature − exact at tol {t:g}: mean [min, max] (iterations)" for t in TOLS)
          + " | ‖MMᵀ − P‖/‖P‖ | E[estimate] − tr log Â | a probe's s.d.: exact (sample) | "
          + " | ".join(f"½yᵀK̂⁻¹y − ½yᵀx at tol {t:g}" for t in TOLS) + " |")
    print("|---" * (8 + 2 * len(TOLS)) + "|")
    rows = []
    for i, theta in enumerate(thetas):
        start = time.perf_counter()
        r = one_theta(X, y, kobj, theta, args.probes, args.seed)
        r["seconds"] = time.perf_counter() - start
        rows.append(r)
        quad = " | ".join(f"{q['mean']:+.1e} [{q['min']:+.1e}, {q['max']:+.1e}] ({q['iterations']})"
                          for q in r["quadrature"].values())
        law = r["law"]
        print(f"| {i} | {r['rank']} | {r['condition']:.3g} | {r['tr_log']:.2f} | {r['monte_carlo']:+.3f} "
              f"({r['standard_error']:.3f}) | {quad} | {law['covariance_error']:.1e} | {law['trace_gap']:+.1e} | "
              f"{law['sd']:.2f} ({law['sample_sd']:.2f}) | "
              + " | ".join(f"{t['shortfall']:+.1e} ({t['iterations']})" for t in r["data_term"].values()) + " |",
              flush=True)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "slq_error.json").write_text(json.dumps(C._jsonable({"cpu": C.cpu_description(),
                                                                              "args": vars(args), "rows": rows}),
                                                                 indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
