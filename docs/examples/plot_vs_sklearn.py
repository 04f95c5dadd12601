"""
fastkpca against scikit-learn: time and memory against N
========================================================

The same ``KernelPCA(n_components=10, kernel="rbf")`` fit, by scikit-learn (its fastest solver here,
ARPACK, and its default) and by fastkpca, at growing N. Each fit runs in a fresh process, so that its peak
memory (the process's peak resident set size above what it held before the fit, read from Linux's
``/proc/self/status``) is its own. The benchmark ``bench/run.py`` does the same at larger N, alternating
the libraries and quoting medians; this example runs each fit once, so expect some noise.
"""

import json
import subprocess
import sys

import matplotlib.pyplot as plt

FIT = r"""
import json, sys, time
import numpy as np
library, solver, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
X = np.random.default_rng(0).standard_normal((n, 16))
if library == "fastkpca":
    from fastkpca import KernelPCA
else:
    from sklearn.decomposition import KernelPCA
def status(field):  # kB; VmHWM is this process's own peak (ru_maxrss may start at the parent's RSS)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak RSS starts again from the current RSS
before = status("VmRSS")
start = time.perf_counter()
KernelPCA(n_components=10, kernel="rbf", eigen_solver=solver, random_state=0).fit_transform(X)
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak_bytes": (status("VmHWM") - before) * 1024}))
"""


def fit(library, solver, n):
    out = subprocess.run([sys.executable, "-c", FIT, library, solver, str(n)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


sizes = [1000, 2000, 4000, 6000]
runs = {("fastkpca", "auto"): sizes, ("scikit-learn", "arpack"): sizes, ("scikit-learn", "auto"): [1000, 2000, 3000]}
results = {}
for (library, solver), ns in runs.items():
    results[(library, solver)] = [fit("fastkpca" if library == "fastkpca" else "sklearn", solver, n) for n in ns]
    for n, r in zip(ns, results[(library, solver)]):
        print(f"{library:12s} {solver:7s} N={n:5d}: {r['seconds']:6.2f} s, peak {r['peak_bytes'] / 2**20:7.1f} MiB")

# %%
# Time and peak memory against N. scikit-learn's default solver here (a dense eigendecomposition, as
# n_components=10 is not below 10) needs about two N×N matrices, its ARPACK solver about one; fastkpca
# holds one triangle of the kernel (packed storage, about half of one N×N matrix) and multiplies by the
# centered kernel implicitly.
fig, (ax_time, ax_mem) = plt.subplots(1, 2, figsize=(10, 4))
for (library, solver), ns in runs.items():
    label = f"{library} ({solver})"
    ax_time.plot(ns, [r["seconds"] for r in results[(library, solver)]], "o-", label=label)
    ax_mem.plot(ns, [r["peak_bytes"] / 2**20 for r in results[(library, solver)]], "o-", label=label)
ax_mem.plot(sizes, [n * n * 8 / 2**20 for n in sizes], "k:", label="one N×N float64 matrix")
ax_time.set(xlabel="N (d = 16)", ylabel="seconds", title="fit_transform time", yscale="log")
ax_mem.set(xlabel="N (d = 16)", ylabel="MiB above the data", title="peak memory of the fit")
ax_time.legend()
ax_mem.legend()
fig.tight_layout()
plt.show()
