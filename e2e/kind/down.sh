#!/usr/bin/env bash
# Deletes the kind cluster left by `KEEP=1 e2e/kind/run.sh`.
# NOT RUN on this project's machines (no Docker engine).
set -euo pipefail
CLUSTER="${KIND_CLUSTER:-narad-e2e}"
if kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  kind delete cluster --name "$CLUSTER"
else
  echo "no kind cluster named $CLUSTER" >&2
fi
