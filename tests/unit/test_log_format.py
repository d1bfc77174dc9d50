"""Log lines carry no values: exceptions by type and frames, requests by path alone."""

import logging
import sys

from memory_platform import gunicorn_conf
from memory_platform.log_format import NoValuesFormatter

SCOPE = "users/jane.doe@example.com"  # a value the code handles; frames show code, not values


def test_an_exception_is_logged_by_type_and_frames_without_its_message():
    def store(scope):
        raise ValueError(f"duplicate key (scope)=({scope}) already exists")

    try:
        store(SCOPE)
    except ValueError:
        record = logging.LogRecord("memories", logging.ERROR, __file__, 1, "write failed", None, sys.exc_info())
    line = NoValuesFormatter("%(levelname)s %(message)s").format(record)
    assert line.startswith("ERROR write failed\nTraceback") and "in store" in line
    assert "builtins.ValueError (message not logged" in line
    assert "jane.doe" not in line


def test_the_access_log_names_the_path_without_the_query_string_referer_or_user_agent():
    fields = {"%(r)s", "%(q)s", "%(f)s", "%(a)s"}
    assert "%(U)s" in gunicorn_conf.access_log_format
    assert not {field for field in fields if field in gunicorn_conf.access_log_format}
