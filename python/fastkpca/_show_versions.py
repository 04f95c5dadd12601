"""``fastkpca.show_versions()``: what a bug report needs to know about this installation."""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from typing import IO

#: Python packages whose versions change fastkpca's results or speed, in the order they are printed.
DEPENDENCIES = ("pip", "numpy", "scipy", "scikit-learn", "threadpoolctl", "dask", "distributed", "matplotlib", "tqdm")


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, dict[str, object]]:
    """The figures :func:`show_versions` prints, as a dict of sections (for tests and tools)."""
    from . import _native
    from ._version import __version__

    system = {
        "python": sys.version.replace("\n", " "),
        "executable": sys.executable,
        "machine": platform.platform(),
    }
    native = {"fastkpca": __version__, **_native.describe()}
    dependencies = {name: _package_version(name) for name in DEPENDENCIES}
    runtimes: dict[str, object] = {}
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        runtimes["threadpoolctl"] = "not installed: BLAS and OpenMP runtimes unknown"
    else:
        # After the core is loaded, its OpenMP runtime is one of the libraries threadpoolctl finds; NumPy's
        # BLAS is loaded by the import of numpy above.
        for i, lib in enumerate(threadpool_info()):
            name = f"{lib.get('user_api')} #{i}"
            runtimes[name] = (f"{lib.get('internal_api')} {lib.get('version') or ''}".strip()
                              + f", {lib.get('num_threads')} threads, {lib.get('filepath')}")
    sections: dict[str, dict[str, object]] = {"System": dict(system), "fastkpca": dict(native),
                                              "Python dependencies": dict(dependencies),
                                              "Threadpools (BLAS, OpenMP)": runtimes}
    return sections


def show_versions(file: IO[str] | None = None) -> None:
    """Print the versions a bug report needs: Python and the platform, fastkpca and its native module (ISA
    level, SIMD, OpenMP threads, compiler), the Python dependencies, and the BLAS and OpenMP runtimes
    loaded in this process with their thread counts (from threadpoolctl, when it is installed).

    Parameters
    ----------
    file : file-like, default=None
        Where to print; ``None`` means ``sys.stdout``.

    See Also
    --------
    show_config : The native module alone.

    Examples
    --------
    >>> import fastkpca
    >>> fastkpca.show_versions()  # doctest: +ELLIPSIS
    <BLANKLINE>
    System:
    ...python: ...
    fastkpca:
    ...
    """
    out = sys.stdout if file is None else file
    for section, figures in versions().items():
        print(f"\n{section}:", file=out)
        width = max((len(key) for key in figures), default=0)
        for key, value in figures.items():
            print(f"    {key:>{width}}: {'not installed' if value is None else value}", file=out)
