"""The residual of one kernel ridge cg fit against time, iteration by iteration: for A/B runs of the same fit
by two builds (this tree, and a previous commit's package put first on the path).

    python bench/kernel_ridge_trace.py --n 100000 --alpha 1e-3                       # this tree's build
    python bench/kernel_ridge_trace.py --n 100000 --alpha 1e-3 --package DIR          # DIR/fastkpca first
    python bench/kernel_ridge_trace.py --n 20000 --params '{"precision": "float64"}'

Data and settings as bench/kernel_ridge.py's (d = 64, rbf with γ = 1/d, solver=CG(tol=1e-6, random_state=0),
memory_limit="1GiB"); --params: more settings of CG. Prints one line per stage and per iteration (seconds since
the fit began, products, worst relative residual), then the fit's solver_info_.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--alpha", type=float, default=1e-3)
    parser.add_argument("--params", default="{}", help="more settings of fastkpca.CG, as JSON")
    parser.add_argument("--package", default=None, help="a directory holding another build's fastkpca package")
    args = parser.parse_args(argv)
    if args.package:
        # An editable install of this tree hooks the import system: drop its finder so DIR's package is used.
        sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()
                            and "skbc" not in repr(f).lower()]
        sys.path.insert(0, args.package)
    sys.path.insert(0, str(HERE))
    from kernel_ridge import _data

    X, y, _, _ = _data(args.n, 1000)
    import fastkpca

    print(f"fastkpca {fastkpca.__version__} from {Path(fastkpca.__file__).parent}", flush=True)
    start = time.perf_counter()

    def callback(stage, info):
        figures = {k: v for k, v in info.items() if k in ("iterations", "residual", "rank", "storage")}
        print(f"{time.perf_counter() - start:9.1f} s  {stage:<15} {figures}", flush=True)

    model = fastkpca.KernelRidge(alpha=args.alpha, kernel="rbf", gamma=1 / 64, memory_limit="1GiB",
                                 solver=fastkpca.CG(**{"tol": 1e-6, "random_state": 0, **json.loads(args.params)}))
    with fastkpca.progress(verbose=0, callback=callback):
        model.fit(X, y)
    info = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in model.solver_info_.items()
            if k != "column_iterations"}
    print(f"fit {time.perf_counter() - start:.1f} s: {json.dumps(info)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
