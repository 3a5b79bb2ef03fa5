#!/usr/bin/env bash
# btcd (github.com/btcsuite/btcd), a Bitcoin node no one here wrote, as a sync peer for tests.
#
#   scripts/btcd.sh install        installs btcd + addblock (pinned version) once; prints the bin dir
#   scripts/btcd.sh serve BLK...   starts btcd on regtest on 127.0.0.1 (random ports, temp datadir),
#                                  feeds it the blocks of the blk files and waits: prints the P2P
#                                  address; Ctrl-C stops it and removes the datadir
#
# Binaries go to $BTCD_BIN (default: ~/go/bin), built with $GO (default: go on PATH, else
# /usr/local/go/bin/go) from the Go module proxy. A rerun with the binaries present is instant.
#
# Why blocks are fed over RPC (submitblock) and not with cmd/addblock: btcd deletes its regtest
# block database every time it starts on --regtest (btcd.go, removeRegressionDB), so a chain
# imported by addblock beforehand is gone when btcd starts listening.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BTCD_VERSION=${BTCD_VERSION:-v0.26.2}
BTCD_BIN=${BTCD_BIN:-$HOME/go/bin}

find_go() {
    if [[ -n "${GO:-}" ]]; then echo "$GO"; return; fi
    if command -v go >/dev/null 2>&1; then command -v go; return; fi
    if [[ -x /usr/local/go/bin/go ]]; then echo /usr/local/go/bin/go; return; fi
    echo "btcd.sh: no Go toolchain (set GO=/path/to/go)" >&2
    exit 3
}

install() {
    local stamp="$BTCD_BIN/.btcd-version"
    if [[ -x "$BTCD_BIN/btcd" && -x "$BTCD_BIN/addblock" && "$(cat "$stamp" 2>/dev/null)" == "$BTCD_VERSION" ]]; then
        echo "$BTCD_BIN"
        return
    fi
    local go
    go=$(find_go)
    mkdir -p "$BTCD_BIN"
    echo "btcd.sh: installing btcd $BTCD_VERSION into $BTCD_BIN ..." >&2
    GOBIN="$BTCD_BIN" GOFLAGS=-buildvcs=false "$go" install "github.com/btcsuite/btcd@$BTCD_VERSION" >&2
    GOBIN="$BTCD_BIN" GOFLAGS=-buildvcs=false "$go" install "github.com/btcsuite/btcd/cmd/addblock@$BTCD_VERSION" >&2
    echo "$BTCD_VERSION" >"$stamp"
    echo "$BTCD_BIN"
}

case "${1:-}" in
install) install ;;
serve)
    shift
    bin=$(install)
    exec python3 "$root/python/tests/test_sync_btcd.py" serve --bin "$bin" "$@"
    ;;
*)
    sed -n '2,14p' "$0" >&2
    exit 2
    ;;
esac
