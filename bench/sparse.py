"""Sparse samples against scikit-learn's sparse path (issue "A kernel is one object"), every fit in a fresh
process (its own peak RSS), the two libraries alternated, medians of ``--repeats``:

    python bench/sparse.py                     # 5,000 × 50,000 CSR, density 1e-3 (text-like)
    python bench/sparse.py --large             # and 20,000 × 20,000, density 5e-4, within memory_limit="1GB"

Data: ``scipy.sparse.random(n, d, density, format="csr", random_state=0)`` (values uniform on [0, 1)); targets
y = the row sums plus N(0, 0.1²) noise. Fits, with scikit-learn's defaults otherwise:
``KernelPCA(5, kernel="rbf")``, ``KernelRidge(alpha=1, kernel="rbf")``, ``SpectralClustering(4,
affinity="rbf", random_state=0)`` on the 5,000-sample set; ``KernelPCA(5, kernel=k)`` for k in rbf, cosine,
linear on the 20,000-sample set (fastkpca with ``memory_limit="1GB"``, scikit-learn unlimited), where the
eigenvalues (relative difference) and the subspaces (largest principal angle) of the two are compared.
Reported: seconds of the fit, peak RSS growth over the data (the peak RSS, reset after the data are made, less
the RSS before the fit), the speed-up, and fastkpca's solver figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

SMALL = (5000, 50_000, 1e-3)
LARGE = (20_000, 20_000, 5e-4)


def data(n: int, d: int, density: float):
    from scipy import sparse

    X = sparse.random(n, d, density=density, format="csr", random_state=0)
    y = np.asarray(X.sum(axis=1)).ravel() + np.random.default_rng(0).normal(0, 0.1, n)
    return X, y


def child(spec: dict) -> dict:
    X, y = data(*spec["data"])
    lib, fit, kernel = spec["lib"], spec["fit"], spec.get("kernel", "rbf")
    if lib == "sklearn":
        from sklearn.cluster import SpectralClustering
        from sklearn.decomposition import KernelPCA
        from sklearn.kernel_ridge import KernelRidge
        extra: dict = {}
    else:
        from fastkpca import KernelPCA, KernelRidge, SpectralClustering
        extra = {"memory_limit": spec["memory_limit"]} if spec.get("memory_limit") else {}
        KernelPCA(2, kernel=kernel).fit(X[:300])  # first-use imports and the native module
    C.reset_peak_rss()
    before = C.rss_bytes()
    start = time.perf_counter()
    if fit == "kpca":
        est = KernelPCA(5, kernel=kernel, **extra).fit(X)
    elif fit == "ridge":
        est = KernelRidge(alpha=1.0, kernel=kernel, **extra).fit(X, y)
    else:
        est = SpectralClustering(4, affinity=kernel, random_state=0, **extra).fit(X)
    seconds = time.perf_counter() - start
    out = {"seconds": seconds, "peak_bytes": C.peak_rss_bytes() - before}
    if spec.get("save"):
        arrays = ({"values": est.eigenvalues_, "vectors": est.eigenvectors_} if fit == "kpca" else
                  {"labels": est.labels_} if fit == "clustering" else {"dual": est.dual_coef_})
        np.savez(spec["save"], **arrays)
    info = getattr(est, "solver_info_", None) or {}
    out["info"] = {k: info.get(k) for k in ("solver", "storage", "n_passes", "iterations", "block_size",
                                            "kernel_bytes") if k in info}
    return out


def compare(fit: str, ours: str, theirs: str) -> dict:
    """How close fastkpca's result is to scikit-learn's."""
    a, b = np.load(ours), np.load(theirs)
    if fit == "kpca":
        from scipy.linalg import subspace_angles

        rel = float(np.max(np.abs(a["values"] - b["values"]) / np.abs(b["values"])))
        return {"eigenvalues_rel": rel, "max_angle": float(subspace_angles(a["vectors"], b["vectors"]).max())}
    if fit == "clustering":
        from sklearn.metrics import adjusted_rand_score

        return {"ari": float(adjusted_rand_score(a["labels"], b["labels"]))}
    return {"dual_rel": float(np.abs(a["dual"] - b["dual"]).max() / np.abs(b["dual"]).max())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--large", action="store_true", help="also the 20,000 × 20,000 set within 1 GB")
    parser.add_argument("--large-only", action="store_true")
    parser.add_argument("--fits", type=C.parse_list, default=["kpca", "ridge", "clustering"])
    parser.add_argument("--out", default=None, help="folder for sparse.json")
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return C.serve_child({"fit": child}, args.child)
    print(f"# Sparse samples against scikit-learn; CPU: {C.cpu_description()}\n")
    cases = [] if args.large_only else [(SMALL, fit, "rbf", None) for fit in args.fits]
    if args.large or args.large_only:
        cases += [(LARGE, "kpca", kernel, "1GB") for kernel in ("rbf", "cosine", "linear")]
    print("| data | fit | kernel | fastkpca s | scikit-learn s | speed-up | fastkpca peak GiB | scikit-learn peak GiB "
          "| agreement | fastkpca solver |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape, fit, kernel, limit in cases:
            runs: dict[str, list] = {"fastkpca": [], "sklearn": []}
            saved = {lib: str(Path(tmp) / f"{lib}-{fit}-{kernel}-{shape[0]}.npz") for lib in runs}
            for rep in range(args.repeats):
                for lib in (("fastkpca", "sklearn") if rep % 2 == 0 else ("sklearn", "fastkpca")):
                    spec = {"data": shape, "lib": lib, "fit": fit, "kernel": kernel, "memory_limit": limit,
                            "save": saved[lib] if rep == 0 else None}
                    runs[lib].append(C.run_child(__file__, "fit", spec, timeout=7200))
            failed = {lib: r[0]["failed"][-300:] for lib, r in runs.items() if any("failed" in x for x in r)}
            label = f"{shape[0]} × {shape[1]}, {shape[2]:g}"
            if failed:
                print(f"| {label} | {fit} | {kernel} | failed: {failed!r} |", flush=True)
                rows.append({"data": shape, "fit": fit, "kernel": kernel, "failed": failed})
                continue
            seconds = {lib: C.median([r["seconds"] for r in rs]) for lib, rs in runs.items()}
            peak = {lib: C.median([r["peak_bytes"] for r in rs]) / 2**30 for lib, rs in runs.items()}
            agreement = compare(fit, saved["fastkpca"], saved["sklearn"])
            info = runs["fastkpca"][0]["info"]
            print(f"| {label} | {fit} | {kernel} | {seconds['fastkpca']:.2f} | {seconds['sklearn']:.2f} | "
                  f"{seconds['sklearn'] / seconds['fastkpca']:.2f}× | {peak['fastkpca']:.2f} | {peak['sklearn']:.2f} | "
                  f"{', '.join(f'{k} {v:.2g}' for k, v in agreement.items())} | {info} |", flush=True)
            rows.append({"data": shape, "fit": fit, "kernel": kernel, "seconds": seconds, "peak_gib": peak,
                         "agreement": agreement, "info": info,
                         "all_seconds": {lib: [r["seconds"] for r in rs] for lib, rs in runs.items()}})
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "sparse.json").write_text(json.dumps({"cpu": C.cpu_description(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
