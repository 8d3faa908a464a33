#!/usr/bin/env bash
# Builds, without any container registry, the base image that broker/Dockerfile
# and operator/Dockerfile take as BASE_IMAGE on machines that cannot pull
# node:24-slim: a distroless-style Debian bookworm root with Node 24 and
# nothing else (no shell, no package manager).
#
#   scripts/docker/build-base-image.sh        prints the image name
#
#   image      narad-local/node-base:<node version>-bookworm
#   contents   glibc, libstdc++, libgcc_s, CA certificates, tzdata, netbase
#              (from an mmdebstrap minbase root, files picked by dpkg's file
#              lists), /usr/local/bin/node from the `node` npm package in
#              node_modules (the version package.json pins), /etc/passwd with
#              root, nonroot (65532) and narad (10001), /tmp (1777)
#   cache      ~/.cache/narad-images/bookworm-minbase-<hash>.tar (the
#              mmdebstrap root; ~20 s to build); the image itself is skipped
#              when it exists
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE="${NARAD_IMAGE_CACHE:-$HOME/.cache/narad-images}"
SUITE=bookworm
MIRROR="${NARAD_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PKGS="ca-certificates,tzdata,netbase,libstdc++6,libgcc-s1"
log() { printf '[base-image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

NODE_BIN="$ROOT/node_modules/node/bin/node"
[ -x "$NODE_BIN" ] || { log "error: $NODE_BIN missing (run npm ci)"; exit 1; }
NODE_VERSION=$("$NODE_BIN" --version); NODE_VERSION=${NODE_VERSION#v}
IMAGE="narad-local/node-base:$NODE_VERSION-$SUITE"

if docker image inspect "$IMAGE" >/dev/null 2>&1; then echo "$IMAGE"; exit 0; fi
command -v mmdebstrap >/dev/null 2>&1 || { log "installing mmdebstrap"; apt-get install -y -qq mmdebstrap >&2; }

mkdir -p "$CACHE"
key=$(printf '%s %s %s' "$SUITE" "$PKGS" "$MIRROR" | sha256sum | cut -c1-12)
TAR="$CACHE/$SUITE-minbase-$key.tar"
if [ ! -s "$TAR" ]; then
  log "mmdebstrap $SUITE minbase (+$PKGS)"
  mmdebstrap --quiet --variant=minbase --include="$PKGS" "$SUITE" "$CACHE/.partial-$key.tar" "$MIRROR" >&2
  mv "$CACHE/.partial-$key.tar" "$TAR"
fi

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir "$work/full" "$work/root"
tar -C "$work/full" -xf "$TAR"
# Every file of the runtime packages, by dpkg's own lists.
: >"$work/files"
for p in libc6 libgcc-s1 libstdc++6 ca-certificates tzdata netbase base-files; do
  list=$(ls "$work/full/var/lib/dpkg/info/$p.list" "$work/full/var/lib/dpkg/info/$p:amd64.list" 2>/dev/null | head -n1 || true)
  [ -n "$list" ] || { log "error: no dpkg list for $p"; exit 1; }
  sed 's|^/|./|' "$list" >>"$work/files"
done
# Merged /usr: dpkg lists /lib/..., the files live under /usr/lib/...
for l in bin sbin lib lib64; do
  if [ -L "$work/full/$l" ]; then
    sed -i "s|^\./$l/|./usr/$l/|; \|^\./$l\$|d" "$work/files"
    cp -a "$work/full/$l" "$work/root/$l"
  fi
done
(cd "$work/full" && while IFS= read -r f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\n' "$f"; done <"$work/files" | sort -u) >"$work/present"
tar -C "$work/full" --no-recursion -cf - -T "$work/present" | tar -C "$work/root" -xf -
# update-ca-certificates output.
(cd "$work/full" && cp -a --parents ./etc/ssl/certs "$work/root/")
rm -rf "$work/root/usr/share/doc" "$work/root/usr/share/man" "$work/root/usr/share/lintian" "$work/root/usr/share/info"
install -D -m 0755 "$NODE_BIN" "$work/root/usr/local/bin/node"
mkdir -p "$work/root/tmp" "$work/root/home/nonroot" "$work/root/home/narad" "$work/root/root"
chmod 1777 "$work/root/tmp"
chown 65532:65532 "$work/root/home/nonroot"; chown 10001:10001 "$work/root/home/narad"
cat >"$work/root/etc/passwd" <<'P'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
narad:x:10001:10001:narad:/home/narad:/sbin/nologin
P
cat >"$work/root/etc/group" <<'G'
root:x:0:
nogroup:x:65534:
nonroot:x:65532:
narad:x:10001:
G
"$work/root/usr/local/bin/node" --version >/dev/null 2>&1 || true
log "importing $IMAGE"
tar -C "$work/root" -c . | docker import \
  -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  -c 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
  -c 'USER 65532:65532' \
  -c 'WORKDIR /home/nonroot' \
  -c 'ENTRYPOINT ["/usr/local/bin/node"]' \
  -c "LABEL org.opencontainers.image.title=narad-node-base org.opencontainers.image.description=\"Debian $SUITE runtime files + Node $NODE_VERSION, no shell\" org.opencontainers.image.version=$NODE_VERSION" \
  - "$IMAGE" >/dev/null
echo "$IMAGE"
