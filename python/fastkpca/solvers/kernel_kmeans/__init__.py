"""Kernel k-means' family: Lloyd's iterations in a kernel's feature space, one kernel pass per iteration, and
greedy k-means++ seeding by kernel columns, on any operator (lloyd.py); and the exact and Nyström solvers
behind one interface that the cost model picks from (solvers.py)."""

from __future__ import annotations
