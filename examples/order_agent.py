"""Seed 000's order 7842, end to end: memory explains, live state decides.

A customer asks an order agent: "Release order 7842 like the last urgent shipment."
The store remembers a delivery preference (daily shipments through October 31) and
a prior case (order 7311 released as a one-time exception); the shared corpus holds
the handbook page on credit holds, revised on October 27; the order service says
order 7842 is on credit hold with no Finance approval recorded.

The agent here is a few plain rules over the packet (no model), so the run is
deterministic: it explains why the earlier exception is relevant but not enough,
offers to request Finance approval, and asks only the questions the packet leaves
open. The release itself goes through the action gate, which reads the order
service and the approvals table, never memory: it refuses until Finance approval
is recorded. Run again without the preference memory (the counterfactual): the
gate decides the same, and the agent asks one more question, the delivery day.

    python examples/order_agent.py            # both runs, printed
    python examples/order_agent.py --json     # the outcomes as JSON
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memledger import Actor, Claim, Memory, SourceEvent
from memledger.corpus import Corpus
from memledger.domain.records import Grant
from memledger.gate import Verdict
from memledger.read.context import Constraint, LiveState, Packet
from memledger.store import open_store
from memledger.testing import FrozenClock

NOW = datetime(2026, 10, 28, 9, 30, tzinfo=UTC)
TENANT = "acme-orders"
CUSTOMER = "acct-9"
REQUEST = "Release order 7842 like the last urgent shipment"
HANDBOOK = """# Order operations handbook

## Expedited orders

Urgent shipments go out the same day when the order is releasable. Exceptions for
a single order may be granted by Finance; they do not carry over to later orders.

## Credit hold

Revised 2026-10-27. An order on credit hold is released only after Finance approval
is recorded for that order. Earlier one-time exceptions are not approvals.
"""

# The systems of record, as the order service and the approvals table would answer.
ORDERS = {"7842": {"status": "CREDIT_HOLD", "customer": CUSTOMER}}
APPROVALS: dict[str, str] = {}


@dataclass(frozen=True)
class Outcome:
    with_preference: bool
    reply: str
    questions: list[str]
    gate_allowed: bool
    gate_reasons: list[str]
    trace_id: str
    replay_matches: bool
    packet: str


def _remember(memory: Memory, *, with_preference: bool) -> None:
    account = Actor(
        id=CUSTOMER,
        authenticated=True,
        grants=frozenset({Grant(family="delivery_preference")}),
    )
    if with_preference:
        memory.ingest(
            SourceEvent(
                tenant=TENANT,
                event_id="evt-pref-1",
                subject=CUSTOMER,
                actor=account,
                channel="chat",
                occurred_at=NOW - timedelta(days=27),
                text="Please send daily regular shipments through October 31.",
            ),
            [
                Claim(
                    family="delivery_preference",
                    kind="preference",
                    statement="Daily regular shipments through October 31",
                    value="daily",
                    grounding="daily regular shipments through October 31",
                    valid_until=datetime(2026, 11, 1, tzinfo=UTC),
                )
            ],
        )
    memory.ingest(
        SourceEvent(
            tenant=TENANT,
            event_id="evt-7311",
            subject=CUSTOMER,
            actor=account,
            channel="chat",
            occurred_at=NOW - timedelta(days=33),
            text=(
                "Thanks for releasing order 7311 for our urgent shipment: Finance approved "
                "it as a one-time exception, for that order only."
            ),
            metadata={"session": "september"},
        )
    )
    memory.process()


def _agent(packet: Packet) -> tuple[str, list[str]]:
    """A rule-based stand-in for the model: reads only the packet."""
    text = packet.text
    lines = []
    if "CREDIT_HOLD" in text:
        lines.append("Order 7842 is on credit hold and cannot be released yet.")
    if "7311" in text:
        lines.append(
            "Order 7311 was released as a one-time exception approved by Finance for that "
            "order only: it is why you expect a release, but it does not approve 7842."
        )
    if "Finance approval required before release" in text or "Finance approval" in text:
        lines.append("Current policy needs Finance approval first; I can request it now.")
    questions = ["Shall I request Finance approval for order 7842?"]
    if "delivery_preference" in text:
        lines.append(
            "Once released it ships daily as your account prefers (to be confirmed in the "
            "account service)."
        )
    else:
        questions.append("Which delivery day do you want once it is released?")
    return " ".join(lines), questions


def _order_service() -> Verdict:
    order = ORDERS["7842"]
    return Verdict(
        ok=order["status"] != "CREDIT_HOLD",
        reason=f"order 7842 is {order['status']}",
        source="order-service",
        observed_at=NOW,
        evidence=dict(order),
    )


def _approvals() -> Verdict:
    found = APPROVALS.get("7842")
    return Verdict(
        ok=found is not None,
        reason=f"Finance approval {found}" if found else "no Finance approval recorded",
        source="approvals",
        observed_at=NOW,
    )


def run(folder: Path, *, with_preference: bool = True) -> Outcome:
    """One run of the story in ``folder`` (a fresh store and corpus)."""
    memory = Memory(open_store(folder / "orders.db"), clock=FrozenClock(NOW))
    try:
        _remember(memory, with_preference=with_preference)
        (folder / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
        with Corpus(folder / "orders.db.corpus") as corpus:
            corpus.add(TENANT, [folder / "handbook.md"])
            packet = memory.context(
                REQUEST,
                tenant=TENANT,
                subject=CUSTOMER,
                budget=1200,
                live=[
                    LiveState(
                        name="live_order",
                        value={
                            "id": "7842",
                            "status": "CREDIT_HOLD",
                            "finance_approval": "not_recorded",
                        },
                        observed_at=NOW - timedelta(minutes=15),
                        source="order-service",
                    )
                ],
                constraints=[
                    Constraint(
                        id="credit-hold-v14",
                        rule="Finance approval required before release",
                        effective_from=datetime(2026, 10, 27, tzinfo=UTC),
                    )
                ],
                corpus=corpus,
            )
        reply, questions = _agent(packet)
        decision = memory.gate(
            "release order 7842",
            {"credit_hold": _order_service, "finance_approval": _approvals},
            tenant=TENANT,
            trace_id=packet.trace_id,
        )
        replayed = memory.replay(packet.trace_id, tenant=TENANT)
        return Outcome(
            with_preference=with_preference,
            reply=reply,
            questions=questions,
            gate_allowed=decision.allowed,
            gate_reasons=decision.reasons,
            trace_id=packet.trace_id,
            replay_matches=replayed.matches,
            packet=packet.text,
        )
    finally:
        memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the outcomes as JSON")
    args = parser.parse_args()
    outcomes = []
    for with_preference in (True, False):
        with tempfile.TemporaryDirectory(prefix="order-agent-") as folder:
            outcomes.append(run(Path(folder), with_preference=with_preference))
    if args.json:
        print(json.dumps([asdict(o) for o in outcomes], indent=2))
        return
    for outcome in outcomes:
        title = "with" if outcome.with_preference else "WITHOUT"
        print(f"=== {title} the delivery preference memory ===")
        print(outcome.packet)
        print(f"agent: {outcome.reply}")
        for question in outcome.questions:
            print(f"agent asks: {question}")
        verdict = "allowed" if outcome.gate_allowed else "refused"
        print(f"gate: release {verdict} ({'; '.join(outcome.gate_reasons)})")
        print(f"trace {outcome.trace_id}: replay matches = {outcome.replay_matches}\n")


if __name__ == "__main__":
    main()
