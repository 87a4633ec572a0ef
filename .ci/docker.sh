#!/usr/bin/env bash
# A real Docker engine for the Docker backend's tests, without a registry.
#
#   source .ci/docker.sh          # set up (idempotent), exports DOCKER_HOST
#   .ci/docker.sh stop            # force-remove our containers, stop our dockerd
#
# Installs docker.io and busybox-static when missing, starts dockerd by hand
# under one scratch folder when no engine answers, and imports the test
# image `toolhost-busybox` (busybox-static plus /etc/passwd with a non-root
# user) from a tarball: no registry is needed. Under CI=true every failure
# is fatal; otherwise it warns and the Docker tests say why they skip.
set -uo pipefail

TOOLHOST_DOCKER_DIR="${TOOLHOST_DOCKER_DIR:-/tmp/toolhost-dockerd}"
TOOLHOST_DOCKER_IMAGE="${TOOLHOST_DOCKER_IMAGE:-toolhost-busybox}"

_th_fail() {
    echo "docker.sh: $*" >&2
    if [ "${CI:-}" = "true" ]; then exit 1; fi
    return 1
}

_th_answers() { DOCKER_HOST="$1" docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

_th_stop() {
    local sock="unix://$TOOLHOST_DOCKER_DIR/docker.sock" pid
    [ -f "$TOOLHOST_DOCKER_DIR/dockerd.pid" ] || return 0
    pid="$(cat "$TOOLHOST_DOCKER_DIR/dockerd.pid")"
    # Containers first: a PID 1 that ignores SIGTERM would hold shutdown ~13 s.
    local ids
    ids="$(DOCKER_HOST="$sock" docker ps -aq 2>/dev/null)"
    [ -n "$ids" ] && DOCKER_HOST="$sock" docker rm -f $ids >/dev/null 2>&1
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$TOOLHOST_DOCKER_DIR/dockerd.pid"
}

_th_setup() {
    if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1 \
        || ! dpkg -s busybox-static >/dev/null 2>&1; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            docker.io busybox-static) >/dev/null \
            || { _th_fail "could not install docker.io and busybox-static"; return 1; }
    fi
    # An engine the user already runs (DOCKER_HOST or the default socket) serves.
    if [ -n "${DOCKER_HOST:-}" ] && _th_answers "$DOCKER_HOST"; then
        :
    elif [ -z "${DOCKER_HOST:-}" ] && _th_answers unix:///var/run/docker.sock; then
        export DOCKER_HOST=unix:///var/run/docker.sock
    else
        export DOCKER_HOST="unix://$TOOLHOST_DOCKER_DIR/docker.sock"
        if ! _th_answers "$DOCKER_HOST"; then
            [ "$(id -u)" = 0 ] || { _th_fail "no Docker engine answers and starting dockerd needs root"; return 1; }
            mkdir -p "$TOOLHOST_DOCKER_DIR"
            rm -f "$TOOLHOST_DOCKER_DIR/docker.sock" "$TOOLHOST_DOCKER_DIR/dockerd.pid"
            nohup dockerd \
                --data-root "$TOOLHOST_DOCKER_DIR/data" \
                --exec-root "$TOOLHOST_DOCKER_DIR/exec" \
                --pidfile "$TOOLHOST_DOCKER_DIR/dockerd.pid" \
                -H "$DOCKER_HOST" \
                --storage-driver=overlay2 \
                --iptables=false --ip6tables=false --ip-masq=false --bridge=none \
                --exec-opt native.cgroupdriver=cgroupfs \
                >"$TOOLHOST_DOCKER_DIR/dockerd.log" 2>&1 &
            # A sourcing script that stops early still stops the engine it started.
            [ "${BASH_SOURCE[0]}" != "$0" ] && trap _th_stop EXIT
            for _ in $(seq 1 150); do _th_answers "$DOCKER_HOST" && break; sleep 0.2; done
            _th_answers "$DOCKER_HOST" \
                || { tail -20 "$TOOLHOST_DOCKER_DIR/dockerd.log" >&2; _th_fail "dockerd did not answer in 30 s"; return 1; }
        fi
    fi
    if ! docker image inspect "$TOOLHOST_DOCKER_IMAGE" >/dev/null 2>&1; then
        local root
        root="$(mktemp -d)"
        mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/home/user" "$root/root"
        cp /bin/busybox "$root/bin/busybox"
        for applet in $(/bin/busybox --list); do
            [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
        done
        # Bash scripts in the tests are POSIX enough for busybox ash.
        [ -e "$root/bin/bash" ] || ln -s busybox "$root/bin/bash"
        printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$root/etc/passwd"
        printf 'root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n' >"$root/etc/group"
        chmod 1777 "$root/tmp"
        chown 1000:1000 "$root/home/user"
        tar -C "$root" -c . | docker import -c 'CMD ["/bin/sh"]' - "$TOOLHOST_DOCKER_IMAGE" >/dev/null \
            || { rm -rf "$root"; _th_fail "could not import the image $TOOLHOST_DOCKER_IMAGE"; return 1; }
        rm -rf "$root"
    fi
    export TOOLHOST_DOCKER_IMAGE
    echo "docker.sh: engine at $DOCKER_HOST ($(docker version --format '{{.Server.Version}}')), image $TOOLHOST_DOCKER_IMAGE"
}

if [ "${1:-}" = "stop" ]; then
    _th_stop
elif [ "${BASH_SOURCE[0]}" = "$0" ]; then
    _th_setup
    echo "export DOCKER_HOST=$DOCKER_HOST TOOLHOST_DOCKER_IMAGE=$TOOLHOST_DOCKER_IMAGE"
else
    _th_setup
fi
