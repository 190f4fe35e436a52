"""Choosing an extractor by name for the commands that run one (``worker``, ``rederive``).

==========  ==================================================================
name        extractor
==========  ==================================================================
``rules``   the offline rule-based extractor (no configuration)
``llm``     an OpenAI-compatible endpoint, from ``MEMLEDGER_LLM_BASE_URL``,
            ``MEMLEDGER_LLM_MODEL`` and ``MEMLEDGER_LLM_API_KEY``
==========  ==================================================================
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Literal, assert_never

import typer

from memledger.cli._run import CliError
from memledger.domain.families import Schema
from memledger.errors import InvalidInputError
from memledger.ports import Extractor
from memledger.settings import Settings

ExtractorName = Literal["rules", "llm"]

_HELP = (
    "rules: offline, rule-based. llm: an OpenAI-compatible endpoint set by "
    "MEMLEDGER_LLM_BASE_URL, MEMLEDGER_LLM_MODEL (and MEMLEDGER_LLM_API_KEY)."
)

ExtractorChoice = Annotated[
    ExtractorName,
    typer.Option("--extractor", metavar="rules|llm", help=f"Extractor to run. {_HELP}"),
]
"""``--extractor`` where it has a default (``worker``)."""

RequiredExtractor = Annotated[
    ExtractorName,
    typer.Option(
        "--extractor",
        metavar="rules|llm",
        help=f"Extractor to re-derive with (required). {_HELP}",
        show_default=False,
    ),
]
"""``--extractor`` where the caller must choose (``rederive``)."""


@contextmanager
def open_extractor(
    name: ExtractorName, settings: Settings, *, schema: Schema
) -> Iterator[Extractor]:
    """The extractor called ``name``, closed (its HTTP client) when the block ends."""
    if name == "rules":
        from memledger.write.extract.rules import RuleExtractor

        yield RuleExtractor()
    elif name == "llm":
        with _llm(settings, schema=schema) as extractor:
            yield extractor
    else:
        assert_never(name)


@contextmanager
def _llm(settings: Settings, *, schema: Schema) -> Iterator[Extractor]:
    configured = settings.llm_base_url is not None and settings.llm_model is not None
    try:
        extractor = settings.llm_extractor(schema=schema)
    except InvalidInputError as exc:
        if not configured:
            raise  # its message names the variables to set
        raise type(exc)(
            f"the LLM extractor settings (MEMLEDGER_LLM_BASE_URL, MEMLEDGER_LLM_MODEL) "
            f"are not usable: {exc}"
        ) from None
    except ImportError as exc:
        raise CliError(str(exc)) from None
    with extractor:
        yield extractor


def describe(extractor: Extractor) -> str:
    """``kind:name@version``, with the model when there is one."""
    info = extractor.info
    label = f"{info.kind}:{info.name}@{info.version}"
    return f"{label} (model {info.model!r})" if info.model else label
