"""The default :class:`~memledger.session.Summarizer`: extractive, offline, no model."""

from __future__ import annotations

from collections.abc import Sequence

from memledger.domain.text import Segment, sentences
from memledger.ports import Tokenizer
from memledger.session._model import SessionItem
from memledger.session._text import content_words, cut
from memledger.tokens import ApproxBpeTokenizer

OPEN = "[open] "
"""The prefix of an open question's line in a summary."""

_TERMINATORS = ".!?…\"'”’)]"


class ExtractiveSummarizer:
    """Summarizes by copying sentences, never by writing new ones.

    The summary is plain lines. First the *open questions*, one per line
    (``[open] user: Which invoices are overdue?``): sentences ending in ``?`` that no
    later turn from another role has answered, where "answered" is read crudely as
    "shares a content word with the question" (a question without content words,
    "Why?", counts as answered by any later turn from another role). An answer with
    no word in common ("Lyon." to "Where do you live?") leaves the question open: the
    rule errs towards keeping questions. Then, oldest first, the previous summary's
    other lines (its questions answered since included) and, per folded turn, its
    first sentence after its role (``assistant: I found three invoices.``, a tool
    result as ``tool get_invoice: ...``). A line is cut at a quarter of the budget, or
    at 24 tokens when that is more.

    Over ``max_tokens`` the oldest lines go first; open questions go (oldest first)
    only when they alone are over, and the newest is cut rather than dropped.
    Details beyond a turn's first sentence are lost: that is what an extractive
    summary costs. Plug in a model-backed :class:`~memledger.session.Summarizer`
    for abstractive summaries.
    """

    def __init__(self, *, tokenizer: Tokenizer | None = None) -> None:
        self.tokenizer: Tokenizer = tokenizer or ApproxBpeTokenizer()

    def summarize(
        self, previous: str | None, turns: Sequence[SessionItem], *, max_tokens: int
    ) -> str:
        line_tokens = max(24, max_tokens // 4)
        open_lines: list[tuple[str, str]] = []  # (role, question)
        history: list[str] = []
        for line in (previous or "").splitlines():
            if line.startswith(OPEN):
                label, _, question = line.removeprefix(OPEN).partition(": ")
                role = label.split(" ", 1)[0]
                if _answered(question, role, turns):
                    history.append(f"{label}: {question}")
                else:
                    open_lines.append((label, question))
            elif line.strip():
                history.append(line)
        for index, turn in enumerate(turns):
            label = turn.role if turn.name is None else f"{turn.role} {turn.name}"
            spans = sentences(turn.text)
            first = _sentence(turn.text, spans[0]) if spans else " ".join(turn.text.split())
            first_is_open = False
            for span in spans:
                if not span.question:
                    continue
                question = _sentence(turn.text, span)
                if not _answered(question, turn.role, turns[index + 1 :]):
                    open_lines.append((label, question))
                    first_is_open = first_is_open or span is spans[0]
            if not first_is_open and first:
                history.append(f"{label}: {first}")
        unique = dict.fromkeys(
            cut(f"{OPEN}{label}: {question}", line_tokens, self.tokenizer)
            for label, question in open_lines
        )
        return self._fit(
            list(unique), [cut(h, line_tokens, self.tokenizer) for h in history], max_tokens
        )

    def _fit(self, open_lines: list[str], history: list[str], max_tokens: int) -> str:
        count = self.tokenizer.count
        while history and count("\n".join(open_lines + history)) > max_tokens:
            history.pop(0)
        while len(open_lines) > 1 and count("\n".join(open_lines)) > max_tokens:
            open_lines.pop(0)
        return cut("\n".join(open_lines + history), max_tokens, self.tokenizer)


def _sentence(text: str, span: Segment) -> str:
    """The sentence of ``span`` with its own terminator, on one line."""
    end = span.end
    while end < len(text) and text[end] in _TERMINATORS:
        end += 1
    return " ".join(text[span.start : end].split())


def _answered(question: str, role: str, later: Sequence[SessionItem]) -> bool:
    asked = content_words(question)
    return any(
        turn.role != role and (not asked or asked & content_words(turn.text)) for turn in later
    )
