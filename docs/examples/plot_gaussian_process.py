"""
Gaussian process regression with its uncertainty
================================================

A one-dimensional Gaussian process fitted by fastkpca and by scikit-learn: the same kernel, the same fitted
hyperparameters, the same posterior mean and 95% band. Then the time and peak memory of a fit against the
number of samples (d = 8, ``C * RBF(ARD) + White``): the likelihood's gradient never holds the n × n × p
array of every ∂K/∂θ that scikit-learn builds.
"""

import time
import tracemalloc

import matplotlib.pyplot as plt
import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor as SkGPR
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

from fastkpca import GaussianProcessRegressor

rng = np.random.default_rng(0)
X = np.sort(rng.uniform(0, 10, 60))[:, None]
y = np.sin(X[:, 0]) * X[:, 0] / 3 + rng.normal(0, 0.3, 60)
grid = np.linspace(-1, 11, 400)[:, None]
kernel = C(1.0) * RBF(1.0) + WhiteKernel(0.1)

fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), sharey=True)
for ax, (name, model) in zip(axes, [("fastkpca", GaussianProcessRegressor(kernel, random_state=0)),
                                    ("scikit-learn", SkGPR(kernel, random_state=0))]):
    model.fit(X, y)
    mean, std = model.predict(grid, return_std=True)
    ax.fill_between(grid[:, 0], mean - 1.96 * std, mean + 1.96 * std, alpha=0.25, label="95% band")
    ax.plot(grid[:, 0], mean, lw=1.5, label="posterior mean")
    ax.scatter(X[:, 0], y, s=10, c="k", label="observations")
    ax.set_title(f"{name}: {model.kernel_}", fontsize=8)
    ax.set_xlabel("x")
axes[0].legend(loc="lower left", fontsize=8)
plt.tight_layout()

# %%
# Time and peak Python-side memory of the whole fit against n. scikit-learn's fit grows to about 30·n²·8
# bytes (its gradient array); fastkpca's stays at one n × n array.
kernel8 = C(1.0) * RBF(np.ones(8)) + WhiteKernel(0.1)
sizes, rows = [200, 400, 600], []
for n in sizes:
    Xn = rng.uniform(-2, 2, (n, 8))
    yn = np.sin(2 * Xn[:, 0]) + 0.5 * Xn[:, 1] ** 2 - Xn[:, 2] * Xn[:, 3] + 0.1 * rng.standard_normal(n)
    for name, cls in [("fastkpca", GaussianProcessRegressor), ("scikit-learn", SkGPR)]:
        tracemalloc.start()
        start = time.perf_counter()
        cls(kernel8, normalize_y=True, random_state=0).fit(Xn, yn)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rows.append((name, n, seconds, peak / (n * n * 8)))

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4))
for name in ("fastkpca", "scikit-learn"):
    ns = [n for lib, n, _, _ in rows if lib == name]
    left.plot(ns, [s for lib, _, s, _ in rows if lib == name], "o-", label=name)
    right.plot(ns, [m for lib, _, _, m in rows if lib == name], "o-", label=name)
left.set(xlabel="n", ylabel="fit seconds", yscale="log")
right.set(xlabel="n", ylabel="peak NumPy memory / (n²·8 bytes)")
left.legend()
plt.tight_layout()
plt.show()
