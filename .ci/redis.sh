#!/usr/bin/env bash
# Redis for the shared state store's tests (tests/tests/state_store.rs,
# tests/tests/state_redis.rs). The tests start their own `redis-server`
# on loopback, each in a scratch folder with a password, and stop it by
# pid: this script only makes sure Debian's redis-server is installed (and
# not left running as a system service the tests do not need).
#
#   source .ci/redis.sh
#
# Under CI=true a failure is fatal; otherwise it warns and the tests say
# why they skip.
set -uo pipefail

_thr_redis_fail() {
    echo "redis.sh: $*" >&2
    if [ "${CI:-}" = "true" ]; then exit 1; fi
    return 1
}

if ! command -v redis-server >/dev/null 2>&1; then
    # policy-rc.d keeps the package from starting its own service.
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d 2>/dev/null && chmod +x /usr/sbin/policy-rc.d
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        redis-server) >/dev/null
    rm -f /usr/sbin/policy-rc.d
fi
if command -v redis-server >/dev/null 2>&1; then
    redis-server --version | head -1
else
    _thr_redis_fail "could not install redis-server"
fi
