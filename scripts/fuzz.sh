#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets, entry points in crates/fuzzing) for a bounded
# time each, with libFuzzer's memory limits: a crash, a hang (-timeout) or an allocation
# over the limits stops the run and leaves the input in fuzz/artifacts/TARGET/.
#
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET...]
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). New inputs go to a
# scratch corpus under fuzz/target/ (not committed); the committed seeds in fuzz/corpus/TARGET
# are read. Keep an input worth keeping (every crash, once fixed) by copying it into
# fuzz/corpus/TARGET/: it then runs in CI as an ordinary test (crates/fuzzing/tests/corpus.rs).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(jsonrpc config sse line_protocol legacy_session modern_requests)
for target in "${targets[@]}"; do
  scratch=target/scratch-corpus/$target
  mkdir -p "$scratch"
  echo "=== fuzz $target for ${seconds}s" >&2
  # The two session targets share one live server across inputs (building one per input would
  # make them slow): a connection's teardown (its EOF drain, its session) finishes after the
  # input returns, and the server lives until the process exits: LeakSanitizer (per input, and
  # at exit) would report both as leaks. For them the memory bound is the RSS and malloc
  # limits alone.
  leaks=1
  case $target in legacy_session|modern_requests) leaks=0 ;; esac
  ASAN_OPTIONS=detect_leaks=$leaks cargo +nightly fuzz run "$target" "$scratch" "corpus/$target" -- \
    -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=512 -max_len=65536 \
    -detect_leaks=$leaks -print_final_stats=1 2>&1 \
    | grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|==[0-9]+== ERROR|SUMMARY|Done [0-9]+ runs|artifact_prefix|Test unit written)' || true
  if ls "artifacts/$target"/* >/dev/null 2>&1; then
    echo "=== $target: FOUND a failing input in fuzz/artifacts/$target" >&2
    exit 1
  fi
done
echo "=== fuzz: every target ran ${seconds}s without a crash" >&2
