#!/usr/bin/env bash
# A real Prometheus server for the metrics test (tests/tests/telemetry.rs).
#
#   source .ci/prometheus.sh      # set up (idempotent), exports the two variables below
#   .ci/prometheus.sh stop        # stop the server we started
#
# Installs Debian's `prometheus` package when missing and starts it by hand
# on 127.0.0.1:19090 under one scratch folder, scraping every second the
# targets the tests write as JSON files into $TOOLHOST_PROMETHEUS_TARGETS
# (file-based discovery: each test names its own /metrics address and a
# label of its own). The tests query $TOOLHOST_PROMETHEUS_URL/api/v1/query.
# Under CI=true every failure is fatal; otherwise it warns and the test says
# why it skips.
set -uo pipefail

TOOLHOST_PROMETHEUS_DIR="${TOOLHOST_PROMETHEUS_DIR:-/tmp/toolhost-prometheus}"
TOOLHOST_PROMETHEUS_ADDR="127.0.0.1:19090"

_thp_fail() {
    echo "prometheus.sh: $*" >&2
    if [ "${CI:-}" = "true" ]; then exit 1; fi
    return 1
}

_thp_ready() { curl -fsS "http://$TOOLHOST_PROMETHEUS_ADDR/-/ready" >/dev/null 2>&1; }

_thp_stop() {
    [ -f "$TOOLHOST_PROMETHEUS_DIR/prometheus.pid" ] || return 0
    local pid
    pid="$(cat "$TOOLHOST_PROMETHEUS_DIR/prometheus.pid")"
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$TOOLHOST_PROMETHEUS_DIR/prometheus.pid"
}

_thp_setup() {
    if ! command -v prometheus >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            prometheus curl) >/dev/null \
            || { _thp_fail "could not install prometheus and curl"; return 1; }
    fi
    mkdir -p "$TOOLHOST_PROMETHEUS_DIR/targets"
    if ! _thp_ready; then
        cat >"$TOOLHOST_PROMETHEUS_DIR/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: toolhost-tests
    file_sd_configs:
      - files: ["$TOOLHOST_PROMETHEUS_DIR/targets/*.json"]
        refresh_interval: 1s
YAML
        rm -f "$TOOLHOST_PROMETHEUS_DIR/prometheus.pid"
        nohup prometheus \
            --config.file="$TOOLHOST_PROMETHEUS_DIR/prometheus.yml" \
            --storage.tsdb.path="$TOOLHOST_PROMETHEUS_DIR/data" \
            --web.listen-address="$TOOLHOST_PROMETHEUS_ADDR" \
            >"$TOOLHOST_PROMETHEUS_DIR/prometheus.log" 2>&1 &
        echo $! >"$TOOLHOST_PROMETHEUS_DIR/prometheus.pid"
        # A sourcing script that stops early still stops the server it
        # started (after whatever it already does on exit: docker.sh's stop).
        if [ "${BASH_SOURCE[0]}" != "$0" ]; then
            local previous
            previous="$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT\$/\1/")"
            trap "_thp_stop; ${previous}" EXIT
        fi
        for _ in $(seq 1 150); do _thp_ready && break; sleep 0.2; done
        _thp_ready \
            || { tail -20 "$TOOLHOST_PROMETHEUS_DIR/prometheus.log" >&2; _thp_fail "prometheus did not answer in 30 s"; return 1; }
    fi
    export TOOLHOST_PROMETHEUS_URL="http://$TOOLHOST_PROMETHEUS_ADDR"
    export TOOLHOST_PROMETHEUS_TARGETS="$TOOLHOST_PROMETHEUS_DIR/targets"
    echo "prometheus.sh: $(prometheus --version 2>&1 | head -1) at $TOOLHOST_PROMETHEUS_URL, targets in $TOOLHOST_PROMETHEUS_TARGETS"
}

if [ "${1:-}" = "stop" ]; then
    _thp_stop
elif [ "${BASH_SOURCE[0]}" = "$0" ]; then
    _thp_setup
    echo "export TOOLHOST_PROMETHEUS_URL=$TOOLHOST_PROMETHEUS_URL TOOLHOST_PROMETHEUS_TARGETS=$TOOLHOST_PROMETHEUS_TARGETS"
else
    _thp_setup
fi
