"""What every estimator of fastkpca shares: progress reporting (:func:`progress`, and the ``verbose`` and
``callback`` of the estimators that keep their own) and pickling a model fitted by any engine as one that lives in
this process."""

from __future__ import annotations

import contextlib
import contextvars
import importlib.util
import inspect
import sys
import warnings
import weakref
from collections.abc import Iterator
from typing import Any, Callable

from .. import _validation as v
from .. import engines, kernels
from .._sklearn_compat import check_is_fitted

#: The progress asked for by the innermost :func:`progress` block of this thread: (verbose, callback).
_PROGRESS: contextvars.ContextVar[tuple[int, Callable[[str, dict], Any] | None]] = contextvars.ContextVar(
    "fastkpca_progress", default=(0, None))


@contextlib.contextmanager
def progress(verbose: int = 1, callback: Callable[[str, dict], Any] | None = None) -> Iterator[None]:
    """Report the progress of every fastkpca fit run inside the ``with`` block (in this thread).

    Parameters
    ----------
    verbose : int, default=1
        0: nothing printed; 1: each stage of a fit printed to stderr, and its passes or iterations as a
        progress bar where tqdm is installed and stderr is a terminal or a notebook; 2: every pass or iteration
        printed as well.
    callback : callable, default=None
        ``callback(stage, info)``, called at each stage with its figures: stage ``"pass"`` after each pass of an
        eigensolver (``passes``, ``converged``, ``residual``, ``seconds_per_pass``, ``eta_seconds``),
        ``"iteration"`` after each conjugate gradients iteration (``iterations``, ``converged``,
        ``residual``), ``"done"`` at the end of a fit.

    Yields
    ------
    None

    Examples
    --------
    >>> import numpy as np, fastkpca
    >>> stages = []
    >>> with fastkpca.progress(verbose=0, callback=lambda stage, info: stages.append(stage)):
    ...     _ = fastkpca.KernelRidge(kernel="rbf").fit(np.eye(4), np.arange(4.0))
    >>> stages[-1]
    'done'
    """
    v.check_int(verbose, "verbose", minimum=0)
    v.optional_callable(callback, "callback")
    token = _PROGRESS.set((verbose, callback))
    try:
        yield
    finally:
        _PROGRESS.reset(token)


def warn_deprecated_progress(estimator: Any, names: tuple[str, ...] = ("verbose", "callback")) -> None:
    """FutureWarning for each of ``names`` (``verbose``, ``callback``: deprecated on ``estimator``, their default
    DEPRECATED) given, after its check: :func:`progress` replaces them."""
    checks = {"verbose": v.integer(), "callback": v.optional_callable}
    for name in names:
        value = getattr(estimator, name)
        if not v.left_deprecated(value):
            checks[name](value, name)
            warnings.warn(f"{type(estimator).__name__}({name}=...) is deprecated and will be removed in the next "
                          f"minor release: fit inside `with fastkpca.progress({name}=...):` instead",
                          FutureWarning, stacklevel=3)


def _own(value: Any, default: Any) -> Any:
    """An estimator's own verbose or callback, or ``default`` where it is deprecated and not given."""
    return default if v.left_deprecated(value) else value


class Reporting:
    """``_report(stage, **figures)``: calls the callbacks (the estimator's ``callback``, and that of the
    enclosing :func:`progress` block) with ``(stage, figures)`` and, with ``verbose`` (the larger of the
    estimator's and the block's), prints the stage to stderr; the stages of every pass or iteration
    (``PER_PASS``) are printed from ``verbose=2``, and with ``verbose=1`` they drive a progress bar (passes,
    residual, time left) when tqdm is installed and stderr is a terminal or a notebook. Without tqdm,
    ``verbose=1`` prints the stages only."""

    PER_PASS = ("pass", "iteration")
    callback: Callable[[str, dict], Any] | None = None
    verbose: int | bool = 0

    def _progress(self) -> tuple[int, tuple[Callable[[str, dict], Any], ...]]:
        """(verbose, the callbacks to call): the estimator's own and the enclosing progress block's."""
        verbose, callback = _PROGRESS.get()
        own = _own(getattr(self, "callback", None), None)
        callbacks = tuple(c for c in (own, callback) if c is not None)
        return max(int(_own(getattr(self, "verbose", 0), 0)), verbose), callbacks

    def _report(self, stage: str, **info) -> None:
        verbose, callbacks = self._progress()
        for callback in callbacks:
            callback(stage, info)
        if not verbose:
            return
        if stage in self.PER_PASS:
            if verbose >= 2:
                print(self._line(stage, info), file=sys.stderr, flush=True)
            else:
                bar = progress_bar(self, stage)
                if bar is not None:
                    bar.update(stage, info)
            return
        finish_progress_bar(self)
        print(self._line(stage, info), file=sys.stderr, flush=True)

    def _line(self, stage: str, info: dict) -> str:
        figures = ", ".join(f"{k}={val:.3g}" if isinstance(val, float) else f"{k}={val}" for k, val in info.items())
        return f"[{type(self).__name__}] {stage}: {figures}"

    def _wants_progress(self) -> bool:
        verbose, callbacks = self._progress()
        return bool(callbacks) or verbose >= 2 or (verbose == 1 and progress_bars_shown())


def progress_bars_shown() -> bool:
    """A bar needs tqdm and somewhere that redraws a line: a terminal on stderr, or a notebook."""
    if importlib.util.find_spec("tqdm") is None:
        return False
    stream = sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)()) or "ipykernel" in sys.modules


class PassBar:
    """A tqdm bar over the passes (or iterations) of one solve: the total is the passes done plus the
    solver's estimate of those left (from the residual's decay), so the bar's ETA is the solver's."""

    UNITS = {"pass": " passes", "iteration": " iterations"}

    def __init__(self, owner: str, stage: str):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=None, desc=owner, unit=self.UNITS.get(stage, f" {stage}"), file=sys.stderr,
                        leave=True, dynamic_ncols=True)

    def update(self, stage: str, info: dict) -> None:
        done = int(info.get("passes", info.get("iterations", self.bar.n)))
        per_pass, eta = info.get("seconds_per_pass"), info.get("eta_seconds")
        if per_pass and eta is not None:
            self.bar.total = done + int(round(eta / per_pass))
        postfix = {"residual": f"{info['residual']:.2e}"} if "residual" in info else {}
        if "converged" in info:
            postfix["converged"] = info["converged"]
        self.bar.set_postfix(postfix, refresh=False)
        self.bar.update(max(done - self.bar.n, 0))

    def close(self) -> None:
        if self.bar.total is not None:  # a finished solve fills its bar, whatever the estimate said
            self.bar.total = self.bar.n
        self.bar.close()


# The open bar of an estimator's fit, by estimator: not an attribute, so that clones and pickles never see it.
_BARS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def progress_bar(estimator, stage: str) -> PassBar | None:
    if estimator not in _BARS:
        if not progress_bars_shown():
            return None
        _BARS[estimator] = PassBar(type(estimator).__name__, stage)
    return _BARS[estimator]


def finish_progress_bar(estimator) -> None:
    bar = _BARS.pop(estimator, None)
    if bar is not None:
        bar.close()


class EngineFitted:
    """A model remembers the engine that fitted it (``_engine``); pickled, it becomes a model that lives in
    this process (engines.base.Engine.localise), since what lives on a cluster cannot outlive its client."""

    def __getstate__(self):
        state = super().__getstate__()
        engine = state.get("_engine")
        return state if engine is None else engine.localise(state)

    def _apply_fitted(self, rowmap, X, accept_sparse=False):
        """A fitted row map (transform's, predict's) over new data X, by X's own engine: X validated against
        the fit, the result of X's kind (a dask array for a dask X)."""
        check_is_fitted(self)
        engine = engines.select(X)
        return engine.apply(rowmap, engine.new_samples(self, X, accept_sparse=accept_sparse))


class KernelInputTags:
    """scikit-learn's input tags of an estimator on a ``kernel`` parameter whose X may be sparse: pairwise where the
    kernel takes the kernel matrix as X (``"precomputed"``)."""

    kernel: Any

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = kernels.takes_matrix(self.kernel)
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"pairwise": kernels.takes_matrix(self.kernel)}


def parameter_defaults(cls):
    """Class decorator: every constructor parameter's default, also a class attribute (where the class has no
    attribute of that name). scikit-learn lets a subclass write its own ``__init__`` that sets only the parameters
    it takes (pyod's PyODKernelPCA sets scikit-learn's, without fastkpca's ``memory_limit``): its instances then
    read fastkpca's parameters at their defaults instead of failing with AttributeError. ``get_params`` and
    ``clone`` read the subclass's own signature, as always."""
    for name, parameter in inspect.signature(cls.__init__).parameters.items():
        if name != "self" and parameter.default is not inspect.Parameter.empty and not hasattr(cls, name):
            setattr(cls, name, parameter.default)
    return cls

