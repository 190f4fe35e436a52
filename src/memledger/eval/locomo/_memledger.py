"""The ``memledger`` retriever: LoCoMo through memledger's own write and read paths.

Each conversation becomes a tenant in a scratch store; every turn (text and
image caption) is ingested as a source event (``dia_id`` as event id, the
session's date as its time, the speaker as actor, and as role where the speaker
is ``user`` or ``assistant``), extracted by the rule
extractor into claims and an episode, and indexed from the outbox. A question
is a :func:`memledger.read.recall.recall` with the last session's date as
now, that touches nothing (a question is a probe: it must not lift, for the next
question, what it found); the distinct source events of the recalled memories
are the answer.
Turns within a session are spaced 3 seconds apart, in order, so that the
per-minute rate limit of the prefilter does not mistake a session for a flood.
A conversation prepared again with more turns after those it was last prepared with
(a longer prefix of the same history) has only the new turns ingested.
The conversations of a run share one store whose clock only moves forward; each
ingest moves it at least a millisecond, so the jobs of a conversation dated before
the previous one are still queued, and worked, in the order its turns were said.
"""

from __future__ import annotations

import re
import tempfile
from contextlib import ExitStack
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memledger.domain.records import Actor, Role, SourceEvent
from memledger.eval import _scratch
from memledger.eval.locomo._data import Conversation
from memledger.index.backends import open_index
from memledger.index.embedders import Embedder
from memledger.memory import Memory
from memledger.read.recall import RecallSettings, recall
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.write.extract.rules import RuleExtractor

SPACING = timedelta(seconds=3)
TICK = timedelta(milliseconds=1)
ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant"}
"""Speakers that name a role (BEAM's, as in chat-completion messages); LoCoMo's speakers
are people talking with each other, whose turns carry no role."""


def _id(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._:@/+\-]", "-", text).strip("-") or "x"


def source_events(conversation: Conversation) -> list[SourceEvent]:
    """The turns of a conversation as the source events this retriever ingests: its
    sample id as tenant, the ``dia_id`` as event id, the speaker as actor (and role where
    it names one), the session's date plus :data:`SPACING` per turn within a session."""
    tenant = _id(conversation.sample_id)
    out: list[SourceEvent] = []
    previous: tuple[int, datetime] | None = None
    offset = timedelta(0)
    for n, turn in enumerate(conversation.turns, start=1):
        key = (turn.session, turn.session_at)
        offset = offset + SPACING if key == previous else timedelta(0)
        previous = key
        text = f"{turn.text} [{turn.caption}]" if turn.caption else turn.text
        out.append(
            SourceEvent(
                tenant=tenant,
                event_id=_id(turn.event_id),
                subject="conversation",
                actor=Actor(id=_id(turn.speaker), authenticated=True),
                channel="chat",
                occurred_at=turn.session_at + offset,
                text=text or "(image)",
                sequence=n,
                metadata={"session": f"session-{turn.session}"},
                role=ROLES.get(turn.speaker),
            )
        )
    return out


STORE_SERVER: ContextVar[str | None] = ContextVar("memledger_bench_store_server", default=None)
"""A PostgreSQL server URL: retrievers created while it is set keep their canonical store
in a scratch database there (``bench locomo --store``); unset, a SQLite file."""


SETTINGS: ContextVar[RecallSettings | None] = ContextVar(
    "memledger_bench_recall_settings", default=None
)
"""Recall settings for retrievers created while it is set without settings of their own
(``bench locomo --recall-settings``); unset, ``RecallSettings(floor=0.0)``."""


class MemledgerRetriever:
    """recall over a scratch store fed through the normal write path."""

    def __init__(
        self, *, embedder: Embedder | None = None, settings: RecallSettings | None = None
    ) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="memledger-locomo-")
        root = Path(self._folder.name)
        self._clock = FrozenClock(datetime(2000, 1, 1, tzinfo=UTC))
        self._scratch = ExitStack()
        server = STORE_SERVER.get()
        self._on_server = server is not None
        if server is None:
            store = open_store(root / "locomo.db")
        else:  # a database of its own on that PostgreSQL server, dropped on close
            store = open_store(self._scratch.enter_context(_scratch.scratch_database(server)))
        # the store's own index: a file beside SQLite, its tables in PostgreSQL
        self._index = open_index(store, embedder=embedder)
        self._memory = Memory(store, clock=self._clock, index=self._index)
        self._tenant = ""
        self._settings = settings or SETTINGS.get() or RecallSettings(floor=0.0)
        self._passages: dict[str, str] = {}
        self._fed: tuple[str, tuple[str, ...]] = ("", ())
        """The last conversation prepared and the event ids of its turns."""

    def prepare(self, conversation: Conversation, /) -> None:
        self._tenant = _id(conversation.sample_id)
        ids = tuple(turn.event_id for turn in conversation.turns)
        last, held = self._fed
        # turns ingested when a shorter prefix of this history was prepared are skipped
        skip = len(held) if last == conversation.sample_id and ids[: len(held)] == held else 0
        self._fed = (conversation.sample_id, ids)
        for event in source_events(conversation)[skip:]:
            # the store is shared by the conversations of a run, and its clock only moves
            # forward: each ingest a tick later, so jobs are queued (and so worked) in the
            # order the turns were said even when this conversation's dates are earlier
            self._clock.set(max(self._clock.now() + TICK, event.occurred_at))
            self._memory.ingest(event)
        self._memory.process(extractor=RuleExtractor(), tenant=self._tenant)
        self._index.sync(self._memory.store)

    def search(self, question: str, /, *, k: int, now: datetime) -> list[str]:
        result = recall(
            self._memory.reading,
            self._index,
            question,
            tenant=self._tenant,
            k=min(100, k * 3),
            valid_at=now + timedelta(days=1),
            settings=self._settings,
            touch=False,  # a question is a probe: it must not lift what the next one finds
        )
        found: list[str] = []
        self._passages = {}
        for item in result.items:
            event_id = item.record.source_event_id
            if event_id not in found:
                found.append(event_id)
                if item.passage is not None:
                    self._passages[event_id] = item.passage.text
                elif item.record.kind != "episode":  # a claim is shown as its statement
                    self._passages[event_id] = item.record.claim
        return found[:k]

    @property
    def memory(self) -> Memory:
        """The scratch store's facade (its index is this retriever's)."""
        return self._memory

    @property
    def clock(self) -> FrozenClock:
        return self._clock

    def footprint(self) -> int | None:
        """Bytes of the scratch store's files (SQLite and the index beside it); ``None``
        when the store is a PostgreSQL database."""
        if self._on_server:
            return None
        return sum(f.stat().st_size for f in Path(self._folder.name).rglob("*") if f.is_file())

    def passage(self, event_id: str, /) -> str | None:
        """What the last search would show of a turn: its passage (see
        ``Recalled.passage``), or the statement of the claim recalled from it."""
        return self._passages.get(event_id)

    def close(self) -> None:
        self._index.close()
        self._memory.close()
        self._scratch.close()
        self._folder.cleanup()
