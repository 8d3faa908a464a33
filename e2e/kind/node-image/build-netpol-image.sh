#!/usr/bin/env bash
# Builds the image of the NetworkPolicy agent that e2e/kind/up.sh deploys on
# the offline kind cluster (e2e/kind/netpol/kube-network-policies.yaml):
# kube-network-policies, a static Go binary built by build-go.sh, FROM scratch.
# It is `kind load`ed into the cluster, not baked into the node image, so the
# node image (and its cache key) stays as it is. Prints the image name.
#
#   image  narad.local/kube-network-policies:<version>
#   input  ~/.cache/narad-kind/kube-network-policies-<version>/kube-network-policies
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE="${NARAD_KIND_CACHE:-$HOME/.cache/narad-kind}"
VERSION="${NARAD_NETPOL_VERSION:-v0.8.0}"
IMAGE="narad.local/kube-network-policies:$VERSION"
BIN="$CACHE/kube-network-policies-$VERSION/kube-network-policies"
log() { printf '[netpol-image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
[ -x "$BIN" ] || NARAD_NETPOL_VERSION="$VERSION" bash "$HERE/build-go.sh" netpol >/dev/null
[ -x "$BIN" ] || { log "error: $BIN missing after build-go.sh netpol"; exit 1; }
export DOCKER_BUILDKIT=1
DOCKER=docker
if ! docker buildx version >/dev/null 2>&1 && [ -x /usr/bin/docker ]; then DOCKER=/usr/bin/docker; fi
# The binary's hash as a label: a rebuilt binary gives a new image, an
# unchanged one skips the build.
sum=$(sha256sum "$BIN" | cut -c1-16)
have=$(docker image inspect -f '{{index .Config.Labels "dev.narad.netpol.binary"}}' "$IMAGE" 2>/dev/null || true)
if [ "$have" = "$sum" ]; then log "$IMAGE is up to date"; echo "$IMAGE"; exit 0; fi
ctx=$(mktemp -d); trap 'rm -rf "$ctx"' EXIT
cp "$BIN" "$ctx/kube-network-policies"
cat >"$ctx/Dockerfile" <<DF
FROM scratch
COPY kube-network-policies /bin/kube-network-policies
LABEL org.opencontainers.image.description="kube-network-policies $VERSION, built offline for Narad's kind cluster" \
      org.opencontainers.image.version="$VERSION" \
      dev.narad.netpol.binary="$sum"
ENTRYPOINT ["/bin/kube-network-policies"]
DF
log "building $IMAGE"
$DOCKER build -q -t "$IMAGE" "$ctx" >/dev/null
echo "$IMAGE"
