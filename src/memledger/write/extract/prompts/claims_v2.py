"""Prompt ``claims-v2``: ``claims-v1`` with the claim's polarity as a field of its own.

A claim either asserts its value or retracts it. ``claims-v1`` asked the model to
say a retraction "in the statement and the value", which left the decision to read
cue words ("no longer", "off") out of free text. ``claims-v2`` asks for
``"polarity": "assert" | "retract"``, and for a retraction's value to be what
stopped being true (the tool dropped, the city left), in the same family and scope
as the claim it retracts::

    {"family": "tool", "kind": "fact", "statement": "No longer uses TensorFlow",
     "value": "tensorflow", "scope": "tool:tensorflow", "polarity": "retract", ...}

Everything else (families, scopes, valid time, grounding, the batch shape) is
``claims-v1``'s; :class:`ClaimOut` accepts a missing or ``null`` polarity as
``"assert"``, so an answer in the ``claims-v1`` shape still reads.
"""

from __future__ import annotations

from typing import Any, Literal

from memledger.domain.families import Schema
from memledger.domain.records import JsonValue
from memledger.write.extract.prompts import claims_v1
from memledger.write.extract.prompts.claims_v1 import ClaimsOut, user_prompt

__all__ = [
    "RESPONSE_NAME",
    "VERSION",
    "ClaimOut",
    "ClaimsOut",
    "response_schema",
    "system_prompt",
    "user_prompt",
]

VERSION = "claims-v2"
"""Recorded as ``ExtractorInfo.prompt_version`` on every claim this prompt produced."""

RESPONSE_NAME = claims_v1.RESPONSE_NAME


class ClaimOut(claims_v1.ClaimOut):
    """``claims-v1``'s claim object with its polarity; absent or ``null`` asserts."""

    polarity: Literal["assert", "retract"] | None = None


_V1_RULE_8 = """\
8. Something that stops being true (a plan called off, a preference dropped,
   "I no longer ...") is a claim too: say so in the statement and the value.
"""
_RULE_8 = """\
8. "polarity": "assert" for what is true, "retract" for something that stops
   being true (a plan called off, a tool dropped, a job left, "I no longer
   ..."). A retraction's "value" is what stopped being true (the tool, the
   city, the employer, the plan), in the same family and scope as the claim it
   retracts: "I stopped using TensorFlow" is family "tool", scope
   "tool:tensorflow", value "tensorflow", polarity "retract". Never assert
   the value a message retracts.
"""


def system_prompt(schema: Schema) -> str:
    """The system message: ``claims-v1``'s, with rule 8 about polarity."""
    text = claims_v1.system_prompt(schema)
    assert _V1_RULE_8 in text  # claims-v1 is frozen: this holds for as long as it exists
    return text.replace(_V1_RULE_8, _RULE_8)


def response_schema(schema: Schema) -> dict[str, JsonValue]:
    """``claims-v1``'s answer schema with a required ``polarity`` enum per claim."""
    answer: Any = claims_v1.response_schema(schema)  # nested JSON, navigated freely
    claim = answer["properties"]["claims"]["items"]
    claim["properties"]["polarity"] = {
        "type": "string",
        "enum": ["assert", "retract"],
        "description": '"retract": the value stopped being true.',
    }
    claim["required"] = [*claim["required"], "polarity"]
    result: dict[str, JsonValue] = answer
    return result
