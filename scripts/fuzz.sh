#!/usr/bin/env bash
# Runs every libFuzzer target of a KUBESTAT_FUZZ build for a while.
# Usage: scripts/fuzz.sh BUILD_DIR [SECONDS_EACH]
# KUBESTAT_FUZZ_ONLY (names separated by spaces) runs only those targets, so a long run can be
# split over several sittings.
# Each target starts from its seed corpus in fuzz/corpus/<target>/ (when present); new inputs
# go to a scratch folder, crashes to BUILD_DIR/fuzz-artifacts/. Exits non-zero when a target
# crashes, starting no target after it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/fuzz.sh BUILD_DIR [SECONDS_EACH]}
seconds=${2:-20}
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
# KUBESTAT_FUZZ_JOBS (default 1) targets run at once; each is one single-threaded process.
fuzz_jobs=${KUBESTAT_FUZZ_JOBS:-1}

# Runs one target for $seconds; its output goes to $artifacts/<name>.log, whose tail is printed.
run_one() {
  local target=$1 name scratch log rc
  name=$(basename "$target")
  scratch=$(mktemp -d)
  local seeds=()
  if [[ -d "fuzz/corpus/$name" ]]; then seeds=("fuzz/corpus/$name"); fi
  log="$artifacts/$name.log"
  set +e
  ASAN_OPTIONS=detect_leaks=1 "$target" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$artifacts/$name-" "$scratch" "${seeds[@]}" >"$log" 2>&1
  rc=$?
  set -e
  rm -rf "$scratch"
  { echo "== fuzz $name for ${seconds}s"; tail -n 12 "$log"; } | flock "$artifacts/.print" cat
  if ((rc != 0)); then
    echo "fuzz: $name failed (exit $rc); reproducer in $artifacts" >&2
  fi
  return "$rc"
}

targets=()
for target in "$build"/fuzz/*_fuzz; do
  [[ -x "$target" ]] || continue
  name=$(basename "$target")
  if [[ -n "${KUBESTAT_FUZZ_ONLY:-}" && " $KUBESTAT_FUZZ_ONLY " != *" $name "* ]]; then continue; fi
  targets+=("$target")
done
if ((${#targets[@]} == 0)); then
  echo "fuzz: no fuzz targets in $build/fuzz (configure with -DKUBESTAT_FUZZ=ON)" >&2
  exit 1
fi

failed=0
running=0
for target in "${targets[@]}"; do
  if ((running >= fuzz_jobs)); then
    wait -n || failed=1
    running=$((running - 1))
    ((failed == 0)) || break
  fi
  run_one "$target" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || failed=1
  running=$((running - 1))
done
exit "$failed"
