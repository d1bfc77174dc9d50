"""Secret-like strings sent through every write endpoint: none reaches a table or a log line."""

import logging

import pytest
from django.apps import apps
from django.db import connection

from tenants.context import service_account
from tenants.models import TenantModel
from tests.memories.secret_corpus import HARMLESS, SECRETS

pytestmark = pytest.mark.django_db


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage() + (self.formatException(record.exc_info) if record.exc_info else ""))


@pytest.fixture
def all_logs():
    """Every log record at DEBUG, SQL with its parameters included."""
    handler = Collect()
    loggers = [logging.getLogger(), logging.getLogger("django")]
    saved = [(logger, logger.level) for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    connection.force_debug_cursor = True
    yield handler.lines
    connection.force_debug_cursor = False
    for logger, level in saved:
        logger.removeHandler(handler)
        logger.setLevel(level)


def everything_stored() -> str:
    tables = sorted({model._meta.db_table for model in apps.get_models() if issubclass(model, TenantModel)})
    with service_account(), connection.cursor() as cursor:
        dumps = []
        for table in tables:
            cursor.execute(f"SELECT coalesce(string_agg(row_to_json(t)::text, '\n'), '') FROM {table} t")
            dumps.append(cursor.fetchone()[0])
    return "\n".join(dumps)


def test_no_secret_survives_any_write_path(tenant_a, api_a, all_logs):
    half = len(SECRETS) // 2
    for index, (text, _) in enumerate(SECRETS[:half]):
        response = api_a.post("/api/v1/memories", {
            "content": f"Note {index}: {text}", "metadata": {"raw": text, text[:40]: "as a key"},
            "provenance": {"quote": text},
        })
        assert response.status_code == 201, response.content
    batch = [{"content": f"Batch {i}: {text}", "metadata": {"nested": [{"value": text}]}}
             for i, (text, _) in enumerate(SECRETS[half:])]
    assert api_a.post("/api/v1/memories", {"memories": batch}).status_code == 201
    memory_id = str(tenant_a.memory.id)
    assert api_a.patch(f"/api/v1/memories/{memory_id}", {"content": f"Changed: {SECRETS[0][0]}",
                                                         "metadata": {"k": SECRETS[1][0]}},
                       HTTP_IF_MATCH='"1"').status_code == 200
    assert api_a.post(f"/api/v1/memories/{tenant_a.other_memory.id}/supersede",
                      {"content": f"Correction: {SECRETS[2][0]}"}).status_code == 201
    assert api_a.put("/api/v1/store/items", {"namespace": ["vault", "u1"], "key": "creds",
                                             "value": {"text": SECRETS[3][0], "v": SECRETS[4][0]}},
                     HTTP_IDEMPOTENCY_KEY="store-1").status_code == 204
    stored, logged = everything_stored(), "\n".join(all_logs)
    assert "REDACTED" in stored and any("INSERT" in line for line in all_logs)  # both were really looked at
    for _, secret in SECRETS:
        assert secret not in stored, f"stored: {secret}"
        assert secret not in logged, f"logged: {secret}"


def test_redaction_is_recorded_in_provenance_by_kind_never_by_value(api_a):
    memory = api_a.post("/api/v1/memories", {"content": "deploy key AKIAIOSFODNN7EXAMPLE and password=hunter2isnotsafe"}
                        ).json()["memory"]
    assert memory["content"] == "deploy key [REDACTED:aws_key] and password=[REDACTED:assigned_secret]"
    assert memory["provenance"]["redaction"] == {"applied": True, "count": 2,
                                                 "kinds": {"assigned_secret": 1, "aws_key": 1}}


@pytest.mark.parametrize("text", HARMLESS)
def test_ordinary_text_is_left_alone(api_a, text):
    memory = api_a.post("/api/v1/memories", {"content": text}).json()["memory"]
    assert memory["content"] == text and "redaction" not in memory["provenance"]
