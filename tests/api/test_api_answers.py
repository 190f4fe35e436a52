"""Recall and context answers are written in the thread that read them: over a real
server, each is byte for byte what the route's response model would write, and a
score that is not a finite number is written as ``null`` as the model writes it."""

from __future__ import annotations

import math

import httpx
from api_helpers import Clients, ok
from pydantic import TypeAdapter
from test_api_story import story

from memledger import wire_models as wm
from memledger.api._answers import answer
from memledger.testing import FrozenClock
from memledger.testing.scenarios import SUBJECT


def _as_the_model_writes(model: type, answered: httpx.Response) -> bytes:
    adapter: TypeAdapter[object] = TypeAdapter(model)
    return adapter.dump_json(adapter.validate_json(answered.content))


def test_recall_and_context_answers_are_what_their_models_write(
    clients: Clients, clock: FrozenClock
) -> None:
    story(clients.writer, clock)
    recalled = ok(
        clients.reader.post("/v1/recall", json={"query": "digest delivery", "subject": SUBJECT})
    )
    assert recalled.json()["items"], "the story's memories are recalled"
    packet = clients.reader.post(
        "/v1/context",
        json={
            "request": "when is my digest delivered?",
            "subject": SUBJECT,
            "material": [{"name": "notes.txt", "text": "The digest goes out at nine."}],
            "live": [
                {
                    "name": "plan",
                    "value": {"tier": "pro"},
                    "observed_at": "2026-10-20T09:00:00Z",
                    "source": "billing",
                }
            ],
            "constraints": [{"id": "c1", "rule": "Never email after 18:00."}],
        },
    )
    assert packet.status_code == 200, packet.text
    for model, answered in (
        (
            wm.Recall,
            clients.reader.post(
                "/v1/recall", json={"query": "digest delivery", "subject": SUBJECT}
            ),
        ),
        (wm.Packet, packet),
    ):
        assert answered.headers["content-type"] == "application/json"
        assert answered.content == _as_the_model_writes(model, answered)


def test_a_number_that_is_not_finite_is_written_as_null() -> None:
    written = answer({"score": math.nan, "top": math.inf, "items": [-math.inf, 1.5]})
    assert written.body == b'{"score":null,"top":null,"items":[null,1.5]}'
    assert written.status_code == 200 and written.media_type == "application/json"
