#!/usr/bin/env bash
# A short fuzz run of every target in fuzz/ (cargo-fuzz, libFuzzer), a few
# seconds each from the committed seed corpus. Installs cargo-fuzz (pinned)
# when missing. Any crash fails the run; libFuzzer prints the reproducer,
# and fuzz/artifacts/TARGET/ keeps it.
#
#   FUZZ_SECONDS=15 .ci/fuzz.sh          # seconds per target (default 15)
#   FUZZ_TARGETS="rule_parser" .ci/fuzz.sh
#
# The host's build script reuses the guest components the main build made
# (TOOLHOST_SKIP_GUEST_BUILD): run this after `cargo test --workspace`.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_FUZZ_VERSION=0.13.2
seconds="${FUZZ_SECONDS:-15}"

if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
    # Built with the pinned stable toolchain; about 3.5 minutes cold here.
    cargo +stable install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi

cd fuzz
targets="${FUZZ_TARGETS:-$(cargo +nightly fuzz list)}"
export TOOLHOST_SKIP_GUEST_BUILD=1
start=$(date +%s)
cargo +nightly fuzz build
echo "fuzz build: $(( $(date +%s) - start )) s"
passed=0
failed=0
for target in $targets; do
    # libFuzzer writes what it finds into the first corpus folder: a copy,
    # so the committed seeds stay as they are.
    mkdir -p "corpus-run/$target"
    if cargo +nightly fuzz run "$target" "corpus-run/$target" "corpus/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 2> "corpus-run/$target.log"; then
        runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "corpus-run/$target.log" | grep -o '[0-9]*$' || echo "?")
        echo "fuzz $target: ok, $runs executions in ${seconds}s"
        passed=$((passed + 1))
    else
        tail -40 "corpus-run/$target.log"
        echo "fuzz $target: FAILED (reproducer in fuzz/artifacts/$target/)"
        failed=$((failed + 1))
    fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
