"""Rocchio: a second vector query, towards what the search's best results mean (Rocchio's
pseudo-relevance feedback), as a signal (docs/adr/0048).

A question and its answers rarely share their words or even their phrasing: "What kind of
hobbies does Dana have?" against "I went kayaking last weekend" and "Painting keeps me calm".
The best results of the other signals are mostly about the question's subject, so the
mean of their embeddings points at what the subject's memories mean, and a query moved towards
it (query + ROCCHIO_BLEND x that mean, normalised) finds the memories near it that the
question's own embedding ranked too low. Seeded by the fusion so far (its best ROCCHIO_SEEDS
memories); fusion weighs it as RRF_WEIGHTS["rocchio"].

It runs for questions whose answer is not in their words: those that ask for an inference
("Would Dana likely enjoy a pottery class?", "What might Sam's job be?"), where what the
person's memories mean together is all a search has to go by, and those that ask for the
members of a class ("What kind of hobbies does Dana have?"), whose answers name the members.
For a question whose answer is said (most of them), the moved query ranks the subject's
memories above the one that holds the words asked about (benchmarks/recall/README.md, issue
34: R@10 0.749 -> 0.735 when it ran for every question).
"""

from __future__ import annotations

import re

import numpy as np
from django.db import connection

from memories.retrieval import vector
from memories.retrieval.filters import SearchFilters
from memories.retrieval.ranking import Hit

# The words of a question asking what is likely rather than what was said.
INFERENCE = re.compile(r"\b(?:would|likely|might|could|considered|probably)\b", re.I)


# The words of a question asking for the members of a class: the answers name the members
# ("kayaking", "painting"), not the class ("hobbies").
CATEGORY = re.compile(r"\b(?:what|which) (?:kinds?|types?|sorts?) of\b", re.I)


def asks_inference(query: str) -> bool:
    return INFERENCE.search(query) is not None


def asks_category(query: str) -> bool:
    return CATEGORY.search(query) is not None


def applies(query: str) -> bool:
    """Whether a question's answer is likely not in its words: it asks for an inference or for
    the members of a class."""
    return asks_inference(query) or asks_category(query)


EMBEDDINGS_SQL = """
    SELECT m.id, m.embedding::text
    FROM unnest(%s::uuid[]) AS wanted(id)
    JOIN memories m ON m.org_id = %s AND m.id = wanted.id
    WHERE m.embedding IS NOT NULL
"""


def embeddings(org_id, memory_ids: list) -> dict:
    """The unit-length embedding of each of these memories that has one, by id."""
    if not memory_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(EMBEDDINGS_SQL, [[str(memory_id) for memory_id in memory_ids], org_id])
        rows = cursor.fetchall()
    found = {}
    for memory_id, text in rows:
        values = np.array(text.strip("[]").split(","), dtype=np.float32)
        norm = float(np.linalg.norm(values))
        if norm > 0:
            found[memory_id] = values / norm
    return found


def moved_query(query: list[float], seeds: list, known: dict, blend: float) -> list[float] | None:
    """The query moved towards the mean of its seeds' embeddings (Rocchio: q + blend x mean),
    normalised; None if no seed has an embedding."""
    vectors = [known[seed] for seed in seeds if seed in known]
    if not vectors:
        return None
    base = np.asarray(query, dtype=np.float32)
    base = base / (np.linalg.norm(base) or 1.0)
    moved = base + blend * np.mean(vectors, axis=0)
    return (moved / (np.linalg.norm(moved) or 1.0)).tolist()


def search(org_id, query: list[float], seeds: list, filters: SearchFilters, k: int, exact: bool,
           blend: float) -> list[Hit]:
    """The k memories nearest the query moved towards its seeds (best first)."""
    moved = moved_query(query, seeds, embeddings(org_id, seeds), blend)
    if moved is None:
        return []
    hits, _ = vector.search(org_id, moved, filters, k, exact)
    return hits
