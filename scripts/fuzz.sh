#!/usr/bin/env bash
# Coverage-guided fuzzing of one target (or all) with AFL++ through cargo-afl,
# on the stable toolchain (see fuzz/Cargo.toml and fuzz/README.md).
#
#   scripts/fuzz.sh TARGET SECS     # e.g. scripts/fuzz.sh kube_http 600
#   scripts/fuzz.sh all SECS        # every target, SECS each, one after another
#   scripts/fuzz.sh list            # the targets
#
# Installs cargo-afl (`cargo install`) and builds AFL++ from the source it bundles
# when missing, builds the instrumented `cosi-fuzz` binary (target/afl), then
# runs AFL++ for SECS seconds of fuzzing from fuzz/corpus/TARGET plus
# fuzz/regressions/TARGET. Writes target/fuzz-report/TARGET.json (tool,
# seconds, executions, crashes, hangs, ...) for scripts/bench_report.py, and
# copies any crashing input to target/fuzz-report/TARGET-crashes/. Exits
# non-zero when a target crashed. Hangs (an input over the time limit) are
# reported, not failed: on a loaded machine a slow input can time out.
#
# Environment: FUZZ_TIMEOUT_MS (per input, default 2000), FUZZ_MEMORY_MB
# (default 4096), CARGO_AFL_VERSION (default 0.18.2, the `afl` crate's).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

targets=(yaml resource_list label_selector field_selector manifest pointer patch admin_http kube_http state_log)
usage() {
  echo "usage: scripts/fuzz.sh TARGET|all SECS   (targets: ${targets[*]})" >&2
  exit 2
}
[ "${1:-}" = list ] && { printf '%s\n' "${targets[@]}"; exit 0; }
[ $# -eq 2 ] || usage
what=$1 secs=$2
[[ "$secs" =~ ^[0-9]+$ ]] && [ "$secs" -gt 0 ] || usage
if [ "$what" = all ]; then
  run=("${targets[@]}")
else
  [[ " ${targets[*]} " == *" $what "* ]] || usage
  run=("$what")
fi

export CARGO_INCREMENTAL=0 CARGO_TERM_COLOR=never
version=${CARGO_AFL_VERSION:-0.18.2}

# The tool: cargo-afl, and AFL++ built from the source the crate bundles (no
# download beyond `cargo install`).
if ! cargo afl --version 2>/dev/null | grep -q "cargo-afl $version"; then
  echo "== installing cargo-afl $version"
  cargo install --locked cargo-afl --version "$version"
fi
if ! out=$(cargo afl config --build 2>&1); then
  grep -q "already built" <<<"$out" || { echo "$out" >&2; exit 1; }
fi
tool="AFL++ $(cargo afl --version | sed -n 's/.*AFL++ version \([^)]*\)).*/\1/p') (cargo-afl $version)"

echo "== building the instrumented targets (target/afl)"
CARGO_TARGET_DIR="$root/target/afl" cargo afl build --release --quiet \
  --manifest-path fuzz/Cargo.toml --bin cosi-fuzz
bin="$root/target/afl/release/cosi-fuzz"

report="$root/target/fuzz-report"
mkdir -p "$report"
failed=()
for target in "${run[@]}"; do
  out="$root/target/fuzz-out/$target"
  seeds="$root/target/fuzz-out/$target.seeds"
  rm -rf "$out" "$seeds"
  mkdir -p "$seeds"
  cp fuzz/corpus/"$target"/* "$seeds"/
  [ -d fuzz/regressions/"$target" ] && cp fuzz/regressions/"$target"/* "$seeds"/ 2>/dev/null || true
  echo "== $target: ${secs}s of AFL++"
  # No UI; no CPU binding (the machine may be shared); no check of the core
  # pattern or of the CPU governor (a container cannot change them).
  AFL_NO_UI=1 AFL_NO_AFFINITY=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
    AFL_QUIET=1 AFL_SUPPRESS_BANNER=1 AFL_NO_STARTUP_CALIBRATION=1 \
    cargo afl fuzz -V "$secs" -t "${FUZZ_TIMEOUT_MS:-2000}" -m "${FUZZ_MEMORY_MB:-4096}" \
    -i "$seeds" -o "$out" -- "$bin" "$target" >"$out.log" 2>&1 || {
      echo "AFL++ failed on $target; the end of its log ($out.log):" >&2
      tail -30 "$out.log" >&2
      failed+=("$target")
      continue
    }
  stats="$out/default/fuzzer_stats"
  stat() { sed -n "s/^$1 *: *//p" "$stats"; }
  execs=$(stat execs_done)
  crashes=$(stat saved_crashes)
  hangs=$(stat saved_hangs)
  run_time=$(stat run_time)
  corpus=$(stat corpus_count)
  edges=$(stat edges_found)
  stability=$(stat stability)
  rate=$(( run_time > 0 ? execs / run_time : execs ))
  rm -rf "$report/$target-crashes"
  if [ "$crashes" -gt 0 ]; then
    mkdir -p "$report/$target-crashes"
    cp "$out"/default/crashes/id:* "$report/$target-crashes/"
    failed+=("$target")
  fi
  cat >"$report/$target.json" <<EOF
{
  "target": "$target",
  "tool": "$tool",
  "seconds": $secs,
  "run_time": $run_time,
  "executions": $execs,
  "execs_per_sec": $rate,
  "crashes": $crashes,
  "hangs": $hangs,
  "corpus": $corpus,
  "edges": $edges,
  "stability": "$stability",
  "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}
EOF
  echo "   $execs executions in ${run_time}s ($rate/s), $crashes crashes, $hangs hangs, $corpus inputs in the corpus, $edges edges"
  if [ "$crashes" -gt 0 ]; then
    echo "   CRASHES in $report/$target-crashes/; reproduce with:" >&2
    echo "   cargo run --manifest-path fuzz/Cargo.toml -- $target $report/$target-crashes" >&2
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "== crashed or failed: ${failed[*]}" >&2
  exit 1
fi
echo "== no crash"
