"""Schemathesis against the OpenAPI document the running server publishes: generated
requests (valid and invalid) to every operation, with an admin key so they reach the
handlers; no answer may be a 5xx or differ from the document (status, media type,
headers, body schema), and requests the document calls invalid must be refused.

Each operation's cases come from ``APIOperation.as_strategy`` under Hypothesis (the
``schemathesis.pytest`` loaders need a pytest older than this one), bounded by
:data:`EXAMPLES` per operation and generation mode, without a deadline. The store
holds the seed story first, and operations on a subject's family are also generated
with that subject and family fixed, so that answers full of records are checked too.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode, checks
from schemathesis.specs.openapi import checks as openapi_checks

from memledger import Memory
from memledger.testing import FrozenClock
from memledger.testing.conformance._story import story
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, day

CHECKS = [
    checks.not_a_server_error,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
    openapi_checks.response_headers_conformance,
    openapi_checks.response_schema_conformance,
    openapi_checks.negative_data_rejection,
]
EXAMPLES = 12
"""Per operation, generation mode and set of fixed parameters."""


def _known(memory: Memory) -> dict[str, str]:
    (record, *_) = memory.history(SUBJECT, FAMILY, tenant=TENANT)
    return {
        "subject": SUBJECT,
        "family": FAMILY,
        "memory_id": record.memory_id,
        "event_id": record.source_event_id,
    }


def _fixed(known: dict[str, str], path: str) -> list[dict[str, Any] | None]:
    """Path parameters to fix as well as leaving all generated (``None``)."""
    wanted = {name: value for name, value in known.items() if "{" + name + "}" in path}
    return [None, wanted] if wanted else [None]


def _fuzz(
    operation: schemathesis.APIOperation,
    mode: GenerationMode,
    *,
    headers: dict[str, str],
    fixed: dict[str, Any] | None,
) -> list[int]:
    """The statuses of up to :data:`EXAMPLES` generated cases, each checked."""
    statuses: list[int] = []
    strategy = operation.as_strategy(generation_mode=mode, headers=headers, path_parameters=fixed)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    @given(case=strategy)
    def run(case: schemathesis.Case) -> None:
        response = case.call_and_validate(checks=CHECKS)
        statuses.append(response.status_code)

    try:
        run()
    except Unsatisfiable:
        assert mode is GenerationMode.NEGATIVE, operation.label  # nothing to negate
    except BaseException as exc:
        exc.add_note(f"operation {operation.label}, {mode.value} cases, {fixed}")
        raise
    return statuses


@pytest.mark.usefixtures("no_proxies")
def test_the_api_keeps_to_its_document(base_url: str, memory: Memory, clock: FrozenClock) -> None:
    story(memory, clock)
    clock.set(day(10, 25))
    _, token = memory.create_key(TENANT, "fuzzer", role="admin", grants=["*"])
    headers = {"Authorization": f"Bearer {token}"}
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    known = _known(memory)
    ran: dict[str, list[int]] = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        for fixed in _fixed(known, operation.path):
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                statuses = _fuzz(operation, mode, headers=headers, fixed=fixed)
                ran.setdefault(operation.label, []).extend(statuses)
    assert len(ran) >= 33, sorted(ran)
    assert sum(len(s) for s in ran.values()) >= 500, {k: len(v) for k, v in ran.items()}
    # the generated requests reach the handlers: most operations answered a 2xx
    succeeded = [label for label, statuses in ran.items() if any(s < 300 for s in statuses)]
    assert len(succeeded) >= 25, sorted(set(ran) - set(succeeded))
