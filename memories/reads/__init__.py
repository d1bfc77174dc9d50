"""Reads of what the memory holds, as lookups and listings (a search, ranked by words and
meaning, is memories.retrieval's): selectors.py reads memories, their versions, tags and
relationships, and entities (with their facts and timeline), always within one organisation.
Modules are imported by name (`from memories.reads import selectors`); this package
re-exports nothing."""
