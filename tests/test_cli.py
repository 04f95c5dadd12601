"""The command line: demo and fit."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("sklearn")


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "fastkpca", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd)


def cli_in_process(capsys, *args):
    """The command line's main() in this process (the code ``python -m fastkpca`` runs, without a Python start
    of its own): the same (returncode, stdout, stderr)."""
    from fastkpca.__main__ import main

    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


def test_help():
    out = cli("--help")
    assert out.returncode == 0 and "demo" in out.stdout and "fit" in out.stdout
    out = cli("fit", "--help")
    assert out.returncode == 0 and "--kernel" in out.stdout and "--gamma" in out.stdout


def test_demo(tmp_path):
    out = cli("demo", "-n", "300", "--plot", tmp_path / "helix.png")
    assert out.returncode == 0, out.stderr
    assert "Spearman" in out.stdout and "laplacian" in out.stdout and "poly" in out.stdout
    pytest.importorskip("matplotlib")
    assert (tmp_path / "helix.png").stat().st_size > 1000


@pytest.mark.parametrize("src, dst", [("npy", "npy"), ("csv", "csv"), ("txt", "npy")])
def test_fit(tmp_path, rng, capsys, src, dst):
    """The first case through the command line's process, the file formats' others through its main()."""
    from fastkpca import KernelPCA

    X = rng.standard_normal((120, 4))
    path = tmp_path / f"in.{src}"
    if src == "npy":
        np.save(path, X)
    else:
        np.savetxt(path, X, delimiter="," if src == "csv" else " ")
    out_path = tmp_path / f"out.{dst}"
    args = ("fit", path, "--kernel", "rbf", "--gamma", "0.1", "-k", "2", "-o", out_path)
    out = cli(*args) if src == "npy" else cli_in_process(capsys, *args)
    assert out.returncode == 0, out.stderr
    assert "variance" in out.stdout and "wrote" in out.stdout and " s " in out.stdout
    assert out.stderr == ""  # no progress display when stderr is not a terminal
    scores = np.load(out_path) if dst == "npy" else np.loadtxt(out_path, delimiter=",")
    data = np.loadtxt(path, delimiter="," if src == "csv" else None) if src != "npy" else X
    expected = KernelPCA(2, kernel="rbf", gamma=0.1, random_state=0).fit_transform(data)
    np.testing.assert_allclose(np.abs(scores), np.abs(expected), rtol=1e-6, atol=1e-9)


def test_errors_are_one_line(tmp_path, capsys):
    """Each error is one line on stderr and status 2: the first two cases (an unreadable file, an unknown
    command) through the command line's process, the others through its main() in this process (the same
    code, without a Python start of its own for each)."""
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2\n3,x\n")
    good = tmp_path / "good.npy"
    np.save(good, np.ones((5, 2)) + np.arange(10).reshape(5, 2))
    nan = tmp_path / "nan.npy"
    np.save(nan, np.array([[1.0, np.nan], [2.0, 3.0]]))
    cases = [
        ("fit", tmp_path / "missing.npy", "-o", tmp_path / "o.npy"),
        ("fit", bad, "-o", tmp_path / "o.npy"),
        ("fit", good, "-o", tmp_path / "o.xyz"),
        ("fit", good, "-o", tmp_path / "o.npy", "--kernel", "gauss"),
        ("fit", good, "-o", tmp_path / "o.npy", "-k", "0"),
        ("fit", good, "-o", tmp_path / "o.npy", "--gamma", "-1"),
        ("fit", nan, "-o", tmp_path / "o.npy"),
        ("fit", good, "-o", tmp_path / "no-such-dir" / "o.npy"),
        ("frobnicate",),
    ]
    for i, args in enumerate(cases):
        out = cli(*args) if i == 0 or args == ("frobnicate",) else cli_in_process(capsys, *args)
        code, err = out.returncode, out.stderr
        assert code == 2, (args, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("fastkpca: error:"), (args, err)
        assert "Traceback" not in err


def test_cluster_and_embed(tmp_path, capsys):
    """The first command through the command line's process, the others through its main()."""
    from sklearn.datasets import make_blobs
    from sklearn.metrics import adjusted_rand_score

    X, y = make_blobs(600, n_features=5, centers=3, random_state=0)
    path = tmp_path / "in.npy"
    np.save(path, X)
    out = cli("cluster", path, "--n-clusters", "3", "-o", tmp_path / "labels.npy")
    assert out.returncode == 0, out.stderr
    assert "3 clusters" in out.stdout and "wrote" in out.stdout
    assert adjusted_rand_score(np.load(tmp_path / "labels.npy"), y) == 1.0
    out = cli_in_process(capsys, "embed", path, "-k", "2", "-o", tmp_path / "e.csv")
    assert out.returncode == 0, out.stderr
    assert np.loadtxt(tmp_path / "e.csv", delimiter=",").shape == (600, 2)
    out = cli_in_process(capsys, "cluster", path, "--n-clusters", "3", "--method", "kmeans", "--gamma", "0.1",
                         "-o", tmp_path / "k.npy")
    assert out.returncode == 0, out.stderr
    assert "kernel k-means" in out.stdout and "objective" in out.stdout
    assert adjusted_rand_score(np.load(tmp_path / "k.npy"), y) == 1.0
    out = cli_in_process(capsys, "cluster", path, "--method", "kmeans", "--solver", "lanczos", "-o",
                         tmp_path / "k.npy")
    assert out.returncode == 2 and "--method kmeans" in out.stderr
    out = cli_in_process(capsys, "cluster", path, "--n-clusters", "700", "-o", tmp_path / "l.npy")
    assert out.returncode == 2 and "n_clusters=700" in out.stderr and "Traceback" not in out.stderr
