"""Vectors: what a memory's meaning is made of and searched by. embeddings.py: the models
known (by name) behind one interface, the active one (read from embedding_models), a vector's
SQL text; index.py: the approximate-nearest-neighbour indexes on the vectors (the shared one,
HNSW or IVFFlat, and large tenants' own). Modules are imported by name
(`from memories.vectors import embeddings`); this package re-exports nothing."""
