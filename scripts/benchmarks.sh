#!/usr/bin/env bash
# Runs every benchmark once (release) and regenerates BENCHMARKS.md from that run.
#
#   scripts/benchmarks.sh            # ~20 minutes on 2 cores (10 of them the soak)
#   BENCH_NOTE="text" scripts/benchmarks.sh   # adds a note (e.g. about the machine) to the report
#
# Honours CARGO_TARGET_DIR (default: target). The quick smoke pass CI runs is
# `cargo test --benches` instead: scaled down, no timings asserted.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
# Fresh results only: every figure in the report must come from this run.
rm -rf "$target/bench-report" \
    "$target/criterion/write_sequential" "$target/criterion/write_pipelined_64" \
    "$target/criterion/write_pipelined_1024" "$target/criterion/fanout" \
    "$target/criterion/chain" "$target/criterion/coalescing" "$target/criterion/supervisor" \
    "$target/criterion/queue" "$target/criterion/durable_writes" "$target/criterion/krm" \
    "$target/criterion/etcd_writes" "$target/criterion/execution_cpu" \
    "$target/criterion/execution_chain" "$target/criterion/execution_hot_key" \
    "$target/criterion/kube_list" "$target/criterion/kube_watch"
rm -rf "$target/criterion/chain_1000" "$target/criterion/chain_100000"
# The load at the start, for the report (the report records the machine itself).
mkdir -p "$target/bench-report"
cat /proc/loadavg > "$target/bench-report/loadavg-start" 2>/dev/null || true

# The README's first command, cold: a fresh clone of the committed tree, an empty target.
scripts/cold_build.sh "$target/bench-report/cold_build.json" \
    || echo "the cold build failed: the report shows it as n/a"
cargo build --release --examples   # the KRM bench pipes the example binaries
cargo bench --bench state --bench runtime --bench queue --bench execution --bench durable --bench krm
# The shared state: needs protoc to build and an etcd binary (the bench starts its own
# etcd on free loopback ports; without the binary it says SKIPPED and the report shows n/a).
cargo bench --features etcd --bench etcd
# A sharded controller over member processes on one etcd: 5 ms reconciles with one
# member beside three, and each member's heap for the sharded kind (100,000 objects).
cargo bench --features etcd --bench sharded
# The Kubernetes API: kube-rs list vs a serialization floor, a watch vs the admin endpoint's
# server-sent events, kubectl (when the machine has it; n/a otherwise) beside cosictl (built here).
cargo build --release -p cosictl
cargo bench --features kubernetes-api,admin --bench kubernetes
# A cluster as a source: heap of 100,000 objects mirrored once for 3 controllers, beside
# 3 kube-runtime reflector stores (our own Kubernetes API plays the cluster).
cargo bench --features kubernetes,kubernetes-api --bench cluster
# The kube-runtime peer of the chain bench (benches/kube-peer, a project of its own): same scenario.
cargo run --release --manifest-path benches/kube-peer/Cargo.toml > "$target/bench-report/kube-peer.json" \
    || echo "the kube-runtime peer failed: the report shows its figures as n/a"
# Instructions per object by callgrind (load-immune), beside the times: our chain, the bare
# actix chain and the kube-runtime peer, each at two sizes (skipped without valgrind).
python3 scripts/instructions.py --target-dir "$target" \
    || echo "the instruction counts failed: the report shows them as n/a"
# The soak: SOAK_SECS=600 by default (the report shows RSS at 1, 5 and 10 minutes).
mkdir -p "$target/bench-report"
cargo run --release --example soak -- --secs "${SOAK_SECS:-600}" --report "$target/bench-report/soak.json" \
    || echo "the soak failed: its verdict is in the report"
python3 scripts/bench_report.py --target-dir "$target" --command "scripts/benchmarks.sh" --out BENCHMARKS.md
