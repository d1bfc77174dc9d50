"""Settings for tests that change a search knob."""


def with_search_knobs(memory_platform: dict, **knobs) -> dict:
    """MEMORY_PLATFORM with these SEARCH knobs changed, as a copy: the settings it came from,
    which the `settings` fixture or override_settings restores, stay as they were."""
    return {**memory_platform, "SEARCH": {**memory_platform["SEARCH"], **knobs}}


def with_rate_limits(memory_platform: dict, **limits) -> dict:
    """MEMORY_PLATFORM with these RATE_LIMITS changed, as a copy (see with_search_knobs)."""
    return {**memory_platform, "RATE_LIMITS": {**memory_platform["RATE_LIMITS"], **limits}}
