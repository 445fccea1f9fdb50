#!/usr/bin/env bash
# Makes kubestat's serving certificates without cert-manager, as a kustomize overlay.
#
#   manifests/gen-certs.sh [-b OVERLAY] [-n NAMESPACE] [-d DAYS] OUT_DIR
#
# Writes into OUT_DIR (created; keys are mode 0600):
#   ca.crt, ca.key                 a CA (ECDSA P-256) that signs the two serving certificates
#   aggregator.crt, aggregator.key the aggregator's (and the bridge's) serving certificate
#   apiserver.crt, apiserver.key   kubestat-apiserver's serving certificate
#   ca-bundle.b64                  ca.crt in base64 on one line: an APIService's caBundle
#   apiservice-cabundle.yaml       a JSON 6902 patch setting /spec/caBundle to it
#   kustomization.yaml             OVERLAY (default manifests/base) plus the Secrets
#                                  kubestat-aggregator-tls and kubestat-apiserver-tls
#                                  (tls.crt, tls.key, ca.crt), and the caBundle patch on
#                                  every APIService of OVERLAY
# Each serving certificate names its Service: <svc>, <svc>.<ns>, <svc>.<ns>.svc and
# <svc>.<ns>.svc.cluster.local, and is checked with `openssl verify` for each name before
# the script ends. Then: kubectl apply -k OUT_DIR
#
# OUT_DIR holds private keys: keep it out of version control (or out of the repository).
# Running the script again makes a new CA and new certificates; the servers re-read their
# certificate files when the Secrets change, and `kubectl apply -k OUT_DIR` updates the
# caBundle in the same step.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
overlay="$here/base"
namespace=kubestat
days=365

usage() {
  sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}

while getopts "b:n:d:h" opt; do
  case "$opt" in
    b) overlay=$OPTARG ;;
    n) namespace=$OPTARG ;;
    d) days=$OPTARG ;;
    h) usage 0 ;;
    *) usage 2 >&2 ;;
  esac
done
shift $((OPTIND - 1))
if (($# != 1)); then
  echo "gen-certs.sh: give one OUT_DIR (-h for help)" >&2
  exit 2
fi
out=$1
if [[ ! -f "$overlay/kustomization.yaml" ]]; then
  echo "gen-certs.sh: -b $overlay: no kustomization.yaml there" >&2
  exit 2
fi
command -v openssl >/dev/null || { echo "gen-certs.sh: openssl is not installed" >&2; exit 1; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
umask 077

# The CA: signs certificates only.
openssl req -x509 -new -nodes -sha256 -days "$((days * 10))" \
  -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
  -keyout "$out/ca.key" -out "$out/ca.crt" -subj "/CN=kubestat-ca" \
  -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null

dns_names() {  # the names a Service is reached by in the cluster
  local svc=$1
  echo "$svc $svc.$namespace $svc.$namespace.svc $svc.$namespace.svc.cluster.local"
}

# serve NAME SERVICE: NAME.crt and NAME.key for the Service SERVICE, signed by the CA.
serve() {
  local name=$1 svc=$2 sans="" dns
  for dns in $(dns_names "$svc"); do sans+="${sans:+,}DNS:$dns"; done
  openssl req -new -nodes -sha256 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -keyout "$out/$name.key" -out "$out/$name.csr" -subj "/CN=$svc.$namespace.svc" 2>/dev/null
  cat >"$out/$name.ext" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=$sans
EOF
  openssl x509 -req -sha256 -days "$days" -in "$out/$name.csr" -CA "$out/ca.crt" \
    -CAkey "$out/ca.key" -CAcreateserial -out "$out/$name.crt" -extfile "$out/$name.ext" \
    2>/dev/null
  rm -f "$out/$name.csr" "$out/$name.ext"
  for dns in $(dns_names "$svc"); do
    if ! openssl verify -CAfile "$out/ca.crt" -purpose sslserver -verify_hostname "$dns" \
      "$out/$name.crt" >/dev/null; then
      echo "gen-certs.sh: $name.crt does not verify for $dns" >&2
      exit 1
    fi
  done
}

serve aggregator kubestat-aggregator
serve apiserver kubestat-apiserver
rm -f "$out/ca.srl"
chmod 0644 "$out"/*.crt

base64 -w0 "$out/ca.crt" >"$out/ca-bundle.b64"
cat >"$out/apiservice-cabundle.yaml" <<EOF
- op: add
  path: /spec/caBundle
  value: $(cat "$out/ca-bundle.b64")
EOF

# Every APIService the overlay adds (the base registers v1alpha1.metrics; overlays/
# metrics-server adds metrics.k8s.io's), each given the caBundle.
# (An overlay that adds none, like overlays/etcd, matches nothing: not an error.)
apiservices=$( (echo v1alpha1.metrics
  { grep -h -o -E '^  name: v1[a-z0-9]*\.metrics(\.k8s\.io)?$' "$overlay"/*.yaml 2>/dev/null || true; } |
    sed 's/^  name: //') | sort -u)

relative=$(realpath --relative-to="$out" "$(cd "$overlay" && pwd)")
{
  echo "# Written by manifests/gen-certs.sh: $relative with the certificates made here."
  echo "bases:"
  echo "- $relative"
  echo "generatorOptions:"
  echo "  disableNameSuffixHash: true"
  echo "secretGenerator:"
  for name in aggregator apiserver; do
    echo "- name: kubestat-$name-tls"
    echo "  namespace: $namespace"
    echo "  type: kubernetes.io/tls"
    echo "  files:"
    echo "  - tls.crt=$name.crt"
    echo "  - tls.key=$name.key"
    echo "  - ca.crt=ca.crt"
  done
  echo "patchesJson6902:"
  for name in $apiservices; do
    echo "- target:"
    echo "    group: apiregistration.k8s.io"
    echo "    version: v1"
    echo "    kind: APIService"
    echo "    name: $name"
    echo "  path: apiservice-cabundle.yaml"
  done
} >"$out/kustomization.yaml"
chmod 0644 "$out/kustomization.yaml" "$out/apiservice-cabundle.yaml" "$out/ca-bundle.b64"

echo "gen-certs.sh: wrote $out (CA, serving certificates verified for $(dns_names kubestat-apiserver | wc -w) names each)"
echo "  APIServices given the caBundle: $(echo $apiservices)"
echo "  apply with: kubectl apply -k $out"
