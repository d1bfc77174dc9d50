"""Retrieval: finding memories for a query, and what follows from it (docs/adr/0035).

A search (pipeline.memory_search) reads top to bottom as read -> signals -> fusion -> rank -> load:

  * read: the query, once (pipeline.QueryReading): its words, its intent (memories.understanding.intent),
    the period it names (memories.understanding.when) and the person it is about (speakers.py);
  * signals, the rows of pipeline.SIGNALS, each ranking memories its own way into Hits
    (ranking.Hit): fulltext.py (words, BM25), vector.py (meaning), timeframe.py (the period's
    memories, by words and by meaning), expansion.py (relationships from the best), rocchio.py
    (meaning again, moved towards the best, for a question asking for an inference),
    neighbours.py (written just before and after the best, in their namespace);
  * fusion: reciprocal-rank fusion, weighted by signal (ranking.py), once per stage: the
    signals not seeded by the fusion together, then each seeded one (expansion, rocchio, neighbours)
    after it ran on the fusion before it; the others' words weigh less than the named
    person's (speakers.py);
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
