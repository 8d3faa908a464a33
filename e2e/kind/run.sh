#!/usr/bin/env bash
# Runs the e2e suites that use e2e/harness on a kind cluster:
#   create the cluster (e2e/kind/kind-config.yaml) -> build the broker and
#   operator images -> kind load them -> default StorageClass -> routes from
#   this host to the pod IPs -> E2E_PLATFORM=kind vitest -> delete the cluster.
#
#   e2e/kind/run.sh                  KEEP=1 keeps the cluster (delete it with e2e/kind/down.sh)
#   KIND_CLUSTER=name                cluster name (default narad-e2e); an existing one is reused, not deleted
#   E2E_KIND_SUITES="dir|file ..."   what to run (default: e2e/harness e2e/operator)
#
# Only suites that get their cluster from e2e/harness (getPlatform) can run on
# kind; a suite that calls startPlatform directly would start a local platform
# instead, so it is skipped with a message.
#
# Needs docker, kind (v0.33.0, matching the node image digest), kubectl, node
# deps (npm ci) and, for the pod-IP route, Linux with root or sudo.
#
# NOT RUN on this project's machines (no Docker engine): reviewed and
# `bash -n`-checked only. CI: .github/workflows/e2e-kind.yml.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLUSTER="${KIND_CLUSTER:-narad-e2e}"
BROKER_IMAGE="ghcr.io/narad/narad:0.1.0"
OPERATOR_IMAGE="ghcr.io/narad/narad-operator:0.1.0"
SUITES="${E2E_KIND_SUITES:-e2e/harness e2e/operator}"
KEEP="${KEEP:-0}"
CREATED=0
ROUTES=()
WORK=$(mktemp -d)

log() { printf '[kind %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found on PATH"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }

cleanup() {
  local rc=$?
  for r in "${ROUTES[@]}"; do as_root ip route del "$r" 2>/dev/null || true; done
  if [ "$CREATED" = 1 ] && [ "$KEEP" != 1 ]; then
    log "deleting kind cluster $CLUSTER"
    kind delete cluster --name "$CLUSTER" || true
  elif [ "$CREATED" = 1 ]; then
    log "KEEP=1: cluster $CLUSTER kept; KUBECONFIG=$WORK/kubeconfig; delete it with e2e/kind/down.sh"
  fi
  [ "$KEEP" = 1 ] || rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

need docker
need kind
need kubectl
need npx
cd "$ROOT"

if kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  log "reusing kind cluster $CLUSTER (it is not deleted at the end)"
else
  log "creating kind cluster $CLUSTER"
  CREATED=1
  kind create cluster --name "$CLUSTER" --config e2e/kind/kind-config.yaml --wait 180s
fi
kind get kubeconfig --name "$CLUSTER" >"$WORK/kubeconfig"
export KUBECONFIG="$WORK/kubeconfig"

log "building $BROKER_IMAGE"
docker build -f broker/Dockerfile -t "$BROKER_IMAGE" .
log "building $OPERATOR_IMAGE"
docker build -f operator/Dockerfile -t "$OPERATOR_IMAGE" .
log "loading the images into $CLUSTER"
kind load docker-image --name "$CLUSTER" "$BROKER_IMAGE" "$OPERATOR_IMAGE"

# kind ships the local-path provisioner as StorageClass "standard", marked default.
if kubectl get storageclass -o jsonpath='{range .items[*]}{.metadata.annotations.storageclass\.kubernetes\.io/is-default-class}{"\n"}{end}' | grep -qx true; then
  log "default StorageClass present"
elif kubectl get storageclass standard >/dev/null 2>&1; then
  log "marking StorageClass standard as the default"
  kubectl annotate --overwrite storageclass standard storageclass.kubernetes.io/is-default-class=true
else
  die "no default StorageClass and no 'standard' class to promote"
fi

# Suites dial pod IPs (as on the local platform). Route each node's pod CIDR
# to that node's container address; this works on a Linux Docker host.
while read -r cidr ip; do
  [ -n "$cidr" ] && [ -n "$ip" ] || continue
  log "route $cidr via $ip"
  as_root ip route replace "$cidr" via "$ip" || die "cannot add a route to $cidr (needs root or sudo)"
  ROUTES+=("$cidr")
done < <(kubectl get nodes -o jsonpath='{range .items[*]}{.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}')

files=()
for s in $SUITES; do
  [ -e "$s" ] || die "no such suite: $s"
  while IFS= read -r f; do
    case "$f" in
      e2e/harness/*) files+=("$f") ;;
      *)
        if grep -q 'harness/index\.ts' "$f"; then
          files+=("$f")
        else
          log "skipping $f: it calls startPlatform (local only); port it to e2e/harness getPlatform to run it on kind"
        fi
        ;;
    esac
  done < <(find "$s" -name '*.e2e.test.ts' | sort)
done
[ "${#files[@]}" -gt 0 ] || die "no kind-capable suites in: $SUITES"

log "running on kind: ${files[*]}"
E2E_PLATFORM=kind KIND_CLUSTER="$CLUSTER" npx vitest run --project e2e "${files[@]}"
