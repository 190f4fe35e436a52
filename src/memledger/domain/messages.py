"""The short path's input: chat messages as an application holds them, made into
source events.

:func:`normalise` reads what :meth:`memledger.Memory.add` accepts (a string, one
OpenAI-style ``{"role", "content"}`` message, or a list of either) into
:class:`Message` values, refusing anything it cannot read with every problem named.
:func:`events_of` makes them the ledger's :class:`SourceEvent` values: the subject is the
user (or the agent's private namespace ``agent:<id>`` when no user is named), the user
is the authenticated speaker of their own turns, roles are kept, and the event ids are
derived from what is added, so adding the same messages again is a duplicate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final, Literal

from memledger.domain.faults import listing, place, with_faults
from memledger.domain.records import Actor, JsonValue, Role, SourceEvent, require_id
from memledger.errors import Fault, InvalidEventError, InvalidQueryError

__all__ = ["Message", "ParsedMessages", "events_of", "ids_of", "normalise", "subject_of"]

Place = tuple[str | int, ...]

SKIPPED_ROLES: Final = frozenset({"system", "developer"})
"""Roles whose messages are instructions to a model, not things anyone said: they are
left out (counted in :attr:`ParsedMessages.skipped`)."""

_ROLES: Final[Mapping[str, Role]] = {"user": "user", "assistant": "assistant", "tool": "tool"}


@dataclass(frozen=True, slots=True)
class Message:
    """One turn to remember: who spoke it and what they said."""

    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class ParsedMessages:
    messages: tuple[Message, ...]
    skipped: int
    """System and developer messages left out."""


def subject_of(user_id: str | None, agent_id: str | None) -> str:
    """Whose memory a short-path call reads or writes: the user's, else the agent's own
    private namespace ``agent:<agent_id>``."""
    for name, given in (("user_id", user_id), ("agent_id", agent_id)):
        if given is not None:
            require_id(given, name, InvalidQueryError)
    if user_id is not None:
        return user_id
    if agent_id is not None:
        return f"agent:{agent_id}"
    raise InvalidQueryError("give user_id or agent_id: whose memory is this?")


def ids_of(subject: str) -> tuple[str | None, str | None]:
    """The ``(user_id, agent_id)`` that name ``subject`` (:func:`subject_of` reversed)."""
    if subject.startswith("agent:"):
        return None, subject.removeprefix("agent:")
    return subject, None


def normalise(messages: object) -> ParsedMessages:
    """``messages`` as :class:`Message` values: a string is one user message; a mapping
    is one message with ``role`` (``user``, ``assistant``, ``tool``; ``system`` and
    ``developer`` are left out) and ``content`` (a string, or a list of
    ``{"type": "text", "text": ...}`` parts); a list holds strings or mappings. Every
    problem is named (the first ten, with the count) and nothing is kept of a list
    with one."""
    items: Sequence[object]
    if isinstance(messages, (str, Mapping)):
        items = [messages]
    elif isinstance(messages, Sequence) and not isinstance(messages, (bytes, bytearray)):
        items = messages
    else:
        raise InvalidEventError(
            "messages must be a string, a {'role', 'content'} mapping or a list of them, "
            f"got {type(messages).__name__}"
        )
    if not items:
        raise InvalidEventError("messages is empty: nothing to add")
    kept: list[Message] = []
    skipped = 0
    problems: list[Fault] = []
    for n, item in enumerate(items):
        at: Place = ("messages",) if len(items) == 1 and item is messages else ("messages", n)
        read = _message(item, at, problems)
        if read == "skip":
            skipped += 1
        elif read is not None:
            kept.append(read)
    if problems:
        shown = listing([place(loc) + text for loc, text in problems])
        error = InvalidEventError(
            f"{len(problems)} problem{'s' if len(problems) > 1 else ''} in messages: {shown}"
        )
        raise with_faults(error, [(loc, text.strip()) for loc, text in problems])
    if not kept:
        raise InvalidEventError("messages holds only system or developer messages: nothing to add")
    return ParsedMessages(tuple(kept), skipped)


def _message(item: object, at: Place, problems: list[Fault]) -> Message | Literal["skip"] | None:
    """``item`` read as a message, or ``None`` with its problems added (each at its place,
    with what is wrong as it follows the place in a message)."""
    if isinstance(item, str):
        if not item.strip():
            problems.append((at, " is empty"))
            return None
        return Message("user", item)
    if not isinstance(item, Mapping):
        problems.append((at, f" must be a string or a mapping, got {type(item).__name__}"))
        return None
    role = item.get("role", "user")
    if role in SKIPPED_ROLES:
        return "skip"
    if not isinstance(role, str) or role not in _ROLES:
        problems.append(
            (
                (*at, "role"),
                f" must be one of user, assistant, tool, system, developer, got {role!r}",
            )
        )
        role = None
    if "content" not in item:
        problems.append((at, " has no content"))
        return None
    content = _content(item["content"], (*at, "content"), problems)
    if content is None or role is None:
        return None
    return Message(_ROLES[role], content)


def _content(value: object, at: Place, problems: list[Fault]) -> str | None:
    if isinstance(value, str):
        text = value
    elif isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        texts = []
        for n, part in enumerate(value):
            if (
                isinstance(part, Mapping)
                and part.get("type") == "text"
                and isinstance(part.get("text"), str)
            ):
                texts.append(part["text"])
            else:
                problems.append(((*at, n), " must be a {'type': 'text', 'text': ...} part"))
                return None
        text = "\n".join(texts)
    else:
        problems.append(
            (at, f" must be a string or a list of text parts, got {type(value).__name__}")
        )
        return None
    if not text.strip():
        problems.append((at, " is empty"))
        return None
    return text


def events_of(
    parsed: ParsedMessages,
    *,
    tenant: str,
    user_id: str | None,
    agent_id: str | None,
    session: str | None,
    at: datetime,
    at_given: bool,
    metadata: Mapping[str, JsonValue] | None,
) -> tuple[SourceEvent, ...]:
    """The source events of ``parsed``, in order a microsecond apart, the last at ``at``.

    The event id of each is a digest of the tenant, whose memory it is, the session,
    the metadata, every message added with it and its position, and ``at`` when the
    caller gave it: the same call made again names the same events (a duplicate), and
    the ids say nothing of the content."""
    subject = subject_of(user_id, agent_id)
    if session is not None:
        require_id(session, "session", InvalidEventError)
    extra: dict[str, JsonValue] = dict(metadata or {})
    if session is not None:
        extra["session"] = session
    call = _digest(
        {
            "tenant": tenant,
            "subject": subject,
            "agent": agent_id,
            "session": session,
            "at": at.isoformat() if at_given else None,
            "metadata": extra,
            "messages": [[m.role, m.content] for m in parsed.messages],
        }
    )
    return tuple(
        SourceEvent(
            tenant=tenant,
            event_id=f"msg-{_digest([call, n])[:32]}",
            subject=subject,
            actor=_speaker(message.role, user_id=user_id, agent_id=agent_id),
            channel="chat",
            occurred_at=at - timedelta(microseconds=len(parsed.messages) - 1 - n),
            text=message.content,
            metadata=extra,
            role=message.role,
        )
        for n, message in enumerate(parsed.messages)
    )


def _speaker(role: Role, *, user_id: str | None, agent_id: str | None) -> Actor:
    if role == "user":
        # the application vouches for its own user: they set their own attributes
        return Actor(id=user_id, authenticated=True) if user_id else Actor(id="user")
    if role == "assistant":
        return Actor(id=agent_id or "assistant", authenticated=True)
    return Actor(id="tool")


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
