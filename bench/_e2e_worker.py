"""Child process of bench/run.py: one measurement per process, so each gets its own peak RSS.

Not meant to be run by hand (bench/run.py starts it), but it can be, for debugging::

    PYTHONPATH=python python bench/_e2e_worker.py fit '{"lib": "fastkpca", "solver": "auto", ...}'

Usage: ``_e2e_worker.py MODE SPEC_JSON``. The result is printed as one JSON line after the marker
``RESULT_MARKER`` on stdout (anything else the libraries print is ignored by the driver). Modes:

``reference``  the exact top eigenpairs of the doubly centered float64 kernel of one data set, saved as
               ``<prefix>_values.npy`` / ``<prefix>_vectors.npy`` (scipy.linalg.eigh with subset_by_index
               up to ``eigh_max_n`` samples, else ARPACK (scipy.sparse.linalg.eigsh) with tol=0).
``fit``        one KernelPCA.fit_transform + transform of fastkpca or scikit-learn: times, peak RSS of
               the fit, and accuracy against the cached reference.
``roofline``   Gram build against a NumPy GEMM of the same shape, solver passes against a measured read
               bandwidth, both for every thread count.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import statistics
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gram import fastkpca_kwargs, sklearn_kernel  # noqa: E402

RESULT_MARKER = "@@e2e-result@@"
# Printed (with time.time()) just before the timed fit: if the run is killed for its timeout, the
# driver knows how long the fit itself had been running.
FIT_START_MARKER = "@@e2e-fit-start@@"


# --------------------------------------------------------------------------------------------- data

def make_data(n: int, d: int, seed: int, n_new: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Training data X (n×d) and new samples (n_new×d), float64, the same for a given (n, d, seed).

    Anisotropic Gaussian: column j of a standard normal matrix is scaled by 1/sqrt(j+1), normalised
    so the mean variance per feature is 1 (gamma = 1/d keeps its usual meaning). Unlike isotropic data
    it gives a decaying kernel spectrum with clear gaps between the leading eigenvalues, so the
    top-k subspaces compared by the accuracy check are well defined.
    """
    rng = np.random.default_rng([seed, n, d])
    scale = 1.0 / np.sqrt(np.arange(1, d + 1))
    scale *= np.sqrt(d / np.sum(scale**2))
    X = rng.standard_normal((n, d)) * scale
    X_new = rng.standard_normal((n_new, d)) * scale
    return X, X_new


# --------------------------------------------------------------------------------------------- memory

def rss_now() -> int:
    """Resident set size of this process now, in bytes."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import psutil

        return psutil.Process().memory_info().rss


def rss_peak() -> int:
    """resource.getrusage(RUSAGE_SELF).ru_maxrss in bytes (kilobytes on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def reset_peak() -> bool:
    """Reset the peak RSS to the current RSS (Linux >= 4.0: ``5 > /proc/self/clear_refs``), so that the
    peak read after a call belongs to that call and not to an earlier allocation (or to the parent
    process, which ru_maxrss inherits across fork + exec). Returns whether it worked."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


# --------------------------------------------------------------------------------------------- reference

def reference(spec: dict) -> dict:
    import scipy.linalg
    import scipy.sparse.linalg

    import fastkpca

    n, d, k = spec["n"], spec["d"], spec["k"]
    X, _ = make_data(n, d, spec["seed"])
    kw = fastkpca_kwargs(spec["kernel"], d)
    t0 = time.perf_counter()
    K = fastkpca.gram(X, **kw)  # float64: X is float64
    fastkpca.double_center(K)
    t_kernel = time.perf_counter() - t0
    t0 = time.perf_counter()
    if n <= spec["eigh_max_n"]:
        method = "scipy.linalg.eigh(subset_by_index)"
        values, vectors = scipy.linalg.eigh(K, subset_by_index=[n - k, n - 1], overwrite_a=True)
    else:
        method = "scipy.sparse.linalg.eigsh (ARPACK, tol=0)"
        v0 = np.random.default_rng(spec["seed"]).uniform(-1, 1, n)
        values, vectors = scipy.sparse.linalg.eigsh(K, k, which="LA", tol=0, v0=v0)
    t_solve = time.perf_counter() - t0
    del K
    order = np.argsort(values)[::-1]
    prefix = spec["prefix"]
    np.save(prefix + "_values.npy", values[order])
    np.save(prefix + "_vectors.npy", np.ascontiguousarray(vectors[:, order]))
    return {"method": method, "kernel_s": t_kernel, "solve_s": t_solve, "k": k}


def load_reference(prefix: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    values = np.load(prefix + "_values.npy")
    vectors = np.load(prefix + "_vectors.npy", mmap_mode="r")
    return values, np.array(vectors[:, :k])


def accuracy(values, vectors, ref_values, ref_vectors) -> dict:
    """Eigenvalue errors against the reference and the largest principal angle between the subspaces."""
    from scipy.linalg import subspace_angles

    k = len(values)
    values = np.asarray(values, dtype=np.float64)
    ref = ref_values[:k]
    diff = np.abs(values - ref)
    angles = subspace_angles(np.asarray(vectors, dtype=np.float64), ref_vectors[:, :k])
    gap = (ref_values[k - 1] - ref_values[k]) / ref_values[0] if len(ref_values) > k else float("nan")
    return {
        "value_err": float(diff.max() / abs(ref[0])),                          # max |Δλ_i| / λ_1
        "value_err_each": float(np.max(diff / np.maximum(np.abs(ref), 1e-300))),  # max |Δλ_i| / λ_i
        "max_angle": float(np.max(angles)),
        "rel_gap_k": float(gap),                                               # (λ_k - λ_k+1) / λ_1
    }


# --------------------------------------------------------------------------------------------- fit

def _estimator(spec: dict):
    """(make(), fit_transform(est, X), transform(est, X_new, X), note) for the spec's library."""
    d = spec["d"]
    kw = fastkpca_kwargs(spec["kernel"], d)
    common = dict(n_components=spec["k"], eigen_solver=spec["solver"], random_state=spec["seed"])
    if spec["lib"] == "fastkpca":
        import fastkpca

        stages = {}

        def make():
            return fastkpca.KernelPCA(**kw, **common, n_jobs=spec["threads"])

        def fit(est, X):
            with fastkpca.progress(verbose=0, callback=lambda stage, info: stages.__setitem__(stage, info)):
                return est.fit_transform(X)

        return make, fit, (lambda est, Xn, X: est.transform(Xn)), stages
    from sklearn.decomposition import KernelPCA

    if spec["kernel"] == "laplacian":
        # scikit-learn's KernelPCA has no laplacian kernel: precompute it with its own pairwise function.
        fn, kw_of = sklearn_kernel("laplacian")
        kkw = kw_of(d)
        return ((lambda: KernelPCA(kernel="precomputed", **common)),
                (lambda est, X: est.fit_transform(fn(X, **kkw))),
                (lambda est, Xn, X: est.transform(fn(Xn, X, **kkw))), None)
    return ((lambda: KernelPCA(**kw, **common)), (lambda est, X: est.fit_transform(X)),
            (lambda est, Xn, X: est.transform(Xn)), None)


def prefault(nbytes: int) -> None:
    """Touch and free nbytes of fresh memory just before the timed fit.

    On a virtual machine whose host takes back the memory a guest frees (seen on the 2-core Firecracker
    VM the README's figures come from), the first touch of memory the host has reclaimed costs 1–2 s per
    GB, 10–20 times a page fault on real hardware; which runs pay it depends on how long ago memory was
    freed. Faulting the memory in first gives every library the same, hardware-like start. The peak RSS
    is reset afterwards, so this does not count in the memory figures.
    """
    if nbytes <= 0:
        return
    from fastkpca._validation import available_memory

    nbytes = min(int(nbytes), int(0.6 * available_memory()))
    buf = np.empty(nbytes // 8)
    buf[::512] = 1.0  # one write per 4 KiB page
    del buf
    gc.collect()


def fit(spec: dict) -> dict:
    from threadpoolctl import threadpool_limits

    n, k = spec["n"], spec["k"]
    dtype = np.dtype(spec["dtype"])
    X64, X_new64 = make_data(n, spec["d"], spec["seed"], spec["transform_samples"])
    X, X_new = X64.astype(dtype), X_new64.astype(dtype)
    del X64, X_new64
    make, fit_transform, transform, stages = _estimator(spec)
    with threadpool_limits(spec["threads"]), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning etc.: the accuracy columns tell
        # Warm-up on a small problem: imports, thread pools, first-call costs stay out of the timings.
        m = min(n, 300)
        warm = make()
        fit_transform(warm, X[:m])
        transform(warm, X_new[:10], X[:m])
        del warm
        gc.collect()

        prefault(spec.get("prefault_bytes", 0))
        reset_ok = reset_peak()
        baseline = rss_now()
        peak_before = rss_peak()
        est = make()
        print(f"{FIT_START_MARKER}{time.time()}", flush=True)
        t0 = time.perf_counter()
        Z = fit_transform(est, X)
        fit_s = time.perf_counter() - t0
        peak = rss_peak()
        transform_times = []
        for _ in range(3):
            t0 = time.perf_counter()
            Z_new = transform(est, X_new, X)
            transform_times.append(time.perf_counter() - t0)

    out = {
        "fit_s": fit_s, "transform_s": statistics.median(transform_times), "transform_times_s": transform_times,
        "peak_rss": peak, "baseline_rss": baseline, "peak_rss_before_fit": peak_before,
        "fit_peak_bytes": peak - baseline, "peak_reset": reset_ok,
        "out_dtype": str(Z.dtype), "transform_shape": list(Z_new.shape),
    }
    if spec["lib"] == "fastkpca":
        info = dict(est.solver_info_)
        out["resolved_solver"] = info.get("solver")
        out["solve_s"] = info.get("solve_seconds")
        out["kernel_s"] = stages.get("kernel", {}).get("seconds")
        out["center_s"] = stages.get("center", {}).get("seconds")
        if "n_passes" in info:
            out["passes"] = info["n_passes"]
            # Bytes read per pass, when the fit stored its kernel (full or packed): the kernel it held.
            if info.get("storage") in ("full", "packed"):
                out["solver_gbs"] = info["kernel_bytes"] * info["n_passes"] / info["solve_seconds"] / 1e9
        out["solver_info"] = {key: val for key, val in info.items() if key != "residual_norms"}
    if spec.get("ref_prefix"):
        ref_values, ref_vectors = load_reference(spec["ref_prefix"], k)
        out.update(accuracy(est.eigenvalues_[:k], est.eigenvectors_[:, :k], ref_values, ref_vectors))
    return out


# --------------------------------------------------------------------------------------------- roofline

def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
        del result
    return best


def _threaded_sum(A: np.ndarray, threads: int, pool: ThreadPoolExecutor) -> float:
    """Sum of A read by ``threads`` threads, one block of rows each (NumPy releases the GIL in sums)."""
    if threads == 1:
        return float(A.sum())
    return float(sum(pool.map(np.sum, np.array_split(A, threads))))


def roofline(spec: dict) -> dict:
    from threadpoolctl import threadpool_limits

    import fastkpca

    n, threads_list, repeats = spec["n"], spec["threads"], spec["repeats"]
    gram_rows = []
    for d in spec["dims"]:
        X, _ = make_data(n, d, spec["seed"])
        kw = fastkpca_kwargs("rbf", d)
        fastkpca.gram(X[:500], **kw)  # warm-up
        _ = X[:500] @ X[:500].T
        t1 = {}
        for p in threads_list:
            t_gram = _best(lambda: fastkpca.gram(X, **kw, n_jobs=p), repeats)  # noqa: F821 (a closure over a loop variable, deleted after its call)
            with threadpool_limits(p, user_api="blas"):
                t_gemm = _best(lambda: X @ X.T, repeats)  # noqa: F821 (a closure over a loop variable, deleted after its call)
            t1.setdefault("gram", t_gram)
            flops = 2.0 * n * n * d
            gram_rows.append({
                "N": n, "d": d, "threads": p, "gram_s": t_gram, "gemm_s": t_gemm,
                "gram_gflops": flops / t_gram / 1e9, "gemm_gflops": flops / t_gemm / 1e9,
                "gram_meps": n * n / t_gram / 1e6, "gemm_meps": n * n / t_gemm / 1e6,
                "of_gemm": t_gemm / t_gram, "par_eff": t1["gram"] / (p * t_gram) if p > 1 else float("nan"),
            })
            gc.collect()
        del X

    # Solver passes: the block Lanczos solve of a fit (implicitly centered) on the packed rbf kernel that
    # KernelPCA builds for it; each pass reads the packed kernel once (about N²/2 entries), which is what the
    # bandwidth is computed from. The read bandwidth is NumPy summing the full N×N matrix.
    from fastkpca.solvers.krylov import lanczos

    X, _ = make_data(n, spec["solver_d"], spec["seed"])
    K = fastkpca.gram(X, **fastkpca_kwargs("rbf", spec["solver_d"]))
    kw = fastkpca_kwargs("rbf", spec["solver_d"])
    packed = fastkpca.kernel_operator(X, kernel="rbf", gamma=kw["gamma"], storage="packed")
    packed_bytes = packed.kernel_bytes
    del X
    nbytes = K.nbytes
    pool = ThreadPoolExecutor(max(threads_list))
    read_1 = nbytes / _best(lambda: K.sum(), 5) / 1e9
    solver_rows = []
    per_pass_1 = None
    for p in threads_list:
        read_p = nbytes / _best(lambda: _threaded_sum(K, p, pool), 5) / 1e9
        best = None
        for _ in range(repeats):
            t0 = time.perf_counter()
            _, _, info = lanczos.solve(packed.centered(), spec["k"], tol=None, maxiter=None, block_size=None,
                                       random_state=spec["seed"], threads=p)
            solve_s = time.perf_counter() - t0
            per_pass = solve_s / info["n_passes"]
            if best is None or per_pass < best["s_per_pass"]:
                best = {"passes": info["n_passes"], "vectors": info["n_vectors"], "block_size": info["block_size"],
                        "solve_s": solve_s, "s_per_pass": per_pass,
                        # flops of the products with K alone: 2·N² per vector multiplied
                        "pass_gflops": 2.0 * n * n * info["n_vectors"] / solve_s / 1e9}
        if per_pass_1 is None:
            per_pass_1 = best["s_per_pass"]
        gbs = packed_bytes / best["s_per_pass"] / 1e9
        solver_rows.append({
            "N": n, "k": spec["k"], "threads": p, **best, "solver_gbs": gbs, "read_gbs": read_p,
            "of_read": gbs / read_p, "of_read_1thread_sum": gbs / read_1,
            "par_eff": per_pass_1 / (p * best["s_per_pass"]) if p > 1 else float("nan"),
        })
    pool.shutdown()
    return {"gram": gram_rows, "solver": solver_rows, "read_gbs_sum_1thread": read_1, "matrix_bytes": nbytes,
            "packed_bytes": packed_bytes}


# --------------------------------------------------------------------------------------------- main

MODES = {"reference": reference, "fit": fit, "roofline": roofline}


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in MODES:
        print(f"usage: {argv[0]} {{{','.join(MODES)}}} SPEC_JSON", file=sys.stderr)
        return 2
    result = MODES[argv[1]](json.loads(argv[2]))
    sys.stdout.flush()
    print(RESULT_MARKER + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
