#!/usr/bin/env bash
# Runs promtool with the given arguments, or skips (exit 77) when it is not installed
# (Debian's prometheus package has it: scripts/install-deps.sh installs it).
set -euo pipefail
if ! command -v promtool >/dev/null; then
  echo "SKIPPED: promtool is not installed (apt-get install prometheus)"
  exit 77
fi
exec promtool "$@"
