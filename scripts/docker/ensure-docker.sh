#!/usr/bin/env bash
# Makes a Docker engine usable for the kind e2e and the image builds. Idempotent.
#
#   1. installs Debian's docker.io (and jq) when dockerd is missing (apt-get, root);
#   2. installs scripts/docker/runc-capfilter as /usr/local/libexec/narad/runc-capfilter
#      and registers it as dockerd's default runtime `narad-runc` (it drops the
#      capabilities that are outside the host's bounding set, so --privileged
#      containers such as kind nodes start on hosts that lack e.g. CAP_SYS_RESOURCE);
#   3. writes /etc/docker/daemon.json: fixed address pools so no test network
#      lands on a random private range:
#        docker0 (bip)                     172.31.249.1/24
#        user networks (the `kind` one)    172.31.250.0/24  (e2e/kind/up.sh creates it
#                                          with that subnet)
#      The pools list both /24s: when docker0 is missing at start (dockerd
#      removes it on some stops), dockerd picks docker0's range from the
#      pools before it applies bip, and with only 172.31.250.0/24, held by
#      the kind network that outlives dockerd, it failed to start ("list
#      bridge addresses failed: ... no available network").
#      Plus cgroupfs, overlay2;
#   4. starts dockerd when it does not answer, and records that in
#      /run/narad-docker/started (scripts/docker/stop-docker.sh stops only a
#      dockerd recorded there).
#
# A dockerd that already runs is used as it is (its config is not changed
# under it; a warning says so when its default runtime is not narad-runc).
# NARAD_DOCKER_NO_INSTALL=1: never apt-get; fail with a message instead.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STATE=/run/narad-docker
WRAPPER=/usr/local/libexec/narad/runc-capfilter
DAEMON_JSON=/etc/docker/daemon.json
log() { printf '[ensure-docker %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }

if docker info >/dev/null 2>&1; then
  rt=$(docker info --format '{{.DefaultRuntime}}' 2>/dev/null || true)
  [ "$rt" = narad-runc ] || log "warning: the running dockerd's default runtime is '$rt', not narad-runc; --privileged may fail on hosts with a reduced capability bounding set"
  log "dockerd is running"
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v jq >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1; then
  [ "${NARAD_DOCKER_NO_INSTALL:-0}" = 1 ] && die "dockerd/runc/jq missing and NARAD_DOCKER_NO_INSTALL=1"
  command -v apt-get >/dev/null 2>&1 || die "no dockerd and no apt-get to install Debian's docker.io; install a Docker engine"
  [ "$(id -u)" = 0 ] || sudo -n true 2>/dev/null || die "no dockerd, and installing docker.io needs root or passwordless sudo"
  log "installing docker.io and jq (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq >&2 || die "apt-get update failed"
  as_root apt-get install -y -qq docker.io jq >&2 || die "apt-get install docker.io jq failed"
fi

as_root install -D -m 0755 "$HERE/runc-capfilter" "$WRAPPER"
want=$(cat <<JSON
{
  "runtimes": { "narad-runc": { "path": "$WRAPPER" } },
  "default-runtime": "narad-runc",
  "bip": "172.31.249.1/24",
  "default-address-pools": [ { "base": "172.31.249.0/24", "size": 24 }, { "base": "172.31.250.0/24", "size": 24 } ],
  "exec-opts": [ "native.cgroupdriver=cgroupfs" ],
  "storage-driver": "overlay2",
  "log-driver": "json-file",
  "log-opts": { "max-size": "20m", "max-file": "2" }
}
JSON
)
as_root mkdir -p /etc/docker "$STATE"
if [ ! -f "$DAEMON_JSON" ] || [ "$(cat "$DAEMON_JSON")" != "$want" ]; then
  [ -f "$DAEMON_JSON" ] && as_root cp "$DAEMON_JSON" "$DAEMON_JSON.narad-backup"
  printf '%s\n' "$want" | as_root tee "$DAEMON_JSON" >/dev/null
  log "wrote $DAEMON_JSON"
fi

log "starting dockerd (log $STATE/dockerd.log)"
as_root sh -c "nohup dockerd --pidfile $STATE/dockerd.pid >$STATE/dockerd.log 2>&1 </dev/null & echo \$! >$STATE/started"
for _ in $(seq 1 120); do
  docker info >/dev/null 2>&1 && { log "dockerd is up (pid $(cat "$STATE/started"))"; exit 0; }
  kill -0 "$(cat "$STATE/started")" 2>/dev/null || { tail -20 "$STATE/dockerd.log" >&2; as_root rm -f "$STATE/started"; die "dockerd exited"; }
  sleep 0.5
done
tail -20 "$STATE/dockerd.log" >&2
die "dockerd did not answer within 60 s"
