#!/usr/bin/env python3
"""Instructions per object, counted by callgrind: immune to the machine's load.

Runs each scenario's bench binary once per size under `valgrind --tool=callgrind`
with `COSI_BENCH_PROFILE=<scenario>:<n>` (the binary runs that scenario once and
exits, see `benches/common/mod.rs`), and takes the instructions per object as the
difference of the two counts over the difference of the sizes: start-up, the
runtime's set-up and the tear-down cancel out.

Writes `<target>/bench-report/instructions.json`, which `scripts/bench_report.py`
turns into a table beside the times. Without valgrind on PATH it writes
`{"skipped": "<why>"}` and the report says n/a.

Usage: python3 scripts/instructions.py [--target-dir DIR] [--quick]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def executables(cmd, env):
    """The executables `cargo <cmd> --message-format=json` built, by target name."""
    out = subprocess.run(
        cmd + ["--message-format=json"], cwd=ROOT, env=env, check=True,
        stdout=subprocess.PIPE, text=True,
    ).stdout
    found = {}
    for line in out.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") == "compiler-artifact" and msg.get("executable"):
            found[msg["target"]["name"]] = msg["executable"]
    return found


def instructions(exe, profile, extra_env=None):
    """The instructions callgrind counts for one run of `exe` with `COSI_BENCH_PROFILE=profile`."""
    env = dict(os.environ, COSI_BENCH_PROFILE=profile, **(extra_env or {}))
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", exe],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    found = re.search(r"Collected\s*:\s*(\d+)", run.stderr)
    if run.returncode != 0 or not found:
        tail = "\n".join(run.stderr.splitlines()[-15:])
        raise RuntimeError(f"{exe} with COSI_BENCH_PROFILE={profile} failed:\n{tail}")
    return int(found.group(1))


def measure(exe, scenario, sizes, unit, extra_env=None, objects_per_n=1):
    """Instructions per object of `scenario`: `objects_per_n` objects per unit of its size."""
    counts = [instructions(exe, f"{scenario}:{n}", extra_env) for n in sizes]
    per = (counts[1] - counts[0]) / ((sizes[1] - sizes[0]) * objects_per_n)
    print(f"instructions: {scenario}: {per:,.0f} per {unit} ({counts} at N = {sizes})", file=sys.stderr)
    return {"sizes": sizes, "instructions": counts, "per_object": per, "unit": unit}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR", "target"))
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    args = parser.parse_args()
    target = os.path.join(ROOT, args.target_dir) if not os.path.isabs(args.target_dir) else args.target_dir
    out_path = os.path.join(target, "bench-report", "instructions.json")
    os.makedirs(os.path.dirname(out_path), exist_ok=True)

    if shutil.which("valgrind") is None:
        report = {"skipped": "valgrind is not on PATH"}
    else:
        env = dict(os.environ, CARGO_TARGET_DIR=target)
        sizes = [100, 600] if args.quick else [1_000, 11_000]
        clusters = [50, 250] if args.quick else [500, 2_500]
        writes = [200, 1_200] if args.quick else [2_000, 12_000]
        benches = executables(
            ["cargo", "bench", "--bench", "runtime", "--bench", "krm", "--bench", "durable",
             "--bench", "execution", "--no-run"], env)
        # The peer builds where scripts/benchmarks.sh's `cargo run` built it: the
        # caller's CARGO_TARGET_DIR, else its own project's target directory.
        peer = executables(
            ["cargo", "build", "--release", "--manifest-path",
             os.path.join(ROOT, "benches", "kube-peer", "Cargo.toml")], dict(os.environ))
        unit = "integer through both stages"
        runtime = benches["runtime"]
        report = {
            "tool": "callgrind (valgrind), instructions executed in all threads",
            "method": "one run per size; per object = (count at the larger N - count at the "
                      "smaller N) / (difference of the sizes)",
            "scenarios": {
                "chain_queue_live": measure(runtime, "queue_live", sizes, unit),
                "chain_live": measure(runtime, "live", sizes, unit),
                "chain_bare_actix": measure(runtime, "bare_actix", sizes, unit),
                "chain_bare_actix_live": measure(runtime, "bare_actix_live", sizes, unit),
                "chain_kube_runtime": measure(peer["kube-peer"], "chain", sizes, unit),
                # The KRM package: per rendered item (each cluster renders to two).
                "krm_render": measure(benches["krm"], "render", clusters, "rendered item",
                                      objects_per_n=2),
                "krm_pipe_in_memory": measure(benches["krm"], "pipe_in_memory", clusters,
                                              "rendered item", objects_per_n=2),
                # The per-object chain at home and spread over the controller arbiters:
                # what crossing threads costs in instructions (its wake-ups and waits not).
                "per_object_home": measure(benches["execution"], "per_object_home", sizes, unit),
                "per_object_spread": measure(benches["execution"], "per_object_spread", sizes,
                                             unit),
                # Acknowledged modifies, 64 in flight: on redb (fsync per batch) and in memory.
                "writes_durable": measure(benches["durable"], "durable", writes, "write"),
                "writes_memory": measure(benches["durable"], "memory", writes, "write"),
                # The floor of a state on an actix thread: a bare actor's window, then
                # the batch's bytes appended (O_DSYNC) by an IO thread.
                "writes_floor": measure(benches["durable"], "floor", writes, "write"),
            },
        }
    with open(out_path, "w") as f:
        json.dump(report, f, indent=2)
    print(f"wrote {out_path}", file=sys.stderr)


if __name__ == "__main__":
    main()
