#!/usr/bin/env bash
# Deletes the kind cluster made by e2e/kind/up.sh (or run.sh with KEEP=1) and
# the routes up.sh added. Idempotent.
set -euo pipefail
CLUSTER="${KIND_CLUSTER:-narad-e2e}"
STATE="${NARAD_KIND_STATE:-$HOME/.cache/narad-kind/clusters/$CLUSTER}"
KIND=$(command -v kind || echo "$HOME/.cache/narad-kind/kind-v0.33.0/kind")
if [ -f "$STATE/routes" ]; then
  while read -r r; do
    [ -n "$r" ] || continue
    if [ "$(id -u)" = 0 ]; then ip route del "$r" 2>/dev/null || true; else sudo -n ip route del "$r" 2>/dev/null || true; fi
  done <"$STATE/routes"
  rm -f "$STATE/routes"
fi
if [ -x "$KIND" ] && "$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  "$KIND" delete cluster --name "$CLUSTER" --kubeconfig "$STATE/kubeconfig" >&2
else
  echo "no kind cluster named $CLUSTER" >&2
fi
# The docker network "kind" (up.sh created it): removed once no container
# uses it, so nothing of the run is left in dockerd either.
if docker network inspect kind >/dev/null 2>&1; then
  if [ -z "$(docker network inspect -f '{{range .Containers}}{{.Name}} {{end}}' kind)" ]; then
    docker network rm kind >/dev/null && echo "docker network kind removed" >&2
  fi
fi
