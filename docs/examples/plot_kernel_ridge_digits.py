"""
Kernel ridge regression on a real data set: handwritten digits
==============================================================

The digits data set ships with scikit-learn (1,797 images of 8×8 pixels; nothing is downloaded). Kernel
ridge regression with one-hot targets is a classifier: fit ten outputs at once (one system per target,
solved together) and predict the class whose output is largest. fastkpca's :class:`~fastkpca.KernelRidge`
solves the same system as scikit-learn's, here by preconditioned conjugate gradients, and reports how far
it got.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.kernel_ridge import KernelRidge as SklearnKernelRidge
from sklearn.metrics import ConfusionMatrixDisplay
from sklearn.model_selection import train_test_split

from fastkpca import CG, KernelRidge

X, y = load_digits(return_X_y=True)
X = X / 16.0
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
Y_train = np.eye(10)[y_train]  # one-hot: ten targets

model = KernelRidge(alpha=1e-2, kernel="rbf", gamma=0.05, solver=CG(tol=1e-10)).fit(X_train, Y_train)
predicted = model.predict(X_test).argmax(axis=1)
info = model.solver_info_
print(f"cg: {info['iterations']} products with K for all ten targets, "
      f"largest relative residual {np.max(info['residuals']):.1e}")
print(f"test accuracy: {np.mean(predicted == y_test):.4f}")

# %%
# The same system solved by scikit-learn (a dense Cholesky factorisation) gives the same coefficients.
reference = SklearnKernelRidge(alpha=1e-2, kernel="rbf", gamma=0.05).fit(X_train, Y_train)
print("largest difference of the predictions from scikit-learn's:",
      f"{np.max(np.abs(model.predict(X_test) - reference.predict(X_test))):.1e}")

fig, ax = plt.subplots(figsize=(5, 5))
ConfusionMatrixDisplay.from_predictions(y_test, predicted, ax=ax, colorbar=False)
ax.set_title(f"kernel ridge classifier, accuracy {np.mean(predicted == y_test):.3f}")
fig.tight_layout()
plt.show()
