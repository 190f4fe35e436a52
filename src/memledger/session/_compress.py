"""Compression on arrival: an oversized tool result is cut down to what the step needs
before it enters session memory, not later when a window overflows. Pure: the
tokenizer arrives as a parameter.

*Text* is cut by lines (by sentences when lines over half the budget hold most of it).
While the budget lasts it keeps, in this order:

1. the head: the first lines, up to a quarter of the budget (the first line cut
   short if it alone is larger);
2. the lines that match ``need``, best first (ties: earlier first);
3. the tail: the last lines, up to an eighth of the budget.

Kept lines stay in their order; each gap is marked in the text
(``[… lines 40-310 dropped …]``). A line *matches* when it shares content words
with ``need``, weighted by rarity (see :func:`relevance`), and scores at least half
as well as the best line: a word every line holds decides nothing.

*JSON* (an object or array) keeps its top-level shape: every top-level key, with a
short scalar as is and anything larger as a placeholder (``"<list, 300 items>"``);
then the values and flat rows (objects of scalars) that match ``need`` by their key
names and their own text, each with the keys leading to it. The answer is valid
JSON. When the shape alone would take over half the budget, the pretty-printed JSON
is cut as text.

What went is described in :attr:`Compression.dropped`. The original is not kept:
only its SHA-256.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence

from memledger.domain.text import sentences
from memledger.ports import Tokenizer
from memledger.session._model import Compression
from memledger.session._text import content_words, cut

JsonPath = tuple[str | int, ...]

_MORE_KEYS = "…dropped"
_SHOWN_RANGES = 4
_SHOWN_NEED = 60
_SHORT_SCALAR_TOKENS = 12


def compress_tool_output(
    text: str, *, need: str | None, max_tokens: int, tokenizer: Tokenizer
) -> tuple[str, Compression | None]:
    """``text`` cut to at most ``max_tokens`` tokens, keeping what ``need`` (the step's
    question or goal) asks for; with the :class:`Compression` record, or ``None`` when
    ``text`` already fits and is returned untouched."""
    original_tokens = tokenizer.count(text)
    if original_tokens <= max_tokens:
        return text, None
    need_words = content_words(need) if need else frozenset()
    shown_need = _shown(need)
    result = _compress_json(text, need_words, shown_need, max_tokens, tokenizer)
    if result is None:
        result = _compress_text(text, need_words, shown_need, max_tokens, tokenizer)
    kept, dropped = result
    if tokenizer.count(kept) > max_tokens:  # a tokenizer that counts joins oddly
        kept = cut(kept, max_tokens, tokenizer)
    kept_tokens = tokenizer.count(kept)
    return kept, Compression(
        kept_tokens=kept_tokens,
        dropped_tokens=max(0, original_tokens - kept_tokens),
        dropped=dropped,
        original_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def _shown(need: str | None) -> str | None:
    if need is None:
        return None
    flat = " ".join(need.split())
    return flat if len(flat) <= _SHOWN_NEED else flat[: _SHOWN_NEED - 1] + "…"


# -- text ----------------------------------------------------------------------------


def _compress_text(
    text: str,
    need_words: frozenset[str],
    shown_need: str | None,
    max_tokens: int,
    tokenizer: Tokenizer,
) -> tuple[str, str]:
    unit, joiner = "line", "\n"
    units = text.splitlines()
    costs = [tokenizer.count(u) for u in units]
    if len(units) < 2 or 2 * sum(c for c in costs if c > max_tokens // 2) > sum(costs):
        unit, joiner = "sentence", " "
        units = _sentence_units(text)
        costs = [tokenizer.count(u) for u in units]
    scores = relevance([content_words(u) for u in units], need_words)
    head_quota = max(1, max_tokens // 4)
    head_cut = costs[0] > head_quota
    if head_cut:
        units[0] = cut(units[0], head_quota, tokenizer)
        costs[0] = tokenizer.count(units[0])

    chosen = _greedy(_priority(costs, scores, max_tokens), costs, max_tokens - max_tokens // 10)
    rendered = _render(units, chosen, unit, joiner)
    while tokenizer.count(rendered) > max_tokens and chosen:
        chosen.pop()  # the lowest-priority unit kept
        rendered = _render(units, chosen, unit, joiner)

    kept = set(chosen)
    dropped = [i for i in range(len(units)) if i not in kept]
    matched = sum(1 for i in kept if scores[i] > 0)
    missed = sum(1 for i in dropped if scores[i] > 0)
    if shown_need is None:
        reason = "no need given"
    elif matched == missed == 0:
        reason = f"no match for {shown_need!r}"
    else:
        reason = f"kept {matched} matching {shown_need!r}"
        if missed:
            reason += f"; {missed} more matched but did not fit"
    where = f"{unit}s {_ranges(dropped)} of {len(units)}" if dropped else f"no {unit}s"
    if head_cut and 0 in kept:
        where = f"the end of {unit} 1, " + where
    return rendered, f"{where} ({reason})"


def _sentence_units(text: str) -> list[str]:
    spans = sentences(text)
    if not spans:
        return [text.strip()]
    units = []
    for index, span in enumerate(spans):
        end = spans[index + 1].start if index + 1 < len(spans) else len(text)
        units.append(" ".join(text[span.start : end].split()))
    return units


def relevance(candidates: Sequence[frozenset[str]], need: frozenset[str]) -> list[float]:
    """How well each candidate's content words match ``need``: the sum, over the words
    they share, of ``log(1 + n / df)`` (``n`` candidates, ``df`` of them holding the
    word), so that a word every line has counts little. Scores under half the best
    are set to 0: those candidates do not match."""
    if not need:
        return [0.0] * len(candidates)
    frequency: dict[str, int] = {}
    for words in candidates:
        for word in words & need:
            frequency[word] = frequency.get(word, 0) + 1
    total = len(candidates)
    weight = {word: math.log(1 + total / df) for word, df in frequency.items()}
    scores = [sum(weight[w] for w in words & need) for words in candidates]
    best = max(scores, default=0.0)
    return [s if s > 0 and s >= best / 2 else 0.0 for s in scores]


def _priority(costs: Sequence[int], scores: Sequence[float], max_tokens: int) -> list[int]:
    """Unit indices in the order they are worth keeping: head, matches, tail."""
    order: list[int] = [0]
    used = costs[0]
    for index in range(1, len(costs)):
        if used + costs[index] > max_tokens // 4:
            break
        order.append(index)
        used += costs[index]
    matches = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], i))
    order.extend(matches)
    used = 0
    for index in range(len(costs) - 1, 0, -1):
        if used + costs[index] > max_tokens // 8:
            break
        order.append(index)
        used += costs[index]
    return list(dict.fromkeys(order))


def _greedy(order: Sequence[int], costs: Sequence[int], allowance: int) -> list[int]:
    chosen: list[int] = []
    used = 0
    for index in order:
        if used + costs[index] <= allowance:
            chosen.append(index)
            used += costs[index]
    return chosen


def _render(units: Sequence[str], chosen: Sequence[int], unit: str, joiner: str) -> str:
    parts: list[str] = []
    previous = -1
    for index in sorted(chosen):
        if index > previous + 1:
            parts.append(_marker(unit, previous + 1, index - 1))
        parts.append(units[index])
        previous = index
    if previous < len(units) - 1:
        parts.append(_marker(unit, previous + 1, len(units) - 1))
    return joiner.join(parts)


def _marker(unit: str, first: int, last: int) -> str:
    if first == last:
        return f"[… {unit} {first + 1} dropped …]"
    return f"[… {unit}s {first + 1}-{last + 1} dropped …]"


def _ranges(indices: Sequence[int]) -> str:
    """``[39, 40, ..., 309, 399]`` as ``"40-310, 400"`` (1-based), at most a few shown."""
    runs: list[tuple[int, int]] = []
    for index in indices:
        if runs and runs[-1][1] == index - 1:
            runs[-1] = (runs[-1][0], index)
        else:
            runs.append((index, index))
    shown = ", ".join(str(a + 1) if a == b else f"{a + 1}-{b + 1}" for a, b in runs[:_SHOWN_RANGES])
    if len(runs) > _SHOWN_RANGES:
        shown += f" and {len(runs) - _SHOWN_RANGES} more ranges"
    return shown


# -- JSON ----------------------------------------------------------------------------


def _compress_json(
    text: str,
    need_words: frozenset[str],
    shown_need: str | None,
    max_tokens: int,
    tokenizer: Tokenizer,
) -> tuple[str, str] | None:
    """The JSON compression, or ``None`` when ``text`` is no JSON object or array (or
    its shape alone is too large): then it is cut as text."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        value = json.loads(stripped)
        return _compress_value(value, need_words, shown_need, max_tokens, tokenizer)
    except (ValueError, RecursionError):
        return None


def _compress_value(
    value: object,
    need_words: frozenset[str],
    shown_need: str | None,
    max_tokens: int,
    tokenizer: Tokenizer,
) -> tuple[str, str] | None:
    if not isinstance(value, dict | list) or not value:
        return None
    skeleton = _dumps(_prune(value, (), frozenset(), frozenset(), tokenizer))
    if tokenizer.count(skeleton) > max_tokens // 2:
        return _compress_pretty(value, need_words, shown_need, max_tokens, tokenizer)
    leaves = _leaves(value)
    candidates = leaves + _records(value)
    words: dict[str, frozenset[str]] = {}
    scores = relevance([_words(path, node, words) for path, node in candidates], need_words)
    matches = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], i))
    allowance = max_tokens - tokenizer.count(skeleton)
    picks: list[int] = []
    used = 0
    for index in matches:
        path, node = candidates[index]
        cost = tokenizer.count(_dumps(node)) + tokenizer.count(str(path[-1])) + 2
        if used + cost <= allowance:
            picks.append(index)
            used += cost
    while True:
        kept = frozenset(candidates[i][0] for i in picks)
        ancestors = frozenset(p[:k] for p in kept for k in range(len(p)))
        rendered = _dumps(_prune(value, (), kept, ancestors, tokenizer))
        if tokenizer.count(rendered) <= max_tokens or not picks:
            break
        del picks[len(picks) - max(1, len(picks) // 4) :]

    shown = sum(
        1
        for path, leaf in leaves
        if any(path[:k] in kept for k in range(1, len(path) + 1))
        or (len(path) == 1 and _placeholder(leaf, tokenizer) is leaf)
    )
    if shown_need is None:
        reason = "no need given: kept the top-level shape"
    elif not matches:
        reason = f"no match for {shown_need!r}: kept the top-level shape"
    else:
        reason = f"kept the top-level shape and {len(picks)} matching {shown_need!r}"
        if len(matches) > len(picks):
            reason += f"; {len(matches) - len(picks)} more matched but did not fit"
    return rendered, f"{len(leaves) - shown} of {len(leaves)} JSON values ({reason})"


def _compress_pretty(
    value: object,
    need_words: frozenset[str],
    shown_need: str | None,
    max_tokens: int,
    tokenizer: Tokenizer,
) -> tuple[str, str]:
    pretty = json.dumps(value, indent=1, ensure_ascii=False)
    kept, dropped = _compress_text(pretty, need_words, shown_need, max_tokens, tokenizer)
    return kept, dropped + " of the JSON pretty-printed"


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _leaves(value: object) -> list[tuple[JsonPath, object]]:
    """Every scalar (and empty container) with its path, in document order."""
    found: list[tuple[JsonPath, object]] = []
    stack: list[tuple[JsonPath, object]] = [((), value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict) and node:
            stack.extend(((*path, key), node[key]) for key in reversed(list(node)))
        elif isinstance(node, list) and node:
            stack.extend(((*path, i), node[i]) for i in range(len(node) - 1, -1, -1))
        else:
            found.append((path, node))
    return found


def _records(value: object) -> list[tuple[JsonPath, object]]:
    """Every object below the top whose values are all scalars (a row), with its path:
    kept whole when it matches as a whole (``{"sku": "A17", "price": 4}`` for "price of
    A17")."""
    found: list[tuple[JsonPath, object]] = []
    stack: list[tuple[JsonPath, object]] = [((), value)]
    while stack:
        path, node = stack.pop()
        children: list[tuple[JsonPath, object]] = []
        if isinstance(node, dict):
            children = [((*path, key), child) for key, child in node.items()]
        elif isinstance(node, list):
            children = [((*path, i), child) for i, child in enumerate(node)]
        containers = [c for c in children if isinstance(c[1], dict | list)]
        if path and isinstance(node, dict) and node and not containers:
            found.append((path, node))
        stack.extend(reversed(containers))
    return found


def _words(path: JsonPath, node: object, cache: dict[str, frozenset[str]]) -> frozenset[str]:
    """The content words of a path's keys and of the scalars at or right below it."""
    words: set[str] = set()
    for part in path:
        if isinstance(part, str):
            if part not in cache:
                cache[part] = content_words(part)
            words |= cache[part]
    scalars = list(node.items()) if isinstance(node, dict) else [("", node)]
    for key, scalar in scalars:
        if key:
            if key not in cache:
                cache[key] = content_words(key)
            words |= cache[key]
        if isinstance(scalar, str):
            words |= content_words(scalar)
        elif isinstance(scalar, int | float) and not isinstance(scalar, bool):
            words |= content_words(str(scalar))
    return frozenset(words)


def _placeholder(value: object, tokenizer: Tokenizer) -> object:
    """A top-level value as the shape shows it: short scalars as they are."""
    if isinstance(value, dict):
        return f"<object, {len(value)} keys>"
    if isinstance(value, list):
        return f"<list, {len(value)} items>"
    if isinstance(value, str):
        tokens = tokenizer.count(value)
        return value if tokens <= _SHORT_SCALAR_TOKENS else f"<text, {tokens} tokens>"
    return value


def _prune(
    node: object,
    path: JsonPath,
    kept: frozenset[JsonPath],
    ancestors: frozenset[JsonPath],
    tokenizer: Tokenizer,
) -> object:
    """``node`` with only the kept paths (and, at the top, the shape of the rest)."""
    if path in kept:
        return node
    if isinstance(node, dict):
        out: dict[str, object] = {}
        omitted = 0
        for key, child in node.items():
            child_path = (*path, key)
            if child_path in kept or child_path in ancestors:
                out[key] = _prune(child, child_path, kept, ancestors, tokenizer)
            elif not path:
                out[key] = _placeholder(child, tokenizer)
            else:
                omitted += 1
        if omitted:
            out[_MORE_KEYS] = f"{omitted} more keys"
        return out
    if isinstance(node, list):
        items: list[object] = []
        gap = 0
        for index, child in enumerate(node):
            child_path = (*path, index)
            if child_path in kept or child_path in ancestors:
                if gap:
                    items.append(f"… {gap} items dropped")
                    gap = 0
                items.append(_prune(child, child_path, kept, ancestors, tokenizer))
            else:
                gap += 1
        if gap:
            items.append(f"… {gap} items dropped")
        return items
    return node
