"""What BM25's word statistics cost a write (docs/adr/0037), in process.

    .venv/bin/python benchmarks/ingest/word_statistics.py [--rounds 10]

The triggers that append each write's word counts (memories migration 0018) are turned off and
on by turns (ALTER TABLE ... DISABLE TRIGGER, as the owner), and each round times the same
writes both ways through the write services: single creates (each embedded inline, as
POST /api/v1/memories does) and batch creates of 100 (the request's part; the worker embeds
them later). Rounds alternate which way goes first, so the machine's drift falls on both.
Then `lexicon.fold` is timed on what the rounds appended. Runs on embedded servers in
.data/bench-lexical (emptied first); writes results-word-statistics.json beside this file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine, percentile  # noqa: E402
from benchmarks.ingest.run import sentences  # noqa: E402

DATA_DIR = ROOT / ".data" / "bench-lexical"
TRIGGERS = ("memory_lexemes_inserted", "memory_lexemes_updated", "memory_lexemes_deleted")
SINGLES, BATCHES, BATCH = 40, 4, 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    rounds = parser.parse_args().rounds
    shutil.rmtree(DATA_DIR, ignore_errors=True)
    DATA_DIR.mkdir(parents=True)
    os.environ.update({"MEMORY_PLATFORM_DATA_DIR": str(DATA_DIR), "LOG_LEVEL": "WARNING",
                       "DJANGO_SETTINGS_MODULE": "memory_platform.settings.base"})
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from memories.understanding import lexicon
    from memories.vectors import embeddings
    from memories.writes import create
    from memory_platform import local_services
    from tenants import services
    from tenants.context import service_account, tenant_context

    local_services.start_for_settings()
    call_command("migrate", verbosity=0)
    with service_account():
        org = services.organization_create(name="Bench", slug="bench")
    with tenant_context(org.id):
        agent = services.agent_create(org=org, name="bench-agent")
    embeddings.get_embedder().embed(["warm up the model"])

    def triggers(enabled: bool) -> None:
        with connections["owner"].cursor() as cursor:
            for name in TRIGGERS:
                cursor.execute(f"ALTER TABLE memories {'ENABLE' if enabled else 'DISABLE'} TRIGGER {name}")

    texts = iter(sentences(rounds * 2 * (SINGLES + BATCHES * BATCH), seed=37))
    single_ms = {True: [], False: []}
    batch_ms = {True: [], False: []}
    for number in tqdm(range(rounds), desc="rounds (statistics on and off by turns)"):
        for enabled in ((True, False) if number % 2 == 0 else (False, True)):
            triggers(enabled)
            with tenant_context(org.id):
                for _ in range(SINGLES):
                    began = time.perf_counter()
                    create.memory_create(org_id=org.id, agent_id=agent.id, content=next(texts), category="factual")
                    single_ms[enabled].append((time.perf_counter() - began) * 1000)
                for _ in range(BATCHES):
                    items = [{"content": next(texts), "category": "factual"} for _ in range(BATCH)]
                    began = time.perf_counter()
                    create.memory_create_batch(org_id=org.id, agent_id=agent.id, items=items)
                    batch_ms[enabled].append((time.perf_counter() - began) * 1000)
    triggers(True)
    with connections["default"].cursor() as cursor, service_account():
        cursor.execute("SELECT count(*) FROM memory_lexeme_deltas")
        deltas = cursor.fetchone()[0]
    folded = lexicon.fold()
    # The rounds with the triggers off left statistics short: count them again.
    with tenant_context(org.id):
        lexicon.rebuild(org.id)

    def summary(values: list[float]) -> dict:
        return {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2),
                "mean": round(statistics.mean(values), 2)}

    results = {
        "machine": machine(),
        "recorded_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "rounds": rounds,
        "single_create_ms": {"statistics on": summary(single_ms[True]), "statistics off": summary(single_ms[False])},
        "batch_of_100_ms": {"statistics on": summary(batch_ms[True]), "statistics off": summary(batch_ms[False])},
        "cost": {
            "single p50": round(percentile(single_ms[True], 50) / percentile(single_ms[False], 50) - 1, 4),
            "batch mean": round(statistics.mean(batch_ms[True]) / statistics.mean(batch_ms[False]) - 1, 4),
        },
        "fold": {"deltas": deltas, "seconds": folded["seconds"]},
    }
    (Path(__file__).parent / "results-word-statistics.json").write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    local_services.stop_all()


if __name__ == "__main__":
    main()
