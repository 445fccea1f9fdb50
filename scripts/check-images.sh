#!/usr/bin/env bash
# Checks docker/Dockerfile without Docker: for each binary, every shared library `ldd`
# reports for the built binary must come (by `dpkg -S` on this Debian machine) from a
# package the binary's runtime target installs, in its own stage or a stage it is built
# FROM; and the target must copy the binary to /usr/local/bin, run it as ENTRYPOINT and
# run as uid 65532. Exits 77 (ctest's "skipped") when dpkg or ldd is absent.
#
#   scripts/check-images.sh BUILD_DIR [DOCKERFILE]
set -euo pipefail

if (($# < 1 || $# > 2)); then
  echo "usage: $0 BUILD_DIR [DOCKERFILE]" >&2
  exit 2
fi
build=$1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dockerfile=${2:-$root/docker/Dockerfile}
for tool in dpkg ldd; do
  if ! command -v "$tool" >/dev/null; then
    echo "check-images: SKIPPED: $tool is not installed (this check maps libraries to Debian packages)"
    exit 77
  fi
done
[[ -f "$dockerfile" ]] || { echo "check-images: $dockerfile not found" >&2; exit 1; }

binaries=(aggregator/kubestat-aggregator bridge/kubestat-bridge apiserver/kubestat-apiserver
  agent/kubestat-node-agent sim/kubestat-sim)

# The Dockerfile as one logical instruction a line (continuations joined, comments dropped),
# then as records: "from STAGE PARENT", "pkg STAGE NAME", "copy STAGE DEST",
# "entrypoint STAGE TEXT", "user STAGE TEXT" (the stage's last USER wins).
parsed=$(awk '
  /^[ \t]*#/ { next }
  {
    line = $0
    if (sub(/\\[ \t]*$/, "", line)) { pending = pending line " "; next }
    print pending line
    pending = ""
  }' "$dockerfile" | awk '
  toupper($1) == "FROM" {
    stage = (NF >= 4 && toupper($3) == "AS") ? $4 : $2
    print "from", stage, $2
    next
  }
  toupper($1) == "RUN" {
    n = split($0, words, /[ \t]+/)
    installing = 0
    for (i = 1; i <= n; i++) {
      w = words[i]
      if (w == "install" && i > 1 && words[i - 1] == "apt-get") { installing = 1; continue }
      if (w == "&&" || w == ";" || w == "||") { installing = 0; continue }
      if (installing && w != "" && substr(w, 1, 1) != "-") print "pkg", stage, w
    }
    next
  }
  toupper($1) == "COPY" { print "copy", stage, $NF; next }
  toupper($1) == "ENTRYPOINT" { $1 = ""; print "entrypoint", stage, $0; next }
  toupper($1) == "USER" { print "user", stage, $2; next }
')

# The packages a stage installs, its own and its parents'.
stage_packages() {
  local stage=$1 parent
  while [[ -n "$stage" ]]; do
    awk -v s="$stage" '$1 == "pkg" && $2 == s { print $3 }' <<<"$parsed"
    parent=$(awk -v s="$stage" '$1 == "from" && $2 == s { print $3 }' <<<"$parsed")
    if awk -v p="$parent" '$1 == "from" && $2 == p { found = 1 } END { exit !found }' \
      <<<"$parsed"; then
      stage=$parent
    else
      stage=""
    fi
  done
}

# The user a stage runs as: its last USER, else its parent's.
stage_user() {
  local stage=$1 user=""
  while [[ -n "$stage" && -z "$user" ]]; do
    user=$(awk -v s="$stage" '$1 == "user" && $2 == s { u = $3 } END { print u }' <<<"$parsed")
    stage=$(awk -v s="$stage" '$1 == "from" && $2 == s { print $3 }' <<<"$parsed")
  done
  echo "$user"
}

# The Debian package owning a library path (dpkg knows some under /lib, some under /usr/lib);
# remembered, since the binaries share most of their libraries. Sets $owner (no subshell, so
# the memo survives).
declare -A owners=()
owning_package() {
  local path=$1 candidate out
  if [[ -n "${owners[$path]:-}" ]]; then
    owner=${owners[$path]}
    return 0
  fi
  for candidate in "$path" "$(readlink -f "$path")" "/usr${path}" "${path#/usr}"; do
    if out=$(dpkg -S "$candidate" 2>/dev/null); then
      # "libc6:amd64: /lib/x86_64-linux-gnu/libc.so.6"; several owners are comma-separated.
      owner=$(sed 's/: .*//; s/, /\n/g' <<<"$out" | sed 's/:.*//' | head -n 1)
      owners[$path]=$owner
      return 0
    fi
  done
  return 1
}

failures=0
fail() {
  echo "check-images: FAIL: $*"
  failures=$((failures + 1))
}
for binary in "${binaries[@]}"; do
  name=${binary#*/}
  path="$build/$binary"
  if [[ ! -x "$path" ]]; then
    fail "$path is missing: build it first (ninja -C $build $name)"
    continue
  fi
  if ! grep -qx "from $name .*" <<<"$parsed"; then
    fail "$dockerfile has no target (stage) named $name"
    continue
  fi
  installed=$(stage_packages "$name" | sort -u)
  libraries=$(ldd "$path" | awk '
    /not found/ { print "NOTFOUND:" $1; next }
    $2 == "=>" && $3 ~ /^\// { print $3; next }
    $1 ~ /^\// { print $1 }')
  count=0
  needed=()
  while read -r library; do
    [[ -n "$library" ]] || continue
    if [[ "$library" == NOTFOUND:* ]]; then
      fail "$name: ldd cannot find ${library#NOTFOUND:} on this machine"
      continue
    fi
    count=$((count + 1))
    if ! owning_package "$library"; then
      fail "$name: $library belongs to no Debian package (dpkg -S): it cannot be installed in the image"
      continue
    fi
    needed+=("$owner")
    if ! grep -qx "$owner" <<<"$installed"; then
      fail "$name: $library comes from $owner, which the $name target does not install"
    fi
  done <<<"$libraries"
  if ! grep -qx "copy $name /usr/local/bin/$name" <<<"$parsed"; then
    fail "$name: the target does not copy the binary to /usr/local/bin/$name"
  fi
  if ! grep -q "^entrypoint $name .*\"/usr/local/bin/$name\"" <<<"$parsed"; then
    fail "$name: ENTRYPOINT is not [\"/usr/local/bin/$name\"]"
  fi
  user=$(stage_user "$name")
  if [[ "$user" != "65532:65532" && "$user" != "65532" ]]; then
    fail "$name: the target runs as '${user:-root}', not 65532:65532"
  fi
  unique=$(printf '%s\n' "${needed[@]}" | sort -u | paste -sd' ')
  echo "check-images: $name: $count libraries from: $unique"
done

if ((failures > 0)); then
  echo "check-images: $failures problem(s) in $dockerfile (add the named packages to the target's apt-get install)"
  exit 1
fi
echo "check-images: every runtime library of every binary is installed by its target"
