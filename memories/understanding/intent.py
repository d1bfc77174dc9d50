"""What a query asks for (spec §4's intent classification): why, when, who, where, how, what,
or general, read from its question words by rules (English; no model). The search routes on
it (memories.retrieval.pipeline): a "why" question follows the causal, derivation and support
edges of its best results; the response says which intent it read and which strategies ran.
"""

from __future__ import annotations

import re

INTENTS = ("why", "when", "who", "where", "how", "what", "general")

LEAD = r"^\s*(?:(?:and|so|but|then|ok|okay|hey|please|tell me|do you know|can you tell me|remind me)[,\s]+)*"
RULES = [
    ("why", re.compile(LEAD + r"(?:why\b|how come\b|what (?:made|caused|led)\b|for what reason\b)", re.I)),
    ("why", re.compile(r"\b(?:the reason|what caused|because of what)\b", re.I)),
    ("when", re.compile(LEAD + r"(?:when\b|what (?:time|day|date|year|month)\b|how long ago\b|since when\b"
                               r"|which (?:day|date|year|month)\b)", re.I)),
    ("who", re.compile(LEAD + r"(?:who\b|whom\b|whose\b|which (?:person|people|friend|friends)\b)", re.I)),
    ("where", re.compile(LEAD + r"(?:where\b|which (?:city|country|place|town)\b)", re.I)),
    ("how", re.compile(LEAD + r"how\b(?! (?:many|much|long|often|old)\b)", re.I)),
    ("what", re.compile(LEAD + r"(?:what|which|how (?:many|much|long|often|old))\b", re.I)),
]


def classify(query: str) -> str:
    """The query's intent, one of INTENTS."""
    for intent, pattern in RULES:
        if pattern.search(query):
            return intent
    return "general"
