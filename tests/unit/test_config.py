"""The product's knobs as one typed object (memory_platform.config), no server needed."""

import copy
import dataclasses

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from memory_platform.config import PlatformConfig, config
from tests.knobs import with_rate_limits, with_search_knobs


def test_every_knob_of_the_setting_is_a_typed_field(settings):
    knobs = config()
    assert knobs.batch_limit == settings.MEMORY_PLATFORM["BATCH_LIMIT"]
    assert knobs.search.exact_scan_rows == settings.MEMORY_PLATFORM["SEARCH"]["EXACT_SCAN_ROWS"]
    assert knobs.search.rrf_weights == settings.MEMORY_PLATFORM["SEARCH"]["RRF_WEIGHTS"]
    assert knobs.rate_limits.api_key == settings.MEMORY_PLATFORM["RATE_LIMITS"]["API_KEY"]
    assert isinstance(knobs.search.recency_half_life_days, float)
    assert config() is knobs  # built once


def test_it_follows_the_setting_as_tests_change_it(settings):
    before = config()
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, EXACT_SCAN_ROWS=7)
    assert config().search.exact_scan_rows == 7
    with override_settings(MEMORY_PLATFORM=with_rate_limits(settings.MEMORY_PLATFORM, SEARCH="7/min")):
        assert config().rate_limits.search == "7/min" and config().search.exact_scan_rows == 7
    assert config().rate_limits.search == before.rate_limits.search
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "BATCH_LIMIT": 3}
    assert config().batch_limit == 3


def test_it_is_read_only():
    with pytest.raises(dataclasses.FrozenInstanceError):
        config().search.exact_scan_rows = 1
    with pytest.raises(TypeError):
        config().search.ranking_weights["usage"] = 1.0


def changed(settings, path: tuple, value=None, *, remove: bool = False) -> dict:
    """A copy of MEMORY_PLATFORM with the entry at `path` set to `value`, or removed."""
    copied = copy.deepcopy(settings.MEMORY_PLATFORM)
    parent = copied
    for key in path[:-1]:
        parent = parent[key]
    if remove:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return copied


@pytest.mark.parametrize(("path", "value", "message"), [
    (("SEARCH", "EXACT_SCAN_ROW"), 5, "MEMORY_PLATFORM['SEARCH']['EXACT_SCAN_ROW'] is not a setting"),
    (("HOT_CACHE_SIZES",), 5, "MEMORY_PLATFORM['HOT_CACHE_SIZES'] is not a setting"),
    (("SEARCH", "EXACT_SCAN_ROWS"), "many", "MEMORY_PLATFORM['SEARCH']['EXACT_SCAN_ROWS'] must be an integer, "
                                           "not 'many'"),
    (("BATCH_LIMIT",), True, "MEMORY_PLATFORM['BATCH_LIMIT'] must be an integer, not True"),
    (("BATCH_LIMIT",), 2.5, "MEMORY_PLATFORM['BATCH_LIMIT'] must be an integer"),
    (("FEEDBACK_WEIGHT",), "0.2", "MEMORY_PLATFORM['FEEDBACK_WEIGHT'] must be a number, not '0.2'"),
    (("RATE_LIMITS", "API_KEY"), 600, "MEMORY_PLATFORM['RATE_LIMITS']['API_KEY'] must be text, not 600"),
    (("RATE_LIMITS",), "600/min", "MEMORY_PLATFORM['RATE_LIMITS'] must be a dict"),
    (("SEARCH", "RRF_WEIGHTS", "fulltex"), 1.0, "MEMORY_PLATFORM['SEARCH']['RRF_WEIGHTS']['fulltex'] is not a "
                                                "weight"),
    (("SEARCH", "RANKING_WEIGHTS", "usage"), "high", "MEMORY_PLATFORM['SEARCH']['RANKING_WEIGHTS']['usage'] must "
                                                     "be a number"),
])
def test_an_unknown_key_or_a_wrong_type_is_refused_by_name(settings, path, value, message):
    settings.MEMORY_PLATFORM = changed(settings, path, value)
    with pytest.raises(ImproperlyConfigured) as refused:
        config()
    assert str(refused.value).startswith(message), refused.value


@pytest.mark.parametrize(("path", "message"), [
    (("VECTOR_INDEX",), "MEMORY_PLATFORM['VECTOR_INDEX'] is missing"),
    (("SEARCH", "QUERY_EMBEDDING_PRECISION"), "MEMORY_PLATFORM['SEARCH']['QUERY_EMBEDDING_PRECISION'] is missing"),
    (("SEARCH", "RRF_WEIGHTS", "graph"), "MEMORY_PLATFORM['SEARCH']['RRF_WEIGHTS']['graph'] is missing"),
    (("RATE_LIMITS", "REDIS_RETRY_SECONDS"), "MEMORY_PLATFORM['RATE_LIMITS']['REDIS_RETRY_SECONDS'] is missing"),
])
def test_a_missing_key_is_refused_by_name(settings, path, message):
    settings.MEMORY_PLATFORM = changed(settings, path, remove=True)
    with pytest.raises(ImproperlyConfigured, match=message.replace("[", r"\[").replace("]", r"\]")):
        config()


def test_a_refused_setting_is_not_kept(settings):
    good = settings.MEMORY_PLATFORM
    settings.MEMORY_PLATFORM = changed(settings, ("BATCH_LIMIT",), "x")
    with pytest.raises(ImproperlyConfigured):
        config()
    settings.MEMORY_PLATFORM = good
    assert config() == PlatformConfig.from_setting(good)


def test_a_wrongly_typed_knob_is_one_check_error_naming_it_not_a_traceback(settings):
    from django.core import checks

    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, EXACT_SCAN_ROWS="many")
    errors = checks.run_checks()
    assert [(error.id, "EXACT_SCAN_ROWS" in error.msg) for error in errors] == [("memories.E000", True)]


@pytest.mark.parametrize("knob, value", [("DECAY_THRESHOLD", 0.0), ("DECAY_THRESHOLD", 1.5), ("WEAK_STRENGTH", -0.1),
                                         ("CONSOLIDATION_SIMILARITY", 0.0)])
def test_a_strength_outside_0_to_1_stops_the_checks(settings, knob, value):
    from memories.checks import lifecycle_settings

    assert lifecycle_settings(None) == []
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, knob: value}
    [error] = lifecycle_settings(None)
    assert error.id == "memories.E004" and f"MEMORY_PLATFORM_{knob}" in error.msg


def test_a_negative_fusion_constant_stops_the_checks_and_zero_is_allowed(settings):
    """weight / (RRF_K + rank) with RRF_K -1 divides by zero at the first rank: the checks
    (which `run` and `migrate` run first) refuse it with a message naming the setting."""
    from memories.checks import search_settings

    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, RRF_K=0)
    assert search_settings(None) == []
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, RRF_K=-1)
    [error] = search_settings(None)
    assert error.id == "memories.E005" and "MEMORY_PLATFORM_RRF_K" in error.msg and "-1" in error.msg


def test_a_negative_weight_for_a_questions_words_is_refused(settings):
    from memories.checks import search_settings

    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, BM25_ASKED_WEIGHT=-0.5)
    [error] = search_settings(None)
    assert error.id == "memories.E006" and "MEMORY_PLATFORM_BM25_ASKED_WEIGHT" in error.msg and "-0.5" in error.msg
