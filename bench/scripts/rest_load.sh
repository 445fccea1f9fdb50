#!/usr/bin/env bash
# Load test of the REST front end with wrk (Debian package wrk).
#
#   bench/scripts/rest_load.sh BASE_URL [DURATION] [NAMESPACE]
#
# BASE_URL is the server's root, e.g. http://127.0.0.1:8080 (the synthetic server
# build/bench/kubestat-rest-fake-server prints its URL; its namespaces are ns-0000 ...).
# Runs
#   (a) one namespace's pods (metrics.k8s.io/v1beta1) at a target of 200 requests/s,
#   (b) the all-nodes list (metrics.k8s.io/v1beta1), closed loop,
#   (c) the all-nodes list (metrics/v1alpha1, every window), closed loop,
#   (cz) the same with "Accept-Encoding: gzip" (as Go clients ask), closed loop,
# and prints for each the achieved rate and the p50/p90/p99/p99.9 latency (from wrk's
# latency histogram, as --latency reports it).
set -euo pipefail

if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
base="${1%/}"
duration="${2:-30s}"
namespace="${3:-ns-0007}"
here="$(cd "$(dirname "$0")" && pwd)"
script="$here/rest_load.lua"
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 1; }

# Fail early, with the server's answer, when the target is not serving.
curl -fsS "$base/apis/metrics.k8s.io/v1beta1/namespaces/$namespace/pods" >/dev/null

run() {
  local title="$1"; shift
  echo "== $title"
  wrk --latency -s "$script" "$@"
  echo
}

run "(a) namespace $namespace pods, v1beta1, target 200 req/s (2 threads, 4 connections)" \
  -t2 -c4 -d "$duration" "$base/apis/metrics.k8s.io/v1beta1/namespaces/$namespace/pods" -- 200 2
run "(b) all nodes, v1beta1, closed loop (2 threads, 4 connections)" \
  -t2 -c4 -d "$duration" "$base/apis/metrics.k8s.io/v1beta1/nodes"
run "(c) all nodes, metrics/v1alpha1 (every window), closed loop (2 threads, 4 connections)" \
  -t2 -c4 -d "$duration" "$base/apis/metrics/v1alpha1/nodes"
run "(cz) all nodes, metrics/v1alpha1, gzip, closed loop (2 threads, 4 connections)" \
  -t2 -c4 -d "$duration" -H "Accept-Encoding: gzip" "$base/apis/metrics/v1alpha1/nodes"
