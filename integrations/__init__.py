"""Doors to the platform in other products' shapes (DESIGN.md, "Doors, not forks"): each is an
adapter over the same services and selectors as the REST API, never a second implementation,
and depends on the core, never the reverse."""
