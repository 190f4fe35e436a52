"""What every client of an OpenAI-compatible endpoint here shares: the checked
settings and the HTTP client (:class:`Endpoint`), one JSON POST with its failures
mapped to reasons, the answer's body validated, body excerpts, and URLs and API
keys masked out of messages.

Used by the LLM extractor, the query rewriter and the embeddings client; each
maps a failure to its own error class through the ``fail`` callback it passes.
The chat-completion answer they read is :mod:`memledger._openai_chat`'s.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, Self, TypeVar
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ValidationError

from memledger.errors import InvalidInputError

if TYPE_CHECKING:
    import httpx

EXCERPT = 200
MASK = "***"

Fail = Callable[..., NoReturn]
"""``fail(message, reason=...)``: raise the caller's error class."""

M = TypeVar("M", bound=BaseModel)


def check_settings(*, base_url: object, model: object, timeout: object, api_key: object) -> None:
    """Refuse unusable endpoint settings with an ``InvalidInputError`` (secrets masked)."""
    parts = urlsplit(base_url) if isinstance(base_url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidInputError(
            f"base_url must be an http(s) URL such as 'http://127.0.0.1:8080/v1', "
            f"got {redact_url(base_url)!r}"
        )
    if not isinstance(model, str) or not model.strip():
        raise InvalidInputError(f"model must be a non-empty model id, got {model!r}")
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout < math.inf
    ):
        raise InvalidInputError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if api_key is not None and (not isinstance(api_key, str) or not api_key):
        raise InvalidInputError("api_key, when given, must be a non-empty string")


def require_httpx(what: str) -> None:
    """Raise an ``ImportError`` naming the extra if httpx is missing."""
    try:
        import httpx  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"{what} needs httpx, which is not installed; "
            "install the 'llm' extra: pip install 'memledger[llm]'"
        ) from exc


def excerpt(text: str | bytes) -> str:
    """The start of a body, for an error message."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    return text if len(text) <= EXCERPT else text[:EXCERPT] + "..."


def redact_url(url: object) -> str:
    """``url`` without user info (``user:secret@``); anything else as ``str``."""
    text = str(url)
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    if "@" not in parts.netloc:
        return text
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{MASK}@{host}"))


def is_json_error(exc: ValidationError) -> bool:
    """Whether pydantic refused the text as JSON, rather than the JSON's shape."""
    return any(error["type"] == "json_invalid" for error in exc.errors())


def validate_body(body: bytes, model: type[M], *, what: str, shown: str, fail: Fail) -> M:
    """``body`` parsed as ``model``; otherwise ``fail`` with ``invalid_json``, saying
    whether it is not JSON or not ``what`` (``"an embeddings list"``)."""
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        problem = "is not JSON" if is_json_error(exc) else f"is not {what}"
        fail(
            f"the response body from {shown!r} {problem}: {excerpt(body)!r}",
            reason="invalid_json",
        )


def post_json(
    client: httpx.Client,
    endpoint: str,
    *,
    body: object,
    api_key: str | None,
    timeout: float,
    shown: str,
    fail: Fail,
) -> bytes:
    """POST ``body`` as JSON and return the response body of a 2xx answer.

    Failures go to ``fail`` with the reason ``timeout``, ``endpoint_unreachable``
    or ``http_<code>`` (quoting the start of the body); ``shown`` is the
    endpoint as messages may name it.
    """
    import httpx

    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key}"
    try:
        response = client.post(
            endpoint,
            content=json.dumps(body, ensure_ascii=False).encode(),
            headers=headers,
            timeout=timeout,
        )
    except httpx.TimeoutException as exc:
        fail(
            f"no answer from {shown!r} within {timeout:g} s ({type(exc).__name__})",
            reason="timeout",
        )
    except httpx.TransportError as exc:
        fail(f"cannot reach {shown!r}: {type(exc).__name__}: {exc}", reason="endpoint_unreachable")
    if not response.is_success:
        fail(
            f"{shown!r} answered HTTP {response.status_code}: {excerpt(response.content)!r}",
            reason=f"http_{response.status_code}",
        )
    return response.content


class Endpoint:
    """One OpenAI-compatible endpoint as a client uses it: ``{base_url}{path}``.

    Construction checks the settings (:func:`check_settings`) and that httpx is
    installed, naming ``owner`` (the client's class) if not. ``url`` is where
    requests go, ``shown`` the same URL as messages may name it. Without
    ``client`` the endpoint owns an ``httpx.Client`` that :meth:`close` closes;
    a client passed in stays the caller's to close.
    """

    def __init__(
        self,
        *,
        base_url: str,
        path: str,
        model: str,
        api_key: str | None,
        timeout: float,
        client: httpx.Client | None,
        owner: str,
    ) -> None:
        check_settings(base_url=base_url, model=model, timeout=timeout, api_key=api_key)
        require_httpx(owner)
        import httpx

        self.url = base_url.rstrip("/") + path
        self.shown = redact_url(self.url)
        self.model = model
        self.timeout = float(timeout)
        self._owner = owner
        self._api_key = api_key
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client(timeout=self.timeout)

    def describe(self) -> str:
        """The ``repr`` of the client using this endpoint (no credentials in it)."""
        return f"{self._owner}(endpoint={self.shown!r}, model={self.model!r})"

    def post(self, body: object, *, fail: Fail) -> bytes:
        """POST ``body`` as JSON with the API key; see :func:`post_json`."""
        return post_json(
            self._client,
            self.url,
            body=body,
            api_key=self._api_key,
            timeout=self.timeout,
            shown=self.shown,
            fail=fail,
        )

    def mask(self, text: str) -> str:
        """``text`` with the API key replaced by ``***``."""
        return text.replace(self._api_key, MASK) if self._api_key else text

    def close(self) -> None:
        """Close the HTTP client if this endpoint created it."""
        if self._owns_client:
            self._client.close()


class EndpointClient:
    """What every client of one :class:`Endpoint` shares: ``repr`` (the masked URL and
    model), ``close`` (the HTTP client, if the endpoint created it) and use as a
    context manager. Subclasses set ``self._endpoint``."""

    _endpoint: Endpoint

    def __repr__(self) -> str:
        return self._endpoint.describe()

    def close(self) -> None:
        """Close the HTTP client if this client's endpoint created it."""
        self._endpoint.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
