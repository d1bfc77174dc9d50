"""Mem0's platform API, as the `mem0ai` package's MemoryClient calls it (docs/adr/0044,
docs/mem0.md): a user of Mem0 changes `host=` and keeps the client. Mounted under /api/mem0/,
answered by the platform's use cases (memories.use_cases), with the platform's API keys."""
