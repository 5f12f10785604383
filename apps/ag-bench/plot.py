#!/usr/bin/python3
"""Draws docs/benchmarks.png from ag-bench --sweep --json runs (docs/BENCHMARKS.md).

    /usr/bin/python3 apps/ag-bench/plot.py OUT.png RUN.json [RUN.json ...]

Left: per-operator time against operators per sync, for each mode of each one-device run, with
the raw launch floor. Middle: streamed time per step (one add on every device) against the number
of devices, for each mode, with the one-device figure as a dashed reference. Right: the sync round
trip of each mode on each transport (shared memory, sockets) of the one-device runs, with the
launch-and-sync, ZMQ and shared-memory floors of the same runs. A fourth panel, only when a run
measured a node (--mode=node or all): each node figure as its ratio to its floor of the same run.
Needs matplotlib (Debian: python3-matplotlib).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    out, paths = argv[1], argv[2:]
    runs = [json.load(open(p)) for p in paths]
    with_node = [run for run in runs if run.get("node")]  # older runs have no "node" key
    panels = 4 if with_node else 3
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 4.8))
    left, right, trips = axes[:3]

    floor = None
    for run in runs:
        floor = floor or run["floors"].get("launch_us")
        if len(run["devices"].split(",")) != 1:
            continue  # the sweep runs on the first device only
        for mode, figures in sorted(run["modes"].items()):
            sweep = [(k, us) for k, us in figures.get("sweep", []) if us is not None]
            if not sweep:
                continue
            xs, ys = zip(*sweep)
            left.plot(xs, ys, marker="o", label=f"{mode} mode, {run['devices']}")
    if floor:
        left.axhline(floor, color="black", linestyle="--", linewidth=1,
                     label=f"raw launch floor ({floor:.2f} us)")
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    left.set_xlabel("operators per sync")
    left.set_ylabel("time per operator (us)")
    left.set_title("per-operator time against operators per sync")
    left.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=8)

    by_mode = {}
    for run in runs:
        n = len(run["devices"].split(","))
        for mode, figures in run["modes"].items():
            if figures.get("streamed_us") is not None:
                by_mode.setdefault(mode, []).append((n, figures["streamed_us"]))
    for mode, points in sorted(by_mode.items()):
        points.sort()
        xs, ys = zip(*points)
        line, = right.plot(xs, ys, marker="o", label=f"{mode} mode")
        right.axhline(points[0][1], color=line.get_color(), linestyle="--", linewidth=0.8)
    if floor:
        right.axhline(floor, color="black", linestyle="--", linewidth=1, label="raw launch floor")
    right.set_xlabel("devices (one add on each per step)")
    right.set_ylabel("streamed time per step (us)")
    right.set_title("broadcast: time per step against devices")
    right.set_xticks(sorted({n for pts in by_mode.values() for n, _ in pts}))
    right.set_ylim(bottom=0)
    right.grid(True, alpha=0.3)
    right.legend(fontsize=8)

    names = ["thread", "process", "thread_sockets", "process_sockets"]
    one = [run for run in runs if len(run["devices"].split(",")) == 1]
    width = 0.8 / max(1, len(one))
    for i, run in enumerate(one):
        ys = [run["modes"].get(m, {}).get("round_trip_us") for m in names]
        xs = [j + i * width for j, y in enumerate(ys) if y is not None]
        trips.bar(xs, [y for y in ys if y is not None], width=width,
                  label=f"{run['devices']} run {i + 1}")
    for key, label, style in [("launch_sync_us", "launch + sync", "--"),
                              ("zmq_round_trip_us", "zmq ipc round trip", ":"),
                              ("shm_round_trip_us", "shm ping-pong", "-.")]:
        values = [run["floors"].get(key) for run in one if run["floors"].get(key) is not None]
        if values:
            trips.axhline(sum(values) / len(values), color="black", linestyle=style,
                          linewidth=1, label=f"{label} ({sum(values) / len(values):.2f} us)")
    trips.set_xticks([j + width * (len(one) - 1) / 2 for j in range(len(names))])
    trips.set_xticklabels(["thread\nshared memory", "process\nshared memory", "thread\nsockets",
                           "process\nsockets"])
    trips.set_ylabel("(a + b).to_vector() (us, median)")
    trips.set_title("sync round trip by mode and transport")
    trips.grid(True, axis="y", alpha=0.3)
    trips.legend(fontsize=8)

    if with_node:
        plot_node(axes[3], with_node)

    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def node_ratios(run):
    """{label: node / floor} of a run's node rows; an indented row is named after the one above."""
    ratios, parent = {}, ""
    for row in run.get("node_rows", []):
        what = row["what"]
        label = f"{parent}, {what.strip()}" if what.startswith(" ") else what
        parent = parent if what.startswith(" ") else what
        if row.get("node") and row.get("floor"):
            ratios[label] = row["node"] / row["floor"]
    return ratios


def plot_node(ax, runs):
    """Each node row's ratio to its floor (horizontal bars), one bar per run."""
    per_run = [node_ratios(run) for run in runs]
    labels = []
    for ratios in per_run:
        labels += [label for label in ratios if label not in labels]
    height = 0.8 / len(runs)
    for i, (run, ratios) in enumerate(zip(runs, per_run)):
        ys = [j + i * height for j, label in enumerate(labels) if label in ratios]
        ax.barh(ys, [ratios[label] for label in labels if label in ratios], height=height,
                label=f"{run['node']['device']}, {run['devices']} run {i + 1}")
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1, label="the floor")
    ax.set_yticks([j + height * (len(runs) - 1) / 2 for j in range(len(labels))])
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("node figure / its floor (round trips: lower is better; GB/s: higher)")
    ax.set_title("a node on 127.0.0.1 against the TCP floors")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8)


if __name__ == "__main__":
    main(sys.argv)
