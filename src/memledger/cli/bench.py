"""``memledger bench ...``: benchmark commands. Timings are measured, never asserted in tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress, TaskID

from memledger._openai_http import redact_url
from memledger.cli import render
from memledger.cli._run import CliError
from memledger.cli.extractors import ExtractorChoice, open_extractor
from memledger.cli.extractors import describe as describe_extractor
from memledger.cli.options import JsonOut, settings_of
from memledger.errors import MemledgerError
from memledger.eval import bench_recall, bench_write
from memledger.eval._scratch import is_postgres
from memledger.eval.machine import describe

bench = typer.Typer(help="Benchmarks (figures for the README; not tests).", no_args_is_help=True)


def _reporter(progress: Progress) -> Callable[[str, int, int], None]:
    """A ``progress(phase, done, total)`` callback that keeps one bar per phase."""
    tasks: dict[str, TaskID] = {}

    def report(phase: str, done: int, total: int) -> None:
        if phase not in tasks:
            tasks[phase] = progress.add_task(phase, total=total)
        progress.update(tasks[phase], completed=done, total=total)

    return report


def _print(text: str) -> None:
    """A benchmark's table or line, as it is (no markup, no highlighting, no wrapping)."""
    Console(soft_wrap=True).print(text, markup=False, highlight=False)


def _write_json(path: Path | None, body: object) -> None:
    """``--json OUT``: the results as indented JSON, when asked."""
    if path is not None:
        path.write_text(json.dumps(body, indent=2) + "\n")


def _server_option(each: str) -> Any:
    """``--store URL`` of a benchmark run on SQLite files unless it names a PostgreSQL
    server, where ``each`` says what it puts in a scratch database."""
    return typer.Option(
        metavar="URL",
        help="A PostgreSQL server (postgresql://..., allowed to create databases): each "
        f"{each} Default: SQLite files.",
    )


def _check_server(store: str | None) -> None:
    if store is not None and not is_postgres(store):
        raise CliError(f"--store takes a postgresql:// URL, got {store!r}")


def _sizes(text: str, option: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise CliError(f"{option} takes comma-separated whole numbers, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise CliError(f"{option} needs at least one positive number, got {text!r}")
    return sizes


@bench.command("write")
def write(
    *,
    events: Annotated[str, typer.Option(help="Comma-separated event counts.")] = "10000,100000",
    rate: Annotated[float, typer.Option(help="Ingest rate of the lag run, events/s.")] = 100.0,
    seconds: Annotated[float, typer.Option(help="Length of the lag run, seconds.")] = 20.0,
    extractor: Annotated[str, typer.Option(help="Extractor: rules.")] = "rules",
    workers: Annotated[
        str, typer.Option(help="Comma-separated worker counts (>1: separate processes).")
    ] = "1,2",
    json_out: JsonOut = None,
    store: Annotated[
        str | None, _server_option("run in a scratch database there, dropped after it.")
    ] = None,
    prefill: Annotated[
        int,
        typer.Option(
            min=0,
            metavar="RECORDS",
            help="Start each throughput run from a store already holding about this many"
            " records (fed once through the write path as SQLite, copied for each run).",
        ),
    ] = 0,
    prefill_store: Annotated[
        Path | None,
        typer.Option(
            "--prefill-store",
            metavar="FILE",
            help="Start each throughput run from a copy of this SQLite store instead (for"
            " example one `bench recall` fed: the same population); not with --prefill.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Write-path throughput (ingest, extraction, end to end) and extraction lag, on
    SQLite or (--store) on PostgreSQL."""
    sizes = _sizes(events, "--events")
    pools = _sizes(workers, "--workers")
    if rate <= 0 or seconds <= 0:
        raise CliError("--rate and --seconds must be positive")
    if extractor != "rules":
        raise CliError(f"bench write runs the offline extractor only ('rules'), got {extractor!r}")
    _check_server(store)
    from memledger.write.extract.rules import RuleExtractor

    rules = RuleExtractor()
    with render.progress_bar() as progress:
        tasks: dict[str, TaskID] = {}

        def report(phase: str, done: int, total: int) -> None:
            key = f"{phase} {total}"
            if key not in tasks:
                tasks[key] = progress.add_task(f"{phase:7} {total:>7} events", total=total)
            progress.update(tasks[key], completed=done)

        results, lag = bench_write.run(
            sizes,
            rules,
            rate=rate,
            seconds=seconds,
            workers=pools,
            progress=report,
            server=store,
            prefill=prefill,
            prefill_store=prefill_store,
        )
    machine = describe()
    info = rules.info
    backend = (
        f"SQLite {machine['sqlite']} (WAL, synchronous=FULL)"
        if store is None
        else f"PostgreSQL at {redact_url(store)}"
    )
    out = Console(soft_wrap=True)
    _print(
        f"memledger bench write, extractor {info.name}@{info.version}, {backend}, "
        f"{machine['cores']} cores, {machine['cpu']}\n"
    )
    out.print(
        "| records before | events | workers | ingest/s | extract+commit/s | end to end/s "
        "| baseline INSERT/s |",
        markup=False,
    )
    out.print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |", markup=False)
    for r in results:
        out.print(
            f"| {r.prefill_records:,} | {r.events:,} | {r.workers} | {r.ingest_per_s:,.0f} | "
            f"{r.process_per_s:,.0f} | "
            f"{r.end_to_end_per_s:,.0f} | {r.baseline_insert_per_s:,.0f} |",
            markup=False,
        )
    _print(
        f"\nextraction lag at {lag.rate_per_s:g} events/s over {lag.events} events: "
        f"p50 {lag.p50_ms:.1f} ms, p95 {lag.p95_ms:.1f} ms, max {lag.max_ms:.1f} ms"
    )
    body = {
        "benchmark": "write",
        "store": "sqlite" if store is None else "postgresql",
        "extractor": f"{info.name}@{info.version}",
        "machine": machine,
        "throughput": [asdict(r) for r in results],
        "lag": asdict(lag),
    }
    _write_json(json_out, body)


@bench.command("recall")
def recall(
    *,
    records: Annotated[
        str, typer.Option(help="Comma-separated record counts of the measured tenant.")
    ] = "10000,100000",
    queries: Annotated[
        int, typer.Option(min=1, help="Timed recalls and slot reads per size and embedder.")
    ] = 500,
    embedder: Annotated[
        str, typer.Option(help="Comma-separated modes: hashing (hybrid), none (lexical only).")
    ] = "hashing,none",
    json_out: JsonOut = None,
    store: Annotated[
        str | None, _server_option("size's canonical store in a scratch database there.")
    ] = None,
    feed: Annotated[
        str,
        typer.Option(
            metavar="write|copy",
            help="With --store: fill each PostgreSQL store through the write path (write),"
            " or feed and measure a SQLite store, then copy it into PostgreSQL (copy-store)"
            " and measure it there: both stores with the same rows, in one run (copy).",
        ),
    ] = "write",
) -> None:
    """Read-path latency: recall and exact slot reads on synthetic memories of many subjects.

    Each size is one store: the measured tenant holds about that many records
    over size/50 subjects, three other tenants a tenth each. Each embedder mode
    indexes the same store; questions come from the data (four in five about a
    stated fact, one in five about something never said). They are asked for
    their subject, then tenant-wide: with exact vector search and (hashing, with
    the 'ann' extra) through the approximate index, whose top 10 is compared with
    the exact one.
    """
    sizes = _sizes(records, "--records")
    modes: dict[str, bench_recall.EmbedderMode] = {m: m for m in bench_recall.EMBEDDER_MODES}
    names = [name.strip() for name in embedder.split(",") if name.strip()]
    if not names or len(set(names)) != len(names) or any(n not in modes for n in names):
        raise CliError(
            f"--embedder takes distinct comma-separated modes of {', '.join(modes)}, "
            f"got {embedder!r}"
        )
    _check_server(store)
    if feed not in ("write", "copy"):
        raise CliError(f"--feed takes write or copy, got {feed!r}")
    if feed == "copy" and store is None:
        raise CliError("--feed copy copies into PostgreSQL: give --store postgresql://...")
    with render.progress_bar() as progress:
        report = _reporter(progress)

        result = bench_recall.run(
            sizes,
            [modes[n] for n in names],
            queries=queries,
            progress=report,
            server=store,
            feed="copy" if feed == "copy" else "write",
        )
    machine = result.machine
    backend = {
        None: f"SQLite {machine['sqlite']}",
        "write": "PostgreSQL store and index",
        "copy": f"SQLite {machine['sqlite']}, then its copy in PostgreSQL (store and index)",
    }[None if store is None else feed]
    _print(
        f"memledger bench recall, {queries} questions per row (k={bench_recall.K}), "
        f"3 other tenants of a tenth each, {backend}, "
        f"{machine['cores']} cores, {machine['cpu']}; stores fed in "
        f"{', '.join(dict.fromkeys(result.fed_in))}, indexed and read in {result.read_in}\n"
    )
    _print(bench_recall.markdown(result))
    Console(soft_wrap=True).print(
        "\ntenant-wide (no subject): exact, then the approximate index\n", markup=False
    )
    _print(bench_recall.tenant_markdown(result))
    _write_json(json_out, bench_recall.json_body(result))


@bench.command("beam-convert")
def beam_convert(
    source: Annotated[
        Path,
        typer.Argument(
            metavar="SRC_DIR",
            help="A BEAM tier folder (chats/500K of mohammadtavakoli78/BEAM): numbered chats.",
        ),
    ],
    out: Annotated[Path, typer.Argument(metavar="OUT.json", help="The LoCoMo-shaped file.")],
    *,
    tier: Annotated[
        str, typer.Option(help="The tier's name, as in the sample ids (beam-500k-1).")
    ] = "500K",
    chats: Annotated[
        str | None,
        typer.Option(metavar="N,...", help="Only these chat numbers (default: every chat)."),
    ] = None,
) -> None:
    """Convert the chats of a BEAM tier to a LoCoMo-shaped file for `bench locomo`: one
    chat per sample, one batch per session, one message per turn, the probing questions'
    source messages as evidence (abstention and summarization questions left out)."""
    from memledger.eval import beam

    if not tier.strip() or "/" in tier:
        raise CliError(f"--tier takes a tier name such as 500K, got {tier!r}")
    wanted = None if chats is None else set(_sizes(chats, "--chats"))
    try:
        samples = beam.convert_tier(source, tier=tier.strip(), only=wanted)
    except beam.BeamFormatError as error:
        raise CliError(str(error)) from error
    beam.write(samples, out)
    turns = sum(
        len(turns)
        for sample in samples
        for key, turns in sample["conversation"].items()
        if key.startswith("session_") and isinstance(turns, list)
    )
    _print(
        f"{len(samples)} chats, {turns:,} turns, "
        f"{sum(len(sample['qa']) for sample in samples)} questions -> {out}"
    )


@bench.command("ingest")
def ingest(
    path: Annotated[
        Path, typer.Argument(help="A LoCoMo-shaped file (locomo-dev.json, beam-dev.json).")
    ],
    *,
    limit_conversations: Annotated[
        int | None, typer.Option(min=1, help="Only the first N conversations.")
    ] = None,
    turns: Annotated[
        int | None, typer.Option(min=1, help="Only the first N turns of each conversation.")
    ] = None,
    embedder: Annotated[
        str, typer.Option(help="default (MiniLM on onnxruntime), hashing or none.")
    ] = "default",
    json_out: JsonOut = None,
) -> None:
    """Real turns through the write path and the index, stage by stage (ingest, extract,
    embed, index): seconds, turns/s and tokens/s of each."""
    from memledger.eval import bench_ingest
    from memledger.eval.locomo import LocomoFormatError
    from memledger.index.embedders import Embedder, HashingEmbedder, default_embedder

    if embedder not in ("default", "hashing", "none"):
        raise CliError(f"--embedder must be default, hashing or none, got {embedder!r}")
    if not path.is_file():
        raise CliError(f"no LoCoMo file at {str(path)!r}")
    chosen: Embedder | None = None
    if embedder != "none":
        chosen = default_embedder() if embedder == "default" else HashingEmbedder()
    try:
        report = bench_ingest.run(
            path, embedder=chosen, conversations=limit_conversations, turns=turns
        )
    except LocomoFormatError as error:
        raise CliError(str(error)) from error
    _print(bench_ingest.markdown(report))
    _write_json(json_out, {"machine": describe(), **report.to_json()})


@bench.command("context")
def context(
    files: Annotated[
        list[Path], typer.Argument(help="LoCoMo-format files (../shared/data/*-dev.json).")
    ],
    *,
    budget: Annotated[int, typer.Option(min=50, help="Token budget of each packet.")] = 2000,
    questions: Annotated[
        int, typer.Option(min=1, help="Packets per conversation (its first questions).")
    ] = 20,
    embedder: Annotated[
        str, typer.Option(help="default (MiniLM on onnxruntime) or hashing.")
    ] = "default",
    json_out: JsonOut = None,
) -> None:
    """Context packets on real conversations: build time cold, from the hot tier and from a
    prepared result, and tokens per packet against sending the whole history."""
    from memledger.eval import bench_context
    from memledger.index.embedders import HashingEmbedder, default_embedder

    if embedder not in ("default", "hashing"):
        raise CliError(f"--embedder must be default or hashing, got {embedder!r}")
    for path in files:
        if not path.is_file():
            raise CliError(f"no benchmark file at {str(path)!r}")
    reports = []
    with render.progress_bar() as progress:
        report = _reporter(progress)

        for path in files:
            vectors = default_embedder() if embedder == "default" else HashingEmbedder()
            reports.append(
                bench_context.run(
                    path, budget=budget, questions=questions, embedder=vectors, progress=report
                )
            )
    _print(bench_context.markdown(reports))
    _write_json(json_out, [r.to_json() for r in reports])


@bench.command("extraction")
def extraction(
    ctx: typer.Context,
    *,
    locomo: Annotated[
        Path | None,
        typer.Option(help="A LoCoMo-shaped file (locomo-dev.json): also its observation coverage."),
    ] = None,
    labelled: Annotated[
        list[Path] | None,
        typer.Option(help="Labelled JSONL files instead of the packaged dev and held-out sets."),
    ] = None,
    json_out: JsonOut = None,
    extractor: ExtractorChoice = "rules",
) -> None:
    """What an extractor makes of plain first-person turns: precision and recall on
    labelled turns (dev and held-out) and, with --locomo, LoCoMo observation coverage."""
    from memledger.domain.families import Schema
    from memledger.eval import bench_extraction
    from memledger.eval.extraction._labels import LabelsFormatError
    from memledger.index.embedders import default_embedder

    files = None
    if labelled:
        for path in labelled:
            if not path.is_file():
                raise CliError(f"no labelled file at {str(path)!r}")
        files = {path.stem: path for path in labelled}
    if locomo is not None and not locomo.is_file():
        raise CliError(f"no benchmark file at {str(locomo)!r}")
    try:
        with open_extractor(extractor, settings_of(ctx), schema=Schema.default()) as chosen:
            report = bench_extraction.run(
                chosen,
                describe_extractor(chosen),
                labelled=files,
                locomo=locomo,
                embedder=default_embedder() if locomo is not None else None,
            )
    except LabelsFormatError as error:
        raise CliError(str(error)) from error
    except MemledgerError as error:
        raise CliError(f"the {extractor} extractor failed: {error}") from error
    _print(bench_extraction.markdown([report]))
    _write_json(json_out, report.to_json())


@bench.command("long-turn")
def long_turn(
    *,
    sizes: Annotated[
        str,
        typer.Option(metavar="MB,...", help="Sizes of the turn in millions of characters."),
    ] = "0.5,1,2,4",
    minilm: Annotated[
        bool, typer.Option("--minilm", help="Embed with the default ONNX MiniLM, not hashing.")
    ] = False,
    json_out: JsonOut = None,
) -> None:
    """One long turn (a pasted document) through ingest, extraction, index sync and a
    recall by a phrase from its middle: seconds per stage for each size."""
    from memledger.eval import bench_long_turn

    try:
        chars = [int(float(part) * 1_000_000) for part in sizes.split(",")]
    except ValueError:
        raise CliError(f"--sizes must be numbers separated by commas, got {sizes!r}") from None
    if not chars or min(chars) < 1_000:
        raise CliError(f"--sizes must each be at least 0.001 (1,000 characters), got {sizes!r}")
    timings = [bench_long_turn.run(n, minilm=minilm) for n in chars]
    _print(bench_long_turn.markdown(timings))
    if json_out is not None:
        report: dict[str, object] = {"machine": describe()}
        report["embedder"] = "minilm" if minilm else "hashing"
        report["turns"] = [t.to_json() for t in timings]
        _write_json(json_out, report)


@bench.command("serve")
def serve(
    *,
    duration: Annotated[float, typer.Option(help="Seconds of each phase.")] = 10.0,
    concurrency: Annotated[int, typer.Option(help="Clients of the closed-loop recall phase.")] = 16,
    rate: Annotated[float, typer.Option(help="Requests/s the mixed phase schedules.")] = 500.0,
    recall_share: Annotated[
        float, typer.Option(help="Share of recalls in the mixed phase (the rest ingest).")
    ] = 0.9,
    subjects: Annotated[int, typer.Option(help="Subjects seeded before the phases.")] = 50,
    url: Annotated[
        str | None,
        typer.Option(
            help="Drive this server instead of starting one (needs --key).", show_default=False
        ),
    ] = None,
    key: Annotated[
        str | None, typer.Option(help="API key for --url (a write key).", show_default=False)
    ] = None,
    noisy_key: Annotated[
        str | None,
        typer.Option(
            help="With --url: a write key of another tenant, to flood with (the noisy-neighbour "
            "phases run only with it).",
            show_default=False,
        ),
    ] = None,
    quiet_concurrency: Annotated[
        int, typer.Option(help="Clients of the quiet tenant's recalls, noisy-neighbour phases.")
    ] = 2,
    noisy_concurrency: Annotated[
        int, typer.Option(help="Clients of the noisy tenant's flood of contexts.")
    ] = 32,
    material_chars: Annotated[
        int, typer.Option(help="Characters of material in each context of the flood.")
    ] = 200_000,
    burst: Annotated[int, typer.Option(help="Writes of the burst-then-read phase.")] = 200,
    tenants: Annotated[
        int | None,
        typer.Option(
            help="Tenants of the child server the recall and mixed phases spread their load "
            "over, each with its own key and subjects. [default: 4; with --url, the key's "
            "tenant alone]",
            show_default=False,
        ),
    ] = None,
    threads: Annotated[
        int | None,
        typer.Option(
            help="Store work each request process of the child server runs at once "
            "(serve --threads). [default: serve's, no cap]",
            show_default=False,
        ),
    ] = None,
    max_in_flight: Annotated[
        int | None,
        typer.Option(
            help="API requests each request process of the child server admits at once "
            "(serve --max-in-flight). [default: serve's]",
            show_default=False,
        ),
    ] = None,
    processes: Annotated[
        str,
        typer.Option(
            metavar="N[,N...]",
            help="Request processes of the child server (serve --processes); several counts "
            "run one after the other and are reported side by side.",
        ),
    ] = "1",
    store: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="A PostgreSQL server (postgresql://..., allowed to create databases): every "
            "child server also runs on a scratch database there, after SQLite.",
            show_default=False,
        ),
    ] = None,
    json_out: JsonOut = None,
) -> None:
    """Load on the HTTP API from this process, on loopback: closed-loop recall, mixed
    recall/ingest traffic scheduled at --rate, a quiet tenant's recalls alone and beside
    another tenant's flood of large-material contexts, and a burst of writes then a read.
    Each phase: offered and answered (2xx) rates, p50/p95/p99 of the answered, errors by
    kind, shed and unfinished requests, and the child server's resident memory; and the
    machine. Every phase ends at most 2 s
    past its duration whatever the server does. With several --processes counts or
    --store, the same phases run against each child server, then side by side."""
    from memledger.eval import bench_serve

    # a value it refuses is an InvalidInputError: a caller mistake
    config = bench_serve.ServeBenchConfig(
        duration=duration,
        concurrency=concurrency,
        rate=rate,
        recall_share=recall_share,
        subjects=subjects,
        quiet_concurrency=quiet_concurrency,
        noisy_concurrency=noisy_concurrency,
        material_chars=material_chars,
        burst=burst,
        tenants=4 if tenants is None else tenants,
        threads=threads,
        max_in_flight=max_in_flight,
    )
    if (url is None) != (key is None):
        raise CliError("--url and --key go together")
    if noisy_key is not None and url is None:
        raise CliError("--noisy-key goes with --url (a child server makes its own)")
    counts = _sizes(processes, "--processes")
    _check_server(store)
    child_only = (store, tenants, threads, max_in_flight)
    if url is not None and (counts != [1] or any(v is not None for v in child_only)):
        raise CliError(
            "--processes, --store, --tenants, --threads and --max-in-flight are for a child"
            " server, not --url"
        )
    try:
        with render.progress_bar() as progress:
            if len(counts) > 1 or store is not None:
                from memledger.eval._serve_compare import compare

                report = compare(config, counts, store=store, progress=_reporter(progress))
            else:
                report = bench_serve.run(
                    replace(config, processes=counts[0]),
                    url=url,
                    key=key,
                    noisy_key=noisy_key,
                    progress=_reporter(progress),
                )
    except bench_serve.ServeBenchError as error:
        raise CliError(str(error)) from error
    _print(bench_serve.markdown(report))
    _write_json(json_out, report)
