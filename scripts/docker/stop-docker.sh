#!/usr/bin/env bash
# Stops the dockerd that scripts/docker/ensure-docker.sh started (recorded in
# /run/narad-docker/started); leaves any other dockerd alone. Idempotent.
set -euo pipefail
STATE=/run/narad-docker
log() { printf '[stop-docker %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
[ -f "$STATE/started" ] || { log "no dockerd started by ensure-docker.sh"; exit 0; }
pid=$(cat "$STATE/started")
if kill -0 "$pid" 2>/dev/null && grep -q dockerd "/proc/$pid/cmdline" 2>/dev/null; then
  log "stopping dockerd (pid $pid)"
  kill -TERM "$pid"
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then log "dockerd still running after 30 s: SIGKILL"; kill -KILL "$pid" || true; fi
fi
rm -f "$STATE/started"
log "stopped"
