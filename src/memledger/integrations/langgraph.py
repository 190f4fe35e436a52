"""A LangGraph long-term store backed by memledger: :class:`MemledgerStore`.

Change one line and a LangGraph agent's memories get memledger's authority, valid-time
windows and revocation::

    store = MemledgerStore("http://127.0.0.1:8765", api_key=key)   # was: InMemoryStore()
    graph = builder.compile(store=store)

Needs the ``langgraph`` extra (``pip install 'memledger[langgraph]'``) and a running
service (``memledger serve``) whose tenant has the store's family registered
(:func:`item_family`, once, with an admin key: ``client.register_family(item_family())``
or :meth:`MemledgerStore.setup`) and a key whose actor holds a grant for it
(``grants=["langgraph_item"]``; ``"langgraph_item:key:<key>"`` for one key only).

How LangGraph's model maps onto memledger's:

* **namespace → subject.** The labels, each escaped, joined by ``/``:
  ``("user-42",)`` is subject ``user-42``, ``("memories", "user-42")`` is
  ``memories/user-42``. A label keeps letters, digits and ``_ : @ -``; any other
  character is ``+`` and two hex digits per UTF-8 byte (``"a b"`` → ``a+20b``). The
  first character of the first label must be a letter or digit, and a subject is at
  most 255 characters: other namespaces are refused (``InvalidNamespaceError``). So
  namespaces never share a subject, and a namespace prefix is a subject prefix.
* **key → scope** ``key:<escaped key>`` of the family ``langgraph_item`` (a kind
  ``fact`` by default). A family holds one current value per scope: an item.
* **put → an event** in memledger's ledger carrying one claim whose value is the item's
  value (its strings are what recall searches). Its ``occurred_at`` is the put's time,
  strictly increasing per store, so a later put of a key closes the earlier value's
  valid-time window and opens its own (history keeps both); a put that reaches the
  service after a later put of the same key is kept as history, never current. The
  event id is derived from namespace, key, value and that time: the same put sent again
  (an HTTP retry) is the same event, recorded once. The claim's statement names a digest
  of key and value, so memledger treats a put as a repeat (NOOP) only when it holds the
  same value for the same key, never because two values read alike. A put the key's
  actor may not make is kept as an ``observation`` and the store raises
  :class:`~memledger.errors.PermissionDeniedError`; a put that waits for review or lost
  to a later one raises :class:`~memledger.errors.ConflictError`.
* **delete → revocation** of the key's current record, with a reason. History keeps it
  (as revoked); nothing brings it back: no retry, replay or stale index entry. A later
  put of the key, even with the same value, is a new event and sets it again.
* **get** reads the key's valid-time windows (``timeline``): the item is the open one.
  ``created_at`` is when the key's unbroken run of values began (the start of the first
  window since it was last deleted) and ``updated_at`` when the current value began:
  both the valid time of a put, which for the store's records is the put's time (one
  clock for both; record times are in the records).
* **search** without a query lists the current items under the namespace prefix, newest
  first; with a query it is memledger's search (lexical and vector, tenant-filtered,
  rechecked against the canonical store; the nearest items first, with scores, as a
  store's search is expected to answer: recall abstains, search does not), over the
  one subject when one namespace is under the prefix, else over the tenant (its best
  :data:`~memledger.read.recall.MAX_K`, those under the prefix kept).
  ``filter`` is applied to the items' values as LangGraph's ``InMemoryStore`` does
  (exact match, nested dicts, ``$eq $ne $gt $gte $lt $lte``); with a query it narrows
  search's candidates, it does not widen them. ``score`` is search's.
* **list_namespaces** walks the tenant's subjects (one request per subject) and keeps
  those that hold an item.

Not supported, refused rather than ignored: TTLs (``ttl``; ``supports_ttl`` is false),
per-put index fields (``index=``: memledger indexes every string of a value; ``False``
cannot keep a value out of search). A batch reads first (against the state before its
writes, as ``InMemoryStore``), then writes; the last write of a key in a batch wins. It
is not atomic: each put is an event of its own, and a failure stops the batch.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        f"memledger.integrations.langgraph needs the 'langgraph' extra ({exc.name} is "
        "missing): pip install 'memledger[langgraph]'"
    ) from exc

from memledger import wire_models as wm
from memledger.client import AsyncClient, Client
from memledger.client import _calls as calls
from memledger.client._calls import Flow
from memledger.domain.families import Family
from memledger.domain.messages import ids_of
from memledger.domain.records import MAX_ID_CHARS, Channel, Kind, canonical_json
from memledger.errors import (
    ConflictError,
    InvalidInputError,
    InvalidQueryError,
    PermissionDeniedError,
    UnknownFamilyError,
)
from memledger.read.recall import MAX_K
from memledger.wire import isoformat

__all__ = [
    "FAMILY",
    "MemledgerStore",
    "item_family",
    "key_of",
    "namespace_of",
    "scope_of",
    "subject_of",
]

FAMILY = "langgraph_item"
"""The family the store's items are records of, unless told another."""

_LABEL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:@-")
_KEY = _LABEL | {"."}
_HEX = frozenset("0123456789ABCDEF")
_SCOPE = "key:"
_PAGE = 1000


def item_family(name: str = FAMILY) -> Family:
    """The claim family a store's items are kept in; register it once per tenant
    (``client.register_family(item_family())`` with an admin key)."""
    return Family(
        name=name,
        kinds=frozenset({"fact", "preference", "procedure"}),
        description="Items of a LangGraph store (memledger.integrations.langgraph): "
        "one scope per key, the item's value as the record's value.",
    )


# -- names ----------------------------------------------------------------------------------


def _escape(text: str, keep: frozenset[str]) -> str:
    return "".join(c if c in keep else "".join(f"+{b:02X}" for b in c.encode()) for c in text)


def _unescape(text: str, keep: frozenset[str]) -> str | None:
    found = bytearray()
    at = 0
    while at < len(text):
        char = text[at]
        if char == "+" and len(text) >= at + 3 and set(text[at + 1 : at + 3]) <= _HEX:
            found.append(int(text[at + 1 : at + 3], 16))
            at += 3
        elif char in keep:
            found.extend(char.encode())
            at += 1
        else:
            return None
    try:
        decoded = found.decode()
    except UnicodeDecodeError:
        return None
    return decoded if _escape(decoded, keep) == text else None  # one spelling per name


def _label(label: object, namespace: tuple[object, ...]) -> str:
    if not isinstance(label, str):
        raise InvalidNamespaceError(
            f"namespace labels must be strings, got {type(label).__name__} in {namespace!r}"
        )
    if not label or "." in label or "\x00" in label:
        raise InvalidNamespaceError(
            f"namespace labels must be non-empty, without '.' or NUL, got {label!r} in "
            f"{namespace!r}"
        )
    return _escape(label, _LABEL)


def subject_of(namespace: tuple[str, ...]) -> str:
    """The memledger subject of a LangGraph namespace (see the module's mapping rules)."""
    if not isinstance(namespace, tuple) or not namespace:
        raise InvalidNamespaceError(f"a namespace is a non-empty tuple, got {namespace!r}")
    subject = "/".join(_label(label, namespace) for label in namespace)
    if not subject[0].isascii() or not subject[0].isalnum():
        raise InvalidNamespaceError(
            f"namespace {namespace!r}: its first label must start with a letter or digit "
            "(it names a memledger subject)"
        )
    if len(subject) > MAX_ID_CHARS:
        raise InvalidNamespaceError(
            f"namespace {namespace!r} is subject {subject[:40]!r}... of {len(subject)} "
            f"characters; a subject has at most {MAX_ID_CHARS}"
        )
    return subject


def namespace_of(subject: str) -> tuple[str, ...] | None:
    """The namespace a subject stands for, or ``None`` for a subject no namespace maps to
    (one the store did not name: ``user.42``, ``a//b``)."""
    labels = tuple(_unescape(part, _LABEL) for part in subject.split("/"))
    if any(label is None or not label for label in labels):
        return None
    return tuple(label for label in labels if label is not None)


def scope_of(key: str) -> str:
    """The scope of the family that holds a key's item: ``key:`` and the escaped key."""
    if not isinstance(key, str):
        raise InvalidInputError(f"a key is a string, got {type(key).__name__}")
    scope = _SCOPE + _escape(key, _KEY)
    if len(scope) > MAX_ID_CHARS:
        raise InvalidInputError(
            f"key {key[:40]!r}... is scope of {len(scope)} characters; a scope has at most "
            f"{MAX_ID_CHARS}"
        )
    return scope


def key_of(scope: str) -> str | None:
    """The key a scope holds, or ``None`` for a scope the store did not name."""
    if not scope.startswith(_SCOPE):
        return None
    return _unescape(scope[len(_SCOPE) :], _KEY)


# -- records to items ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Current:
    record: wm.Record
    created_at: datetime


def _current(windows: Sequence[wm.Record]) -> dict[str, _Current]:
    """The current record of each scope among a family's windows (in valid-time order):
    the open window, with the start of the unbroken run of windows it ends."""
    by_scope: dict[str, list[wm.Record]] = {}
    for record in windows:
        by_scope.setdefault(record.scope, []).append(record)
    found: dict[str, _Current] = {}
    for scope, run in by_scope.items():
        last = run[-1]
        if last.valid_until is not None or last.status != "active":
            continue
        start = last.valid_from
        for earlier in reversed(run[:-1]):
            if earlier.valid_until != start:
                break
            start = earlier.valid_from
        found[scope] = _Current(last, start)
    return found


def _item(namespace: tuple[str, ...], current: _Current) -> Item | None:
    key = key_of(current.record.scope)
    value = current.record.value
    if key is None or not isinstance(value, dict):
        return None
    return Item(
        value=value,
        key=key,
        namespace=namespace,
        created_at=current.created_at,
        updated_at=current.record.valid_from,
    )


def _items(subject: str, windows: Sequence[wm.Record]) -> list[Item]:
    namespace = namespace_of(subject)
    if namespace is None:
        return []
    found = (_item(namespace, c) for c in _current(windows).values())
    return [item for item in found if item is not None]


# -- filters --------------------------------------------------------------------------------------

_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})


def _check_filter(given: object) -> None:
    if isinstance(given, Mapping):
        for name, value in given.items():
            if isinstance(name, str) and name.startswith("$") and name not in _OPERATORS:
                raise InvalidQueryError(
                    f"filter operator {name!r} is not supported; the store supports "
                    f"{sorted(_OPERATORS)} and exact (nested) matches"
                )
            _check_filter(value)
    elif isinstance(given, list | tuple):
        for value in given:
            _check_filter(value)


def _ordered(value: object, operator: str, wanted: object) -> bool:
    """``$gt $gte $lt $lte``: numbers with numbers, strings with strings, else no match."""
    if isinstance(value, bool) or isinstance(wanted, bool):
        return False
    if isinstance(value, int | float) and isinstance(wanted, int | float):  # noqa: SIM114
        order = (value > wanted) - (value < wanted)
    elif isinstance(value, str) and isinstance(wanted, str):
        order = (value > wanted) - (value < wanted)
    else:
        return False
    return {"$gt": order > 0, "$gte": order >= 0, "$lt": order < 0, "$lte": order <= 0}[operator]


def _matches(value: object, wanted: object) -> bool:
    """LangGraph's filter semantics (``InMemoryStore``): operators, nested dicts, lists."""
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_operator(value, op, arg) for op, arg in wanted.items())
        if not isinstance(value, Mapping):
            return False
        return all(_matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_matches(a, b) for a, b in zip(value, wanted, strict=True))
        )
    return value == wanted


def _operator(value: object, operator: str, wanted: object) -> bool:
    if operator == "$eq":
        return value == wanted
    if operator == "$ne":
        return value != wanted
    return _ordered(value, operator, wanted)


def _kept(item: Item, given: Mapping[str, Any] | None) -> bool:
    return not given or all(_matches(item.value.get(k), v) for k, v in given.items())


# -- the flows (one per op, written once for batch and abatch) ---------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _Config:
    family: str
    kind: Kind
    channel: Channel
    reason: str


def _get(config: _Config, op: GetOp) -> Flow[Item | None]:
    subject, scope = subject_of(op.namespace), scope_of(op.key)
    try:
        windows = yield calls.timeline(subject, config.family, scope=scope)
    except UnknownFamilyError:
        return None  # nothing was ever put in this tenant
    current = _current(windows).get(scope)
    return None if current is None else _item(op.namespace, current)


def _subjects_under(prefix: tuple[str, ...]) -> Flow[list[str]]:
    """The subjects of the tenant that stand for a namespace under ``prefix``."""
    start = subject_of(prefix) if prefix else None
    found: list[str] = []
    after: str | None = None
    while True:
        page = yield calls.subjects(prefix=start, after=after, limit=_PAGE)
        for summary in page.subjects:
            s = summary.subject
            under = start is None or s == start or s.startswith(start + "/")
            if under and namespace_of(s) is not None:
                found.append(s)
        if page.next is None:
            return found
        after = page.next


def _listed(config: _Config, subjects: Sequence[str]) -> Flow[list[Item]]:
    items: list[Item] = []
    for subject in subjects:
        try:
            windows = yield calls.timeline(subject, config.family)
        except UnknownFamilyError:
            return []
        items.extend(_items(subject, windows))
    return items


def _search(config: _Config, op: SearchOp, now: datetime) -> Flow[list[SearchItem]]:
    if op.limit < 0 or op.offset < 0:
        raise InvalidQueryError(f"limit and offset must be >= 0, got {op.limit}, {op.offset}")
    _check_filter(op.filter)
    subjects = yield from _subjects_under(op.namespace_prefix)
    if op.limit == 0 or not subjects:
        return []
    if op.query is None:
        items = [i for i in (yield from _listed(config, subjects)) if _kept(i, op.filter)]
        items.sort(key=lambda i: (i.namespace, i.key))
        items.sort(key=lambda i: i.updated_at, reverse=True)
        return [_scored(i, None) for i in items[op.offset : op.offset + op.limit]]
    one = subjects[0] if len(subjects) == 1 else None
    user, agent = (None, None) if one is None else ids_of(one)
    # search's nearest (other families' records of a subject compete for its k)
    found = yield calls.search(op.query, user_id=user, agent_id=agent, k=MAX_K)
    wanted = set(subjects)
    hits = [
        hit
        for hit in found
        if hit.family == config.family and _subject(hit) in wanted and hit.kind != "episode"
    ]
    scores = {hit.id: hit.score for hit in hits}
    # the current windows, to keep only what is current and to date it as get does
    current: dict[str, Item] = {}
    for subject in sorted({_subject(hit) for hit in hits}):
        windows = yield calls.timeline(subject, config.family)
        namespace = namespace_of(subject)
        for c in _current(windows).values():
            item = None if namespace is None else _item(namespace, c)
            if item is not None:
                current[c.record.memory_id] = item
    ranked = [
        _scored(current[hit.id], scores[hit.id])
        for hit in hits
        if hit.id in current and _kept(current[hit.id], op.filter)
    ]
    return ranked[op.offset : op.offset + op.limit]


def _subject(hit: wm.MemoryItem) -> str:
    return hit.user_id if hit.user_id is not None else f"agent:{hit.agent_id}"


def _scored(item: Item, score: float | None) -> SearchItem:
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=score,
    )


def _matching(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise InvalidQueryError(f"unsupported match type {condition.match_type!r}")
    return all(wanted in ("*", label) for label, wanted in pairs)


def _list_namespaces(config: _Config, op: ListNamespacesOp) -> Flow[list[tuple[str, ...]]]:
    if op.limit < 0 or op.offset < 0 or (op.max_depth is not None and op.max_depth < 1):
        raise InvalidQueryError("limit and offset must be >= 0 and max_depth >= 1")
    conditions = tuple(op.match_conditions or ())
    literal: tuple[str, ...] = ()
    for condition in conditions:
        if condition.match_type == "prefix":
            for label in condition.path:
                if label == "*":
                    break
                literal += (label,)
            break
    subjects = yield from _subjects_under(literal)
    found: set[tuple[str, ...]] = set()
    for subject in subjects:
        namespace = namespace_of(subject)
        if namespace is None or not all(_matching(c, namespace) for c in conditions):
            continue
        try:
            windows = yield calls.timeline(subject, config.family)
        except UnknownFamilyError:
            return []
        if _items(subject, windows):
            found.add(namespace if op.max_depth is None else namespace[: op.max_depth])
    return sorted(found)[op.offset : op.offset + op.limit]


def _value(op: PutOp) -> dict[str, Any]:
    if op.index is not None:
        raise NotImplementedError(
            "MemledgerStore does not take per-put index fields (index=...): memledger "
            "indexes every string of a value, and cannot keep one out of search"
        )
    if op.ttl is not None:
        raise NotImplementedError("MemledgerStore does not support TTLs (supports_ttl=False)")
    if not isinstance(op.value, Mapping) or not all(isinstance(k, str) for k in op.value):
        raise InvalidInputError(f"an item's value is a mapping with string keys, got {op.value!r}")
    try:  # the value as JSON will hold it: tuples become lists, and non-JSON is refused
        loaded: dict[str, Any] = json.loads(json.dumps(dict(op.value), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"an item's value must be JSON: {exc}") from None
    return loaded


def _put(config: _Config, op: PutOp, at: datetime) -> Flow[None]:
    subject, scope = subject_of(op.namespace), scope_of(op.key)
    if op.value is None:
        yield from _delete(config, op.namespace, op.key)
        return
    value = _value(op)
    when = isoformat(at)
    digest = hashlib.sha256(canonical_json([scope, value]).encode()).hexdigest()
    event_id = (
        "lg-"
        + hashlib.sha256(canonical_json([subject, scope, value, when]).encode()).hexdigest()[:40]
    )
    event = {
        "event_id": event_id,
        "subject": subject,
        "channel": config.channel,
        "occurred_at": when,
        "text": f"LangGraph store put of key {op.key!r}: {canonical_json(value)}",
        "metadata": {"langgraph": {"namespace": list(op.namespace), "key": op.key}},
        "claims": [
            {
                "family": config.family,
                "kind": config.kind,
                "statement": f"LangGraph store item #{digest}",
                "value": value,
                "scope": scope,
            }
        ],
    }
    try:
        receipt = yield calls.ingest(event)
    except UnknownFamilyError as exc:
        exc.add_note(
            f"register the store's family once for the tenant, with an admin key: "
            f"client.register_family(item_family({config.family!r})) or store.setup()"
        )
        raise
    _check(receipt, op, config, scope)


def _check(receipt: wm.Receipt, op: PutOp, config: _Config, scope: str) -> None:
    what = f"the put of key {op.key!r} in namespace {op.namespace!r}"
    if receipt.outcome != "committed":
        raise ConflictError(f"{what} waits for review ({receipt.reason}); the item is unchanged")
    for result in receipt.results:
        if result.family != config.family or result.scope != scope:
            continue
        if result.disposition == "observation":
            raise PermissionDeniedError(
                f"{what} was not set: memledger kept its event as an observation "
                f"({result.reason}). The API key's actor needs a grant for family "
                f"{config.family!r} (or {config.family}:{scope})"
            )
        if result.disposition != "current":
            raise ConflictError(
                f"{what} did not change the item ({result.disposition}: {result.reason}); "
                "a later put of the key, or its revocation, stands"
            )


def _delete(config: _Config, namespace: tuple[str, ...], key: str) -> Flow[None]:
    subject, scope = subject_of(namespace), scope_of(key)
    try:
        windows = yield calls.timeline(subject, config.family, scope=scope)
    except UnknownFamilyError:
        return
    current = _current(windows).get(scope)
    if current is not None:
        reason = f"{config.reason}: key {key!r} of namespace {'/'.join(namespace)}"
        yield calls.revoke(current.record.memory_id, reason=reason[:10_000])


# -- the store -----------------------------------------------------------------------------------


class _Stamps:
    """Strictly increasing UTC instants (microseconds), one per put."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = datetime.min.replace(tzinfo=UTC)

    def next(self) -> datetime:
        with self._lock:
            now = datetime.now(UTC)
            self._last = max(now, self._last + timedelta(microseconds=1))
            return self._last


@dataclass(frozen=True, slots=True)
class _Plan:
    reads: list[tuple[int, Flow[Any]]]
    writes: list[Flow[None]]
    size: int


class MemledgerStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are memledger records (mapping in the module
    docstring).

    ``client``: a service URL (with ``api_key``), or a :class:`~memledger.client.Client`
    or :class:`~memledger.client.AsyncClient` (the other one is made from it, sharing its
    key and consistency token). ``family``: the registered family of the items; ``kind``:
    the kind of their claims; ``channel``: the channel of their events; ``reason``: what a
    delete records as the revocation's reason. The store keeps the consistency tokens of
    its writes, so its reads never answer below them.
    """

    supports_ttl = False

    def __init__(
        self,
        client: Client | AsyncClient | str,
        api_key: str | None = None,
        *,
        family: str = FAMILY,
        kind: Literal["fact", "preference", "procedure"] = "fact",
        channel: Channel = "chat",
        reason: str = "deleted through the LangGraph store",
        timeout: float = 30.0,
    ) -> None:
        if isinstance(client, str):
            if api_key is None:
                raise InvalidInputError("MemledgerStore(url) needs api_key=")
            self._sync: Client = Client(client, api_key, timeout=timeout)
            self._async: AsyncClient | None = None
            self._made = {"sync", "async"}  # what the store made, and so closes
        elif isinstance(client, Client):
            self._sync, self._async, self._made = client, None, {"async"}
        elif isinstance(client, AsyncClient):
            self._sync, self._async = Client._sharing(client._core), client
            self._made = {"sync"}
        else:
            raise InvalidInputError(
                f"expected a URL, a Client or an AsyncClient, got {type(client).__name__}"
            )
        item_family(family)  # the name is an identifier
        self._config = _Config(family=family, kind=kind, channel=channel, reason=reason)
        self._stamps = _Stamps()

    @property
    def client(self) -> Client:
        """The synchronous client the store sends with (its consistency token included)."""
        return self._sync

    def _aclient(self) -> AsyncClient:
        if self._async is None:
            self._async = AsyncClient._sharing(self._sync._core)
        return self._async

    def close(self) -> None:
        """Close the HTTP connections of the clients the store made (in async code,
        :meth:`aclose`)."""
        if "sync" in self._made:
            self._sync.close()

    async def aclose(self) -> None:
        if self._async is not None and "async" in self._made:
            await self._async.aclose()
        self.close()

    def __enter__(self) -> MemledgerStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def setup(self) -> wm.Family:
        """Register the store's family for the key's tenant (an admin key; the same
        definition again is a no-op)."""
        return self._sync.register_family(item_family(self._config.family))

    async def asetup(self) -> wm.Family:
        return await self._aclient().register_family(item_family(self._config.family))

    def _plan(self, ops: Iterable[Op]) -> _Plan:
        reads: list[tuple[int, Flow[Any]]] = []
        puts: dict[tuple[tuple[str, ...], str], Flow[None]] = {}
        size = 0
        for n, op in enumerate(ops):
            size = n + 1
            if isinstance(op, GetOp):
                reads.append((n, _get(self._config, op)))
            elif isinstance(op, SearchOp):
                reads.append((n, _search(self._config, op, self._stamps.next())))
            elif isinstance(op, ListNamespacesOp):
                reads.append((n, _list_namespaces(self._config, op)))
            elif isinstance(op, PutOp):
                subject_of(op.namespace), scope_of(op.key)  # refused before anything is sent
                if op.value is not None:
                    _value(op)
                puts.pop((op.namespace, op.key), None)  # the last write of a key wins
                puts[(op.namespace, op.key)] = _put(self._config, op, self._stamps.next())
            else:
                raise InvalidInputError(f"unknown store operation {type(op).__name__}")
        return _Plan(reads, list(puts.values()), size)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        plan = self._plan(ops)
        results: list[Result] = [None] * plan.size
        for n, flow in plan.reads:
            results[n] = self._sync.run(flow)
        for write in plan.writes:
            self._sync.run(write)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        plan = self._plan(ops)
        client = self._aclient()
        results: list[Result] = [None] * plan.size
        found = await asyncio.gather(*(client.run(flow) for _, flow in plan.reads))
        for (n, _), result in zip(plan.reads, found, strict=True):
            results[n] = result
        await asyncio.gather(*(client.run(write) for write in plan.writes))
        return results
