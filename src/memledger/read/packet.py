"""The context packet: its items, what was left out, and its text (YAML-like, each
section's header then its items' blocks, in placement order): what
:func:`memledger.read.context.build` returns and :mod:`memledger.read.trace` rebuilds."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from memledger.domain.budget import Budget, Section
from memledger.domain.records import JsonValue
from memledger.read.routing import Routing

__all__ = ["Left", "Packet", "PacketItem", "header", "isoformat", "render", "render_item"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PacketItem:
    """One block of a packet: its section, a key (memory id, chunk id, name), what it
    says (``fields``, rendered in order) and its size."""

    section: Section
    key: str
    fields: Mapping[str, JsonValue]
    tokens: int
    relevance: float = 0.0
    memory_id: str | None = None
    revision: int | None = None

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "section": self.section,
            "key": self.key,
            "memory_id": self.memory_id,
            "revision": self.revision,
            "relevance": round(self.relevance, 6),
            "tokens": self.tokens,
            "fields": dict(self.fields),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Left:
    """A candidate that did not make it into the packet, and why."""

    section: Section
    key: str
    reason: str

    def to_dict(self) -> dict[str, JsonValue]:
        return {"section": self.section, "key": self.key, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class Packet:
    trace_id: str
    tenant: str
    subject: str | None
    request: str
    created_at: datetime
    valid_at: datetime
    items: tuple[PacketItem, ...]
    """In placement order: top of the prompt first, the request last."""
    excluded: tuple[Left, ...]
    routing: Routing
    budget: Budget
    tokens: int
    """Of the rendered text, by the packet's tokenizer: never above ``budget.total``."""
    text: str
    tokenizer: str
    notes: tuple[str, ...] = ()
    index_lag: int | None = None
    """Outbox rows of the tenant the derived index had not applied when the packet's
    recall read it (``None``: no recall read the index)."""

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def memories(self) -> tuple[PacketItem, ...]:
        return tuple(i for i in self.items if i.section == "memories")

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "trace_id": self.trace_id,
            "tenant": self.tenant,
            "subject": self.subject,
            "request": self.request,
            "created_at": isoformat(self.created_at),
            "valid_at": isoformat(self.valid_at),
            "tokens": self.tokens,
            "tokenizer": self.tokenizer,
            "budget": self.budget.to_dict(),  # type: ignore[dict-item]
            "routing": self.routing.to_dict(),
            "items": [i.to_dict() for i in self.items],
            "excluded": [e.to_dict() for e in self.excluded],
            "notes": list(self.notes),
            "index_lag": self.index_lag,
            "sha256": self.sha256,
            "text": self.text,
        }


# -- rendering -----------------------------------------------------------------------------

_PLAIN = re.compile(r"^[A-Za-z_][\w .,:/@()'+\-]*$")


def _scalar(value: JsonValue) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    text = str(value)
    if (
        _PLAIN.match(text)
        and not text.endswith((":", " "))
        and ": " not in text
        and text.casefold() not in ("true", "false", "null", "yes", "no", "on", "off")
    ):
        return text
    return json.dumps(text, ensure_ascii=False)


def _yaml(value: JsonValue, indent: int) -> list[str]:
    """YAML-like lines of ``value`` at ``indent`` (a mapping's keys, a list's items)."""
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if isinstance(inner, Mapping | list) and inner:
                lines.append(f"{pad}{key}:")
                lines.extend(_yaml(inner, indent + 2))
            elif isinstance(inner, str) and "\n" in inner:
                lines.append(f"{pad}{key}: |")
                lines.extend(f"{pad}  {line}" if line else "" for line in inner.split("\n"))
            else:
                lines.append(f"{pad}{key}: {_scalar(inner) if inner != [] else '[]'}")
    elif isinstance(value, list):
        for inner in value:
            block = _yaml(inner, indent + 2)
            if isinstance(inner, Mapping) and block:
                lines.append(f"{pad}- {block[0].lstrip()}")
                lines.extend(block[1:])
            else:
                lines.append(f"{pad}- {_scalar(inner)}")
    else:
        lines.append(f"{pad}{_scalar(value)}")
    return lines


def render_item(item_fields: Mapping[str, JsonValue], section: Section, key: str) -> str:
    """One item's block as it appears under its section's header."""
    if section == "request":
        value = item_fields.get("text")
        return "\n".join(_yaml({"request": value}, 0)) + "\n"
    if section == "live_state":
        return "\n".join(_yaml({key: dict(item_fields)}, 2)) + "\n"
    return "\n".join(_yaml([dict(item_fields)], 2)) + "\n"


def header(section: Section) -> str:
    return "" if section == "request" else f"{section}:\n"


def render(items: Sequence[PacketItem]) -> str:
    """The packet's text: each section's header, then its items' blocks, in order."""
    out: list[str] = []
    seen: set[Section] = set()
    for item in items:
        if item.section not in seen:
            seen.add(item.section)
            out.append(header(item.section))
        out.append(render_item(item.fields, item.section, item.key))
    return "".join(out)


def isoformat(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.isoformat().replace("+00:00", "Z")
