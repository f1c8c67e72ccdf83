#!/usr/bin/env bash
# Builds kube-apiserver and etcd for the integration tests from the Go module
# proxy (no prebuilt binaries can be downloaded) and caches them outside the
# clone, keyed by version and Go version. Prints the directory holding both.
#
#   KUBE_VERSION (default v1.37.2), ETCD_VERSION (default v3.7.3),
#   OVN_SYNC_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/ovn-sync)
set -euo pipefail
KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.7.3}
GOV=$(go env GOVERSION)
CACHE=${OVN_SYNC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ovn-sync}
OUT="$CACHE/kube-$KUBE_VERSION-etcd-$ETCD_VERSION-$GOV"
if [ -x "$OUT/kube-apiserver" ] && [ -x "$OUT/etcd" ]; then
  echo "$OUT"; exit 0
fi
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod GOMODCACHE="$work/mod" GOCACHE="$work/cache" CGO_ENABLED=0 GOTOOLCHAIN=local

# kube-apiserver: k8s.io/kubernetes replaces its staging modules with ./staging,
# so pin each staging module required at v0.0.0 to the matching v0.x release.
mkdir -p "$work/kube" && cd "$work/kube"
minor=${KUBE_VERSION#v1.}
stage_ver="v0.$minor"
cat > go.mod <<EOM
module kubebuild
go 1.26
require k8s.io/kubernetes $KUBE_VERSION
EOM
printf 'package tools\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver"\n' > tools.go
go mod download -json k8s.io/kubernetes@"$KUBE_VERSION" > dl.json
gomod=$(sed -n 's/.*"GoMod": "\(.*\)".*/\1/p' dl.json)
for m in $(awk '/^replace|^\t/ && /=> \.\/staging/ {print $1}' "$gomod" | grep '^k8s.io/' | sort -u); do
  case "$m" in k8s.io/sample-cli-plugin|k8s.io/sample-controller) continue;; esac
  echo "replace $m => $m $stage_ver" >> go.mod
done
go mod tidy >/dev/null 2>&1 || go mod tidy
go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION" -o "$OUT/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver

# etcd: its server module has a main package at its root.
mkdir -p "$work/etcd" && cd "$work/etcd"
cat > go.mod <<EOM
module etcdbuild
go 1.26
require go.etcd.io/etcd/server/v3 $ETCD_VERSION
EOM
printf 'package tools\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
go mod tidy >/dev/null 2>&1 || go mod tidy
go build -trimpath -ldflags "-s -w" -o "$OUT/etcd" go.etcd.io/etcd/server/v3
echo "$OUT"
