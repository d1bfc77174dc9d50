"""Doors beside the REST API (DESIGN 4.10): adapters over the same services and selectors,
which depend on the core and never the reverse."""
