"""An extractor for any OpenAI-compatible chat-completions endpoint.

:class:`LLMExtractor` sends one source event to ``{base_url}/chat/completions``
(OpenAI, vLLM, llama.cpp's server, Ollama, LM Studio, ...) with the prompt
``claims-v3`` (:mod:`memledger.write.extract.prompts.claims_v3`; ``claims-v1``
or ``claims-v2`` on request) and a strict JSON-schema ``response_format``, at
temperature 0. Each claim's ``polarity`` ("assert" or "retract") comes from the
answer; a ``claims-v1`` answer has none, and every claim of it asserts.
``claims-v3`` adds open attributes (family ``attribute``, scoped as the rule
extractor scopes them): their scope, value and kind are normalised through the
rule extractor's own conventions, and a claim whose scope has no attribute's
shape is dropped (:mod:`~memledger.write.extract.prompts.claims_v3` says why
that is no ``schema_mismatch``). It only proposes: the write policy and the
event commit decide what becomes memory.

**Extraction quality is the model's, not this module's.** This adapter checks
the shape of the answer, the families and kinds and the intervals (the write
path then checks each grounding quote against the event text); it cannot tell
a plausible wrong claim from a right one. Use a capable model. Tiny local models (SmolLM2
135M, Gemma 3 270M, tried on these machines) produce wrong or looping JSON
and are not usable as extractors (see ``FINDINGS.md``, "Local LLMs").

httpx is an optional dependency: install the ``llm`` extra
(``pip install 'memledger[llm]'``). Importing this module never needs it;
constructing an :class:`LLMExtractor` without it raises a plain
:class:`ImportError` that names the extra.

Failures raise :class:`~memledger.errors.ExtractionError` with a ``reason``
(the job stays queued and is retried later):

=========================  ===================================================
reason                     cause
=========================  ===================================================
``endpoint_unreachable``   connection refused, DNS failure, connection dropped
``timeout``                no answer within ``timeout`` seconds
``http_<code>``            a non-2xx status; the message quotes the body's start
``invalid_json``           body not JSON, no ``choices``, content missing or not
                           JSON (also: truncated by ``finish_reason: "length"``)
``schema_mismatch``        content is JSON but not ``{"claims": [...],
                           "complete": bool}`` with claim objects
=========================  ===================================================

One bad claim never fails the batch: a claim with missing or mistyped fields,
an unknown family, a kind its family does not allow (or ``observation``,
which is the policy's to assign), a bad or naive timestamp, an inverted
interval, an empty statement or grounding, or (``claims-v3``) an ``attribute``
scope that is no attribute's is dropped, with its reason in
``Extraction.dropped``.
A truncated answer (``finish_reason: "length"``) that still parses yields its
claims with ``complete=False``, so the event goes to review.

The API key is sent as ``Authorization: Bearer ...`` and never appears in a
message, a ``repr`` or ``info``; it is masked out of quoted response bodies.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Literal, NoReturn, Protocol, cast

from pydantic import JsonValue as PydanticJson
from pydantic import ValidationError

from memledger._openai_chat import chat_request, error_summary, read_answer
from memledger._openai_http import Endpoint, EndpointClient
from memledger.domain.families import Schema
from memledger.domain.records import (
    Claim,
    ExtractorInfo,
    JsonValue,
    Kind,
    SourceEvent,
)
from memledger.errors import ExtractionError, InvalidInputError
from memledger.ports import Extraction
from memledger.write.extract.prompts import claims_v1, claims_v2, claims_v3

if TYPE_CHECKING:
    import httpx

__all__ = ["DEFAULT_PROMPT_VERSION", "PROMPT_VERSIONS", "VERSION", "FailureReason", "LLMExtractor"]

VERSION = "1"
"""Version of this adapter (request building and answer parsing), recorded in lineage."""

FailureReason = Literal["endpoint_unreachable", "timeout", "invalid_json", "schema_mismatch"]
"""The fixed ``ExtractionError.reason`` values; a non-2xx status gives ``"http_<code>"``."""

PROMPT_VERSIONS = (claims_v1.VERSION, claims_v2.VERSION, claims_v3.VERSION)
"""The prompts an :class:`LLMExtractor` can send (``prompt_version``)."""

DEFAULT_PROMPT_VERSION = claims_v3.VERSION
"""The prompt an :class:`LLMExtractor` sends unless told otherwise."""


class _Prompt(Protocol):
    """What a prompt module gives the extractor."""

    def system_prompt(self, schema: Schema) -> str: ...
    def user_prompt(self, event: SourceEvent) -> str: ...
    def response_schema(self, schema: Schema) -> dict[str, JsonValue]: ...


_PROMPTS: dict[str, _Prompt] = {
    claims_v1.VERSION: claims_v1,
    claims_v2.VERSION: claims_v2,
    claims_v3.VERSION: claims_v3,
}


class LLMExtractor(EndpointClient):
    """Proposes claims by asking an OpenAI-compatible chat-completions endpoint.

    ``base_url`` is the API root, ``/chat/completions`` is appended
    (``http://127.0.0.1:8080/v1``). ``timeout`` bounds connecting and each
    wait for data, in seconds. ``prompt_version`` chooses the prompt (one of
    :data:`PROMPT_VERSIONS`, :data:`DEFAULT_PROMPT_VERSION` by default) and is
    recorded in lineage.
    Pass ``client`` to reuse an ``httpx.Client`` (proxies, custom transport);
    it stays the caller's to close, and ``timeout`` still applies per request.
    Otherwise the extractor owns a client: :meth:`close` it, or use the
    extractor as a context manager.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        schema: Schema | None = None,
        timeout: float = 20.0,
        prompt_version: str = DEFAULT_PROMPT_VERSION,
        client: httpx.Client | None = None,
    ) -> None:
        if prompt_version not in PROMPT_VERSIONS:
            raise InvalidInputError(
                f"unknown prompt_version {prompt_version!r}; expected one of "
                f"{list(PROMPT_VERSIONS)}"
            )
        self._prompt_version = prompt_version
        self._endpoint = Endpoint(
            base_url=base_url,
            path="/chat/completions",
            model=model,
            api_key=api_key,
            timeout=timeout,
            client=client,
            owner="LLMExtractor",
        )
        self._schema = schema if schema is not None else Schema.default()
        self._info = ExtractorInfo(
            kind="llm",
            name="openai-compatible",
            version=VERSION,
            model=model,
            prompt_version=prompt_version,
        )
        prompt = self._prompt = _PROMPTS[prompt_version]
        self._system = prompt.system_prompt(self._schema)
        self._response_schema = prompt.response_schema(self._schema)

    @property
    def info(self) -> ExtractorInfo:
        return self._info

    def request_body(self, event: SourceEvent) -> dict[str, JsonValue]:
        """The JSON body :meth:`extract` posts for ``event`` (no credentials in it)."""
        return chat_request(
            model=self._endpoint.model,
            system=self._system,
            user=self._prompt.user_prompt(event),
            name=claims_v1.RESPONSE_NAME,
            schema=self._response_schema,
        )

    def extract(self, event: SourceEvent) -> Extraction:
        """Ask the endpoint for ``event``'s claims; raise ``ExtractionError`` if it cannot."""
        batch, truncated = read_answer(
            self._endpoint.post(self.request_body(event), fail=self._fail),
            claims_v1.ClaimsOut,
            name=claims_v1.RESPONSE_NAME,
            shown=self._endpoint.shown,
            fail=self._fail,
        )
        claims: list[Claim] = []
        dropped: list[str] = []
        for index, item in enumerate(batch.claims):
            claim = _convert(item, index=index, schema=self._schema, prompt=self._prompt_version)
            if isinstance(claim, Claim):
                claims.append(claim)
            else:
                dropped.append(self._endpoint.mask(claim))
        return Extraction(
            claims=tuple(claims),
            complete=batch.complete and not truncated,
            dropped=tuple(dropped),
        )

    def _fail(self, message: str, *, reason: str) -> NoReturn:
        """Raise ``ExtractionError``; ``reason`` is a ``FailureReason`` or ``http_<code>``."""
        raise ExtractionError(self._endpoint.mask(message), reason=reason) from None


def _convert(
    item: dict[str, PydanticJson], *, index: int, schema: Schema, prompt: str
) -> Claim | str:
    """A domain claim from one proposed claim object, or the reason it was dropped.
    ``claims-v1`` asked for no polarity: every claim of it asserts. ``claims-v3``'s
    ``attribute`` claims are read by the attribute conventions."""
    family = item.get("family")
    label = f"claim {index}" + (f" ({family!r})" if isinstance(family, str) else "")
    try:
        out = (
            claims_v1.ClaimOut if prompt == claims_v1.VERSION else claims_v2.ClaimOut
        ).model_validate(item)
    except ValidationError as exc:
        return f"{label}: malformed: {error_summary(exc)}"
    polarity = out.polarity if isinstance(out, claims_v2.ClaimOut) else None
    kind, value, scope = out.kind, out.value, out.scope or "global"
    try:
        schema.check(out.family, out.kind)
        if out.kind == "observation":
            return f"{label}: kind 'observation' is the policy's to assign, not a proposal"
        if prompt == claims_v3.VERSION and out.family == claims_v3.FAMILY:
            try:
                scope = claims_v3.attribute_scope(scope, out.value)
                value = claims_v3.attribute_value(out.value)
            except ValueError as exc:
                return f"{label}: {exc}"
            kind = claims_v3.attribute_kind(scope)
            schema.check(out.family, kind)  # the table's kind, in a schema of the tenant's
        claim = Claim(
            family=out.family,
            kind=cast(Kind, kind),
            statement=out.statement,
            value=value,
            scope=scope,
            valid_from=_timestamp(out.valid_from, "valid_from"),
            valid_until=_timestamp(out.valid_until, "valid_until"),
            grounding=out.grounding,
            polarity=polarity or "assert",
        )
        if out.confidence is not None:
            claim = replace(claim, confidence=out.confidence)
        return claim
    except InvalidInputError as exc:
        return f"{label}: {exc}"


def _timestamp(text: str | None, what: str) -> datetime | None:
    """An aware datetime from ISO 8601 text; naive ones are left for ``Claim`` to reject."""
    if text is None or not text.strip():
        return None
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidInputError(f"{what} {text!r} is not an ISO 8601 timestamp") from None
