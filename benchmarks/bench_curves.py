"""How consuming costs grow: with the partitions assigned and with the backlog, beside librdkafka and Java.

    python benchmarks/bench_curves.py                                   # both curves on Kafka, 2 reps (~30 min)
    python benchmarks/bench_curves.py --curves partitions --points 1,16,256 --reps 1
    python benchmarks/bench_curves.py --report benchmarks/results/curves-XXXXXXX-kafka.json   # tables, plots again

One broker (a one-node Apache Kafka by default; ``--broker tansu``) serves every point. Each point is one
``bench_consume.py`` run against it, with that script's children, checks (every record, contiguous offsets, final
positions) and medians; its topics are deleted after it so later points meet a broker of the same size. Curves:

- ``partitions``: one topic of P partitions (``--points``, default 1, 16, 256, 1,024, 4,096), filled with
  ``--records`` x 100 B and ``--large-records`` x 1 KB, read by ``poll``, ``poll`` without fetch sessions,
  ``poll`` with a 64 MiB ``fetch_buffer_bytes``, ``poll_arrow``, tuned librdkafka, Java's two consumers (fresh
  JVMs) and the raw fetch loop. Records/s, CPU-s per million records and peak RSS at each point.
- ``backlog``: 1 KB records in 4 partitions, 0.1, 0.5 and 2 GB (``--backlogs``), read by ``poll``, aiokafka,
  tuned librdkafka and Java: peak RSS against the backlog.

Writes ``benchmarks/results/curves-<code>-kafka.json`` with the tables (``.md``) and one plot per curve and
workload (``.png``, matplotlib) beside it; each point's own ``bench_consume`` JSON goes in a folder of that name.
See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchcommon import BROKERS, code_version, default_results_path, machine, start_broker, table_row, table_rule

Result = dict[str, Any]

HERE = Path(__file__).resolve().parent

PARTITION_POINTS = (1, 16, 256, 1_024, 4_096)
PARTITION_CLIENTS = (
    "asyncconsumer",
    "asyncconsumer-nosessions",
    "asyncconsumer-64m",
    "asyncconsumer-arrow",
    "confluent-tuned",
    "java",
    "java-async",
    "raw",
)
BACKLOG_POINTS_GB = (0.1, 0.5, 2.0)
BACKLOG_CLIENTS = ("asyncconsumer", "aiokafka", "confluent-tuned", "java", "java-async")
BACKLOG_PARTITIONS = 4
LARGE_SIZE = 1_000

LABELS = {
    "asyncconsumer": "poll",
    "asyncconsumer-nosessions": "poll, sessions off",
    "asyncconsumer-64m": "poll, 64 MiB buffer",
    "asyncconsumer-arrow": "poll_arrow",
    "confluent-tuned": "librdkafka tuned",
    "java": "Java classic",
    "java-async": "Java consumer",
    "aiokafka": "aiokafka",
    "raw": "raw loop",
}
PEERS = ("confluent-tuned", "java", "java-async")
"""The peers ``poll``'s ratio is given against at every point."""

METRICS: dict[str, tuple[str, float, str]] = {
    "records_per_s": ("records/s, whole run (M)", 1e-6, ".2f"),
    "steady_records_per_s": ("records/s once records flow (M)", 1e-6, ".2f"),
    "cpu_s_per_m": ("CPU-s per million records", 1.0, ".2f"),
    "peak_rss_mb": ("peak RSS (MB)", 1.0, ".0f"),
    "first_record_ms": ("start to first record (ms)", 1.0, ".0f"),
}
"""What a curve's tables show: bench_consume's derived metric -> (title, scale, format)."""


# --- one point: a bench_consume run ---------------------------------------------------------------------------


def point_argv(
    *,
    bootstrap: str,
    broker: str,
    json_path: Path,
    clients: Sequence[str],
    workloads: Sequence[str],
    partitions: int,
    records: int,
    large_records: int,
    reps: int,
) -> list[str]:
    """The ``bench_consume.py`` command line for one point of a curve."""
    return [
        sys.executable,
        str(HERE / "bench_consume.py"),
        "--broker",
        broker,
        "--bootstrap",
        bootstrap,
        "--json",
        str(json_path),
        "--clients",
        ",".join(clients),
        "--workload",
        ",".join(workloads),
        "--partitions",
        str(partitions),
        "--records",
        str(records),
        "--large-records",
        str(large_records),
        "--large-size",
        str(LARGE_SIZE),
        "--reps",
        str(reps),
        "--keep-going",
    ]


def medians_of(point_report: Result) -> dict[str, dict[str, dict[str, float | None]]]:
    """``{workload: {client: {metric: median}}}`` from one point's ``bench_consume`` report."""
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for name, entry in point_report.get("workloads", {}).items():
        summary = entry.get("summary") or {}
        out[name] = {client: dict(s["median"]) for client, s in summary.items()}
    return out


def run_point(broker: Any, out_dir: Path, label: str, **shape: Any) -> Result:
    """Runs one point and returns ``{"medians": ..., "file": ..., "failures": ...}``; deletes its topics after."""
    json_path = out_dir / f"{label}.json"
    argv = point_argv(bootstrap=broker.bootstrap_servers, broker=broker.kind, json_path=json_path, **shape)
    print(f"\n### {label}: {' '.join(argv[2:])}", flush=True)
    started = time.perf_counter()
    done = subprocess.run(argv, check=False)
    elapsed = time.perf_counter() - started
    point: Result = {
        "file": str(json_path.relative_to(out_dir.parent)),
        "exit_code": done.returncode,
        "seconds": elapsed,
    }
    if not json_path.exists():
        point["medians"] = {}
        point["failures"] = [f"{label}: bench_consume wrote no results (exit {done.returncode})"]
        return point
    report = json.loads(json_path.read_text())
    point["medians"] = medians_of(report)
    point["failures"] = list(report.get("failures", []))
    if done.returncode != 0 and not point["failures"]:
        point["failures"] = [f"{label}: bench_consume exited {done.returncode}"]
    if broker.kind == "kafka":
        for entry in report.get("workloads", {}).values():
            try:
                broker.handle.delete_topic(entry["topic"])
            except Exception as exc:  # a topic left behind only makes later points' broker bigger
                print(f"  note: could not delete {entry['topic']}: {exc}", flush=True)
    return point


# --- report: tables and plots ----------------------------------------------------------------------------------


def series(curve: Result, workload: str, client: str, metric: str) -> list[tuple[float, float]]:
    """``(x, value)`` of one client's metric along a curve, the points it has a value at."""
    out: list[tuple[float, float]] = []
    for x, point in sorted(curve["points"].items(), key=lambda item: float(item[0])):
        value = point.get("medians", {}).get(workload, {}).get(client, {}).get(metric)
        if value is not None:
            out.append((float(x), float(value)))
    return out


def _x_text(curve: Result, x: str) -> str:
    return f"{float(x):g} GB" if curve["axis"] == "backlog" else f"{int(float(x)):,}"


def metric_table(curve: Result, workload: str, metric: str) -> str:
    """A markdown table: one row per point, one column per client, and ``poll``'s ratio to each peer."""
    title, scale, spec = METRICS[metric]
    clients = curve["clients"]
    peers = [p for p in PEERS if p in clients] if "asyncconsumer" in clients else []
    head = [curve["axis_title"], *(LABELS.get(c, c) for c in clients), *(f"poll / {LABELS[p]}" for p in peers)]
    lines = [
        f"**{title}**",
        "",
        table_row(head),
        table_rule(len(head)),
    ]
    for x, point in sorted(curve["points"].items(), key=lambda item: float(item[0])):
        medians = point.get("medians", {}).get(workload, {})
        cells = [_x_text(curve, x)]
        for client in clients:
            value = medians.get(client, {}).get(metric)
            cells.append("-" if value is None else format(value * scale, spec))
        ours = medians.get("asyncconsumer", {}).get(metric)
        for peer in peers:
            theirs = medians.get(peer, {}).get(metric)
            cells.append("-" if ours is None or not theirs else f"{ours / theirs:.2f}x")
        lines.append(table_row(cells))
    return "\n".join(lines)


def growth(curve: Result, workload: str, client: str, metric: str) -> float | None:
    """The metric at the curve's last point over its first: how much it grew (or fell) across the curve."""
    points = series(curve, workload, client, metric)
    if len(points) < 2 or not points[0][1]:
        return None
    return points[-1][1] / points[0][1]


def curve_section(name: str, curve: Result) -> str:
    parts = [f"## {name}: {curve['describe']}"]
    for workload in curve["workloads"]:
        parts.append(f"### {workload}: {curve['workload_describe'][workload]}")
        for metric in curve["metrics"]:
            parts.append(metric_table(curve, workload, metric))
        metric = curve["metrics"][0] if curve["axis"] == "backlog" else "steady_records_per_s"
        changes = [
            f"{LABELS.get(client, client)} {change:.2f}x"
            for client in curve["clients"]
            if (change := growth(curve, workload, client, metric)) is not None
        ]
        if changes:
            parts.append(f"From the first point to the last, {METRICS[metric][0]}: " + ", ".join(changes) + ".")
    return "\n\n".join(parts)


def markdown(report: Result) -> str:
    info = report["machine"]
    head = [
        f"# Cost curves, asyncconsumer at {info['code']}",
        "",
        f"{report['started']}; {info['cpus']} CPUs ({info['cpu_model']}), Python {info['python']}; "
        f"broker {info.get('broker', '?')}; reps per point {report['args']['reps']} (medians). "
        f"Command: `bench_curves.py {' '.join(report['command'])}`.",
    ]
    body = [curve_section(name, curve) for name, curve in report["curves"].items()]
    failures = [f for curve in report["curves"].values() for p in curve["points"].values() for f in p["failures"]]
    tail = ["## Failed runs", "", *(f"- {f.splitlines()[0]}" for f in failures)] if failures else []
    return "\n\n".join(["\n".join(head), *body, *(["\n".join(tail)] if tail else [])]) + "\n"


def write_plots(report: Result, json_path: Path) -> list[Path]:
    """One figure per curve and workload, a panel per metric; nothing (and a note) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: no matplotlib here: no plots (pip install matplotlib, in the bench extra)")
        return []
    written: list[Path] = []
    for name, curve in report["curves"].items():
        for workload in curve["workloads"]:
            metrics = curve["metrics"]
            cols = min(3, len(metrics))
            rows = -(-len(metrics) // cols)
            fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.4 * rows), squeeze=False)
            flat = [ax for row in axes for ax in row]
            for ax in flat[len(metrics) :]:
                ax.set_visible(False)
            xs_all = sorted(float(x) for x in curve["points"])
            for ax, metric in zip(flat, metrics, strict=False):
                title, scale, _ = METRICS[metric]
                for client in curve["clients"]:
                    points = series(curve, workload, client, metric)
                    if points:
                        xs = [x for x, _ in points]
                        ax.plot(xs, [v * scale for _, v in points], marker="o", label=LABELS.get(client, client))
                if curve["axis"] == "partitions":
                    ax.set_xscale("log")
                ax.set_xticks(xs_all, [_x_text(curve, f"{x:g}") for x in xs_all], fontsize=7)
                ax.minorticks_off()
                ax.set_xlabel(curve["axis_title"], fontsize=8)
                ax.set_title(title, fontsize=9)
                ax.set_ylim(bottom=0)
                ax.grid(True, alpha=0.3)
            flat[0].legend(fontsize=7)
            fig.suptitle(f"{name}: {curve['workload_describe'][workload]} ({report['machine'].get('broker', '')})")
            fig.tight_layout()
            path = json_path.with_name(f"{json_path.stem}-{name}-{workload}.png")
            fig.savefig(path, dpi=90)
            plt.close(fig)
            written.append(path)
    return written


def write_outputs(report: Result, json_path: Path) -> None:
    json_path.write_text(json.dumps(report, indent=2))
    text = markdown(report)
    json_path.with_suffix(".md").write_text(text)
    print("\n" + text)
    for path in write_plots(report, json_path):
        print(f"plot: {path}")


# --- the run ---------------------------------------------------------------------------------------------------


def parse_points(text: str, kind: type[int] | type[float]) -> list[Any]:
    values = [kind(v.replace("_", "")) for v in text.split(",") if v.strip()]
    if not values or any(v <= 0 for v in values):
        raise ValueError(f"points must be positive numbers, comma-separated: {text!r}")
    return values


def parent_main(args: argparse.Namespace) -> int:
    names = [c.strip() for c in args.curves.split(",") if c.strip()]
    unknown = sorted(set(names) - {"partitions", "backlog"})
    if unknown:
        print(f"unknown curve(s) {unknown}; choose from partitions, backlog", file=sys.stderr)
        return 2
    partition_points = parse_points(args.points, int)
    backlogs = parse_points(args.backlogs, float)
    java_ok = args.broker == "kafka"
    partition_clients = [c for c in PARTITION_CLIENTS if java_ok or not c.startswith("java")]
    backlog_clients = [c for c in BACKLOG_CLIENTS if java_ok or not c.startswith("java")]

    broker = start_broker(args.broker)
    info = machine(("aiokafka", "confluent_kafka"))
    info["code"] = code_version()
    info["broker"] = broker.description
    out = Path(args.json) if args.json else default_results_path("curves", info["code"], broker=args.broker)
    out_dir = out.with_suffix("")
    out_dir.mkdir(parents=True, exist_ok=True)
    report: Result = {
        "machine": info,
        "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": list(args.command),
        "args": {k: v for k, v in vars(args).items() if k != "command"},
        "curves": {},
    }
    try:
        if "partitions" in names:
            curve: Result = {
                "axis": "partitions",
                "axis_title": "partitions",
                "describe": "one topic of P partitions, manual assignment of all, each client a fresh process",
                "clients": partition_clients,
                "workloads": ["small", "large"],
                "workload_describe": {
                    "small": f"{args.records:,} x 100 B",
                    "large": f"{args.large_records:,} x {LARGE_SIZE:,} B",
                },
                "metrics": ["records_per_s", "steady_records_per_s", "cpu_s_per_m", "peak_rss_mb", "first_record_ms"],
                "points": {},
            }
            report["curves"]["partitions"] = curve
            for partitions in partition_points:
                curve["points"][str(partitions)] = run_point(
                    broker,
                    out_dir,
                    f"partitions-{partitions}",
                    clients=partition_clients,
                    workloads=["small", "large"],
                    partitions=partitions,
                    records=args.records,
                    large_records=args.large_records,
                    reps=args.reps,
                )
                out.write_text(json.dumps(report, indent=2))  # what is done so far survives a failure below
        if "backlog" in names:
            curve = {
                "axis": "backlog",
                "axis_title": "backlog",
                "describe": f"1 KB records in {BACKLOG_PARTITIONS} partitions, consumed from the beginning",
                "clients": backlog_clients,
                "workloads": ["large"],
                "workload_describe": {"large": f"{LARGE_SIZE:,} B records, {BACKLOG_PARTITIONS} partitions"},
                "metrics": ["peak_rss_mb", "records_per_s", "cpu_s_per_m"],
                "points": {},
            }
            report["curves"]["backlog"] = curve
            for gb in backlogs:
                curve["points"][f"{gb:g}"] = run_point(
                    broker,
                    out_dir,
                    f"backlog-{gb:g}gb",
                    clients=backlog_clients,
                    workloads=["large"],
                    partitions=BACKLOG_PARTITIONS,
                    records=args.records,
                    large_records=round(gb * 1e9 / LARGE_SIZE),
                    reps=args.reps,
                )
                out.write_text(json.dumps(report, indent=2))
    finally:
        broker.stop()
    info["code_at_end"] = code_version()
    write_outputs(report, out)
    failures = [f for curve in report["curves"].values() for p in curve["points"].values() for f in p["failures"]]
    for failure in failures:
        print(f"FAILED: {failure.splitlines()[0]}", file=sys.stderr)
    return 1 if failures else 0


def report_main(path: str) -> int:
    json_path = Path(path)
    write_outputs(json.loads(json_path.read_text()), json_path)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--curves", default="partitions,backlog", help="comma-separated: partitions, backlog")
    parser.add_argument("--broker", choices=BROKERS, default="kafka")
    parser.add_argument("--points", default=",".join(map(str, PARTITION_POINTS)), help="partition counts")
    parser.add_argument("--records", type=int, default=1_000_000, help="100 B records per partitions point")
    parser.add_argument("--large-records", type=int, default=200_000, help="1 KB records per partitions point")
    parser.add_argument("--backlogs", default=",".join(f"{g:g}" for g in BACKLOG_POINTS_GB), help="GB of 1 KB values")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--json", help="default: benchmarks/results/curves-<code>-<broker>.json")
    parser.add_argument("--report", metavar="JSON", help="print the tables of a saved run, redraw its plots, exit")
    args = parser.parse_args(argv)
    if args.report:
        return report_main(args.report)
    args.command = list(sys.argv[1:] if argv is None else argv)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
