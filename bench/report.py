"""Tables, the plot and the numbers in docs/performance.md, from bench/results/*.json.

    .venv/bin/python -m bench.report            # print the tables, redraw, rewrite the docs block

Only the block between the `bench:results` markers in docs/performance.md is rewritten;
the prose around it (the profile, what is ours and what is the SDK's) is written by hand.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "performance.md"
PLOT = "perf-latency_vs_size.png"
BEGIN, END = "<!-- bench:results:begin -->", "<!-- bench:results:end -->"

DELETE_VS_BASELINE_GOAL = 1.25
DELETE_IN_READS_GOAL = 2.3
SEQUENTIAL_DELETE_GOAL = 1.0  # the baseline's p50 over notewarden's: no slower than the baseline
SCALE_GOAL = 2.0
PG_VS_FILES_GOAL = 0.8
TWO_INSTANCES_GOAL = 1.4


def load(results: Path, section: str) -> dict[str, Any] | None:
    path = results / f"perf-{section}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _n(value: float | None, fmt: str = "{:.1f}") -> str:
    return "n/a" if value is None else fmt.format(value)


def _goal(value: float | None, limit: float, *, at_least: bool) -> str:
    if value is None:
        return "not measured"
    met = value >= limit if at_least else value <= limit
    return "met" if met else "NOT met"


def machine_line(data: dict[str, Any]) -> str:
    m = data["machine"]
    pinned = m.get("pinned")
    if pinned and pinned.get("in_process"):
        pins = f"in process on CPU {pinned['in_process']}"
    elif pinned and pinned.get("client"):
        pins = f"client on CPU {pinned['client']}, server on CPU {pinned['server']}"
    else:
        pins = "unpinned"
    v = m["versions"]
    return (
        f"{m['cpus']} CPUs ({m['cpu_model']}), {m['memory_gib']} GiB, Linux {m['kernel']}, Python {m['python']}; "
        f"mcp {v.get('mcp')}, fastmcp {v.get('fastmcp')}, uvicorn {v.get('uvicorn')}; {pins}; "
        f"load average {m['loadavg_at_start'][0]} at start, {m.get('loadavg_at_end', ['?'])[0]} at end; "
        f"measured {data['measured_at']} with `{data['command']}`"
    )


def comparison_md(data: dict[str, Any]) -> list[str]:
    plan, summary = data["plan"], data["summary"]
    lines = [
        f"**Comparison** ({plan['rounds']} rounds, the servers side by side taking turns of "
        f"{plan.get('chunk', {}).get('delete', '?')} confirmed deletes, {plan['workers']} workers, data set: "
        f"{plan['data_size']}; baselines in {plan.get('baseline_response_mode', 'sse-capable')} response mode; "
        "medians over rounds)",
        "",
        "| server | confirmed deletes/s | p50 ms | p90 ms | p99 ms | round 1 / round 2 p50 ms "
        "| server CPU ms per delete | reads/s | p50 ms | p99 ms | server CPU ms per read "
        "| a delete costs (reads: by throughput, by CPU) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, entry in summary["servers"].items():
        d, r = entry["delete"] or {}, entry["read"] or {}
        lines.append(
            f"| {name} | {_n(d.get('per_second'))} | {_n(d.get('p50_ms'))} | {_n(d.get('p90_ms'))} "
            f"| {_n(d.get('p99_ms'))} | {_n(d.get('round1_p50_ms'))} / {_n(d.get('round2_p50_ms'))} "
            f"| {_n(d.get('server_cpu_ms_per_flow'), '{:.2f}')} | {_n(r.get('per_second'))} "
            f"| {_n(r.get('p50_ms'))} | {_n(r.get('p99_ms'))} | {_n(r.get('server_cpu_ms_per_flow'), '{:.2f}')} "
            f"| {_n(entry['delete_cost_in_reads'], '{:.2f}')}, {_n(entry['delete_cpu_in_reads'], '{:.2f}')} |"
        )
    errors = {
        name: (e["delete"] or {}).get("errors", 0) + (e["read"] or {}).get("errors", 0)
        for name, e in summary["servers"].items()
    }
    if any(errors.values()):
        lines += [
            "",
            "Errors (failed flows, left out of the numbers): "
            + ", ".join(f"{k} {v}" for k, v in errors.items()),
        ]
    lines += [
        "",
        "| notewarden vs | confirmed deletes/s ratio: median | min | max | server CPU per delete ratio: median |",
        "|---|---:|---:|---:|---:|",
    ]
    for baseline, pair in summary["delete_throughput_ratio"].items():
        cpu = summary["delete_cpu_ratio"][baseline]
        lines.append(
            f"| {baseline} | {_n(pair['median'], '{:.2f}×')} | {_n(pair['min'], '{:.2f}')} "
            f"| {_n(pair['max'], '{:.2f}')} | {_n(cpu['median'], '{:.2f}×')} |"
        )
    faster = summary["faster_baseline"]
    ratio = summary["delete_throughput_ratio"].get(faster, {}).get("median") if faster else None
    cost = summary["servers"]["notewarden"]["delete_cost_in_reads"]
    missing_read = summary["servers"]["notewarden"]["read"] is None
    lines += [
        "",
        "(ratio > 1: notewarden is faster; the CPU ratio is the baseline's CPU per delete over notewarden's; "
        "`control`, when present, is notewarden from another src/ tree: `--control`)",
        "",
        f"- Goal: confirmed-delete throughput ≥ {DELETE_VS_BASELINE_GOAL}× the faster baseline ({faster}): "
        f"**{_n(ratio, '{:.2f}×')}**, {_goal(ratio, DELETE_VS_BASELINE_GOAL, at_least=True)}.",
        f"- Goal: a confirmed delete costs ≤ {DELETE_IN_READS_GOAL} plain reads on the same server: "
        + (
            "**not measured**: this build lists no `notes_read` tool (it comes with the full toolset)."
            if missing_read
            else f"**{_n(cost, '{:.2f}')}**, {_goal(cost, DELETE_IN_READS_GOAL, at_least=False)}."
        ),
    ]
    return lines


def sequential_md(data: dict[str, Any]) -> list[str]:
    plan, summary = data["plan"], data["summary"]
    lines = [
        f"**Sequential** (one client, one call at a time; {plan['rounds']} rounds, each starting both servers "
        f"afresh on {plan['data_size'].split(' at ')[0]}; the servers take turns, {plan['chunk']} calls each; "
        f"{plan['deletes_per_round']} confirmed deletes and {plan['reads_per_round']} reads per server per round; "
        "medians over rounds)",
        "",
        "| server | confirmed delete p50 ms | p90 ms | p99 ms | round 1 / round 2 p50 ms "
        "| server CPU ms per delete | read p50 ms | p99 ms | server CPU ms per read | a delete in reads (p50) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, entry in summary["servers"].items():
        d, r = entry["delete"], entry["read"]
        lines.append(
            f"| {name} | {_n(d['p50_ms'], '{:.2f}')} | {_n(d['p90_ms'], '{:.2f}')} | {_n(d['p99_ms'], '{:.2f}')} "
            f"| {_n(d['round1_p50_ms'], '{:.2f}')} / {_n(d['round2_p50_ms'], '{:.2f}')} "
            f"| {_n(d['server_cpu_ms_per_flow'], '{:.2f}')} | {_n(r['p50_ms'], '{:.2f}')} "
            f"| {_n(r['p99_ms'], '{:.2f}')} | {_n(r['server_cpu_ms_per_flow'], '{:.2f}')} "
            f"| {_n(entry['delete_p50_in_reads'], '{:.2f}')} |"
        )
    errors = {name: e["delete"]["errors"] + e["read"]["errors"] for name, e in summary["servers"].items()}
    if any(errors.values()):
        lines += ["", "Errors (left out of the numbers): " + ", ".join(f"{k} {v}" for k, v in errors.items())]
    baseline = summary["baseline"]
    lines += [
        "",
        f"| p50: {baseline} ÷ notewarden | median | min | max |",
        "|---|---:|---:|---:|",
    ]
    for flow, label in (("delete", "confirmed delete"), ("read", "read")):
        ratio = summary["p50_ratio"][flow]
        lines.append(
            f"| {label} | {_n(ratio['median'], '{:.2f}×')} | {_n(ratio['min'], '{:.2f}')} "
            f"| {_n(ratio['max'], '{:.2f}')} |"
        )
    ratio = summary["p50_ratio"]["delete"]["median"]
    lines += [
        "",
        "(ratio > 1: notewarden answers sooner; taken round by round, both servers measured in the same minute)",
        "",
        f"- Goal: single-client confirmed delete p50 no slower than {baseline}'s: **{_n(ratio, '{:.2f}×')}**, "
        f"{_goal(ratio, SEQUENTIAL_DELETE_GOAL, at_least=True)}.",
    ]
    return lines


def scale_md(data: dict[str, Any]) -> list[str]:
    lines = [
        f"**Scale** (notewarden over HTTP, one worker, up to {data['plan']['calls']} calls or "
        f"{data['plan']['max_seconds']:.0f} s per point; the first call of a fresh server, not timed, "
        "builds the files store's search index)",
        "",
    ]
    stores = [("files store", data), ("PostgreSQL store", data.get("postgres"))]
    for name, entry in stores:
        if entry is None:
            continue
        if "unavailable" in entry:
            lines += [f"{name}: not measured: {entry['unavailable'][:300]}", ""]
            continue
        lines += [
            f"| {name}: notes | first call s | round-1 notes_delete p50 ms | p90 ms | p99 ms | calls "
            "| notes_search p50 ms | p90 ms | p99 ms | calls |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for p in entry["points"]:
            r, s = p["round1"] or {}, p["search"] or {}
            lines.append(
                f"| {p['notes']:,} | {_n(r.get('extra', {}).get('warmup_seconds'), '{:.2f}')} | {_n(r.get('p50_ms'))} | {_n(r.get('p90_ms'))} | {_n(r.get('p99_ms'))} | {r.get('ok', 'n/a')} "
                f"| {_n(s.get('p50_ms'))} | {_n(s.get('p90_ms'))} | {_n(s.get('p99_ms'))} | {s.get('ok', 'n/a')} |"
            )
        lines.append("")
        for flow, label in (("round1", "round-1 notes_delete"), ("search", "notes_search")):
            goal = entry["summary"][flow]
            if goal is None:
                why = (
                    "not listed by this build"
                    if all(p[flow] is None for p in entry["points"])
                    else "needs two sizes"
                )
                lines.append(
                    f"- Goal ({name}): {label} at the largest size ≤ {SCALE_GOAL}× the smallest: **not measured** ({why})."
                )
            else:
                lines.append(
                    f"- Goal ({name}): {label} at {goal['to_notes']:,} notes ≤ {SCALE_GOAL}× {goal['from_notes']:,} notes (p50): "
                    f"**{goal['p50_ratio']:.2f}×**, {_goal(goal['p50_ratio'], SCALE_GOAL, at_least=False)}."
                )
        lines.append("")
    return lines


def instances_md(data: dict[str, Any]) -> list[str]:
    lines = [
        f"**Instances** (confirmed deletes, {data['plan']['workers']} workers, round 2 sent to the other instance; "
        "both instances and the client share the machine's CPUs)",
        "",
        "| store | 1 instance deletes/s | 2 instances deletes/s | 2 ÷ 1 | p50 ms (1) | p50 ms (2) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for store, entry in data["stores"].items():
        if "unavailable" in entry:
            lines.append(f"| {store} | n/a | n/a | n/a | n/a | n/a |")
            continue
        lines.append(
            f"| {store} | {_n(entry['one_per_second'])} | {_n(entry['two_per_second'])} | {_n(entry['two_over_one'], '{:.2f}')} "
            f"| {_n(entry['p50_ms']['1'])} | {_n(entry['p50_ms']['2'])} |"
        )
    for store, entry in data["stores"].items():
        if "unavailable" in entry:
            lines.append(f"\n{store}: not measured: {entry['unavailable'][:300]}")
    pg = data["stores"].get("postgres", {})
    lines += [
        "",
        f"- Goal: one PostgreSQL instance ≥ {PG_VS_FILES_GOAL}× files + SQLite in the same run: "
        f"**{_n(data.get('postgres_over_files'), '{:.2f}')}×**, "
        f"{_goal(data.get('postgres_over_files'), PG_VS_FILES_GOAL, at_least=True)}.",
        f"- Goal: two PostgreSQL instances ≥ {TWO_INSTANCES_GOAL}× one: **{_n(pg.get('two_over_one'), '{:.2f}')}×**, "
        f"{_goal(pg.get('two_over_one'), TWO_INSTANCES_GOAL, at_least=True)}.",
    ]
    return lines


def cost_md(data: dict[str, Any]) -> list[str]:
    plan = data["plan"]
    lines = [
        f"**Fixed cost of one confirmed delete** (in process, deleting notes of its own out of "
        f"{plan['resident_notes']:,} resident ones, no network; "
        f"CPU: median of {plan['runs']} runs of {plan['calls']} deletes; instructions: callgrind, user space)",
        "",
        "| server | CPU ms user | CPU ms system | instructions (millions) |",
        "|---|---:|---:|---:|",
    ]
    for name, entry in data["servers"].items():
        ins = entry["instructions_millions"]
        lines.append(
            f"| {name} | {_n(entry['user_ms'], '{:.2f}')} | {_n(entry['system_ms'], '{:.2f}')} "
            f"| {_n(ins, '{:.2f}') if plan['instructions'] else 'not counted'} |"
        )
    return lines


def plot(data: dict[str, Any], path: Path) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    drawn = False
    for flow, label, color in (
        ("round1", "round-1 notes_delete", "tab:blue"),
        ("search", "notes_search", "tab:orange"),
    ):
        points = [p for p in data["points"] if p[flow] and p[flow]["p50_ms"] is not None]
        if not points:
            continue
        sizes = [p["notes"] for p in points]
        p50 = [p[flow]["p50_ms"] for p in points]
        p90 = [p[flow]["p90_ms"] for p in points]
        ax.plot(sizes, p50, marker="o", color=color, label=f"{label} p50")
        ax.plot(sizes, p90, marker="x", linestyle="--", color=color, alpha=0.6, label=f"{label} p90")
        drawn = True
    if not drawn:
        plt.close(fig)
        return None
    smallest = min(p["notes"] for p in data["points"])
    base = next(
        (p["round1"]["p50_ms"] for p in data["points"] if p["notes"] == smallest and p["round1"]),
        None,
    )
    if base:
        ax.axhline(
            base * SCALE_GOAL,
            color="grey",
            linestyle=":",
            label=f"goal: {SCALE_GOAL:g}× round-1 p50 at {smallest:,}",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("notes in the workspace")
    ax.set_ylabel("latency per call (ms)")
    ax.set_title(f"notewarden latency vs workspace size ({data['machine']['cpus']} CPUs)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def render(results: Path) -> list[str]:
    lines: list[str] = []
    for section, render_section in (
        ("comparison", comparison_md),
        ("sequential", sequential_md),
        ("scale", scale_md),
        ("instances", instances_md),
        ("cost", cost_md),
    ):
        data = load(results, section)
        if data is None:
            lines += [
                f"**{section.capitalize()}**: no results yet (`python -m bench.run_all --only {section}`).",
                "",
            ]
            continue
        lines += render_section(data)
        lines += ["", f"<sub>{machine_line(data)}</sub>", ""]
        if section == "scale" and plot(data, results / PLOT) is not None:
            lines += [f"![latency vs workspace size](../bench/results/{PLOT})", ""]
    return lines


def rewrite_docs(docs: Path, lines: list[str]) -> None:
    text = docs.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{docs} lacks the {BEGIN} / {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    docs.write_text(head + BEGIN + "\n" + "\n".join(lines).rstrip() + "\n" + END + tail)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    parser.add_argument("--docs", type=Path, default=DOCS, help="the page whose results block is rewritten")
    parser.add_argument("--no-docs", action="store_true", help="print only; leave the docs alone")
    args = parser.parse_args(argv)
    lines = render(args.results_dir)
    print("\n".join(lines))
    if not args.no_docs:
        rewrite_docs(args.docs, lines)
        print(f"\nrewrote the results block of {args.docs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
