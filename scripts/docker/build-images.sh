#!/usr/bin/env bash
# Builds Narad's two images:
#   ${NARAD_BROKER_IMAGE:-ghcr.io/narad/narad:0.1.0}            broker/Dockerfile
#   ${NARAD_OPERATOR_IMAGE:-ghcr.io/narad/narad-operator:0.1.0}  operator/Dockerfile
#
# NARAD_IMAGES=local (default): no registry needed. The base is
#   scripts/docker/build-base-image.sh (Debian files + the node_modules Node 24),
#   the production dependencies come from `npm ci --omit=dev` run on this host
#   (cached in ~/.cache/narad-images/deps-<lockfile hash>/) and packed into
#   narad-local/deps:<hash>, passed as DEPS_IMAGE.
# NARAD_IMAGES=upstream: plain `docker build` with the Dockerfiles' defaults
#   (node:24-slim base, npm ci inside the build).
#
# BuildKit is required (DEPS_IMAGE skips the npm stage only with BuildKit).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE="${NARAD_IMAGE_CACHE:-$HOME/.cache/narad-images}"
BROKER_IMAGE="${NARAD_BROKER_IMAGE:-ghcr.io/narad/narad:0.1.0}"
OPERATOR_IMAGE="${NARAD_OPERATOR_IMAGE:-ghcr.io/narad/narad-operator:0.1.0}"
MODE="${NARAD_IMAGES:-local}"
log() { printf '[build-images %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
cd "$ROOT"
export PATH="$ROOT/node_modules/.bin:$PATH"
export DOCKER_BUILDKIT=1
# A docker CLI without the buildx plugin refuses DOCKER_BUILDKIT=1; Debian's
# docker.io CLI (/usr/bin/docker) has BuildKit built in.
DOCKER=docker
if ! docker buildx version >/dev/null 2>&1 && [ -x /usr/bin/docker ]; then DOCKER=/usr/bin/docker; fi
REVISION=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
VERSION=$(node -p 'require("./package.json").version' 2>/dev/null || echo 0.1.0)

args=(--build-arg "VERSION=$VERSION" --build-arg "REVISION=$REVISION")
if [ "$MODE" = local ]; then
  BASE=$("$ROOT/scripts/docker/build-base-image.sh")
  hash=$(sha256sum <package-lock.json | cut -c1-12)
  DEPS="narad-local/deps:$hash"
  if ! docker image inspect "$DEPS" >/dev/null 2>&1; then
    dir="$CACHE/deps-$hash"
    if [ ! -d "$dir/node_modules" ]; then
      log "npm ci --omit=dev into $dir"
      rm -rf "$dir.partial" && mkdir -p "$dir.partial"
      cp package.json package-lock.json "$dir.partial/"
      (cd "$dir.partial" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund >&2)
      rm -rf "$dir" && mv "$dir.partial" "$dir"
    fi
    mkdir -p "$dir/narad-var/narad" && chmod 0770 "$dir/narad-var/narad"
    printf 'FROM scratch\nCOPY node_modules /app/node_modules\nCOPY narad-var /narad-var\n' >"$dir/Dockerfile"
    printf 'Dockerfile\npackage*.json\n' >"$dir/.dockerignore"
    log "packing $DEPS"
    $DOCKER build -q -t "$DEPS" "$dir" >/dev/null
  fi
  args+=(--build-arg "BASE_IMAGE=$BASE" --build-arg "BUILD_IMAGE=$BASE" --build-arg "DEPS_IMAGE=$DEPS")
elif [ "$MODE" != upstream ]; then
  log "error: NARAD_IMAGES must be local or upstream, not $MODE"; exit 1
fi

for spec in "broker:$BROKER_IMAGE" "operator:$OPERATOR_IMAGE"; do
  dir=${spec%%:*} image=${spec#*:}
  log "building $image ($dir/Dockerfile, $MODE)"
  start=$(date +%s)
  $DOCKER build -q "${args[@]}" -f "$dir/Dockerfile" -t "$image" . >/dev/null
  log "built $image in $(( $(date +%s) - start )) s, $(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}')"
done
