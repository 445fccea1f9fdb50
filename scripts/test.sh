#!/usr/bin/env bash
# Installs what is missing, builds kubestat and runs every test:
#   1. the plain build (gcc, RelWithDebInfo): unit and integration tests;
#   2. the same tests built with clang under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. every libFuzzer target for a short run (KUBESTAT_FUZZ_SECONDS each, default 20).
# Benchmarks are built but not run (ctest -L bench runs them).
# Usage: scripts/test.sh [--no-asan] [--no-fuzz]
set -euo pipefail
cd "$(dirname "$0")/.."

asan=1
fuzz=1
for arg in "$@"; do
  case "$arg" in
    --no-asan) asan=0 ;;
    --no-fuzz) fuzz=0 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

scripts/install-deps.sh
jobs=$(nproc)

echo "== plain build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build -LE bench --output-on-failure -j "$jobs" --timeout 600

if ((asan)); then
  echo "== ASan+UBSan build (clang), with the fuzz targets"
  CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DKUBESTAT_ASAN=ON -DKUBESTAT_FUZZ=ON -DKUBESTAT_BENCH=OFF >/dev/null
  cmake --build build-asan -j "$jobs"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0" \
    ctest --test-dir build-asan -LE bench --output-on-failure -j "$jobs" --timeout 900
  if ((fuzz)); then
    scripts/fuzz.sh build-asan "${KUBESTAT_FUZZ_SECONDS:-20}"
  fi
fi
