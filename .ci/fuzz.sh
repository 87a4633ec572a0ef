#!/usr/bin/env bash
# A short fuzz run of every target in fuzz/ (libFuzzer), FUZZ_SECONDS each
# from the committed seed corpus. Any crash, hang (10 s) or memory blow-up
# (2 GB) fails the run; the reproducer is kept in fuzz/artifacts/TARGET/.
#
#   .ci/fuzz.sh                                   # every target, 15 s each
#   FUZZ_SECONDS=600 FUZZ_TARGETS="rule_parser" .ci/fuzz.sh
#   FUZZ_BUILD_ONLY=1 .ci/fuzz.sh                 # build the targets, run nothing
#   FUZZ_QUICK=1 .ci/fuzz.sh                      # the cheaper build .ci/run uses
#   FUZZ_SEED=1 FUZZ_RUNS=200000 .ci/fuzz.sh      # the same inputs on every run
#
# FUZZ_SEED with FUZZ_RUNS makes a run reproducible: the same mutations of
# the same corpus, however fast the machine, so a commit that passes CI
# passes it again and a failure is the commit's, not the dice's. CI uses
# that; the long searches for new bugs use time and a random seed.
#
# The targets are built with plain `cargo +nightly build` and the flags
# cargo-fuzz 0.13 passes by default (AddressSanitizer, SanitizerCoverage
# with inline 8-bit counters, PC table, comparison tracing and stack depth,
# `--cfg fuzzing`, debug assertions, one codegen unit, release profile with
# line tables), into the folder `cargo fuzz` uses: so CI need not install
# cargo-fuzz (3.5 minutes cold), and a developer who has it can run
# `cargo +nightly fuzz run TARGET` in fuzz/ on the same binaries. The fuzz
# workspace depends on toolhost-core only (no wasmtime): a cold build is
# that crate, the Bash analysis and their dependencies.
#
# FUZZ_QUICK=1 drops AddressSanitizer and builds at opt-level 1 with the
# default codegen units, into fuzz/target/quick: 40 % less compile time for
# the same coverage guidance and the same panics and assertions (the code
# fuzzed is safe Rust; ASan watches only the unsafe code of dependencies).
# The long runs use the default build.
#
# Reproduce a crash: fuzz/target/[quick/]<host triple>/release/TARGET fuzz/artifacts/TARGET/crash-…
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-15}"

if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
triple="$(rustc +nightly -vV | sed -n 's/^host: //p')"
# In cargo-fuzz's order, so that both tools build the same binaries.
profile=(--release --config 'profile.release.debug="line-tables-only"')
sanitizer=(-Zsanitizer=address)
codegen=(-Ccodegen-units=1)
target_dir="${FUZZ_TARGET_DIR:-$PWD/fuzz/target}"
if [ -n "${FUZZ_QUICK:-}" ]; then
    profile+=(--config 'profile.release.opt-level=1')
    sanitizer=()
    codegen=()
    target_dir="${FUZZ_TARGET_DIR:-$PWD/fuzz/target/quick}"
fi
rustflags=(
    -Cpasses=sancov-module
    -Cllvm-args=-sanitizer-coverage-level=4
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
    -Cllvm-args=-sanitizer-coverage-pc-table
    -Cllvm-args=-sanitizer-coverage-trace-compares
    --cfg fuzzing
    -Cllvm-args=-simplifycfg-branch-fold-threshold=0
    "${sanitizer[@]}"
    -Cllvm-args=-sanitizer-coverage-stack-depth
    -Cdebug-assertions
    "${codegen[@]}"
)
# --target keeps these flags off build scripts and proc macros, as cargo-fuzz does.
start=$(date +%s)
RUSTFLAGS="${rustflags[*]} ${RUSTFLAGS:-}" cargo +nightly build --locked --manifest-path fuzz/Cargo.toml \
    --target "$triple" "${profile[@]}" --target-dir "$target_dir" --bins
echo "fuzz build: $(( $(date +%s) - start )) s"
[ -n "${FUZZ_BUILD_ONLY:-}" ] && exit 0

bin="$target_dir/$triple/release"
targets="${FUZZ_TARGETS:-$(ls fuzz/fuzz_targets | sed -n 's/\.rs$//p')}"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_odr_violation=0"
if [ -n "${FUZZ_RUNS:-}" ]; then
    budget=(-runs="$FUZZ_RUNS")
    spent="$FUZZ_RUNS runs"
else
    budget=(-max_total_time="$seconds")
    spent="$seconds s"
fi
[ -n "${FUZZ_SEED:-}" ] && budget+=(-seed="$FUZZ_SEED")
passed=0
failed=0
for target in $targets; do
    # libFuzzer writes what it finds into the first corpus folder: a copy,
    # so the committed seeds stay as they are.
    mkdir -p "fuzz/corpus-run/$target" "fuzz/artifacts/$target"
    log="fuzz/corpus-run/$target.log"
    if "$bin/$target" -artifact_prefix="fuzz/artifacts/$target/" "${budget[@]}" \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        "fuzz/corpus-run/$target" "fuzz/corpus/$target" 2> "$log"; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        echo "fuzz $target: ok, ${runs:-?} executions (${spent}${FUZZ_SEED:+, seed $FUZZ_SEED})"
        passed=$((passed + 1))
    else
        tail -40 "$log"
        echo "fuzz $target: FAILED; reproduce with $bin/$target fuzz/artifacts/$target/<file above>"
        failed=$((failed + 1))
    fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
