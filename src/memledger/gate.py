"""The action gate: what a consequential action must pass, on live state only.

Memory explains; it never authorises. A gate is given *checks*: callables that read
the system of record now (the order service, the approvals table, the caller's
authorization) and answer with a :class:`Verdict` that says where the answer came
from and when it was observed. The gate:

* runs every check (a check that raises denies: the gate fails closed);
* refuses anything remembered as evidence: a check that answers with a memory
  record, a recall result, a packet or a packet item (or a verdict whose source is
  ``memory`` or a memory id) is an error in the caller's code, not a pass;
* allows the action only when every check passes;
* records the decision, with each verdict, against the context trace the model
  worked from (``trace_id``), so ``memledger trace show`` shows both what the model
  saw and what the action was allowed on.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from memledger.domain.records import JsonValue, MemoryRecord, require_aware, require_id
from memledger.errors import InvalidInputError
from memledger.ports import Clock, Store, StoredDecision


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """One check's answer, read from live state."""

    ok: bool
    reason: str
    source: str
    """The system of record it was read from (``"order-service"``), never memory."""
    observed_at: datetime
    evidence: Mapping[str, JsonValue] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.ok, bool):
            raise InvalidInputError("a verdict's ok must be True or False")
        if not isinstance(self.source, str) or not self.source.strip():
            raise InvalidInputError("a verdict must name the live source it was read from")
        if self.source.casefold() in ("memory", "memledger") or self.source.startswith("mem-"):
            raise InvalidInputError(
                f"a verdict from {self.source!r} is a memory: memory is not evidence for an "
                "action; read the system of record"
            )
        require_aware(self.observed_at, "observed_at", InvalidInputError)
        if self.evidence is not None:
            try:
                json.dumps(dict(self.evidence), allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"evidence is not JSON data: {exc}") from exc


Check = Callable[[], Verdict]


@dataclass(frozen=True, slots=True, kw_only=True)
class GateDecision:
    decision_id: str
    action: str
    allowed: bool
    decided_at: datetime
    trace_id: str | None
    verdicts: Mapping[str, Verdict]
    failures: Mapping[str, str]
    """Checks that raised, with their error (each denies)."""

    @property
    def reasons(self) -> list[str]:
        """Why it was denied (empty when allowed)."""
        out = [f"{name}: {v.reason}" for name, v in self.verdicts.items() if not v.ok]
        return out + [f"{name}: check failed ({error})" for name, error in self.failures.items()]

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "decision_id": self.decision_id,
            "action": self.action,
            "allowed": self.allowed,
            "decided_at": self.decided_at.isoformat(),
            "trace_id": self.trace_id,
            "checks": {
                name: {
                    "ok": v.ok,
                    "reason": v.reason,
                    "source": v.source,
                    "observed_at": v.observed_at.isoformat(),
                    "evidence": None if v.evidence is None else dict(v.evidence),
                }
                for name, v in self.verdicts.items()
            },
            "failures": dict(self.failures),
            "reasons": list(self.reasons),
        }


def _remembered(answer: object) -> bool:
    """Whether a check answered with something remembered rather than read live."""
    from memledger.read.hot import HotValues
    from memledger.read.packet import Packet, PacketItem
    from memledger.read.recall import Recalled, RecallResult
    from memledger.read.trace import Replay

    remembered = (MemoryRecord, Packet, PacketItem, RecallResult, Recalled, HotValues, Replay)
    return isinstance(answer, remembered)


def decide(
    store: Store,
    clock: Clock,
    action: str,
    checks: Mapping[str, Check],
    *,
    tenant: str,
    trace_id: str | None = None,
) -> GateDecision:
    """Run ``checks`` and record whether ``action`` may proceed (module docstring)."""
    require_id(tenant, "tenant", InvalidInputError)
    if not isinstance(action, str) or not action.strip():
        raise InvalidInputError("the gate needs the action it decides")
    if not isinstance(checks, Mapping) or not checks:
        raise InvalidInputError("the gate needs at least one check of live state")
    if trace_id is not None:
        require_id(trace_id, "trace id", InvalidInputError)
    verdicts: dict[str, Verdict] = {}
    failures: dict[str, str] = {}
    for name, check in checks.items():
        if not callable(check):
            raise InvalidInputError(
                f"check {name!r} must be a callable that reads live state, not a value "
                "(a remembered fact is not evidence)"
            )
        try:
            answer = check()
        except InvalidInputError:
            raise
        except Exception as exc:
            failures[name] = f"{type(exc).__name__}: {exc}"
            continue
        if _remembered(answer):
            raise InvalidInputError(
                f"check {name!r} answered with a {type(answer).__name__}: memory is not "
                "evidence for an action; read the system of record"
            )
        if not isinstance(answer, Verdict):
            raise InvalidInputError(f"check {name!r} must return a Verdict")
        verdicts[name] = answer
    decision = GateDecision(
        decision_id=f"gate-{secrets.token_hex(10)}",
        action=action,
        allowed=not failures and all(v.ok for v in verdicts.values()),
        decided_at=clock.now(),
        trace_id=trace_id,
        verdicts=verdicts,
        failures=failures,
    )
    with store.write() as unit:
        if trace_id is not None and unit.get_trace(tenant, trace_id) is None:
            raise InvalidInputError(f"no trace {trace_id!r} for tenant {tenant!r}")
        unit.put_decision(
            StoredDecision(
                tenant=tenant,
                decision_id=decision.decision_id,
                trace_id=trace_id,
                decided_at=decision.decided_at,
                action=action,
                allowed=decision.allowed,
                body=json.dumps(decision.to_dict()),
            )
        )
    return decision


def decisions(store: Store, *, tenant: str, trace_id: str) -> list[dict[str, JsonValue]]:
    """The gate decisions recorded in ``store`` against a trace, oldest first."""
    with store.read() as unit:
        found = unit.decisions(tenant, trace_id=trace_id)
    return [json.loads(d.body) for d in found]
