"""The sanitizer stage is wired: run by tools/sanitize.sh (and CI's sanitizer stage), where
FASTKPCA_SANITIZER_STAGE=1, the loaded core is the sanitized build, and a defect in it stops the process
that hits it with a report in the files the stage checks. In a normal build there is nothing to check."""

import os
import subprocess
import sys

import pytest

from fastkpca import _native

STAGE = os.environ.get("FASTKPCA_SANITIZER_STAGE") == "1"
pytestmark = pytest.mark.skipif(not STAGE, reason="runs in the sanitizer stage (tools/sanitize.sh) only")


def test_the_core_is_the_sanitized_build():
    assert _native.core.build_info()["sanitize"] == "address,undefined"
    preload = os.environ.get("LD_PRELOAD", "")
    assert "libasan" in preload and "libubsan" in preload


@pytest.mark.parametrize("defect, report", [("heap-buffer-overflow", "heap-buffer-overflow"),
                                            ("misaligned", "misaligned address")])
def test_a_defect_stops_the_process_with_a_report(defect, report, tmp_path):
    env = dict(os.environ)
    # This child's reports go to its own directory, not to the stage's (which would then fail the run).
    for name in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        options = [o for o in env[name].split(":") if not o.startswith("log_path=")]
        env[name] = ":".join(options + [f"log_path={tmp_path}/{name.split('_')[0].lower()}"])
    code = f"from fastkpca import _native; _native.core._sanitizer_probe({defect!r}); print('survived')"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "survived" not in result.stdout
    # AddressSanitizer writes its report to the log files; UndefinedBehaviorSanitizer's runtime (preloaded
    # beside it) prints to stderr whatever log_path says, and aborts all the same.
    logs = result.stderr + "".join(p.read_text() for p in tmp_path.iterdir())
    assert report in logs, logs
