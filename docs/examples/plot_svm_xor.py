"""
Support vector classification of XOR data
=========================================

The kernel trick's first example: two classes in the four quadrants of the plane, which no line separates
and an rbf kernel's machine does. fastkpca's :class:`~fastkpca.SVC` and scikit-learn's (LIBSVM) solve the same
dual to the same stopping rule, so the two decision functions — the boundary (0) and the margins (±1) — are
one picture; the support vectors are circled.

Then the time of a fit against the number of samples on the benchmark's data (32 features, 5% of the labels
flipped; ``bench/svm.py``) for fastkpca, scikit-learn and, where it is installed, scikit-learn-intelex.
"""

import importlib.util
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.svm import SVC as SkSVC

from fastkpca import SVC

rng = np.random.default_rng(0)
X = rng.uniform(-3, 3, (300, 2))
y = np.logical_xor(X[:, 0] > 0, X[:, 1] > 0).astype(int)
flip = rng.random(300) < 0.05  # a few labels on the wrong side
y[flip] = 1 - y[flip]

grid = np.linspace(-3.2, 3.2, 200)
xx, yy = np.meshgrid(grid, grid)
points = np.c_[xx.ravel(), yy.ravel()]

fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), sharey=True)
models = {"fastkpca": SVC(kernel="rbf", gamma=0.5, C=5.0, tol=1e-6),
          "scikit-learn": SkSVC(kernel="rbf", gamma=0.5, C=5.0, tol=1e-6)}
decisions = {}
for ax, (name, model) in zip(axes, models.items()):
    model.fit(X, y)
    f = model.decision_function(points).reshape(xx.shape)
    decisions[name] = f
    ax.contourf(xx, yy, f, levels=np.linspace(-3, 3, 13), cmap="RdBu_r", alpha=0.6, extend="both")
    ax.contour(xx, yy, f, levels=[-1, 0, 1], colors="k", linestyles=["--", "-", "--"], linewidths=1)
    ax.scatter(X[:, 0], X[:, 1], c=y, cmap="RdBu_r", s=12, edgecolors="k", linewidths=0.3)
    sv = model.support_vectors_
    ax.scatter(sv[:, 0], sv[:, 1], s=60, facecolors="none", edgecolors="k", linewidths=0.6)
    ax.set_title(f"{name}: {len(model.support_)} support vectors", fontsize=10)
    ax.set_xlabel("x₀")
axes[0].set_ylabel("x₁")
plt.tight_layout()
difference = np.abs(decisions["fastkpca"] - decisions["scikit-learn"]).max()
print(f"largest difference of the two decision functions on the grid: {difference:.2e}")

# %%
# Fit time against N on the benchmark's data (one fit each; the benchmark itself alternates fresh processes
# and takes medians). scikit-learn's LIBSVM runs on one thread and computes its kernel rows entry by entry;
# fastkpca evaluates each working set's kernel columns together on every core.
libraries = {"fastkpca": SVC, "scikit-learn": SkSVC}
if importlib.util.find_spec("sklearnex") is not None:
    from sklearnex.svm import SVC as ExSVC

    libraries["scikit-learn-intelex"] = ExSVC

sizes = [1000, 2000, 5000, 10000]
Xb, yb = make_classification(sizes[-1], n_features=32, n_informative=16, flip_y=0.05, random_state=0)
Xb = (Xb - Xb.mean(0)) / Xb.std(0)
seconds: dict[str, list[float]] = {name: [] for name in libraries}
for n in sizes:
    for name, cls in libraries.items():
        start = time.perf_counter()
        cls(C=1.0, kernel="rbf", gamma="scale").fit(Xb[:n], yb[:n])
        seconds[name].append(time.perf_counter() - start)

fig, ax = plt.subplots(figsize=(5.5, 3.8))
for name, values in seconds.items():
    ax.plot(sizes, values, "o-", label=name)
ax.set(xlabel="N (training samples)", ylabel="fit seconds", xscale="log", yscale="log")
ax.legend()
plt.tight_layout()
plt.show()
