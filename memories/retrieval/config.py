"""The knobs retrieval reads, in one place: settings.MEMORY_PLATFORM, documented in
memory_platform/settings/base.py. Read on every call, so changed settings apply at once."""

from __future__ import annotations

from django.conf import settings


def knobs() -> dict:
    """The search's knobs: MEMORY_PLATFORM["SEARCH"]."""
    return settings.MEMORY_PLATFORM["SEARCH"]


def hot_cache_size() -> int:
    """How many memories each agent's hot set holds: MEMORY_PLATFORM["HOT_CACHE_SIZE"]."""
    return settings.MEMORY_PLATFORM["HOT_CACHE_SIZE"]
