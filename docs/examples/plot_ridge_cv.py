"""
Cross-validating alpha and gamma
================================

:class:`~fastkpca.KernelRidgeCV` scores every alpha from one eigendecomposition of the kernel per gamma:
the leave-one-out residuals of all alphas then cost O(N²) each instead of a new fit. Here it searches a
grid of 9 alphas × 7 gammas on scikit-learn's diabetes data set (442 patients, shipped with
scikit-learn), and we draw the leave-one-out error over the grid.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.preprocessing import StandardScaler

from fastkpca import KernelRidgeCV

X, y = load_diabetes(return_X_y=True)
X = StandardScaler().fit_transform(X)
y = (y - y.mean()) / y.std()

alphas = np.logspace(-3, 1, 9)
gammas = np.logspace(-3, 0, 7)
cv = KernelRidgeCV(alphas=alphas, gammas=gammas, kernel="rbf").fit(X, y)
print(f"chosen alpha {cv.alpha_:.3g}, gamma {cv.gamma_:.3g}; leave-one-out MSE {cv.best_score_:.4f} "
      f"(the variance of y is 1); method {cv.cv_results_['method']}")

# %%
# The leave-one-out mean squared error of every pair.
mse = np.empty((len(gammas), len(alphas)))
for a, g, e in zip(cv.cv_results_["alpha"], cv.cv_results_["gamma"], cv.cv_results_["mean_squared_error"]):
    mse[np.argmin(np.abs(gammas - g)), np.argmin(np.abs(alphas - a))] = e

fig, ax = plt.subplots(figsize=(6.5, 4.5))
image = ax.pcolormesh(alphas, gammas, mse, shading="nearest", cmap="viridis_r")
ax.plot(cv.alpha_, cv.gamma_, "r*", markersize=14, label="chosen")
ax.set(xscale="log", yscale="log", xlabel="alpha", ylabel="gamma", title="leave-one-out MSE, diabetes data")
fig.colorbar(image, ax=ax, label="mean squared error")
ax.legend(loc="lower left")
fig.tight_layout()
plt.show()
