"""
Gaussian process classification: probabilities and fit time
===========================================================

A two-dimensional binary problem fitted by fastkpca and by scikit-learn with the same kernel: the same fitted
hyperparameters and the same probability surface. Then the time of a whole fit (L-BFGS-B on the Laplace
approximation's likelihood) against the number of samples, d = 8: fastkpca's gradient is one pass over the
kernel's tiles where scikit-learn builds the n × n × p array of every ∂K/∂θ and two more n × n solves.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.gaussian_process import GaussianProcessClassifier as SkGPC
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from fastkpca import GaussianProcessClassifier

rng = np.random.default_rng(0)
X = rng.uniform(-3, 3, (150, 2))
y = (np.sin(1.5 * X[:, 0]) + 0.3 * X[:, 1] ** 2 + 0.4 * rng.standard_normal(150) > 1.0).astype(int)
xx, yy = np.meshgrid(np.linspace(-3, 3, 120), np.linspace(-3, 3, 120))
grid = np.column_stack([xx.ravel(), yy.ravel()])
kernel = C(1.0) * RBF([1.0, 1.0])

fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
for ax, (name, model) in zip(axes, [("fastkpca", GaussianProcessClassifier(kernel, random_state=0)),
                                    ("scikit-learn", SkGPC(kernel, random_state=0))]):
    model.fit(X, y)
    proba = model.predict_proba(grid)[:, 1].reshape(xx.shape)
    image = ax.contourf(xx, yy, proba, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.8)
    ax.contour(xx, yy, proba, levels=[0.5], colors="k", linewidths=1)
    ax.scatter(X[:, 0], X[:, 1], c=y, cmap="RdBu_r", edgecolors="k", s=18)
    ax.set_title(f"{name}: {model.kernel_}\nlog marginal likelihood {model.log_marginal_likelihood_value_:.3f}",
                 fontsize=8)
    ax.set_xlabel("x₀")
axes[0].set_ylabel("x₁")
fig.colorbar(image, ax=axes, label="P(y = 1)")

# %%
# Time of the whole fit against n (d = 8, ``C * RBF(ARD)``, the default optimizer), each library's model
# the same. scikit-learn's evaluation pays for the n × n × p gradient array and two n³ solves besides its
# Newton steps; fastkpca's for one factor per Newton step, starting each θ's Newton iteration from the last
# mode, and one inverse.
kernel8 = C(1.0) * RBF(np.ones(8))
sizes, rows = [100, 200, 400], []
for n in sizes:
    Xn = rng.uniform(-2, 2, (n, 8))
    yn = (np.sin(2 * Xn[:, 0]) + 0.5 * Xn[:, 1] ** 2 - Xn[:, 2] * Xn[:, 3] + 0.3 * rng.standard_normal(n)
          > 0.5).astype(int)
    for name, cls in [("fastkpca", GaussianProcessClassifier), ("scikit-learn", SkGPC)]:
        start = time.perf_counter()
        cls(kernel8, random_state=0).fit(Xn, yn)
        rows.append((name, n, time.perf_counter() - start))

fig, ax = plt.subplots(figsize=(5, 3.4))
for name in ("fastkpca", "scikit-learn"):
    ax.plot([n for lib, n, _ in rows if lib == name], [s for lib, _, s in rows if lib == name], "o-", label=name)
ax.set(xlabel="n", ylabel="fit seconds", yscale="log")
ax.legend()
plt.tight_layout()
plt.show()
