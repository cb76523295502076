#!/usr/bin/env bash
# Times the README's first command on a fresh clone of the committed tree with an empty
# target directory (dependencies already downloaded: the time is compilation), and writes
# <out> as JSON: {"seconds": …, "crates": …, "commit": …, "command": …}.
#
#   scripts/cold_build.sh target/bench-report/cold_build.json
set -euo pipefail
cd "$(dirname "$0")/.."
out="$1"
command="cargo run --release -p netplane"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
git clone --quiet . "$dir/clone"
commit="$(git -C "$dir/clone" rev-parse --short HEAD)"
cd "$dir/clone"
cargo fetch --quiet
start=$(date +%s.%N)
# `cargo build` of what `cargo run` runs: the same compilation, without running the flagship.
env -u CARGO_TARGET_DIR cargo build --release -p netplane 2> "$dir/log"
end=$(date +%s.%N)
crates=$(grep -c '^ *Compiling ' "$dir/log" || true)
cd - > /dev/null
python3 - "$out" "$start" "$end" "$crates" "$commit" "$command" <<'PY'
import json, sys
out, start, end, crates, commit, command = sys.argv[1:]
with open(out, "w") as f:
    json.dump({"seconds": float(end) - float(start), "crates": int(crates),
               "commit": commit, "command": command}, f, indent=2)
PY
cat "$out"
