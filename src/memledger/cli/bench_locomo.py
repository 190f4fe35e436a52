"""``memledger bench locomo`` and ``bench locomo-merge``: turn-level evidence recall of
retrievers over a LoCoMo-shaped file, in one run or in pieces merged afterwards
(:mod:`memledger.eval.locomo._pieces`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import TaskID

from memledger.cli import render
from memledger.cli._run import CliError
from memledger.cli.bench import _check_server, _print, _sizes, _write_json, bench
from memledger.errors import InvalidQueryError

if TYPE_CHECKING:
    from memledger.eval.locomo import Dataset, Report
    from memledger.eval.locomo._costs import Costs
    from memledger.eval.locomo._parts import RunKey
    from memledger.eval.locomo._pieces import Merged
    from memledger.read.recall import RecallSettings


@bench.command("locomo")
def locomo(
    path: Annotated[
        Path, typer.Argument(help="locomo-dev.json (LoCoMo-shaped JSON; never copied).")
    ],
    *,
    k: Annotated[str, typer.Option("--k", help="Comma-separated cut-offs.")] = "1,5,10,20",
    retriever: Annotated[
        str,
        typer.Option(
            "--retriever",
            help="Comma-separated registered retrievers: bm25, bm25-fts5, dense, dense-hashing, "
            "or any added with memledger.eval.locomo.register_retriever.",
        ),
    ] = "bm25",
    json_out: Annotated[
        Path | None,
        typer.Option(
            "--json",
            metavar="OUT",
            help="Write results as JSON to OUT: one object per retriever "
            '({"retriever", "questions", "recall": {group: {k: recall}}, '
            '"tokens_top10_mean", "latency_ms": {"p50", "p95"}, "costs": {"prepare_seconds", '
            '"turns_per_s", "tokens_per_s", "footprint_bytes", "peak_rss_mb", "growth"}}), '
            "a list of them when several retrievers ran.",
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Write a PNG of recall@k (needs the 'bench' extra)."),
    ] = None,
    limit_conversations: Annotated[
        int | None, typer.Option(min=1, help="Only the first N conversations.")
    ] = None,
    conversations: Annotated[
        str | None,
        typer.Option(
            metavar="SPEC",
            help="Only these conversations, by 1-based position in the file: e.g. "
            "1-5,9,12-14 (not with --limit-conversations).",
        ),
    ] = None,
    parts: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="Run each conversation with each retriever on its own and write its part "
            "into DIR when it is done; a part already there (same file and settings) is "
            "skipped, so the same command resumes a stopped run. The report covers these "
            "conversations; `bench locomo-merge DIR` gives that of every part.",
        ),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="A PostgreSQL server (postgresql://user@host/db, allowed to create "
            "databases): each memledger retriever keeps its store in a scratch database "
            "there, dropped after the run. Default: a SQLite file in a temporary folder.",
        ),
    ] = None,
    recall_settings: Annotated[
        str | None,
        typer.Option(
            metavar="JSON",
            help="RecallSettings of the memledger retrievers as a JSON object, e.g. "
            '\'{"keep_names": true, "vector_weight": 0.6}\' (the benchmark\'s floor of 0 '
            "stays unless given): a setting's effect, measured with the same command.",
        ),
    ] = None,
    growth: Annotated[
        str | None,
        typer.Option(
            metavar="TOKENS,...",
            help="Also time every question of a conversation with only its first TOKENS "
            "tokens prepared, for each count it exceeds (e.g. 100000,200000,300000,400000): "
            "search latency as the history grows, in each retriever's 'costs'.",
        ),
    ] = None,
) -> None:
    """LoCoMo turn-level evidence recall@k over raw turns, one row per retriever x category.

    A question's recall@k is the fraction of its evidence turns among the first k
    distinct turns returned; questions without evidence are skipped; overall_1_4
    averages categories 1-4, overall adds adversarial questions that have evidence.
    """
    from memledger.eval import locomo as harness
    from memledger.eval.locomo._costs import Metered
    from memledger.eval.locomo._pieces import pick, positions

    ks = _sizes(k, "--k")
    names = [name.strip() for name in retriever.split(",") if name.strip()]
    if not names or len(set(names)) != len(names):
        raise CliError(f"--retriever takes distinct comma-separated names, got {retriever!r}")
    if conversations is not None and limit_conversations is not None:
        raise CliError("--conversations and --limit-conversations cannot be combined")
    if not path.is_file():
        raise CliError(f"no LoCoMo file at {str(path)!r}")
    dataset = harness.load(path)
    count = len(dataset.conversations)
    chosen = (
        positions(conversations, count)
        if conversations is not None
        else list(range(1, min(limit_conversations or count, count) + 1))
    )
    _check_server(store)
    tuning = _recall_settings(recall_settings)
    checkpoints = [] if growth is None else sorted(set(_sizes(growth, "--growth")))
    if parts is not None:
        _locomo_in_parts(
            path,
            dataset,
            names=names,
            chosen=chosen,
            directory=parts,
            key=_run_key(path, ks=ks, growth=checkpoints, tuning=tuning, store=store),
            store=store,
            tuning=tuning,
        )
        _show_after(json_out=json_out, plot=plot, directory=parts, names=names, chosen=chosen)
        return
    dataset = pick(dataset, chosen)
    with _retrievers_made_with(store, tuning):
        retrievers = [
            (
                name,
                Metered(harness.create_retriever(name), dataset=dataset, checkpoints=checkpoints),
            )
            for name in names
        ]
    reports: list[harness.Report] = []
    with render.progress_bar() as progress:
        for name, instance in retrievers:
            task = progress.add_task(f"{name:10} questions", total=None)

            def report(done: int, total: int, task: TaskID = task) -> None:
                progress.update(task, completed=done, total=total)

            reports.append(harness.run(instance, dataset, name=name, ks=ks, progress=report))
    _show(
        reports,
        [metered.costs() for _, metered in retrievers],
        conversations=len(dataset.conversations),
        turns=sum(len(c.turns) for c in dataset.conversations),
        json_out=json_out,
        plot=plot,
    )


def _locomo_in_parts(
    path: Path,
    dataset: Dataset,
    *,
    names: Sequence[str],
    chosen: Sequence[int],
    directory: Path,
    key: RunKey,
    store: str | None,
    tuning: RecallSettings | None,
) -> None:
    """``--parts DIR``: every part already in DIR checked against this run before any
    work, each retriever tried once, then the missing parts run and written."""
    from memledger.eval import locomo as harness
    from memledger.eval.locomo._parts import check_retriever_name, check_same, read_parts
    from memledger.eval.locomo._pieces import run_parts

    for name in names:
        check_retriever_name(name)
    if directory.exists():
        check_same(read_parts(directory), directory, key)

    def create(name: str) -> harness.Retriever:
        with _retrievers_made_with(store, tuning):
            return harness.create_retriever(name)

    for name in names:  # an unknown or unavailable retriever fails before any part
        tried = create(name)
        if isinstance(tried, harness.Closeable):
            tried.close()
    directory.mkdir(parents=True, exist_ok=True)
    with render.progress_bar() as progress:
        tasks: dict[str, TaskID] = {}

        def report(what: str, done: int, total: int) -> None:
            if what not in tasks:
                tasks[what] = progress.add_task(f"{what:14} questions", total=total)
            progress.update(tasks[what], completed=done, total=total)

        written, skipped = run_parts(
            names, dataset, chosen=chosen, directory=directory, key=key, create=create,
            progress=report,
        )  # fmt: skip
    _print(
        f"parts in {str(directory)!r} from {path.name}: {written} written, "
        f"{skipped} already there (skipped)\n"
    )


def _show_after(
    *,
    json_out: Path | None,
    plot: Path | None,
    directory: Path,
    names: Sequence[str],
    chosen: Sequence[int],
) -> None:
    """The report of the parts of ``names`` at ``chosen`` positions in ``directory``."""
    from memledger.eval.locomo._parts import read_parts
    from memledger.eval.locomo._pieces import merge

    wanted = set(chosen)
    found = [p for p in read_parts(directory) if p.position in wanted and p.retriever in names]
    _show_merged(merge(found, directory, order=names), json_out=json_out, plot=plot)


@bench.command("locomo-merge")
def locomo_merge(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="The folder of parts of `bench locomo --parts`.")
    ],
    *,
    json_out: Annotated[
        Path | None,
        typer.Option(
            "--json", metavar="OUT", help="Write results as JSON to OUT, as bench locomo does."
        ),
    ] = None,
    expect: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help="Fail, naming what is missing, unless every retriever has a part for each "
            "of conversations 1 to N.",
        ),
    ] = None,
) -> None:
    """The report of `bench locomo` over every part in DIR: the same table and JSON as
    one run over the conversations the parts cover.

    Recall, tokens and latency percentiles are those of every question of the parts;
    turns, tokens, preparation time and footprint add up, peak RSS is the largest.
    """
    from memledger.eval.locomo._parts import read_parts
    from memledger.eval.locomo._pieces import merge, missing

    found = read_parts(directory)
    if expect is not None and found:
        gaps = missing(found, expect)
        if gaps:
            raise CliError(
                f"{str(directory)!r} lacks parts of conversations 1 to {expect}: "
                + "; ".join(f"{name} {_spans(held)}" for name, held in gaps.items())
                + " (run them with bench locomo --conversations ... --parts DIR)"
            )
    _show_merged(merge(found, directory), json_out=json_out, plot=None)


def _spans(numbers: Sequence[int]) -> str:
    """``[2, 3, 4, 9]`` as ``"2-4,9"`` (what --conversations takes)."""
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _show(
    reports: Sequence[Report],
    costs: Sequence[Costs],
    *,
    conversations: int,
    turns: int,
    json_out: Path | None,
    plot: Path | None,
) -> None:
    from memledger.eval.locomo._plot import plot as write_plot
    from memledger.eval.locomo._render import json_body, markdown

    _print(
        f"memledger bench locomo, {conversations} conversations, {turns:,} turns, turn recall@k\n"
    )
    _print(markdown(reports))
    _print("\n".join(c.markdown_line(r.retriever) for r, c in zip(reports, costs, strict=True)))
    _write_json(json_out, json_body(reports, [c.to_json() for c in costs]))
    if plot is not None:
        write_plot(reports, plot)


def _show_merged(merged: Merged, *, json_out: Path | None, plot: Path | None) -> None:
    _show(
        list(merged.reports),
        list(merged.costs),
        conversations=merged.conversations,
        turns=merged.turns,
        json_out=json_out,
        plot=plot,
    )


def _run_key(
    path: Path,
    *,
    ks: Sequence[int],
    growth: Sequence[int],
    tuning: RecallSettings | None,
    store: str | None,
) -> RunKey:
    """What every part of this run shares (:class:`~memledger.eval.locomo._parts.RunKey`)."""
    from memledger import __version__
    from memledger.eval.locomo._parts import RunKey, input_identity
    from memledger.eval.machine import describe
    from memledger.read.recall import RecallSettings

    size, digest = input_identity(path)
    chosen = tuning or RecallSettings(floor=0.0)
    settings = {  # a mapping field (half_lives) is a read-only proxy: JSON takes a dict
        f.name: dict(value) if isinstance(value := getattr(chosen, f.name), Mapping) else value
        for f in dataclasses.fields(chosen)
    }
    return RunKey(
        input_bytes=size,
        input_sha256=digest,
        ks=tuple(sorted(set(ks))),
        growth=tuple(growth),
        recall_settings=json.loads(json.dumps(settings)),
        store="sqlite" if store is None else "postgresql",
        version=__version__,
        commit=str(describe().get("commit", "")),
    )


def _recall_settings(text: str | None) -> RecallSettings | None:
    """``--recall-settings``: a JSON object of RecallSettings fields, floor 0 unless given."""
    from memledger.read.recall import RecallSettings

    if text is None:
        return None
    try:
        fields = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"--recall-settings is not JSON: {exc}") from exc
    if not isinstance(fields, dict):
        raise CliError(f"--recall-settings takes a JSON object, got {text!r}")
    known = {f.name for f in dataclasses.fields(RecallSettings)}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise CliError(
            f"--recall-settings: no setting {', '.join(map(repr, unknown))}; "
            f"known: {', '.join(sorted(known))}"
        )
    try:
        return RecallSettings(**{"floor": 0.0, **fields})
    except (InvalidQueryError, TypeError) as exc:
        raise CliError(f"--recall-settings: {exc}") from exc


@contextmanager
def _retrievers_made_with(url: str | None, settings: RecallSettings | None) -> Iterator[None]:
    """The memledger retrievers created inside keep their store on ``url`` (a
    PostgreSQL server, else SQLite) and recall with ``settings``."""
    from memledger.eval.locomo._memledger import SETTINGS, STORE_SERVER

    server, tuned = STORE_SERVER.set(url), SETTINGS.set(settings)
    try:
        yield
    finally:
        SETTINGS.reset(tuned)
        STORE_SERVER.reset(server)
