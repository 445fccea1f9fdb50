#!/usr/bin/env bash
# Installs what is missing, builds kubestat and runs every test:
#   1. the plain build (gcc, RelWithDebInfo): unit and integration tests;
#   2. the same tests built with clang under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the tests labelled "concurrency" built with clang under ThreadSanitizer;
#   4. every libFuzzer target for a short run (KUBESTAT_FUZZ_SECONDS each, default 20), as many
#      at once as there are cores;
#   5. the real Kubernetes control plane's test (label controlplane, docs/control-plane.md),
#      when go is installed: its binaries are built from the start at the lowest priority,
#      on the cores the stages above leave idle, into controlplane/build.sh's cache (reused
#      when present; log: build/controlplane-build.log).
# Benchmarks are built but not run (ctest -L bench runs them). Each stage prints its time as it
# ends; the last lines list them all. The builds here link with lld and keep line tables only
# (-g1: what stack traces and sanitizer reports read), and a sanitizer build compiles at a lower
# priority while the tests before it run, on the cores they leave idle (its log is
# <build dir>/build.log).
# Usage: scripts/test.sh [--no-asan] [--no-tsan] [--no-fuzz] [--no-controlplane]
set -euo pipefail
cd "$(dirname "$0")/.."

asan=1
tsan=1
fuzz=1
controlplane=1
for arg in "$@"; do
  case "$arg" in
    --no-asan) asan=0 ;;
    --no-tsan) tsan=0 ;;
    --no-fuzz) fuzz=0 ;;
    --no-controlplane) controlplane=0 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

jobs=$(nproc)
passed=0
stage_started=$SECONDS
stages=()

# Ends the running stage: records its name and the time since the previous stage ended.
stage_done() {
  local took=$((SECONDS - stage_started))
  stages+=("$(printf '  %-28s %3dm%02ds' "$1" $((took / 60)) $((took % 60)))")
  echo "== $1: ${took}s"
  stage_started=$SECONDS
}

# Runs ctest with the given arguments, keeps its output in LOG and adds its count of tests to
# $passed (only reached when every test passed: set -e stops the script otherwise).
run_ctest() {
  local log=$1
  shift
  ctest "$@" 2>&1 | tee "$log"
  local total
  total=$(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -n 1)
  passed=$((passed + ${total:-0}))
}

scripts/install-deps.sh
stage_done "install"

# A sanitizer build in the background, at the lowest priority: it takes the cores the running
# tests leave idle. Its output goes to DIR/build.log.
background_build=""
start_background_build() {
  local dir=$1
  shift
  setsid -w nice -n 19 cmake --build "$dir" -j "$jobs" "$@" >"$dir/build.log" 2>&1 &
  background_build=$!
}
# Waits for it; on failure prints the end of its log and stops.
finish_background_build() {
  local dir=$1
  if ! wait "$background_build"; then
    background_build=""
    tail -n 60 "$dir/build.log"
    echo "test.sh: the build in $dir failed (whole log: $dir/build.log)" >&2
    exit 1
  fi
  background_build=""
}
# The control plane's binaries (Go), built the same way from the start.
controlplane_build=""
if ((controlplane)) && ! command -v go >/dev/null 2>&1; then
  echo "test.sh: go is not installed: the control plane's test is left out"
  controlplane=0
fi
if ((controlplane)); then
  mkdir -p build
  setsid -w nice -n 19 controlplane/build.sh --quiet >build/controlplane-build.log 2>&1 &
  controlplane_build=$!
fi
# Background builds do not outlive the script.
trap '[[ -n "$background_build" ]] && kill -- "-$background_build" 2>/dev/null
  [[ -n "$controlplane_build" ]] && kill -- "-$controlplane_build" 2>/dev/null; true' EXIT

linker=()
if command -v ld.lld >/dev/null 2>&1; then linker=(-DKUBESTAT_LINKER=lld); fi
# RelWithDebInfo with line tables only.
optimized=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
configure_tsan() {
  CC=clang CXX=clang++ cmake -S . -B build-tsan -G Ninja "${optimized[@]}" "${linker[@]}" \
    -DKUBESTAT_TSAN=ON -DKUBESTAT_BENCH=OFF >/dev/null
}

echo "== plain build"
cmake -S . -B build -G Ninja "${optimized[@]}" "${linker[@]}" >/dev/null
cmake --build build -j "$jobs"
stage_done "plain build"

if ((asan)); then
  # -O1 (asserts kept: no NDEBUG): AddressSanitizer's own advice for tolerable speed; at -O0
  # the instrumented libraries made this the longest stage. Test code is -O0 either way
  # (KUBESTAT_TEST_CXX_FLAGS).
  echo "== ASan+UBSan build (clang, -O1), with the fuzz targets: beside the plain tests"
  CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_FLAGS_DEBUG="-O1 -g1" -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" "${linker[@]}" \
    -DKUBESTAT_ASAN=ON -DKUBESTAT_FUZZ=ON -DKUBESTAT_BENCH=OFF >/dev/null
  start_background_build build-asan
fi
# The real control plane's test (label controlplane) runs last, once its build is done.
run_ctest build/ctest.log --test-dir build -LE 'bench|controlplane' --output-on-failure -j "$jobs" \
  --timeout 600
stage_done "plain tests"

if ((asan)); then
  finish_background_build build-asan
  stage_done "ASan build (after)"
  if ((tsan)); then
    echo "== ThreadSanitizer build (clang): the concurrency tests, beside the ASan tests"
    configure_tsan
    start_background_build build-tsan --target kubestat_concurrency_tests
  fi
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0" \
    run_ctest build-asan/ctest.log --test-dir build-asan -LE 'bench|controlplane' --output-on-failure -j "$jobs" \
    --timeout 900
  stage_done "ASan tests"
fi

if ((tsan)); then
  if ((asan)); then
    finish_background_build build-tsan
  else
    echo "== ThreadSanitizer build (clang): the concurrency tests"
    configure_tsan
    cmake --build build-tsan -j "$jobs" --target kubestat_concurrency_tests
  fi
  stage_done "TSan build (after)"
  # Left out here: a test whose point is a gRPC write finishing within a round (a slow watcher
  # cut off while a fast one keeps up), which ThreadSanitizer's several-fold slowdown can
  # break for the fast one too; the plain and ASan runs above have it.
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp" \
    run_ctest build-tsan/ctest.log --test-dir build-tsan -L concurrency --output-on-failure \
    -E '^GrpcWatchTest\.SlowWatcherIsCutOffWithoutHoldingUpTheFastOne$' -j "$jobs" --timeout 900
  stage_done "TSan tests"
fi

if ((asan && fuzz)); then
  KUBESTAT_FUZZ_JOBS=$jobs scripts/fuzz.sh build-asan "${KUBESTAT_FUZZ_SECONDS:-20}"
  stage_done "fuzz"
fi

if ((controlplane)); then
  if ! wait "$controlplane_build"; then
    controlplane_build=""
    tail -n 40 build/controlplane-build.log
    echo "test.sh: controlplane/build.sh failed (whole log: build/controlplane-build.log)" >&2
    exit 1
  fi
  controlplane_build=""
  stage_done "control plane build (after)"
  run_ctest build/ctest-controlplane.log --test-dir build -L controlplane --output-on-failure \
    --timeout 1800
  stage_done "control plane test"
fi

echo "stages:"
printf '%s\n' "${stages[@]}"
total=$SECONDS
printf '  %-28s %3dm%02ds\n' "all" $((total / 60)) $((total % 60))
echo "tests: $passed passed, 0 failed"
