#!/usr/bin/env bash
# Copies the pinned tool modules (tools/*/go.mod, go.sum) next to the devcluster package, which
# embeds them: a directory holding a go.mod cannot be embedded, so the copies are plain files.
set -euo pipefail
cd "$(dirname "$0")"
for d in ../../../tools/*/; do
	n=$(basename "$d")
	cp "$d/go.mod" "$n.mod"
	cp "$d/go.sum" "$n.sum"
done
# The dev registry's own main (tools/registry/lean), built in place of `registry serve`.
cp ../../../tools/registry/lean/main.go registry-lean.go.txt
# The real node's pod sandbox (tools/pause), built in place like the registry's main.
cp ../../../tools/pause/main.go pause.go.txt
# The volume reaper (tools/volumes), built in place too.
cp ../../../tools/volumes/main.go volumes.go.txt
# The runtime wrapper of the real node's RuntimeClass systemd (tools/runc-systemd).
cp ../../../tools/runc-systemd/main.go runc-systemd.go.txt
# The patch the secrets server's build applies to the served vault sdk (tools/vault).
cp ../../../tools/vault/sdk-v0.9.2.patch vault-sdk.patch.txt
