#!/usr/bin/env python3
"""Writes BENCHMARKS.md from one run of the benches (see scripts/benchmarks.sh).

Reads the criterion medians under `<target>/criterion/<group>/<bench>/new/estimates.json`
and the figures the bench binaries wrote to `<target>/bench-report/*.json`
(memory, counts). `<target>` is `--target-dir`, else `$CARGO_TARGET_DIR`, else `target`.

Usage: python3 scripts/bench_report.py [--target-dir DIR] [--command CMD] [--note TEXT] [--out FILE]
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

MISSING = "n/a"


def sh(*cmd, strip=True):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        return out.strip() if strip else out
    except (OSError, subprocess.CalledProcessError):
        return ""


class Data:
    def __init__(self, target):
        self.target = target
        self.missing = []
        self.reports = {}
        report_dir = os.path.join(target, "bench-report")
        for name in ("memory", "runtime", "durable", "etcd", "soak", "execution", "kubernetes", "cluster", "krm",
                     "cold_build", "sharded"):
            path = os.path.join(report_dir, name + ".json")
            try:
                with open(path) as f:
                    self.reports[name] = json.load(f)
            except OSError:
                self.missing.append(path)
                self.reports[name] = {}

    def _median(self, group, bench):
        path = os.path.join(self.target, "criterion", group, bench, "new", "estimates.json")
        try:
            with open(path) as f:
                return json.load(f)["median"]
        except (OSError, KeyError, ValueError):
            self.missing.append(path)
            return None

    def median_ns(self, group, bench):
        """Median time per iteration in ns, or None."""
        m = self._median(group, bench)
        return None if m is None else m["point_estimate"]

    def elements(self, group, bench):
        """The throughput (elements per iteration) criterion recorded, or None."""
        path = os.path.join(self.target, "criterion", group, bench, "new", "benchmark.json")
        try:
            with open(path) as f:
                return json.load(f)["throughput"]["Elements"]
        except (OSError, KeyError, ValueError, TypeError):
            return None

    def median_halfwidth_ns(self, group, bench):
        """Half the width of the median's 95 % confidence interval, in ns, or None."""
        m = self._median(group, bench)
        try:
            ci = m["confidence_interval"]
            return (ci["upper_bound"] - ci["lower_bound"]) / 2
        except (TypeError, KeyError):
            return None


def get(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def fmt_time(ns):
    if ns is None:
        return MISSING
    if ns < 0:
        return "−" + fmt_time(-ns)
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.2f} µs"
    if ns < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.2f} s"


def fmt_rate(per_second):
    if per_second is None:
        return MISSING
    if per_second >= 1e6:
        return f"{per_second / 1e6:.2f} M/s"
    if per_second >= 1e3:
        return f"{per_second / 1e3:.0f} k/s"
    return f"{per_second:.0f} /s"


def rate(ns, ops=1):
    return None if not ns else ops * 1e9 / ns


def ratio(a, b):
    return None if a is None or not b else a / b


def paired_check(pairs, blocks):
    """The ratio a placement target is checked on, and the words that lead its summary.

    `pairs` is what `common::paired` (benches) wrote, `blocks` the same ratio
    from criterion's consecutive blocks: the pairs' median when the report has
    them ("Ratios taken in turns" in the execution section), else `blocks`.
    """
    checked = get(pairs, "ratio_median")
    if checked is None:
        return blocks, ""
    return checked, f"{fmt_ratio(checked)} in turns (median of {pairs.get('rounds')} pairs); criterion's blocks: "


# The targets stated against a floor of the machine, measured in the same run:
# (target, subject, floor, ratio text, ok). The report's second table.
FLOORS = []


def floor_row(target, subject, floor, ratio_text, ok):
    """One target against its floor, for the report's second table."""
    FLOORS.append((target, subject, floor, ratio_text, ok))


def floor_check(preloaded, live, pairs):
    """The per-object chain's ratios to its bare-actix floor at the two sizes, and their words.

    `preloaded` and `live` are criterion's ratios to `bare_actix` and
    `bare_actix_live`, `pairs` what `common::paired` wrote for the latter. The
    checked ratios are the floor that creates its integers live, as
    `queue_live` does, when the run has it (older runs: `bare_actix`), taken
    in turns when the run has those ("Ratios taken in turns").
    """
    has_live = None not in live
    blocks = live if has_live else preloaded
    in_turns = [get(p, "ratio_median") for p in pairs]
    turns = has_live and None not in in_turns
    checked = in_turns if turns else blocks
    text = f"{fmt_ratio(checked[0])} and {fmt_ratio(checked[1])} the bare-actix chain"
    notes = []
    if has_live:
        text += " that creates its integers live"
    if turns:
        text += ", in turns"
        notes.append(f"medians of {pairs[0].get('rounds')} and {pairs[1].get('rounds')} pairs; "
                     f"criterion's blocks: {fmt_ratio(live[0])} and {fmt_ratio(live[1])}")
    if has_live:
        notes.append(f"{fmt_ratio(preloaded[0])} and {fmt_ratio(preloaded[1])} the bare chain whose "
                     "integers are in its table before its clock starts")
    return checked, text + (f" ({'; '.join(notes)})" if notes else "")


def fmt_share(r):
    """A ratio as a percentage."""
    return fmt_ratio(None if r is None else 100 * r, " %")


def fmt_ratio(r, suffix="×"):
    if r is None:
        return MISSING
    # Small ratios keep their digits: 0.0044× says something, 0.00× does not.
    return f"{r:.2f}{suffix}" if r >= 0.1 else f"{r:.2g}{suffix}"


def fmt_bytes(b):
    if b is None:
        return MISSING
    b = float(b)
    if abs(b) >= 1024 * 1024:
        return f"{b / (1024 * 1024):.1f} MiB"
    if abs(b) >= 10 * 1024:
        return f"{b / 1024:.1f} KiB"
    return f"{b:.0f} B"


def verdict(ok):
    return MISSING if ok is None else ("**met**" if ok else "**missed**")


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def machine():
    lscpu = sh("lscpu")
    keep = (
        "Architecture", "Model name", "CPU(s)", "Thread(s) per core", "Core(s) per socket",
        "Socket(s)", "CPU max MHz", "L1d cache", "L2 cache", "L3 cache", "Hypervisor vendor",
        "Virtualization type",
    )
    lines = [l for l in lscpu.splitlines() if l.split(":")[0].strip() in keep]
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            total_kb = int(f.readline().split()[1])
            mem = f"{total_kb / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    model, processors = "", 0
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "processor":
                    processors += 1
                elif key.strip() == "model name" and not model:
                    model = value.strip()
    except OSError:
        pass
    return {
        "cpu_model": model or "(unknown: no /proc/cpuinfo)",
        "cores": processors or os.cpu_count(),
        "lscpu": "\n".join(lines) or "(lscpu unavailable)",
        "nproc": sh("nproc") or str(os.cpu_count()),
        "rustc": sh("rustc", "-vV") or "(rustc unavailable)",
        "cargo": sh("cargo", "-V"),
        "os": " ".join(platform.uname()[i] for i in (0, 2, 4)),
        "memory": mem,
    }
def load_averages(target_dir):
    """The load average scripts/benchmarks.sh recorded at its start, and the current one."""
    def read(path):
        try:
            with open(path) as f:
                return " ".join(f.read().split()[:3])
        except OSError:
            return ""
    return read(os.path.join(target_dir, "bench-report", "loadavg-start")), read("/proc/loadavg")


def count_row(label, count, *bases):
    """A table row: `label`, an instruction count, and its ratio to each of `bases`."""
    return [label, MISSING if count is None else f"{count:,.0f}"] + [fmt_ratio(ratio(count, b)) for b in bases]


def instructions_section(target_dir, d, md):
    """Instructions per object by callgrind (`scripts/instructions.py`): the chain's cost
    with the machine's load taken out, beside the times above."""
    path = os.path.join(target_dir, "bench-report", "instructions.json")
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError):
        d.missing.append(path)
        report = {}
    md.append("## Instructions per object\n")
    if report.get("skipped") or not report.get("scenarios"):
        md.append(f"Not measured in this run ({report.get('skipped', 'no instructions.json')}).\n")
        return
    sc = report["scenarios"]
    sizes = get(sc, "chain_queue_live", "sizes") or [MISSING, MISSING]
    md.append(
        "The chain of the two sections above, counted in instructions by callgrind "
        "(`scripts/instructions.py`, run by `scripts/benchmarks.sh`): each scenario's binary runs "
        f"once at N = {sizes[0]:,} and once at N = {sizes[1]:,} under `valgrind --tool=callgrind` "
        "(`COSI_BENCH_PROFILE=<scenario>:<n>`), and the difference of the two counts over the "
        "difference of the sizes is the cost of one integer through both stages, its create "
        "included, start-up and set-up excluded. Instructions do not depend on the machine's load "
        "or on how the threads were scheduled, so they show what the code costs where the times "
        "also show the machine; every thread counts (kube-runtime's peer runs on one). Ratio = "
        "instructions relative to kube-runtime's peer.\n"
    )
    kube = get(sc, "chain_kube_runtime", "per_object")
    bare = get(sc, "chain_bare_actix", "per_object")
    bare_live = get(sc, "chain_bare_actix_live", "per_object")
    rows = []
    for key, label in (
        ("chain_queue_live", "cosi-runtime `queue_live` (per object)"),
        ("chain_live", "cosi-runtime `live` (lists all)"),
        ("chain_bare_actix", "bare actix baseline"),
        ("chain_bare_actix_live", "bare actix, integers created live"),
        ("chain_kube_runtime", "kube-runtime (current-thread)"),
    ):
        rows.append(count_row(label, get(sc, key, "per_object"), kube, bare, bare_live))
    md.append(table(["scenario", "instructions per integer", "ratio to kube-runtime", "ratio to bare actix",
                     "ratio to bare actix, created live"], rows))
    md.append("")
    render = get(sc, "krm_render", "per_object")
    pipe = get(sc, "krm_pipe_in_memory", "per_object")
    clusters = get(sc, "krm_render", "sizes") or [MISSING, MISSING]
    md.append(
        "The KRM package of the KRM section below, counted the same way at "
        f"{clusters[0]:,} and {clusters[1]:,} clusters (two rendered items each): the render on "
        "the controller engine (`render`: items in a `State`, functions as controllers, until "
        "settled) beside the three functions applied in a row in one process (`render_pipe`, "
        "no YAML between them).\n"
    )
    md.append(table(
        ["scenario", "instructions per rendered item", "ratio to the functions in a row"],
        [
            count_row("in-process render (`render`)", render, pipe),
            count_row("the three functions in a row (`render_pipe`)", pipe, pipe),
        ],
    ))
    md.append("")
    home = get(sc, "per_object_home", "per_object")
    spread = get(sc, "per_object_spread", "per_object")
    md.append(
        "The per-object chain of the execution section below (`execution_per_object`), counted "
        "the same way: every controller on the home arbiter beside the state, and spread over "
        "the controller arbiters (`Placement::Spread`), where every request and reply crosses "
        "threads. The instructions count the crossing's work (its queues, wake-ups and batches), "
        "not the time a thread waits for a core or for the other side.\n"
    )
    md.append(table(
        ["placement", "instructions per integer", "ratio to home"],
        [count_row("home (`Placement::Home`)", home, home),
         count_row("spread (`Placement::Spread`)", spread, home)],
    ))
    md.append("")
    durable = get(sc, "writes_durable", "per_object")
    memory = get(sc, "writes_memory", "per_object")
    floor = get(sc, "writes_floor", "per_object")
    writes = get(sc, "writes_durable", "sizes") or [MISSING, MISSING]
    md.append(
        "The writes of the durable section below (`modify`, 64 in flight), counted the same way "
        f"at {writes[0]:,} and {writes[1]:,} writes: on a redb file (the writer thread's "
        "encoding and redb's work included, the disk's time not), in memory, and the floor of "
        "a state on an actix thread (a bare actor's window of 64 `send`s, then the batch's bytes "
        "appended by an IO thread; no state).\n"
    )
    rows = [count_row("redb (durable)", durable, memory), count_row("memory", memory, memory)]
    if floor is not None:
        rows.append(count_row("floor: a bare actor, then the append through a thread", floor, memory))
    md.append(table(["state", "instructions per write", "ratio to memory"], rows))
    md.append("")


def kube_peer_section(d, rt, target_dir, summary, md):
    """The chain, single-object latency and peak heap against the kube-runtime peer
    (`benches/kube-peer`, run by scripts/benchmarks.sh in the same invocation)."""
    path = os.path.join(target_dir, "bench-report", "kube-peer.json")
    try:
        with open(path) as f:
            kube = json.load(f)
    except (OSError, ValueError):
        d.missing.append(path)
        kube = {}
    version = MISSING
    try:
        with open(os.path.join("benches", "kube-peer", "Cargo.lock")) as f:
            lock = f.read().split("[[package]]")
        version = next(p.split('version = "')[1].split('"')[0] for p in lock if 'name = "kube-runtime"' in p)
    except (OSError, StopIteration, IndexError):
        pass
    groups = {1_000: "chain_1000", 10_000: "chain", 100_000: "chain_100000"}
    rows = []
    ratios = {}
    floor_ratios = {}
    # `queue_live` over each bare-actix floor: integers created live, or preloaded.
    to_live, to_preloaded = {}, {}
    for n, group in groups.items():
        k = get(kube, "chain", str(n), "median_ms")
        k_ns = None if k is None else k * 1e6
        k_mt = get(kube, "chain_multi_thread", "sizes", str(n), "median_ms")
        q = d.median_ns(group, "queue_live")
        lv = d.median_ns(group, "live")
        bare_live = d.median_ns(group, "bare_actix_live")
        ratios[n] = ratio(q, k_ns)
        floor_ratios[n] = ratio(bare_live, k_ns)
        to_live[n] = ratio(q, bare_live)
        to_preloaded[n] = ratio(q, d.median_ns(group, "bare_actix"))
        rows.append([
            f"{n:,}", fmt_time(q), fmt_time(lv), fmt_time(k_ns),
            fmt_time(None if k_mt is None else k_mt * 1e6),
            fmt_ratio(ratios[n]), fmt_ratio(ratio(lv, k_ns)),
            fmt_time(bare_live), fmt_ratio(to_live[n]), fmt_ratio(floor_ratios[n]),
        ])
    lat = get(rt, "latency") or {}
    klat = get(kube, "latency_us") or {}
    lat_rows = []
    for p in ("p50", "p99"):
        ours = lat.get(f"{p}_ns")
        theirs = None if klat.get(p) is None else klat[p] * 1e3
        lat_rows.append([p, fmt_time(ours), fmt_time(theirs), fmt_ratio(ratio(ours, theirs))])
    peak_n = kube.get("peak_n", 100_000)
    k_peak = kube.get(f"peak_bytes_{peak_n}")
    k_api = kube.get(f"apiserver_bytes_{peak_n}")
    peaks = get(rt, "chain_peak", "variants") or {}
    q_peak = get(peaks, "queue_live", "peak_heap_growth_bytes")
    l_peak = get(peaks, "live", "peak_heap_growth_bytes")
    if get(rt, "chain_peak", "n") not in (None, peak_n):
        # Not the same N (e.g. a quick run on one side): no ratio.
        q_peak = l_peak = None

    big = [ratios.get(10_000), ratios.get(100_000)]
    sizes = (10_000, 100_000)
    pairs = [get(rt, "chain", "paired_queue_live_bare_live"),
             get(rt, "chain_sizes", "100000", "paired_queue_live_bare_live")]
    bare, bare_text = floor_check([to_preloaded.get(n) for n in sizes],
                                  [to_live.get(n) for n in sizes], pairs)
    floors = [floor_ratios.get(n) for n in sizes]
    floor_text = (
        "" if None in floors else
        f" (the live floor itself takes {fmt_ratio(floors[0])} and {fmt_ratio(floors[1])} of "
        "kube-runtime's time)"
    )
    floor_row(
        "Per-object chain (objects created live), N = 10,000 and 100,000: ≤ 1.25× the bare-actix "
        "live floor",
        " and ".join(fmt_time(d.median_ns(groups[n], "queue_live")) for n in sizes),
        " and ".join(fmt_time(d.median_ns(groups[n], "bare_actix_live")) for n in sizes),
        MISSING if None in bare else bare_text,
        None if None in bare else max(bare) <= 1.25,
    )
    summary.append((
        "Per-object chain (objects created live), N = 10,000 and 100,000: ≤ 1/5 of kube-runtime's "
        "time and ≤ 1.5× the bare-actix chain baseline (same run)",
        MISSING if None in big + bare
        else f"{fmt_ratio(big[0])} and {fmt_ratio(big[1])} kube-runtime's time{floor_text}; {bare_text}",
        None if None in big + bare else max(big) <= 1 / 5 and max(bare) <= 1.5,
    ))
    p50 = lat.get("p50_ns")
    summary.append((
        "One object through one stage: p50 ≤ 50 µs",
        MISSING if p50 is None else fmt_time(p50),
        None if p50 is None else p50 <= 50_000,
    ))
    lat_redb = lat.get("redb") or {}
    lat_raw = lat.get("raw_redb_commit") or {}
    spreads = [ratio(x.get("p99_ns"), x.get("p50_ns")) for x in (lat, lat_redb)]
    summary.append((
        "One object through one stage: p99 ≤ 2× p50, memory and redb",
        MISSING if None in spreads
        else f"memory {fmt_ratio(spreads[0])}, redb {fmt_ratio(spreads[1])} "
        f"(raw redb commit: {fmt_ratio(ratio(lat_raw.get('p99_ns'), lat_raw.get('p50_ns')))})",
        None if None in spreads else max(spreads) <= 2,
    ))
    summary.append((
        f"Peak heap at N = {peak_n:,}, per-object chain: below kube-runtime's",
        MISSING if None in (q_peak, k_peak)
        else f"{fmt_bytes(q_peak)} vs {fmt_bytes(k_peak)}",
        None if None in (q_peak, k_peak) else q_peak < k_peak,
    ))
    md.append("## Reconcile chain against kube-runtime\n")
    md.append(
        f"The same chain on stock kube-runtime {version} (`benches/kube-peer`, a Cargo project of its "
        "own that `scripts/benchmarks.sh` runs in this invocation): one `Controller::for_stream` per "
        "stage over a reflector store of its input, a reflector store for the sentences, and an "
        "in-memory apiserver (a map per kind, writes stamped with a resourceVersion and delivered as "
        "watch events down unbounded channels). A reconcile gets its object from the store and writes "
        "its output with one call to the in-memory apiserver: no HTTP, no JSON, no network round "
        "trip, so the peer's figures are its controller machinery alone. The peer runs on a "
        "current-thread tokio runtime, like our single arbiter (a 2-worker multi-thread figure "
        "beside it); its clock runs from the first create to the watch event of the last correct "
        "sentence, ours from the first create to `settled()`; both check every sentence and count "
        "one reconcile per object and stage (the per-object form). Peer times are medians of 5 runs "
        "(3 at 100,000); ours are criterion medians. Ratio = our time / kube-runtime's "
        "(current-thread); below 1 we are faster. The floor beside them: the bare-actix chain "
        "whose integers are created live as well (`bare_actix_live`: the same creates, 1,024 in "
        "flight, as `send().await`s to the actor holding the tables, then the two levels of the "
        "bare chain, one clock over all of it; a chain that creates its objects does those "
        "writes too, so this is the same chain's floor, where `bare_actix` (the section above) "
        "times only the two levels). The last column is criterion's blocks; the target is "
        "checked on the two run in turns (\"Ratios taken in turns\", under Execution).\n"
    )
    md.append(table(
        ["N", "cosi-runtime `queue_live` (per object)", "cosi-runtime `live` (lists all)",
         "kube-runtime (current-thread)", "kube-runtime (2 threads)", "ratio `queue_live`", "ratio `live`",
         "bare actix, created live", "`queue_live` / bare actix live", "bare actix live / kube-runtime"],
        rows,
    ))
    md.append("")
    md.append(
        f"Single-object latency: one stage (integer → string), {lat.get('samples', MISSING)} objects "
        f"(kube-runtime: {klat.get('samples', MISSING)}) "
        "created one at a time (after a warm-up of a tenth as many), each timed from its create to "
        "the watch event of its string. Both harnesses measure their second whole run in the "
        "process and discard the first, whose heap growth (a page fault per page first touched) "
        "is start-up, not steady state. Ours: one queue controller; kube-runtime: one controller "
        "as above.\n"
    )
    md.append(table(["percentile", "cosi-runtime", "kube-runtime", "ratio"], lat_rows))
    md.append("")
    md.append(
        "The same single-object latency with the state's namespace in a redb file (`Runtime::builder()"
        ".open_durable`: each sample is two commits, the integer's and then the string's, each "
        "acknowledged once its transaction is on disk), in memory as above, and what the disk alone "
        "gives: one raw redb write transaction of one record of the state's size "
        f"({fmt_bytes(lat_raw.get('record_bytes'))}; immediate durability, one fsync), timed "
        f"{lat.get('samples', MISSING)} times in the same process. Target: p99 ≤ 2× p50 on memory "
        "and on redb.\n"
    )
    spread_rows = []
    for label, x in (("in memory", lat), ("redb (two commits per sample)", lat_redb),
                     ("raw redb: one transaction of one write", lat_raw)):
        r = ratio(x.get("p99_ns"), x.get("p50_ns"))
        spread_rows.append([label, fmt_time(x.get("p50_ns")), fmt_time(x.get("p99_ns")),
                            fmt_time(x.get("max_ns")), fmt_ratio(r)])
    md.append(table(["case", "p50", "p99", "max", "p99 / p50"], spread_rows))
    md.append("")
    md.append(
        f"Peak heap at N = {peak_n:,}: growth of live heap bytes (counting global allocator, as "
        "everywhere here) over the heap before the run, up to the end of the chain. Our runtime "
        "keeps the state in-process by design; the peer's in-memory apiserver would live in another "
        "process in a deployment, so what its maps held at the end is shown beside it.\n"
    )
    md.append(table(
        ["", "cosi-runtime `queue_live`", "cosi-runtime `live`", "kube-runtime", "of which the in-memory apiserver's maps"],
        [["peak heap growth", fmt_bytes(q_peak), fmt_bytes(l_peak), fmt_bytes(k_peak), fmt_bytes(k_api)],
         ["ratio to kube-runtime", fmt_ratio(ratio(q_peak, k_peak)), fmt_ratio(ratio(l_peak, k_peak)), "1.00×",
          "–"]],
    ))
    md.append("")


def execution_section(d, summary, md):
    """Arbiters, blocking reconciles and fairness (`benches/execution.rs`): every ratio is
    between two figures of this run."""
    ex = d.reports["execution"]
    cores = get(ex, "cpu", "controller_arbiters")
    n_cores = "one per core" if cores is None else f"{cores}, one per core"

    # CPU-bound reconciles: N arbiters over 1.
    single = d.median_ns("execution_cpu", "single")
    spread = d.median_ns("execution_cpu", "spread")
    speedup = ratio(single, spread)
    bare1 = d.median_ns("execution_cpu", "bare_1_thread")
    bare_n = d.median_ns("execution_cpu", "bare_threads")
    bare_speedup = ratio(bare1, bare_n)
    cpu_checked, cpu_lead = paired_check(get(ex, "cpu", "paired_spread_single"), speedup)
    summary.append((
        "CPU-bound reconciles spread over the controller arbiters: ≥ 1.7× faster than one arbiter",
        MISSING if cpu_checked is None else (
            cpu_lead + f"{fmt_ratio(speedup)} ({fmt_time(spread)} vs {fmt_time(single)}); "
            f"bare threads: {fmt_ratio(bare_speedup)}"
        ),
        None if cpu_checked is None else cpu_checked >= 1.7,
    ))
    # The chain with the default placement vs single-arbiter.
    chain = {v: d.median_ns("execution_chain", v) for v in ("single", "default", "spread", "paired")}
    slow = ratio(chain["default"], chain["single"])
    summary.append((
        "Chain, N = 10,000, default placement: ≤ 10 % slower than one arbiter",
        MISSING if slow is None else f"{fmt_ratio(slow)} the single-arbiter time",
        None if slow is None else slow <= 1.10,
    ))
    # The per-object chain (the "same chain"), spread vs home.
    per_object = {v: d.median_ns("execution_per_object", v) for v in ("default", "spread")}
    spread_cost = ratio(per_object["spread"], per_object["default"])
    spread_checked, spread_lead = paired_check(get(ex, "per_object", "paired_default_spread"), spread_cost)
    summary.append((
        "Per-object chain (queue controllers, 16 in flight), N = 10,000: `Placement::Spread` "
        "≤ 1.5× its time with `Placement::Home`",
        MISSING if spread_checked is None else (
            spread_lead + f"{fmt_ratio(spread_cost)} ({fmt_time(per_object['spread'])} vs {fmt_time(per_object['default'])})"
        ),
        None if spread_checked is None else spread_checked <= 1.5,
    ))
    # Latency next to a blocking reconcile.
    cases = get(ex, "blocking_latency", "cases") or {}
    alone, pool = cases.get("alone") or {}, cases.get("blocking_pool") or {}
    lat_ok = None
    if alone.get("p50_ns") and pool.get("p50_ns") and alone.get("p99_ns") and pool.get("p99_ns"):
        lat_ok = pool["p50_ns"] <= 1.5 * alone["p50_ns"] and pool["p99_ns"] <= 1.5 * alone["p99_ns"]
    p99_pool = ratio(pool.get("p99_ns"), alone.get("p99_ns"))
    floor_row(
        "A light controller beside a blocking reconcile on the pool: p99 ≤ 1.5× alone",
        fmt_time(pool.get("p99_ns")),
        fmt_time(alone.get("p99_ns")),
        fmt_ratio(p99_pool),
        None if p99_pool is None else p99_pool <= 1.5,
    )
    summary.append((
        "Next to a blocking reconcile on the blocking pool, another controller's latency is unaffected "
        "within noise (p50 and p99 within 1.5× of alone)",
        MISSING if lat_ok is None else (
            f"p50 {fmt_time(pool['p50_ns'])} vs {fmt_time(alone['p50_ns'])}, "
            f"p99 {fmt_time(pool['p99_ns'])} vs {fmt_time(alone['p99_ns'])}"
        ),
        lat_ok,
    ))

    md.append("## Execution: arbiters, blocking reconciles, fairness\n")
    md.append(
        f"`benches/execution.rs`. Controller arbiters: {n_cores} (`default_arbiters()`), besides the "
        "home arbiter that runs the state. Ratios are between figures of this run.\n"
    )
    md.append(
        "**Ratios taken in turns.** Criterion takes every sample of one case before the "
        "next case's; on this VM the speed of the same CPU-bound run drifts from one second to "
        "the next with nothing else running, and a drift between two blocks lands in their "
        "ratio whole. So the two placement targets (CPU-bound spread over one "
        "arbiter; the per-object chain spread over home) and the per-object chain's ratio to "
        "its bare-actix floor (`queue_live` against `bare_actix_live`, at N = 10,000 and "
        "100,000) are checked on their two cases run in "
        "turns, outside criterion (`common::paired`: the first case first in even rounds, second "
        "in odd ones), as the median of the per-pair ratios; criterion's blocks stay beside "
        "them in the summary and below.\n"
    )
    objects = get(ex, "cpu", "objects_per_controller")
    ctrls = get(ex, "cpu", "controllers")
    work = get(ex, "cpu", "reconcile_work_ns")
    md.append(
        f"**CPU-bound reconciles.** {ctrls} queue controllers × {objects} objects; each reconcile reads "
        f"its integer, hashes for about {fmt_time(work)} (calibrated at start) and writes a string; "
        "16 reconciles in flight per controller (a worker pool of 64), so that a controller off the "
        "state's thread always has one to compute while others wait for the state's replies. "
        "Clock from the registration of the controllers (their inputs exist) to `settled()`. "
        "Baseline: the same hashing on one bare thread and on one bare thread per core, which "
        "shows the speed-up the machine offered during this run (other work on it takes its share).\n"
    )
    md.append(table(
        ["layout", "time (median)", "speed-up over one"],
        [
            ["one arbiter (`arbiters(1)`)", fmt_time(single), "1.00×"],
            ["spread (`Placement::Spread`)", fmt_time(spread), fmt_ratio(speedup)],
            ["baseline: one bare thread", fmt_time(bare1), "1.00×"],
            ["baseline: one bare thread per core", fmt_time(bare_n), fmt_ratio(bare_speedup)],
        ],
    ))
    md.append("")
    md.append(
        "**The chain with each placement.** N = 10,000 integers → strings → sentences through two "
        "list-everything controllers (each `modify` awaited in turn), creates 1,024 in flight, clock "
        "from the first create to `settled()`. Every state call of a controller off the home arbiter "
        "crosses threads, so the placement decides how many of the chain's round trips do.\n"
    )
    labels = {
        "single": "one arbiter (`arbiters(1)`)",
        "default": "default (`Runtime::start()`: `Placement::Home`)",
        "spread": "spread over the controller arbiters (`Placement::Spread`)",
        "paired": "both controllers on one controller arbiter (`Placement::Arbiter(0)`)",
    }
    md.append(table(
        ["placement", "time (median)", "ratio to one arbiter"],
        [[labels[v], fmt_time(t), fmt_ratio(ratio(t, chain["single"]))] for v, t in chain.items()],
    ))
    md.append("")
    md.append(
        "**The per-object chain with each placement.** The same N = 10,000 through two queue "
        "controllers (the form kube-runtime runs: each reconcile gets its input and `modify`s its "
        "output, 16 reconciles in flight per controller), creates 1,024 in flight, clock from the "
        "first create to `settled()`. Off the home arbiter, the replies of one pass of the state "
        "reach each controller arbiter in one wake-up (its reply lane), not one per reply.\n"
    )
    md.append(table(
        ["placement", "time (median)", "ratio to home"],
        [
            [labels["default"], fmt_time(per_object["default"]), "1.00×"],
            [labels["spread"], fmt_time(per_object["spread"]), fmt_ratio(spread_cost)],
        ],
    ))
    md.append("")
    samples = get(ex, "blocking_latency", "samples")
    lat_rounds = get(ex, "blocking_latency", "rounds")
    block = get(ex, "blocking_latency", "block_ns")
    spacing = (
        f"one at a time, 1 ms apart plus a phase spread evenly over the blocker's {fmt_time(block)} "
        f"cycle; the cases in turns, {lat_rounds} rounds of {samples // lat_rounds} samples each in a "
        "rotating order"
        if lat_rounds else "one at a time, 1 ms apart"
    )
    md.append(
        f"**Latency next to a blocking reconcile.** A light queue controller's latency from the create "
        f"of its input to the watch event of its output ({samples} samples, {spacing}), with nothing "
        f"else running, next to a controller that blocks its thread for {fmt_time(block)} per "
        "reconcile and requeues itself at once, on the arbiter, and the same controller wrapped in "
        "`execution::Blocking` (its reconciles on the blocking pool). One arbiter.\n"
    )
    rows = []
    for name, label in (
        ("alone", "alone"),
        ("blocking_on_arbiter", "next to the blocking controller, on the arbiter"),
        ("blocking_pool", "next to the blocking controller, on the blocking pool"),
    ):
        c = cases.get(name) or {}
        rows.append([
            label, fmt_time(c.get("p50_ns")), fmt_time(c.get("p99_ns")),
            fmt_ratio(ratio(c.get("p50_ns"), alone.get("p50_ns"))),
            fmt_ratio(ratio(c.get("p99_ns"), alone.get("p99_ns"))),
        ])
    md.append(table(["case", "p50", "p99", "p50 / alone", "p99 / alone"], rows))
    md.append("")
    without = d.median_ns("execution_hot_key", "without_hot_key")
    with_hot = d.median_ns("execution_hot_key", "with_hot_key")
    keys = get(ex, "hot_key", "ordinary_keys")
    md.append(
        f"**A hot key.** A queue controller (concurrency 4, one arbiter) gets {keys} ordinary keys "
        "(creates 1,024 in flight; each reconcile reads its integer and writes a string); clock from "
        "the first create until the last ordinary key is done. With the hot key, a key of the same "
        "controller requeues itself at zero delay, returning at once, the whole time.\n"
    )
    md.append(table(
        ["case", "drain time (median)", "ratio"],
        [
            ["without the hot key", fmt_time(without), "1.00×"],
            ["with the hot key", fmt_time(with_hot), fmt_ratio(ratio(with_hot, without))],
        ],
    ))
    md.append("")


def fmt_count(v):
    return MISSING if v is None else f"{v:,}"


def cluster_section(d, summary, md):
    """A cluster as a source (`benches/cluster.rs`): the heap of N objects
    mirrored once into the state for 3 controllers, beside 3 kube-runtime
    reflector stores of the same objects, in the same run."""
    c = d.reports["cluster"]
    n = c.get("n")
    n_text = fmt_count(n)
    ours, three, one = c.get("ours_bytes"), c.get("reflectors3_bytes"), c.get("reflector_bytes")
    r = ratio(ours, three)
    ok = None if r is None else r < 1
    summary.append((
        f"A cluster as a source: {n_text} objects read by 3 controllers held once (heap below "
        "3 kube-runtime reflector stores of the same objects)",
        MISSING if r is None else f"{fmt_bytes(ours)} vs {fmt_bytes(three)} ({fmt_ratio(r)})",
        ok,
    ))
    dyn_ours, dyn_three = c.get("dynamic_ours_bytes"), c.get("dynamic_reflectors3_bytes")

    def per(b):
        return None if b is None or not n else b / n

    md.append(f"## A cluster as a source: memory, N = {n_text}\n")
    md.append(
        "`benches/cluster.rs` (`cargo bench --features kubernetes,kubernetes-api --bench cluster`): "
        f"{n_text} objects of one type (`links` in `bench.cosi.dev`: a spec of three fields, one a "
        "list, and one label) served by this crate's Kubernetes API on 127.0.0.1 (the cluster). "
        "Ours: a `cluster::Source` mirrors them into a runtime's state, then 3 queue controllers "
        "read every mirror (primary input, one `get` per key) until the runtime settles. kube-rs: "
        "a kube-runtime `reflector` store per controller (what each `Controller` holds), each fed "
        "by its own `watcher`, until ready. Typed: the same Rust type on both sides (a "
        "`CustomResource`-shaped struct: `ObjectMeta` and a typed spec); dynamic: our mirror's "
        "spec a JSON value, the stores' `DynamicObject`s. Heap = growth of live heap bytes "
        "(counting global allocator) from before a side starts to when it holds everything; "
        "the server's allocations for a side's watches count in that side.\n"
    )
    md.append(table(
        ["case", "heap", "per object", "ratio to 3 reflectors"],
        [
            ["ours, typed: the mirror alone (one copy in the state)", fmt_bytes(c.get("mirror_bytes")),
             fmt_bytes(per(c.get("mirror_bytes"))), fmt_ratio(ratio(c.get("mirror_bytes"), three))],
            ["ours, typed: the mirror and 3 controllers reading it", fmt_bytes(ours),
             fmt_bytes(per(ours)), fmt_ratio(r)],
            ["kube-rs, typed: 1 reflector store", fmt_bytes(one), fmt_bytes(per(one)),
             fmt_ratio(ratio(one, three))],
            ["kube-rs, typed: 3 reflector stores", fmt_bytes(three), fmt_bytes(per(three)), "1.00×"],
            ["ours, dynamic: the mirror and 3 controllers", fmt_bytes(dyn_ours), fmt_bytes(per(dyn_ours)),
             fmt_ratio(ratio(dyn_ours, dyn_three))],
            ["kube-rs, dynamic: 3 reflector stores", fmt_bytes(dyn_three), fmt_bytes(per(dyn_three)),
             "1.00×"],
        ],
    ))
    md.append("")
    md.append(f"Target: one copy for every reader, below 3 reflector stores — {verdict(ok)}\n")


def sharded_section(d, summary, md):
    """A sharded controller over real processes on one etcd (`benches/sharded.rs`):
    the rate of 5 ms reconciles with one member beside three, and each member's
    heap for the sharded kind with one member beside three, in the same run."""
    s = d.reports["sharded"]
    t, m = s.get("throughput") or {}, s.get("memory") or {}

    def fmt_rate(per_second):
        return MISSING if per_second is None else f"{per_second:,.0f} /s"

    one, three = t.get("one_per_second"), t.get("three_per_second")
    r = ratio(three, one)
    ok = None if r is None else r >= 2.7
    summary.append((
        "Sharded controller: three processes ≥ 2.7× the reconcile rate of one "
        "(5 ms I/O per reconcile, 8 in flight per process)",
        MISSING if r is None else f"{fmt_ratio(r)} ({fmt_rate(three)} vs {fmt_rate(one)})",
        ok,
    ))
    solo, largest = m.get("one_for_kind"), m.get("largest_of_three_for_kind")
    mr = ratio(largest, solo)
    mem_ok = None if mr is None else mr <= 0.45
    objects = m.get("objects")
    summary.append((
        f"Sharded controller: with {fmt_count(objects)} objects, each of three processes holds "
        "≤ 0.45 of one process's heap for the kind",
        MISSING if mr is None else f"{fmt_ratio(mr)} ({fmt_bytes(largest)} vs {fmt_bytes(solo)})",
        mem_ok,
    ))
    md.append("## Sharded controllers: throughput and memory over processes\n")
    md.append(
        "`benches/sharded.rs` (`cargo bench --features etcd --bench sharded`): member processes "
        "(this binary started again) on one etcd the bench starts on loopback, a queue controller "
        f"registered sharded over {t.get('shards', MISSING)} virtual shards. Throughput: "
        f"{fmt_count(t.get('keys'))} keys; each reconcile waits {t.get('work_ms', MISSING)} ms "
        f"(its I/O) and writes one output, {t.get('concurrency', MISSING)} in flight per process. "
        "Once each member holds its share, one write of a shared resource queues every key; the "
        "time until every output shows it gives the rate. One member, then three (fresh members, "
        "fresh prefix). Memory: each member's live heap (counting allocator) once it holds its "
        f"share of {fmt_count(objects)} objects, less the heap of a member on an empty store; "
        "the reconciles are no-ops here, so the kind's objects are what grows.\n"
    )
    md.append(table(
        ["case", "one process", "three processes", "ratio"],
        [
            ["reconciles per second", fmt_rate(one), fmt_rate(three), fmt_ratio(r)],
            ["heap for the kind (the largest of three)", fmt_bytes(solo), fmt_bytes(largest), fmt_ratio(mr)],
        ],
    ))
    md.append("")
    md.append(
        f"A member on an empty store: {fmt_bytes(m.get('empty_member_heap'))}; the three members' "
        f"whole heaps: {', '.join(fmt_bytes(h) for h in (m.get('three_member_heaps') or [])) or MISSING}.\n"
    )
    md.append(f"Targets: throughput ≥ 2.7× — {verdict(ok)}; memory ≤ 0.45 — {verdict(mem_ok)}\n")


def kubernetes_section(d, summary, md):
    """The Kubernetes API (`benches/kubernetes.rs`): a kube-rs list against the
    serialization floor, a Kubernetes watch against the admin endpoint's
    server-sent events, kubectl beside cosictl. Every ratio is between two
    figures of this run."""
    kr = d.reports["kubernetes"]
    clients = kr.get("clients") or {}
    n = kr.get("n") or clients.get("n")
    n_text = fmt_count(n)

    def per(ns):
        return None if ns is None or not n else ns / n

    # ---- list
    floor = d.median_ns("kube_list", "floor_serialize")
    listed = d.median_ns("kube_list", "kube_rs_list")
    served = d.median_ns("kube_list", "raw_http_body")
    parse = d.median_ns("kube_list", "client_parse")
    list_ratio = ratio(listed, floor)
    list_ok = None if list_ratio is None else list_ratio <= 2
    summary.append((
        f"Kubernetes API: kube-rs `Api<DynamicObject>::list` of {n_text} objects within 2× of "
        "serializing them to JSON in one process",
        MISSING if list_ratio is None else f"{fmt_ratio(list_ratio)} ({fmt_time(listed)} vs {fmt_time(floor)})",
        list_ok,
    ))
    # The floor of any JSON API, both ends: the same bytes serialized and
    # parsed back by kube-rs' own parse, in one process, no HTTP.
    round_trip = None if floor is None or parse is None else floor + parse
    trip_ratio = ratio(listed, round_trip)
    trip_ok = None if trip_ratio is None else trip_ratio <= 2
    summary.append((
        f"Kubernetes API: the same list within 2× of a JSON round trip in one process "
        "(serialize, then kube-rs' parse of those bytes): the server's and the transport's share",
        MISSING if trip_ratio is None
        else f"{fmt_ratio(trip_ratio)} ({fmt_time(listed)} vs {fmt_time(round_trip)})",
        trip_ok,
    ))
    # ---- watch
    kube_watch = d.median_ns("kube_watch", "kubernetes_watch")
    sse_watch = d.median_ns("kube_watch", "admin_sse_watch")
    writes = d.median_ns("kube_watch", "writes_alone")
    watch_ratio = ratio(kube_watch, sse_watch)
    watch_ok = None if watch_ratio is None else watch_ratio <= 2
    summary.append((
        f"Kubernetes API: a watch of {n_text} changes within 2× of the same changes through the "
        "admin endpoint's server-sent events",
        MISSING if watch_ratio is None
        else f"{fmt_ratio(watch_ratio)} ({fmt_time(kube_watch)} vs {fmt_time(sse_watch)})",
        watch_ok,
    ))

    md.append(f"## Kubernetes API, N = {n_text}\n")
    md.append(
        "`benches/kubernetes.rs` (`cargo bench --features kubernetes-api,admin --bench kubernetes`): "
        f"one state of {n_text} resources (`Links.bench.cosi.dev`: a spec of four fields, one a list, "
        "and one label) served through the Kubernetes API (`KubernetesApi::serve`, group "
        "`bench.cosi.dev`, plural `links`) and through the admin endpoint (`Admin::serve`), both on "
        "127.0.0.1, each on a worker thread of its own; the state and the writes run on the bench's "
        "main thread. Times are criterion medians; every ratio is between two figures of this run.\n"
    )
    md.append(
        f"**List.** Stock kube-rs (`kube` 5, a dev-dependency) lists the {n_text} objects with "
        "`Api<DynamicObject>::list` from our server. The floor is serializing the same objects "
        "(the `ObjectList<DynamicObject>` that list returned) to JSON with `serde_json::to_vec` in "
        "this process. Beside them, where the list's time goes: the same request from a raw HTTP "
        "client that reads the body and parses nothing (the server's snapshot, serialization and "
        "the transfer), and kube-rs' parse of that body alone (`serde_json::from_slice` into "
        "`ObjectList<DynamicObject>`, what kube-rs does with a list's body).\n"
    )
    md.append(table(
        ["case", "time (median)", "per object", "ratio to the floor"],
        [
            ["floor: the same objects serialized to JSON in one process", fmt_time(floor),
             fmt_time(per(floor)), "1.00×"],
            ["kube-rs `Api<DynamicObject>::list`, our server on loopback", fmt_time(listed),
             fmt_time(per(listed)), fmt_ratio(list_ratio)],
            ["of which the server and the transfer (raw HTTP client, body read, not parsed)",
             fmt_time(served), fmt_time(per(served)), fmt_ratio(ratio(served, floor))],
            ["of which kube-rs' parse of the body, alone", fmt_time(parse), fmt_time(per(parse)),
             fmt_ratio(ratio(parse, floor))],
            ["a JSON round trip in one process: the floor plus kube-rs' parse", fmt_time(round_trip),
             fmt_time(per(round_trip)), fmt_ratio(ratio(round_trip, floor))],
        ],
    ))
    md.append("")
    text = f"Target: the kube-rs list within 2× of the floor — {verdict(list_ok)}"
    parse_ratio = ratio(parse, floor)
    if list_ok is False and parse_ratio is not None and parse_ratio > 2:
        text += (
            f". kube-rs' own parse of the body takes {fmt_ratio(parse_ratio)} the floor in this run, "
            "more than the target allows for the whole list whatever the server does; the server's "
            f"part (request to the last byte of the body) is {fmt_ratio(ratio(served, floor))} the floor"
        )
    md.append(text + ".\n")
    md.append(
        "Measured against a JSON round trip instead (what any JSON API costs at both ends: the "
        "floor's serialization plus kube-rs' parse of the same bytes, in one process, no HTTP), "
        f"the list is {fmt_ratio(trip_ratio)}: within 2× — {verdict(trip_ok)}. The issue's floor "
        "counts the serialization only, and kube-rs' parse alone exceeds 2× of it; we report both "
        "and read the target as the round trip's (the server's and the transport's share).\n"
    )

    md.append(
        f"**Watch.** {n_text} changes: a `modify` of each resource (1,024 in flight) that sets a new "
        "MTU, read back through a Kubernetes watch (`?watch=true&resourceVersion=` the revision "
        "before the writes: chunked JSON lines, one `MODIFIED` each) and through the admin "
        "endpoint's server-sent events (`/api/v1/watch/...` with `Last-Event-ID` = the same "
        "revision: one `updated` event each). Both are read by the same raw HTTP client on a thread "
        "of its own (as a client would be a process of its own), which parses every event and "
        "checks its name and MTU; the clock runs from the first write until the client has all "
        f"{n_text}. Both servers keep up to {fmt_count(kr.get('watch_buffer'))} unread events per "
        "client (`watch_buffer`), so neither cuts the client off. The writes alone, with no watch, "
        "show the share of the state and the writer.\n"
    )
    md.append(table(
        ["route", f"time for {n_text} changes (median)", "per change", "ratio to the admin endpoint"],
        [
            ["Kubernetes watch (chunked JSON lines)", fmt_time(kube_watch), fmt_time(per(kube_watch)),
             fmt_ratio(watch_ratio)],
            ["admin endpoint, server-sent events", fmt_time(sse_watch), fmt_time(per(sse_watch)), "1.00×"],
            ["the writes alone, no watch", fmt_time(writes), fmt_time(per(writes)), "–"],
        ],
    ))
    md.append("")
    md.append(f"Target: the Kubernetes watch within 2× of the admin endpoint's — {verdict(watch_ok)}.\n")

    def client(key):
        return get(clients, key, "median_ns")

    rows = []
    for label, k, c in (
        ("table: `kubectl get links -A` / `cosictl get links`", "kubectl_table", "cosictl_table"),
        ("JSON: `kubectl get links -A -o json` / `cosictl get links -o json`", "kubectl_json", "cosictl_json"),
    ):
        rows.append([label, fmt_time(client(k)), fmt_time(client(c)), fmt_ratio(ratio(client(k), client(c)))])
    kubectl = clients.get("kubectl_version") or "not installed (n/a)"
    md.append(
        f"**kubectl and cosictl.** Each a process run to its end, its output to a pipe, on the same "
        f"{n_text} resources: kubectl ({kubectl}, the client the machine's dispatcher picks by our "
        "`/version`) through the Kubernetes API, with an empty kubeconfig and its discovery cached "
        "by a first run; `cosictl` (release build) through the admin endpoint. Medians of "
        f"{clients.get('runs', MISSING)} runs after one unmeasured run each; no target.\n"
    )
    md.append(table(["output", "kubectl", "cosictl", "ratio (kubectl / cosictl)"], rows))
    md.append("")

    pl = kr.get("paged_list") or {}
    up, pg = pl.get("unpaged") or {}, pl.get("paged") or {}
    md.append(
        f"**Paged lists.** {fmt_count(pl.get('n'))} objects listed through the API by a raw HTTP "
        f"client that keeps at most one page: unpaged, and in pages of {pl.get('page', MISSING)} "
        "(`limit`/`continue`, what client-go's pager and kube-runtime's watcher send), every page "
        "from the first page's snapshot. Peak heap growth is the whole process's (server and "
        "client) during each list, over what the state already held.\n"
    )
    md.append(table(
        ["list", "time", "pages", "time per page (p50, max)", "peak heap growth"],
        [
            ["unpaged", fmt_time(up.get("ns")), "1", "–", fmt_bytes(up.get("peak_heap_growth_bytes"))],
            [f"pages of {pl.get('page', MISSING)}", fmt_time(pg.get("ns")), fmt_count(pg.get("pages")),
             f"{fmt_time(pg.get('page_p50_ns'))}, {fmt_time(pg.get('page_max_ns'))}",
             fmt_bytes(pg.get("peak_heap_growth_bytes"))],
        ],
    ))
    md.append("")
    wl = kr.get("watch_latency") or {}
    kw, ip = wl.get("kube_rs_watcher") or {}, wl.get("in_process") or {}
    md.append(
        f"**Watch latency.** {fmt_count(kw.get('samples'))} changes of one object through the "
        "Kubernetes API, one at a time (kube-rs merge patches), each timed from the patch until "
        "kube-runtime's `watcher` on the type delivers it, and until an in-process kind watch on the "
        "state delivers the same change: the two watch one change, so their difference is the "
        "watch's path to the client (serialization, the chunked HTTP stream, kube-rs' parse).\n"
    )
    md.append(table(
        ["", "in-process watch", "kube-runtime watcher", "ratio"],
        [[label, fmt_time(ip.get(k)), fmt_time(kw.get(k)), fmt_ratio(ratio(kw.get(k), ip.get(k)))]
         for label, k in (("p50", "p50_ns"), ("p99", "p99_ns"), ("max", "max_ns"))],
    ))
    md.append("")
    wr = [ratio(kw.get(k), ip.get(k)) for k in ("p50_ns", "p99_ns")]
    floor_row(
        "A change through the Kubernetes API until a kube-rs watcher sees it, p50 and p99 ≤ 3× the "
        "same change to an in-process watch",
        f"{fmt_time(kw.get('p50_ns'))} and {fmt_time(kw.get('p99_ns'))}",
        f"{fmt_time(ip.get('p50_ns'))} and {fmt_time(ip.get('p99_ns'))}",
        MISSING if None in wr else f"{fmt_ratio(wr[0])} and {fmt_ratio(wr[1])}",
        None if None in wr else max(wr) <= 3,
    )


def fuzzing_section(target_dir, summary, md):
    """The long fuzzing runs (`scripts/fuzz.sh all 600`): one JSON summary per target in
    `<target>/fuzz-report/`, written by scripts/fuzz.sh. A target without one is "not run"."""
    names = sh("bash", os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz.sh"), "list").split()
    report_dir = os.path.join(target_dir, "fuzz-report")
    if os.path.isdir(report_dir):
        names += sorted(f[:-5] for f in os.listdir(report_dir) if f.endswith(".json") and f[:-5] not in names)
    rows, runs = [], {}
    for name in names:
        try:
            with open(os.path.join(report_dir, name + ".json")) as f:
                runs[name] = json.load(f)
        except (OSError, ValueError):
            rows.append([f"`{name}`", "not run", "", "", "", "", "", ""])
            continue
        r = runs[name]
        secs, execs = r.get("seconds"), r.get("executions")
        rate_ = r.get("execs_per_sec")
        rows.append([
            f"`{name}`", r.get("tool", MISSING), MISSING if secs is None else f"{secs:,} s",
            MISSING if execs is None else f"{execs:,}", MISSING if rate_ is None else f"{rate_:,}/s",
            r.get("crashes", MISSING), r.get("hangs", MISSING), r.get("date", ""),
        ])
    long_enough = [n for n, r in runs.items()
                   if (r.get("seconds") or 0) >= 600 or (r.get("executions") or 0) >= 10_000_000]
    crashed = [n for n, r in runs.items() if r.get("crashes") != 0]
    if runs:
        figure = (f"{len(long_enough)} of {len(names)} targets run ≥ 10 min or ≥ 10 M executions; "
                  f"{sum(r.get('crashes') or 0 for r in runs.values())} crashes")
        if crashed:
            figure += " (" + ", ".join(crashed) + ")"
        ok = len(long_enough) == len(names) and not crashed
    else:
        figure, ok = "not run", None
    summary.append(("Fuzzing: every target ≥ 10 minutes or ≥ 10 M executions, 0 crashes", figure, ok))
    md.append("## Fuzzing\n")
    md.append(
        "Coverage-guided fuzzing with AFL++ (cargo-afl, stable Rust): `scripts/fuzz.sh all 600` runs "
        "each target of `fuzz/` for 600 s of fuzzing from its committed seed corpus and writes "
        f"`{report_dir}/<target>.json`. A crash is a panic or an abort: a broken invariant (a round "
        "trip, a failed request that changed the state, a 5xx answer) panics. Hangs are inputs over "
        "the per-input time limit (2 s), reported apart.\n"
    )
    md.append(table(["target", "tool", "fuzzing time", "executions", "rate", "crashes", "hangs", "run"], rows))
    md.append("")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR") or "target")
    ap.add_argument("--command", default="scripts/benchmarks.sh")
    ap.add_argument("--note", default=os.environ.get("BENCH_NOTE", ""))
    ap.add_argument("--out", default="BENCHMARKS.md")
    args = ap.parse_args()

    d = Data(args.target_dir)
    mem = d.reports["memory"]
    rt = d.reports["runtime"]
    summary = []  # (target, figure, ok)
    md = []

    # ------------------------------------------------------------------ write path
    write_rows = []
    write_ratios = []  # (case, subject rate / baseline rate or None)
    for group, label in (
        ("write_sequential", "sequential"),
        ("write_pipelined_64", "pipelined, 64 in flight"),
        ("write_pipelined_1024", "pipelined, 1024 in flight"),
    ):
        cases = [("create", "bare_actix_insert_new", "state_create")]
        if group == "write_sequential":
            cases += [
                ("update", "bare_actix_insert_existing", "state_update"),
                ("modify", "bare_actix_insert_existing", "state_modify"),
            ]
        for op, base_id, subj_id in cases:
            base = d.median_ns(group, base_id)
            subj = d.median_ns(group, subj_id)
            r = ratio(base, subj)
            ok = None if r is None else r >= 0.5
            write_ratios.append((f"{label}: {op}", r))
            write_rows.append([
                f"{label}: {op}", fmt_time(base), fmt_rate(rate(base)), fmt_time(subj),
                fmt_rate(rate(subj)), fmt_ratio(None if r is None else 100 * r, " %"), "≥ 50 %", verdict(ok),
            ])
    known = [(c, r) for c, r in write_ratios if r is not None]
    if known:
        met = sum(1 for _, r in known if r >= 0.5)
        low_case, low = min(known, key=lambda cr: cr[1])
        figure = f"{met} of {len(known)} cases; lowest {100 * low:.0f} % ({low_case})"
        write_ok = met == len(known) and len(known) == len(write_ratios)
    else:
        figure, write_ok = MISSING, None
    summary.append(("State write path ≥ 50 % of the bare-actix round-trip rate", figure, write_ok))
    md.append("## State write path\n")
    md.append(
        "One round trip = one request to the `StateActor` through the `State` handle, awaited. "
        "Baseline: bare actix `send().await` to an actor doing a `HashMap<String, i64>` insert "
        "(same unbounded mailbox as the `StateActor`; ids are formatted in both loops). "
        "`create` writes a new id each time; `update` sends back the resource the previous "
        "update returned with a new spec (version checked); `modify` runs a closure in the actor. "
        "Pipelined: `futures::future::join_all` over windows of 64 or 1024 requests. "
        "Ratio = cosi-runtime's rate as a percentage of the baseline's rate.\n"
    )
    md.append(table(
        ["case", "bare actix (time/op)", "bare actix (rate)", "cosi-runtime (time/op)",
         "cosi-runtime (rate)", "ratio", "target", ""],
        write_rows,
    ))
    md.append("")
    md.append(
        "Where the time goes (callgrind, per request): the baseline pays an actix round trip "
        "(an envelope, a mailbox node, a oneshot channel, two task wake-ups). A request through a "
        "`State` handle skips the envelope and the mailbox: it is pushed onto the state actor's "
        "request queue, which the actor drains whole each turn, and answered on one oneshot "
        "channel. On top of that a write validates the address, stamps version, owner and "
        "timestamps, publishes to its watchers and keeps the resource in its kind's collection "
        "(a hash index by id; the id order that lists come out in is brought up to date when "
        "someone lists, not on every write).\n"
    )

    # ------------------------------------------------------------------ durable state
    dur = d.reports["durable"]
    drows = []
    # Each case's median and its share of the in-memory rate at 64 in flight.
    durable, shares = {}, {}
    mem64 = d.median_ns("durable_writes", "memory_64")
    for label, bench in (
        ("in-memory state, 1 in flight", "memory_1"),
        ("in-memory state, 64 in flight", "memory_64"),
        ("durable state (redb, group commit), 1 in flight", "redb_state_1"),
        ("durable state (redb, group commit), 64 in flight", "redb_state_64"),
        ("raw redb, one transaction per write", "raw_redb_1_per_txn"),
        ("raw redb, 64 writes per transaction", "raw_redb_64_per_txn"),
        ("raw redb, the state's batch: 64 of its 1,000 keys, records of its size, per transaction",
         "raw_redb_64_distinct_per_txn"),
        ("the disk alone: the bytes of 64 such records appended in one write, synced (O_DSYNC), "
         "per 64 writes", "disk_append_64_per_sync"),
        ("the same append handed to an IO thread from an actix task, awaited, per 64 writes",
         "disk_via_thread_64_per_sync"),
        ("a bare actor's window (64 `send`s, a `HashMap` insert each, joined), then that append",
         "actor_then_disk_via_thread_64"),
    ):
        t = durable[bench] = d.median_ns("durable_writes", bench)
        if t is None and bench in ("disk_via_thread_64_per_sync", "actor_then_disk_via_thread_64"):
            continue  # runs from before these floors
        r = shares[bench] = ratio(mem64, t)
        drows.append([label, fmt_time(t), fmt_rate(rate(t)), fmt_share(r)])
    red64, raw1, fair, disk = (durable[b] for b in (
        "redb_state_64", "raw_redb_1_per_txn", "raw_redb_64_distinct_per_txn", "disk_append_64_per_sync"))
    r64, r_disk = shares["redb_state_64"], shares["disk_append_64_per_sync"]
    dur_ok = None if r64 is None else r64 >= 0.25
    dur_text = MISSING
    if r64 is not None:
        dur_text = f"{100 * r64:.0f} % ({fmt_rate(rate(red64))} vs {fmt_rate(rate(mem64))})"
        if r_disk is not None:
            dur_text += (
                f"; the disk alone, a batch's bytes appended and synced per 64 writes with no "
                f"state and no tree, reaches {100 * r_disk:.0f} %"
            )
    summary.append(("Durable writes at 64 in flight ≥ 25 % of the in-memory rate", dur_text, dur_ok))
    of_floor = ratio(r64, r_disk) if None not in (r64, r_disk) else None
    via, actor_disk = durable.get("disk_via_thread_64_per_sync"), durable.get("actor_then_disk_via_thread_64")
    # Rates relative to the disk alone: the ceiling a state on an actix thread has.
    actor_of_disk = ratio(disk, actor_disk)
    state_of_actor = ratio(actor_disk, red64)
    floor_text = MISSING if of_floor is None else f"{fmt_share(of_floor)} of the floor"
    if None not in (actor_of_disk, state_of_actor):
        floor_text += (
            f" (a bare actor's window of 64 then the same append through an IO thread, no state "
            f"at all: {fmt_share(actor_of_disk)} of the floor; the state, "
            f"{fmt_share(state_of_actor)} of that)"
        )
    floor_row(
        "Durable writes at 64 in flight ≥ 75 % of the disk-alone floor (rates)",
        MISSING if red64 is None else f"{fmt_rate(rate(red64))} ({fmt_share(r64)} of in-memory)",
        MISSING if disk is None else f"{fmt_rate(rate(disk))} ({fmt_share(r_disk)} of in-memory)",
        floor_text,
        None if of_floor is None else of_floor >= 0.75,
    )
    reopen_ns = get(dur, "reopen_ns")
    n_reopen = get(dur, "resources") or 0
    reopen_ok = None if reopen_ns is None else reopen_ns < 0.5e9 * n_reopen / 100_000
    summary.append((
        f"Reopen of {n_reopen:,} resources < 0.5 s per 100,000",
        fmt_time(reopen_ns),
        reopen_ok,
    ))
    md.append("## Durable state (redb)\n")
    md.append(
        "Acknowledged writes: a `modify` that changes the spec of one of 1,000 resources, awaited; "
        "with 64 in flight, `join_all` over windows of 64. The durable state keeps the namespace in a "
        "redb file and commits the writes of one mailbox drain as one batch on its own thread: one "
        "record appended to its write-ahead log in one write synced as it completes (O_DSYNC) before "
        "the reply, and one "
        "redb transaction without a sync of its own (a synced redb commit, a checkpoint, once per "
        "8 MiB of log). Raw redb: keys of the form "
        "`default NUL Ints NUL r<k>` (k cycling over 1,000) and a 64-byte value, written with one "
        "transaction per write (what every write would cost without group commit) and 64 writes per "
        "transaction; and the state's own batch, raw: its keys (64 distinct ones of 1,000 per "
        "transaction, in its order, in a table that holds all 1,000) and records of the size it "
        f"stores ({fmt_bytes(get(dur, 'write_record_bytes'))}: the revision and the resource's JSON), "
        "one synced redb transaction per batch (what the state's batch cost before its log). The "
        "disk alone: the bytes of a batch of 64 such "
        "records written at once, synced as the write completes (O_DSYNC, as the log writes), to a "
        "file allocated and synced beforehand: what any store that writes each batch once, as one "
        "contiguous append, would pay before any work of its own. A state that answers from an "
        "actix thread cannot block that thread on the disk: the same append handed to an IO thread "
        "and awaited from an actix task (a channel, the write, a oneshot reply) is what it pays at "
        "least, and a bare actor's window of 64 `send`s before it is the least of the rest of a "
        "window: no state at all, only actix's round trips. Share = the rate as a "
        "percentage of the in-memory state's rate at 64 in flight, measured in the same run.\n"
    )
    md.append(table(["case", "time/write", "rate", "share of in-memory (64)"], drows))
    md.append("")
    if raw1 is not None and red64 is not None:
        md.append(
            f"Group commit: {fmt_ratio(ratio(raw1, red64))} the rate of one transaction per write; "
            f"the state's batch of 64 as one synced raw redb transaction reaches "
            f"{fmt_share(shares['raw_redb_64_distinct_per_txn'])} "
            f"of the in-memory rate, and the state, logged, "
            f"{fmt_ratio(ratio(fair, red64))} "
            f"that transaction's rate: a synced redb commit costs {fmt_time(raw1)} on this disk (one "
            "raw transaction of one write). "
        )
        if r_disk is not None:
            md.append(
                f"The disk alone, a batch's bytes appended and synced with no tree and no state "
                f"({fmt_time(64 * disk)} per batch of 64), reaches "
                f"{fmt_share(r_disk)} of the in-memory rate: the most that any store "
                "which makes each batch of 64 durable in one write before it answers could reach "
                "on this disk. "
            )
        if None not in (via, actor_disk, mem64):
            md.append(
                f"\n\nWhere a window of 64 goes (times per 64 writes): the disk alone takes "
                f"{fmt_time(64 * disk)}; handed to an IO thread from an actix task, "
                f"{fmt_time(64 * via)}; after a bare actor's window of 64 `send`s, "
                f"{fmt_time(64 * actor_disk)}, which is {fmt_share(actor_of_disk)} of the "
                f"disk-alone rate. The writes of a window wait for its sync, and the next window "
                f"starts only once they are answered, so the actor's share and the sync add up: "
                f"with no state at all, 64 in flight reach {fmt_share(actor_of_disk)} of the "
                f"floor. The in-memory state's window takes {fmt_time(64 * mem64)} "
                f"(the bare actor's: {fmt_time(64 * (actor_disk - via))}), and the durable "
                f"state's {fmt_time(64 * red64)}: {fmt_share(state_of_actor)} of the rate of the "
                f"bare actor and the append through a thread. "
            )
    md.append(
        f"Reopen: opening a state file of {n_reopen:,} resources and loading it into the cache took "
        f"{fmt_time(reopen_ns)} (median of 5); the file holds "
        f"{fmt_bytes(get(dur, 'bytes_per_resource'))} per resource "
        f"({fmt_bytes(get(dur, 'file_bytes'))} in all; resources of a small spec, one label).\n"
    )

    # ------------------------------------------------------------------ shared state (etcd)
    ed = d.reports["etcd"]
    e = lambda bench: d.median_ns("etcd_writes", bench)  # noqa: E731
    pct = fmt_share
    per_s = lambda ns: MISSING if not ns else f"{1e9 / ns:,.0f} /s"  # noqa: E731
    erows = []
    for label, bench, base in (
        ("etcd state: create, 1 in flight", "state_create_1", "raw_put_1"),
        ("etcd state: create, 64 in flight", "state_create_64", "raw_put_64"),
        ("etcd state: modify, 1 in flight", "state_modify_1", "raw_put_1"),
        ("etcd state: modify, 64 in flight", "state_modify_64", "raw_put_64"),
        ("raw etcd-client: put, 1 in flight", "raw_put_1", "raw_put_1"),
        ("raw etcd-client: put, 64 in flight", "raw_put_64", "raw_put_64"),
        ("raw etcd-client: the state's create transaction (compare, put), 64 in flight", "raw_txn_64", "raw_put_64"),
        ("raw etcd-client: the same transaction without its compare, 64 in flight", "raw_txn_no_compare_64", "raw_put_64"),
        ("raw etcd-client: 8 such creates per transaction, 64 keys in flight", "raw_txn_8_keys_64", "raw_put_64"),
    ):
        t = e(bench)
        erows.append([label, fmt_time(t), per_s(t), pct(ratio(e(base), t))])
    at64 = [ratio(e("raw_put_64"), e(f"state_{op}_64")) for op in ("create", "modify")]
    etcd_ok = None if None in at64 else min(at64) >= 0.7
    summary.append((
        "etcd state writes at 64 in flight ≥ 70 % of raw etcd-client puts",
        MISSING if None in at64 else f"create {100 * at64[0]:.0f} %, modify {100 * at64[1]:.0f} %",
        etcd_ok,
    ))
    md.append("## Shared state (etcd)\n")
    md.append(
        f"A single-node etcd the bench starts on loopback ({get(ed, 'etcd_version') or 'etcd'}; its data "
        "directory on this machine's disk, so every commit is an fsync). Acknowledged writes: through an etcd `State`, `create`s of new "
        "resources and `modify`s that change one of 1,000 existing resources (64 in flight always "
        "touch distinct ones); the writes of one pass of the state actor go as one transaction "
        "(group commit), each nested in it with its own compare on its key's revision, and each "
        "is answered once the state's change feed has applied it. Baseline: raw `etcd-client` puts of keys of the same "
        "shape and values of the same size "
        f"({get(ed, 'value_bytes') or MISSING} bytes, the JSON the state stores), 1 or 64 in flight "
        "(`join_all` over windows), on the same etcd in the same run. The raw transactions show what "
        "etcd itself charges: the state's create request as such, the same without its compare, and "
        "8 creates per transaction. Ratio = the rate as a percentage of raw puts at the same number "
        "in flight.\n"
    )
    md.append(table(["case", "time/write", "rate", "ratio to raw puts"], erows))
    md.append("")
    txn_share = ratio(e("raw_put_64"), e("raw_txn_64"))
    create_vs_txn = ratio(e("raw_txn_64"), e("state_create_64"))
    md.append(
        f"Target: the state at 64 in flight ≥ 70 % of raw puts — {verdict(etcd_ok)} "
        f"(create {pct(at64[0])}, modify {pct(at64[1])}). A raw transaction of the state's shape runs "
        f"at {pct(txn_share)} of raw puts on this etcd "
        f"({pct(ratio(e('raw_put_64'), e('raw_txn_no_compare_64')))} without its compare), and the "
        f"state's creates at {pct(create_vs_txn)} of that transaction. etcd charges more for a "
        "transaction than for a put (etcd 3.4 copies its uncommitted write buffer for every "
        "transaction, inside its single apply loop; 3.5 caches that copy); several writes per "
        f"transaction amortize it (8 per transaction: {pct(ratio(e('raw_put_64'), e('raw_txn_8_keys_64')))} "
        "of raw puts), which is what the state's group commit does with the writes of each pass. "
        "etcd runs on the same cores as the bench, so these figures move with the machine's load.\n"
    )
    lat_state = get(ed, "watch_latency", "state") or {}
    lat_raw = get(ed, "watch_latency", "raw") or {}
    lat_txn = get(ed, "watch_latency", "raw_txn") or {}
    md.append(
        f"Watch latency ({get(ed, 'samples') or MISSING} writes of each kind, one at a time, taken in "
        "turns): from the start of a "
        "`modify` through one `State` until a kind watch on a **second** `State` on the same etcd "
        "delivers it (write transaction, etcd's watch event to the second state's change feed, its "
        "cache and watch fan-out). Baseline: from a raw put until a raw etcd watch on another client "
        "delivers it. Beside it, a raw transaction shaped like the state's write (a compare on the "
        "key's revision, then the put) until the raw watch delivers it: what etcd charges a "
        "conditional write.\n"
    )
    md.append(table(
        ["", "raw put → raw watch", "raw transaction → raw watch", "State → watch on another State",
         "ratio to raw put", "ratio to raw transaction"],
        [[label, fmt_time(lat_raw.get(k)), fmt_time(lat_txn.get(k)), fmt_time(lat_state.get(k)),
          fmt_ratio(ratio(lat_state.get(k), lat_raw.get(k))),
          fmt_ratio(ratio(lat_state.get(k), lat_txn.get(k)))]
         for label, k in (("p50", "p50_ns"), ("p99", "p99_ns"), ("max", "max_ns"))],
    ))
    p99_ratio = ratio(lat_state.get("p99_ns"), lat_raw.get("p99_ns"))
    txn_ratio = ratio(lat_txn.get("p99_ns"), lat_raw.get("p99_ns"))
    floor_row(
        "etcd: a write through one `State` until a watch on a second `State` delivers it, p99 ≤ 2× "
        "raw put → raw watch p99",
        fmt_time(lat_state.get("p99_ns")),
        fmt_time(lat_raw.get("p99_ns")) + (
            "" if txn_ratio is None else
            f" (a raw transaction of the state's shape: {fmt_time(lat_txn.get('p99_ns'))}, "
            f"{fmt_ratio(txn_ratio)})"
        ),
        fmt_ratio(p99_ratio),
        None if p99_ratio is None else p99_ratio <= 2,
    )
    md.append("")

    # ------------------------------------------------------------------ KRM functions
    krows = []
    for label, bench in (
        ("cluster-config (upstream), one call", "cluster-config"),
        ("configmap-actuator (downstream), one call", "configmap-actuator"),
        ("package-summary (wildcard), one call", "package-summary"),
        ("the three, piped in memory", "pipe_in_memory"),
        ("the three as exec binaries, piped", "exec_pipe"),
        ("in-process render on the engine (to convergence)", "render_in_process"),
    ):
        t = d.median_ns("krm", bench)
        n = d.elements("krm", bench)
        per = None if t is None or not n else t / n
        krows.append([label, f"{n:,}" if n else MISSING, fmt_time(t), fmt_time(per)])
    md.append("## KRM functions (fn-runtime)\n")
    md.append(
        "A generated package of 5,000 `Cluster`s plus a Kptfile and a `Site` (10,003 items once "
        "rendered) through the three example functions of `examples/krm/`: each function called "
        "once on the list it sees in the pipe (parse, validate, run, emit), the three piped in "
        "memory, the three exec binaries piped through real processes, and the in-process render "
        "where each function is a controller and the package converges on the engine "
        "(`benches/krm.rs`).\n"
    )
    kpt = d.reports["krm"].get("kpt") or {}
    kitems = kpt.get("items")
    for label, key in (
        ("real `kpt fn render --allow-exec`, the three exec binaries in its pipeline (files, median of 3)", "kpt_fn_render_ns"),
        ("in-process `render_dir` (files, median of 3)", "render_dir_ns"),
    ):
        t = kpt.get(key)
        per = None if t is None or not kitems else t / kitems
        krows.append([label, f"{kitems:,}" if kitems else MISSING, fmt_time(t), fmt_time(per)])
    md.append(table(["case", "items", "time", "per item"], krows))
    md.append("")
    in_process, exec_pipe = d.median_ns("krm", "render_in_process"), d.median_ns("krm", "exec_pipe")
    krm_ratio = ratio(in_process, exec_pipe)
    files, differing = kpt.get("files"), kpt.get("files_differing")
    if kpt:
        md.append(
            f"The same package as files, with comments (a head comment in each file, line comments on "
            f"fields), rendered by kpt {kpt.get('version') or ''} and by `render_dir`, each on a fresh "
            f"copy: {files - differing:,} of {files:,} rendered files byte-identical"
            + (f" (first that differs: `{kpt.get('first_differing')}`)." if differing else ", comments included.")
            + "\n"
        )
    else:
        md.append("kpt was not on PATH (or the exec binaries were not built): no comparison with kpt in this run.\n")
    krm_ok = krm_ratio is not None and krm_ratio <= 1.0 and kpt.get("identical") is True
    summary.append((
        "KRM: in-process render of the 10,003-item package ≤ the three exec binaries piped, "
        "and byte-identical to `kpt fn render --allow-exec` (comments included)",
        f"{fmt_ratio(krm_ratio)} ({fmt_time(in_process)} vs {fmt_time(exec_pipe)}); "
        + (f"{files - differing:,} of {files:,} files identical" if kpt else "kpt not run"),
        krm_ok,
    ))

    kubernetes_section(d, summary, md)
    cluster_section(d, summary, md)
    sharded_section(d, summary, md)

    # ------------------------------------------------------------------ soak
    soak = d.reports["soak"]
    if soak:
        failures = soak.get("failures") or []
        growth = soak.get("growth_mib_per_million")
        soak_ok = not failures and growth is not None and growth <= 0.1
        summary.append((
            f"Soak ({soak.get('secs', 0) // 60} min): verdict PASS, memory growth ≤ 0.1 MiB per million mutations after the first minute",
            f"{'PASS' if not failures else 'FAIL'}, {MISSING if growth is None else f'{growth:+.4f} MiB'} per million",
            soak_ok,
        ))
        md.append(f"## Soak: {soak.get('secs', 0) // 60} minutes of churn\n")
        md.append(
            f"`cargo run --release --example soak -- --secs {soak.get('secs')} --seed {soak.get('seed')}`: "
            f"{soak.get('lanes')} feeder lanes over {soak.get('live')} reused ids, a plain and a queue "
            "controller with strong inputs and finalizers, seeded panics and errors, watch and queue churn.\n"
        )
        md.append(table(
            ["mutations", "per second", "reconciles", "panics", "errors", "RSS 1 min", "RSS 5 min",
             "RSS 10 min", "growth after 1 min", "verdict"],
            [[f"{soak.get('mutations', 0):,}", f"{soak.get('mutations_per_sec', 0):,.0f}",
              f"{soak.get('reconciles', 0):,}", f"{soak.get('panics', 0):,}", f"{soak.get('errors', 0):,}",
              fmt_bytes(soak.get("rss_1min")), fmt_bytes(soak.get("rss_5min")), fmt_bytes(soak.get("rss_10min")),
              MISSING if growth is None else f"{growth:+.4f} MiB / million mutations",
              "PASS" if not failures else f"FAIL ({len(failures)})"]],
        ))
        md.append("")

    # ------------------------------------------------------------------ fan-out
    fan_base = d.median_ns("fanout", "bare_actix_do_send")
    fan_subj = d.median_ns("fanout", "state_watch")
    fan_ok = None if fan_subj is None else fan_subj < 2e6
    summary.append(("Fan-out of one change to 1,000 subscribers < 2 ms", fmt_time(fan_subj), fan_ok))
    md.append("## Watch fan-out to 1,000 subscribers\n")
    md.append(
        "Time from the write (a `modify` of one resource) until all 1,000 subscriber actors, each "
        "with its own kind watch, have handled the event. Baseline: `do_send` of one message to "
        "each of 1,000 bare actix actors and waiting until all have handled it.\n"
    )
    md.append(table(
        ["", "bare actix", "cosi-runtime", "ratio (time)", "per subscriber (cosi)", "target", ""],
        [["one change → 1,000 handled", fmt_time(fan_base), fmt_time(fan_subj),
          fmt_ratio(ratio(fan_subj, fan_base)), fmt_time(None if fan_subj is None else fan_subj / 1000),
          "< 2 ms", verdict(fan_ok)]],
    ))
    md.append("")

    # ------------------------------------------------------------------ chain
    chain = get(rt, "chain") or {}
    n = chain.get("n", 10_000)
    objects = chain.get("objects_processed", 2 * n)
    chain_base = d.median_ns("chain", "bare_actix")
    rows = []
    variant_text = {
        "preloaded": "**plain (headline)**: integers created first, then both controllers registered; clock from registration to settled",
        "preloaded_join_all_64": "same, each reconcile issuing its modifies 64 at a time (`join_all`)",
        "preloaded_skip_unchanged": "same, each reconcile also lists its outputs and skips the modifies that would change nothing",
        "preloaded_remember_writes": "same, each controller instance remembering what it last wrote (its outputs are exclusive) and skipping the `modify` when the value is unchanged",
        "live": "controllers registered first; clock from the first of the 10,000 creates (1024 in flight) to settled",
        "queue_preloaded": "**per object**: two queue controllers (concurrency 16), each reconcile gets one input and `modify`s its output; integers first, clock from registration",
        "queue_live": "per object, controllers first; clock from the first create",
    }
    headline = None
    for v in ("preloaded", "preloaded_join_all_64", "preloaded_skip_unchanged", "preloaded_remember_writes", "live", "queue_preloaded", "queue_live"):
        t = d.median_ns("chain", v)
        if v == "preloaded":
            headline = t
        probe = get(chain, "variants", v, "controllers") or []
        calls = " / ".join(str(c.get("reconcile_calls")) for c in probe) or MISSING
        writes = " / ".join(str(c.get("writes")) for c in probe) or MISSING
        rows.append([
            f"`{v}`: {variant_text[v]}", fmt_time(t), fmt_rate(rate(t, objects)),
            fmt_ratio(ratio(t, chain_base)), calls, writes,
        ])
    rows.append([
        "bare actix baseline: one task lists the integers and `send().await`s each string, "
        "then lists the strings and `send().await`s each sentence, to one actor holding `HashMap`s",
        fmt_time(chain_base), fmt_rate(rate(chain_base, objects)), "1.00×", "–", "–",
    ])
    bare_live = d.median_ns("chain", "bare_actix_live")
    rows.append([
        "bare actix, integers created live (`bare_actix_live`): the same, after the integers are "
        "sent to the actor with `send().await` (1,024 in flight), clock from the first: the floor of the "
        "`*_live` variants",
        fmt_time(bare_live), fmt_rate(rate(bare_live, objects)),
        fmt_ratio(ratio(bare_live, chain_base)), "–", "–",
    ])
    chain_ok = None if headline is None else headline <= 35e6
    summary.append((f"Chain, N = {n:,}: aim ≤ 35 ms", fmt_time(headline), chain_ok))
    md.append(f"## Reconcile chain, N = {n:,}\n")
    md.append(
        f"{n:,} integer resources through two controllers, integer → string (its decimal value) → "
        f"sentence (\"<string> sentence\"), until `runtime.settled()`. A *reconcile* counts one object "
        f"processed, so one run is {objects:,} reconciles. The controllers are plain `Controller`s, one "
        "per level: a lean transform without finalizers (weak input on the source type, exclusive "
        "output), whose reconcile lists **all** inputs (reading the specs in place: `cx.list` + `spec_ref`) and `cx.modify`s each output. Every run checks "
        f"that all {n:,} sentences are right. Ratio = time relative to the bare actix baseline. The "
        "controller columns come from one extra run per variant (runtime metrics): reconcile calls "
        "and the writes that changed something, of IntToStr / StrToSentence (a `modify` that "
        "changes nothing writes nothing but is still a round trip; for the plain variants it is "
        "the difference between the modify calls and these writes). The `queue_*` variants are "
        "the per-object form kube-runtime runs (one reconcile per object; the next section "
        "compares both forms with it).\n"
    )
    md.append(table(
        ["variant", "total (median)", "reconciles/s", "ratio to bare actix", "reconcile calls", "writes that changed something"],
        rows,
    ))
    md.append("")
    md.append(
        "Every reconcile lists all of its inputs, so each reconcile call costs O(N) however little "
        "changed; the reconcile-call column shows how often a controller re-ran while its upstream "
        "was still writing (changes that land during a reconcile collapse into one more).\n"
    )
    md.append(f"Target: aim ≤ 35 ms for the plain variant — {verdict(chain_ok)}.\n")

    kube_peer_section(d, rt, args.target_dir, summary, md)
    instructions_section(args.target_dir, d, md)
    execution_section(d, summary, md)

    # ------------------------------------------------------------------ queue
    qn = 1000
    q = {k: d.median_ns("queue", k) for k in ("baseline_add_get", "add_get_done", "baseline_add_only", "add_only")}
    per = {k: None if v is None else v / qn for k, v in q.items()}
    queue_ok = None if per["add_get_done"] is None else per["add_get_done"] < 500
    summary.append(("Queue add+get+done < 0.5 µs", fmt_time(per["add_get_done"]), queue_ok))
    md.append("## Work queue\n")
    md.append(
        "Per key, over 1,000 distinct resource pointers per iteration (the shape of "
        "controller-runtime's `BenchmarkAddGetDone` and `BenchmarkAddOnly`). Baseline: the least a "
        "deduplicating FIFO does — a `HashSet` for membership and a `VecDeque` for order, with no "
        "delays, per-key exclusion or backoff. controller-runtime's priority queue is quoted as an "
        "external reference (reported in its PR #3471 on a laptop CPU; not run here).\n"
    )
    md.append(table(
        ["operation", "baseline FIFO", "cosi-runtime `WorkQueue`", "ratio (time)", "controller-runtime (reported)", "target", ""],
        [
            ["add + get + done", fmt_time(per["baseline_add_get"]), fmt_time(per["add_get_done"]),
             fmt_ratio(ratio(per["add_get_done"], per["baseline_add_get"])), "≈ 1.05 µs", "< 0.5 µs", verdict(queue_ok)],
            ["add alone", fmt_time(per["baseline_add_only"]), fmt_time(per["add_only"]),
             fmt_ratio(ratio(per["add_only"], per["baseline_add_only"])), "≈ 91 ns", "–", ""],
        ],
    ))
    md.append("")

    # ------------------------------------------------------------------ coalescing
    co = get(rt, "coalescing") or {}
    updates = co.get("updates", 100_000)
    small = co.get("small_updates", 2_048)
    co_base = d.median_ns("coalescing", "no_subscriber")
    co_subj = d.median_ns("coalescing", "busy_controller")
    busy = co.get("busy") or {}
    busy_small = co.get("busy_small") or {}
    rec = busy.get("reconciles")
    g_big = busy.get("peak_heap_growth_bytes")
    g_small = busy_small.get("peak_heap_growth_bytes")
    flat = None if g_big is None or g_small is None else g_big <= g_small + 4096
    rec_ok = None if rec is None else rec <= 2
    summary.append((f"Coalescing: {updates:,} updates → ≤ 2 reconciles", MISSING if rec is None else f"{rec} reconciles", rec_ok))
    summary.append(("Coalescing: flat memory", f"peak heap growth {fmt_bytes(g_big)} ({updates:,} updates) vs {fmt_bytes(g_small)} ({small:,})", flat))
    md.append(f"## Coalescing: {updates:,} updates to the input of a busy controller\n")
    md.append(
        f"A controller with one weak input whose reconcile waits on a gate (as in "
        f"`tests/runtime/coalescing.rs`). The gate is closed, then {updates:,} sequential `modify`s of "
        "the input land while its reconcile is blocked; then the gate opens and the runtime settles. "
        "Reconciles counted from the runtime metrics (the blocked one included). Peak heap = growth of "
        "live heap bytes (counting global allocator) over the level before the burst. Baselines: the "
        f"same burst with no controller watching (time), and a {small:,}-update burst (memory flatness: "
        "within 4 KiB).\n"
    )
    md.append(table(
        ["figure", "baseline", "cosi-runtime", "ratio", "target", ""],
        [
            [f"burst time, {updates:,} updates", f"{fmt_time(co_base)} (no watcher)", fmt_time(co_subj),
             fmt_ratio(ratio(co_subj, co_base)), "–", ""],
            ["time per update", fmt_time(None if co_base is None else co_base / updates),
             fmt_time(None if co_subj is None else co_subj / updates), fmt_ratio(ratio(co_subj, co_base)), "–", ""],
            ["reconciles triggered", f"{updates:,} (one per update, uncoalesced)",
             MISSING if rec is None else str(rec),
             MISSING if rec is None else f"{rec} / {updates:,}", "≤ 2", verdict(rec_ok)],
            ["change notifications seen", "–", str(busy.get("wakeups", MISSING)), "–", "–", ""],
            ["peak heap growth during the burst", f"{fmt_bytes(g_small)} ({small:,} updates)", fmt_bytes(g_big),
             fmt_ratio(ratio(g_big, g_small)), "flat", verdict(flat)],
            ["heap retained after settling", fmt_bytes(busy_small.get("retained_heap_bytes")),
             fmt_bytes(busy.get("retained_heap_bytes")), "–", "–", ""],
            ["peak heap growth, no watcher", "–", fmt_bytes(get(co, "no_subscriber", "peak_heap_growth_bytes")), "–", "–", ""],
        ],
    ))
    md.append("")

    # ------------------------------------------------------------------ memory
    resources = mem.get("resources")
    spec_bytes = mem.get("spec_bytes")
    st = mem.get("state") or {}
    bt = mem.get("baseline_btreemap") or {}
    over = st.get("overhead_per_resource")
    mem_ok = None if over is None else over <= 250
    summary.append(("≤ 250 bytes of overhead per stored resource", MISSING if over is None else f"{over:.0f} B", mem_ok))
    md.append(f"## Memory per stored resource ({resources:,} resources)\n" if resources else "## Memory per stored resource\n")
    md.append(
        f"{resources:,} small resources created through the state (1024 in flight): namespace "
        f"`default`, id `r0000000`…  ({mem.get('id_bytes')} bytes), no labels, a spec of "
        f"{spec_bytes} bytes (`IntSpec(i64)`). Bytes = growth of live heap bytes requested from the "
        "allocator (counting global allocator; malloc's own rounding and headers not included). "
        "Overhead = bytes per resource − spec bytes. Baseline: the same ids and specs in a plain "
        "`BTreeMap<String, IntSpec>`.\n" if resources else "(no memory report found)\n"
    )
    md.append(table(
        ["figure", "baseline `BTreeMap`", "cosi-runtime", "ratio", "target", ""],
        [
            ["heap bytes per resource", f"{bt.get('bytes_per_resource', 0):.1f} B", f"{st.get('bytes_per_resource', 0):.1f} B",
             fmt_ratio(ratio(st.get("bytes_per_resource"), bt.get("bytes_per_resource"))), "–", ""],
            ["overhead beyond the spec", f"{bt.get('overhead_per_resource', 0):.1f} B", f"{st.get('overhead_per_resource', 0):.1f} B",
             fmt_ratio(ratio(st.get("overhead_per_resource"), bt.get("overhead_per_resource"))), "≤ 250 B", verdict(mem_ok)],
            ["total heap", fmt_bytes(bt.get("heap_bytes")), fmt_bytes(st.get("heap_bytes")), "–", "–", ""],
            ["peak heap during the load", "–", fmt_bytes(st.get("heap_peak_bytes")), "–", "–", ""],
            ["RSS growth (indicative: reuses freed pages)", fmt_bytes(bt.get("rss_bytes")), fmt_bytes(st.get("rss_bytes")), "–", "–", ""],
        ],
    ))
    sizes = mem.get("sizes") or {}
    if sizes:
        md.append("\nType sizes (stack part): " + ", ".join(f"`{k}` {v} B" for k, v in sizes.items()) + ".")
    md.append("")

    # ------------------------------------------------------------------ supervisor
    md.append("## Supervisor: panic → fresh instance's first reconcile\n")
    md.append(
        "A controller panics inside its reconcile (the instant is taken just before `panic!`); the "
        "runtime catches it, waits the backoff, builds a fresh instance from the factory and runs "
        "it; the time stops at the start of the fresh instance's reconcile. Backoff: initial = max "
        "= the configured value, multiplier 1, jitter 0. Baseline: a bare actix actor's "
        "`ctx.run_later(backoff)`, from arming to the callback — what the platform's timer alone "
        "costs (tokio's timer works in millisecond ticks, so every delay, even zero, waits for a "
        "tick: about one tick more than configured).\n"
    )
    rows = []
    for label, backoff_ns in (("1ms", 1e6), ("0ms", 0.0)):
        base_id = f"bare_actix_run_later_{label}"
        subj_id = f"panic_to_first_reconcile_{label}"
        base = d.median_ns("supervisor", base_id)
        subj = d.median_ns("supervisor", subj_id)
        w = [d.median_halfwidth_ns("supervisor", i) for i in (base_id, subj_id)]
        noise = "" if None in w else f" (± {fmt_time(w[0] + w[1])})"
        rows.append([
            label.replace("ms", " ms"), fmt_time(base), fmt_time(subj),
            fmt_ratio(ratio(subj, base)),
            fmt_time(None if subj is None else subj - backoff_ns),
            fmt_time(None if subj is None or base is None else subj - base) + noise,
        ])
    md.append(table(
        ["configured backoff", "bare actix `run_later`", "panic → first reconcile", "ratio",
         "beyond the configured backoff", "beyond the baseline (± sum of the medians' 95 % CI half-widths)"],
        rows,
    ))
    md.append("")
    md.append(
        "The 0 ms row takes the configured delay out: what remains is the timer wheel's tick plus "
        "the supervisor's own work (catching the panic, the factory, scheduling the reconcile). "
        "The last column is the supervisor's cost beyond a bare actix timer of the same delay.\n"
    )

    # ------------------------------------------------------------------ fuzzing
    fuzzing_section(args.target_dir, summary, md)
    cold = d.reports["cold_build"]
    secs = cold.get("seconds")
    floor_row(
        "The README's first command (`cargo run --release -p netplane`), cold build on this machine "
        "(fresh clone, empty target, dependencies downloaded): ≤ 2 min",
        MISSING if secs is None else f"{secs:.0f} s, {cold.get('crates')} crates (at `{cold.get('commit')}`)",
        "–",
        "–",
        None if secs is None else secs <= 120,
    )

    # ------------------------------------------------------------------ assemble
    m = machine()
    commit = sh("git", "rev-parse", "--short", "HEAD")
    # Any change but the report itself: then no commit holds the sources measured.
    # Unstripped: strip() would eat the leading blank of " M path".
    porcelain = sh("git", "status", "--porcelain", strip=False)
    changes = [l for l in porcelain.splitlines() if l[3:] != args.out]
    dirty = bool(changes) or not commit
    if dirty:
        print("bench_report: UNCOMMITTED CHANGES: the report says so instead of naming a commit", file=sys.stderr)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load_start, load_end = load_averages(args.target_dir)
    soak_secs = Data(args.target_dir).reports["soak"].get("secs", "?")
    head = ["# Benchmarks\n"]
    if dirty:
        head.append(
            "> **UNCOMMITTED CHANGES.** This report was generated from a working tree with "
            f"uncommitted changes ({len(changes)} paths), so no commit reproduces it. Commit, then "
            "run `scripts/benchmarks.sh` again.\n"
        )
    head += [
        f"Generated {now} from {'a working tree with uncommitted changes' if dirty else f'commit `{commit}`'} by `{args.command}`, which runs "
        "`cargo bench --bench state --bench runtime --bench queue --bench execution --bench durable --bench krm` and "
        "`cargo bench --features etcd --bench etcd` and `cargo bench --features etcd --bench sharded` and "
        "`cargo bench --features kubernetes-api,admin --bench kubernetes` "
        "and `cargo bench --features kubernetes,kubernetes-api --bench cluster` "
        "(release), the kube-runtime peer (`cargo run --release --manifest-path "
        f"benches/kube-peer/Cargo.toml`), the soak (`cargo run --release --example soak -- --secs {soak_secs}`, "
        "`SOAK_SECS`, 600 by default) and then "
        "`python3 scripts/bench_report.py`. Every figure below comes from that one run; each "
        "subject was measured next to its baseline in the same process (the kube-runtime peer, in "
        "its own process of the same run). Times are criterion "
        "medians (per iteration); counts and bytes are from the runs the bench binaries report "
        f"in `{os.path.join(args.target_dir, 'bench-report')}/*.json`.\n",
    ]
    head.append(
        f"Machine: {m['cores']} cores, {m['cpu_model']}. Load average (1, 5, 15 min) at the start "
        f"of the run: {load_start or MISSING}; when this report was written: {load_end or MISSING}.\n"
    )
    busy = load_start and float(load_start.split()[0]) > 0.5 * (m["cores"] or 1)
    if busy:
        head.append("> **Busy machine**: the 1-minute load at the start was above half the cores; other work shared the CPUs.\n")
    if args.note:
        head.append(f"> Note: {args.note}\n")
    head.append("## Targets against the machine's floors\n")
    head.append(
        "Each target here is stated against a floor measured in the same run: what the machine "
        "itself allows for the same work (sections below say how each floor is measured).\n"
    )
    head.append(table(["target", "measured", "floor", "ratio", ""],
                      [[t, s_, f, r, verdict(ok)] for t, s_, f, r, ok in FLOORS]))
    head.append("")
    head.append("## Targets\n")
    head.append(table(["target", "measured", ""], [[t, f, verdict(ok)] for t, f, ok in summary]))
    head.append("")
    tail = [
        "## Machine\n",
        f"- `nproc`: {m['nproc']}",
        f"- memory: {m['memory']}",
        f"- OS: {m['os']}",
        f"- {m['cargo']}",
        "",
        "`lscpu` (excerpt):\n",
        "```",
        m["lscpu"],
        "```",
        "",
        "`rustc -vV`:\n",
        "```",
        m["rustc"],
        "```",
        "",
        "## How to run\n",
        "```sh",
        "scripts/benchmarks.sh          # full run (a few minutes on 2 cores), rewrites BENCHMARKS.md",
        "cargo test --benches           # quick smoke pass (what CI runs): scaled down, asserts no timings",
        "cargo test --features etcd --bench etcd   # the same for the etcd bench (needs protoc and etcd)",
        "cargo test --features kubernetes-api,admin --bench kubernetes   # the same for the Kubernetes API bench",
        "scripts/fuzz.sh all 600        # the Fuzzing section: 10 minutes of AFL++ per target (a separate run)",
        "python3 scripts/instructions.py --quick   # instructions per object at small sizes (needs valgrind)",
        "```",
        "",
        "Allocation counting: both bench binaries install a counting global allocator (one relaxed "
        "atomic add and one relaxed load per allocation), which the baselines pay as much as the subjects.",
        "",
    ]
    if d.missing:
        tail.append("Missing inputs (these figures show n/a):\n")
        tail += [f"- `{p}`" for p in sorted(set(d.missing))]
        tail.append("")
    text = "\n".join(head + md + tail)
    with open(args.out, "w") as f:
        f.write(text)
    print(f"wrote {args.out}" + (f" ({len(set(d.missing))} inputs missing)" if d.missing else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
