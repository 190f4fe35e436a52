"""Seed 000, the delivery-preference story, through HTTP only: events in; current,
timeline, history and changes out; read-your-corrections with the consistency header;
revocation; the order rule; authority."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx
from api_helpers import Clients, event_json, ok, post_event, pref_json, problem

from memledger.testing import FrozenClock
from memledger.testing.scenarios import FAMILY, SUBJECT, day
from memledger.wire import isoformat
from memledger.wire_models import CONSISTENCY_HEADER, ConsistencyToken

SLOT = f"/v1/subjects/{SUBJECT}/families/{FAMILY}"


def at(moment: object) -> str:
    return isoformat(moment)  # type: ignore[arg-type]


FRIDAYS = event_json(
    "evt-oct02",
    "Deliver my digest on Fridays.",
    occurred_at=at(day(10, 2, 9)),
    sequence=1,
    claims=[pref_json("friday", grounding="on Fridays")],
)
"""The story's first event (Oct 2): Friday."""
OCT19_TEXT = "Daily for the rest of October please, then Friday again from November 1."


def story(api: httpx.Client, clock: FrozenClock) -> list[httpx.Response]:
    """Oct 2: Friday. Oct 19: one event, daily through Oct 31 and Friday from Nov 1."""
    clock.set(day(10, 2))
    first = ok(api.post("/v1/events", json=FRIDAYS))
    clock.set(day(10, 19))
    second = ok(
        post_event(
            api,
            "evt-oct19",
            OCT19_TEXT,
            occurred_at=at(day(10, 19, 9)),
            sequence=2,
            claims=[
                pref_json(
                    "daily",
                    valid_until=at(day(11, 1, 0)),
                    grounding="Daily for the rest of October",
                ),
                pref_json(
                    "friday",
                    valid_from=at(day(11, 1, 0)),
                    grounding="Friday again from November 1",
                ),
            ],
        )
    )
    return [first, second]


def stated(
    api: httpx.Client,
    event_id: str,
    text: str,
    when: datetime,
    *,
    value: str | None = None,
    **fields: Any,
) -> httpx.Response:
    """``event_id`` said at ``when`` (claiming the delivery preference ``value`` when
    given), written: checked 200."""
    claims = None if value is None else [pref_json(value)]
    said = post_event(api, event_id, text, occurred_at=at(when), claims=claims, **fields)
    return ok(said)


def values(response: httpx.Response) -> list[object]:
    return [r["value"] for r in ok(response).json()]


def current_at(api: httpx.Client, when: datetime, token: str | None = None) -> list[Any]:
    """The slot's current records at ``when``, read at least at the consistency ``token``
    when one is given (checked 200)."""
    headers = {} if token is None else {CONSISTENCY_HEADER: token}
    records: list[Any] = ok(
        api.get(f"{SLOT}/current", params={"valid_at": at(when)}, headers=headers)
    ).json()
    return records


def test_story_valid_and_record_time(clients: Clients, clock: FrozenClock) -> None:
    api = clients.writer
    first, second = story(api, clock)
    assert first.json()["outcome"] == "committed"
    assert [r["disposition"] for r in second.json()["results"]] == ["current", "current"]

    def current(**params: str) -> list[object]:
        return values(api.get(f"{SLOT}/current", params=params))

    assert current(valid_at=at(day(10, 28))) == ["daily"]
    assert current(valid_at=at(day(11, 1, 0))) == ["friday"]
    assert current(valid_at=at(day(10, 5))) == ["friday"]
    assert current(valid_at=at(day(10, 1))) == []
    timeline = ok(api.get(f"{SLOT}/timeline")).json()
    assert [(r["value"], r["valid_from"], r["valid_until"]) for r in timeline] == [
        ("friday", at(day(10, 2, 9)), at(day(10, 19, 9))),
        ("daily", at(day(10, 19, 9)), at(day(11, 1, 0))),
        ("friday", at(day(11, 1, 0)), None),
    ]
    assert all(r["claim_faithful_to_source"] for r in timeline)
    assert not any(r["operational_setting_confirmed"] for r in timeline)  # chat is no setting
    # record time: what memledger believed before the Oct 19 correction
    before = at(day(10, 19) - timedelta(microseconds=1))
    old = ok(api.get(f"{SLOT}/current", params={"valid_at": at(day(10, 28)), "as_of": before}))
    assert [(r["value"], r["source_event_id"]) for r in old.json()] == [("friday", "evt-oct02")]
    assert values(api.get(f"{SLOT}/timeline", params={"as_of": before})) == ["friday"]
    history = ok(api.get(f"{SLOT}/history")).json()
    closed = [r for r in history if r["status"] == "superseded"]
    assert [(r["value"], r["valid_until"], r["superseded_at"]) for r in closed] == [
        ("friday", None, at(day(10, 19)))
    ]
    changes = ok(api.get(f"{SLOT}/changes")).json()
    assert [c["action"] for c in changes] == [
        "recorded",
        "closed",
        "recorded",
        "recorded",
        "recorded",
    ]
    slots = ok(api.get(f"/v1/subjects/{SUBJECT}/families")).json()
    assert [(s["family"], s["revision"]) for s in slots] == [(FAMILY, 2)]
    records = ok(api.get(f"/v1/subjects/{SUBJECT}/records", params={"valid_at": at(day(10, 28))}))
    assert [r["value"] for r in records.json()] == ["daily"]
    # the event as the ledger holds it: its actor is the key's, whatever was sent
    held = ok(api.get("/v1/events/evt-oct19")).json()
    assert held["event"]["actor"] == {
        "id": SUBJECT,
        "authenticated": True,
        "grants": [f"{FAMILY}:*"],
    }
    assert held["receipt"]["outcome"] == "committed" and held["job"] is None


def test_late_retry_is_a_duplicate_and_a_redelivery_historical(
    clients: Clients, clock: FrozenClock
) -> None:
    api = clients.writer
    story(api, clock)
    timeline = ok(api.get(f"{SLOT}/timeline")).json()
    clock.set(day(10, 28))
    again = ok(api.post("/v1/events", json=FRIDAYS)).json()
    assert again["duplicate"] and again["outcome"] == "committed"
    redelivered = {**FRIDAYS, "event_id": "evt-oct02-redelivered", "claims": [pref_json("friday")]}
    late = ok(api.post("/v1/events", json=redelivered)).json()
    assert [(r["disposition"], r["reason"]) for r in late["results"]] == [
        ("historical", "older_sequence")
    ]
    assert values(api.get(f"{SLOT}/current", params={"valid_at": at(day(10, 28))})) == ["daily"]
    assert ok(api.get(f"{SLOT}/timeline")).json() == timeline
    kept = [r for r in ok(api.get(f"{SLOT}/history")).json() if r["status"] == "historical"]
    assert [(r["source_event_id"], r["value"]) for r in kept] == [
        ("evt-oct02-redelivered", "friday")
    ]


def test_read_your_corrections_with_the_consistency_header(clients: Clients) -> None:
    api = clients.writer
    first = stated(api, "a", "Fridays", day(10, 2), sequence=1, value="friday")
    fix = stated(api, "b", "Daily", day(10, 3), sequence=2, value="daily")
    assert first.headers[CONSISTENCY_HEADER] == f"{SUBJECT}/{FAMILY}@1"
    token = fix.headers[CONSISTENCY_HEADER]
    assert token == f"{SUBJECT}/{FAMILY}@2"
    assert [(r["subject"], r["family"], r["revision"]) for r in fix.json()["revisions"]] == [
        (SUBJECT, FAMILY, 2)
    ]
    now = current_at(api, day(10, 4), token)
    assert [(r["value"], r["revision"] >= 2) for r in now] == [("daily", True)]
    recalled = ok(
        api.post(
            "/v1/recall",
            json={
                "query": "delivery preference",
                "subject": SUBJECT,
                "consistency": token,
                "valid_at": at(day(10, 4)),
            },
        )
    ).json()
    assert "daily" in [i["record"]["value"] for i in recalled["items"]]
    assert "friday" not in [i["record"]["value"] for i in recalled["items"]]
    # a token this server has not reached: refused rather than answered stale
    ahead = str(ConsistencyToken.parse(token).merge(ConsistencyToken({(SUBJECT, FAMILY): 3})))
    for response in (
        api.get(f"{SLOT}/current", headers={CONSISTENCY_HEADER: ahead}),
        api.get(f"{SLOT}/timeline", headers={CONSISTENCY_HEADER: ahead}),
        api.get(f"{SLOT}/history", headers={CONSISTENCY_HEADER: ahead}),
        api.get(f"/v1/subjects/{SUBJECT}/records", headers={CONSISTENCY_HEADER: ahead}),
        api.post(
            "/v1/recall", json={"query": "delivery", "subject": SUBJECT, "consistency": ahead}
        ),
        api.post("/v1/recall", json={"query": "delivery"}, headers={CONSISTENCY_HEADER: ahead}),
        api.post(
            "/v1/context",
            json={"request": "when?", "subject": SUBJECT},
            headers={CONSISTENCY_HEADER: ahead},
        ),
    ):
        problem(response, 409, "revision_not_met")
        assert response.headers["retry-after"] == "1"
    nobody = "/v1/subjects/nobody/families/delivery_preference/timeline"
    problem(
        api.get(nobody, headers={CONSISTENCY_HEADER: f"nobody/{FAMILY}@1"}), 409, "revision_not_met"
    )
    # a floor of another subject or family does not concern the read
    other = f"user-43/{FAMILY}@9,{SUBJECT}/home_city@9"
    ok(api.get(f"{SLOT}/current", headers={CONSISTENCY_HEADER: other}))


def test_revoke_over_http(clients: Clients, clock: FrozenClock) -> None:
    api = clients.writer
    story(api, clock)
    clock.set(day(10, 28))
    (daily,) = current_at(api, day(10, 28))
    revoked = ok(api.post(f"/v1/memories/{daily['memory_id']}/revoke", json={"reason": "wrong"}))
    receipt = revoked.json()
    assert daily["memory_id"] in receipt["revoked"] and receipt["reason"] == "wrong"
    token = revoked.headers[CONSISTENCY_HEADER]
    assert ConsistencyToken.parse(token).floor(SUBJECT, FAMILY) == receipt["revision"]
    after = current_at(api, day(10, 28), token)
    assert "daily" not in [r["value"] for r in after]
    assert daily["memory_id"] not in [r["memory_id"] for r in ok(api.get(f"{SLOT}/history")).json()]
    assert ok(api.get(f"/v1/memories/{daily['memory_id']}")).json()["status"] == "revoked"
    # revoked records are shown only in an audit, and only to an admin key
    problem(
        api.get(f"{SLOT}/history", params={"include_revoked": "true"}), 403, "permission_denied"
    )
    audit = ok(clients.admin.get(f"{SLOT}/history", params={"include_revoked": "true"})).json()
    assert daily["memory_id"] in [r["memory_id"] for r in audit]
    # a new authorised event may set a new value under the new generation
    stated(api, "evt-oct28", "Weekly now", day(10, 28, 9), sequence=3, value="weekly")
    assert values(api.get(f"{SLOT}/current", params={"valid_at": at(day(10, 29))})) == ["weekly"]


def test_order_rule_and_review_over_http(clients: Clients) -> None:
    setting = stated(
        clients.service,
        "acct-1",
        "delivery_preference=weekly",
        day(10, 3),
        sequence=7,
        channel="account_service",
        value="weekly",
    ).json()
    assert setting["outcome"] == "committed"
    late_chat = stated(
        clients.writer, "chat-9", "Fridays please", day(10, 4), sequence=9, value="friday"
    ).json()
    assert [r["reason"] for r in late_chat["results"]] == ["lower_precedence"]
    (now,) = ok(clients.reader.get(f"{SLOT}/current", params={"valid_at": at(day(10, 5))})).json()
    assert now["value"] == "weekly" and now["operational_setting_confirmed"]
    # a user's key cannot send a setting channel
    problem(
        post_event(
            clients.writer,
            "acct-2",
            "x",
            occurred_at=at(day(10, 3)),
            channel="account_service",
            claims=[pref_json("daily")],
        ),
        403,
        "permission_denied",
    )


def test_equal_precedence_goes_to_review_and_an_admin_resolves_it(clients: Clients) -> None:
    subject = "user-50"
    slot = f"/v1/subjects/{subject}/families/{FAMILY}"
    for event_id, text, value in (("a", "Fridays", "friday"), ("b", "Mondays", "monday")):
        held = stated(
            clients.service,
            event_id,
            text,
            day(10, 3),
            subject=subject,
            value=value,
            channel="account_service",
        ).json()
    assert held["outcome"] == "review" and held["review_id"]
    (item,) = ok(clients.reader.get("/v1/reviews")).json()
    assert (item["event_id"], item["review_id"]) == ("b", held["review_id"])
    decision = f"/v1/reviews/{held['review_id']}/accept"
    problem(clients.writer.post(decision, json={"reason": "newer"}), 403, "permission_denied")
    done = ok(clients.admin.post(decision, json={"reason": "the newer instruction"}))
    body = done.json()
    assert body["review"]["resolved_by"] == "admin-1"
    assert body["review"]["resolution_reason"] == "the newer instruction"
    assert body["receipt"]["outcome"] == "committed"
    assert CONSISTENCY_HEADER in done.headers
    assert values(clients.reader.get(f"{slot}/current", params={"valid_at": at(day(10, 4))})) == [
        "monday"
    ]
    problem(
        clients.admin.post(f"/v1/reviews/{held['review_id']}/reject", json={"reason": "no"}),
        409,
        "conflict",
    )
    assert ok(clients.reader.get("/v1/reviews")).json() == []
    assert len(ok(clients.reader.get("/v1/reviews", params={"all": "true"})).json()) == 1


def test_an_actor_without_the_grant_produces_observations_only(
    clients: Clients, clock: FrozenClock
) -> None:
    receipts = story(clients.ungranted, clock)
    for receipt in receipts:
        body = receipt.json()
        assert {(r["disposition"], r["reason"]) for r in body["results"]} == {
            ("observation", "no_grant")
        }
        assert body["revisions"][0]["revision"] >= 1  # kept, in the family's history
    api = clients.reader
    assert values(api.get(f"{SLOT}/current", params={"valid_at": at(day(10, 28))})) == []
    assert ok(api.get(f"{SLOT}/timeline")).json() == []
    history = ok(api.get(f"{SLOT}/history")).json()
    assert len(history) == 3
    assert {
        (r["kind"], r["proposed_kind"], r["scope_authorized"], r["exclusion"]) for r in history
    } == {("observation", "preference", False, "no_grant")}
    # the body's actor, with its grants, is not believed: the key's actor is
    body = event_json(
        "evt-x",
        "Fridays please",
        occurred_at=at(day(10, 30)),
        sequence=5,
        claims=[pref_json("friday")],
    )
    body["actor"] = {"id": "root", "authenticated": True, "grants": ["*"]}
    forged = ok(clients.ungranted.post("/v1/events", json=body)).json()
    assert [r["reason"] for r in forged["results"]] == ["no_grant"]
    assert ok(api.get("/v1/events/evt-x")).json()["event"]["actor"]["id"] == SUBJECT


def test_queued_events_are_processed_on_request(clients: Clients) -> None:
    api = clients.writer
    queued = stated(
        api, "evt-q", "Please deliver my digest on Fridays.", day(10, 2), sequence=1
    ).json()
    assert queued["outcome"] == "queued" and queued["job_id"]
    (job,) = ok(api.get("/v1/jobs")).json()
    assert (job["event_id"], job["status"]) == ("evt-q", "queued")
    status = ok(api.get("/v1/events/evt-q")).json()
    assert status["receipt"]["outcome"] == "queued" and status["job"]["status"] == "queued"
    problem(clients.reader.post("/v1/process", json={}), 403, "permission_denied")
    report = ok(api.post("/v1/process", json={"max_jobs": 10})).json()
    assert report["jobs"] == 1 and report["outcomes"]["committed"] == 1
    assert ok(api.get("/v1/jobs")).json() == []
    done = ok(api.get("/v1/events/evt-q"))
    assert done.json()["receipt"]["outcome"] == "committed"
    assert done.json()["job"]["status"] == "done"


def test_erase_an_event_over_http(clients: Clients, clock: FrozenClock) -> None:
    story(clients.writer, clock)
    admin = clients.admin
    problem(admin.post("/v1/erasures", json={}), 400, "invalid_input")
    problem(admin.post("/v1/erasures", json={"event": "evt-nope"}), 404, "event_not_found")
    erased = ok(admin.post("/v1/erasures", json={"event": "evt-oct19", "reason": "asked to"}))
    body = erased.json()
    assert body["events"] == ["evt-oct19"] and body["complete"] is True
    assert {s["store"]: s["status"] for s in body["stores"]}["ledger"] == "erased"
    problem(clients.writer.get("/v1/events/evt-oct19"), 404, "event_not_found")
    again = post_event(
        clients.writer, "evt-oct19", OCT19_TEXT, occurred_at=at(day(10, 19, 9)), sequence=2
    )
    found = problem(again, 409, "event_erased")
    assert "erased" in str(found["detail"])
    assert [r["erasure_id"] for r in ok(admin.get("/v1/erasures")).json()] == [body["erasure_id"]]


def test_retention_over_http(clients: Clients, clock: FrozenClock) -> None:
    admin = clients.admin
    assert ok(admin.get("/v1/retention")).json() == {}
    assert ok(admin.put("/v1/retention/episode", json={"days": 90})).json() == {"episode": 90}
    problem(admin.put("/v1/retention/episode", json={"days": 0}), 422, "invalid_request")
    problem(admin.put("/v1/retention/nonsense", json={"days": 3}), 400, "invalid_input")
    assert ok(admin.put("/v1/retention/episode", json={"days": None})).json() == {}


def test_quotas_over_http(clients: Clients, clock: FrozenClock) -> None:
    admin = clients.admin
    none = {"max_records": None, "jobs_per_minute": None, "recalls_per_second": None,
            "packet_tokens": None}  # fmt: skip
    assert ok(admin.get("/v1/quotas")).json() == none
    set_to = ok(admin.put("/v1/quotas", json={"recalls_per_second": 1, "packet_tokens": 300}))
    assert set_to.json() == {**none, "recalls_per_second": 1.0, "packet_tokens": 300}
    problem(admin.put("/v1/quotas", json={"max_records": 0}), 422, "invalid_request")
    r = clients.reader
    ok(r.post("/v1/recall", json={"query": "digest"}))
    busy = r.post("/v1/recall", json={"query": "digest"})
    found = problem(busy, 429, "quota_exceeded")
    assert busy.headers["Retry-After"] == "1" and "recalls per second" in str(found["detail"])
    big = admin.post("/v1/context", json={"request": "digest", "budget": 2000})
    assert "packet_tokens" in str(problem(big, 429, "quota_exceeded")["detail"])
    assert ok(admin.put("/v1/quotas", json={})).json() == none


def test_forget_an_event(clients: Clients, clock: FrozenClock) -> None:
    api = clients.writer
    story(api, clock)
    forgotten = ok(api.post("/v1/events/evt-oct19/forget", json={"reason": "asked to"}))
    body = forgotten.json()
    assert body["event_id"] == "evt-oct19" and body["revocations"]
    token = forgotten.headers[CONSISTENCY_HEADER]
    left = [r["value"] for r in current_at(api, day(10, 28), token)]
    assert "daily" not in left
    assert ok(api.get("/v1/events/evt-oct19")).json()["event"]["event_id"] == "evt-oct19"


def test_undo_and_restore_over_http(clients: Clients, clock: FrozenClock) -> None:
    api, admin = clients.writer, clients.admin
    story(api, clock)
    clock.set(day(10, 28))
    (daily,) = current_at(api, day(10, 28))
    revoked = ok(api.post(f"/v1/memories/{daily['memory_id']}/revoke", json={"reason": "wrong"}))
    change = revoked.json()["change_id"]
    assert change.startswith("chg-")
    problem(api.post("/v1/undo", json={"change_id": change}), 403, "permission_denied")
    problem(admin.post("/v1/undo", json={"change_id": "chg-nope"}), 404, "not_found")
    problem(admin.post("/v1/undo", json={}), 422, "invalid_request")
    clock.set(day(10, 29))
    undone = ok(admin.post("/v1/undo", json={"change_id": change, "reason": "it was right"}))
    body = undone.json()
    assert body["undid"] == change and body["kind"] == "revocation" and body["restored"]
    token = undone.headers[CONSISTENCY_HEADER]
    assert ConsistencyToken.parse(token).floor(SUBJECT, FAMILY) == body["revisions"][0]["revision"]
    assert [r["value"] for r in current_at(api, day(10, 28), token)] == ["daily"]
    # restoring a memory undoes the change that closed it: here, the same undo again
    again = ok(admin.post(f"/v1/memories/{daily['memory_id']}/restore", json={"reason": "x"}))
    assert again.json()["duplicate"] is True and again.json()["restored"] == body["restored"]
    log = ok(admin.get("/v1/change-log", params={"limit": 5})).json()
    assert [(c["kind"], c["undone_by"]) for c in log] == [
        ("undo", None),
        ("revocation", body["change_id"]),
    ]
    # the story's claims came from the caller: a rollback of an extractor takes nothing
    rolled = ok(admin.post("/v1/rollbacks", json={"extractor": "rules@1"})).json()
    assert rolled["change_id"] is None and rolled["events"] == []
    problem(admin.post("/v1/rollbacks", json={"extractor": "rules"}), 400, "invalid_input")
    merged = ok(admin.post("/v1/consolidations", json={"dry_run": True})).json()
    assert merged["dry_run"] is True and merged["merges"] == [] and merged["families"] == 1
    problem(admin.post("/v1/consolidations", json={"threshold": 0}), 422, "invalid_request")
    compacted = ok(admin.post("/v1/compactions", json={"dry_run": True, "older_than_days": 0}))
    assert compacted.json()["dry_run"] is True and compacted.json()["change_id"] is None
    problem(admin.post("/v1/compactions", json={"min_turns": 1}), 422, "invalid_request")
    both = {"older_than_days": 1, "before": at(day(10, 1))}
    problem(admin.post("/v1/compactions", json=both), 400, "invalid_input")
