#!/usr/bin/env bash
# Builds the Kubernetes control plane that the control-plane tests run against, once, into a
# cache that later runs reuse.
#
# kube-apiserver, kube-controller-manager, kube-scheduler and kubectl are built with `go build`
# from the k8s.io/kubernetes release that controlplane/go.mod requires (staging modules pinned
# by pin.sh), as the release's own build does: static (CGO_ENABLED=0), -trimpath, tags
# selinux,notest,grpcnotrace, symbols stripped, and the version stamped with -ldflags -X so
# `kube-apiserver --version` prints the release. etcd is built the same way from
# go.etcd.io/etcd/server/v3 at the version k8s.io/kubernetes requires (see
# docs/control-plane.md for why not Debian's). No code of theirs is kept outside the Go
# module cache and the binaries.
#
# Binaries go to ${KUBESTAT_CACHE:-$HOME/.cache/kubestat}/control-plane/<release>/bin. A binary
# that is there and prints the expected version is reused; only missing or wrong ones are
# built. Concurrent runs wait for each other (flock).
#
# Usage: controlplane/build.sh [--force] [--quiet]
#   --force  rebuild every binary even if the cache holds it
#   --quiet  no progress lines on stderr
# Prints the bin directory on stdout (its only output there); progress and versions on stderr.
# Exit status: 0 when every binary is present with the right version.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
force=0
quiet=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --quiet) quiet=1 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "build.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

say() { if (( ! quiet )); then echo "build.sh: $*" >&2; fi; }

# The releases, read from go.mod (pin.sh writes it), so they are never typed twice.
version=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' "$here/go.mod")
[[ "$version" =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || { echo "build.sh: no k8s.io/kubernetes release in go.mod" >&2; exit 1; }
minor=${BASH_REMATCH[1]}
etcd_version=$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2 }' "$here/go.mod")
[[ -n "$etcd_version" ]] || { echo "build.sh: go.mod requires no go.etcd.io/etcd/server/v3" >&2; exit 1; }

cache=${KUBESTAT_CACHE:-$HOME/.cache/kubestat}/control-plane/$version
bin=$cache/bin
mkdir -p "$bin"

# Each binary's Go package, and the version line it must print.
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd)
declare -A package=(
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
  [etcd]=go.etcd.io/etcd/server/v3
)
expected_version() {
  case "$1" in
    kubectl) echo "Client Version: $version" ;;
    etcd) echo "etcd Version: ${etcd_version#v}" ;;
    *) echo "Kubernetes $version" ;;
  esac
}
printed_version() {
  case "$1" in
    kubectl) "$bin/kubectl" version --client 2>/dev/null | grep '^Client Version:' ;;
    etcd) "$bin/etcd" --version 2>/dev/null | grep '^etcd Version:' ;;
    *) "$bin/$1" --version 2>/dev/null ;;
  esac
}
current() { [[ -x "$bin/$1" ]] && [[ "$(printed_version "$1")" == "$(expected_version "$1")" ]]; }

exec 9>"$cache/.lock"
flock 9

missing=()
for name in "${binaries[@]}"; do
  if (( force )) || ! current "$name"; then missing+=("$name"); fi
done

if (( ${#missing[@]} > 0 )); then
  say "building ${missing[*]} ($version, etcd $etcd_version) into $bin"
  # The release date of the module as the build date, so two builds of a release agree.
  release_time=$(cd "$here" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$version" |
    sed -n 's/^[[:space:]]*"Info": "\(.*\)",$/\1/p' | xargs sed -n 's/.*"Time": *"\([^"]*\)".*/\1/p')
  build_date=$(date -u -d "$release_time" +%Y-%m-%dT%H:%M:%SZ)
  ldflags="-s -w"
  for key_value in "gitVersion=$version" "gitMajor=1" "gitMinor=$minor" "buildDate=$build_date"; do
    ldflags+=" -X k8s.io/component-base/version.$key_value -X k8s.io/client-go/pkg/version.$key_value"
  done
  # etcd prints a commit where its own build knows one; the module version says as much here.
  ldflags+=" -X go.etcd.io/etcd/api/v3/version.GitSHA=go.etcd.io/etcd/server/v3@$etcd_version"
  packages=()
  for name in "${missing[@]}"; do packages+=("${package[$name]}"); done
  # Into a fresh directory, then moved: an interrupted build leaves no half-written binary.
  staging=$(mktemp -d "$cache/build.XXXXXX")
  trap 'rm -rf "$staging"' EXIT
  (
    cd "$here"
    export CGO_ENABLED=0 GOFLAGS=-mod=mod
    go build -trimpath -tags selinux,notest,grpcnotrace -ldflags "$ldflags" -o "$staging/" "${packages[@]}"
  )
  for name in "${missing[@]}"; do
    # go build names a binary after its package path's last element that is not a major
    # version: go.etcd.io/etcd/server/v3 -> server.
    built=${package[$name]##*/}
    if [[ "$built" =~ ^v[0-9]+$ ]]; then built=$(basename "$(dirname "${package[$name]}")"); fi
    mv -f "$staging/$built" "$bin/$name"
  done
fi

for name in "${binaries[@]}"; do
  if ! current "$name"; then
    echo "build.sh: $bin/$name prints '$(printed_version "$name")', expected '$(expected_version "$name")'" >&2
    exit 1
  fi
  say "$name: $(printed_version "$name")"
done
echo "$bin"
