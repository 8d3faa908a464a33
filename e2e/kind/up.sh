#!/usr/bin/env bash
# Creates (or reuses) the kind cluster for the kind suites and prints
# KUBECONFIG=<path> and KIND=<kind binary> on stdout:
#   docker (scripts/docker/ensure-docker.sh) -> kind CLI -> node image ->
#   kind create cluster -> Narad images built and `kind load`ed -> a route from
#   this host to the pod CIDR through the node container.
#
#   KIND_CLUSTER=name         default narad-e2e
#   NARAD_KIND_NODE=local     (default) the offline node image built here:
#                             e2e/kind/node-image/ (Kubernetes v1.36.3, nothing pulled)
#   NARAD_KIND_NODE=upstream  kind-config.yaml's kindest/node image (needs a registry)
#   NARAD_IMAGES=local|upstream   how Narad's images are built (scripts/docker/build-images.sh)
#   NARAD_KIND_NETPOL=agent   (default with the local node image) deploys the
#                             NetworkPolicy agent e2e/kind/netpol/ (kube-network-policies,
#                             built offline); the static bridge CNI enforces nothing
#   NARAD_KIND_NETPOL=none    (default with upstream) no agent
#   NARAD_KIND_ROUTE=0        no host route to the pod CIDR (a second cluster beside
#                             one whose suites dial pods from the host: both have
#                             10.244.0.0/24, the route would be taken from the other)
#
# The kind CLI is `kind` from PATH when it is v0.33.0, else built from the Go
# module proxy into ~/.cache/narad-kind/kind-v0.33.0/ (e2e/kind/node-image/build-go.sh kind).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# kubectl: PATH, else the one e2e/platform/build-binaries.sh built.
command -v kubectl >/dev/null 2>&1 || export PATH="$PATH:${NARAD_K8S_CACHE:-$HOME/.cache/narad-k8s}/kubernetes-v1.36.3"
CLUSTER="${KIND_CLUSTER:-narad-e2e}"
NODE_MODE="${NARAD_KIND_NODE:-local}"
NETPOL_MODE="${NARAD_KIND_NETPOL:-$([ "$NODE_MODE" = local ] && echo agent || echo none)}"
KIND_VERSION=v0.33.0
STATE="${NARAD_KIND_STATE:-$HOME/.cache/narad-kind/clusters/$CLUSTER}"
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }
log() { printf '[kind-up %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
t0=$SECONDS
step() { log "$1 (+$((SECONDS - t0)) s)"; }
cd "$ROOT"

bash scripts/docker/ensure-docker.sh
KIND=$(command -v kind || true)
if [ -z "$KIND" ] || ! "$KIND" version 2>/dev/null | grep -q "$KIND_VERSION"; then
  KIND="$HOME/.cache/narad-kind/kind-$KIND_VERSION/kind"
  [ -x "$KIND" ] || bash e2e/kind/node-image/build-go.sh kind >/dev/null
fi
step "kind: $KIND"

mkdir -p "$STATE"
config="$STATE/kind-config.yaml"
if [ "$NODE_MODE" = local ]; then
  # Everything the node image needs is built from source here (cached).
  bash e2e/kind/node-image/build-go.sh >/dev/null
  image=$(bash e2e/kind/node-image/build-node-image.sh)
  step "node image $image"
  # The upstream config, with our image and the tag of our etcd build.
  sed "s#^\([[:space:]]*image:\).*#\1 $image#" e2e/kind/kind-config.yaml >"$config"
  # kind-config.yaml ends with its kubeadmConfigPatches list: add an item.
  cat >>"$config" <<'YAML'
  - |
    kind: ClusterConfiguration
    etcd:
      local:
        imageTag: 3.6.16-0
  - |
    kind: KubeletConfiguration
    resolvConf: /kind/pod-resolv.conf
YAML
elif [ "$NODE_MODE" = upstream ]; then
  cp e2e/kind/kind-config.yaml "$config"
else
  die "NARAD_KIND_NODE must be local or upstream, not $NODE_MODE"
fi

# kind puts its nodes on the docker network "kind", and reuses one that
# exists. Create it with the fixed, documented subnet so the nodes' addresses
# never depend on the daemon's pools (a user's dockerd may have other pools).
KIND_SUBNET="${NARAD_KIND_SUBNET:-172.31.250.0/24}"
if ! docker network inspect kind >/dev/null 2>&1; then
  docker network create -d bridge --subnet "$KIND_SUBNET" \
    -o com.docker.network.bridge.enable_ip_masquerade=true kind >/dev/null
  step "docker network kind created ($KIND_SUBNET)"
else
  have=$(docker network inspect -f '{{range .IPAM.Config}}{{.Subnet}} {{end}}' kind)
  case " $have" in *" $KIND_SUBNET "*) ;; *) log "warning: docker network kind exists with subnet(s) $have, not $KIND_SUBNET" ;; esac
fi

if "$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  step "reusing kind cluster $CLUSTER"
else
  step "creating kind cluster $CLUSTER"
  # --kubeconfig: never touch ~/.kube/config (a context left there, emptied by
# `kind delete`, is what in-cluster clients of other suites would load).
"$KIND" create cluster --name "$CLUSTER" --config "$config" --kubeconfig "$STATE/kubeconfig" --wait 300s >&2
  step "cluster created"
fi
"$KIND" get kubeconfig --name "$CLUSTER" >"$STATE/kubeconfig"
chmod 600 "$STATE/kubeconfig"

# The NetworkPolicy agent (see e2e/kind/netpol/kube-network-policies.yaml).
# Its init container runs iptables from the preloaded kube-proxy image (the
# node's Debian root), so the agent's own image is only its static binary.
if [ "$NETPOL_MODE" = agent ]; then
  [ "$NODE_MODE" = local ] || die "NARAD_KIND_NETPOL=agent needs NARAD_KIND_NODE=local (the init container uses its kube-proxy image)"
  netpol_image=$(bash e2e/kind/node-image/build-netpol-image.sh)
  "$KIND" load docker-image --name "$CLUSTER" "$netpol_image" >&2
  sed -e "s#image: narad-agent-image\$#image: $netpol_image#" -e "s#image: narad-iptables-image\$#image: registry.k8s.io/kube-proxy:v1.36.3#" \
    e2e/kind/netpol/kube-network-policies.yaml | KUBECONFIG="$STATE/kubeconfig" kubectl apply -f - >&2
  KUBECONFIG="$STATE/kubeconfig" kubectl -n kube-system rollout status ds/kube-network-policies --timeout=180s >&2
  step "NetworkPolicy agent $netpol_image running"
elif [ "$NETPOL_MODE" != none ]; then
  die "NARAD_KIND_NETPOL must be agent or none, not $NETPOL_MODE"
fi

bash scripts/docker/build-images.sh
"$KIND" load docker-image --name "$CLUSTER" ghcr.io/narad/narad:0.1.0 ghcr.io/narad/narad-operator:0.1.0 >&2
step "images loaded"

# Suites dial pod IPs: route each node's pod CIDR through its container.
: >"$STATE/routes"
[ "${NARAD_KIND_ROUTE:-1}" = 0 ] && step "NARAD_KIND_ROUTE=0: no route to the pod CIDR"
for node in $([ "${NARAD_KIND_ROUTE:-1}" = 0 ] || "$KIND" get nodes --name "$CLUSTER"); do
  ip=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$node")
  cidr=$(KUBECONFIG="$STATE/kubeconfig" kubectl get node "$node" -o jsonpath='{.spec.podCIDR}' 2>/dev/null || true)
  [ -n "$cidr" ] || cidr=10.244.0.0/24
  as_root ip route replace "$cidr" via "$ip" || die "cannot add a route to $cidr (needs root or sudo)"
  echo "$cidr" >>"$STATE/routes"
  step "route $cidr via $ip ($node)"
done
echo "KUBECONFIG=$STATE/kubeconfig"
echo "KIND=$KIND"
