#!/usr/bin/env bash
# Real OCI registries on loopback for tests/tests/oci.rs (Debian's
# docker-registry package: the CNCF distribution registry).
#
#   source .ci/registry.sh        # set up (idempotent), exports the variables below
#   .ci/registry.sh stop          # stop the registries this script started
#
# Installs docker-registry, apache2-utils (htpasswd), skopeo, curl and openssl when missing,
# then starts two registries under one scratch folder:
#   TOOLHOST_REGISTRY            host:port of one without authentication
#   TOOLHOST_REGISTRY_STORAGE    its storage folder (the tests tamper with it)
#   TOOLHOST_REGISTRY_AUTH       host:port of one with basic authentication
#   TOOLHOST_REGISTRY_USER / TOOLHOST_REGISTRY_PASSWORD   its one user
# The tests also start registries of their own with the same binary
# (TOOLHOST_REGISTRY_BIN) to stop one under a host. Under CI=true every
# failure is fatal; otherwise it warns and the registry tests say why they skip.
set -uo pipefail

TOOLHOST_REGISTRY_DIR="${TOOLHOST_REGISTRY_DIR:-/tmp/toolhost-registry}"
_thr_open_port="${TOOLHOST_REGISTRY_PORT:-5391}"
_thr_auth_port="${TOOLHOST_REGISTRY_AUTH_PORT:-5392}"

_thr_fail() {
    echo "registry.sh: $*" >&2
    if [ "${CI:-}" = "true" ]; then exit 1; fi
    return 1
}

_thr_answers() { curl -s -o /dev/null -w '%{http_code}' "http://$1/v2/" 2>/dev/null | grep -qE '^(200|401)$'; }

_thr_stop() {
    local name pid
    for name in open auth; do
        [ -f "$TOOLHOST_REGISTRY_DIR/$name.pid" ] || continue
        pid="$(cat "$TOOLHOST_REGISTRY_DIR/$name.pid")"
        kill -TERM "$pid" 2>/dev/null
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        rm -f "$TOOLHOST_REGISTRY_DIR/$name.pid"
    done
}

# _thr_start NAME PORT [HTPASSWD]: one registry with its own storage and config.
_thr_start() {
    local name="$1" port="$2" htpasswd="${3:-}" dir="$TOOLHOST_REGISTRY_DIR/$1"
    mkdir -p "$dir/storage"
    {
        echo "version: 0.1"
        echo "log: {level: warn}"
        echo "storage:"
        echo "  filesystem: {rootdirectory: $dir/storage}"
        echo "  delete: {enabled: true}"
        echo "http: {addr: 127.0.0.1:$port}"
        if [ -n "$htpasswd" ]; then
            echo "auth:"
            echo "  htpasswd: {realm: toolhost-test, path: $htpasswd}"
        fi
    } >"$dir/config.yml"
    if ! _thr_answers "127.0.0.1:$port"; then
        nohup docker-registry serve "$dir/config.yml" >"$dir/registry.log" 2>&1 &
        echo $! >"$TOOLHOST_REGISTRY_DIR/$name.pid"
        for _ in $(seq 1 100); do _thr_answers "127.0.0.1:$port" && break; sleep 0.1; done
        _thr_answers "127.0.0.1:$port" \
            || { tail -20 "$dir/registry.log" >&2; _thr_fail "the $name registry did not answer on 127.0.0.1:$port"; return 1; }
    fi
}

_thr_setup() {
    if ! command -v docker-registry >/dev/null 2>&1 || ! command -v htpasswd >/dev/null 2>&1 \
        || ! command -v skopeo >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1 \
        || ! command -v openssl >/dev/null 2>&1; then
        # skopeo reads manifests as the registry stores them, curl uploads
        # hand-made ones, openssl makes the tests' signing keys.
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            docker-registry apache2-utils skopeo curl openssl) >/dev/null \
            || { _thr_fail "could not install docker-registry, apache2-utils, skopeo, curl and openssl"; return 1; }
    fi
    mkdir -p "$TOOLHOST_REGISTRY_DIR"
    export TOOLHOST_REGISTRY_USER=toolhost TOOLHOST_REGISTRY_PASSWORD=registry-secret
    htpasswd -Bbc "$TOOLHOST_REGISTRY_DIR/htpasswd" "$TOOLHOST_REGISTRY_USER" "$TOOLHOST_REGISTRY_PASSWORD" 2>/dev/null \
        || { _thr_fail "htpasswd could not write $TOOLHOST_REGISTRY_DIR/htpasswd"; return 1; }
    _thr_start open "$_thr_open_port" || return 1
    _thr_start auth "$_thr_auth_port" "$TOOLHOST_REGISTRY_DIR/htpasswd" || return 1
    # No EXIT trap here (it would replace docker.sh's): .ci/run stops them at
    # its end, and CI ends whatever a failed run left.
    export TOOLHOST_REGISTRY="127.0.0.1:$_thr_open_port"
    export TOOLHOST_REGISTRY_STORAGE="$TOOLHOST_REGISTRY_DIR/open/storage"
    export TOOLHOST_REGISTRY_AUTH="127.0.0.1:$_thr_auth_port"
    export TOOLHOST_REGISTRY_BIN="$(command -v docker-registry)"
    echo "registry.sh: registries at $TOOLHOST_REGISTRY and $TOOLHOST_REGISTRY_AUTH (basic auth), $(docker-registry --version | awk '{print $3}')"
}

if [ "${1:-}" = "stop" ]; then
    _thr_stop
elif [ "${BASH_SOURCE[0]}" = "$0" ]; then
    _thr_setup
    echo "export TOOLHOST_REGISTRY=$TOOLHOST_REGISTRY TOOLHOST_REGISTRY_STORAGE=$TOOLHOST_REGISTRY_STORAGE TOOLHOST_REGISTRY_AUTH=$TOOLHOST_REGISTRY_AUTH TOOLHOST_REGISTRY_USER=$TOOLHOST_REGISTRY_USER TOOLHOST_REGISTRY_PASSWORD=$TOOLHOST_REGISTRY_PASSWORD TOOLHOST_REGISTRY_BIN=$TOOLHOST_REGISTRY_BIN"
else
    _thr_setup
fi
