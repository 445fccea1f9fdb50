#!/usr/bin/env bash
# Fails when docs/flags.md is not what scripts/flags-doc.sh makes from the built binaries'
# --help, showing the difference and how to regenerate it.
#   flags_current.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$1
build_dir=$2
generated=$(mktemp)
trap 'rm -f "$generated"' EXIT
"$source_dir/scripts/flags-doc.sh" "$build_dir" >"$generated"
if ! diff -u "$source_dir/docs/flags.md" "$generated"; then
  echo
  echo "docs/flags.md is stale: the binaries' --help changed. Regenerate it with"
  echo "  scripts/flags-doc.sh $build_dir > docs/flags.md"
  echo "and commit the result."
  exit 1
fi
echo "docs/flags.md matches the --help of every binary"
