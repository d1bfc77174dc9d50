"""What a caller can ask of the memory, one function per use case: the functions every door
(the REST API, the LangGraph store API, MCP, the console) calls.

Each takes the Caller its door's authentication built (memories.access), enforces the
caller's reach itself (a memory, a session, an item or an entity out of reach is missing, as
another organisation's is; a write out of reach or by a read-only key is refused), does the
work through the services and selectors, and records what must be recorded (a search's
retrieval event, a store read's refreshed time to live). A door parses, calls one of these,
and shapes the answer; it never checks reach or composes a use case of its own
(tests/unit/test_architecture.py holds them to it).

The tenant of the transaction is already the caller's organisation (docs/architecture.md,
"One tenant rule").
"""
