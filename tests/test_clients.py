"""Downstream packages under ``fastkpca.patch_sklearn()``: an outlier detector library (pyod: its KPCA detector
subclasses KernelPCA and reads its fitted ``_centerer`` and ``_get_kernel``; its OCSVM wraps OneClassSVM),
Bayesian optimisation (bayesian-optimization: a GaussianProcessRegressor it fits at every step) and imbalanced data
(imbalanced-learn: SVMSMOTE resamples around an SVC's support vectors). Each runs in a fresh process, patched and
not, and gives the unpatched results; imbalanced-learn's own tests of SVMSMOTE pass under the patch. The packages
are the ``clients`` extra (in the ``test`` extra)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyod")
pytest.importorskip("bayes_opt")
pytest.importorskip("imblearn")


def _run(script: str, patched: bool) -> dict:
    """The JSON that ``script`` prints, run in a fresh process (patched first where asked)."""
    prelude = "import fastkpca; fastkpca.patch_sklearn()\n" if patched else ""
    out = subprocess.run([sys.executable, "-c", prelude + script], capture_output=True, text=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


_PYOD = """
import json, numpy as np
from pyod.models.kpca import KPCA
from pyod.models.ocsvm import OCSVM
rng = np.random.default_rng(0)
X = np.r_[rng.standard_normal((300, 6)), rng.uniform(-6, 6, (30, 6))]
X_new = np.r_[rng.standard_normal((40, 6)), rng.uniform(-6, 6, (10, 6))]
out = {}
for name, detector in (("kpca", KPCA(n_components=5)), ("kpca_all", KPCA()), ("ocsvm", OCSVM())):
    detector.fit(X)
    model = getattr(detector, "kpca", getattr(detector, "detector_", None))
    out[name] = {"train": detector.decision_scores_.tolist(), "new": detector.decision_function(X_new).tolist(),
                 "labels": detector.predict(X_new).tolist(),
                 "model": [c.__module__ for c in type(model).__mro__ if c.__name__ in ("KernelPCA", "OneClassSVM")]}
print(json.dumps(out))
"""


def test_pyod_detectors_give_the_unpatched_scores():
    plain, patched = _run(_PYOD, False), _run(_PYOD, True)
    for name in ("kpca", "kpca_all", "ocsvm"):
        # pyod's PyODKernelPCA subclasses whichever KernelPCA scikit-learn's name gives: fastkpca's under the patch
        assert patched[name]["model"][0].startswith("fastkpca"), patched[name]["model"]
        assert plain[name]["model"][0].startswith("sklearn")
        for part in ("train", "new"):
            # scores of a kernel whose entries are at most 1 (rbf): KPCA() keeps every component, so its
            # reconstruction errors are rounding (1e-15) in both
            np.testing.assert_allclose(patched[name][part], plain[name][part], rtol=1e-8, atol=1e-9)
        assert patched[name]["labels"] == plain[name]["labels"]


_BAYES_OPT = """
import json, numpy as np
from bayes_opt import BayesianOptimization

def f(x, y):
    return -(x - 0.3) ** 2 - (y + 0.7) ** 2 + 0.1 * np.sin(5 * x)

optimizer = BayesianOptimization(f=f, pbounds={"x": (-2, 2), "y": (-3, 3)}, random_state=1, verbose=0)
optimizer.maximize(init_points=5, n_iter=20)
print(json.dumps({"targets": [r["target"] for r in optimizer.res], "best": optimizer.max["target"],
                  "params": optimizer.max["params"], "gp": type(optimizer._gp).__module__}))
"""


def test_bayesian_optimisation_finds_the_unpatched_optimum():
    """25 evaluations: the same points to the GP's rounding (the acquisition's maximiser moves with the 1e-10
    differences of the predictions, so later points differ in the sixth digit), the same optimum."""
    plain, patched = _run(_BAYES_OPT, False), _run(_BAYES_OPT, True)
    assert patched["gp"].startswith("fastkpca") and plain["gp"].startswith("sklearn")
    assert len(patched["targets"]) == len(plain["targets"]) == 25
    np.testing.assert_allclose(patched["targets"], plain["targets"], atol=1e-4)
    assert patched["best"] == pytest.approx(plain["best"], abs=1e-5)
    for key in ("x", "y"):
        assert patched["params"][key] == pytest.approx(plain["params"][key], abs=1e-2)


_IMBLEARN = """
import json, numpy as np
from sklearn.datasets import make_classification
from imblearn.over_sampling import SVMSMOTE
X, y = make_classification(n_samples=600, n_features=8, weights=[0.9, 0.1], random_state=0)
smote = SVMSMOTE(random_state=0)
X_res, y_res = smote.fit_resample(X, y)
print(json.dumps({"X": X_res.tolist(), "y": y_res.tolist(), "svm": type(smote.svm_estimator_).__module__,
                  "support": smote.svm_estimator_.support_.tolist()}))
"""


def test_imbalanced_learn_resamples_as_unpatched():
    plain, patched = _run(_IMBLEARN, False), _run(_IMBLEARN, True)
    assert patched["svm"].startswith("fastkpca") and plain["svm"].startswith("sklearn")
    assert patched["support"] == plain["support"]
    assert patched["y"] == plain["y"]
    np.testing.assert_allclose(patched["X"], plain["X"], rtol=1e-12, atol=1e-12)


def test_imbalanced_learns_own_tests_pass_under_the_patch():
    """imbalanced-learn's shipped tests of SVMSMOTE (its module, and its estimator checks) with scikit-learn's SVC
    patched."""
    here = Path(__file__).parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(here), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "clients_patch", "-p", "no:cacheprovider",
                          "-p", "no:randomly", "-n", "0", "-W", "ignore", "--pyargs",
                          "imblearn.over_sampling._smote.tests.test_svm_smote", "imblearn.tests.test_common",
                          "-k", "svm_smote or SVMSMOTE"], capture_output=True, text=True, env=env, cwd=here.parent)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert " passed" in out.stdout and " failed" not in out.stdout
