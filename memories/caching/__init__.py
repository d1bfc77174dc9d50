"""What Redis caches beside the record (cache.py): each agent's hot memories, which a write
updates and retrieval reads, and query embeddings. Never the record: when Redis is unreachable
every reader answers from PostgreSQL or the model. Modules are imported by name
(`from memories.caching import cache`); this package re-exports nothing."""
