"""
A Dask cluster fit
==================

Give an estimator a dask array and the fit runs on the cluster your ``dask.distributed.Client`` connects
to: every product with the kernel is one distributed computation, one task per pair of row blocks, while
the block Lanczos algebra stays in this process. Here the cluster is a :class:`~distributed.LocalCluster`
of two single-threaded workers in this process (``processes=False``, so that the script also runs as a
plain ``python`` script, which worker processes would re-import); the same code runs on a multi-machine
cluster with another Client.

The answer does not depend on where it ran: the fit on the cluster gives the same eigenvalues as the fit in
this process, to rounding.
"""

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from dask.distributed import Client, LocalCluster

from fastkpca import KernelPCA

rng = np.random.default_rng(0)
X = rng.standard_normal((13_000, 16))

cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
client = Client(cluster)
X_dask = da.from_array(X, chunks=(3250, 16))

on_cluster = KernelPCA(n_components=5, kernel="rbf", random_state=0).fit(X_dask)
local = KernelPCA(n_components=5, kernel="rbf", random_state=0).fit(X)
info = on_cluster.solver_info_
print(f"engine {info['engine']}: {info['n_workers']} workers, {info['row_blocks']} row blocks, "
      f"{info['pair_tasks']} pair tasks a pass, {info['n_passes']} passes")
print("eigenvalues on the cluster:", on_cluster.eigenvalues_.round(6))
print("eigenvalues here:          ", local.eigenvalues_.round(6))
print(f"largest relative difference: {np.max(np.abs(on_cluster.eigenvalues_ / local.eigenvalues_ - 1)):.1e}")

# %%
# ``transform`` of a dask array is a dask array, one task per chunk; the time of each pass of the fit.
scores = on_cluster.transform(X_dask).compute()
print("scores of the first sample, on the cluster:", scores[0].round(6))
fig, ax = plt.subplots(figsize=(5, 4))
first = info["pass_seconds"][:5]
ax.bar(range(1, len(first) + 1), first)
ax.set(xlabel="pass", ylabel="seconds", title="the first passes of the distributed fit")
fig.tight_layout()
plt.show()

client.close()
cluster.close()
