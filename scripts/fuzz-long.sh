#!/usr/bin/env bash
# Runs every libFuzzer target for 10 minutes under AddressSanitizer + UndefinedBehaviorSanitizer
# (a clang build with -DKUBESTAT_ASAN=ON -DKUBESTAT_FUZZ=ON in build-fuzz/), one after another,
# and prints a table of each target's runs, corpus size and outcome for bench/RESULTS.md.
# Usage: scripts/fuzz-long.sh [SECONDS_EACH]   (default 600; KUBESTAT_FUZZ_BUILD names the
# build directory, default build-fuzz; KUBESTAT_FUZZ_ONLY="a_fuzz b_fuzz" runs only those).
# Exits non-zero when any target crashed; its reproducer is in BUILD/fuzz-artifacts/. The table
# lists only the targets of this run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
build=${KUBESTAT_FUZZ_BUILD:-build-fuzz}

CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DKUBESTAT_ASAN=ON -DKUBESTAT_FUZZ=ON -DKUBESTAT_BENCH=OFF >/dev/null
targets=$(cd "$build" && ninja -t targets all | sed -n 's/^\([a-z0-9_]*_fuzz\): .*/\1/p' | sort -u)
# shellcheck disable=SC2086
cmake --build "$build" -j "$(nproc)" --target $targets

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
if ! scripts/fuzz.sh "$build" "$seconds"; then status=1; fi
echo
echo "| target | seconds | runs | corpus | outcome |"
echo "| --- | --- | --- | --- | --- |"
for log in "$build"/fuzz-artifacts/*_fuzz.log; do
  name=$(basename "$log" .log)
  if [[ -n "${KUBESTAT_FUZZ_ONLY:-}" && " $KUBESTAT_FUZZ_ONLY " != *" $name "* ]]; then continue; fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  corpus=$(grep -o 'corp: [0-9]*/[0-9a-zA-Z]*' "$log" | tail -n 1 | cut -d' ' -f2)
  outcome=ok
  if grep -q 'ERROR: \|runtime error:' "$log"; then outcome=crash; fi
  echo "| $name | $seconds | ${runs:-?} | ${corpus:-?} | $outcome |"
done
exit "$status"
