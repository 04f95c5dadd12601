"""The engines layer: where the work of a fit runs (engines/base.py describes what an engine does).

:func:`select` chooses the engine for an input, once per fit or transform, and is the only place that
knows which engines exist: those registered with :func:`register` (newest first), then the Dask engine
for dask arrays (engines/dask.py, imported only when a dask array arrives), then the in-process engine.
"""

from __future__ import annotations

import importlib

from .base import Engine, Samples
from .local import LOCAL

__all__ = ["Engine", "Samples", "select", "register", "unregister"]

_registered: list = []


class _Lazy:
    """An engine whose module is imported the first time it accepts an input."""

    def __init__(self, module: str, name: str, accepts):
        self._module, self._name, self._accepts, self._engine = module, name, accepts, None

    def accepts(self, X) -> bool:
        return self._accepts(X)

    def get(self):
        if self._engine is None:
            self._engine = getattr(importlib.import_module(self._module, __name__), self._name)()
        return self._engine


def _is_dask_array(X) -> bool:
    """A dask.array.Array, recognised without importing dask (an optional dependency)."""
    return type(X).__module__.startswith("dask.array") and hasattr(X, "chunks") and hasattr(X, "dask")


_BUILT_IN = (_Lazy(".dask", "DaskEngine", _is_dask_array),)


def register(engine) -> None:
    """Make ``engine`` (an object implementing engines.base.Engine) serve the inputs it accepts; engines
    registered later are asked first."""
    _registered.insert(0, engine)


def unregister(engine) -> None:
    """Undo :func:`register`."""
    _registered.remove(engine)


def select(X):
    """The engine for the input X."""
    for engine in _registered:
        if engine.accepts(X):
            return engine
    for lazy in _BUILT_IN:
        if lazy.accepts(X):
            return lazy.get()
    return LOCAL
