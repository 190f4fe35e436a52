"""What ``memledger serve`` prints beside a new admin key: two ``curl`` commands, ready to
paste into a shell, that add a chat message to a user's memory and search it, through
the short path's routes (``POST /v1/memories``, ``POST /v1/memories/search``) with the
key and the URL the server listens on."""

from __future__ import annotations

import json
import shlex

__all__ = ["ADD", "SEARCH", "curl", "first_steps"]

ADD: tuple[str, dict[str, str]] = (
    "/v1/memories",
    {"messages": "I live in Porto.", "user_id": "alice"},
)
"""Where the first example posts, and what: a user's chat message."""
SEARCH: tuple[str, dict[str, str]] = (
    "/v1/memories/search",
    {"query": "where does alice live?", "user_id": "alice"},
)
"""Where the second example posts, and what: a question about that user."""


def curl(base: str, token: str, path: str, body: dict[str, str]) -> str:
    """A shell command that posts ``body`` as JSON to ``base + path`` with ``token``."""
    return shlex.join(
        [
            "curl",
            "-sS",
            f"{base}{path}",
            "-H",
            f"Authorization: Bearer {token}",
            "-H",
            "Content-Type: application/json",
            "-d",
            json.dumps(body),
        ]
    )


def first_steps(base: str, token: str) -> list[str]:
    """The banner's lines: what the examples do, then each command on a line of its own."""
    return [
        "  try it: remember what alice said, then search her memory:",
        f"    {curl(base, token, *ADD)}",
        f"    {curl(base, token, *SEARCH)}",
    ]
