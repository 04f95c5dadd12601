"""What every estimator of fastkpca shares: progress reporting (``verbose`` and ``callback``) and pickling
a model fitted by any engine as one that lives in this process."""

from __future__ import annotations

import sys

from sklearn.utils.validation import check_is_fitted

from .. import engines


class Reporting:
    """``_report(stage, **figures)``: calls ``self.callback(stage, figures)`` and, with ``verbose``, prints
    the stage to stderr; the stages of every pass or iteration (``PER_PASS``) only from ``verbose=2``."""

    PER_PASS = ("pass", "iteration")

    def _report(self, stage: str, **info) -> None:
        if getattr(self, "callback", None) is not None:
            self.callback(stage, info)
        verbose = getattr(self, "verbose", 0)
        if verbose and (stage not in self.PER_PASS or verbose >= 2):
            figures = ", ".join(f"{k}={val:.3g}" if isinstance(val, float) else f"{k}={val}" for k, val in info.items())
            print(f"[{type(self).__name__}] {stage}: {figures}", file=sys.stderr, flush=True)

    def _wants_progress(self) -> bool:
        return getattr(self, "callback", None) is not None or getattr(self, "verbose", 0) >= 2


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
