"""Spectral embedding and clustering against scikit-learn (issue "Spectral embedding and spectral
clustering"), every fit in a fresh process (its own peak RSS), on d = 16 data with 8 clusters
(make_blobs, seed 0):

    python bench/spectral.py --sizes 10000,20000           # scikit-learn and fastkpca, same run
    python bench/spectral.py --sizes 100000 --no-sklearn --memory-limit 1GiB
    python bench/spectral.py --sizes 1000000 --no-sklearn --nystrom-only

Measured: ``SpectralEmbedding(n_components=8, affinity="rbf")`` and ``SpectralClustering(n_clusters=8)``
(scikit-learn: its default solver, arpack in shift-invert mode on the dense Laplacian; fastkpca: block
Lanczos on the normalised affinity operator), ``random_state=0``. Reported: seconds, peak RSS growth
(ru_maxrss less the RSS before the fit), the speed-up, the largest principal angle between the two
embeddings (meaningful where the eigengap is: the ninth Laplacian eigenvalue of 8 separated blobs sits in
the bulk, so the last embedding column is determined only up to its gap, which is printed) and the
adjusted Rand index of the labels; for fastkpca also passes, storage and the largest residual. With
``--nystrom`` also the Nyström fit (m = 1000) and its angle against the exact one.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def child(spec: dict) -> dict:
    from sklearn.datasets import make_blobs

    X, y = make_blobs(spec["n"], n_features=16, centers=8, random_state=0)
    lib, what = spec["lib"], spec["what"]
    if lib == "sklearn":
        from sklearn.cluster import SpectralClustering
        from sklearn.manifold import SpectralEmbedding
        extra = {}
    else:
        from fastkpca import Nystrom, SpectralClustering, SpectralEmbedding
        extra = {"memory_limit": spec.get("memory_limit")}
        if spec.get("solver"):
            extra.update(eigen_solver=Nystrom(n_landmarks=spec.get("m")) if spec["solver"] == "nystrom"
                         else spec["solver"])
        SpectralEmbedding(n_components=2, affinity="rbf", random_state=0).fit(X[:300])  # first-use imports
    before = _rss_bytes()
    start = time.perf_counter()
    if what == "embedding":
        est = SpectralEmbedding(n_components=8, affinity="rbf", random_state=0, **extra).fit(X)
        result = est.embedding_
    else:
        est = SpectralClustering(n_clusters=8, random_state=0, **extra).fit(X)
        result = est.labels_
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    out = {"seconds": seconds, "peak_bytes": peak, "result": result.tolist() if spec["n"] <= 20000 else None,
           "y": y.tolist() if spec["n"] <= 20000 else None}
    info = getattr(est, "solver_info_", None)
    if info:
        out["info"] = {k: info.get(k) for k in ("solver", "storage", "n_passes", "block_size", "kernel_bytes",
                                                "n_landmarks", "seconds")}
        if "residual_norms" in info:
            out["info"]["max_residual"] = float(np.max(info["residual_norms"]))
        if "laplacian_eigenvalues" in info:
            out["info"]["laplacian_eigenvalues"] = [float(x) for x in info["laplacian_eigenvalues"]]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=C.parse_ints, default=[10000, 20000])
    parser.add_argument("--no-sklearn", action="store_true")
    parser.add_argument("--memory-limit", default=None)
    parser.add_argument("--nystrom", action="store_true", help="also the Nyström fit (m = 1000)")
    parser.add_argument("--nystrom-only", action="store_true")
    parser.add_argument("--out", default=None, help="folder for spectral.json")
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return C.serve_child({"fit": child}, args.child)
    from scipy.linalg import subspace_angles
    from sklearn.metrics import adjusted_rand_score

    print(f"# Spectral embedding / clustering, d = 16, 8 blobs; CPU: {C.cpu_description()}\n")
    print("| N | estimator | library | solver | seconds | peak GiB | peak / (N²·8 B) | passes | storage | "
          "speed-up | max angle | ARI vs sklearn | ARI vs truth |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for n in args.sizes:
        for what in ("embedding", "clustering"):
            runs = {}
            if not args.nystrom_only:
                runs["fastkpca"] = C.run_child(__file__, "fit", {"n": n, "lib": "fastkpca", "what": what,
                                                                  "memory_limit": args.memory_limit})
            if args.nystrom or args.nystrom_only:
                runs["fastkpca nystrom"] = C.run_child(__file__, "fit", {"n": n, "lib": "fastkpca", "what": what,
                                                                          "solver": "nystrom", "m": 1000,
                                                                          "memory_limit": args.memory_limit})
            if not args.no_sklearn:
                runs["scikit-learn"] = C.run_child(__file__, "fit", {"n": n, "lib": "sklearn", "what": what})
            ref = runs.get("scikit-learn") or runs.get("fastkpca")
            for lib, r in runs.items():
                if "failed" in r:
                    print(f"| {n} | {what} | {lib} | failed: {r['failed'][-200:]!r} |")
                    continue
                info = r.get("info") or {}
                speed = angle = ari = truth = ""
                if ref is not r and ref and "failed" not in ref:
                    speed = f"{ref['seconds'] / r['seconds']:.1f}×"
                    if r["result"] is not None and ref["result"] is not None:
                        a, b = np.asarray(r["result"]), np.asarray(ref["result"])
                        if what == "embedding":
                            angle = f"{subspace_angles(a, b).max():.2e}"
                        else:
                            ari = f"{adjusted_rand_score(a, b):.4f}"
                if what == "clustering" and r["result"] is not None:
                    truth = f"{adjusted_rand_score(r['result'], r['y']):.4f}"
                print(f"| {n} | {what} | {lib} | {info.get('solver', 'arpack')} | {r['seconds']:.2f} | "
                      f"{r['peak_bytes'] / 2**30:.2f} | {r['peak_bytes'] / (n * n * 8):.2f} | "
                      f"{info.get('n_passes', '')} | {info.get('storage', '')} | {speed} | {angle} | {ari} | {truth} |",
                      flush=True)
                rows.append({"n": n, "what": what, "lib": lib, "seconds": r["seconds"], "peak_bytes": r["peak_bytes"],
                             "info": info})
                lam = info.get("laplacian_eigenvalues")
                if lam and what == "embedding":
                    print(f"|   | Laplacian eigenvalues {', '.join(f'{x:.3g}' for x in lam)} | | | | | | | | | | | |")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "spectral.json").write_text(json.dumps({"cpu": C.cpu_description(), "rows": rows},
                                                                  indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
