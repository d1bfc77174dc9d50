"""The namespace store (spec §3, in LangGraph's shapes; docs/adr/0040), on the model of
LangGraph's own `store/postgres/base.py`: items addressed by (namespace, key), each a memory
like any other (versions, row-level security, search, the console), its value the memory's
metadata and its content the text of the value's indexed fields.

- values: what a value means (its indexed text, filters over it as SQL), without a database;
- writes: put (upsert, last write wins) and delete, and the refresh of a time to live;
- reads: an item, the items under a prefix, the namespaces that hold items;
- search: the items nearest a query by meaning (similarity alone, paged).

The use cases over them (memories.use_cases.store) are what the doors call.
"""
