#!/usr/bin/python3
"""Where a round trip's time goes, from a timeline that ag-bench --timeline=FILE wrote
(FILE.MODE.json; docs/BENCHMARKS.md, "Where a wait's time goes").

    /usr/bin/python3 apps/ag-bench/stages.py FILE.MODE.json [--wait read|sync] [--board] [--last N]
                                             [--show K] [--part PART ...]

Each of the user's waits (the --wait spans, "read" by default: ag-bench's round trip is
`(a + b).to_vector()`; a node's sync round trip is "sync") on the controller's track "user's
waits" is one round trip: the user's thread submitted, and waits for the answer. For each, the script
finds what happened in between, by the clock every process shares (CLOCK_MONOTONIC):

  to executor   from the wait's start to the start of the executor's next "dispatch"
  to child      from there to the start of the next "batch" span of a child: the dispatch
                (placing, encoding, writing the broadcast), its transit, the child's wake-up and
                its decoding. The dispatch span's own length is shown apart ("dispatch span"): on
                a busy machine the child may start before the executor's span ends
  batch         the child's batch: its launches (and the synchronize, when it is inside)
  synchronize   from the batch's end to the end of the child's next "synchronize" span (a child
                on the sockets synchronizes once its socket holds nothing more), when it is apart
  to puller     from there to the puller's next "done" instant (the report's transit).
                With --board (the shared-memory path, thread mode) the children publish on the
                board themselves and the puller is not on the wait's way: no such stage
  to user       from there (or from the batch's end) to the wait's end (the board, the user's
                wake-up)

--show K also lists every event from 50 us before the K-th of those waits to its end, each
process's and track's, in order (the executor's instants "submit", "ticket", "flush", "flush held"
and "done" say when it took what: the time before one is a wake-up or other work).

--part adds the events of timeline part files (one event per line), such as those of a node's
children that ag-bench --mode=node --timeline=FILE keeps in FILE.node-children/ (ag-node
--timeline-dir): on one machine they share the controller's clock.

A stage whose events are missing (a node's children keep their timelines on the node) is left
out, and the span from the last event found to the next one found takes its time. It prints the
median and the 90th percentile of each stage over the last N waits (default: all) and their sum
against the median wait. The timeline's own cost (a few microseconds per event) is in every
stage: compare stages, not the totals with a run without --timeline.
"""
import json
import statistics
import sys
from bisect import bisect_left


def load(path, parts=()):
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    for part in parts:
        with open(part) as f:
            events += [json.loads(line) for line in f if line.strip()]
    return [e for e in events if e.get("ph") == "X"]


def load_meta(path):
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"]


def load_meta_part(path):
    with open(path) as f:
        events = [json.loads(line) for line in f if line.strip()]
    return [e for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"]


def starts(events, pred):
    chosen = sorted((e for e in events if pred(e)), key=lambda e: e["ts"])
    return chosen, [e["ts"] for e in chosen]


def next_after(chosen, keys, t, before):
    """The first event starting at or after t and before `before`, or None."""
    i = bisect_left(keys, t)
    if i < len(chosen) and chosen[i]["ts"] <= before:
        return chosen[i]
    return None


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    def option(name, default):
        return argv[argv.index(name) + 1] if name in argv else default

    last = int(option("--last", 0))
    wait = option("--wait", "read")
    board = "--board" in argv
    parts = argv[argv.index("--part") + 1:] if "--part" in argv else []
    parts = [a for a in parts if not a.startswith("--")]
    events = load(argv[1], parts)
    waits, _ = starts(events, lambda e: e.get("cat") == "user" and e.get("name") == wait)
    if last:
        waits = waits[-last:]
    controller = {w["pid"] for w in waits}
    dispatches, dk = starts(events, lambda e: e.get("name") == "dispatch")
    batches, bk = starts(events, lambda e: e.get("name") == "batch" and e["pid"] not in controller)
    if not batches:  # thread mode: the runners are threads of the controller
        batches, bk = starts(events, lambda e: e.get("name") == "batch")
    syncs, sk = starts(events, lambda e: e.get("name") == "synchronize")
    dones, nk = starts(events, lambda e: not board and e.get("cat") == "puller"
                       and e.get("name") == "done")
    names = ["to executor", "to child", "batch", "synchronize", "to puller", "to user"]
    stages = {n: [] for n in names + ["dispatch span"]}
    totals = []
    for w in waits:
        begin, end = w["ts"], w["ts"] + w.get("dur", 0)
        totals.append(end - begin)
        t = begin
        d = next_after(dispatches, dk, t, end)
        if d:
            stages["to executor"].append(d["ts"] - t)
            stages["dispatch span"].append(d.get("dur", 0))
            t = d["ts"]
        b = next_after(batches, bk, t, end)
        if b:
            stages["to child"].append(b["ts"] - t)
            stages["batch"].append(b.get("dur", 0))
            t = b["ts"] + b.get("dur", 0)
            s = next_after(syncs, sk, t, end)
            if s and s["pid"] == b["pid"] and s["tid"] == b["tid"]:
                stages["synchronize"].append(s["ts"] + s.get("dur", 0) - t)
                t = s["ts"] + s.get("dur", 0)
        p = next_after(dones, nk, t, end)
        if p:
            stages["to puller"].append(p["ts"] - t)
            t = p["ts"]
        stages["to user"].append(end - t)
    show = int(option("--show", -1))
    if 0 <= show < len(waits):
        w = waits[show]
        names_of = {}
        for e in load_meta(argv[1]) + [m for p in parts for m in load_meta_part(p)]:
            names_of[(e["pid"], e.get("tid"))] = e.get("args", {}).get("name", "")
        for e in sorted(events, key=lambda e: e["ts"]):
            if w["ts"] - 50 <= e["ts"] <= w["ts"] + w.get("dur", 0):
                track = names_of.get((e["pid"], e["tid"]), str(e["tid"]))
                print(f"{e['ts'] - w['ts']:9.1f} {e.get('dur', 0):8.1f}  {track:<14} {e['name']}")
        print()
    if not totals:
        print(f"no \"{wait}\" waits of the user's on this timeline (a run without --timeline?)")
        return 1

    def pct(xs, q):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))]

    print(f"{len(totals)} waits, median {statistics.median(totals):.1f} us")
    print(f"{'stage':<12} {'found':>6} {'median us':>10} {'p90 us':>8}")
    total = 0.0
    for n in names:
        xs = stages[n]
        if not xs:
            continue
        m = statistics.median(xs)
        total += m
        print(f"{n:<12} {len(xs):>6} {m:>10.1f} {pct(xs, 0.9):>8.1f}")
    print(f"{'sum':<12} {'':>6} {total:>10.1f}")
    if stages["dispatch span"]:
        xs = stages["dispatch span"]
        print(f"{'(dispatch span)':<12} {len(xs):>3} {statistics.median(xs):>10.1f} {pct(xs, 0.9):>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
