"""PNG plots of bench/run.py's results (matplotlib, Agg backend). ``make_all`` writes them all."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MB = 1e6


def _label(row: dict) -> str:
    return f"{row['lib']} {row['solver']}"


def _ok(rows):
    return [r for r in rows if r.get("fit_s") is not None and not math.isnan(r["fit_s"])]


def _lines(ax, rows, y, style=None) -> None:
    """One line per library/solver: y(row) against N."""
    for label in sorted({_label(r) for r in rows}):
        pts = sorted((r["N"], y(r)) for r in rows if _label(r) == label)
        if pts:
            ax.plot(*zip(*pts), marker="o", linestyle="-" if label.startswith("fastkpca") else "--",
                    label=label, **(style or {}))


def _save(fig, path: Path) -> Path:
    """Lay out, write at 110 dpi and close a figure; returns its path."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def time_vs_n(rows: list[dict], out: Path) -> list[Path]:
    """fit_transform time vs N, log-log; one file per (d, dtype), one panel per (kernel, k)."""
    files = []
    rows = _ok(rows)
    for d, dtype in sorted({(r["d"], r["dtype"]) for r in rows}):
        sub = [r for r in rows if r["d"] == d and r["dtype"] == dtype]
        kernels = sorted({r["kernel"] for r in sub})
        ks = sorted({r["k"] for r in sub})
        fig, axes = plt.subplots(len(kernels), len(ks), figsize=(4.5 * len(ks), 3.6 * len(kernels)),
                                 squeeze=False)
        for i, kernel in enumerate(kernels):
            for j, k in enumerate(ks):
                ax = axes[i][j]
                _lines(ax, [r for r in sub if r["kernel"] == kernel and r["k"] == k], lambda r: r["fit_s"])
                ax.set(xscale="log", yscale="log", title=f"{kernel}, k={k}", xlabel="N",
                       ylabel="fit_transform s")
                ax.grid(True, which="both", alpha=0.3)
                ax.legend(fontsize=7)
        fig.suptitle(f"KernelPCA.fit_transform time, d={d}, {dtype}")
        files.append(_save(fig, out / f"time_vs_n_d{d}_{dtype}.png"))
    return files


def memory_vs_n(rows: list[dict], out: Path) -> list[Path]:
    """Peak RSS increase of the fit vs N (worst over kernels, d, k), one panel per dtype, with N²·8 and
    the target line."""
    rows = [r for r in _ok(rows) if r.get("fit_peak_bytes") is not None]
    if not rows:
        return []
    dtypes = sorted({r["dtype"] for r in rows}, reverse=True)  # float64 first
    fig, axes = plt.subplots(1, len(dtypes), figsize=(6 * len(dtypes), 4.5), squeeze=False)
    for ax, dtype in zip(axes[0], dtypes):
        sub = [r for r in rows if r["dtype"] == dtype]
        worst = {}
        for r in sub:
            key = (_label(r), r["N"])
            worst[key] = max(worst.get(key, 0.0), r["fit_peak_bytes"] / MB)
        for label in sorted({lab for lab, _ in worst}):
            pts = sorted((n, v) for (lab, n), v in worst.items() if lab == label)
            ax.plot(*zip(*pts), marker="o", linestyle="-" if label.startswith("fastkpca") else "--", label=label)
        lo, hi = min(r["N"] for r in sub), max(r["N"] for r in sub)
        ns = [lo / 1.25, hi * 1.25]  # reference lines visible also when a single N was measured
        factor = 1.1 if dtype == "float64" else 0.6
        ax.plot(ns, [n * n * 8 / MB for n in ns], color="black", linewidth=2, label="N²·8 bytes")
        if dtype == "float32":
            ax.plot(ns, [n * n * 4 / MB for n in ns], color="gray", linewidth=1, label="N²·4 bytes")
        ax.plot(ns, [(factor * n * n * 8 + 200 * MB) / MB for n in ns], color="red", linestyle=":",
                label=f"target {factor}·N²·8 + 200 MB")
        ax.set(xscale="log", yscale="log", xlabel="N", ylabel="peak RSS increase of fit, MB",
               title=f"{dtype} input (worst over kernels, d, k)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    return [_save(fig, out / "memory_vs_n.png")]


def speedup_bars(rows: list[dict], out: Path) -> list[Path]:
    """fastkpca (auto) vs scikit-learn's fastest solver, one bar per configuration."""
    fk = [r for r in rows if r["lib"] == "fastkpca" and r["solver"] == "auto" and r.get("speedup")]
    if not fk:
        return []
    fk.sort(key=lambda r: (r["kernel"], r["dtype"], r["d"], r["k"], r["N"]))
    labels = [f"{r['kernel']} N={r['N']} d={r['d']} k={r['k']} {r['dtype']}" for r in fk]
    fig, ax = plt.subplots(figsize=(9, 1.5 + 0.32 * len(fk)))
    ys = range(len(fk))
    colors = ["tab:orange" if r.get("speedup_is_lower_bound") else "tab:blue" for r in fk]
    ax.barh(list(ys), [r["speedup"] for r in fk], color=colors)
    for y, r in zip(ys, fk):
        ax.text(r["speedup"], y, f" {r['speedup']:.1f}x vs {r['sklearn_best_solver']}", va="center", fontsize=7)
    ax.axvline(1.0, color="black", linewidth=1)
    top = max(r["speedup"] for r in fk)
    ax.set_xlim(min(0.5, min(r["speedup"] for r in fk) / 1.5), top * 4)  # room for the labels
    ax.set_yticks(list(ys), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("speedup of fit_transform (sklearn fastest / fastkpca auto); orange: lower bound (sklearn timed out)")
    ax.set_title("fastkpca vs scikit-learn's fastest solver")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    return [_save(fig, out / "speedup.png")]


def scaling(roof: dict | None, out: Path) -> list[Path]:
    """Parallel efficiency vs threads for the Gram build (each d) and a solver pass."""
    if not roof or len({r["threads"] for r in roof["solver"]}) < 2:
        return []
    fig, ax = plt.subplots(figsize=(6, 4.2))
    eff = lambda r: 1.0 if r["threads"] == 1 else r["par_eff"]  # noqa: E731
    for d in sorted({r["d"] for r in roof["gram"]}):
        ax.plot(*zip(*[(r["threads"], eff(r)) for r in roof["gram"] if r["d"] == d]), marker="o",
                label=f"gram rbf d={d}")
    ax.plot(*zip(*[(r["threads"], eff(r)) for r in roof["solver"]]), marker="s", label="lanczos pass")
    ax.axhline(0.85, color="red", linestyle=":", label="target 85% (2 threads)")
    top = max([1.0] + [eff(r) for r in roof["gram"] + roof["solver"] if not math.isnan(eff(r))])
    ax.set(xscale="log", xlabel="threads", ylabel="parallel efficiency t1 / (p·tp)", ylim=(0, top + 0.15),
           title=f"Thread scaling, N={roof['spec']['n']}")
    threads = sorted({r["threads"] for r in roof["solver"]})
    ax.set_xticks(threads, [str(t) for t in threads])
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return [_save(fig, out / "scaling.png")]


def make_all(rows: list[dict], roof: dict | None, out: Path) -> list[Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    return time_vs_n(rows, out) + memory_vs_n(rows, out) + speedup_bars(rows, out) + scaling(roof, out)
