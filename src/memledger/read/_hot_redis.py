"""The hot cache in Redis: one :class:`~memledger.read.hot.HotCache` shared by several
service processes (``pip install 'memledger[redis]'``)::

    from memledger.read.hot import HotTier, RedisHotCache

    hot = HotTier(cache=RedisHotCache("redis://127.0.0.1:6379/0"))
    memory = Memory.open("sqlite:////srv/memledger.db", hot=hot)

**Correctness** comes from the hot tier, not from Redis: an entry is served only if
its stamp (every family's revision and generation) equals the canonical store's at
the time of the read, so a commit or revocation made by any process is seen by every
process at its next read, and the reader writes the fresh values back.

**Keys**: ``{prefix}:1:{store}:{tenant}:{subject}``: ``1`` the entry format, ``store``
a fingerprint of the store's URL (processes must open the store by the same URL to
share entries; stores never share them), tenant and subject percent-encoded (an
identifier may hold ``:``), so two (tenant, subject) pairs never share a key. A
decoded entry whose records name another tenant, subject or family is ignored.

**Values**: JSON (never pickle): the stamp, the valid-time window, and each record
field by field, times as the store writes them; an entry written by another version
(other fields) reads as a miss and is overwritten.

**Memory**: every write sets a time to live (``ttl``, one hour by default), so
subjects nobody reads leave; cap Redis itself too (``maxmemory`` with
``maxmemory-policy allkeys-lru``): an evicted entry is only a miss.

**Failures**: a client built from a URL waits at most ``timeout`` (50 ms) to connect
or for an answer and never retries. A Redis error or timeout raises
:class:`~memledger.read.hot.HotCacheError`, which the tier turns into a read of the
canonical store (counted in ``HotStats.fallbacks``); for ``retry_after`` seconds
after a failure the cache answers at once without touching the network, so a dead
Redis costs one timeout per ``retry_after``, not one per read. Nothing here ever
makes a read wrong or raises to the reader; prepared results stay in process.

Redis holds copies of memories: protect it like the canonical store (a private
network, ``requirepass`` or ACLs, TLS with ``rediss://``).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from datetime import timedelta
from urllib.parse import quote

try:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry
except ImportError as exc:  # a test hides redis to see this message
    raise ImportError(
        "RedisHotCache needs the redis package, which is not installed; "
        "install the 'redis' extra: pip install 'memledger[redis]'"
    ) from exc

from memledger.domain.records import MemoryRecord, format_time, parse_time
from memledger.errors import InvalidInputError
from memledger.read.hot import HotCacheError, HotKey, HotValues, Stamp
from memledger.store.codec import extractor_from_json, extractor_to_json

__all__ = ["FORMAT", "RedisHotCache", "decode", "encode", "redis_key"]

FORMAT = 1
"""The entry format, in every key and every value."""

_FIELDS = frozenset(f.name for f in fields(MemoryRecord))
_TIMES = ("recorded_at", "superseded_at", "valid_from", "valid_until", "expires_at")


def redis_key(key: HotKey, *, prefix: str = "memledger:hot") -> str:
    """``{prefix}:{FORMAT}:{store}:{tenant}:{subject}``, tenant and subject
    percent-encoded (``:`` becomes ``%3A``, ``%`` itself ``%25``)."""
    tenant = quote(key.tenant, safe="")
    subject = quote(key.subject, safe="")
    return f"{prefix}:{FORMAT}:{quote(key.store, safe='')}:{tenant}:{subject}"


# -- the codec ------------------------------------------------------------------------------


def _record_json(record: MemoryRecord) -> dict[str, object]:
    out: dict[str, object] = {name: getattr(record, name) for name in _FIELDS}
    for name in _TIMES:
        moment = getattr(record, name)
        out[name] = None if moment is None else format_time(moment)
    out["extractor"] = extractor_to_json(record.extractor)
    return out


def _record(data: object) -> MemoryRecord:
    if not isinstance(data, dict) or data.keys() != _FIELDS:
        raise ValueError("a record with other fields than this version's")
    data = dict(data)
    for name in _TIMES:
        if data[name] is not None:
            data[name] = parse_time(data[name])
    data["extractor"] = extractor_from_json(data["extractor"])
    return MemoryRecord(**data)


def _slot(item: object) -> tuple[str, int, int]:
    """One family of a stamp, exactly as written: the stamp is what an entry is
    trusted on, so nothing in it is coerced."""
    if isinstance(item, list) and len(item) == 3:
        family, revision, generation = item
        if isinstance(family, str) and type(revision) is int and type(generation) is int:
            return family, revision, generation
    raise ValueError(f"a stamp entry {item!r} that this version does not write")


def encode(values: HotValues) -> str:
    """``values`` as JSON text (ASCII); :func:`decode` reads it back equal."""
    return json.dumps(
        {
            "format": FORMAT,
            "stamp": [list(slot) for slot in values.stamp],
            "holds_from": None if values.holds_from is None else format_time(values.holds_from),
            "holds_until": (
                None if values.holds_until is None else format_time(values.holds_until)
            ),
            "values": {
                family: [_record_json(r) for r in records]
                for family, records in values.values.items()
            },
        },
        ensure_ascii=True,
        allow_nan=False,
        separators=(",", ":"),
    )


def decode(text: str | bytes, key: HotKey) -> HotValues:
    """The :class:`HotValues` :func:`encode` wrote for ``key``; raises ``ValueError`` for
    anything else (another format, a broken entry, records of another tenant,
    subject or family)."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("another entry format")
        stamp: Stamp = tuple(_slot(item) for item in data["stamp"])
        values = {
            str(family): tuple(_record(r) for r in records)
            for family, records in data["values"].items()
        }
        holds_from, holds_until = data["holds_from"], data["holds_until"]
        found = HotValues(
            stamp=stamp,
            values=values,
            holds_from=None if holds_from is None else parse_time(holds_from),
            holds_until=None if holds_until is None else parse_time(holds_until),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"a broken hot cache entry: {exc!r}") from exc
    for family, records in found.values.items():
        for r in records:
            if (r.tenant, r.subject, r.family) != (key.tenant, key.subject, family):
                raise ValueError(f"an entry for {key!r} holds {r.memory_id!r} of another")
    return found


# -- the cache ------------------------------------------------------------------------------


class RedisHotCache:
    """A :class:`~memledger.read.hot.HotCache` in Redis (see the module docstring).

    ``target`` is a URL (``redis://host:6379/0``, ``rediss://`` for TLS, ``unix://``)
    or a ``redis.Redis`` client; a client built from a URL waits at most ``timeout``
    seconds (default 0.05) and never retries, a client you pass keeps its own
    settings (give it short timeouts). Nothing touches the network until the first
    read. :meth:`close` closes a client built here, never one you passed.
    """

    def __init__(
        self,
        target: str | redis.Redis,
        /,
        *,
        prefix: str = "memledger:hot",
        ttl: timedelta = timedelta(hours=1),
        timeout: float | None = None,
        retry_after: float = 1.0,
    ) -> None:
        if not isinstance(prefix, str) or not prefix or not prefix.isprintable():
            raise InvalidInputError(f"prefix must be a non-empty printable string, got {prefix!r}")
        if not isinstance(ttl, timedelta) or ttl < timedelta(milliseconds=1):
            raise InvalidInputError(f"ttl must be a timedelta of at least 1 ms, got {ttl!r}")
        for name, seconds in (("timeout", timeout), ("retry_after", retry_after)):
            if seconds is None:
                continue
            if (
                isinstance(seconds, bool)
                or not isinstance(seconds, int | float)
                or not math.isfinite(seconds)
                or seconds < 0
                or (name == "timeout" and seconds == 0)
            ):
                raise InvalidInputError(f"{name} must be a number of seconds, got {seconds!r}")
        if isinstance(target, str):
            wait = 0.05 if timeout is None else float(timeout)
            self.client: redis.Redis = redis.Redis.from_url(
                target,
                socket_timeout=wait,
                socket_connect_timeout=wait,
                retry=Retry(NoBackoff(), 0),
            )
            self._owned = True
        elif isinstance(target, redis.Redis):
            if timeout is not None:
                raise InvalidInputError(
                    "timeout applies to a client built from a URL; set it on the client you pass"
                )
            self.client = target
            self._owned = False
        else:
            raise InvalidInputError(
                f"target must be a redis URL or a redis.Redis, got {type(target).__name__}"
            )
        self.prefix = prefix
        self.ttl = ttl
        self.retry_after = float(retry_after)
        self.unreadable = 0
        """Entries read back that did not decode (another version, a broken entry):
        each was treated as a miss and overwritten."""
        self._down_until = 0.0

    def key(self, key: HotKey) -> str:
        """The Redis key of ``key``'s entry."""
        return redis_key(key, prefix=self.prefix)

    @contextmanager
    def _talking(self, what: str) -> Iterator[None]:
        """Redis and socket errors out as :class:`HotCacheError`; after one, the cache
        stays quiet for :attr:`retry_after` seconds."""
        if time.monotonic() < self._down_until:
            raise HotCacheError(f"Redis hot cache: {what} skipped, Redis failed just before")
        try:
            yield
        except (redis.RedisError, OSError) as exc:
            self._down_until = time.monotonic() + self.retry_after
            raise HotCacheError(f"Redis hot cache: {what} failed: {exc}") from exc

    def get(self, key: HotKey, /) -> HotValues | None:
        with self._talking("get"):
            raw = self.client.get(self.key(key))
        if raw is None:
            return None
        try:
            return decode(raw, key)
        except ValueError:
            self.unreadable += 1
            return None

    def put(self, key: HotKey, values: HotValues, /) -> None:
        try:
            text = encode(values)
        except (TypeError, ValueError) as exc:  # a value JSON cannot carry exactly
            raise HotCacheError(f"Redis hot cache: cannot encode {key!r}: {exc}") from exc
        with self._talking("put"):
            self.client.set(self.key(key), text, px=self.ttl // timedelta(milliseconds=1))

    def delete(self, key: HotKey, /) -> None:
        with self._talking("delete"):
            self.client.delete(self.key(key))

    def close(self) -> None:
        if self._owned:
            self.client.close()
