#!/usr/bin/env bash
# Runs every libFuzzer target of a KUBESTAT_FUZZ build for a while.
# Usage: scripts/fuzz.sh BUILD_DIR [SECONDS_EACH]
# KUBESTAT_FUZZ_ONLY (names separated by spaces) runs only those targets, so a long run can be
# split over several sittings.
# Each target starts from its seed corpus in fuzz/corpus/<target>/ (when present); new inputs
# go to a scratch folder, crashes to BUILD_DIR/fuzz-artifacts/. Exits non-zero on the first crash.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/fuzz.sh BUILD_DIR [SECONDS_EACH]}
seconds=${2:-20}
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
found=0
for target in "$build"/fuzz/*_fuzz; do
  [[ -x "$target" ]] || continue
  found=1
  name=$(basename "$target")
  if [[ -n "${KUBESTAT_FUZZ_ONLY:-}" && " $KUBESTAT_FUZZ_ONLY " != *" $name "* ]]; then continue; fi
  scratch=$(mktemp -d)
  seeds=()
  if [[ -d "fuzz/corpus/$name" ]]; then seeds=("fuzz/corpus/$name"); fi
  echo "== fuzz $name for ${seconds}s"
  log="$artifacts/$name.log"
  set +e
  ASAN_OPTIONS=detect_leaks=1 "$target" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$artifacts/$name-" "$scratch" "${seeds[@]}" >"$log" 2>&1
  rc=$?
  set -e
  tail -n 12 "$log"
  rm -rf "$scratch"
  if ((rc != 0)); then
    echo "fuzz: $name failed (exit $rc); reproducer in $artifacts" >&2
    exit "$rc"
  fi
done
if ((!found)); then
  echo "fuzz: no fuzz targets in $build/fuzz (configure with -DKUBESTAT_FUZZ=ON)" >&2
  exit 1
fi
