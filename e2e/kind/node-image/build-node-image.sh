#!/usr/bin/env bash
# Builds Narad's offline kind node image for Kubernetes v1.36.3, with every
# image kubeadm and kind need preloaded, so `kind create cluster` pulls
# nothing:
#   registry.k8s.io/kube-{apiserver,controller-manager,scheduler,proxy}:v1.36.3
#   registry.k8s.io/etcd:3.6.16-0           (our etcd build; the kind config sets the tag)
#   registry.k8s.io/coredns/coredns:v1.14.2 (the version kubeadm v1.36 deploys)
#   registry.k8s.io/pause:3.10.2            (pause.c, our own)
#   narad.local/local-path-provisioner:v0.0.30, narad.local/busybox:bookworm
# Inputs: e2e/platform/build-binaries.sh (control plane + node components),
# build-go.sh (kind, crictl, coredns, local-path-provisioner), build-rootfs.sh
# (Debian: systemd, containerd, runc, CNI plugins). Each is cached; this script
# only assembles. Prints the node image name.
#
#   image  narad.local/kind-node:v1.36.3
#   cache  ~/.cache/narad-kind/images/*.tar (component images, docker save)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT="${NARAD_ROOT:-$(cd "$HERE/../../.." && pwd)}"
CACHE="${NARAD_KIND_CACHE:-$HOME/.cache/narad-kind}"
K8S_CACHE="${NARAD_K8S_CACHE:-$HOME/.cache/narad-k8s}"
K8S_VERSION=1.36.3
ETCD_VERSION=3.6.16
COREDNS_VERSION=v1.14.2
# build-go.sh keys the CoreDNS build by its main.go (only kubeadm's plugins).
COREDNS_KEY="$COREDNS_VERSION-$(sha256sum "$HERE/coredns/main.go" | cut -c1-12)"
COREDNS_BIN="$CACHE/coredns-$COREDNS_KEY/coredns"
PAUSE_TAG=3.10.2
LOCALPATH_VERSION=v0.0.30
NODE_IMAGE="${NARAD_KIND_NODE_IMAGE:-narad.local/kind-node:v$K8S_VERSION}"
log() { printf '[node-image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
export DOCKER_BUILDKIT=1
DOCKER=docker
if ! docker buildx version >/dev/null 2>&1 && [ -x /usr/bin/docker ]; then DOCKER=/usr/bin/docker; fi

CP="$K8S_CACHE/kubernetes-v$K8S_VERSION"
NODE="$K8S_CACHE/kubernetes-v$K8S_VERSION-node"
ETCD="$K8S_CACHE/etcd-v$ETCD_VERSION/etcd"
for f in "$CP/kube-apiserver" "$CP/kube-controller-manager" "$CP/kubectl" "$NODE/kubelet" "$NODE/kubeadm" \
  "$NODE/kube-scheduler" "$NODE/kube-proxy" "$ETCD" "$CACHE/crictl-v1.37.0/crictl" \
  "$COREDNS_BIN" "$CACHE/local-path-provisioner-$LOCALPATH_VERSION/local-path-provisioner"; do
  [ -x "$f" ] || die "$f missing: run e2e/kind/node-image/build-go.sh (and e2e/platform/build-binaries.sh) first"
done
ROOTFS=$("$HERE/build-rootfs.sh")
key=$(basename "$ROOTFS" .tar); key=${key##*-}
BASE="narad-local/kind-base:$key"
if ! docker image inspect "$BASE" >/dev/null 2>&1; then
  log "importing $ROOTFS as $BASE"
  docker import "$ROOTFS" "$BASE" >/dev/null
fi

mkdir -p "$CACHE/images"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

# The component image tars that go into the node image (filled by image()).
TARS=()
# image NAME KEY DOCKERFILE_BODY FILE...: build NAME from a context holding
# FILE..., save it as images/KEY-TAG.tar (the tag in the name: a version bump
# builds a new tar, never reuses the old one).
image() {
  local name=$1 key=$2 body=$3; shift 3
  local tar="$CACHE/images/$key-${name##*:}.tar"
  TARS+=("$tar")
  [ -s "$tar" ] && { log "$name cached"; return; }
  local ctx="$work/ctx-$key"; mkdir -p "$ctx"
  local f; for f in "$@"; do cp -a "$f" "$ctx/"; done
  printf '%s\n' "$body" >"$ctx/Dockerfile"
  log "building $name"
  $DOCKER build -q -t "$name" "$ctx" >/dev/null
  docker save -o "$tar.partial" "$name" && mv "$tar.partial" "$tar"
  rm -rf "$ctx"
}
LBL="LABEL org.opencontainers.image.description=\"built offline for Narad's kind node image\""
image "registry.k8s.io/kube-apiserver:v$K8S_VERSION" kube-apiserver "FROM scratch
COPY kube-apiserver /usr/local/bin/kube-apiserver
$LBL
ENTRYPOINT [\"/usr/local/bin/kube-apiserver\"]" "$CP/kube-apiserver"
image "registry.k8s.io/kube-controller-manager:v$K8S_VERSION" kube-controller-manager "FROM scratch
COPY kube-controller-manager /usr/local/bin/kube-controller-manager
$LBL
ENTRYPOINT [\"/usr/local/bin/kube-controller-manager\"]" "$CP/kube-controller-manager"
image "registry.k8s.io/kube-scheduler:v$K8S_VERSION" kube-scheduler "FROM scratch
COPY kube-scheduler /usr/local/bin/kube-scheduler
$LBL
ENTRYPOINT [\"/usr/local/bin/kube-scheduler\"]" "$NODE/kube-scheduler"
# kube-proxy calls iptables, conntrack and friends: the node's Debian root has them.
image "registry.k8s.io/kube-proxy:v$K8S_VERSION" kube-proxy "FROM $BASE
COPY kube-proxy /usr/local/bin/kube-proxy
$LBL
ENTRYPOINT [\"/usr/local/bin/kube-proxy\"]" "$NODE/kube-proxy"
image "registry.k8s.io/etcd:$ETCD_VERSION-0" etcd "FROM scratch
COPY etcd /usr/local/bin/etcd
ENV PATH=/usr/local/bin
$LBL
ENTRYPOINT [\"/usr/local/bin/etcd\"]" "$ETCD"
# CoreDNS runs as uid 65532 and binds port 53: kubeadm's Deployment adds
# NET_BIND_SERVICE, which a non-root process only gets through a file
# capability on the binary (as upstream's image sets). BuildKit's COPY drops
# xattrs, so this image is a `docker import` of a tar that keeps them.
coredns_tar="$CACHE/images/coredns-fcap-$COREDNS_KEY.tar"
TARS+=("$coredns_tar")
if [ -s "$coredns_tar" ]; then log "registry.k8s.io/coredns/coredns:$COREDNS_VERSION cached"; else
  log "building registry.k8s.io/coredns/coredns:$COREDNS_VERSION"
  mkdir -p "$work/dns"
  cp "$COREDNS_BIN" "$work/dns/coredns"
  setcap cap_net_bind_service=+ep "$work/dns/coredns" || die "setcap failed (needs libcap2-bin and CAP_SETFCAP)"
  tar --xattrs --xattrs-include=security.capability -C "$work/dns" -cf "$work/dns.tar" coredns
  docker import -c 'USER 65532:65532' -c 'EXPOSE 53 53/udp' -c 'ENTRYPOINT ["/coredns"]' \
    -c "LABEL org.opencontainers.image.description=\"built offline for Narad's kind node image\"" \
    "$work/dns.tar" "registry.k8s.io/coredns/coredns:$COREDNS_VERSION" >/dev/null
  docker save -o "$coredns_tar.partial" "registry.k8s.io/coredns/coredns:$COREDNS_VERSION"
  mv "$coredns_tar.partial" "$coredns_tar"
fi
[ -s "$CACHE/images/pause-$PAUSE_TAG.tar" ] || gcc -static -O2 -o "$work/pause" "$HERE/pause.c"
image "registry.k8s.io/pause:$PAUSE_TAG" pause "FROM scratch
COPY pause /pause
$LBL
USER 65535:65535
ENTRYPOINT [\"/pause\"]" "$work/pause"
image "narad.local/local-path-provisioner:$LOCALPATH_VERSION" local-path-provisioner "FROM scratch
COPY local-path-provisioner /local-path-provisioner
$LBL
ENTRYPOINT [\"/local-path-provisioner\"]" "$CACHE/local-path-provisioner-$LOCALPATH_VERSION/local-path-provisioner"
# The provisioner's helper pods run sh scripts: Debian's busybox-static.
if [ ! -s "$CACHE/images/busybox-bookworm.tar" ]; then
  (cd "$work" && apt-get download busybox-static >&2)
  dpkg-deb -x "$work"/busybox-static_*.deb "$work/bb"
  mkdir -p "$work/bbroot/bin" "$work/bbroot/tmp"
  cp "$work/bb/bin/busybox" "$work/bbroot/bin/busybox"
  for a in sh mkdir rm ls cat chmod chown echo sleep test true; do ln -s busybox "$work/bbroot/bin/$a"; done
  image "narad.local/busybox:bookworm" busybox "FROM scratch
COPY bbroot/ /
ENV PATH=/bin
$LBL" "$work/bbroot"
else
  TARS+=("$CACHE/images/busybox-bookworm.tar")
fi

# The node image itself.
ctx="$work/node"; mkdir -p "$ctx/bin" "$ctx/images"
cp -a "$HERE/files" "$ctx/files"
cp "$CP/kubectl" "$NODE/kubelet" "$NODE/kubeadm" "$CACHE/crictl-v1.37.0/crictl" "$ctx/bin/"
ln "${TARS[@]}" "$ctx/images/" 2>/dev/null || cp "${TARS[@]}" "$ctx/images/"
cat >"$ctx/Dockerfile" <<DF
FROM $BASE
COPY files/ /
COPY bin/kubelet bin/kubeadm bin/kubectl /usr/bin/
COPY bin/crictl /usr/local/bin/crictl
COPY images/ /kind/images/
RUN echo "v$K8S_VERSION" >/kind/version \
 && systemctl enable containerd.service kubelet.service narad-preload-images.service \
 && : >/etc/machine-id \
 && mkdir -p /var/lib/kubelet /etc/kubernetes/manifests
ENV container=docker
LABEL org.opencontainers.image.title="narad-kind-node" \
      org.opencontainers.image.description="kind node image for Kubernetes v$K8S_VERSION, built offline from Debian $key and the Go module proxy" \
      org.opencontainers.image.version="v$K8S_VERSION"
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]
DF
# Warm runs: the same inputs (this Dockerfile, files/, the binaries and the
# component tars, by content of the small ones and size+mtime of the big
# ones) give the same label, and the build (a 1 GB context) is skipped.
inputs=$( { cat "$ctx/Dockerfile"; (cd "$ctx" && find files -type f | sort | xargs sha256sum);
  docker image inspect -f '{{.Id}}' "$BASE";
  stat -L -c '%n %s %Y' "$CP/kubectl" "$NODE/kubelet" "$NODE/kubeadm" "$CACHE/crictl-v1.37.0/crictl" "${TARS[@]}"; } |
  sha256sum | cut -c1-16)
printf 'LABEL dev.narad.kind-node.inputs="%s"\n' "$inputs" >>"$ctx/Dockerfile"
have=$(docker image inspect -f '{{index .Config.Labels "dev.narad.kind-node.inputs"}}' "$NODE_IMAGE" 2>/dev/null || true)
if [ "$have" = "$inputs" ]; then
  log "$NODE_IMAGE is up to date (inputs $inputs)"
  echo "$NODE_IMAGE"
  exit 0
fi
log "building $NODE_IMAGE"
$DOCKER build -q -t "$NODE_IMAGE" "$ctx" >/dev/null
log "built $NODE_IMAGE ($(docker image inspect -f '{{.Size}}' "$NODE_IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
echo "$NODE_IMAGE"
