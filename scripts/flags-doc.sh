#!/usr/bin/env bash
# Prints docs/flags.md: every flag of every kubestat binary with its type, default and
# meaning, read from the binaries' --help (so it says what the built code does).
#
#   scripts/flags-doc.sh BUILD_DIR > docs/flags.md
#
# The ctest test kubestat_docs_flags_current runs this and fails when docs/flags.md differs.
set -euo pipefail

if (($# != 1)); then
  echo "usage: $0 BUILD_DIR > docs/flags.md" >&2
  exit 2
fi
build=$1
binaries=(aggregator/kubestat-aggregator bridge/kubestat-bridge apiserver/kubestat-apiserver
  agent/kubestat-node-agent sim/kubestat-sim)
for binary in "${binaries[@]}"; do
  if [[ ! -x "$build/$binary" ]]; then
    echo "flags-doc: $build/$binary is missing: build it first (ninja -C $build ${binary#*/})" >&2
    exit 1
  fi
done

cat <<'EOF'
# Flags

Every flag of every kubestat binary, with its type, its default and what it does. This
page is generated from the binaries' `--help` by `scripts/flags-doc.sh BUILD_DIR >
docs/flags.md`; a test fails when it no longer matches the code, so do not edit it by hand.

Durations are written as Kubernetes writes them (`500ms`, `10s`, `1m`, `26h`); `strings`
flags take a comma-separated list; a `bool` flag is set by `--name` or `--name=true` and
cleared by `--no-name` or `--name=false`. `kubestat-sim` is the simulated cluster of the
demo, the tests and the benchmarks, not a production component.

EOF
for binary in "${binaries[@]}"; do
  name=${binary#*/}
  echo "- [\`$name\`](#$name)"
done
for binary in "${binaries[@]}"; do
  name=${binary#*/}
  printf '\n## %s\n\n' "$name"
  "$build/$binary" --help | awk '
    function flush() {
      if (flag == "") return
      text = help
      negate = ""
      if (match(text, / Negate with --no-[a-z0-9-]+\.$/)) {
        negate = substr(text, RSTART + 1)
        text = substr(text, 1, RSTART - 1)
      }
      default_value = ""
      if (match(text, /\(default .*\)$/)) {
        # The last "(default" of the text: the help itself may hold parentheses.
        start = RSTART
        while (match(substr(text, start + 1), /\(default .*\)$/)) start += RSTART
        default_value = substr(text, start + 9, length(text) - start - 9)
        text = substr(text, 1, start - 1)
      }
      sub(/ +$/, "", text)
      if (negate != "") text = text ". " negate
      gsub(/\|/, "\\|", text)
      gsub(/\|/, "\\|", default_value)
      printf "| `--%s` | %s | `%s` | %s |\n", flag, type, default_value, text
      flag = ""
    }
    /^Usage:/ { next }
    /^Flags:$/ { in_flags = 1; print ""; print "| flag | type | default | meaning |"; print "| --- | --- | --- | --- |"; next }
    !in_flags { if ($0 != "") print; next }
    /^  -h, --help$/ { skip_help = 1; next }
    /^  --/ {
      flush()
      skip_help = 0
      flag = substr($1, 3)
      type = $2
      help = ""
      next
    }
    /^        / {
      if (skip_help) next
      line = substr($0, 9)
      help = (help == "") ? line : help " " line
      next
    }
    END { flush() }
  '
done
