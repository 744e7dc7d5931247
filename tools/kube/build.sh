#!/usr/bin/env bash
# Builds etcd, kube-apiserver and kube-controller-manager for the Kubernetes driver tests into
# $OCC_KUBE_BIN (default ~/.cache/occ/kube/v1.37.2) when any of them is missing. The first build takes
# about 10 minutes on 2 cores; later runs return at once.
set -euo pipefail
cd "$(dirname "$0")"
K8S_VERSION=v1.37.2
OUT="${OCC_KUBE_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/occ/kube/$K8S_VERSION}"
mkdir -p "$OUT"
LDF="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean"
build() { # name package [ldflags]
  if [ -x "$OUT/$1" ]; then return; fi
  echo "kube-bin: building $1 into $OUT (first time only; several minutes)" >&2
  start=$(date +%s)
  go build -trimpath -ldflags "${3:-}" -o "$OUT/$1.tmp" "$2"
  mv "$OUT/$1.tmp" "$OUT/$1"
  echo "kube-bin: $1 built in $(( $(date +%s) - start ))s" >&2
}
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$LDF"
build etcd go.etcd.io/etcd/server/v3 "-s -w"
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$LDF"
echo "$OUT"
