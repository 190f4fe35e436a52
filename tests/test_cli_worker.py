"""``memledger worker``, ``rederive``, ``stats``, ``retry-failed`` and ``jobs``, for real.

Stores are SQLite files in ``tmp_path``. ``--extractor llm`` talks HTTP to a
``FakeChatServer`` on a loopback port. The long-running worker runs as a
subprocess and is stopped with SIGTERM. Tests named ``..._rules`` (and the
``rules`` case of the long-running one) use the default rule-based extractor;
every command is also covered with ``--extractor llm``.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import chat_helpers
from chat_helpers import claims_answer
from cli_helpers import assert_one_error, event_json, snapshot
from memledger.cli import app
from memledger.domain.records import Claim, SourceEvent
from memledger.errors import ExtractionError
from memledger.memory import Memory
from memledger.testing import FunctionExtractor
from memledger.testing.openai_server import FakeChatServer, RecordedRequest
from memledger.write.worker import Worker, WorkerSettings

runner = CliRunner()

UNSET = (
    "MEMLEDGER_URL",
    "MEMLEDGER_TENANT",
    "MEMLEDGER_DEBUG",
    "MEMLEDGER_LLM_BASE_URL",
    "MEMLEDGER_LLM_MODEL",
    "MEMLEDGER_LLM_API_KEY",
)
HERMETIC: dict[str, str | None] = dict.fromkeys(UNSET)
PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")

TEXT = "I live in Lyon. Please deliver daily. Our trip to Lisbon is on."
GRANTS = ["home_city", "delivery_preference", "plan"]
TENANT = ["--tenant", "acme"]


pytestmark = pytest.mark.usefixtures("no_proxies")  # the fake server is on 127.0.0.1


def run(
    args: Sequence[str], *, env: dict[str, str] | None = None, stdin: str | None = None
) -> Result:
    return runner.invoke(app, list(args), input=stdin, env={**HERMETIC, **(env or {})})


def ok(args: Sequence[str], **kwargs: Any) -> str:
    result = run(args, **kwargs)
    assert result.exit_code == 0, result.output
    return result.stdout


def ok_json(args: Sequence[str], **kwargs: Any) -> Any:
    return json.loads(ok([*args, "--json"], **kwargs))


def cells(table: str, first: str) -> list[str]:
    """The cells of the one table row whose first cell is ``first``."""
    rows = [
        [cell.strip() for cell in line.strip().strip("│").split("│")]
        for line in table.splitlines()
        if line.startswith("│")
    ]
    (row,) = [row for row in rows if row[0] == first]
    return row


def event(event_id: str = "evt-1", **fields: Any) -> dict[str, Any]:
    return event_json(event_id, grants=GRANTS, **{"text": TEXT, **fields})


def ingest(db: Path, *events: dict[str, Any]) -> list[dict[str, Any]]:
    """Ingest ``events`` with ``memledger ingest``; returns their receipts."""
    receipts = ok_json(["ingest", "-", "--db", str(db)], stdin=json.dumps(list(events)))
    assert isinstance(receipts, list)
    return receipts


def queue(db: Path, *event_ids: str) -> None:
    """Ingest events without claims: each queues an extraction job."""
    events = [
        event(event_id, sequence=n, occurred_at=f"2026-10-0{n + 1}T09:00:00Z")
        for n, event_id in enumerate(event_ids, start=1)
    ]
    assert [r["outcome"] for r in ingest(db, *events)] == ["queued"] * len(event_ids)


def read(command: str, family: str, db: Path) -> list[dict[str, Any]]:
    records = ok_json([command, "user-42", family, "--db", str(db), *TENANT])
    assert isinstance(records, list)
    return records


def jobs(db: Path, *extra: str) -> list[dict[str, Any]]:
    found = ok_json(["jobs", "--db", str(db), *TENANT, *extra])
    assert isinstance(found, list)
    return found


# -- the fake model ----------------------------------------------------------------------


def proposal(**fields: object) -> dict[str, object]:
    """A claim object (``chat_helpers.proposal``) grounded in ``TEXT``: lives in Lyon."""
    lyon = {"statement": "The user lives in Lyon.", "grounding": "I live in Lyon"}
    return chat_helpers.proposal(**{**lyon, **fields})


def lyon(request: RecordedRequest) -> str:
    """The model: a home city for every turn that names Lyon, nothing otherwise."""
    return claims_answer(proposal()) if "Lyon" in request.content_of("user") else claims_answer()


@pytest.fixture
def server() -> Iterator[FakeChatServer]:
    with FakeChatServer(lyon) as running:
        yield running


def llm_env(server: FakeChatServer) -> dict[str, str]:
    return {"MEMLEDGER_LLM_BASE_URL": server.base_url, "MEMLEDGER_LLM_MODEL": "fake-model"}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "mem.db"


# -- worker --drain ----------------------------------------------------------------------


def test_worker_drain_commits_claims_and_episodes_rules(db: Path) -> None:
    queue(db, "evt-1", "evt-2")
    report = ok_json(["worker", "--drain", "--db", str(db)])
    assert report["mode"] == "drain" and report["stopped_by"] is None
    assert (report["jobs"], report["outcomes"]["committed"]) == (2, 2)
    assert report["errors"] == []
    cities = read("current", "home_city", db)
    assert cities and all(r["extractor"]["kind"] == "rules" for r in cities)
    assert "lyon" in json.dumps([r["value"] for r in cities]).lower()
    episodes = read("timeline", "conversation", db)
    assert sorted(r["source_event_id"] for r in episodes) == ["evt-1", "evt-2"]
    assert jobs(db) == []
    assert {j["status"] for j in jobs(db, "--all")} == {"done"}


def test_worker_drain_with_llm_commits_what_the_model_returns(
    db: Path, server: FakeChatServer
) -> None:
    queue(db, "evt-1", "evt-2")
    env = llm_env(server)
    report = ok_json(["worker", "--extractor", "llm", "--drain", "--db", str(db)], env=env)
    assert report["outcomes"] == {
        "committed": 2,
        "review": 0,
        "prefiltered": 0,
        "retry": 0,
        "failed": 0,
        "duplicate": 0,
    }
    assert len(server.completions) == 2
    assert TEXT in server.completions[0].content_of("user")
    (city,) = read("current", "home_city", db)  # evt-2 repeated it: a mention, not a window
    assert (city["value"], city["source_event_id"]) == ("lyon", "evt-1")
    assert len(read("history", "home_city", db)) == 1
    assert (city["extractor"]["kind"], city["extractor"]["model"]) == ("llm", "fake-model")
    assert read("current", "delivery_preference", db) == []  # the model proposed none
    episodes = read("timeline", "conversation", db)
    assert [(r["kind"], r["source_event_id"]) for r in episodes] == [
        ("episode", "evt-1"),
        ("episode", "evt-2"),
    ]
    assert [j["status"] for j in jobs(db, "--all")] == ["done", "done"]
    # nothing is left: a second drain runs nothing, and says so in a table
    again = ok(["worker", "--extractor", "llm", "--drain", "--db", str(db)], env=env)
    assert "0 job(s) run" in again
    assert len(server.completions) == 2


def test_worker_drain_table_and_tenant_filter(db: Path, server: FakeChatServer) -> None:
    queue(db, "evt-1")
    ingest(db, {**event("evt-9"), "tenant": "beta"})
    env = llm_env(server)
    out = ok(
        ["worker", "--extractor", "llm", "--drain", "--tenant", "beta", "--db", str(db)], env=env
    )
    assert "tenant 'beta'" in out and "1 job(s) run" in out
    assert cells(out, "committed") == ["committed", "1"]
    assert cells(out, "retry") == ["retry", "0"]
    assert [j["status"] for j in jobs(db)] == ["queued"]  # acme's job was left alone
    assert ok_json(["jobs", "--db", str(db), "--tenant", "beta", "--all"])[0]["status"] == "done"


# -- failures, stats, retry-failed ---------------------------------------------------------


def test_an_endpoint_failure_leaves_the_job_queued_with_its_reason(db: Path) -> None:
    queue(db, "evt-1")
    before = read("history", "home_city", db)
    with FakeChatServer() as failing:  # unscripted: every request answers HTTP 500
        env = llm_env(failing)
        report = ok_json(["worker", "--extractor", "llm", "--drain", "--db", str(db)], env=env)
        assert len(failing.completions) == 1
    assert (report["jobs"], report["outcomes"]["retry"]) == (1, 1)
    (error,) = report["errors"]
    assert error.startswith("evt-1: http_500:")

    (job,) = jobs(db)
    assert (job["status"], job["attempts"]) == ("queued", 1)
    assert job["last_error"].startswith("http_500: ")
    assert "answered HTTP 500" in job["last_error"]
    assert job["next_attempt_at"] is not None
    row = cells(ok(["jobs", "--db", str(db), *TENANT]), job["job_id"])
    assert row[1:4] == ["evt-1", "queued", "1"]
    assert row[4].startswith("http_500:")  # last error (folded over several lines)
    assert row[5] == job["next_attempt_at"]

    assert ok_json(["stats", "--db", str(db), *TENANT]) == {
        "tenant": "acme",
        "counters": {"extraction:http_500": 1},
    }
    stats = ok(["stats", "--db", str(db), *TENANT])
    assert cells(stats, "extraction errors") == ["extraction errors", "http_500", "1"]
    assert read("history", "home_city", db) == before == []
    assert read("timeline", "conversation", db) == []  # no episode either: nothing committed


def test_stats_counts_rejections_and_gate_drops(db: Path) -> None:
    queue(db, "evt-1")
    assert ok(["stats", "--db", str(db), *TENANT]) == (
        "no write-path counters for tenant 'acme' yet\n"
    )
    # the family is revoked after the job was queued: its claim is stale when it lands
    ok(["revoke-family", "user-42", "home_city", "--db", str(db), *TENANT])
    ungrounded = proposal(family="plan", statement="Trip to Paris", value="on", grounding="Paris")
    with FakeChatServer(lambda request: claims_answer(proposal(), ungrounded)) as model:
        ok(["worker", "--extractor", "llm", "--drain", "--db", str(db)], env=llm_env(model))
    assert ok_json(["stats", "--db", str(db), *TENANT])["counters"] == {
        "gate:ungrounded": 1,
        "rejected:stale_generation": 1,
    }
    stats = ok(["stats", "--db", str(db), *TENANT])
    assert cells(stats, "dropped by gates") == ["dropped by gates", "ungrounded", "1"]
    assert cells(stats, "rejected at commit") == ["rejected at commit", "stale_generation", "1"]
    assert read("current", "home_city", db) == []


def _fail_once_for_good(db: Path) -> None:
    """Leave the queued job of ``db`` failed: one attempt allowed, and it fails."""

    def down(source: SourceEvent) -> list[Claim]:
        raise ExtractionError("connection refused", reason="endpoint_unreachable")

    with Memory.open(db, create=False) as memory:
        settings = WorkerSettings(max_attempts=1, backoff=timedelta(seconds=0))
        report = Worker(memory.writing, FunctionExtractor(down), settings=settings).drain()
    assert report.outcomes == {"failed": 1}


def test_retry_failed_requeues_and_the_worker_then_commits(
    db: Path, server: FakeChatServer
) -> None:
    queue(db, "evt-1")
    _fail_once_for_good(db)
    (job,) = jobs(db)
    assert (job["status"], job["last_error"]) == (
        "failed",
        "endpoint_unreachable: connection refused",
    )
    row = cells(ok(["jobs", "--db", str(db), *TENANT]), job["job_id"])
    assert row[1:6] == [
        "evt-1",
        "failed",
        "1",
        "endpoint_unreachable: connection refused",
        "after retry-failed",
    ]
    env = llm_env(server)
    nothing = ok_json(["worker", "--extractor", "llm", "--drain", "--db", str(db)], env=env)
    assert nothing["jobs"] == 0 and server.completions == ()  # a failed job is not retried

    assert ok(["retry-failed", "--db", str(db), *TENANT]) == (
        "requeued 1 failed job(s) of tenant 'acme'\n"
    )
    (job,) = jobs(db)
    assert (job["status"], job["attempts"]) == ("queued", 0)
    assert ok_json(["retry-failed", "--db", str(db), *TENANT]) == {"tenant": "acme", "requeued": 0}
    assert "nothing requeued" in ok(["retry-failed", "--db", str(db), *TENANT])

    done = ok_json(["worker", "--extractor", "llm", "--drain", "--db", str(db)], env=env)
    assert done["outcomes"]["committed"] == 1
    assert [r["value"] for r in read("current", "home_city", db)] == ["lyon"]
    assert jobs(db) == []


# -- rederive ------------------------------------------------------------------------------


def _committed(db: Path) -> None:
    """``evt-1`` with caller claims: delivery "daily" and a plan; no home city."""
    claims = [
        {
            "family": "delivery_preference",
            "kind": "preference",
            "statement": "Wants daily delivery",
            "value": "daily",
            "grounding": "deliver daily",
        },
        {
            "family": "plan",
            "kind": "fact",
            "statement": "The trip to Lisbon is on",
            "value": "on",
            "scope": "plan:lisbon",
            "grounding": "Our trip to Lisbon is on",
        },
    ]
    (receipt,) = ingest(db, event(claims=claims))
    assert receipt["outcome"] == "committed"


def rederiver(request: RecordedRequest) -> str:
    """Another model: a home city, delivery "every day", and no plan."""
    every_day = proposal(
        family="delivery_preference",
        kind="preference",
        statement="Please deliver daily",
        value="every day",
        grounding="deliver daily",
    )
    return claims_answer(proposal(), every_day)


def test_rederive_with_llm_prints_the_diff_and_writes_nothing(db: Path) -> None:
    _committed(db)
    before = snapshot(db)
    with FakeChatServer(rederiver) as model:
        args = ["rederive", "user-42", "--extractor", "llm", "--db", str(db), *TENANT]
        table = ok(args, env=llm_env(model))
        diff = ok_json(args, env=llm_env(model))
        assert len(model.completions) == 2
    assert snapshot(db) == before

    assert (diff["subject"], diff["tenant"], diff["events"], diff["dry_run"]) == (
        "user-42",
        "acme",
        1,
        True,
    )
    assert diff["extractor"] == "llm:openai-compatible@1"
    assert [(r["family"], r["value"], r["source_event_id"]) for r in diff["added"]] == [
        ("home_city", "lyon", "evt-1")
    ]
    assert [(r["family"], r["scope"], r["value"]) for r in diff["closed"]] == [
        ("plan", "plan:lisbon", "on")
    ]
    (changed,) = diff["changed"]
    assert (changed["before"]["value"], changed["after"]["value"]) == ("daily", "every day")
    assert diff["unchanged"] == 0

    assert "re-derivation of 'user-42' (tenant 'acme') with llm:openai-compatible@1" in table
    lines = table.splitlines()
    (added,) = [ln for ln in lines if "added" in ln and "home_city" in ln]
    assert '"lyon"' in added and "evt-1" in added and "[2026-10-02T09:00:00Z, open)" in added
    (closed,) = [ln for ln in lines if "closed" in ln and "plan" in ln]
    assert "plan:lisbon" in closed and '"on"' in closed
    assert cells(table, "changed") == [
        "changed",
        "delivery_preference",
        "global",
        '"daily" -> "every day"',
        "[2026-10-02T09:00:00Z, open)",
        "evt-1",
    ]
    assert "1 added, 1 closed, 1 changed, 0 unchanged" in table
    assert "nothing was written" in table


def test_rederive_writes_nothing_rules(db: Path) -> None:
    _committed(db)
    before = snapshot(db)
    table = ok(["rederive", "user-42", "--extractor", "rules", "--db", str(db), *TENANT])
    assert "re-derivation of 'user-42'" in table and "rules:" in table
    assert "nothing was written" in table
    diff = ok_json(["rederive", "user-42", "--extractor", "rules", "--db", str(db), *TENANT])
    assert diff["dry_run"] is True and diff["events"] == 1
    assert snapshot(db) == before


def test_rederive_of_a_subject_without_events_says_there_is_no_difference(db: Path) -> None:
    _committed(db)
    with FakeChatServer(rederiver) as model:
        table = ok(
            ["rederive", "user-7", "--extractor", "llm", "--db", str(db), *TENANT],
            env=llm_env(model),
        )
        assert model.completions == ()
    assert "over 0 event(s)" in table and "no differences" in table
    assert "nothing was written" in table


# -- the long-running worker ---------------------------------------------------------------


def _wait_for_line(stream: Any, *, timeout: float) -> str:
    """The next line of a subprocess pipe, or fail after ``timeout`` seconds."""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        assert selector.select(timeout), f"no output within {timeout} s"
    line = stream.readline()
    assert isinstance(line, str)
    return line


def _until(check: Callable[[], bool], *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not done within {timeout} s"
        time.sleep(0.05)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize(
    ("extractor", "as_json"),
    [
        pytest.param("llm", False, id="llm-table"),
        pytest.param("llm", True, id="llm-json"),
        pytest.param("rules", False, id="rules-table"),
    ],
)
def test_long_running_worker_processes_new_events_and_stops_on_sigterm(
    db: Path, server: FakeChatServer, extractor: str, as_json: bool
) -> None:
    Memory.open(db).close()  # an empty store: the worker never creates one
    env = {k: v for k, v in os.environ.items() if k not in UNSET and k not in PROXIES}
    env.update(llm_env(server))
    command = [sys.executable, "-m", "memledger.cli", "worker", "--extractor", extractor]
    command += ["--poll", "0.05", "--db", str(db), *(["--json"] if as_json else [])]
    started = time.monotonic()
    with subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            banner = _wait_for_line(proc.stderr, timeout=10)
            assert banner.startswith("memledger worker: running jobs of "), banner
            assert "every tenant" in banner and "Ctrl-C or SIGTERM" in banner
            queue(db, "evt-1")  # ingested while the worker runs
            _until(lambda: [j["status"] for j in jobs(db, "--all")] == ["done"], timeout=10)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert time.monotonic() - started < 15
    assert proc.returncode == 0, err
    assert err == "", err  # the banner was read already; no error line
    if as_json:
        summary = json.loads(out)
        assert (summary["mode"], summary["stopped_by"], summary["jobs"]) == ("run", "SIGTERM", 1)
        assert summary["outcomes"]["committed"] == 1
    else:
        assert "worker stopped by SIGTERM after 1 job(s)" in out
        assert cells(out, "committed") == ["committed", "1"]
    cities = read("current", "home_city", db)
    assert cities and all(r["extractor"]["kind"] == extractor for r in cities)
    assert [r["source_event_id"] for r in read("timeline", "conversation", db)] == ["evt-1"]


# -- bad input: one error line, exit 2, nothing written -------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["worker", "--drain", "--extractor", "bogus"],
        ["worker", "--extractor", "bogus"],
        ["rederive", "user-42", "--extractor", "bogus", *TENANT],
    ],
)
def test_unknown_extractor_is_one_error_line(db: Path, args: list[str]) -> None:
    _committed(db)
    before = snapshot(db)
    assert_one_error(run([*args, "--db", str(db)]), "--extractor", "'bogus'", "'rules', 'llm'")
    assert snapshot(db) == before


@pytest.mark.parametrize(
    ("env", "fragments"),
    [
        ({}, ["not configured", "MEMLEDGER_LLM_BASE_URL and MEMLEDGER_LLM_MODEL"]),
        ({"MEMLEDGER_LLM_BASE_URL": "http://127.0.0.1:9/v1"}, ["set MEMLEDGER_LLM_MODEL ("]),
        (
            {"MEMLEDGER_LLM_BASE_URL": "ftp://example", "MEMLEDGER_LLM_MODEL": "m"},
            ["MEMLEDGER_LLM_BASE_URL", "not usable", "http(s) URL"],
        ),
    ],
)
@pytest.mark.parametrize(
    "args",
    [
        ["worker", "--extractor", "llm", "--drain"],
        ["worker", "--extractor", "llm"],
        ["rederive", "user-42", "--extractor", "llm", *TENANT],
    ],
)
def test_unusable_llm_settings_are_one_error_line(
    db: Path, args: list[str], env: dict[str, str], fragments: list[str]
) -> None:
    queue(db, "evt-1")
    before = snapshot(db)
    assert_one_error(run([*args, "--db", str(db)], env=env), *fragments)
    assert snapshot(db) == before


@pytest.mark.parametrize(
    "args",
    [
        ["worker", "--drain"],
        ["worker", "--extractor", "llm", "--drain"],
        ["worker"],
        ["rederive", "user-42", "--extractor", "llm", *TENANT],
        ["stats", *TENANT],
        ["retry-failed", *TENANT],
    ],
)
def test_a_missing_store_is_an_error_and_is_not_created(
    tmp_path: Path, server: FakeChatServer, args: list[str]
) -> None:
    db = tmp_path / "never.db"
    assert_one_error(run([*args, "--db", str(db)], env=llm_env(server)), "no memledger store")
    assert not db.exists()
    assert server.completions == ()


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["rederive", "user-42", *TENANT], ["Missing option '--extractor'"]),
        (["worker", "--drain", "--tenant", "no spaces"], ["tenant 'no spaces'"]),
        (["worker", "--drain", "--batch", "0"], ["--batch"]),
        (["worker", "--poll", "0"], ["--poll"]),
        (["rederive", "user 42", "--extractor", "llm", *TENANT], ["subject 'user 42'"]),
    ],
)
def test_bad_options_are_one_error_line(
    db: Path, server: FakeChatServer, args: list[str], fragments: list[str]
) -> None:
    queue(db, "evt-1")
    before = snapshot(db)
    assert_one_error(run([*args, "--db", str(db)], env=llm_env(server)), *fragments)
    assert snapshot(db) == before
    assert server.completions == ()


def test_without_a_tenant_one_tenant_s_commands_act_for_default_the_others_for_all(
    db: Path,
) -> None:
    """``stats``, ``retry-failed``, ``jobs`` act for tenant 'default' when none is named;
    ``status``, ``expire`` and ``worker`` keep acting for every tenant (and read no
    MEMLEDGER_TENANT)."""
    queue(db, "evt-1")  # a job of tenant acme
    where = ["--db", str(db)]
    assert ok_json(["stats", *where])["tenant"] == "default"
    assert "for tenant 'default'" in ok(["retry-failed", *where])
    assert ok_json(["jobs", *where]) == [] and len(jobs(db)) == 1
    env = {"MEMLEDGER_TENANT": "default"}  # not read by the commands over every tenant
    every = ok_json(["status", *where], env=env)
    assert every["tenant"] is None and every["extraction"]["queued_jobs"] == 1
    assert ok_json(["expire", *where], env=env) == []
    drained = ok_json(["worker", "--drain", *where], env=env)
    assert drained["jobs"] == 1  # acme's job: every tenant's queue
    assert jobs(db) == []


def test_help_lists_the_new_commands() -> None:
    out = ok(["--help"])
    for command in ("worker", "rederive", "stats", "retry-failed", "jobs"):
        assert command in out
