#!/usr/bin/env bash
# Builds the pinned control-plane binaries (etcd, kube-apiserver,
# kube-controller-manager, kubectl) from the Go module proxy into
# ~/.cache/narad-k8s/<component>-<version>/ and does nothing when they exist.
# A cold build takes tens of minutes on 2 cores; warm runs return at once.
#
#   build-binaries.sh        etcd, kube-apiserver, kube-controller-manager, kubectl
#   build-binaries.sh node   also kubelet, kubeadm, kube-scheduler, kube-proxy into
#                            kubernetes-v<version>-node/ (the offline kind node
#                            image, e2e/kind/node-image/), from the same module
#                            dir, so the Go build cache is shared
set -euo pipefail

K8S_VERSION="${NARAD_K8S_VERSION:-1.36.3}"
ETCD_VERSION="${NARAD_ETCD_VERSION:-3.6.16}"
CACHE="${NARAD_K8S_CACHE:-$HOME/.cache/narad-k8s}"
K8S_BIN="$CACHE/kubernetes-v$K8S_VERSION"
ETCD_BIN="$CACHE/etcd-v$ETCD_VERSION"

log() { printf '[build-binaries %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

build_etcd() {
  [ -x "$ETCD_BIN/etcd" ] && { log "etcd v$ETCD_VERSION cached"; return; }
  log "building etcd v$ETCD_VERSION (first run only)"
  local src="$CACHE/src/etcd-v$ETCD_VERSION"
  rm -rf "$src" && mkdir -p "$src" && cd "$src"
  go mod init local/etcdbin >/dev/null 2>&1
  go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >&2
  mkdir -p "$ETCD_BIN.tmp"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$ETCD_BIN.tmp/etcd" go.etcd.io/etcd/server/v3 >&2
  rm -rf "$ETCD_BIN" && mv "$ETCD_BIN.tmp" "$ETCD_BIN"
  log "etcd ready at $ETCD_BIN/etcd"
}

build_k8s() {
  local all=1 c
  for c in kube-apiserver kube-controller-manager kubectl; do
    [ -x "$K8S_BIN/$c" ] || all=0
  done
  [ "$all" = 1 ] && { log "kubernetes v$K8S_VERSION cached"; return; }
  log "building kubernetes v$K8S_VERSION components (first run only; ~20-30 min on 2 cores)"
  local src="$CACHE/src/kubernetes-v$K8S_VERSION" staging="0.${K8S_VERSION#1.}"
  rm -rf "$src" && mkdir -p "$src" && cd "$src"
  go mod init local/k8sbin >/dev/null 2>&1
  go mod edit -require="k8s.io/kubernetes@v$K8S_VERSION"
  local gomod
  gomod=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  # The kubernetes module maps its staging modules to ./staging with replace
  # directives that are ignored for dependencies; pin each one to its release.
  for m in $(sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => \./staging/.*#\1#p' "$gomod"); do
    go mod edit -replace="$m=$m@v$staging"
  done
  for c in kube-apiserver kube-controller-manager kubectl; do
    log "resolving $c"
    go get -tool "k8s.io/kubernetes/cmd/$c@v$K8S_VERSION" >&2
  done
  local minor="${K8S_VERSION#1.}"; minor="${minor%%.*}"
  local v="-X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=v$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  mkdir -p "$K8S_BIN.tmp"
  for c in kube-apiserver kube-controller-manager kubectl; do
    # A run that stopped part-way kept what it had finished.
    [ -x "$K8S_BIN.tmp/$c" ] && { log "$c already built (resuming)"; continue; }
    log "compiling $c"
    CGO_ENABLED=0 GOBIN="$K8S_BIN.tmp" go install -trimpath -ldflags "-s -w $v" "k8s.io/kubernetes/cmd/$c" >&2
  done
  rm -rf "$K8S_BIN" && mv "$K8S_BIN.tmp" "$K8S_BIN"
  log "kubernetes ready at $K8S_BIN"
}

# Node components (kind): same module dir and ldflags as build_k8s.
build_k8s_node() {
  local NODE_BIN="$K8S_BIN-node" all=1 c
  for c in $NODE_COMPONENTS; do [ -x "$NODE_BIN/$c" ] || all=0; done
  [ "$all" = 1 ] && { log "kubernetes v$K8S_VERSION node components cached"; return; }
  local src="$CACHE/src/kubernetes-v$K8S_VERSION"
  [ -f "$src/go.mod" ] || { log "error: $src/go.mod missing (build_k8s did not run?)"; exit 1; }
  cd "$src"
  for c in $NODE_COMPONENTS; do
    log "resolving $c"
    go get -tool "k8s.io/kubernetes/cmd/$c@v$K8S_VERSION" >&2
  done
  local minor="${K8S_VERSION#1.}"; minor="${minor%%.*}"
  local v="-X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=v$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  mkdir -p "$NODE_BIN.tmp"
  for c in $NODE_COMPONENTS; do
    [ -x "$NODE_BIN.tmp/$c" ] && { log "$c already built (resuming)"; continue; }
    log "compiling $c"
    CGO_ENABLED=0 GOBIN="$NODE_BIN.tmp" go install -trimpath -ldflags "-s -w $v" "k8s.io/kubernetes/cmd/$c" >&2
  done
  rm -rf "$NODE_BIN" && mv "$NODE_BIN.tmp" "$NODE_BIN"
  log "kubernetes node components ready at $NODE_BIN"
}
NODE_COMPONENTS="kubelet kubeadm kube-scheduler kube-proxy"

# Everything asked for already cached: no lock. Finished builds appear by an
# atomic rename, so this check is safe without it, and a cached control plane
# must not wait behind another process's long compile (the kind images).
all_cached() {
  local c
  [ -x "$ETCD_BIN/etcd" ] || return 1
  for c in kube-apiserver kube-controller-manager kubectl; do [ -x "$K8S_BIN/$c" ] || return 1; done
  if [ "${1:-}" = node ]; then
    for c in $NODE_COMPONENTS; do [ -x "$K8S_BIN-node/$c" ] || return 1; done
  fi
}

mkdir -p "$CACHE"
if ! all_cached "${1:-}"; then
  exec 9>"$CACHE/.build.lock"
  flock 9
fi
build_etcd
build_k8s
if [ "${1:-}" = node ]; then
  build_k8s_node
  echo "K8S_NODE_BIN=$K8S_BIN-node"
fi
echo "ETCD=$ETCD_BIN/etcd"
echo "K8S_BIN=$K8S_BIN"
