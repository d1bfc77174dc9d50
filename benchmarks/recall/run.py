"""Recall of a conversation's past through the product's API (../shared/eval/README.md).

    .venv/bin/python benchmarks/recall/run.py [--mode hybrid]   # writes results-<mode>.json

Each conversation of ../shared/eval/locomo-dev.json is stored turn by turn as an agent would:
POST /api/v1/memories in batches, content "<speaker>: <text>" (--shape: "<speaker> said: <text>",
a chat export's line, prose's quotation and attribution, or the text alone with the speaker as
the write's `speaker`), the dia_id in metadata, the
session's date as event_time, one namespace per conversation. Then every question of categories
1-4 is asked with POST /api/v1/search, the conversation's namespace as its only filter, limit
20: recall@k = |evidence ∩ dia_ids of the top k| / |evidence|, averaged, for k = 5, 10, 20, per
category, with the search's latency as the client sees it. The data is read from shared/, never
copied into the repository.

With --context, every question is also asked with POST /api/v1/context (the conversation's
namespace, each budget of CONTEXT_BUDGETS tokens, the other parameters the API's defaults): the
context recall at a budget is the share of evidence turns whose memories are among the response's
`memories` (what went into the text), averaged like recall@k.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import api, machine, pending_count, percentile, product, service_connection  # noqa: E402

DATA = ROOT.parent / "shared" / "eval" / "locomo-dev.json"
DATA_DIR = ROOT / ".data" / "recall"
PORT = 8766
KS = (5, 10, 20)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}  # 5 (adversarial) is skipped
BATCH = 100
CONTEXT_BUDGETS = (500, 1000, 2000)


def event_time(text: str) -> str:
    """"1:56 pm on 8 May, 2023" as ISO 8601 (UTC: the data names no zone)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc).isoformat()


# How a turn is written (--shape): "Name: text", "Name said: text", a chat app's export
# ("8/5/23, 1:56 PM - Name: text"), prose ('"text," said Name.'), or the text alone with the
# speaker given as the write's `speaker` field (issue 34: who said it, as data).
SHAPES = {
    "colon": lambda speaker, text, when: ({"content": f"{speaker}: {text}"}),
    "said": lambda speaker, text, when: ({"content": f"{speaker} said: {text}"}),
    "export": lambda speaker, text, when: ({"content": f"{when:%-m/%-d/%y, %-I:%M %p} - {speaker}: {text}"}),
    "quoted": lambda speaker, text, when: ({"content": f'"{quoted(text)}" said {speaker}.'}),
    "bare": lambda speaker, text, when: ({"content": text, "speaker": speaker}),
}


def quoted(text: str) -> str:
    """As prose quotes speech before saying who: a full stop becomes a comma, ! and ? stay."""
    return text if text.endswith(("!", "?")) else text.removesuffix(".") + ","


def turns(sample: dict, shape: str = "colon") -> list[dict]:
    conversation, memories = sample["conversation"], []
    sessions = sorted((int(name.split("_")[1]), name) for name in conversation
                      if name.startswith("session_") and not name.endswith("date_time"))
    for _, name in sessions:
        when = event_time(conversation[f"{name}_date_time"])
        for turn in conversation[name]:
            text = turn["text"] + (f" [shares {turn['blip_caption']}]" if turn.get("blip_caption") else "")
            written = SHAPES[shape](turn["speaker"], text, datetime.fromisoformat(when))
            memories.append({**written, "category": "episodic", "memory_type": "episodic", "event_time": when,
                             "namespace": ["locomo", sample["sample_id"]], "metadata": {"dia_id": turn["dia_id"]}})
    return memories


def forget_usage() -> None:
    """Forget which memories earlier runs' searches returned: the final rank weighs how often
    a memory was retrieved (RANKING_WEIGHTS["usage"]), so a run on reused turns would start
    from the last runs' retrievals instead of none, as a run that stores them does."""
    import redis

    from memory_platform import local_services

    with service_connection() as conn:
        conn.execute("DELETE FROM memory_usage")
    client = redis.Redis.from_url(local_services.redis_running().url)
    for key in client.scan_iter("*retrievals:*"):
        client.delete(key)


def dia_ids_by_memory() -> dict[str, str]:
    """Each stored turn's memory id and its dia_id, read straight from PostgreSQL: the context's
    response names its memories by id only."""
    with service_connection() as conn:
        return {str(memory_id): dia_id for memory_id, dia_id in conn.execute(
            "SELECT id, metadata->>'dia_id' FROM memories WHERE metadata ? 'dia_id'")}


def context_recall(port: int, key: str, question: str, namespace: str, evidence: set, dia_ids: dict,
                   candidates: int | None, recall: dict, tokens: dict, latencies: dict) -> dict:
    """Ask POST /api/v1/context at each budget; adds to recall[budget] the share of the evidence
    in what went in, and the text's tokens and the latency; returns the dia_ids that went in, per
    budget, and how many candidates were left out as duplicates."""
    went_in = {}
    for budget in CONTEXT_BUDGETS:
        began = time.perf_counter()
        status, body = api(port, "POST", "/api/v1/context", key, {
            "query": question, "max_tokens": budget, "filters": {"namespace": namespace},
            **({"candidates": candidates} if candidates else {})})
        latencies[budget].append((time.perf_counter() - began) * 1000)
        assert status == 200, status
        found = {dia_ids.get(memory["id"]) for memory in body["memories"]}
        recall[budget].append(len(evidence & found) / len(evidence))
        tokens[budget].append(body["tokens"])
        went_in[budget] = {"found": sorted(dia_id for dia_id in found if dia_id),
                           "candidates": body["candidates"], "duplicates": len(body.get("duplicates", []))}
    return went_in


def context_summary(recall: dict, tokens: dict, latencies: dict, by_category: dict) -> dict:
    return {"budgets": {str(budget): {
        "recall": round(statistics.mean(recall[budget]), 3),
        "recall_by_category": {name: round(statistics.mean(values[budget]), 3) for name, values in by_category.items()},
        "tokens_mean": round(statistics.mean(tokens[budget]), 1),
        "latency_ms": {"p50": round(percentile(latencies[budget], 50), 1),
                       "p95": round(percentile(latencies[budget], 95), 1)}} for budget in CONTEXT_BUDGETS}}


def conversation_subset(samples: list[dict], chosen: str | None) -> list[dict]:
    """The conversations whose questions are asked: all, or those at these positions of the
    data ("0,1,2"; for split-half tuning: tune on some, measure on the rest). Every
    conversation is stored either way, so `--reuse` runs of any subset share one store."""
    if not chosen:
        return samples
    return [samples[int(position)] for position in chosen.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="hybrid", choices=["hybrid", "vector", "fulltext"])
    parser.add_argument("--reuse", action="store_true",
                        help="ask the questions of the turns a previous run stored (same code for writes), "
                             "instead of storing them again: for comparing search settings")
    parser.add_argument("--output", help="results file (default results-<mode>.json)")
    parser.add_argument("--expand", type=int, default=0, choices=[0, 1, 2],
                        help="relationships followed from the best results (the search's `expand`; default none)")
    parser.add_argument("--port", type=int, default=PORT,
                        help=f"port the product listens on (default {PORT}; another lets the search benchmark run beside)")
    parser.add_argument("--shape", default="colon", choices=sorted(SHAPES),
                        help='how each turn is written: "Name: text" (colon, the default), "Name said: text" '
                             '(said), "8/5/23, 1:56 PM - Name: text" (export), \'"text," said Name.\' (quoted), '
                             'or the text alone with the write\'s `speaker` field (bare)')
    parser.add_argument("--details", help="also write each question with its evidence and what came back "
                                          "to this file (outside the repository: it holds the data)")
    parser.add_argument("--context", action="store_true",
                        help=f"also measure the evidence recall of POST /api/v1/context at {CONTEXT_BUDGETS} tokens")
    parser.add_argument("--context-candidates", type=int,
                        help="the context's `candidates` (default: the API's, which grows with the budget)")
    parser.add_argument("--conversations", help="ask only the questions of the conversations at these positions "
                                                "of the data, e.g. 0,1,2 (default all)")
    arguments = parser.parse_args()
    mode = arguments.mode
    samples = json.loads(DATA.read_text())
    stored_marker = DATA_DIR / "stored"
    # Reused only if stored in the same shape (the marker holds it; an older, empty one: colon).
    reuse = arguments.reuse and stored_marker.exists() and (stored_marker.read_text() or "colon") == arguments.shape
    if not reuse:
        # What replay.py (or a run stopped midway) left running on the folder stops first: a server
        # whose files are deleted under it runs on, orphaned (Valkey) or until it notices (PostgreSQL).
        subprocess.run([sys.executable, "-m", "memory_platform.local_services", "stop", "--data-dir", str(DATA_DIR)],
                       cwd=ROOT, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(DATA_DIR, ignore_errors=True)
        DATA_DIR.mkdir(parents=True)
    # The product as served, with its rate limits off: this measures retrieval, not them.
    env = {**os.environ, "MEMORY_PLATFORM_DATA_DIR": str(DATA_DIR), "LOG_LEVEL": "WARNING",
           **{f"MEMORY_PLATFORM_RATE_LIMIT_{name}": "off" for name in ("API_KEY", "API_KEY_BURST", "SEARCH", "BATCH")}}
    os.environ.update(env)  # pending_count finds the embedded PostgreSQL through it
    with product(DATA_DIR, arguments.port, env) as key:
        started = time.perf_counter()
        memories = [memory for sample in samples for memory in turns(sample, arguments.shape)]
        for start in tqdm(range(0, len(memories) if not reuse else 0, BATCH), desc="storing turns"):
            status, _ = api(arguments.port, "POST", "/api/v1/memories", key, {"memories": memories[start:start + BATCH]})
            assert status == 201, status
        with tqdm(total=len(memories), desc="worker embedding") as bar:
            while left := pending_count():
                bar.n = len(memories) - left
                bar.refresh()
                time.sleep(0.5)
            bar.n = len(memories)
            bar.refresh()
        ingest_seconds = time.perf_counter() - started
        stored_marker.write_text(arguments.shape)
        if reuse:
            forget_usage()

        recall = defaultdict(lambda: defaultdict(list))  # category -> k -> [recall of each question]
        contexts = [defaultdict(list) for _ in range(3)]  # budget -> [recall], [tokens], [latency]
        context_by_category = defaultdict(lambda: defaultdict(list))
        dia_ids = dia_ids_by_memory() if arguments.context else {}
        latencies, details = [], []
        questions = [(sample["sample_id"], qa) for sample in conversation_subset(samples, arguments.conversations)
                     for qa in sample["qa"]
                     if qa["category"] in CATEGORIES and qa.get("evidence")]
        for sample_id, qa in tqdm(questions, desc=f"questions ({mode})"):
            began = time.perf_counter()
            status, body = api(arguments.port, "POST", "/api/v1/search", key, {
                "query": qa["question"], "limit": max(KS), "mode": mode, "expand": arguments.expand,
                "filters": {"namespace": f"locomo/{sample_id}"}})
            latencies.append((time.perf_counter() - began) * 1000)
            assert status == 200, status
            found = [result["memory"]["metadata"].get("dia_id") for result in body["results"]]
            evidence = set(qa["evidence"])
            details.append({"conversation": sample_id, "category": CATEGORIES[qa["category"]],
                            "question": qa["question"], "evidence": qa["evidence"], "found": found,
                            "understood": body.get("understood"), "ms": round(latencies[-1], 1)})
            for k in KS:
                recall[CATEGORIES[qa["category"]]][k].append(len(evidence & set(found[:k])) / len(evidence))
            if arguments.context:
                details[-1]["context"] = context_recall(arguments.port, key, qa["question"], f"locomo/{sample_id}",
                                                        evidence, dia_ids, arguments.context_candidates,
                                                        *contexts)
                for budget in CONTEXT_BUDGETS:
                    context_by_category[CATEGORIES[qa["category"]]][budget].append(contexts[0][budget][-1])

    every = {k: [r for by_k in recall.values() for r in by_k[k]] for k in KS}
    results = {
        "machine": machine(),
        "recorded_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "data": "shared/eval/locomo-dev.json (conv-26, -41, -43, -47, -49), categories 1-4",
        "conversations": arguments.conversations or "all",
        "mode": mode, "expand": arguments.expand, "shape": arguments.shape, "memories": len(memories), "questions": len(questions),
        "ingest_seconds": None if reuse else round(ingest_seconds, 1),
        "settings": {name: value for name, value in os.environ.items()
                     if name.startswith("MEMORY_PLATFORM_") and name != "MEMORY_PLATFORM_DATA_DIR"
                     and not any(part in name for part in ("RATE_LIMIT", "SECRET", "PASSWORD", "KEY"))},
        "recall": {f"@{k}": round(statistics.mean(every[k]), 3) for k in KS},
        "recall_by_category": {name: {"questions": len(by_k[KS[0]]),
                                      **{f"@{k}": round(statistics.mean(by_k[k]), 3) for k in KS}}
                               for name, by_k in recall.items()},
        "search_latency_ms": {"p50": round(percentile(latencies, 50), 1), "p95": round(percentile(latencies, 95), 1)},
    }
    if arguments.context:
        results["context"] = {"candidates": arguments.context_candidates or "the API's default",
                              **context_summary(*contexts, context_by_category)}
    (Path(__file__).parent / (arguments.output or f"results-{mode}.json")).write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    if arguments.details:
        Path(arguments.details).write_text(json.dumps(details, indent=1) + "\n")


if __name__ == "__main__":
    main()
