"""The short path on the command line: ``add`` what was said to a user's memory,
``search`` it with scores, list it (``memories``) and ``delete`` one memory, as
:meth:`~memledger.Memory.add`, :meth:`~memledger.Memory.search`,
:meth:`~memledger.Memory.get_all` and :meth:`~memledger.Memory.delete` do;
``history MEMORY_ID`` (:mod:`memledger.cli.reads`) tells how one memory came to be.

Their ``--json`` is what the HTTP API's ``/v1/memories`` routes answer. An add is
checked whole (the messages, whose memory, the session) before the store is opened:
a mistake writes nothing and creates no store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated

import typer

from memledger.cli import render
from memledger.cli._app import app, indexed_memory
from memledger.cli._command import Call, each, store_command
from memledger.cli._run import CliError
from memledger.cli.options import Agent, IndexEmbedder, MemoryId, Reason, User, read_input
from memledger.domain.messages import normalise, subject_of
from memledger.domain.records import require_id
from memledger.errors import InvalidEventError
from memledger.read.recall import check_query
from memledger.wire import added_to_dict, item_to_dict, revocation_to_dict

Messages = str | Mapping[str, object] | list[str | Mapping[str, object]]
"""What :meth:`~memledger.Memory.add` remembers."""
ROLES = ("user", "assistant")
"""Who may speak TEXT (``--role``); a ``--file`` names its messages' roles itself."""


def whose(user: str | None, agent: str | None) -> str:
    """Whose memory ``--user`` and ``--agent`` name, in words."""
    return f"user {user!r}" if user is not None else f"agent {agent!r}"


def _require_whose(user: str | None, agent: str | None) -> None:
    if user is None and agent is None:
        raise CliError("give --user USER (or --agent AGENT): whose memory is it?")


def _messages(text: str | None, source: str | None, role: str | None) -> Messages:
    """What ``add`` remembers: TEXT spoken by ``--role``, or the JSON of ``--file``."""
    if (text is None) == (source is None):
        raise CliError("give the message as TEXT, or messages with --file FILE (- for stdin)")
    if role is not None and role not in ROLES:
        raise CliError(f"--role must be one of {', '.join(ROLES)}, got {role!r}")
    if source is None:
        if not (text or "").strip():
            raise CliError("TEXT is empty: nothing to add")
        return {"role": role or "user", "content": text}
    if role is not None:
        raise CliError("--role is for TEXT: the messages of --file name their own roles")
    try:
        given: Messages = json.loads(read_input(source))  # normalise() checks its shape
        return given
    except json.JSONDecodeError as exc:
        raise CliError(f"--file {source!r} is not JSON: {exc}") from None


_TEXT_HELP = "What was said (or give --file)."
_SESSION_HELP = "The conversation it belongs to."
_ROLE_HELP = "Who said TEXT: the user (default) or the assistant (the --agent)."
_FILE_HELP = (
    'Messages as JSON, from a file or - for stdin: a list of {"role", "content"} (user,'
    " assistant or tool; system and developer messages are left out)."
)


@app.command()
@store_command
def add(
    call: Call,
    text: Annotated[str | None, typer.Argument(metavar="TEXT", help=_TEXT_HELP)] = None,
    *,
    user: User = None,
    agent: Agent = None,
    session: Annotated[str | None, typer.Option(metavar="SESSION", help=_SESSION_HELP)] = None,
    role: Annotated[str | None, typer.Option(metavar="user|assistant", help=_ROLE_HELP)] = None,
    source: Annotated[str | None, typer.Option("--file", metavar="FILE", help=_FILE_HELP)] = None,
) -> None:
    """Remember what a user said, and the facts it tells.

    TEXT (or the messages of --file) goes to the memory of --user, or with only --agent
    to the agent's own; the facts read from it are memories when the command returns.
    Adding the same messages again for the same user, agent and session is a duplicate:
    nothing new is written.
    """
    _require_whose(user, agent)
    messages = _messages(text, source, role)
    _check(messages, user=user, agent=agent, session=session)
    with call.memory(create=True) as memory:
        done = memory.add(
            messages, user_id=user, agent_id=agent, session=session, tenant=call.tenant
        )
    call.show(added_to_dict(done), render.added, done, whose=whose(user, agent))


def _check(messages: Messages, *, user: str | None, agent: str | None, session: str | None) -> None:
    """Refuse what :meth:`~memledger.Memory.add` would refuse before the store is opened
    (and perhaps created): the messages, whose memory, the session."""
    normalise(messages)
    subject_of(user, agent)
    if session is not None:
        require_id(session, "session", InvalidEventError)


@app.command()
@store_command
def search(
    call: Call,
    query: Annotated[str, typer.Argument(metavar="QUERY", help="What to look for, in words.")],
    *,
    user: User = None,
    agent: Agent = None,
    k: Annotated[int, typer.Option("-k", "--k", metavar="N", help="How many, 1-100.")] = 10,
    embedder: IndexEmbedder = "default",
) -> None:
    """The memories nearest to QUERY, best first, with their scores.

    Of --user (or --agent; neither: of the whole tenant). Relevant marks the ones recall
    would hand out; the others are only the nearest there are (recall and context
    abstain instead).
    """
    subject = None if user is None and agent is None else subject_of(user, agent)
    check_query(query, call.tenant, subject, k)  # a refused query builds no index
    with indexed_memory(call.ctx, call.db, embedder) as memory:
        items = memory.search(query, user_id=user, agent_id=agent, k=k, tenant=call.tenant)
    call.show({"results": [item_to_dict(i) for i in items]}, render.found, items, query=query)


@app.command("memories")
@store_command
def memories_command(
    call: Call,
    *,
    user: User = None,
    agent: Agent = None,
    limit: Annotated[
        int, typer.Option("--limit", metavar="N", help="How many at most, 1-1000.")
    ] = 100,
) -> None:
    """What the memory of --user (or --agent) holds now, newest first.

    Every open record of every family, the turns' words included; nothing revoked,
    corrected away or expired.
    """
    _require_whose(user, agent)
    call.answer(
        lambda memory: memory.get_all(
            user_id=user, agent_id=agent, tenant=call.tenant, limit=limit
        ),
        each(item_to_dict),
        render.listed,
        whose=whose(user, agent),
    )


@app.command()
@store_command
def delete(call: Call, *, memory_id: MemoryId, reason: Reason = "deleted") -> None:
    """Delete a memory, and print the receipt.

    A revocation: nothing brings the memory back by itself, history keeps it as revoked,
    and undo takes the revocation back.
    """
    call.answer(
        lambda memory: memory.delete(memory_id, tenant=call.tenant, reason=reason),
        revocation_to_dict,
        render.revocation,
    )
