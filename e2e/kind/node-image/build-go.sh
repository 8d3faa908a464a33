#!/usr/bin/env bash
# Go binaries for the offline kind setup, from the Go module proxy, each cached
# under ~/.cache/narad-kind/<name>-<version>/ (a finished build is never redone;
# a build that stopped part-way starts that one binary again):
#   kind            sigs.k8s.io/kind               the CLI
#   crictl          sigs.k8s.io/cri-tools           in the node (kind load, the harness)
#   kubelet, kubeadm, kube-scheduler, kube-proxy    e2e/platform/build-binaries.sh node
#   coredns         github.com/coredns/coredns      the version kubeadm v1.36 deploys, with
#                   only the plugins kubeadm's Corefile uses (coredns/main.go)
#   local-path-provisioner  github.com/rancher/local-path-provisioner (StorageClass standard)
#   kube-network-policies   sigs.k8s.io/kube-network-policies (the NetworkPolicy agent, e2e/kind/netpol/)
# Holds ~/.cache/narad-k8s/.build.lock while compiling, so it never runs beside
# the control-plane build (2 cores). Prints NAME=path lines.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT="${NARAD_ROOT:-$(cd "$HERE/../../.." && pwd)}"
CACHE="${NARAD_KIND_CACHE:-$HOME/.cache/narad-kind}"
K8S_CACHE="${NARAD_K8S_CACHE:-$HOME/.cache/narad-k8s}"
KIND_VERSION="${NARAD_KIND_VERSION:-v0.33.0}"
CRICTL_VERSION="${NARAD_CRICTL_VERSION:-v1.37.0}"
COREDNS_VERSION="${NARAD_COREDNS_VERSION:-v1.14.2}"
LOCALPATH_VERSION="${NARAD_LOCALPATH_VERSION:-v0.0.30}"
NETPOL_VERSION="${NARAD_NETPOL_VERSION:-v0.8.0}"
ONLY="${1:-all}"   # all | kind | netpol
log() { printf '[kind-go %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# gobuild NAME VERSION MODULE PACKAGE: a throwaway module requiring MODULE@VERSION
# (so the module's own replace directives do not block `go install pkg@v`).
gobuild() {
  local name=$1 version=$2 module=$3 pkg=$4 out="$CACHE/$1-$2"
  if [ -x "$out/$name" ]; then log "$name $version cached"; echo "$name=$out/$name"; return; fi
  log "building $name $version"
  local t0=$SECONDS src="$CACHE/src/$name-$version"
  rm -rf "$src" && mkdir -p "$src" && cd "$src"
  go mod init "local/$name" >/dev/null 2>&1
  # The package path, not just the module: go get then records the sums of
  # every module the package imports.
  go get "$pkg@$version" >&2
  mkdir -p "$out.tmp"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.tmp/$name" "$pkg" >&2
  rm -rf "$out" && mv "$out.tmp" "$out"
  log "$name $version built in $((SECONDS - t0)) s"
  echo "$name=$out/$name"
}

# gobuild_main NAME VERSION MODULE MAIN_GO: like gobuild, for our own main
# package MAIN_GO against MODULE@VERSION. The cache dir carries a hash of
# MAIN_GO, so editing it builds afresh.
gobuild_main() {
  local name=$1 version=$2 module=$3 main=$4
  local hash; hash=$(sha256sum "$main" | cut -c1-12)
  local out="$CACHE/$name-$version-$hash"
  if [ -x "$out/$name" ]; then log "$name $version ($hash) cached"; echo "$name=$out/$name"; return; fi
  log "building $name $version from $(basename "$(dirname "$main")")/main.go ($hash)"
  local t0=$SECONDS src="$CACHE/src/$name-$version-$hash"
  rm -rf "$src" && mkdir -p "$src" && cd "$src"
  go mod init "local/$name" >/dev/null 2>&1
  cp "$main" main.go
  # go get of the imported packages (not go mod tidy): it records the sums of
  # just the modules they need, for this platform.
  local pkgs; pkgs=$(grep -o "\"$module/[^\"]*\"" main.go | tr -d '"' | sed "s|\$|@$version|")
  # shellcheck disable=SC2086 # one word per package
  go get $pkgs >&2
  mkdir -p "$out.tmp"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.tmp/$name" . >&2
  rm -rf "$out" && mv "$out.tmp" "$out"
  log "$name $version built in $((SECONDS - t0)) s"
  echo "$name=$out/$name"
}

mkdir -p "$CACHE" "$K8S_CACHE"
exec 9>"$K8S_CACHE/.build.lock"
log "waiting for $K8S_CACHE/.build.lock"
flock 9
gobuild kind "$KIND_VERSION" sigs.k8s.io/kind sigs.k8s.io/kind
[ "$ONLY" = kind ] && exit 0
netpol() {
  gobuild kube-network-policies "$NETPOL_VERSION" sigs.k8s.io/kube-network-policies sigs.k8s.io/kube-network-policies/cmd
}
if [ "$ONLY" = netpol ]; then netpol; exit 0; fi
gobuild crictl "$CRICTL_VERSION" sigs.k8s.io/cri-tools sigs.k8s.io/cri-tools/cmd/crictl
# build-binaries.sh takes the same lock: release it for the call.
exec 9>&-
bash "$ROOT/e2e/platform/build-binaries.sh" node | grep '^K8S'
exec 9>"$K8S_CACHE/.build.lock"
flock 9
gobuild_main coredns "$COREDNS_VERSION" github.com/coredns/coredns "$HERE/coredns/main.go"
gobuild local-path-provisioner "$LOCALPATH_VERSION" github.com/rancher/local-path-provisioner github.com/rancher/local-path-provisioner
netpol
