"""Session (working) memory: the rolling window and its schedule, compression on
arrival, budgeted views, isolation, persistence, bad input, and its separation from
the long-term store. Real SQLite files, a frozen clock."""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import sqlite3
import tempfile
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memledger.session
from cli_helpers import snapshot
from memledger import InvalidInputError, Memory
from memledger.session import (
    CompactionPolicy,
    ExtractiveSummarizer,
    SessionItem,
    SessionMemory,
    SessionView,
    compress_tool_output,
    default_session_path,
)
from memledger.testing import FrozenClock
from memledger.tokens import ApproxBpeTokenizer

TOKENS = ApproxBpeTokenizer()
SMALL = CompactionPolicy(window_turns=4, every_turns=3, tool_tokens=120, summary_tokens=80)


def _open(path: Path, policy: CompactionPolicy = SMALL, **options: Any) -> SessionMemory:
    return SessionMemory(path, clock=FrozenClock(), policy=policy, **options)


def _seqs(view: SessionView) -> list[int]:
    return [item.seq for item in view.turns]


def _talk(memory: SessionMemory, count: int, *, tenant: str = "t1", session: str = "s1") -> None:
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        memory.add_turn(tenant, session, role=role, text=f"Turn {i} mentions topic{i}.")


# -- the rolling window and the schedule ------------------------------------------------


def test_compaction_runs_exactly_every_n_turns_beyond_the_window(tmp_path: Path) -> None:
    with _open(tmp_path / "s.sessions") as memory:
        for n in range(1, 7):  # window 4 + every 3 = 7: nothing is folded before the 7th
            memory.add_turn("t1", "s1", role="user", text=f"Turn {n} is here.")
            assert memory.view("t1", "s1").summary is None
            assert _seqs(memory.view("t1", "s1")) == list(range(1, n + 1))
        memory.add_turn("t1", "s1", role="assistant", text="Turn 7 is here.")
        view = memory.view("t1", "s1")
        assert view.summary is not None and view.summary.covers == (1, 3)
        assert view.items[0] is view.summary and view.summary.seq == 3
        assert _seqs(view) == [4, 5, 6, 7]
        for n in (8, 9):
            memory.add_turn("t1", "s1", role="user", text=f"Turn {n} is here.")
            assert memory.view("t1", "s1").summary.covers == (1, 3)  # type: ignore[union-attr]
        memory.add_turn("t1", "s1", role="assistant", text="Turn 10 is here.")
        view = memory.view("t1", "s1")
        assert view.summary is not None and view.summary.covers == (1, 6)
        assert _seqs(view) == [7, 8, 9, 10]
        assert "user: Turn 1 is here." in view.summary.text


def test_compaction_does_not_run_when_tokens_overflow(tmp_path: Path) -> None:
    """Six turns of 3,000 tokens each are far past any window of tokens: no compaction
    until the seventh turn, which the schedule names."""
    huge = " ".join(["word"] * 3000)
    with _open(tmp_path / "s.sessions") as memory:
        for _ in range(6):
            memory.add_turn("t1", "s1", role="user", text=huge)
        view = memory.view("t1", "s1")
        assert view.summary is None and view.tokens == 6 * 3000
        memory.add_turn("t1", "s1", role="user", text="short")
        assert memory.view("t1", "s1").summary is not None


def test_compact_now_folds_what_lies_beyond_the_window(tmp_path: Path) -> None:
    with _open(tmp_path / "s.sessions") as memory:
        _talk(memory, 4)
        assert memory.compact("t1", "s1") is None  # nothing beyond the window
        assert memory.compact("t1", "unknown") is None
        _talk(memory, 2)
        summary = memory.compact("t1", "s1")
        assert summary is not None and summary.role == "summary" and summary.covers == (1, 2)
        assert _seqs(memory.view("t1", "s1")) == [3, 4, 5, 6]
        _talk(memory, 2)  # 6 unsummarized: the schedule counts again from the window
        assert memory.view("t1", "s1").summary.covers == (1, 2)  # type: ignore[union-attr]
        _talk(memory, 1)
        assert memory.view("t1", "s1").summary.covers == (1, 5)  # type: ignore[union-attr]


_WORDS = ["invoice", "total", "march", "lyon", "flight", "budget", "report", "tool", "error"]
_sentence = st.builds(
    lambda words, end: " ".join(words).capitalize() + end,
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6),
    st.sampled_from([".", "?", "!"]),
)
_turn = st.tuples(
    st.sampled_from(["user", "assistant", "tool"]),
    st.lists(_sentence, min_size=1, max_size=4).map(" ".join),
    st.integers(min_value=0, max_value=40),  # extra lines, to make some tool results large
)
_operation = st.one_of(_turn, st.just("compact"))


@settings(max_examples=60, deadline=None)
@given(
    operations=st.lists(_operation, min_size=1, max_size=40),
    window=st.integers(min_value=1, max_value=5),
    every=st.integers(min_value=1, max_value=5),
    summary_tokens=st.integers(min_value=4, max_value=60),
)
def test_window_and_summary_invariants_hold_after_every_step(
    operations: Sequence[tuple[str, str, int] | str],
    window: int,
    every: int,
    summary_tokens: int,
) -> None:
    policy = CompactionPolicy(
        window_turns=window, every_turns=every, tool_tokens=60, summary_tokens=summary_tokens
    )
    added: dict[int, str] = {}
    unsummarized = 0
    with tempfile.TemporaryDirectory() as folder, _open(Path(folder) / "s", policy) as memory:
        for operation in operations:
            if operation == "compact":
                summary = memory.compact("t1", "s1")
                assert (summary is not None) == (unsummarized > window)
                unsummarized = min(unsummarized, window)
            else:
                role, text, extra = operation
                text += "".join(f"\nline {i} of tool output" for i in range(extra))
                item = memory.add_turn("t1", "s1", role=role, text=text)  # type: ignore[arg-type]
                assert item.seq == len(added) + 1
                added[item.seq] = item.text
                assert item.tokens <= policy.tool_tokens or role != "tool"
                unsummarized += 1
                if unsummarized == window + every:
                    unsummarized = window
            view = memory.view("t1", "s1")
            total = len(added)
            newest = list(range(total - unsummarized + 1, total + 1))
            assert _seqs(view) == newest
            assert [t.text for t in view.turns] == [added[s] for s in newest]
            seqs = [item.seq for item in view.items]
            assert all(a < b for a, b in itertools.pairwise(seqs))
            covered: set[int] = set()
            if total - unsummarized > 0:
                assert view.summary is not None and view.items[0] == view.summary
                assert view.summary.covers == (1, total - unsummarized)
                covered = set(range(1, total - unsummarized + 1))
                assert TOKENS.count(view.summary.text) == view.summary.tokens
                assert view.summary.tokens <= summary_tokens
            else:
                assert view.summary is None
            assert covered.isdisjoint(newest) and covered | set(newest) == set(added)


# -- compression on arrival ---------------------------------------------------------------


def _log(lines: int = 400) -> list[str]:
    return [
        f"2026-03-01 12:00:{i % 60:02d} GET /api/orders/{i} 200 in {i * 3}ms" for i in range(lines)
    ]


def test_an_oversized_tool_result_keeps_the_lines_the_step_needs(tmp_path: Path) -> None:
    lines = _log()
    lines[250] = "2026-03-01 12:04:10 invoice 8812 total 1234.50 EUR"
    lines[311] = "2026-03-01 12:05:11 invoice 8813 total 99.00 EUR"
    original = "\n".join(lines)
    policy = CompactionPolicy(tool_tokens=200)
    with _open(tmp_path / "s.sessions", policy) as memory:
        item = memory.add_turn(
            "t1", "s1", role="tool", name="logs.search", text=original, need="invoice total?"
        )
    assert item.compression is not None and item.name == "logs.search"
    kept = item.text.splitlines()
    assert lines[250] in kept and lines[311] in kept
    assert lines[0] in kept  # the head
    assert lines[100] not in kept and lines[200] not in kept
    assert "[… lines 3-250 dropped …]" in kept
    assert item.tokens == item.compression.kept_tokens == TOKENS.count(item.text) <= 200
    assert item.compression.dropped_tokens == TOKENS.count(original) - item.tokens
    assert item.compression.original_sha256 == hashlib.sha256(original.encode()).hexdigest()
    dropped = item.compression.dropped
    assert dropped.startswith("lines ") and " of 400 " in dropped
    assert "kept 2 matching 'invoice total?'" in dropped
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert lines[100].encode() not in raw  # the original is not kept


def test_without_a_match_the_head_and_tail_stay_and_the_reason_says_so() -> None:
    lines = _log()
    text, compression = compress_tool_output(
        "\n".join(lines), need="weather in Paris", max_tokens=200, tokenizer=TOKENS
    )
    assert compression is not None
    kept = text.splitlines()
    assert kept[0] == lines[0] and kept[-1] == lines[-1]
    assert lines[200] not in kept
    assert compression.dropped.endswith("of 400 (no match for 'weather in Paris')")


def test_a_tool_result_under_the_limit_is_stored_untouched(tmp_path: Path) -> None:
    text = "\n".join(_log(5))
    with _open(tmp_path / "s.sessions", CompactionPolicy(tool_tokens=800)) as memory:
        item = memory.add_turn("t1", "s1", role="tool", text=text, need="nothing in here")
        stored = memory.view("t1", "s1").items[0]
    assert TOKENS.count(text) <= 800
    assert item.compression is None and item.text == text == stored.text
    assert stored == item


def test_json_keeps_the_top_level_shape_and_the_matching_paths(tmp_path: Path) -> None:
    document = {
        "id": "INV-8812",
        "customer": {"name": "ACME", "address": {"city": "Lyon", "street": "Rue X"}},
        "lines": [{"sku": f"A{i}", "price": i, "note": "widget part"} for i in range(300)],
        "invoice": {"total": 1234.5, "currency": "EUR"},
    }
    with _open(tmp_path / "s.sessions", CompactionPolicy(tool_tokens=300)) as memory:
        item = memory.add_turn(
            "t1", "s1", role="tool", text=json.dumps(document), need="invoice total, price of A17"
        )
    kept = json.loads(item.text)
    assert list(kept) == list(document)  # the top-level shape
    assert kept["id"] == "INV-8812" and kept["customer"] == "<object, 2 keys>"
    assert kept["invoice"]["total"] == 1234.5
    assert {"sku": "A17", "price": 17, "note": "widget part"} in kept["lines"]
    assert {"sku": "A18", "price": 18, "note": "widget part"} not in kept["lines"]
    assert item.compression is not None and item.tokens <= 300
    assert "JSON values (kept the top-level shape" in item.compression.dropped


def test_one_huge_line_is_cut_by_sentences() -> None:
    text = " ".join(f"Sentence {i} says nothing much." for i in range(300))
    text += " The flight to Lyon leaves at 9. " + " ".join(f"Filler {i}." for i in range(50))
    kept, compression = compress_tool_output(
        text, need="When does the flight leave?", max_tokens=80, tokenizer=TOKENS
    )
    assert compression is not None and TOKENS.count(kept) <= 80
    assert "The flight to Lyon leaves at 9." in kept and "Sentence 0 says" in kept
    assert compression.dropped.startswith("sentences ")


# -- summaries ----------------------------------------------------------------------------


def _item(seq: int, role: str, text: str) -> SessionItem:
    return SessionItem(
        tenant="t1",
        session="s1",
        seq=seq,
        role=role,  # type: ignore[arg-type]
        text=text,
        tokens=TOKENS.count(text),
        at=datetime(2026, 1, 1, tzinfo=UTC),
    )


def test_extractive_summary_keeps_open_questions_and_drops_oldest_lines_first() -> None:
    turns = [
        _item(1, "user", "Which invoices from March are overdue? Please check."),
        _item(2, "assistant", "Looking at the ledger now. It has many entries."),
        _item(3, "user", "Also, what is the budget for Lyon?"),
        _item(4, "assistant", "The budget for Lyon is 4000 EUR. Anything else?"),
    ]
    summary = ExtractiveSummarizer().summarize(None, turns, max_tokens=200)
    lines = summary.splitlines()
    assert lines[0] == "[open] user: Which invoices from March are overdue?"
    assert "[open] assistant: Anything else?" in lines
    assert not any("budget for Lyon?" in line and "[open]" in line for line in lines)
    assert "user: Also, what is the budget for Lyon?" in lines
    assert "assistant: Looking at the ledger now." in lines

    later = [_item(5, "assistant", "Two March invoices are overdue: 8812 and 8813.")]
    again = ExtractiveSummarizer().summarize(summary, later, max_tokens=200)
    assert "[open] user: Which invoices" not in again
    assert "user: Which invoices from March are overdue?" in again.splitlines()

    tight = ExtractiveSummarizer().summarize(None, turns, max_tokens=25)
    assert TOKENS.count(tight) <= 25
    assert tight.startswith("[open] user: Which invoices from March are overdue?")
    assert "Looking at the ledger" not in tight  # the oldest plain line went first
    alone = ExtractiveSummarizer().summarize(None, turns, max_tokens=9)
    assert alone == "[open] assistant: Anything else?"  # the newest open question
    cut = ExtractiveSummarizer().summarize(None, turns, max_tokens=6)
    assert cut.startswith("[open] assistant") and cut.endswith("…")
    assert TOKENS.count(cut) <= 6


class _Failing:
    def summarize(
        self, previous: str | None, turns: Sequence[SessionItem], *, max_tokens: int
    ) -> str:
        raise RuntimeError("summarizer down")


class _Verbose:
    def summarize(
        self, previous: str | None, turns: Sequence[SessionItem], *, max_tokens: int
    ) -> str:
        return " ".join(t.text for t in turns) * 50


def test_a_summarizer_failure_rolls_the_add_back(tmp_path: Path) -> None:
    with _open(tmp_path / "s.sessions", summarizer=_Failing()) as memory:
        _talk(memory, 6)
        before = snapshot(tmp_path / "s.sessions")
        with pytest.raises(RuntimeError, match="summarizer down"):
            memory.add_turn("t1", "s1", role="user", text="The seventh turn.")
        assert snapshot(tmp_path / "s.sessions") == before
        assert _seqs(memory.view("t1", "s1")) == [1, 2, 3, 4, 5, 6]


def test_a_long_custom_summary_is_cut_to_summary_tokens(tmp_path: Path) -> None:
    with _open(tmp_path / "s.sessions", summarizer=_Verbose()) as memory:
        _talk(memory, 7)
        summary = memory.view("t1", "s1").summary
    assert summary is not None and summary.tokens == TOKENS.count(summary.text) <= 80


# -- views within a budget ----------------------------------------------------------------


def test_a_budgeted_view_never_exceeds_the_budget(tmp_path: Path) -> None:
    with _open(tmp_path / "s.sessions") as memory:
        for i in range(11):
            memory.add_turn("t1", "s1", role="user", text=" ".join(["word"] * (3 + 7 * i)) + ".")
        full = memory.view("t1", "s1")
        assert full.summary is not None and full.dropped_for_budget == 0
        for budget in range(full.tokens + 3):
            view = memory.view("t1", "s1", budget_tokens=budget)
            assert view.tokens == sum(i.tokens for i in view.items) <= budget
            assert view.dropped_for_budget == len(full.items) - len(view.items)
            turns = full.turns[len(full.turns) - len(view.turns) :]
            assert view.turns == turns  # the newest turns, without a gap
            if budget >= full.summary.tokens:
                assert view.summary == full.summary == view.items[0]
            else:
                assert view.summary is None
            missing = full.turns[len(full.turns) - len(view.turns) - 1 :][:1]
            left = budget - view.tokens
            assert not missing or missing[0].tokens > left  # the next older turn did not fit
        assert memory.view("t1", "s1", budget_tokens=full.tokens) == full


# -- isolation, forgetting, persistence ---------------------------------------------------


def test_tenants_and_sessions_are_isolated(tmp_path: Path) -> None:
    with _open(tmp_path / "s.sessions") as memory:
        _talk(memory, 8, tenant="acme", session="chat-1")
        _talk(memory, 2, tenant="acme", session="chat-2")
        memory.add_turn("globex", "chat-1", role="user", text="Globex speaking.")
        assert memory.sessions("acme") == ["chat-1", "chat-2"]
        assert memory.sessions("globex") == ["chat-1"]
        assert memory.sessions("nobody") == []
        globex = memory.view("globex", "chat-1")
        assert [(i.seq, i.text) for i in globex.items] == [(1, "Globex speaking.")]
        assert all(i.tenant == "globex" for i in globex.items)
        assert _seqs(memory.view("acme", "chat-2")) == [1, 2]
        assert memory.view("acme", "chat-1").summary is not None
        memory.end("acme", "chat-1")
        assert memory.view("globex", "chat-1") == globex
        assert _seqs(memory.view("acme", "chat-2")) == [1, 2]


def test_end_forgets_the_session(tmp_path: Path) -> None:
    with _open(tmp_path / "s.sessions") as memory:
        _talk(memory, 9)
        memory.end("t1", "s1")
        assert memory.view("t1", "s1") == SessionView(items=(), summary=None, tokens=0)
        assert memory.sessions("t1") == []
        memory.end("t1", "s1")  # again: a no-op
        assert memory.add_turn("t1", "s1", role="user", text="A new start.").seq == 1
    conn = sqlite3.connect(tmp_path / "s.sessions")
    rows = conn.execute("SELECT text FROM session_items").fetchall()
    conn.close()
    assert rows == [("A new start.",)]


def test_reopening_the_file_keeps_the_state_and_the_schedule(tmp_path: Path) -> None:
    path = tmp_path / "s.sessions"
    moment = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
    with _open(path) as memory:
        _talk(memory, 8)
        memory.add_turn("t1", "s1", role="tool", name="search", text="\n".join(_log()), at=moment)
        before = memory.view("t1", "s1")
    with _open(path) as memory:
        after = memory.view("t1", "s1")
        assert after == before and after.items[-1].at == moment
        assert after.items[-1].compression == before.items[-1].compression is not None
        _talk(memory, 1)  # 6 unsummarized after turn 9: the 10th turn is the 7th
        assert memory.view("t1", "s1").summary.covers == (1, 6)  # type: ignore[union-attr]
        assert _seqs(memory.view("t1", "s1")) == [7, 8, 9, 10]


def test_threads_share_one_session_memory(tmp_path: Path) -> None:
    policy = CompactionPolicy(window_turns=5, every_turns=4)
    with SessionMemory(tmp_path / "s.sessions", policy=policy) as memory:

        def talk(worker: int) -> None:
            for i in range(20):
                memory.add_turn("t1", "s1", role="user", text=f"Worker {worker} turn {i}.")

        threads = [threading.Thread(target=talk, args=(w,)) for w in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        view = memory.view("t1", "s1")
    # 80 turns: 5 + 4k reached at 9, 13, ..., 77; then 78, 79, 80 added.
    assert view.summary is not None and view.summary.covers == (1, 72)
    assert _seqs(view) == list(range(73, 81))


# -- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        {"role": "user", "text": ""},
        {"role": "user", "text": "   \n "},
        {"role": "system", "text": "hello"},
        {"role": "summary", "text": "hello"},
        {"role": "user", "text": "hello", "at": datetime(2026, 1, 1)},
        {"role": "user", "text": "hello", "name": "search"},
        {"role": "assistant", "text": "hello", "need": "something"},
        {"role": "tool", "text": "hello", "name": "not a tool name"},
        {"role": "tool", "text": "hello", "need": " "},
        {"role": "user", "text": "bad \ud800 surrogate"},
        {"role": "user", "text": 42},
        {"tenant": "", "role": "user", "text": "hello"},
        {"tenant": "t 1", "role": "user", "text": "hello"},
        {"session": "s1\n", "role": "user", "text": "hello"},
    ],
)
def test_bad_input_raises_and_changes_nothing(tmp_path: Path, call: dict[str, Any]) -> None:
    path = tmp_path / "s.sessions"
    with _open(path) as memory:
        _talk(memory, 6)  # the next good add would compact
        before = snapshot(path)
        tenant = call.pop("tenant", "t1")
        session = call.pop("session", "s1")
        with pytest.raises(InvalidInputError):
            memory.add_turn(tenant, session, **call)
        assert snapshot(path) == before
        assert memory.add_turn("t1", "s1", role="user", text="fine").seq == 7


def test_bad_arguments_elsewhere_raise_invalid_input(tmp_path: Path) -> None:
    for bad in ({"window_turns": 0}, {"every_turns": -1}, {"tool_tokens": 1.5}):
        with pytest.raises(InvalidInputError):
            CompactionPolicy(**bad)
    with pytest.raises(InvalidInputError):
        CompactionPolicy(summary_tokens=True)
    with pytest.raises(InvalidInputError):
        SessionMemory(tmp_path / "s.sessions", policy={"window_turns": 3})  # type: ignore[arg-type]
    assert not (tmp_path / "s.sessions").exists()
    with _open(tmp_path / "s.sessions") as memory:
        _talk(memory, 2)
        before = snapshot(tmp_path / "s.sessions")
        for budget in (-1, 2.5, True):
            with pytest.raises(InvalidInputError):
                memory.view("t1", "s1", budget_tokens=budget)  # type: ignore[arg-type]
        for call in (memory.end, memory.compact, memory.view):
            with pytest.raises(InvalidInputError):
                call("", "s1")
        with pytest.raises(InvalidInputError):
            memory.sessions("t 1")
        assert snapshot(tmp_path / "s.sessions") == before


# -- apart from long-term memory ----------------------------------------------------------


def test_the_long_term_store_is_never_touched(tmp_path: Path) -> None:
    store_file = tmp_path / "memledger.db"
    clock = FrozenClock()
    with Memory.open(store_file, clock=clock) as memory:
        before = snapshot(store_file)
        path = default_session_path(store_file)
        assert path == tmp_path / "memledger.db.sessions"
        with SessionMemory(path, clock=clock, policy=SMALL) as sessions:
            _talk(sessions, 12)
            sessions.add_turn("t1", "s1", role="tool", text="\n".join(_log()), need="orders")
            sessions.compact("t1", "s1")
            sessions.end("t1", "s1")
        with pytest.raises(InvalidInputError, match="is a memledger store"):
            SessionMemory(store_file)
        clock.advance(timedelta(days=1))
        assert memory.stats(tenant="t1") == {}
        assert snapshot(store_file) == before


def test_the_session_package_imports_nothing_of_long_term_memory() -> None:
    folder = Path(memledger.session.__file__).parent
    forbidden = ("memledger.memory", "memledger.store", "memledger.write", "memledger.read")
    for source in folder.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert not name.startswith(forbidden), f"{source.name} imports {name}"


def test_public_surface() -> None:
    assert memledger.session.__all__ == sorted(memledger.session.__all__)
    for name in memledger.session.__all__:
        assert getattr(memledger.session, name) is not None
