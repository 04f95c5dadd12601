"""Command line: ``python -m fastkpca demo``."""

from __future__ import annotations

import argparse
import sys
import time


def _demo(args) -> int:
    import numpy as np

    import fastkpca

    fastkpca.show_config()
    rng = np.random.default_rng(0)
    n, d = args.n, 64
    X = rng.standard_normal((n, d))
    print(f"\nGram matrices of {n} samples × {d} features (entries counted over the full {n}×{n}):")
    print(f"{'kernel':<10} {'dtype':<8} {'seconds':>8} {'M entries/s':>12}")
    for kernel in ("rbf", "laplacian", "poly"):
        for dtype in (np.float64, np.float32):
            Xd = X.astype(dtype)
            fastkpca.gram(Xd[:256], kernel=kernel)
            t = time.perf_counter()
            K = fastkpca.gram(Xd, kernel=kernel)
            dt = time.perf_counter() - t
            print(f"{kernel:<10} {np.dtype(dtype).name:<8} {dt:8.3f} {n * n / dt / 1e6:12.0f}")
            del K
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fastkpca", description="fastkpca command line")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="build Gram matrices and report their throughput")
    demo.add_argument("-n", type=int, default=5000, help="number of samples (default 5000)")
    demo.set_defaults(run=_demo)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
