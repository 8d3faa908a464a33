#!/usr/bin/env bash
# The Debian part of the offline kind node image: a bookworm root with systemd
# (252: still boots on cgroup v1), Debian's containerd and runc, the reference
# CNI plugins and the tools kubelet/kubeadm/kube-proxy call. Cached as a tar,
# keyed by suite, package list and mirror. Prints the tar's path.
set -euo pipefail
CACHE="${NARAD_KIND_CACHE:-$HOME/.cache/narad-kind}"
SUITE=bookworm
MIRROR="${NARAD_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PKGS="systemd,systemd-sysv,dbus,containerd,runc,containernetworking-plugins,iptables,nftables,iproute2,ethtool,socat,conntrack,ebtables,util-linux,mount,kmod,ca-certificates,procps,libseccomp2,findutils,bash,coreutils,sed,grep,gawk,tar,gzip,hostname,lsof,curl"
log() { printf '[node-rootfs %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
key=$(printf '%s %s %s' "$SUITE" "$PKGS" "$MIRROR" | sha256sum | cut -c1-12)
TAR="$CACHE/rootfs-$SUITE-$key.tar"
if [ ! -s "$TAR" ]; then
  mkdir -p "$CACHE"
  command -v mmdebstrap >/dev/null 2>&1 || apt-get install -y -qq mmdebstrap >&2
  log "mmdebstrap $SUITE minbase + node packages"
  mmdebstrap --quiet --variant=minbase --include="$PKGS" \
    --customize-hook='chroot "$1" systemctl mask systemd-udevd.service systemd-udev-trigger.service systemd-resolved.service getty.target console-getty.service systemd-logind.service 2>/dev/null || true' \
    --customize-hook='rm -rf "$1"/usr/share/doc "$1"/usr/share/man "$1"/var/cache/apt/archives/*.deb' \
    "$SUITE" "$CACHE/.partial-$key.tar" "$MIRROR" >&2
  mv "$CACHE/.partial-$key.tar" "$TAR"
fi
echo "$TAR"
