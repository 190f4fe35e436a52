"""Options shared by the commands, and their parsing.

Every option or argument that more than one command takes is declared here once, as a
Typer ``Annotated`` alias (``Db``, ``Tenant``, ``OnlyTenant``, ``AsJson``, ``Subject``,
``MemoryId``, ``FamilyName``, ``OneSubject``, ``User``, ``Agent``, ``IncludeResolved``,
``ReviewId``, ``IndexEmbedder``, ``CorpusEmbedder``, ``JsonOut``...); an option only one command
takes stays beside that command (:func:`moment_option` declares one that takes a
moment). Then their parsing: :func:`parse_moment`, :func:`chosen_tenant` (and
:func:`given_tenant`),
:func:`check_tenant_id`, :func:`store_url`, :func:`check_store_path`,
:func:`embedder_named` and :func:`read_input`.

Defaults for ``--db`` and ``--tenant`` come from :class:`memledger.settings.Settings`,
which the root callback reads once from the environment when the CLI runs; a command
over one tenant acts for ``default`` when neither names one, as ``memledger serve``
does.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import typer

from memledger.cli._run import CliError
from memledger.domain.addresses import check_tenant
from memledger.index.embedders import (
    CachedEmbedder,
    Embedder,
    default_embedder,
    embedder_from_name,
)
from memledger.settings import DEFAULT_TENANT, Settings
from memledger.write.worker import WorkerSettings


def parse_moment(text: str) -> datetime:
    """An ISO 8601 datetime with a time zone; a naive one is a usage error."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not an ISO 8601 datetime (e.g. 2026-10-02T09:00:00Z)"
        ) from None
    if value.tzinfo is None or value.utcoffset() is None:
        raise typer.BadParameter(
            f"{text!r} has no time zone; add 'Z' or an offset such as '+02:00'"
        )
    return value


def moment_option(flag: str, help: str) -> Any:
    """An option taking a moment as a timezone-aware ISO 8601 datetime (:func:`parse_moment`)."""
    return typer.Option(flag, metavar="ISO", parser=parse_moment, help=help, show_default=False)


Db = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="URL",
        help="Store URL (sqlite:///path.db) or file path. "
        "Default: $MEMLEDGER_URL, else ./memledger.db.",
        show_default=False,
    ),
]
Tenant = Annotated[
    str | None,
    typer.Option(
        "--tenant",
        metavar="TENANT",
        help=f"Tenant to act for. Default: $MEMLEDGER_TENANT, else {DEFAULT_TENANT!r}.",
        show_default=False,
    ),
]
OnlyTenant = Annotated[
    str | None,
    typer.Option(
        "--tenant",
        metavar="TENANT",
        help="Only this tenant's jobs. Default: every tenant's ($MEMLEDGER_TENANT is not used).",
        show_default=False,
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
Poll = Annotated[
    float,
    typer.Option(
        "--poll", metavar="SECONDS", min=0.01, help="Wait between looks for jobs when idle."
    ),
]
"""``--poll`` of the commands that run the extraction queue (``worker``, ``serve``)."""
BATCH = WorkerSettings().batch
"""The default ``--batch``."""
Batch = Annotated[
    int,
    typer.Option(
        "--batch",
        metavar="N",
        min=1,
        help="Jobs leased, extracted and committed together; a stop waits for them.",
    ),
]
Subject = Annotated[
    str, typer.Argument(metavar="SUBJECT", help="What the memory is about, e.g. user-42.")
]
MemoryId = Annotated[str, typer.Argument(metavar="MEMORY_ID")]
FamilyName = Annotated[
    str, typer.Argument(metavar="FAMILY", help="Claim family, e.g. delivery_preference.")
]
Scope = Annotated[str | None, typer.Option("--scope", metavar="SCOPE", help="Only this scope.")]
ValidAt = Annotated[
    datetime | None,
    moment_option("--valid-at", "Valid time to read at (timezone-aware). Default: now."),
]
AsOf = Annotated[
    datetime | None,
    moment_option(
        "--as-of", "Record time: what memledger held then (timezone-aware). Default: now."
    ),
]
MinRevision = Annotated[
    int | None,
    typer.Option(
        "--min-revision",
        metavar="N",
        min=0,
        help="Refuse to answer below this family revision (a receipt's token).",
    ),
]
Reason = Annotated[str, typer.Option("--reason", help="Why; kept in the history.")]
OneSubject = Annotated[
    str | None,
    typer.Option("--subject", metavar="SUBJECT", help="One subject; default: every one."),
]
"""``--subject`` of the commands that otherwise act on every subject (``compact``,
``consolidate``)."""
User = Annotated[
    str | None,
    typer.Option("--user", metavar="USER", help="Whose memory: a user's id, e.g. alice."),
]
Agent = Annotated[
    str | None,
    typer.Option(
        "--agent",
        metavar="AGENT",
        help="An agent's id: with no --user, the agent's private namespace.",
    ),
]
"""``--user`` and ``--agent`` of the short path's commands: whose memory."""
IncludeResolved = Annotated[bool, typer.Option("--all", help="Include resolved items.")]
ReviewId = Annotated[str, typer.Argument(metavar="REVIEW_ID", help="The item's id, rev-...")]
ReviewBy = Annotated[str, typer.Option("--by", metavar="WHO", help="Who decides (recorded).")]
ReviewWhy = Annotated[str, typer.Option("--reason", metavar="WHY", help="Why (recorded).")]
"""``REVIEW_ID``, ``--by`` and ``--reason`` of ``reviews accept`` and ``reviews reject``."""
IndexEmbedder = Annotated[
    str,
    typer.Option(
        "--embedder",
        help="Vectors of the index: default (MiniLM on onnxruntime, in every install),"
        " minilm-onnx, minilm (on torch: the 'minilm' extra), hashing, or none (lexical"
        " only). Changing it rebuilds the index.",
    ),
]
"""``--embedder`` of the commands that read through the derived index."""
CorpusEmbedder = Annotated[
    str,
    typer.Option(
        "--embedder",
        help="Vectors: default (MiniLM on onnxruntime), minilm-onnx, minilm (the 'minilm'"
        " extra), hashing, or none (lexical only). Chunks made with another embedder are"
        " embedded again on the next search.",
    ),
]
"""``--embedder`` of the corpus commands."""
JsonOut = Annotated[
    Path | None, typer.Option("--json", metavar="OUT", help="Write results as JSON to OUT.")
]
"""``--json OUT`` of the benchmarks: their results as a file."""


def settings_of(ctx: typer.Context) -> Settings:
    obj = ctx.find_root().obj
    if isinstance(obj, Settings):
        return obj
    return Settings()


def given_tenant(ctx: typer.Context, tenant: str | None) -> str | None:
    """The ``--tenant`` option (checked), else ``MEMLEDGER_TENANT``, else ``None``."""
    if tenant is not None:
        check_tenant(tenant)  # an empty or malformed --tenant is a mistake, not "unset"
        return tenant
    return settings_of(ctx).tenant


def chosen_tenant(ctx: typer.Context, tenant: str | None) -> str:
    """The tenant a command over one tenant acts for: the ``--tenant`` option (checked),
    else ``MEMLEDGER_TENANT``, else :data:`~memledger.settings.DEFAULT_TENANT`."""
    return given_tenant(ctx, tenant) or DEFAULT_TENANT


def check_tenant_id(tenant: str | None) -> None:
    """An ``OnlyTenant`` option, when given, must be a well-formed tenant id."""
    if tenant is not None:
        check_tenant(tenant)


def store_url(ctx: typer.Context, db: str | None) -> str | None:
    """The store ``--db`` names, else ``MEMLEDGER_URL`` (``None``: the default file),
    refused when it names a directory (:func:`check_store_path`)."""
    url = db or settings_of(ctx).url
    check_store_path(url)
    return url


def check_store_path(url: str | None) -> None:
    """Refuse a store URL naming a directory as a caller mistake (the store would
    fail to open it, as a store failure). A URL the store does not understand is
    left for it to refuse."""
    if url is None:
        return
    parts = urlsplit(url)
    if parts.scheme == "sqlite" and not parts.netloc:
        path = parts.path[1:] if parts.path.startswith("/") else parts.path
    elif parts.scheme in ("", "file") and "://" not in url:
        path = url
    else:
        return
    if not path:
        return
    try:
        is_dir = Path(path).is_dir()
    except (OSError, ValueError):  # a name the file system cannot hold: the store says so
        return
    if is_dir:
        raise CliError(
            f"store {url!r} is a directory; name a store file in it, "
            f"such as {url.rstrip('/') + '/memledger.db'!r}"
        )


EMBEDDERS = ("default", "hashing", "minilm", "minilm-onnx", "none")
"""What ``--embedder`` may name."""


def check_embedder(choice: str) -> None:
    if choice not in EMBEDDERS:
        raise CliError(f"--embedder must be one of {', '.join(EMBEDDERS)}, got {choice!r}")


def embedder_named(choice: str) -> Embedder | None:
    """The embedder ``--embedder`` names; ``none`` is lexical search alone (``None``). A
    name not in :data:`EMBEDDERS`, or one whose optional extra is missing, is a usage
    error."""
    check_embedder(choice)
    if choice == "none":
        return None
    if choice == "default":
        return default_embedder()
    try:
        return CachedEmbedder(embedder_from_name(choice))
    except ImportError as exc:  # an optional extra is missing; its message names it
        raise CliError(f"--embedder {choice}: {exc}") from None


def read_input(source: str) -> str:
    """The text of a file, or of stdin for ``-`` (a UTF-8 byte-order mark is dropped)."""
    if source == "-":
        return typer.get_text_stream("stdin").read().removeprefix("\ufeff")
    path = Path(source)
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise CliError(f"cannot read {source!r}: no such file") from None
    except IsADirectoryError:
        raise CliError(f"cannot read {source!r}: it is a directory") from None
    except UnicodeDecodeError:
        raise CliError(f"cannot read {source!r}: not UTF-8 text") from None
    except OSError as exc:
        raise CliError(f"cannot read {source!r}: {exc.strerror or exc}") from None
