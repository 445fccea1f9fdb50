#!/usr/bin/env bash
# Installs the Debian 12 packages kubestat needs to build, test, fuzz and benchmark.
# Does nothing when they are all present. Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git clang libclang-rt-14-dev lld
  # libraries
  libcpprest-dev libboost-system-dev librocksdb-dev libprotobuf-dev protobuf-compiler
  libgrpc++-dev protobuf-compiler-grpc prometheus-cpp-dev libsimdjson-dev libssl-dev libabsl-dev libyaml-cpp-dev zlib1g-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev prometheus wrk openssl curl procps sslscan
  python3-kubernetes python3-yaml
  # kubestat-apiserver's etcd store: a real etcd (/usr/bin/etcd) in its tests
  etcd-server
)
# kubectl: renders manifests/ (kubectl kustomize) and is the outside client of the kubectl
# tests. Debian's kubernetes-client unless a kubectl is already installed (another package,
# e.g. a newer one, may own /usr/bin/kubectl).
if ! command -v kubectl >/dev/null 2>&1; then packages+=(kubernetes-client); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
