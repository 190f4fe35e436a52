"""Documents as plain text and blocks: headings, paragraphs, tables, code. Pure.

A document's *plain text* is its blocks joined by blank lines (``"\\n\\n"``);
every block knows its ``start`` and ``end`` in it, so a chunk is always one
contiguous ``plain[start:end]`` and can be quoted exactly.

* Markdown goes through markdown-it-py (CommonMark and GFM pipe tables; it is
  installed with rich, a core dependency). Headings are their text without
  inline markup; a paragraph, a top-level list item or a block quote keeps its
  source lines (inline markup included); a pipe table and a fenced or indented
  code block keep their source lines whole. YAML front matter is dropped (its
  ``title:`` is the title); raw HTML blocks are dropped.
* HTML goes through the standard library's :class:`html.parser.HTMLParser`:
  ``script``, ``style``, ``noscript``, ``template``, ``svg``, ``iframe`` and
  ``nav`` are dropped; ``h1``-``h6`` are headings; ``pre`` is code; a
  ``table`` becomes one line per row, cells joined by ``" | "``; other text is
  split into paragraphs at block elements, whitespace collapsed, a list item
  starting with ``"- "``.
* Text: paragraphs between blank lines; no headings, tables or code.

The title is the front matter's ``title:`` or the first level-1 heading
(Markdown), the ``<title>`` or the first ``h1`` (HTML), else ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Literal, assert_never

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["Block", "BlockKind", "DocumentKind", "ParsedDocument", "parse_document"]

DocumentKind = Literal["text", "markdown", "html"]
BlockKind = Literal["heading", "paragraph", "table", "code"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """``plain[start:end]`` of a document: one heading (of ``level`` 1-6), paragraph,
    table or code block."""

    kind: BlockKind
    text: str
    start: int
    end: int
    level: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedDocument:
    title: str | None
    plain: str
    blocks: tuple[Block, ...]

    @property
    def headings(self) -> tuple[str, ...]:
        return tuple(b.text for b in self.blocks if b.kind == "heading")


def parse_document(text: str, *, kind: DocumentKind) -> ParsedDocument:
    """``text`` (a whole document of ``kind``) as plain text and blocks."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if kind == "text":
        title, raw = None, _text_blocks(text)
    elif kind == "markdown":
        title, raw = _markdown_blocks(text)
    elif kind == "html":
        title, raw = _html_blocks(text)
    else:
        assert_never(kind)
    return _assemble(title, raw)


_Raw = tuple[BlockKind, str, int]
"""A block before it has a place in the plain text: kind, text, heading level."""


def _assemble(title: str | None, raw: Sequence[_Raw]) -> ParsedDocument:
    blocks: list[Block] = []
    position = 0
    for kind, text, level in raw:
        if not text.strip():
            continue
        if blocks:
            position += 2  # the blank line between blocks
        blocks.append(
            Block(kind=kind, text=text, start=position, end=position + len(text), level=level)
        )
        position += len(text)
    plain = "\n\n".join(b.text for b in blocks)
    if title is None:
        title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), None)
    return ParsedDocument(title=title or None, plain=plain, blocks=tuple(blocks))


def _clean_lines(text: str) -> str:
    """Trailing spaces off every line, blank lines off both ends."""
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def _text_blocks(text: str) -> list[_Raw]:
    return [("paragraph", _clean_lines(part), 0) for part in re.split(r"\n[ \t]*\n", text)]


# -- Markdown ---------------------------------------------------------------------------

_MARKDOWN = MarkdownIt("commonmark", {"html": True}).enable("table")
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.MULTILINE)


def _front_matter(text: str) -> tuple[str | None, str]:
    """The title of a leading YAML front matter block, and the text after it."""
    if not text.startswith("---\n"):
        return None, text
    match = re.search(r"^(?:---|\.\.\.)[ \t]*$", text[4:], re.MULTILINE)
    if match is None:
        return None, text
    header = text[4 : 4 + match.start()]
    found = _FRONT_TITLE.search(header)
    title = found.group(1).strip("\"'").strip() if found else None
    return title or None, text[4 + match.end() :]


def _inline_text(token: Token) -> str:
    """An inline token's words without markup (link text kept, targets dropped)."""
    pieces = [
        child.content
        for child in token.children or ()
        if child.type in ("text", "code_inline", "html_inline")
    ]
    return re.sub(r"\s+", " ", "".join(pieces)).strip()


def _markdown_blocks(text: str) -> tuple[str | None, list[_Raw]]:
    title, text = _front_matter(text)
    lines = text.split("\n")
    tokens = _MARKDOWN.parse(text)
    raw: list[_Raw] = []

    def source(token: Token) -> str:
        assert token.map is not None
        return _clean_lines("\n".join(lines[token.map[0] : token.map[1]]))

    depth = 0  # how deep in a block quote or list the walk is
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and depth == 0:
            raw.append(("heading", _inline_text(tokens[index + 1]), int(token.tag[1:])))
        elif token.type in ("paragraph_open", "table_open") and depth == 0:
            raw.append(("table" if token.type == "table_open" else "paragraph", source(token), 0))
        elif token.type in ("fence", "code_block") and depth == 0:
            raw.append(("code", source(token), 0))
        elif token.type in ("bullet_list_open", "ordered_list_open", "blockquote_open"):
            if depth == 0 and token.type == "blockquote_open":
                raw.append(("paragraph", source(token), 0))
            depth += 1
        elif token.type in ("bullet_list_close", "ordered_list_close", "blockquote_close"):
            depth -= 1
        elif token.type == "list_item_open" and depth == 1 and token.level == 1:
            raw.append(("paragraph", source(token), 0))
    return title, raw


# -- HTML -------------------------------------------------------------------------------

_DROPPED = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "title", "nav"})
_BLOCKS = frozenset(
    """address article aside blockquote body dd details dialog div dl dt fieldset figcaption
    figure footer form header hgroup hr li main nav ol p section summary ul""".split()
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_SPACE = re.compile(r"\s+")


class _HtmlReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.raw: list[_Raw] = []
        self.title: str | None = None
        self._dropped = 0  # depth inside dropped elements
        self._in_title = False
        self._title_parts: list[str] = []
        self._text: list[str] = []  # the paragraph (or heading) being read
        self._prefix = ""  # put before the next paragraph's text ("- " in a list item)
        self._heading = 0
        self._pre = 0
        self._table = 0  # depth of nested tables
        self._rows: list[list[str]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def _flush(self) -> None:
        lines = [_SPACE.sub(" ", line).strip() for line in "".join(self._text).split("\n")]
        self._text = []
        joined = "\n".join(line for line in lines if line)
        if not joined:
            return
        if self._heading:
            self.raw.append(("heading", _SPACE.sub(" ", joined), self._heading))
        else:
            self.raw.append(("paragraph", self._prefix + joined, 0))
            self._prefix = ""

    def _end_cell(self) -> None:
        if self._cell is not None:
            if self._row is None:
                self._row = []
            self._row.append(_SPACE.sub(" ", "".join(self._cell)).strip())
            self._cell = None

    def _end_row(self) -> None:
        self._end_cell()
        if self._row is not None:
            if any(self._row):
                self._rows.append(self._row)
            self._row = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _DROPPED:
            if tag == "title" and not self._dropped and not self._title_parts:
                self._in_title = True
            self._dropped += 1
        elif self._dropped:
            return
        elif self._table:
            self._table_start(tag)
        elif self._pre:
            if tag == "pre":
                self._pre += 1
            elif tag == "br":
                self._text.append("\n")
        elif tag in _HEADINGS or tag in _BLOCKS or tag in ("pre", "table"):
            self._flush()
            if tag in _HEADINGS:
                self._heading = _HEADINGS[tag]
            elif tag == "li":
                self._prefix = "- "
            elif tag == "pre":
                self._pre = 1
            elif tag == "table":
                self._table, self._rows = 1, []
        elif tag == "br":
            self._text.append("\n")

    def _table_start(self, tag: str) -> None:
        if tag == "table":
            self._table += 1
        elif self._table == 1 and tag == "tr":
            self._end_row()
            self._row = []
        elif self._table == 1 and tag in ("td", "th", "caption"):
            if tag == "caption":
                self._end_row()
            self._end_cell()
            self._cell = []
        elif self._cell is not None:
            self._cell.append(" ")  # a block or a nested cell inside a cell: a word break

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROPPED:
            self._in_title = False
            self._dropped = max(0, self._dropped - 1)
        elif self._dropped:
            return
        elif self._table:
            self._table_end(tag)
        elif self._pre:
            if tag == "pre":
                self._pre -= 1
                if not self._pre:
                    self.raw.append(("code", _clean_lines("".join(self._text)), 0))
                    self._text = []
        elif tag in _HEADINGS and self._heading:
            self._flush()
            self._heading = 0
        elif tag in _BLOCKS:
            self._flush()

    def _table_end(self, tag: str) -> None:
        if tag == "table":
            self._table -= 1
            if not self._table:
                self._end_row()
                self.raw.append(("table", "\n".join(" | ".join(r) for r in self._rows), 0))
                self._rows = []
        elif self._table == 1 and tag in ("td", "th"):
            self._end_cell()
        elif self._table == 1 and tag in ("caption", "tr"):
            self._end_row()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title_parts.append(data)
        elif self._dropped:
            return
        elif self._table:
            if self._cell is None:
                if not data.strip():
                    return
                self._cell = []  # text outside any cell: a cell of its own
            self._cell.append(data)
        elif self._pre:
            self._text.append(data)
        else:
            self._text.append(_SPACE.sub(" ", data))

    def close(self) -> None:
        super().close()
        while self._table:
            self._table_end("table")
        if self._pre:
            self._pre = 1
            self.handle_endtag("pre")
        self._flush()
        title = _SPACE.sub(" ", "".join(self._title_parts)).strip()
        self.title = title or None


def _html_blocks(text: str) -> tuple[str | None, list[_Raw]]:
    reader = _HtmlReader()
    reader.feed(text)
    reader.close()
    return reader.title, reader.raw
