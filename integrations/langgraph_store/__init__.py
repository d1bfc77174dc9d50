"""LangGraph's store API over HTTP (docs/adr/0040): what langgraph_sdk's StoreClient sends,
answered by the platform's namespace store (memories.store.writes, memories.reads.selectors, the
store search of memories.retrieval)."""
