#!/usr/bin/env bash
# Build the native core with AddressSanitizer + UndefinedBehaviorSanitizer and run tests under it.
#
#   bash tools/sanitize.sh [pytest arguments]        # a fresh .venv-sanitize, the whole suite
#   SANITIZE_VENV=.venv-ci bash tools/sanitize.sh tests/test_gram.py ...
#       # CI: reuse an environment that has the test extras; only fastkpca is reinstalled (sanitized)
#
# One ISA level (baseline), RelWithDebInfo at -O1 (the level AddressSanitizer's documentation recommends) with
# line tables only (-g1: a report's stack still names file and line; the build takes about a third less time
# than at -O2 -g, the tests about 5% more), -fno-sanitize-recover: the first report aborts the process
# that hit it, in every process the tests start (Dask workers and the command line's children inherit the
# preload and the options). AddressSanitizer also writes its reports to files under
# build/sanitize-reports (log_path), and the run fails if any exists, so a report in a process whose death
# a test might survive (a retried Dask task) still fails it; UndefinedBehaviorSanitizer's runtime prints
# to stderr whatever log_path says, and aborts all the same. CPython itself is not instrumented: the runtimes are
# preloaded. Leak detection is off: CPython keeps allocations alive until exit by design.
# Deselected: tests that measure peak RSS or interrupt latency (ASan's shadow memory and slower code
# change exactly what they measure).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${SANITIZE_VENV:-}" ]; then
  . "$SANITIZE_VENV/bin/activate"
  install=(--no-deps --force-reinstall .)
else
  python3 -m venv .venv-sanitize
  . .venv-sanitize/bin/activate
  python -m pip install -q --upgrade pip
  install=(".[test]")
fi
python -m pip install -q "${install[@]}" \
  -Cbuild-dir=build/sanitize \
  -Ccmake.build-type=RelWithDebInfo \
  "-Ccmake.define.CMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  -Ccmake.define.FASTKPCA_ISAS=baseline \
  -Ccmake.define.FASTKPCA_SANITIZE=address,undefined

reports="$PWD/build/sanitize-reports"
rm -rf "$reports" && mkdir -p "$reports"
export LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libubsan.so)"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1:strict_string_checks=1:log_path=$reports/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan"
export FASTKPCA_SANITIZER_STAGE=1
status=0
python -m pytest -q -p no:cacheprovider -n 0 \
  -k "not peak_memory and not allocates_no_square and not ctrl_c" "$@" || status=$?
if compgen -G "$reports/*" > /dev/null; then
  echo "sanitize.sh: sanitizer reports:" >&2
  for f in "$reports"/*; do echo "== $f" >&2; cat "$f" >&2; done
  exit 1
fi
[ "$status" -eq 0 ] || exit "$status"
echo "sanitize.sh: no AddressSanitizer or UndefinedBehaviorSanitizer report"
