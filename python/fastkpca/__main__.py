"""Command line: ``python -m fastkpca demo``, ``python -m fastkpca fit INPUT -o OUTPUT`` (kernel PCA),
``python -m fastkpca embed INPUT -o OUTPUT`` (spectral embedding) and ``python -m fastkpca cluster INPUT
--n-clusters 8 -o labels.npy`` (spectral clustering; ``--method kmeans``: kernel k-means)."""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from typing import Any

from .kernels.registry import NAMES as KERNELS  # every native kernel and alias, from the core's registry


class CliError(Exception):
    """An error reported as one line, without a traceback."""


# ------------------------------------------------------------------------------------------------- demo


def helix(n: int):
    """n points regularly spaced along a 3-D helix (two turns), and their position along it in [0, 1]."""
    import numpy as np

    t = np.linspace(0.0, 1.0, n)
    angle = 4 * np.pi * t
    return np.column_stack([np.cos(angle), np.sin(angle), 4.0 * t]), t


def _demo(args) -> int:
    import numpy as np
    from scipy.stats import spearmanr

    import fastkpca

    X, position = helix(args.n)
    configs: list[tuple[str, dict[str, Any]]] = [
        ("poly, degree 4, offset 1", dict(kernel="poly", degree=4, coef0=1.0, gamma=1.0)),
        ("rbf, gamma 0.1", dict(kernel="rbf", gamma=0.1)),
        ("rbf, gamma 2", dict(kernel="rbf", gamma=2.0)),
        ("laplacian, gamma 0.1", dict(kernel="laplacian", gamma=0.1)),
        ("laplacian, gamma 2", dict(kernel="laplacian", gamma=2.0)),
    ]
    k = 5
    print(f"Kernel PCA of {args.n} points regularly spaced along a 3-D helix (two turns).")
    print(f"Variances of the first {k} kernel principal components (λ/N), share of the total, and the")
    print("Spearman correlation of the first component with the position along the helix:\n")
    header = (f"{'kernel':<24}" + "".join(f"{'PC' + str(i + 1):>10}" for i in range(k))
              + f"{'top-' + str(k) + ' share':>13}{'Spearman':>10}{'seconds':>9}")
    print(header)
    print("-" * len(header))
    results = []
    for label, params in configs:
        start = time.perf_counter()
        model = fastkpca.KernelPCA(k, random_state=0, **params)
        scores = model.fit_transform(X)
        seconds = time.perf_counter() - start
        rho = abs(spearmanr(scores[:, 0], position)[0])
        results.append((label, model, scores, rho))
        print(f"{label:<24}" + "".join(f"{val:10.4f}" for val in model.explained_variance_)
              + f"{model.explained_variance_ratio_.sum():13.3f}{rho:10.3f}{seconds:9.3f}")
    best = max(results, key=lambda r: r[3])
    print(f"\nBest 1-D coordinate: {best[0]} (|Spearman| = {best[3]:.3f} with the position along the helix).")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("Install matplotlib (pip install 'fastkpca[plot]') to get the picture.")
        return 0
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, model, _, _ in results:
        left.plot(np.arange(1, k + 1), model.explained_variance_, marker="o", label=label)
    left.set(xlabel="component", ylabel="variance (λ / N)", yscale="log", title="Kernel PC variances",
             xticks=np.arange(1, k + 1))
    left.legend(fontsize=8)
    right.scatter(position, best[2][:, 0], s=4, c=position, cmap="viridis")
    right.set(xlabel="position along the helix", ylabel="first kernel PC",
              title=f"{best[0]}: |Spearman| = {best[3]:.3f}")
    fig.tight_layout()
    fig.savefig(args.plot, dpi=120)
    print(f"Wrote {args.plot}")
    return 0


# -------------------------------------------------------------------------------------------------- fit


def _load(path: str):
    import numpy as np

    if not os.path.exists(path):
        raise CliError(f"cannot read {path}: no such file")
    ext = os.path.splitext(path)[1].lower()
    try:
        if ext == ".npy":
            data = np.load(path, allow_pickle=False)
        elif ext in (".csv", ".txt"):
            delimiter = "," if ext == ".csv" else None
            try:
                data = np.loadtxt(path, delimiter=delimiter, ndmin=2)
            except ValueError:  # a header line
                data = np.loadtxt(path, delimiter=delimiter, ndmin=2, skiprows=1)
        else:
            raise CliError(f"cannot read {path}: unknown format {ext!r} (use .npy, .csv or .txt)")
    except CliError:
        raise
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None
    if data.ndim == 1:
        data = data.reshape(-1, 1)
    return data


def _save(path: str, scores) -> None:
    import numpy as np

    ext = os.path.splitext(path)[1].lower()
    try:
        if ext == ".npy":
            np.save(path, scores)
        elif ext == ".csv":
            np.savetxt(path, scores, delimiter=",")
        else:
            raise CliError(f"cannot write {path}: unknown format {ext!r} (use .npy or .csv)")
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None


class _Progress:
    """One status line on stderr, rewritten in place; only on a terminal."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.start = time.perf_counter()
        self.width = 0

    def __call__(self, stage, info):
        if not self.enabled:
            return
        text = {
            "landmarks": "landmarks chosen",
            "kernel": "kernel matrix built",
            "center": "centered",
            "pass": self._pass_text(info),
            "done": "solved",
        }.get(stage, stage)
        line = f"[{time.perf_counter() - self.start:7.1f}s] {text}"
        sys.stderr.write("\r" + line.ljust(self.width))
        self.width = len(line)
        sys.stderr.flush()

    @staticmethod
    def _pass_text(info):
        text = (f"solving: pass {info.get('passes')}, {info.get('converged')} components converged, "
                f"{info.get('seconds_per_pass', 0):.2f} s a pass")
        eta = info.get("eta_seconds")
        return text + (f", about {eta:.0f} s left" if eta is not None else "")

    def close(self):
        if self.enabled and self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()


def _eigen_solver(args):
    """--solver as an eigen_solver: "nystrom" with the landmarks' options as a fastkpca.Nystrom."""
    import fastkpca

    if args.solver == "nystrom":
        return fastkpca.Nystrom(n_landmarks=args.n_landmarks, landmarks=args.landmarks)
    return args.solver


def _fit(args) -> int:
    import numpy as np

    import fastkpca

    X = _load(args.input)
    if args.dtype == "float32":
        X = X.astype(np.float32)
    progress = _Progress(enabled=not args.quiet and sys.stderr.isatty())
    model = fastkpca.KernelPCA(
        args.n_components, kernel=args.kernel, gamma=args.gamma, degree=args.degree, coef0=args.coef0,
        eigen_solver=_eigen_solver(args), n_jobs=args.n_jobs, random_state=args.seed, memory_limit=args.memory_limit,
    )
    start = time.perf_counter()
    try:
        with fastkpca.progress(verbose=0, callback=progress):
            scores = model.fit_transform(X)
    except (ValueError, TypeError, MemoryError) as exc:
        raise CliError(str(exc).splitlines()[0]) from None
    finally:
        progress.close()
    seconds = time.perf_counter() - start
    _save(args.output, scores)
    info = model.solver_info_
    passes = f", {info['n_passes']} passes over K" if "n_passes" in info else ""
    if "storage" in info:
        passes += f", {info['storage']} kernel of {info['kernel_bytes'] / 2**20:.0f} MiB"
    if info["solver"] == "nystrom":
        passes += f", {info['n_landmarks']} {info['landmarks']} landmarks"
    print(f"fitted {X.shape[0]} samples × {X.shape[1]} features, kernel {args.kernel}, "
          f"{scores.shape[1]} components in {seconds:.3f} s ({info['solver']} solver{passes})")
    print("component  variance (λ/N)  share of total")
    for i, (var, ratio) in enumerate(zip(model.explained_variance_, model.explained_variance_ratio_), 1):
        print(f"{i:>9}  {var:14.6g}  {ratio:14.4f}")
    print(f"wrote {args.output}")
    return 0


def _spectral(args) -> int:
    """``embed`` and ``cluster``: SpectralEmbedding / SpectralClustering of a data file."""
    import numpy as np

    import fastkpca

    X = _load(args.input)
    if args.dtype == "float32":
        X = X.astype(np.float32)
    progress = _Progress(enabled=not args.quiet and sys.stderr.isatty())
    common = dict(affinity=args.affinity, gamma=args.gamma, degree=args.degree, coef0=args.coef0,
                  eigen_solver=_eigen_solver(args), n_neighbors=args.n_neighbors, n_jobs=args.n_jobs,
                  random_state=args.seed, memory_limit=args.memory_limit)
    clustering = args.command_name == "cluster"
    kmeans = clustering and args.method == "kmeans"
    if kmeans:
        if args.affinity == "nearest_neighbors" or args.solver not in ("auto", "nystrom"):
            raise CliError("--method kmeans takes a kernel --affinity and --solver auto or nystrom")
        model = fastkpca.KernelKMeans(args.n_clusters, kernel=args.affinity, gamma=args.gamma, degree=args.degree,
                                      coef0=args.coef0, solver=args.solver, n_components=args.n_landmarks,
                                      memory_limit=args.memory_limit, random_state=args.seed, n_jobs=args.n_jobs,
                                      callback=progress)
    elif clustering:
        if common["gamma"] is None:
            common["gamma"] = 1.0 / X.shape[1]
        model = fastkpca.SpectralClustering(args.n_clusters, n_components=args.n_components,
                                            assign_labels=args.assign_labels, **common)
    else:
        model = fastkpca.SpectralEmbedding(args.n_components or 2, **common)
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught, fastkpca.progress(verbose=0, callback=progress):
            warnings.simplefilter("always")
            result = model.fit_predict(X) if clustering else model.fit_transform(X)
    except (ValueError, TypeError, MemoryError) as exc:
        raise CliError(str(exc).splitlines()[0]) from None
    finally:
        progress.close()
    seconds = time.perf_counter() - start
    for w in caught:
        print(f"fastkpca: warning: {w.message}", file=sys.stderr)
    _save(args.output, result)
    info = model.solver_info_
    passes = info.get("n_passes", info.get("passes"))
    detail = f", {passes} passes" if passes is not None else ""
    if "storage" in info:
        detail += f", {info['storage']} {'kernel' if kmeans else 'affinity'}"
    method = "kernel k-means, " if kmeans else ""
    print(f"{'clustered' if clustering else 'embedded'} {X.shape[0]} samples × {X.shape[1]} features, {method}"
          f"affinity {args.affinity}, in {seconds:.3f} s ({info['solver']} solver{detail})")
    if clustering:
        sizes = np.bincount(result)
        print(f"{len(sizes)} clusters of sizes {', '.join(map(str, sizes))}")
        if kmeans:
            print(f"objective (inertia) {model.inertia_:.6g}")
        if args.plot:
            _plot_clusters(X[:, :2] if kmeans else model.embedding_, result, args.plot,
                           "kernel k-means" if kmeans else "spectral clustering")
    print(f"wrote {args.output}")
    return 0


def _plot_clusters(embedding, labels, path: str, title: str = "spectral clustering") -> None:
    """The first two embedding coordinates (or of the samples), coloured by cluster."""
    import numpy as np

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CliError("--plot needs matplotlib (pip install 'fastkpca[plot]')") from None
    fig, ax = plt.subplots(figsize=(5, 4.5))
    y = embedding[:, 1] if embedding.shape[1] > 1 else np.zeros(len(labels))
    ax.scatter(embedding[:, 0], y, c=labels, s=4, cmap="tab10")
    ax.set_xlabel("spectral coordinate 1")
    ax.set_ylabel("spectral coordinate 2")
    ax.set_title(f"{title}: {labels.max() + 1} clusters")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


# ------------------------------------------------------------------------------------------------- main


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise CliError(message)


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def _common_options(cmd, output: str) -> None:
    """The options every fitting command shares: data, output, kernel parameters, solver, memory, seed."""
    cmd.add_argument("input", help="samples × features: .npy, .csv (comma-separated) or .txt (whitespace)")
    cmd.add_argument("-o", "--output", required=True, help=f"where to write {output}: .npy or .csv")
    cmd.add_argument("--gamma", type=_non_negative_float, default=None, help="kernel scale (default 1/n_features)")
    cmd.add_argument("--degree", type=_non_negative_float, default=3.0, help="poly degree (default 3)")
    cmd.add_argument("--coef0", type=float, default=1.0, help="poly/sigmoid offset (default 1)")
    cmd.add_argument("--n-landmarks", type=_positive_int, default=None,
                     help="landmarks of the nystrom solver (default min(1000, samples))")
    cmd.add_argument("--landmarks", choices=("rpcholesky", "uniform"), default="rpcholesky",
                     help="how the nystrom solver picks its landmarks (default rpcholesky)")
    cmd.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                     help="float32 halves the kernel matrix's memory")
    cmd.add_argument("--n-jobs", type=int, default=None, help="threads (default: all)")
    cmd.add_argument("--memory-limit", default=None,
                     help="memory the fit may use, e.g. 4GB (default 80%% of the available memory); the "
                          "kernel is kept packed, partly cached or recomputed on every pass to stay within it")
    cmd.add_argument("--seed", type=int, default=0, help="random seed of the solver (default 0)")
    cmd.add_argument("-q", "--quiet", action="store_true", help="no progress display")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m fastkpca", description="fastkpca: fast, exact kernel PCA.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    demo = sub.add_parser("demo", help="kernel PCA of a 3-D helix: variances and the recovered coordinate")
    demo.add_argument("-n", type=_positive_int, default=1000, help="number of points (default 1000)")
    demo.add_argument("--plot", default="fastkpca-helix.png", help="PNG to write (needs matplotlib)")
    demo.set_defaults(run=_demo)

    fit = sub.add_parser("fit", help="fit kernel PCA to a data file and write the scores")
    _common_options(fit, "the scores")
    fit.add_argument("-k", "--n-components", type=_positive_int, default=2, help="components (default 2)")
    fit.add_argument("--kernel", choices=tuple(KERNELS), default="rbf", help="kernel (default rbf)")
    fit.add_argument("--solver", choices=("auto", "lanczos", "dense", "arpack", "randomized", "nystrom"),
                     default="auto", help="eigensolver (default auto; nystrom: approximate, for millions of samples)")
    fit.set_defaults(run=_fit)

    for name, what in (("embed", "spectral embedding: write the coordinates"),
                       ("cluster", "spectral clustering: write the labels")):
        cmd = sub.add_parser(name, help=what)
        _common_options(cmd, "the labels" if name == "cluster" else "the embedding")
        if name == "cluster":
            cmd.add_argument("--n-clusters", type=_positive_int, default=8, help="clusters (default 8)")
            cmd.add_argument("--method", choices=("spectral", "kmeans"), default="spectral",
                             help="spectral clustering (default) or kernel k-means (fastkpca.KernelKMeans)")
            cmd.add_argument("--assign-labels", choices=("kmeans", "discretize", "cluster_qr"), default="kmeans",
                             help="how labels are assigned from the embedding (default kmeans)")
            cmd.add_argument("--plot", default=None, help="PNG of the embedding coloured by cluster (needs matplotlib)")
        cmd.add_argument("-k", "--n-components", type=_positive_int, default=None,
                         help="embedding dimensions (default: 2 for embed, n-clusters for cluster)")
        cmd.add_argument("--affinity", choices=(*KERNELS, "nearest_neighbors"), default="rbf",
                         help="a kernel (never built: held within the memory limit) or the k-NN graph (default rbf)")
        cmd.add_argument("--n-neighbors", type=_positive_int, default=10, help="neighbours of the k-NN graph")
        cmd.add_argument("--solver", choices=("auto", "lanczos", "nystrom", "arpack", "lobpcg"), default="auto",
                         help="eigensolver (default auto; nystrom: approximate, for millions of samples)")
        cmd.set_defaults(run=_spectral, command_name=name)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return args.run(args)
    except CliError as exc:
        print(f"fastkpca: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fastkpca: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
