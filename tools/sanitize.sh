#!/usr/bin/env bash
# Build the native core with AddressSanitizer + UndefinedBehaviorSanitizer and run the test suite under it.
#
#   bash tools/sanitize.sh [extra pytest arguments]
#
# Builds one ISA level (baseline) into build/sanitize, installs it into .venv-sanitize, and runs pytest
# with the ASan runtime preloaded (CPython itself is not instrumented). Any ASan or UBSan report aborts
# the run with a non-zero exit. Leak detection is off: CPython keeps allocations alive until exit by
# design, which LeakSanitizer would report. Deselected: tests that measure peak RSS or interrupt latency,
# since ASan's shadow memory and slower code change exactly what they measure.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv-sanitize
. .venv-sanitize/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q ".[test]" \
  -Cbuild-dir=build/sanitize \
  -Ccmake.build-type=RelWithDebInfo \
  -Ccmake.define.FASTKPCA_ISAS=baseline \
  -Ccmake.define.FASTKPCA_SANITIZE=address,undefined

export LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libubsan.so)"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
python -m pytest -q -p no:cacheprovider \
  -k "not peak_memory and not allocates_no_square and not ctrl_c" "$@"
echo "sanitize.sh: no AddressSanitizer or UndefinedBehaviorSanitizer report"
