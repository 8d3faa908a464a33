#!/bin/bash
# Imports every image tar under /kind/images into containerd's k8s.io
# namespace (pinned, so kubelet's image GC keeps them). Runs once per node.
set -euo pipefail
for i in $(seq 1 100); do ctr version >/dev/null 2>&1 && break; sleep 0.1; done
for t in /kind/images/*.tar; do
  ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned --no-unpack --digests "$t" >/dev/null
  echo "imported $t"
done
touch /var/lib/narad-preload-done
