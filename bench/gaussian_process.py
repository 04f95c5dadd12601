"""GaussianProcessRegressor against scikit-learn's (issue "Gaussian process regression"), every fit in a fresh
process (its own peak RSS), the two libraries alternated:

    python bench/gaussian_process.py                        # agreement, and fits at N = 1,000 and 2,000
    python bench/gaussian_process.py --sizes 2000,5000      # the issue's fit sizes (scikit-learn: ~8 min at 5,000)
    python bench/gaussian_process.py --evaluation 20000     # one exact likelihood + gradient at N = 20,000
    python bench/gaussian_process.py --sizes "" --agreement-n 0 --cg-agreement 5000 --cg-fits 5000
                                                            # solver="cg" against the Cholesky solver
    python bench/gaussian_process.py --sizes "" --agreement-n 0 --cg-fits 20000 --fit-forms matern \
        --control-variate on,off --reference bench/reference/gp_cholesky_fits.json
                                                            # cg fits against a recorded Cholesky optimum
    python bench/gaussian_process.py --sizes "" --agreement-n 0 --cg-products 5000,20000 --ranks 64,256,1024
                                                            # cg's products per solve against rank and N
    python bench/gaussian_process.py --sizes "" --agreement-n 0 --rank-search 20000
                                                            # the preconditioner's rank searched, against 1024
    python bench/gaussian_process.py --sizes "" --agreement-n 0 --scale 50000,100000 --log scale.log
                                                            # fits past the Cholesky wall (about 1 h)
    python bench/gaussian_process.py --sizes "" --agreement-n 0 --hard 5000
        --hard-reference bench/reference/gp_hard_cholesky_5000.json
                                                            # cg against the recorded Cholesky fit on hard data

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
  White, with each of ``--probes`` probe counts: the likelihood's relative difference and its reported standard
  error, the gradient's cosine and largest relative entry difference, block products per evaluation, seconds.
- **cg fits**: both solvers fit (fresh processes; ``--fit-forms``; one cg fit per ``--fit-probes`` count):
  seconds, evaluations, products, peak, the fitted hyperparameters' largest relative difference (exp θ), of
  all and of those y depends on (C, the length scales of x₀…x₃, the noise), the exact likelihood at the cg
  fit's θ below that at the Cholesky fit's (relative), test RMSE against the noiseless function and the
  standard deviations' largest relative difference. ``--control-variate on,off`` fits cg with and without the
  gradient's control variate (solvers/gaussian_process/control_variate.py). ``--reference FILE`` takes the
  Cholesky fit of a form and N from a record of an earlier run (bench/reference/gp_cholesky_fits.json: θ,
  seconds, evaluations, peak) instead of fitting it again: the model at the recorded θ is made and predicts
  here (a warning if its likelihood differs from the recorded one), and the table marks its seconds "(recorded)".
  ``--exact-from-cg`` starts the Cholesky fit's L-BFGS-B from the first cg fit's θ instead of the kernel's initial θ:
  the exact optimum near cg's, in a fraction of a whole exact fit's time (another basin, if the whole fit would have
  found one, goes unseen); its seconds are marked "(from cg's θ)". ``--record FILE`` adds a whole Cholesky fit run here
  to FILE in the format ``--reference`` reads; with ``--log``, each fit's evaluations are written as they end (a fit of
  hours shows its progress, and its best θ survives an interrupted run).
- **cg products**: at a fixed θ (C·RBF(ARD) + White, noise 0.01 of normalised targets), for each N and
  preconditioner rank: the block products (and the largest column's iterations) of one likelihood + gradient
  evaluation at the training tolerance, and of a final solve to 1e-6 from zero; and the floor, the mean residual
  diagonal of the rank-r factor over the noise (the iterations stay high while it is well above 1).
- **rank search**: at the products table's θ, the kernel recomputed by every product (matrix-free), eight
  likelihood + gradient evaluations at the same θ with the rank fixed at 1024 and searched
  (solvers/gaussian_process/rank.py; the first six evaluations may move it): each evaluation's rank and
  products, and the seconds of the last two.
- **scale**: the fit the issue times at N = 50,000 and 100,000, each in a fresh process, as a user writes it:
  ``solver="cg"`` on all N from the kernel's initial θ with the estimator's default optimizer (its own exact
  fit on a random subset first, ``subset_start``; L-BFGS-B to its convergence) within ``--memory-limit``
  (2GB); the fit's seconds (its subset start's among them), evaluations, products, whether L-BFGS-B
  converged, the peak RSS growth over the data, the predictions' seconds (500 points, exact standard
  deviations), the likelihood, and test RMSE against the noiseless function of the cg fit, of an exact fit on
  a random ``--scale-reference`` samples (5,000; timed apart) and of a Nyström GP (2,000 uniform landmarks,
  subset of regressors) at the cg fit's θ. ``--log`` gets a line per likelihood evaluation while it runs.
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
#: y depends on the first RELEVANT features (data()).
RELEVANT = 4


def data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2 - X[:, 2] * X[:, 3] + 0.1 * rng.standard_normal(n)
    return X, y


#: The hard data's length scales: short along x₀ and x₁ (many kernel eigenvalues above a small noise).
HARD_LENGTH_SCALES = np.array([0.15, 0.12, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0])


def hard_data(n: int, seed: int = 0, noise: float = 0.01):
    """Data of the character that defeated cg fits on a real data set: X ~ N(0, I₈), y a draw of a Matérn-5/2
    random field (4,000 random Fourier features, fixed whatever ``seed``) with the length scales above, plus
    noise of variance ``noise`` (1% of the field's). Its exact fit has length scales near 0.1 along x₀, x₁ and a
    noise of about 0.01 against an amplitude near 1."""
    features, nu = 4000, 2.5
    field = np.random.RandomState(7)
    omega = (field.standard_normal((features, D)) / HARD_LENGTH_SCALES
             * np.sqrt(2 * nu / field.chisquare(2 * nu, size=(features, 1))))
    phase, weights = field.uniform(0, 2 * np.pi, features), field.standard_normal(features)
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, D))
    f = np.concatenate([np.cos(X[s:s + 10_000] @ omega.T + phase) @ weights for s in range(0, n, 10_000)])
    return X, np.sqrt(2.0 / features) * f + np.sqrt(noise) * rng.standard_normal(n)


def hard_kernel():
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    return ConstantKernel(1.0) * Matern(np.ones(D), nu=2.5) + WhiteKernel(0.1)


def child_hard(spec: dict) -> dict:
    """One fit on the hard data (``solver`` as given, ``random_state=0``), its θ, likelihood, L-BFGS-B's status,
    test RMSE and standard deviations, and its likelihood at the given θ (the same for both solvers)."""
    import scipy.optimize

    from fastkpca import GaussianProcessRegressor

    warnings.simplefilter("ignore")
    statuses = []
    minimize = scipy.optimize.minimize

    def recorded(*args, **kwargs):
        result = minimize(*args, **kwargs)
        statuses.append(str(result.message))
        return result

    scipy.optimize.minimize = recorded
    X, y = hard_data(spec["n"])
    new, truth = hard_data(N_TEST, seed=1, noise=0.0)
    start = time.perf_counter()
    kernel = hard_kernel()
    if spec.get("theta") is not None:  # a recorded fit's model, made again at its θ
        kernel.theta = np.array(spec["theta"])
    est = GaussianProcessRegressor(kernel, normalize_y=True, solver=spec["solver"], random_state=0,
                                   optimizer="fmin_l_bfgs_b" if spec.get("fit", True) else None).fit(X, y)
    seconds = time.perf_counter() - start
    scipy.optimize.minimize = minimize
    mean, std = est.predict(new, return_std=True)
    at = [float(est.log_marginal_likelihood(np.array(theta))) for theta in spec["thetas"]]
    info = est.solver_info_
    return {"theta": est.kernel_.theta.tolist(), "lml": float(est.log_marginal_likelihood_value_), "seconds": seconds,
            "evaluations": info["evaluations"], "lbfgs": statuses, "rmse": float(np.sqrt(np.mean((mean - truth) ** 2))),
            "std": std.tolist(), "at_thetas": at, "products": info.get("products"),
            "start": info.get("start"), "pivot_draws": info.get("pivot_draws"), "settle": info.get("settle"),
            "probes": info.get("probes")}


def hard_table(n: int, verdicts: list, reference: str | None = None) -> dict:
    """solver="cg" against "cholesky" on the hard data at N = n (each fit in a fresh process, cg twice). With
    ``reference`` (the gaussian_process.json of an earlier --hard run at the same N) its Cholesky fit's θ and
    figures are taken, and the model is made again at that θ for the predictions."""
    if reference is not None:
        exact = json.loads(Path(reference).read_text())["hard"]["exact"]
        exact.update({key: value for key, value in C.run_child(
            __file__, "hard", {"n": n, "solver": "cholesky", "thetas": [], "fit": False, "theta": exact["theta"]},
            timeout=3600).items() if key in ("std", "rmse")})
        exact["lbfgs"] = [f"(recorded) {status}" for status in exact["lbfgs"]]
    else:
        exact = C.run_child(__file__, "hard", {"n": n, "solver": "cholesky", "thetas": []}, timeout=4 * 3600)
    rng = np.random.default_rng(2)
    thetas = [(np.array(exact["theta"]) + rng.uniform(-0.3, 0.3, len(exact["theta"]))).tolist() for _ in range(3)]
    exact["at_thetas"] = C.run_child(__file__, "hard", {"n": n, "solver": "cholesky", "thetas": thetas, "fit": False},
                                     timeout=3600)["at_thetas"]
    cg = [C.run_child(__file__, "hard", {"n": n, "solver": "cg", "thetas": thetas}, timeout=4 * 3600)
          for _ in range(2)]
    a, b = np.array(exact["theta"]), np.array(cg[0]["theta"])
    dtheta = float(np.abs(a - b).max())
    lml_rel = max(abs(x - e) / abs(e) for x, e in zip(cg[0]["at_thetas"], exact["at_thetas"]))
    std_rel = float(np.max(np.abs(np.array(cg[0]["std"]) - exact["std"]) / np.array(exact["std"])))
    rmse_rel = cg[0]["rmse"] / exact["rmse"] - 1
    print(f"\n## Hard data (bench hard_data: short length scales on x₀, x₁, noise 1%), N = {n:,}: "
          "solver='cg' against 'cholesky'\n")
    print("| solver | s | evaluations | L-BFGS-B (each run) | probes: θ's move (its error) | lml | θ (log) | "
          "test RMSE |\n"
          "|---|---|---|---|---|---|---|---|")
    for name, r in (("cholesky", exact), ("cg", cg[0]), ("cg again", cg[1])):
        rounds = (r.get("settle") or {}).get("rounds", [])
        moves = ", ".join(f"{x['probes']}: {x['theta_change']:.3f} ({x['error']:.3f})" for x in rounds) or "–"
        print(f"| {name} | {r['seconds']:.1f} | {r['evaluations']} | {'; '.join(s[:40] for s in r['lbfgs'])} | "
              f"{moves} | {r['lml']:.3f} | {np.round(r['theta'], 3).tolist()} | {r['rmse']:.5f} |")
    print(f"\nθ max abs difference (log space) {dtheta:.3f}; lml at 3 random θ: largest rel. difference "
          f"{lml_rel:.1e}; std max rel. {std_rel:.1e}; test RMSE {rmse_rel:+.2%}; the cg fit repeated: θ "
          f"{'equal' if cg[0]['theta'] == cg[1]['theta'] else 'different'}\n")
    converged = all("ABNORMAL" not in s for s in cg[0]["lbfgs"])
    verdicts.extend([(f"hard data N = {n:,}: θ within 0.05 (log)", dtheta <= 0.05, f"{dtheta:.3f}"),
                     (f"hard data N = {n:,}: lml at random θ within 1e-3", lml_rel <= 1e-3, f"{lml_rel:.1e}"),
                     (f"hard data N = {n:,}: std within 5%", std_rel <= 0.05, f"{std_rel:.1e}"),
                     (f"hard data N = {n:,}: test RMSE within 1%", abs(rmse_rel) <= 0.01, f"{rmse_rel:+.2%}"),
                     (f"hard data N = {n:,}: L-BFGS-B without ABNORMAL", converged, "; ".join(cg[0]["lbfgs"])[:80]),
                     (f"hard data N = {n:,}: the cg fit repeated gives the same θ", cg[0]["theta"] == cg[1]["theta"],
                      "")])
    return {"exact": {k: v for k, v in exact.items() if k != "std"}, "cg": [{k: v for k, v in r.items() if k != "std"}
                                                                            for r in cg],
            "dtheta": dtheta, "lml_rel": lml_rel, "std_rel": std_rel, "rmse_rel": rmse_rel}


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
FIT_FORMS = dict(zip(("rbf", "matern"), CG_FORMS))


def cg_agreement(n: int, probe_counts: list) -> list[dict]:
    """solver="cg" with each probe count against solver="cholesky" (both fastkpca), in this process."""
    from fastkpca import CG
    from fastkpca import GaussianProcessRegressor as Ours

    X, y = data(n)
    rows = []
    for name in CG_FORMS:
        k = forms()[name]
        exact = Ours(k, optimizer=None, normalize_y=True, solver="cholesky").fit(X, y)
        cgs = {probes: Ours(k, optimizer=None, normalize_y=True, solver=CG(n_probes=probes),
                            random_state=0).fit(X, y) for probes in probe_counts}
        rng = np.random.default_rng(1)
        for _ in range(3):
            theta = k.theta + rng.uniform(-0.7, 0.7, k.theta.shape)
            t0 = time.perf_counter()
            a, ga = exact.log_marginal_likelihood(theta, eval_gradient=True)
            t1 = time.perf_counter()
            for probes, cg in cgs.items():
                before = cg._solver.figures["products"]
                t2 = time.perf_counter()
                b, gb = cg.log_marginal_likelihood(theta, eval_gradient=True)
                t3 = time.perf_counter()
                rows.append({"form": name, "probes": probes, "value_rel": abs(a - b) / abs(a),
                             "standard_error_rel": cg._solver.figures["standard_error"] / abs(a),
                             "cosine": float(ga @ gb / np.linalg.norm(ga) / np.linalg.norm(gb)),
                             "gradient_rel": float(np.max(np.abs(ga - gb)) / np.max(np.abs(ga))),
                             "products": cg._solver.figures["products"] - before,
                             "seconds": {"cholesky": t1 - t0, "cg": t3 - t2}})
    return rows


def child_cg_fit(spec: dict) -> dict:
    from fastkpca import CG, GaussianProcessRegressor

    warnings.simplefilter("ignore")
    X, y = data(spec["n"])
    new = data(N_TEST, seed=1)[0]
    truth = np.sin(2 * new[:, 0]) + 0.5 * new[:, 1] ** 2 - new[:, 2] * new[:, 3]
    GaussianProcessRegressor(forms()[spec["form"]], normalize_y=True).fit(X[:50], y[:50])
    if not spec.get("control_variate", True):  # Hutchinson's estimate alone (the settings the estimator makes)
        import functools

        from fastkpca.solvers import gaussian_process as gp_solvers

        gp_solvers.IterativeSettings = functools.partial(gp_solvers.IterativeSettings, control_variate=False)
    kobj, optimizer, estimator = forms()[spec["form"]], "fmin_l_bfgs_b", GaussianProcessRegressor
    if spec.get("log"):  # the same fit, each evaluation written to the log as it ends
        label = f"{spec['form']} N = {spec['n']:,} {spec['solver']}"
        if spec["solver"] != "cholesky":
            label += f", {spec.get('probes', 16)} probes, control variate {spec.get('control_variate', True)}"
        estimator = _logged(_file_log(spec["log"], label))
    if "theta" in spec:  # the reference's optimum given: the Cholesky model at it, not optimised again
        kobj, optimizer = kobj.clone_with_theta(np.asarray(spec["theta"])), None
    elif "start_theta" in spec:  # L-BFGS-B from there instead of the kernel's initial θ
        kobj = kobj.clone_with_theta(np.asarray(spec["start_theta"]))
    C.reset_peak_rss()
    before = C.rss_bytes()
    start = time.perf_counter()
    solver = CG(n_probes=spec.get("probes", 16)) if spec["solver"] == "cg" else spec["solver"]
    est = estimator(kobj, normalize_y=True, solver=solver, optimizer=optimizer, random_state=0,
                    memory_limit=spec.get("memory_limit")).fit(X, y)
    seconds = time.perf_counter() - start
    peak = C.peak_rss_bytes() - before
    mean, std = est.predict(new, return_std=True)
    np.savez(spec["save"], theta=est.kernel_.theta, mean=mean, std=std)
    info = est.solver_info_
    # The exact likelihood at the fitted θ (after the clock): judges the cg optimum by the exact objective (a
    # Cholesky fit's own value is that already).
    lml = float(est.log_marginal_likelihood_value_)
    if spec["solver"] != "cholesky":
        exact = GaussianProcessRegressor(forms()[spec["form"]], normalize_y=True, solver="cholesky",
                                         optimizer=None).fit(X, y)
        exact_lml = float(exact.log_marginal_likelihood(est.kernel_.theta))
    return {"seconds": seconds, "evaluations": info.get("evaluations", 0), "products": info.get("products", 0),
            "peak_bytes": peak, "rmse": float(np.sqrt(np.mean((mean - truth) ** 2))), "lml": lml,
            "stages": info.get("stages", {}),
            "exact_lml": lml if spec["solver"] == "cholesky" else exact_lml}


def _logged(log):
    """GaussianProcessRegressor whose likelihood evaluations pass their −lml, seconds and θ to ``log(text)`` as
    they end (the estimator's own optimizer, untouched): a fit of hours shows its progress, and its best θ
    survives an interrupted run."""
    from fastkpca import GaussianProcessRegressor

    class Logged(GaussianProcessRegressor):
        def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
            start = time.perf_counter()
            out = super().log_marginal_likelihood(theta, eval_gradient, clone_kernel)
            if theta is not None:
                value = float(out[0] if eval_gradient else out)
                log(f"-lml {-value!r}, {time.perf_counter() - start:.1f} s, θ {np.asarray(theta).tolist()}")
            return out

    return Logged


def _file_log(path: str, label: str):
    """``log(text)`` appending a timed, labelled line to ``path``."""
    def log(text: str) -> None:
        with open(path, "a") as f:
            f.write(f"[{time.strftime('%H:%M:%S')}] {label}: {text}\n")
    return log


def _record(path: str, form: str, n: int, fit: dict, theta: np.ndarray) -> None:
    """Adds a Cholesky fit (its θ, seconds, evaluations, peak, lml, this command and CPU) to the record
    ``--reference`` reads (``--record``)."""
    file = Path(path)
    records = json.loads(file.read_text()) if file.exists() else {}
    records.setdefault(form, {})[str(n)] = {
        "theta": np.asarray(theta).tolist(), **{key: fit[key] for key in ("seconds", "evaluations", "peak_bytes")},
        "lml": fit["lml"], "recorded": f"{time.strftime('%Y-%m-%d')}, python {' '.join(sys.argv)}",
        "cpu": C.cpu_description()}
    file.write_text(json.dumps(records, indent=1, ensure_ascii=False))


def _reference_fit(spec: dict, references: dict, record: str | None) -> dict:
    """The Cholesky fit of ``spec`` (its form and N): run here (then added to ``record``'s file, if given), or,
    when ``references`` (``--reference``'s file) has this form and N, the Cholesky model at the recorded optimum
    (its predictions and exact likelihood computed now; its fit's seconds, evaluations and peak as recorded)."""
    form, n = spec["form"], spec["n"]
    recorded = references.get(form, {}).get(str(n))
    if recorded is not None and record:
        print(f"note: {form} N = {n:,} is taken from --reference, so --record has nothing new to add", flush=True)
    if recorded is None:
        out = C.run_child(__file__, "cg_fit", spec, timeout=4 * 3600)
        if record and "failed" not in out:
            _record(record, form, n, out, np.load(spec["save"])["theta"])
        return out
    out = C.run_child(__file__, "cg_fit", dict(spec, theta=recorded["theta"]), timeout=3600)
    if "failed" not in out:
        drift = abs(out["lml"] - recorded["lml"]) / abs(recorded["lml"])
        if drift > 1e-9:  # other data, kernel or code than the recorded fit's: say so
            print(f"warning: {form} N = {n:,}: the likelihood at the recorded θ is {out['lml']!r} now, "
                  f"{recorded['lml']!r} when recorded ({drift:.1e} relative)", flush=True)
        out.update({key: recorded[key] for key in ("seconds", "evaluations", "peak_bytes")}, recorded=True)
    return out


def _exact_failed(form: str, n: int, exact: dict, rows: list) -> bool:
    """Whether the Cholesky fit failed (then said so in the table and recorded in ``rows``)."""
    if "failed" in exact:
        print(f"| {form} | {n:,} | Cholesky fit failed: {exact['failed'][-300:]!r} |", flush=True)
        rows.append({"form": form, "n": n, "failed": {"cholesky": exact}})
    return "failed" in exact


def cg_fits(n: int, forms_: list, probe_counts: list, variants: list, verdicts: list,
            references: dict | None = None, exact_from_cg: bool = False, log: str | None = None,
            record: str | None = None) -> list[dict]:
    """Per form, one Cholesky fit (the reference) and one cg fit per probe count and control-variate setting,
    each in a fresh process. ``exact_from_cg``: the cg fits first, then the Cholesky fit's L-BFGS-B started
    from the first cg fit's θ (the exact optimum near it, in a fraction of a whole Cholesky fit's time). ``log``:
    a file each fit appends its evaluations to; ``record``: a file a whole Cholesky fit is recorded in."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for form in forms_:
            base = {"n": n, "form": form, "solver": "cholesky", "save": str(Path(tmp) / "cholesky.npz"), "log": log}
            exact: dict = {}
            if not exact_from_cg:
                exact = _reference_fit(base, references or {}, record)
                if _exact_failed(form, n, exact, rows):
                    continue
            fits = []
            for probes in probe_counts:
                for variant in variants:
                    spec = dict(base, solver="cg", probes=probes, control_variate=variant == "on",
                                save=str(Path(tmp) / f"cg{probes}{variant}.npz"))
                    mine = C.run_child(__file__, "cg_fit", spec, timeout=4 * 3600)
                    if "failed" in mine:
                        print(f"| {form} | {n:,} | {probes} probes, control variate {variant} | cg fit failed: "
                              f"{mine['failed'][-300:]!r} |", flush=True)
                        rows.append({"form": form, "n": n, "probes": probes, "control_variate": variant,
                                     "failed": {"cg": mine}})
                        continue
                    fits.append((probes, variant, mine, spec["save"]))
            if exact_from_cg and fits:
                if record:
                    print("note: --record keeps whole Cholesky fits only, not those started from cg's θ", flush=True)
                start = np.load(fits[0][3])["theta"].tolist()
                exact = C.run_child(__file__, "cg_fit", dict(base, start_theta=start), timeout=4 * 3600)
                if _exact_failed(form, n, exact, rows):
                    continue
                exact["from_cg"] = True
            for probes, variant, mine, save in fits:
                row = _compare_fits(form, n, f"{probes} probes, control variate {variant}", exact, mine,
                                    np.load(base["save"]), np.load(save), verdicts)
                rows.append(dict(row, probes=probes, control_variate=variant))
    return rows


def _compare_fits(form: str, n: int, label: str, exact: dict, mine: dict, b, a, verdicts: list) -> dict:
    """One table row: the cg fit (a, mine; ``label``: its probes and settings) against the Cholesky fit
    (b, exact)."""
    runs = {"cholesky": exact, "cg": mine}
    theta_rel = float(np.max(np.abs(np.exp(a["theta"] - b["theta"]) - 1)))
    # y depends on x₀…x₃ only: the likelihood is nearly flat along the other four length scales
    relevant = np.r_[0:1 + RELEVANT, len(a["theta"]) - 1]
    theta_relevant = float(np.max(np.abs(np.exp(a["theta"][relevant] - b["theta"][relevant]) - 1)))
    lml_loss = (exact["exact_lml"] - mine["exact_lml"]) / abs(exact["exact_lml"])
    std_rel = float(np.max(np.abs(a["std"] - b["std"]) / b["std"]))
    rmse_rel = mine["rmse"] / exact["rmse"] - 1
    recorded = " (recorded)" if exact.get("recorded") else " (from cg's θ)" if exact.get("from_cg") else ""
    exact_peak = "n/a" if exact["peak_bytes"] is None else f"{exact['peak_bytes'] / 2**30:.2f}"
    print(f"| {form} | {n:,} | {label} | {exact['seconds']:.1f}{recorded} / {mine['seconds']:.1f} | "
          f"{exact['evaluations']} / {mine['evaluations']} | {mine['products']} | "
          f"{exact_peak} / {mine['peak_bytes'] / 2**30:.2f} | "
          f"{theta_rel:.1e} | {theta_relevant:.1e} | {lml_loss:.1e} | "
          f"{exact['rmse']:.4f} / {mine['rmse']:.4f} ({rmse_rel:+.1%}) | {std_rel:.1e} |", flush=True)
    where = f"cg fit {form} N = {n:,}, {label}"
    verdicts.append((f"{where}: θ within 5%", theta_rel <= 0.05, f"{theta_rel:.1e}"))
    verdicts.append((f"{where}: θ of C, ℓ₀…ℓ₃, noise within 5%", theta_relevant <= 0.05, f"{theta_relevant:.1e}"))
    verdicts.append((f"{where}: RMSE within 1%", abs(rmse_rel) <= 0.01, f"{rmse_rel:+.2%}"))
    verdicts.append((f"{where}: std within 5%", std_rel <= 0.05, f"{std_rel:.1e}"))
    return {"form": form, "n": n, "runs": runs,
            "theta": {"cholesky": b["theta"], "cg": a["theta"]}, "theta_rel": theta_rel,
            "theta_relevant_rel": theta_relevant, "exact_lml_loss": lml_loss, "std_rel": std_rel,
            "rmse_rel": rmse_rel}


PRODUCTS_FORM = "C·RBF(ARD) + White"


def products_kernel():
    """C·RBF(ARD) + White at a fitted-looking θ for this data: short length scales on the four features the
    function uses, long on the others, noise a hundredth of the (normalised) signal."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    return ConstantKernel(1.0) * RBF(np.array([0.7, 1.0, 1.0, 1.0, 5.0, 5.0, 5.0, 5.0])) + WhiteKernel(0.01)


def _products_solver(n: int, rank, storage: str):
    """The cg solver state of the products table's θ on N samples (normalised targets, 16 probes): (kernel,
    solver)."""
    from fastkpca import kernels
    from fastkpca.engines.local import LOCAL
    from fastkpca.solvers.gaussian_process import IterativeSettings, IterativeSolver

    warnings.simplefilter("ignore")
    X, y = data(n)
    y = (y - y.mean()) / y.std()
    kernel = kernels.make(products_kernel(), n_features=0)
    settings = IterativeSettings(rank=rank, storage=storage)
    return kernel, IterativeSolver(LOCAL.samples(X), y[:, None], 1e-10, settings, memory_limit=2**31,
                                   random_state=0)


def child_products(spec: dict) -> dict:
    """One likelihood + gradient evaluation (training tolerance) and one final solve at a given N and
    preconditioner rank: block products of each, seconds, and the preconditioner's floor."""
    from fastkpca.solvers import gaussian_process as gp

    kernel, solver = _products_solver(spec["n"], spec["rank"], spec.get("storage", "auto"))
    start = time.perf_counter()
    gp.log_marginal_likelihood(solver, kernel, solver.Y, True)
    evaluation = {"products": solver.figures["products"], "seconds": time.perf_counter() - start,
                  "iterations": solver.figures["iterations"][-1]}
    solver.warm = None  # the final solve from zero: its products alone
    start = time.perf_counter()
    solver.solve(kernel, solver.Y)
    final = {"products": solver.figures["products"] - evaluation["products"], "seconds": time.perf_counter() - start}
    pre = solver.preconditioner
    noise = 0.01 + 1e-10
    # P = FFᵀ + D, D = noise + the residual diagonal of the kernel beyond rank r: its mean over the noise is
    # how far P is from K̂ (the iterations fall to a few once it is well below 1)
    floor = float(np.mean(pre.d - noise) / noise)
    return {"evaluation": evaluation, "final": final, "rank": pre.rank, "residual_over_noise": floor,
            "preconditioner_seconds": solver.figures["seconds"]["preconditioner"]}


def child_rank_search(spec: dict) -> dict:
    """SEARCH_EVALUATIONS + 2 likelihood + gradient evaluations at the products table's θ, the kernel recomputed
    by every product (matrix-free, as past the Cholesky wall), the rank fixed or searched: each evaluation's
    rank, products and seconds."""
    from fastkpca.solvers import gaussian_process as gp
    from fastkpca.solvers.gaussian_process.rank import SEARCH_EVALUATIONS

    kernel, solver = _products_solver(spec["n"], spec["rank"], "matrix_free")
    rows = []
    for _ in range(SEARCH_EVALUATIONS + 2):
        rank, products = solver.rank, solver.figures["products"]
        start = time.perf_counter()
        gp.log_marginal_likelihood(solver, kernel, solver.Y, True)
        rows.append({"rank": rank, "products": solver.figures["products"] - products,
                     "seconds": time.perf_counter() - start})
    return {"evaluations": rows}


def rank_search_table(sizes: list) -> list[dict]:
    from fastkpca.solvers.gaussian_process.rank import DEFAULT_RANK

    rows = []
    print(f"\n## The rank search against a fixed rank {DEFAULT_RANK} ({PRODUCTS_FORM} at the products table's θ, "
          "matrix-free, 16 probes, the same θ at every evaluation)\n")
    print("| N | rank | ranks of the evaluations | products of each | s of the last two |\n|---|---|---|---|---|")
    for n in sizes:
        runs = {}
        for rank in (DEFAULT_RANK, None):
            runs["searched" if rank is None else str(rank)] = r = C.run_child(
                __file__, "rank_search", {"n": n, "rank": rank}, timeout=7200)
            if "failed" in r:
                print(f"| {n:,} | {rank} | failed: {r['failed'][-200:]!r} |", flush=True)
                continue
            ev = r["evaluations"]
            ranks = ", ".join(str(e["rank"]) for e in ev)
            products = ", ".join(str(e["products"]) for e in ev)
            last = ", ".join(f"{e['seconds']:.1f}" for e in ev[-2:])
            print(f"| {n:,} | {'searched' if rank is None else rank} | {ranks} | {products} | {last} |", flush=True)
        rows.append({"n": n, "runs": runs})
    return rows


def products_table(sizes: list, ranks: list, storage: str = "auto") -> list[dict]:
    rows = []
    print(f"\n## Products per solve against rank and N ({PRODUCTS_FORM} at a fixed θ, noise 0.01, normalised "
          f"targets; 16 probes; storage {storage})\n")
    print("| N | rank | mean residual diag ÷ noise | likelihood + gradient: products (iterations) | s | "
          "final solve (tol 1e-6): products | s | preconditioner s (both) |\n|---|---|---|---|---|---|---|---|")
    for n in sizes:
        for rank in ranks:
            r = C.run_child(__file__, "products", {"n": n, "rank": rank, "storage": storage}, timeout=7200)
            if "failed" in r:
                print(f"| {n:,} | {rank} | failed: {r['failed'][-200:]!r} |", flush=True)
                continue
            e, f = r["evaluation"], r["final"]
            print(f"| {n:,} | {r['rank']} | {r['residual_over_noise']:.2f} | {e['products']} ({e['iterations']}) | "
                  f"{e['seconds']:.1f} | {f['products']} | {f['seconds']:.1f} | {r['preconditioner_seconds']:.1f} |",
                  flush=True)
            rows.append({"n": n, **r})
    return rows


SCALE_LANDMARKS = 2000


def nystrom_gp_mean(k, X: np.ndarray, y: np.ndarray, X_new: np.ndarray, m: int, seed: int = 0) -> np.ndarray:
    """The posterior mean of a Nyström GP (subset of regressors) with m uniform landmarks Z, for a kernel
    ``signal + WhiteKernel(σ²)`` and normalised targets y, in the well-conditioned feature form: with
    K_ZZ = U S Uᵀ (eigenvalues below 1e-12·max dropped) and features Φ = K(·, Z) U S^-½, the mean is
    Φ* (σ² I + ΦᵀΦ)⁻¹ Φᵀ y; the n × m features taken 10,000 rows at a time."""
    from scipy.linalg import cho_factor, cho_solve

    signal, noise = k.k1, k.k2.noise_level + 1e-10
    Z = X[np.random.default_rng(seed).choice(X.shape[0], size=m, replace=False)]
    values, vectors = np.linalg.eigh(signal(Z))
    keep = values > 1e-12 * values.max()
    root = vectors[:, keep] / np.sqrt(values[keep])
    A = noise * np.eye(root.shape[1])
    b = np.zeros(root.shape[1])
    for start in range(0, X.shape[0], 10_000):
        features = signal(X[start:start + 10_000], Z) @ root
        A += features.T @ features
        b += features.T @ y[start:start + 10_000]
    return (signal(X_new, Z) @ root) @ cho_solve(cho_factor(A, lower=True), b)


def child_scale(spec: dict) -> dict:
    """A fit past the Cholesky wall as a user writes it: ``GaussianProcessRegressor(kernel, normalize_y=True,
    solver="cg", memory_limit=...)`` on all n samples from the kernel's initial θ (the fit starts from its own
    exact fit on a random subset, ``subset_start``), L-BFGS-B to convergence; predictions with standard
    deviations; against an exact fit on a random ``reference`` samples (timed apart) and a Nyström GP's mean
    (2,000 uniform landmarks) at the fitted θ; test RMSE against the noiseless function."""
    from fastkpca import CG, GaussianProcessRegressor

    warnings.simplefilter("ignore")
    log_path = spec.get("log")

    def log(text: str) -> None:
        if log_path:
            with open(log_path, "a") as f:
                f.write(f"[{time.strftime('%H:%M:%S')}] N = {spec['n']:,}: {text}\n")

    n, sub = spec["n"], spec["reference"]
    X, y = data(n)
    new = data(N_TEST, seed=1)[0]
    truth = np.sin(2 * new[:, 0]) + 0.5 * new[:, 1] ** 2 - new[:, 2] * new[:, 3]

    def rmse(mean):
        return float(np.sqrt(np.mean((mean - truth) ** 2)))

    GaussianProcessRegressor(kernel(), normalize_y=True).fit(X[:50], y[:50])  # first-use imports
    C.reset_peak_rss()
    before = C.rss_bytes()
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:  # L-BFGS-B's ConvergenceWarning, if it stops short
        warnings.simplefilter("always")
        est = _logged(log)(kernel(), normalize_y=True, solver=CG(preconditioner_dtype=spec["dtype"]),
                           random_state=0, memory_limit=spec["memory_limit"]).fit(X, y)
    fit_seconds = time.perf_counter() - start
    stopped = [str(w.message).splitlines()[:2] for w in caught if "failed to converge" in str(w.message)]
    peak = C.peak_rss_bytes() - before
    info = est.solver_info_
    log(f"cg fit {fit_seconds:.1f} s ({info['start']['seconds']:.1f} s its subset start), {info['evaluations']} "
        f"evaluations, {info['products']} products; settling: {info['settle']}")
    start = time.perf_counter()
    mean, std = est.predict(new, return_std=True)
    predict_seconds = time.perf_counter() - start
    predict_peak = C.peak_rss_bytes() - before  # the largest of the fit's and the predictions'
    index = np.sort(np.random.default_rng(1).choice(n, sub, replace=False))
    start = time.perf_counter()
    reference = GaussianProcessRegressor(kernel(), normalize_y=True, solver="cholesky").fit(X[index], y[index])
    reference_seconds, reference_rmse = time.perf_counter() - start, rmse(reference.predict(new))
    del reference
    scale, shift = float(np.std(y)), float(np.mean(y))
    t0 = time.perf_counter()
    nystrom = {"rmse": rmse(nystrom_gp_mean(est.kernel_, X, (y - shift) / scale, new, SCALE_LANDMARKS) * scale + shift),
               "seconds": time.perf_counter() - t0}
    return {"n": n, "reference": sub, "reference_seconds": reference_seconds, "fit_seconds": fit_seconds,
            "start": info["start"], "evaluations": info["evaluations"], "products": info["products"],
            "iterations": info["iterations"], "preconditioner": info["preconditioner"], "stages": info["stages"],
            "standard_error": info["standard_error"], "final_residuals": np.asarray(info["final_residuals"]).tolist(),
            "peak_bytes": peak, "predict_peak_bytes": predict_peak, "predict_seconds": predict_seconds,
            "rmse": rmse(mean), "reference_rmse": reference_rmse, "nystrom": nystrom,
            "std_median": float(np.median(std)), "theta": est.kernel_.theta.tolist(),
            "lml": float(est.log_marginal_likelihood_value_), "settle": info["settle"], "probes": info["probes"],
            "lbfgs": " ".join(stopped[0]) if stopped else "converged"}


def scale_table(sizes: list, args, verdicts: list) -> list[dict]:
    limits = {50_000: 12 * 60, 100_000: 30 * 60}
    print(f"\n## Fits past the Cholesky wall (C·RBF(ARD) + White, solver='cg' on all N from the kernel's initial θ "
          f"(the fit's own subset start), L-BFGS-B to convergence; memory_limit={args.memory_limit!r}, "
          f"preconditioner {args.preconditioner_dtype}; against an exact fit on a random "
          f"{args.scale_reference:,} samples and a Nyström GP with {SCALE_LANDMARKS:,} uniform landmarks at the "
          "fitted θ)\n")
    print("| N | fit s (its subset start) | cg evaluations | products (per evaluation) | L-BFGS-B | preconditioner "
          "rank | peak GiB: fit / with predict | predict s | lml | test RMSE: cg / exact on the subset / Nyström "
          "at θ |\n"
          "|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for n in sizes:
        spec = {"n": n, "reference": args.scale_reference, "memory_limit": args.memory_limit,
                "dtype": args.preconditioner_dtype, "log": args.log}
        r = C.run_child(__file__, "scale", spec, timeout=4 * 3600)
        rows.append(r)
        if "failed" in r:
            print(f"| {n:,} | failed: {r['failed'][-300:]!r} |", flush=True)
            verdicts.append((f"cg fit at N = {n:,}", False, "failed"))
            continue
        per = r["products"] / max(1, r["evaluations"])
        print(f"| {n:,} | {r['fit_seconds']:.0f} ({r['start']['seconds']:.0f}) | {r['evaluations']} | "
              f"{r['products']} ({per:.0f}) | {r['lbfgs']} | {r['preconditioner']['rank']} "
              f"{r['preconditioner']['dtype']} | {r['peak_bytes'] / 2**30:.2f} / "
              f"{r['predict_peak_bytes'] / 2**30:.2f} | {r['predict_seconds']:.0f} | {r['lml']:.2f} | "
              f"{r['rmse']:.6f} / {r['reference_rmse']:.6f} / {r['nystrom']['rmse']:.6f} |", flush=True)
        if n in limits:
            verdicts.append((f"cg fit at N = {n:,} within {limits[n] // 60} min", r["fit_seconds"] <= limits[n],
                             f"{r['fit_seconds'] / 60:.1f} min"))
        verdicts.append((f"cg fit at N = {n:,}: RMSE below the exact fit's on {args.scale_reference:,} samples",
                         r["rmse"] < r["reference_rmse"], f"{r['rmse']:.5f} against {r['reference_rmse']:.5f}"))
        for what, key in (("fit", "peak_bytes"), ("fit and predict(return_std=True)", "predict_peak_bytes")):
            verdicts.append((f"cg {what} at N = {n:,}: peak within memory_limit",
                             r[key] <= _limit_bytes(args.memory_limit), f"{r[key] / 2**30:.2f} GiB"))
    return rows


def _limit_bytes(limit: str) -> int:
    from fastkpca import _validation

    return int(_validation.memory_limit(limit))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=C.parse_ints, default=[1000, 2000])
    parser.add_argument("--repeats", type=int, default=1, help="fits per library and size (alternated)")
    parser.add_argument("--agreement-n", type=int, default=1000, help="0: skip the agreement table")
    parser.add_argument("--evaluation", type=int, default=0, help="N of the one-evaluation run (0: none)")
    parser.add_argument("--cg-agreement", type=int, default=0, help="N of solver='cg' against 'cholesky' (0: none)")
    parser.add_argument("--probes", type=C.parse_ints, default=[16],
                        help="n_probes of the cg agreement table (each against the same Cholesky evaluations)")
    parser.add_argument("--fit-probes", type=C.parse_ints, default=[16],
                        help="n_probes of the cg fits (one fit each, against one Cholesky fit)")
    parser.add_argument("--fit-forms", default="rbf,matern",
                        help="kernels of the cg fits: rbf (C·RBF(ARD) + White), matern (C·Matern5/2(ARD) + White)")
    parser.add_argument("--cg-fits", type=C.parse_ints, default=[], help="N of whole fits by both solvers")
    parser.add_argument("--control-variate", default="on", help="cg fits with the gradient's control variate "
                        "'on', 'off' (Hutchinson's estimate alone) or both ('on,off')")
    parser.add_argument("--exact-from-cg", action="store_true",
                        help="start the Cholesky fit's L-BFGS-B from the first cg fit's θ (the exact optimum near "
                             "it) instead of fitting it from the kernel's initial θ")
    parser.add_argument("--reference", default=None,
                        help="JSON of recorded Cholesky optima (bench/reference/gp_cholesky_fits.json): a form and "
                             "N found there is not fitted again, its model is made at the recorded θ")
    parser.add_argument("--cg-products", type=C.parse_ints, default=[], help="N of the products-per-solve table")
    parser.add_argument("--ranks", type=C.parse_ints, default=[64, 256, 1024], help="ranks of that table")
    parser.add_argument("--products-storage", default="auto", choices=("auto", "matrix_free"),
                        help="the kernel's storage in that table (matrix_free: products recompute it)")
    parser.add_argument("--rank-search", type=C.parse_ints, default=[],
                        help="N of the rank search against the fixed default rank")
    parser.add_argument("--scale", type=C.parse_ints, default=[], help="N of the fits past the Cholesky wall")
    parser.add_argument("--scale-reference", type=int, default=5000,
                        help="samples of the exact fit the scale fits are compared with (a random subset)")
    parser.add_argument("--memory-limit", default="2GB", help="memory_limit of the scale fits")
    parser.add_argument("--preconditioner-dtype", default="float64", choices=("float64", "float32"))
    parser.add_argument("--log", default=None, help="file the scale and cg fits append their progress to")
    parser.add_argument("--record", default=None,
                        help="JSON file a whole Cholesky fit of --cg-fits is added to (the format --reference reads)")
    parser.add_argument("--out", default=None, help="folder for gaussian_process.json")
    parser.add_argument("--hard", type=int, default=0, help="N of cg against Cholesky on the hard data (0: none)")
    parser.add_argument("--hard-reference", default=None,
                        help="gaussian_process.json of an earlier --hard run at that N: its Cholesky fit is reused")
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return C.serve_child({"fit": child_fit, "evaluation": child_evaluation, "cg_fit": child_cg_fit,
                              "products": child_products, "rank_search": child_rank_search,
                              "scale": child_scale, "hard": child_hard}, args.child)
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
    if args.hard:
        payload["hard"] = hard_table(args.hard, verdicts, args.hard_reference)
    if args.cg_agreement:
        rows = cg_agreement(args.cg_agreement, args.probes)
        payload["cg_agreement"] = rows
        print(f"\n## solver='cg' against solver='cholesky' at N = {args.cg_agreement:,}, 3 random θ per kernel\n")
        print("| kernel | probes | lml rel. diff | its std. error (rel.) | gradient cosine | gradient max rel. | "
              "products | Cholesky s | cg s |\n|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['form']} | {r['probes']} | {r['value_rel']:.1e} | {r['standard_error_rel']:.1e} | "
                  f"{r['cosine']:.5f} | {r['gradient_rel']:.1e} | {r['products']} | {r['seconds']['cholesky']:.2f} | "
                  f"{r['seconds']['cg']:.2f} |")
        for probes in args.probes:
            mine = [r for r in rows if r["probes"] == probes]
            worst = max(r["value_rel"] for r in mine)
            verdicts.append((f"cg lml within 0.1% at N = {args.cg_agreement:,}, {probes} probes", worst <= 1e-3,
                             f"{worst:.1e}"))
            cos = min(r["cosine"] for r in mine)
            verdicts.append((f"cg gradient cosine ≥ 0.99 at N = {args.cg_agreement:,}, {probes} probes", cos >= 0.99,
                             f"{cos:.5f}"))
    if args.cg_fits:
        print("\n## Fits by solver='cholesky' / solver='cg' (normalize_y, L-BFGS-B)\n")
        print("| kernel | N | cg fit | seconds | evaluations | cg products | peak GiB | hyperparameters max rel. | "
              "C, ℓ₀…ℓ₃, noise max rel. | exact lml: cg θ's shortfall (rel.) | test RMSE | std max rel. |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|")
        chosen = [FIT_FORMS[name.strip()] for name in args.fit_forms.split(",") if name.strip()]
        variants = [name.strip() for name in args.control_variate.split(",") if name.strip()]
        if not variants or set(variants) - {"on", "off"}:
            parser.error("--control-variate takes 'on', 'off' or 'on,off'")
        references = json.loads(Path(args.reference).read_text()) if args.reference else {}
        payload["cg_fits"] = [row for n in args.cg_fits
                              for row in cg_fits(n, chosen, args.fit_probes, variants, verdicts, references,
                                                 args.exact_from_cg, args.log, args.record)]
        print()
        for r in payload["cg_fits"]:
            if "theta" in r:
                print(f"- {r['form']}, N = {r['n']:,}, {r['probes']} probes, control variate "
                      f"{r['control_variate']}: control variate "
                      f"{r['runs']['cg'].get('stages', {}).get('control_variate', 0.0):.1f} s of the cg fit's "
                      f"{r['runs']['cg']['seconds']:.1f} s; exp θ by Cholesky "
                      f"{np.round(np.exp(r['theta']['cholesky']), 4).tolist()}, by cg "
                      f"{np.round(np.exp(r['theta']['cg']), 4).tolist()}")
    if args.cg_products:
        payload["cg_products"] = products_table(args.cg_products, args.ranks, args.products_storage)
    if args.rank_search:
        payload["rank_search"] = rank_search_table(args.rank_search)
    if args.scale:
        payload["scale"] = scale_table(args.scale, args, verdicts)
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
