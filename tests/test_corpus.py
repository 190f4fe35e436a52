"""The shared document corpus (RAG) on real files and a real SQLite corpus file: parsing,
chunking (sections, overlap, whole tables, the size bound), staleness, the confidence
gate, tenant isolation, re-adding, skipping bad files, entities."""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memledger.corpus
from cli_helpers import snapshot
from memledger.corpus import (
    Chunk,
    Corpus,
    chunk_document,
    default_corpus_path,
    parse_document,
    stale_marker,
)
from memledger.corpus._search import MAX_TERMS
from memledger.errors import (
    EmbedderError,
    InvalidInputError,
    InvalidQueryError,
    MigrationError,
)
from memledger.index.embedders import HashingEmbedder, Vectors
from memledger.memory import Memory
from memledger.testing import FrozenClock
from memledger.tokens import ApproxBpeTokenizer

TOKENS = ApproxBpeTokenizer()
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

SHIPPING_MD = """\
# Shipping policy

Orders ship within three business days. Weekend orders ship on Monday.

## Expedited orders

Expedited orders cost twelve euros extra. The warehouse picks them first.

### Credit hold

An expedited order on credit hold waits until finance releases it. Finance reviews
holds twice a day.

| Tier   | Credit limit |
|--------|--------------|
| Gold   | 10000 EUR    |
| Silver | 5000 EUR     |

## Returns

Unused items may be returned within thirty days.
"""

RETURNS_HTML = """\
<!doctype html>
<html><head><title>Warranty claims</title>
<style>p { color: red }</style><script>var tracking = "pixelated";</script></head>
<body><nav><a href="/">Home</a> <a href="/about">About us</a></nav>
<h1>Warranty claims</h1>
<p>Damaged appliances are replaced free of charge
   within two years.</p>
<h2>Proof of purchase</h2>
<p>Send the receipt and a photo of the serial plate.</p>
<table><tr><th>Product</th><th>Warranty</th></tr>
<tr><td>Kettle</td><td>2 years</td></tr><tr><td>Toaster</td><td>3 years</td></tr></table>
<pre>claim --serial 1234
  --photo plate.jpg</pre>
</body></html>
"""

HOURS_TXT = "The support desk answers calls Monday to Friday, nine to five.\n"


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    write(folder / "shipping.md", SHIPPING_MD)
    write(folder / "warranty.html", RETURNS_HTML)
    write(folder / "hours.txt", HOURS_TXT)
    return folder


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(T0)


@pytest.fixture
def corpus(tmp_path: Path, clock: FrozenClock) -> Iterator[Corpus]:
    with Corpus(tmp_path / "store.db.corpus", embedder=HashingEmbedder(), clock=clock) as opened:
        yield opened


# -- the public surface ------------------------------------------------------------------


def test_all_is_sorted_and_every_name_resolves() -> None:
    names = memledger.corpus.__all__

    def group(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert names == sorted(names, key=group)
    for name in names:
        assert getattr(memledger.corpus, name) is not None, name


def test_default_corpus_path_sits_beside_the_store(tmp_path: Path) -> None:
    assert default_corpus_path("sqlite:///data/m.db") == Path("data/m.db.corpus")
    assert default_corpus_path("sqlite:////abs/m.db") == Path("/abs/m.db.corpus")
    assert default_corpus_path("m.db") == Path("m.db.corpus")
    assert default_corpus_path(tmp_path / "m.db") == tmp_path / "m.db.corpus"
    assert default_corpus_path(None) == Path("memledger.db.corpus")
    with pytest.raises(InvalidInputError, match="postgresql"):
        default_corpus_path("postgresql://db/memledger")


# -- parsing -----------------------------------------------------------------------------


def test_markdown_blocks_keep_headings_tables_code_and_front_matter() -> None:
    text = (
        "---\ntitle: 'The Guide'\nlayout: page\n---\n# Setup\n\nInstall it *first*.\n\n"
        "Setext heading\n--------------\n\n- one\n- two\n\n```sh\npip install x\n\n```\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n<div>raw html</div>\n"
    )
    parsed = parse_document(text, kind="markdown")
    assert parsed.title == "The Guide"
    assert [(b.kind, b.text) for b in parsed.blocks] == [
        ("heading", "Setup"),
        ("paragraph", "Install it *first*."),
        ("heading", "Setext heading"),
        ("paragraph", "- one"),
        ("paragraph", "- two"),
        ("code", "```sh\npip install x\n\n```"),
        ("table", "| a | b |\n|---|---|\n| 1 | 2 |"),
    ]
    assert [b.level for b in parsed.blocks if b.kind == "heading"] == [1, 2]
    for block in parsed.blocks:
        assert parsed.plain[block.start : block.end] == block.text


def test_html_drops_scripts_styles_and_navigation_and_keeps_structure() -> None:
    parsed = parse_document(RETURNS_HTML, kind="html")
    assert parsed.title == "Warranty claims"
    assert "pixelated" not in parsed.plain and "color" not in parsed.plain
    assert "About us" not in parsed.plain
    assert [(b.kind, b.text) for b in parsed.blocks] == [
        ("heading", "Warranty claims"),
        ("paragraph", "Damaged appliances are replaced free of charge within two years."),
        ("heading", "Proof of purchase"),
        ("paragraph", "Send the receipt and a photo of the serial plate."),
        ("table", "Product | Warranty\nKettle | 2 years\nToaster | 3 years"),
        ("code", "claim --serial 1234\n  --photo plate.jpg"),
    ]
    for block in parsed.blocks:
        assert parsed.plain[block.start : block.end] == block.text


def test_html_lists_and_unclosed_tags() -> None:
    parsed = parse_document(
        "<h2>Steps</h2><ul><li><p>Unplug it</p><li>Wait &amp; see<p>Then call", kind="html"
    )
    assert parsed.title is None
    assert [b.text for b in parsed.blocks] == ["Steps", "- Unplug it", "- Wait & see", "Then call"]


def test_text_is_paragraphs_between_blank_lines() -> None:
    parsed = parse_document("One\nline two.\r\n\r\n  \nThree.\n", kind="text")
    assert [b.text for b in parsed.blocks] == ["One\nline two.", "Three."]
    assert parsed.title is None and parsed.headings == ()


# -- chunking ----------------------------------------------------------------------------


def test_chunks_follow_sections_and_never_cross_a_heading() -> None:
    pieces = chunk_document(
        SHIPPING_MD, kind="markdown", tokenizer=TOKENS, chunk_tokens=300, overlap_tokens=40
    )
    assert [(p.section, p.is_table) for p in pieces] == [
        ("", False),
        ("Expedited orders", False),
        ("Expedited orders > Credit hold", False),
        ("Expedited orders > Credit hold", True),
        ("Returns", False),
    ]
    assert pieces[2].text.startswith("An expedited order") and "Gold" not in pieces[2].text
    assert [p.index for p in pieces] == list(range(len(pieces)))


def test_consecutive_chunks_of_a_section_overlap_by_about_the_overlap() -> None:
    sentences = [f"Sentence number {n} talks about topic {n} in detail." for n in range(40)]
    text = "# Guide\n\n" + " ".join(sentences)
    pieces = chunk_document(
        text, kind="markdown", tokenizer=TOKENS, chunk_tokens=60, overlap_tokens=15
    )
    assert len(pieces) > 3
    for before, after in pairwise(pieces):
        assert after.start < before.end  # the next one begins inside the one before
        shared = before.text[after.start - before.start :]
        assert after.text.startswith(shared)
        assert 15 // 2 <= TOKENS.count(shared) <= 15
        assert shared[0].isupper()  # whole sentences when they fit
    flat = chunk_document(
        text, kind="markdown", tokenizer=TOKENS, chunk_tokens=60, overlap_tokens=0
    )
    assert all(a.end < b.start for a, b in pairwise(flat))


def test_no_overlap_across_sections_or_tables() -> None:
    long = " ".join(f"Word{n} is here." for n in range(30))
    text = f"## A\n\n{long}\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n{long}\n\n## B\n\n{long}\n"
    pieces = chunk_document(
        text, kind="markdown", tokenizer=TOKENS, chunk_tokens=40, overlap_tokens=10
    )
    (table,) = [p for p in pieces if p.is_table]
    after_table = pieces[pieces.index(table) + 1]
    assert after_table.start > table.end
    first_b = next(p for p in pieces if p.section == "B")
    before_b = pieces[pieces.index(first_b) - 1]
    assert first_b.start > before_b.end


def test_tables_and_code_stay_whole_even_over_the_chunk_size() -> None:
    rows = "\n".join(f"| item {n} | {n * 7} EUR | in stock |" for n in range(60))
    code = "```\n" + "\n".join(f"print({n})" for n in range(80)) + "\n```"
    header = "| item | price | state |\n|---|---|---|"
    text = f"# Prices\n\nThe price list.\n\n{header}\n{rows}\n\n{code}\n"
    pieces = chunk_document(
        text, kind="markdown", tokenizer=TOKENS, chunk_tokens=50, overlap_tokens=10
    )
    (table,) = [p for p in pieces if p.is_table]
    (block,) = [p for p in pieces if p.is_code]
    assert table.tokens > 50 and table.text.endswith("| item 59 | 413 EUR | in stock |")
    assert block.tokens > 50 and block.text.startswith("```") and block.text.endswith("```")
    html_rows = "".join(f"<tr><td>item {n}</td><td>{n} EUR</td></tr>" for n in range(60))
    (html_table,) = chunk_document(
        f"<table>{html_rows}</table>",
        kind="html",
        tokenizer=TOKENS,
        chunk_tokens=50,
        overlap_tokens=10,
    )
    assert html_table.is_table and html_table.text.count("\n") == 59


def test_an_oversized_paragraph_is_split_by_sentences_then_words() -> None:
    sentence = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu."
    by_sentence = chunk_document(
        " ".join([sentence] * 12), kind="text", tokenizer=TOKENS, chunk_tokens=30, overlap_tokens=0
    )
    assert len(by_sentence) > 1 and all(p.text.endswith("mu.") for p in by_sentence)
    assert all(p.tokens <= 30 for p in by_sentence)
    words = " ".join(f"w{n}" for n in range(200))  # one sentence, no full stop
    by_word = chunk_document(
        words, kind="text", tokenizer=TOKENS, chunk_tokens=20, overlap_tokens=5
    )
    assert len(by_word) > 5 and all(p.tokens <= 20 for p in by_word)
    long_word = "x" * 400
    (alone,) = chunk_document(
        long_word, kind="text", tokenizer=TOKENS, chunk_tokens=10, overlap_tokens=0
    )
    assert alone.text == long_word and alone.tokens > 10  # unsplittable: kept whole


@pytest.mark.parametrize(
    ("chunk_tokens", "overlap_tokens"),
    [(7, 0), (8193, 0), (True, 0), (100, 51), (100, -1), (100, 1.5)],
)
def test_unusable_chunk_sizes_are_refused(chunk_tokens: object, overlap_tokens: object) -> None:
    with pytest.raises(InvalidInputError):
        chunk_document(
            "text",
            kind="text",
            tokenizer=TOKENS,
            chunk_tokens=chunk_tokens,  # type: ignore[arg-type]
            overlap_tokens=overlap_tokens,  # type: ignore[arg-type]
        )


_WORDS = st.text(alphabet="abcdefghijklmnop", min_size=1, max_size=14)
_SENTENCES = st.lists(_WORDS, min_size=1, max_size=20).map(lambda ws: " ".join(ws) + ".")
_PARAGRAPHS = st.lists(_SENTENCES, min_size=1, max_size=10).map(" ".join)


def _check_pieces(plain: str, pieces: Sequence[memledger.corpus.Piece], limit: int) -> None:
    for piece in pieces:
        assert piece.text == plain[piece.start : piece.end]
        assert piece.tokens == TOKENS.count(piece.text)
        if not (piece.is_table or piece.is_code):
            assert piece.tokens <= limit or not re.search(r"\s", piece.text)
    assert all(a.start < b.start and a.end < b.end for a, b in pairwise(pieces))
    for word in re.finditer(r"\S+", plain):  # every word of the document is in a chunk
        assert any(p.start <= word.start() and word.end() <= p.end for p in pieces)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    paragraphs=st.lists(_PARAGRAPHS, min_size=1, max_size=12),
    limit=st.integers(8, 160),
    share=st.floats(0.0, 0.5),
)
def test_property_chunks_respect_the_limit_and_keep_every_paragraph_in_order(
    paragraphs: list[str], limit: int, share: float
) -> None:
    overlap = int(limit * share)
    text = "\n\n".join(paragraphs)
    parsed = parse_document(text, kind="text")
    pieces = chunk_document(
        text, kind="text", tokenizer=TOKENS, chunk_tokens=limit, overlap_tokens=overlap
    )
    _check_pieces(parsed.plain, pieces, limit)
    for block in parsed.blocks:  # a paragraph that fits is in one chunk, whole
        if TOKENS.count(block.text) <= limit:
            assert any(p.start <= block.start and block.end <= p.end for p in pieces)


_TABLES = st.lists(st.lists(_WORDS, min_size=2, max_size=4), min_size=1, max_size=30).map(
    lambda rows: "| h | h |\n|---|---|\n" + "\n".join("| " + " | ".join(r) + " |" for r in rows)
)
_CODE = st.lists(_WORDS, min_size=1, max_size=60).map(lambda ls: "```\n" + "\n".join(ls) + "\n```")
_HEADINGS = st.tuples(st.integers(1, 4), _WORDS).map(lambda h: "#" * h[0] + " " + h[1])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    blocks=st.lists(st.one_of(_PARAGRAPHS, _TABLES, _CODE, _HEADINGS), min_size=1, max_size=12),
    limit=st.integers(8, 120),
    share=st.floats(0.0, 0.5),
)
def test_property_markdown_tables_and_code_stay_whole(
    blocks: list[str], limit: int, share: float
) -> None:
    text = "\n\n".join(blocks)
    parsed = parse_document(text, kind="markdown")
    pieces = chunk_document(
        text,
        kind="markdown",
        tokenizer=TOKENS,
        chunk_tokens=limit,
        overlap_tokens=int(limit * share),
    )
    headings = [(b.start, b.end) for b in parsed.blocks if b.kind == "heading"]
    for word in re.finditer(r"\S+", parsed.plain):  # every word but headings' is in a chunk
        if not any(s <= word.start() < e for s, e in headings):
            assert any(p.start <= word.start() and word.end() <= p.end for p in pieces)
    for block in parsed.blocks:
        if block.kind in ("table", "code"):
            (whole,) = [p for p in pieces if p.start == block.start]
            assert whole.end == block.end and (whole.is_table or whole.is_code)
    prose = [p for p in pieces if not (p.is_table or p.is_code)]
    assert all(p.tokens <= limit or not re.search(r"\s", p.text) for p in prose)
    assert all(a.start < b.start for a, b in pairwise(pieces))


# -- staleness ---------------------------------------------------------------------------


def _chunk(path: str = "/nowhere/doc.md", *, indexed_at: datetime = T0) -> Chunk:
    return Chunk(
        tenant="acme",
        chunk_id="c1",
        path=path,
        title="Doc",
        section="",
        text="text",
        tokens=1,
        start=0,
        end=4,
        indexed_at=indexed_at,
        last_modified=T0 - timedelta(days=1),
    )


def test_stale_marker_from_the_threshold_on() -> None:
    chunk = _chunk()
    at = T0 + timedelta(days=14)
    assert stale_marker(chunk, now=at) == "[POSSIBLY OUTDATED: indexed 14 days ago]"
    assert stale_marker(chunk, now=at - timedelta(microseconds=1)) is None
    assert stale_marker(chunk, now=T0 + timedelta(days=20)) == (
        "[POSSIBLY OUTDATED: indexed 20 days ago]"
    )
    assert stale_marker(chunk, now=T0 + timedelta(hours=5), after_days=0.2) == (
        "[POSSIBLY OUTDATED: indexed 5 hours ago]"
    )
    assert stale_marker(chunk, now=T0 + timedelta(days=1), after_days=1) == (
        "[POSSIBLY OUTDATED: indexed 1 day ago]"
    )
    with pytest.raises(InvalidInputError):
        stale_marker(chunk, now=datetime(2026, 3, 20))  # naive
    with pytest.raises(InvalidInputError):
        stale_marker(chunk, now=at, after_days=-1)


def test_stale_marker_says_when_the_source_changed_after_indexing(tmp_path: Path) -> None:
    chunk = _chunk()
    now = T0 + timedelta(days=1)
    assert stale_marker(chunk, now=now, source_modified=chunk.last_modified) is None
    changed = chunk.last_modified + timedelta(hours=2)
    assert stale_marker(chunk, now=now, source_modified=changed) == (
        "[POSSIBLY OUTDATED: source changed after indexing]"
    )
    assert stale_marker(chunk, now=T0 + timedelta(days=15), source_modified=changed) == (
        "[POSSIBLY OUTDATED: indexed 15 days ago; source changed after indexing]"
    )
    # left out, the file is looked at: only when it still exists
    assert stale_marker(chunk, now=now) is None  # /nowhere/doc.md
    doc = write(tmp_path / "doc.md", "# Doc\n\ntext\n")
    on_disk = _chunk(str(doc))
    stamp = (T0 - timedelta(days=1)).timestamp()
    os.utime(doc, (stamp, stamp))
    assert stale_marker(on_disk, now=now) is None
    os.utime(doc, (stamp + 3600, stamp + 3600))
    assert stale_marker(on_disk, now=now) == "[POSSIBLY OUTDATED: source changed after indexing]"
    assert stale_marker(on_disk, now=now, source_modified=None) is None  # pure: no look


def test_stale_marker_on_a_stored_chunk_of_a_file_edited_later(
    corpus: Corpus, docs: Path, clock: FrozenClock
) -> None:
    corpus.add("acme", [docs / "hours.txt"])
    (chunk,) = corpus.chunks("acme", docs / "hours.txt")
    assert chunk.indexed_at == T0
    assert chunk.last_modified == datetime.fromtimestamp(
        (docs / "hours.txt").stat().st_mtime, tz=UTC
    )
    assert stale_marker(chunk, now=T0) is None
    assert stale_marker(chunk, now=T0 + timedelta(days=14)) == (
        "[POSSIBLY OUTDATED: indexed 14 days ago]"
    )
    later = (docs / "hours.txt").stat().st_mtime + 60
    os.utime(docs / "hours.txt", (later, later))
    assert stale_marker(chunk, now=T0) == "[POSSIBLY OUTDATED: source changed after indexing]"


# -- adding, re-adding, skipping ---------------------------------------------------------


def test_add_walks_a_directory_and_stores_chunks_with_their_times(
    corpus: Corpus, docs: Path
) -> None:
    write(docs / "notes" / "deep.markdown", "# Deep\n\nNested notes.\n")
    write(docs / ".hidden" / "secret.md", "# Secret\n\nnever read\n")
    write(docs / "image.png", b"\x89PNG\r\n")
    seen: list[tuple[int, int]] = []
    report = corpus.add("acme", [docs], progress=lambda done, total: seen.append((done, total)))
    assert sorted(Path(p).name for p in report.added) == [
        "deep.markdown",
        "hours.txt",
        "shipping.md",
        "warranty.html",
    ]
    assert report.skipped == () and report.replaced == () and report.unchanged == ()
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    documents = {Path(d.path).name: d for d in corpus.documents("acme")}
    assert documents["shipping.md"].title == "Shipping policy"
    assert documents["warranty.html"].title == "Warranty claims"
    assert documents["hours.txt"].title == "hours"
    assert documents["hours.txt"].kind == "text" and documents["deep.markdown"].kind == "markdown"
    assert report.chunks == sum(d.chunks for d in documents.values())
    shipping = corpus.chunks("acme", docs / "shipping.md")
    plain = parse_document(SHIPPING_MD, kind="markdown").plain
    for chunk in shipping:
        assert chunk.text == plain[chunk.start : chunk.end]
        assert chunk.indexed_at == T0 and chunk.tenant == "acme"
        assert chunk.title == "Shipping policy"
    assert len({c.chunk_id for c in shipping}) == len(shipping)


def test_re_adding_an_unchanged_file_is_a_no_op(
    corpus: Corpus, docs: Path, tmp_path: Path, clock: FrozenClock
) -> None:
    first = corpus.add("acme", [docs])
    before = snapshot(corpus.path)
    ids = [c.chunk_id for c in corpus.chunks("acme", docs / "shipping.md")]
    clock.advance(timedelta(days=3))
    again = corpus.add("acme", [docs, docs / "shipping.md"])  # named twice: once
    assert sorted(again.unchanged) == sorted(first.added)
    assert again.added == () and again.replaced == () and again.chunks == 0
    assert snapshot(corpus.path) == before
    assert [c.chunk_id for c in corpus.chunks("acme", docs / "shipping.md")] == ids


def test_a_touched_file_keeps_its_chunks_and_records_the_new_time(
    corpus: Corpus, docs: Path
) -> None:
    corpus.add("acme", [docs / "shipping.md"])
    before = corpus.chunks("acme", docs / "shipping.md")
    later = (docs / "shipping.md").stat().st_mtime + 100
    os.utime(docs / "shipping.md", (later, later))
    report = corpus.add("acme", [docs / "shipping.md"])
    assert report.unchanged == (str(docs / "shipping.md"),) and report.chunks == 0
    after = corpus.chunks("acme", docs / "shipping.md")
    assert [c.chunk_id for c in after] == [c.chunk_id for c in before]
    assert all(c.last_modified == datetime.fromtimestamp(later, tz=UTC) for c in after)
    assert stale_marker(after[0], now=T0) is None


def test_a_changed_file_replaces_its_chunks(corpus: Corpus, docs: Path, clock: FrozenClock) -> None:
    corpus.add("acme", [docs])
    assert corpus.search("weekend orders monday", tenant="acme")
    clock.advance(timedelta(days=1))
    write(docs / "shipping.md", SHIPPING_MD.replace("Weekend orders ship on Monday.", "Saturday."))
    report = corpus.add("acme", [docs])
    assert report.replaced == (str(docs / "shipping.md"),)
    assert len(report.unchanged) == 2
    chunks = corpus.chunks("acme", docs / "shipping.md")
    assert all(c.indexed_at == T0 + timedelta(days=1) for c in chunks)
    assert not any("Weekend" in c.text for c in chunks)
    assert corpus.search("weekend orders monday", tenant="acme") == []
    conn = sqlite3.connect(corpus.path)
    try:
        (count,) = conn.execute("SELECT count(*) FROM chunks WHERE path LIKE '%shipping.md'")
        assert count[0] == len(chunks)
    finally:
        conn.close()


def test_other_chunk_sizes_rechunk_an_unchanged_file(corpus: Corpus, docs: Path) -> None:
    corpus.add("acme", [docs / "shipping.md"])
    report = corpus.add("acme", [docs / "shipping.md"], chunk_tokens=8, overlap_tokens=2)
    assert report.replaced == (str(docs / "shipping.md"),)
    assert all(c.tokens <= 8 or c.is_table for c in corpus.chunks("acme", docs / "shipping.md"))


def test_a_replacement_that_fails_midway_leaves_the_old_chunks(
    corpus: Corpus, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus.add("acme", [docs / "shipping.md"])
    before = snapshot(corpus.path)
    write(docs / "shipping.md", SHIPPING_MD + "\nA new paragraph.\n")
    original = Corpus._insert_document

    def half_then_fail(self: Corpus, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        raise OSError("disk went away")

    monkeypatch.setattr(Corpus, "_insert_document", half_then_fail)
    with pytest.raises(OSError, match="disk went away"):
        corpus.add("acme", [docs / "shipping.md"])
    assert snapshot(corpus.path) == before


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("blob.txt", b"\x00\x01\x02binary", "not_text"),
        ("latin.md", "caf\xe9 cr\xe8me".encode("latin-1"), "not_text"),
        ("empty.md", b"  \n\n", "empty"),
        ("only-script.html", b"<script>var a = 1;</script>", "empty"),
        ("data.json", b'{"a": 1}', "unsupported"),
    ],
)
def test_a_bad_file_is_skipped_with_a_reason_and_nothing_of_it_is_written(
    corpus: Corpus, tmp_path: Path, name: str, content: bytes, reason: str
) -> None:
    corpus.add("acme", [write(tmp_path / "ok.txt", HOURS_TXT)])
    before = snapshot(corpus.path)
    bad = write(tmp_path / name, content)
    report = corpus.add("acme", [bad])
    (skipped,) = report.skipped
    assert (skipped.path, skipped.reason) == (str(bad), reason) and skipped.detail
    assert report.added == report.replaced == report.unchanged == ()
    assert snapshot(corpus.path) == before


def test_missing_and_unreadable_files_are_skipped(corpus: Corpus, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")  # not a regular file: never opened (it would block)
    report = corpus.add("acme", [tmp_path / "gone.md", tmp_path / "pipe.md", tmp_path / "ok.md"])
    assert [(Path(s.path).name, s.reason) for s in report.skipped] == [
        ("gone.md", "missing"),
        ("ok.md", "missing"),
        ("pipe.md", "unreadable"),
    ]
    assert corpus.documents("acme") == []


class FailingEmbedder:
    name = "failing:1"
    dimensions = 8

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise EmbedderError("endpoint down", reason="endpoint_unreachable")


def test_an_embedder_failure_skips_the_file_whole(tmp_path: Path, docs: Path) -> None:
    with Corpus(tmp_path / "c.corpus", embedder=FailingEmbedder()) as corpus:
        report = corpus.add("acme", [docs / "hours.txt"])
        (skipped,) = report.skipped
        assert skipped.reason == "embedder_failed" and "endpoint down" in skipped.detail
        assert corpus.documents("acme") == []


def test_a_bad_tenant_is_refused(corpus: Corpus, docs: Path) -> None:
    for tenant in ("", "bad tenant", "x" * 300, 7):
        with pytest.raises(InvalidInputError, match="tenant"):
            corpus.add(tenant, [docs])  # type: ignore[arg-type]
        with pytest.raises(InvalidQueryError, match="tenant"):
            corpus.search("orders", tenant=tenant)  # type: ignore[arg-type]
    assert corpus.documents("acme") == []


def test_the_memory_store_is_never_written(tmp_path: Path, docs: Path) -> None:
    memory = Memory.open(tmp_path / "m.db")
    try:
        before = snapshot(tmp_path / "m.db")
        with Corpus(default_corpus_path(memory.url), embedder=HashingEmbedder()) as corpus:
            assert corpus.path == tmp_path / "m.db.corpus"
            corpus.add("acme", [docs])
            assert corpus.search("credit hold", tenant="acme")
        assert snapshot(tmp_path / "m.db") == before
    finally:
        memory.close()


def test_another_schema_is_refused(tmp_path: Path) -> None:
    Corpus(tmp_path / "c.corpus").close()
    conn = sqlite3.connect(tmp_path / "c.corpus")
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    conn.commit()
    conn.close()
    with pytest.raises(MigrationError, match="'99'"):
        Corpus(tmp_path / "c.corpus")


# -- removing ----------------------------------------------------------------------------


def test_remove_a_document_or_a_directory(corpus: Corpus, docs: Path) -> None:
    write(docs / "sub" / "a.md", "# A\n\nalpha\n")
    write(docs / "sub" / "b.md", "# B\n\nbeta\n")
    corpus.add("acme", [docs])
    shipping = len(corpus.chunks("acme", docs / "shipping.md"))
    assert corpus.remove("acme", docs / "shipping.md") == shipping
    assert corpus.search("credit hold expedited", tenant="acme") == []
    assert corpus.remove("acme", docs / "shipping.md") == 0
    assert corpus.remove("acme", docs / "su") == 0  # a prefix of a name is no directory
    assert corpus.remove("acme", docs / "sub") == 2
    assert sorted(Path(d.path).name for d in corpus.documents("acme")) == [
        "hours.txt",
        "warranty.html",
    ]


# -- searching ---------------------------------------------------------------------------


def test_search_finds_the_relevant_chunk_best_first(corpus: Corpus, docs: Path) -> None:
    corpus.add("acme", [docs])
    hits = corpus.search("what is the credit limit for gold tier?", tenant="acme")
    assert hits and hits[0].chunk.is_table
    assert hits[0].chunk.section == "Expedited orders > Credit hold"
    assert hits[0].confidence == 1.0 and set(hits[0].sources) == {"lexical", "vector"}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.confidence >= 0.5 for h in hits)
    (hit,) = corpus.search("serial plate receipt", tenant="acme", k=1)
    assert hit.chunk.section == "Proof of purchase" and hit.chunk.title == "Warranty claims"


def test_confidence_gate_says_nothing_rather_than_the_nearest_chunk(
    corpus: Corpus, docs: Path
) -> None:
    corpus.add("acme", [docs])
    unrelated = "what is the capital city of France?"
    assert corpus.search(unrelated, tenant="acme") == []
    nearest = corpus.search(unrelated, tenant="acme", floor=0.0)
    assert nearest  # there is a nearest chunk: the gate is what keeps it out
    assert all(h.confidence < 0.5 for h in nearest)
    # half the query's content words is the default floor; more can be asked
    (half,) = corpus.search("kettle banana", tenant="acme")
    assert half.confidence == 0.5
    assert corpus.search("kettle banana", tenant="acme", floor=0.6) == []


class SemanticFake(HashingEmbedder):
    """The hashing embedder under another name: its cosines then count as meaning."""

    @property
    def name(self) -> str:
        return "semantic-fake:1"


def test_a_semantic_embedder_lends_its_cosine_to_the_confidence(tmp_path: Path, docs: Path) -> None:
    query = "expedite order finance hold credit"
    with Corpus(tmp_path / "s.corpus", embedder=SemanticFake()) as semantic:
        semantic.add("acme", [docs])
        hits = semantic.search(query, tenant="acme", floor=0.0)
        point = SemanticFake().embed([query])[0]
        for hit in hits:
            chunk = hit.chunk
            text = " > ".join(p for p in (chunk.title, chunk.section) if p) + "\n" + chunk.text
            cosine = float(np.dot(SemanticFake().embed([text])[0], point))
            assert hit.confidence >= min(1.0, max(0.0, cosine)) - 1e-6
    with Corpus(tmp_path / "h.corpus", embedder=HashingEmbedder()) as spelling:
        spelling.add("acme", [docs])
        for hit in spelling.search("zzz qqq", tenant="acme", floor=0.0):
            assert hit.confidence == 0.0  # spelling cosines are not confidence


def test_tenant_b_never_sees_tenant_a(corpus: Corpus, docs: Path, tmp_path: Path) -> None:
    corpus.add("tenant-a", [docs])
    for query in ("credit hold", "expedited orders gold tier", "kettle warranty"):
        assert corpus.search(query, tenant="tenant-a")
        assert corpus.search(query, tenant="tenant-b", floor=0.0) == []
    assert corpus.documents("tenant-b") == []
    assert corpus.entities("tenant-b") == frozenset()
    assert corpus.chunks("tenant-b", docs / "shipping.md") == []
    # tenant B's own copy of a file is its own: removing A's leaves it
    other = write(tmp_path / "b" / "hours.txt", "Tenant B opens at noon only.\n")
    corpus.add("tenant-b", [other, docs / "shipping.md"])
    assert {h.chunk.tenant for h in corpus.search("noon", tenant="tenant-b")} == {"tenant-b"}
    for hit in corpus.search("noon", tenant="tenant-a", floor=0.0):
        assert hit.chunk.tenant == "tenant-a" and "noon" not in hit.chunk.text
    a_ids = {c.chunk_id for c in corpus.chunks("tenant-a", docs / "shipping.md")}
    b_ids = {c.chunk_id for c in corpus.chunks("tenant-b", docs / "shipping.md")}
    assert a_ids and b_ids and not a_ids & b_ids
    corpus.remove("tenant-a", docs / "shipping.md")
    assert corpus.chunks("tenant-b", docs / "shipping.md")
    assert corpus.search("credit hold", tenant="tenant-b")
    assert corpus.search("credit hold", tenant="tenant-a") == []


def test_one_tenant_never_moves_another_tenants_ranking(tmp_path: Path) -> None:
    with Corpus(tmp_path / "c.corpus") as corpus:
        x = write(tmp_path / "b" / "x.md", "# X\n\nalpha alpha here\n")
        y = write(tmp_path / "b" / "y.md", "# Y\n\nbeta there\n")
        corpus.add("tenant-b", [x, y])
        before = [h.chunk.path for h in corpus.search("alpha beta", tenant="tenant-b")]
        assert before == [str(x), str(y)]
        crowd = [write(tmp_path / "a" / f"{n}.md", f"# A{n}\n\nalpha {n}\n") for n in range(40)]
        corpus.add("tenant-a", crowd)  # makes "alpha" common: only in tenant A's statistics
        assert [h.chunk.path for h in corpus.search("alpha beta", tenant="tenant-b")] == before


def test_another_tenants_rows_never_crowd_out_a_tenants_own(tmp_path: Path) -> None:
    query = "refund policy for damaged kettles"
    with Corpus(tmp_path / "c.corpus", embedder=SemanticFake()) as corpus:
        crowd = [write(tmp_path / "a" / f"{n}.md", f"# {query}\n\n{query}.\n") for n in range(40)]
        corpus.add("tenant-a", crowd)
        own = write(tmp_path / "b" / "own.md", "# Refunds\n\nDamaged kettles get a refund.\n")
        corpus.add("tenant-b", [own])
        for floor in (0.0, 0.5):
            (hit,) = corpus.search(query, tenant="tenant-b", k=3, floor=floor)
            assert hit.chunk.path == str(own)
            assert set(hit.sources) == {"lexical", "vector"}


def test_a_concurrent_add_of_the_same_file_is_not_written_twice(tmp_path: Path, docs: Path) -> None:
    path = tmp_path / "c.corpus"

    class RacingEmbedder(HashingEmbedder):
        """Lets another handle add the same file while this one is embedding it."""

        raced = False

        def embed(self, texts: Sequence[str]) -> Vectors:
            if not self.raced:
                self.raced = True
                with Corpus(path, embedder=HashingEmbedder()) as other:
                    assert other.add("acme", [docs / "shipping.md"]).added
            return super().embed(texts)

    with Corpus(path, embedder=RacingEmbedder()) as corpus:
        report = corpus.add("acme", [docs / "shipping.md"])
        assert report.unchanged == (str(docs / "shipping.md"),)
        assert report.added == report.replaced == () and report.chunks == 0
        (document,) = corpus.documents("acme")
        assert document.chunks == len(corpus.chunks("acme", docs / "shipping.md"))


def test_vectors_of_another_embedder_are_made_again_on_search(tmp_path: Path, docs: Path) -> None:
    with Corpus(tmp_path / "c.corpus") as lexical:
        lexical.add("acme", [docs])
        assert {s for h in lexical.search("credit hold", tenant="acme") for s in h.sources} == {
            "lexical"
        }
    with Corpus(tmp_path / "c.corpus", embedder=HashingEmbedder()) as vectors:
        hits = vectors.search("credit hold", tenant="acme")
        assert "vector" in hits[0].sources and vectors.degraded is None
    with Corpus(tmp_path / "c.corpus", embedder=FailingEmbedder()) as failing:
        hits = failing.search("credit hold", tenant="acme")
        assert hits and hits[0].sources == ("lexical",)
        assert failing.degraded is not None and "endpoint down" in failing.degraded


@pytest.mark.parametrize(
    ("query", "k", "floor"),
    [
        ("", 5, 0.5),
        ("   ", 5, 0.5),
        ("x" * 4001, 5, 0.5),
        ("q", 0, 0.5),
        ("q", 101, 0.5),
        ("q", 5, 1.5),
        ("q", 5, float("nan")),
        ("q", True, 0.5),
        ("\ud800", 5, 0.5),
    ],
)
def test_unusable_searches_are_refused(corpus: Corpus, query: str, k: int, floor: float) -> None:
    with pytest.raises(InvalidQueryError):
        corpus.search(query, tenant="acme", k=k, floor=floor)


OPERATOR_QUERIES = [
    # (query, what FTS5 would have made of it)
    ('credit" OR hold', "an unbalanced quote: a syntax error"),
    ("credit NOT finance", "credit without finance: not this document"),
    ("finance AND zebra", "both words: nothing"),
    ('"order credit"', "a phrase in this order: nothing"),
    ("NEAR(credit releases, 0)", "the two words adjacent: nothing"),
    ("^finance", "finance as a column's first word: nothing"),
    ("title : finance", "finance in the title column: nothing"),
    ("finance -zebra", "no such column: zebra"),
    ("credit* hold", "any word starting with credit, and hold"),
    ("-- ; ) finance (", "a syntax error"),
]


@pytest.mark.parametrize(("query", "fts"), OPERATOR_QUERIES)
def test_queries_never_reach_fts_syntax(tmp_path: Path, query: str, fts: str) -> None:
    """FTS5 operators and quotes in a query are searched as the plain words around
    them: the document holding the query's words is found by the lexical search,
    however FTS5 itself would have read the query (``fts``)."""
    folder = tmp_path / "ops"
    write(
        folder / "holds.md",
        "# Credit holds\n\nA credit hold stops an order until finance releases it.\n",
    )
    write(folder / "hours.txt", HOURS_TXT)
    with Corpus(tmp_path / "ops.db.corpus", embedder=None) as corpus:
        corpus.add("acme", [folder])
        hits = corpus.search(query, tenant="acme")
    assert [Path(h.chunk.path).name for h in hits] == ["holds.md"], fts
    assert hits[0].sources == ("lexical",)


def test_a_chunk_is_as_relevant_as_its_title_and_section_make_it(tmp_path: Path) -> None:
    """Where a chunk sits counts as its words: a section whose text never says the
    query's words is found through its document's title and its heading."""
    text = "# Credit holds\n\n## Releasing\n\nFinance lifts it once the invoice is paid.\n"
    write(tmp_path / "docs" / "holds.md", text)
    with Corpus(tmp_path / "c.db.corpus", embedder=None) as corpus:
        corpus.add("acme", [tmp_path / "docs"])
        (hit,) = corpus.search("releasing credit holds", tenant="acme")
    assert hit.chunk.section == "Releasing" and "credit" not in hit.chunk.text.casefold()
    assert hit.confidence == 1.0


def test_query_terms_past_the_limit_are_not_searched(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "holds.md", "# Holds\n\nFinance releases a credit hold.\n")
    filler = [f"filler{n}" for n in range(MAX_TERMS)]
    with Corpus(tmp_path / "c.db.corpus", embedder=None) as corpus:
        corpus.add("acme", [tmp_path / "docs"])
        last = corpus.search(" ".join([*filler[:-1], "finance"]), tenant="acme", floor=0.0)
        past = corpus.search(" ".join([*filler, "finance"]), tenant="acme", floor=0.0)
    assert [Path(h.chunk.path).name for h in last] == ["holds.md"]  # the last term searched
    assert past == []


def test_searches_and_adds_from_many_threads(corpus: Corpus, docs: Path, tmp_path: Path) -> None:
    corpus.add("acme", [docs])
    errors: list[BaseException] = []

    def search() -> None:
        try:
            for _ in range(20):
                assert corpus.search("credit hold", tenant="acme")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=search) for _ in range(4)]
    for thread in threads:
        thread.start()
    for n in range(5):
        corpus.add("acme", [write(tmp_path / "more" / f"n{n}.md", f"# Note {n}\n\nbody {n}\n")])
    for thread in threads:
        thread.join()
    assert errors == []


# -- entities ----------------------------------------------------------------------------


def test_entities_are_titles_and_headings_casefolded(corpus: Corpus, docs: Path) -> None:
    corpus.add("acme", [docs])
    assert corpus.entities("acme") == {
        "shipping policy",
        "expedited orders",
        "credit hold",
        "returns",
        "warranty claims",
        "proof of purchase",
        "hours",
    }
    corpus.remove("acme", docs / "warranty.html")
    assert "proof of purchase" not in corpus.entities("acme")
    assert "warranty claims" not in corpus.entities("acme")


def test_entities_follow_writes_of_another_handle(corpus: Corpus, docs: Path) -> None:
    assert corpus.entities("acme") == frozenset()
    with Corpus(corpus.path) as other:
        other.add("acme", [docs / "shipping.md"])
    assert "credit hold" in corpus.entities("acme")
