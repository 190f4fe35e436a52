"""The report of ``memledger bench serve``: JSON data, and the same as Markdown text.

The JSON report holds ``benchmark``, ``server``, ``config``, ``machine``
(:func:`memledger.eval.machine.describe`: CPU model, cores, memory, Python, SQLite,
platform, the memledger commit in a git checkout) and ``phases``, one object per phase
(:meth:`memledger.eval._serve_phase.Phase.to_json`), and for a server the benchmark
started, ``server_memory`` (:mod:`memledger.eval._serve_memory`: its resident memory
after seeding, at its peak, and each process's peak; each phase holds the peak while
it ran). The text shows the machine, then one table row per phase, then the memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memledger.eval._serve_phase import Phase
    from memledger.eval.bench_serve import ServeBenchConfig


def report(
    config: ServeBenchConfig,
    phases: Sequence[Phase],
    *,
    server: str,
    machine: Mapping[str, object],
    server_memory: Mapping[str, object] | None = None,
) -> dict[str, object]:
    out: dict[str, object] = {
        "benchmark": "serve",
        "server": server,
        "config": {
            "duration_s": config.duration,
            "concurrency": config.concurrency,
            "rate_per_s": config.rate,
            "recall_share": config.recall_share,
            "subjects": config.subjects,
            "seeded_turns": config.subjects * config.turns,
            "quiet_concurrency": config.quiet_concurrency,
            "noisy_concurrency": config.noisy_concurrency,
            "material_chars": config.material_chars,
            "burst": config.burst,
            "serve_options": list(config.serve_options),
            "processes": config.processes,
        },
        "machine": dict(machine),
        "phases": [p.to_json() for p in phases],
    }
    if server_memory is not None:
        out["server_memory"] = dict(server_memory)
    return out


def machine_line(machine: Mapping[str, object]) -> str:
    memory = machine.get("memory")
    commit = machine.get("commit")
    return (
        f"machine: {machine['cpu']}, {machine['cores']} cores"
        + (f", {memory} memory" if memory else "")
        + f", Python {machine['python']}, SQLite {machine['sqlite']}, {machine['platform']}"
        + (f"; memledger {commit}" if commit else "")
    )


def _errors(phase: Mapping[str, object]) -> str:
    kinds = phase["errors_by_kind"]
    assert isinstance(kinds, dict)
    if not kinds:
        return "0"
    return f"{phase['errors']} (" + ", ".join(f"{k} {n}" for k, n in kinds.items()) + ")"


def markdown(report: Mapping[str, object]) -> str:
    """The machine, then the phases as a Markdown table (of a report over several
    servers: their figures side by side, then each one's phases)."""
    machine = report["machine"]
    assert isinstance(machine, dict)
    if "runs" in report:
        from memledger.eval._serve_compare import side_by_side

        runs = report["runs"]
        assert isinstance(runs, list)
        parts = [machine_line(machine), "", *side_by_side(report)]
        for run in runs:
            parts += ["", f"{run['server']}:", "", *_phase_rows(run), *_memory_lines(run)]
        return "\n".join(parts)
    return "\n".join([machine_line(machine), "", *_phase_rows(report), *_memory_lines(report)])


def _memory_lines(report: Mapping[str, object]) -> list[str]:
    """The child server's resident memory: after seeding, at its peak, at the end."""
    held = report.get("server_memory")
    if not isinstance(held, dict):
        return []
    phases = report["phases"]
    assert isinstance(phases, list)
    last = phases[-1].get("server_memory_mb", {}) if phases else {}
    peaks = held["process_peaks_mb"]
    assert isinstance(peaks, list)
    count = held["processes"]
    return [
        "",
        f"server memory (resident, {count} process{'es' if count != 1 else ''}, sampled every "
        f"{held['sampled_every_s']} s): {held['after_seeding']['end_mb']:,} MiB after seeding, "
        f"peak {held['peak_mb']:,} MiB, {last.get('end_mb', 0):,} MiB at the end; "
        "each process's peak: " + ", ".join(f"{p:,}" for p in peaks) + " MiB",
    ]


def _phase_rows(report: Mapping[str, object]) -> list[str]:
    phases = report["phases"]
    assert isinstance(phases, list)
    held = any("server_memory_mb" in phase for phase in phases)
    rows = [
        "| phase | sent | offered/s | answered/s | p50 ms | p95 ms | p99 ms | max ms "
        "| errors | shed | unfinished |" + (" server MiB |" if held else ""),
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |"
        + (" ---: |" if held else ""),
    ]
    for phase in phases:
        lat = phase["latency_ms"]
        memory = phase.get("server_memory_mb")
        rows.append(
            f"| {phase['phase']} | {phase['sent']:,} | {phase['offered_per_s']:,} | "
            f"{phase['answered_per_s']:,} | "
            f"{lat['p50']} | {lat['p95']} | {lat['p99']} | {lat['max']} | {_errors(phase)} | "
            f"{phase['shed']:,} | {phase['unfinished']:,} |"
            + ((f" {memory['peak_mb']:,} |" if memory else " |") if held else "")
        )
        first = phase["by_operation"].get("first read")
        if first is not None:
            rows.append(
                f"| ... the first read after it | 1 | | | {first['p50']} | | | | | | |"
                + (" |" if held else "")
            )
    return rows
