"""Shared helpers of the benchmark scripts in bench/: machine information, timing, tables, JSON, targets.

Not a benchmark itself; the scripts in bench/ import it (it sits next to them, so
``python bench/gram.py`` finds it without installing anything).
"""

from __future__ import annotations

import datetime
import gc
import io
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable
from collections.abc import Sequence


# --------------------------------------------------------------------------------------------- machine

def available_cores() -> int:
    """Cores this process may run on (the affinity mask where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (platform.processor() elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_flags() -> str:
    """The SIMD flags that decide which micro-kernel runs (lscpu's flags, filtered), e.g. "avx2 fma"."""
    wanted = ("avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl", "neon", "asimd", "sve")
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith(("flags", "features")):
                    have = set(line.split(":", 1)[1].split())
                    return " ".join(flag for flag in wanted if flag in have) or "none of " + ", ".join(wanted)
    except OSError:
        pass
    return "unknown"


def cpu_description() -> str:
    """Model (with its family/model numbers: "AMD EPYC" alone names Zen 3 and Zen 5 alike), SIMD flags and
    cores of this machine, as every figure must quote them."""
    numbers = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key = line.split(":", 1)[0].strip().lower()
                if key in ("cpu family", "model") and key not in numbers:
                    numbers[key] = line.split(":", 1)[1].strip()
    except OSError:
        pass
    family = f", family {numbers['cpu family']} model {numbers['model']}" if len(numbers) == 2 else ""
    return f"{cpu_model()}{family} (flags: {cpu_flags()}; {available_cores()} cores)"


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).resolve().parent,
                             capture_output=True, text=True, timeout=10)
        if out.returncode != 0:
            return None
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine_info() -> dict:
    """What the numbers were measured on: CPU, cores, memory, library versions, fastkpca's build."""
    import numpy
    import scipy

    import fastkpca

    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "available_cores": available_cores(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "fastkpca": fastkpca.__version__,
        "git_commit": _git_commit(),
        "env": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                            "FASTKPCA_ISA") if k in os.environ},
    }
    try:
        import sklearn

        info["sklearn"] = sklearn.__version__
    except ImportError:
        info["sklearn"] = None
    try:
        import psutil

        info["physical_cores"] = psutil.cpu_count(logical=False)
        info["memory_gib"] = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        pass
    try:
        from threadpoolctl import threadpool_info

        info["threadpools"] = [{k: p.get(k) for k in ("user_api", "internal_api", "version", "num_threads",
                                                      "threading_layer", "architecture")}
                               for p in threadpool_info()]
    except ImportError:
        pass
    buf = io.StringIO()
    fastkpca.show_config(file=buf)
    info["fastkpca_config"] = buf.getvalue().rstrip("\n")
    return info


def print_machine(info: dict) -> None:
    print(f"# {info['cpu_model']}: {info['available_cores']} cores available "
          f"({info['logical_cpus']} logical), {info.get('memory_gib', '?')} GiB; "
          f"numpy {info['numpy']}, scipy {info['scipy']}, scikit-learn {info['sklearn']}")
    for line in info["fastkpca_config"].splitlines():
        print(f"#   {line}")


# --------------------------------------------------------------------------------------------- timing

def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """(seconds, result) of one call, timed with time.perf_counter."""
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def alternate(fns: dict[str, Callable[[], object]], repeats: int, *, min_repeats: int = 1,
              budget_s: float = math.inf, keep: Callable[[str, object], None] | None = None
              ) -> dict[str, list[float]]:
    """Time several functions, interleaved: ABAB... with the order reversed on every other repeat (AB, BA).

    Each call's result is passed to ``keep(name, result)`` (if given) *after* its timer stops and then
    dropped, so only one result is alive at a time. After ``min_repeats`` rounds, stops early once the
    total time spent exceeds ``budget_s``. Returns {name: [seconds, ...]}.
    """
    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    spent = 0.0
    for r in range(repeats):
        for name in (names if r % 2 == 0 else names[::-1]):
            dt, result = timed(fns[name])
            if keep is not None:
                keep(name, result)
            del result
            gc.collect()
            times[name].append(dt)
            spent += dt
        if r + 1 >= min_repeats and spent > budget_s:
            break
    return times


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def free() -> None:
    """Give freed arrays back before the next (large) allocation."""
    gc.collect()


# --------------------------------------------------------------------------------------------- output

def fmt(value, spec: str = ".3g") -> str:
    """Table cell: '—' for None/NaN, the format spec otherwise (strings and ints as they are)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return format(value, spec)


def markdown_table(rows: Sequence[dict], columns: Sequence[tuple[str, str, str]]) -> str:
    """A markdown table; ``columns`` are (header, row key, format spec) triples."""
    header = "| " + " | ".join(h for h, _, _ in columns) + " |"
    rule = "|" + "|".join("-" * (len(h) + 2) for h, _, _ in columns) + "|"
    lines = [header, rule]
    for row in rows:
        lines.append("| " + " | ".join(fmt(row.get(key), spec) for _, key, spec in columns) + " |")
    return "\n".join(lines)


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "tolist"):  # numpy scalars and arrays
        return _jsonable(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_json(path: str | None, payload: dict) -> None:
    if not path:
        return
    path = Path(path)
    if path.parent != Path(""):
        path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_jsonable(payload), indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {path}")


class Targets:
    """Collects PASS / FAIL / not measured lines, printed at the end and stored in the JSON."""

    def __init__(self) -> None:
        self.results: list[dict] = []

    def check(self, name: str, measured: str | None, ok: bool | None) -> None:
        """``ok=None`` (or ``measured=None``) means the configuration was not in the run."""
        status = "not measured" if ok is None or measured is None else ("PASS" if ok else "FAIL")
        self.results.append({"target": name, "measured": measured, "status": status})

    def print(self) -> None:
        print("\n## Targets\n")
        for r in self.results:
            detail = f": {r['measured']}" if r["measured"] is not None else ""
            print(f"- {r['status']:<12} {r['target']}{detail}")


def parse_ints(text: str) -> list[int]:
    """'2000,5000' -> [2000, 5000]."""
    return [int(t) for t in text.replace(" ", "").split(",") if t]


def parse_list(text: str) -> list[str]:
    return [t for t in text.replace(" ", "").split(",") if t]


# ---------------------------------------------------------------------------------- child processes

CHILD_MARKER = "@@bench-child-result@@"


def rss_bytes() -> int:
    """The process's resident set now (Linux)."""
    import resource

    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def reset_peak_rss() -> None:
    """Reset the process's peak RSS (VmHWM) to its RSS now (Linux >= 4.0: ``5 > /proc/self/clear_refs``), so
    that the peak read after a call belongs to that call, not to making its data."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak_rss_bytes() -> int:
    """The process's peak RSS (VmHWM) since it started or since reset_peak_rss."""
    with open("/proc/self/status") as f:
        line = next(ln for ln in f if ln.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def run_child(script: str, name: str, spec: dict, *, timeout: float = 3600, env: dict | None = None) -> dict:
    """``python script --child name spec`` in a fresh process (its own peak RSS): the result dict the child
    printed, with ``wall_seconds``; ``{"failed": exit code and stderr's tail}`` if it died. ``env`` adds
    environment variables."""
    cmd = [sys.executable, script, "--child", name, json.dumps(spec)]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=None if env is None else {**os.environ, **env})
    if proc.returncode != 0:
        return {"failed": f"exit {proc.returncode}: {proc.stderr[-2000:]}", "wall_seconds": time.perf_counter() - t}
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith(CHILD_MARKER))
    result = json.loads(line[len(CHILD_MARKER):])
    result["wall_seconds"] = time.perf_counter() - t
    return result


def serve_child(children: dict, child: Sequence[str]) -> int:
    """The child side of run_child: run ``children[name](spec)`` and print its result for the driver."""
    name, spec = child
    print(CHILD_MARKER + json.dumps(_jsonable(children[name](json.loads(spec)))), flush=True)
    return 0


def print_verdicts(verdicts: Sequence[tuple[str, bool, str]], tables: Sequence[str] = ()) -> None:
    """The tables, then (target, met, figure) as a markdown table and as PASS/FAIL lines."""
    for table in tables:
        print(table)
    print("\n| target | figure | verdict |\n|---|---|---|")
    for what, ok, figure in verdicts:
        print(f"| {what} | {figure} | {'met' if ok else '**missed**'} |")
    print()
    for what, ok, figure in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}: {what}: {figure}")
