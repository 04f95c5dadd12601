"""
Kernel k-means on rings and moons
=================================

k-means splits the plane by straight lines, so it cannot separate two concentric rings or two interleaved half
moons. Kernel k-means runs the same iteration in the feature space of a kernel: with the rbf kernel, points are
near when they are near along their own curve. :class:`~fastkpca.KernelKMeans` multiplies by the kernel once per
iteration without building it, and runs all of its ``n_init`` starts in the same passes, so fifty starts cost
about what one does (the moons need several: Lloyd's iteration from a single start often stops in a partition
that cuts both moons, whose objective is a little higher). tslearn's ``KernelKMeans``, where installed, is
shown beside it with the same kernel and starts.
"""

import importlib.util
import time

import matplotlib.pyplot as plt
from sklearn.cluster import KMeans
from sklearn.datasets import make_circles, make_moons
from sklearn.metrics import adjusted_rand_score

from fastkpca import KernelKMeans

n = 1000
problems = {
    "rings": (make_circles(n_samples=n, noise=0.04, factor=0.5, random_state=0), 30.0, 10),
    "moons": (make_moons(n_samples=n, noise=0.05, random_state=0), 8.0, 50),
}
with_tslearn = importlib.util.find_spec("tslearn") is not None
columns = 3 if with_tslearn else 2
fig, axes = plt.subplots(2, columns, figsize=(3.7 * columns, 7))
for row, (name, ((X, truth), gamma, n_init)) in zip(axes, problems.items()):
    results = {"k-means": KMeans(n_clusters=2, n_init=10, random_state=0).fit_predict(X)}
    start = time.perf_counter()
    model = KernelKMeans(n_clusters=2, gamma=gamma, n_init=n_init, random_state=0).fit(X)
    results[f"fastkpca ({time.perf_counter() - start:.2f} s)"] = model.labels_
    print(f"{name}: {n_init} starts in {model.solver_info_['passes']} kernel passes, "
          f"adjusted Rand index {adjusted_rand_score(truth, model.labels_):.3f}")
    if with_tslearn:
        from tslearn.clustering import KernelKMeans as TslearnKernelKMeans

        start = time.perf_counter()
        theirs = TslearnKernelKMeans(n_clusters=2, kernel="rbf", kernel_params={"gamma": gamma}, n_init=n_init,
                                     random_state=0).fit(X)
        results[f"tslearn ({time.perf_counter() - start:.2f} s)"] = theirs.labels_
        print(f"    tslearn: adjusted Rand index {adjusted_rand_score(truth, theirs.labels_):.3f}")
    for ax, (title, labels) in zip(row, results.items()):
        ax.scatter(X[:, 0], X[:, 1], c=labels, s=3, cmap="coolwarm")
        ax.set_title(f"{name}: {title}\nARI {adjusted_rand_score(truth, labels):.2f}", fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
fig.tight_layout()
plt.show()
