"""Retrieval: finding memories for a query, and what follows from it (docs/adr/0035).

A search (pipeline.memory_search) reads top to bottom as signals -> fusion -> rank -> load:

  * signals, each ranking memories its own way into Hits (ranking.Hit): vector.py (meaning),
    fulltext.py (words, BM25-like tiers), expansion.py (one relationship away from the best),
    neighbours.py (written just before and after the best, in their namespace);
  * fusion: reciprocal-rank fusion of every signal's Hits, weighted by name (ranking.py);
  * rank: the fused relevance blended with importance, confidence, recency and usage;
  * load: whole records for the few results returned (records.py).

Around it: filters.py (what a search may return), size.py (how many rows that is, which picks
each signal's path), events.py (retrieval events, reinforcement, replay), hot.py (each agent's
hot memories). Knobs come from memory_platform.config (config().search).

Every function here runs as the tenant its caller set (API authentication, the console's
access check, tenant_context in jobs, commands and tests) and filters by organisation itself
too; only reinforce, which runs with no caller around it, sets the tenant itself. Modules are
imported by name (`from memories.retrieval import vector`); this package re-exports nothing.
"""
