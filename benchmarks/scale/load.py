"""What the scale benchmark loads: one organisation's memories and everything around them, in
proportion, written by COPY as the superuser (COPY cannot run under row-level security).

Memories are made in chunks of CHUNK, each from a generator seeded by its number, so the first
100,000 memories are the same whether a run stops there or goes on to 1,000,000, and an
organisation grows by appending chunks. Within a chunk the memories come in blocks of BLOCK (one
conversation: one namespace, one agent, a session or none); a block never straddles a chunk.

- Namespaces: the first `namespace_size` memories are one user's ("users/dana": the namespace
  of 10,000 inside the organisation, full before any other memory is loaded); after them a
  block is the shared namespace ("", the agents' own memory) one time in eight, else a user's
  ("users/u000123"), eight blocks (200 memories) per user.
- Vectors and texts: the search benchmark's corpus (benchmarks/search/run.py: MiniLM embeddings
  of docstring sentences, augmented beyond the 40,000 sentences), so nothing waits on the model.
- Around the memories, per memory: versions (every memory one, a change adds one), tags,
  entity links to the namespace's entities (and entities with aliases), relationships
  (temporal between a conversation's episodes, supersedes, supports, contradictions),
  retrieval events (one per 8 memories, each returning ten of one conversation's memories)
  with the usage they counted, provenance rows, sessions (7 blocks in 10) with their
  consolidation runs; archived, superseded, deleted, expiring, expired, decaying and
  protected memories; store items (4%, with keys). A few open items: memories waiting for
  review and open conflicts (20 + 10 + 10 in the first chunk, 1 + 1 + 1 in each later one).
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

CHUNK = 5_000
BLOCK = 25  # memories of one conversation
USER_BLOCKS = 8  # conversations per user
NAMESPACE = "users/dana"
SEED = 32  # issue 32
ID_SPACE = uuid.UUID("5ca1ab1e-0000-4000-8000-000000000032")  # uuid5 namespace of the loader's fixed ids

AGENTS = ("assistant", "support", "planner", "coach", "ingest")  # the first is the API key's
AGENT_SHARE = (0.40, 0.25, 0.15, 0.10, 0.10)
CATEGORIES = ("factual", "preference", "behavioral", "episodic", "procedural")
CATEGORY_SHARE = (0.45, 0.20, 0.10, 0.15, 0.10)
TAGS = ("travel", "food", "health", "work", "family", "finance", "music", "sport", "reading", "home", "garden",
        "car", "school", "kids", "pets", "birthday", "meeting", "project", "deadline", "weekend", "holiday",
        "allergy", "diet", "coffee", "tea", "movies", "books", "shopping", "gift", "doctor", "bank", "rent",
        "moving", "language", "course", "exam", "hiking", "cycling", "running", "cooking")
FIRST_NAMES = ("Alice", "Bruno", "Chen", "Dana", "Elif", "Farah", "Goran", "Hana", "Ivo", "Jonas", "Kemal", "Lena",
               "Marta", "Nils", "Olga", "Pavel", "Quinn", "Rosa", "Sami", "Tomas", "Uma", "Vera", "Wim", "Yara")
LAST_NAMES = ("Whitfield", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Novak", "Silva", "Brennan", "Kowalski",
              "Haddad", "Ferreira", "Nguyen", "Petrov", "Schmidt", "Rossi", "Duarte")
PLACES = ("Lisbon", "Porto", "Berlin", "Kyoto", "Oslo", "Nairobi", "Toronto", "Valencia", "Krakow", "Ghent",
          "Lyon", "Bergen", "Tallinn", "Seville", "Dublin", "Quito")
ORGANIZATIONS = ("Acme Corp", "Northwind Bank", "Globex Labs", "Initech", "Umbrella Health", "Stark Logistics",
                 "Wayne Foundation", "Hooli Cloud", "Vandelay Imports", "Cyberdyne Systems")
PROJECTS = ("Project Atlas", "Project Beacon", "Project Comet", "Project Delta", "Project Ember", "Project Fjord")
TOOLS = ("Postgres", "Kubernetes", "Figma", "Notion", "Excel", "Jira", "Slack", "Terraform")
KINDS = (("person", None), ("place", PLACES), ("organization", ORGANIZATIONS), ("project", PROJECTS),
         ("tool", TOOLS))

MEMORY_COLUMNS = (
    "id", "org_id", "agent_id", "content", "content_hash", "embedding", "embedding_model", "embedding_dimensions",
    "embedded_at", "category", "memory_type", "source", "status", "confidence", "usefulness_score", "importance",
    "sensitivity", "validation_status", "scope", "key", "provenance", "metadata", "decay_rate", "is_protected",
    "event_time", "expires_at", "ttl_seconds", "deleted_at", "version", "created_at", "updated_at", "session_id",
    "superseded_by", "reinforced_at", "indexed")
COLUMNS = {
    "sessions": ("id", "org_id", "agent_id", "scope", "external_id", "metadata", "started_at", "ended_at",
                 "consolidated_at", "consolidation"),
    "memories": MEMORY_COLUMNS,
    "memory_versions": ("id", "org_id", "memory_id", "version_num", "operation", "content", "category", "confidence",
                        "status", "metadata", "snapshot", "changed_by_type", "changed_by_agent_id", "change_reason",
                        "created_at"),
    "memory_tags": ("id", "org_id", "memory_id", "tag", "created_at"),
    "entities": ("id", "org_id", "scope", "kind", "name", "key", "summary", "attributes", "mention_count",
                 "first_seen_at", "last_seen_at"),
    "entity_aliases": ("id", "org_id", "entity_id", "alias", "key", "created_at"),
    "memory_entities": ("id", "org_id", "memory_id", "entity_id", "mention", "source", "role", "created_at"),
    "memory_relationships": ("id", "org_id", "source_id", "target_id", "relation_type", "predicate", "weight",
                             "confidence", "evidence", "metadata", "created_at"),
    "memory_duplicate_candidates": ("id", "org_id", "memory_id", "candidate_id", "similarity", "detected_at",
                                    "resolved_at", "resolution"),
    "retrieval_events": ("id", "org_id", "agent_id", "kind", "query", "scope", "filters", "returned_memory_ids",
                         "returned_scores", "returned_artifact_ids", "details", "created_at"),
    "memory_usage": ("id", "org_id", "memory_id", "retrieval_count", "last_retrieved_at"),
    "provenance": ("id", "org_id", "memory_id", "source_identity", "source_event", "details", "created_at"),
    "lifecycle_runs": ("id", "org_id", "job", "started_at", "finished_at", "counts"),
    "erasures": ("id", "org_id", "scope", "counts", "via", "created_at", "requested_by_agent_id"),
}
# The order of the COPYs: what a row refers to is loaded before it.
TABLES = tuple(COLUMNS)

# What a retrieval event records of its request, by kind (what a replay reads back).
REQUESTS = {"context": {"max_tokens": 1000, "candidates": 30, "encoding": "o200k_base", "order": "relevance"},
            "": {"limit": 10, "mode": "hybrid", "expand": 0}}
EMBEDDING_MODEL = "all-MiniLM-L6-v2"  # the model benchmarks/search's corpus was embedded with
PROBE_INDEX = 137  # a memory of the namespace the detail reads ask about (history, explain, ...)
PROBE_VERSIONS = 6
# Who made each kind of change (memory_versions.changed_by_type).
CHANGED_BY = {"create": "agent", "update": "agent", "delete": "agent", "supersede": "agent", "confirm": "user",
              "archive": "system"}


@dataclass
class Organisation:
    """The organisation being loaded, and the run's fixed choices."""

    org_id: str
    agents: dict  # name -> id
    namespace_size: int
    now: float  # the load's clock (epoch seconds): ages are counted back from it

    def agent(self, index: int) -> str:
        return self.agents[AGENTS[index]]


def fixed_id(*parts) -> uuid.UUID:
    return uuid.uuid5(ID_SPACE, "|".join(str(part) for part in parts))


def user_of_block(block: int, namespace_blocks: int) -> int:
    return (block - namespace_blocks) // USER_BLOCKS


def person_name(number: int) -> str:
    return f"{FIRST_NAMES[number % len(FIRST_NAMES)]} {LAST_NAMES[(number // len(FIRST_NAMES)) % len(LAST_NAMES)]}"


def namespace_entities(scope: str, number: int) -> list[tuple[uuid.UUID, str, str]]:
    """A namespace's entities (id, kind, name): its user, then people, places, organisations,
    projects and tools they talk about; the namespace of 10,000 has sixty."""
    rng = random.Random(f"{SEED}:{scope}")
    count = 60 if scope == NAMESPACE else 6
    names = [("person", "Dana Whitfield" if scope == NAMESPACE else person_name(number))]
    while len(names) < count:
        kind, pool = KINDS[rng.randrange(len(KINDS))]
        name = person_name(rng.randrange(10_000)) if pool is None else rng.choice(pool)
        if (kind, name) not in names:
            names.append((kind, name))
    return [(fixed_id(scope, kind, name), kind, name) for kind, name in names]


def shared_entities_until(end: int, namespace_size: int) -> int:
    """How many entities the shared namespace has once `end` memories are loaded: one per 400
    memories beyond the namespace of 10,000, at least 50."""
    return 0 if end <= namespace_size else 50 + (end - namespace_size) // 400


def shared_entity(number: int) -> tuple[uuid.UUID, str, str]:
    """The shared namespace's entity `number`: every fifth one of each kind, named from its
    pool (then numbered, once the pool is used up)."""
    kind, pool = KINDS[number % len(KINDS)]
    within = number // len(KINDS)
    if pool is None:
        names = len(FIRST_NAMES) * len(LAST_NAMES)
        name = person_name(within) + (f" {within // names + 1}" if within >= names else "")
    else:
        name = pool[within % len(pool)] + (f" {within // len(pool) + 1}" if within >= len(pool) else "")
    return fixed_id("shared", kind, name), kind, name


def name_key(name: str) -> str:
    # As memories.understanding.entities.name_key folds these plain names: lower case, single spaces.
    return " ".join(name.lower().split())


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


class Chunk:
    """The rows of memories [start, start + CHUNK) and of everything around them, per table."""

    def __init__(self, number: int, organisation: Organisation, texts: list[str], vectors: np.ndarray,
                 source: np.ndarray):
        self.number, self.o = number, organisation
        self.start = number * CHUNK
        self.rng = np.random.default_rng([SEED, number])
        self.ids = random.Random(SEED * 1_000_003 + number)
        self.rows: dict[str, list[tuple]] = {table: [] for table in TABLES}
        self.texts, self.vectors, self.source = texts, vectors, source
        self.build()

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(int=self.ids.getrandbits(128), version=4)

    # ----------------------------------------------------------------------- memories

    def build(self) -> None:
        o, rng, n = self.o, self.rng, CHUNK
        blocks = n // BLOCK
        block_of = np.arange(n) // BLOCK
        namespace_blocks = o.namespace_size // BLOCK
        first_block = self.start // BLOCK
        block_numbers = first_block + np.arange(blocks)

        # Per conversation: its namespace, agent, age, and session.
        shared = rng.random(blocks) < 1 / 8
        agent = rng.choice(len(AGENTS), blocks, p=AGENT_SHARE)
        age_days = 365 * rng.random(blocks) ** 1.7  # more of them recent
        has_session = rng.random(blocks) < 0.7
        closed = rng.random(blocks) < 0.9
        scopes, sessions = [], []
        for b, number in enumerate(block_numbers):
            if number < namespace_blocks:
                scopes.append(NAMESPACE)
            elif shared[b]:
                scopes.append("")
            else:
                scopes.append(f"users/u{user_of_block(number, namespace_blocks):06d}")
            probe_block = number == PROBE_INDEX // BLOCK
            sessions.append(self.uuid() if has_session[b] or probe_block else None)
            if probe_block:
                closed[b] = True
        # An hour back at least, so that no memory is clipped to the load's clock: memories
        # sharing a created_at beyond a page break the lists' cursors (DRF's cursor holds
        # created_at alone), as no real write makes them.
        self.block_started = o.now - 3600 - age_days * 86400
        for b, session in enumerate(sessions):
            if session is None:
                continue
            started = self.block_started[b]
            ended = at(started + 3600) if closed[b] else None
            self.rows["sessions"].append((
                session, o.org_id, o.agent(agent[b]), scopes[b], f"conversation-{block_numbers[b]}",
                '{"channel": "chat"}', at(started), ended, at(started + 3660) if closed[b] else None,
                json.dumps({"memories": BLOCK, "duplicate_pairs": 0, "summaries": 0}) if closed[b] else None))
            if closed[b]:
                self.rows["lifecycle_runs"].append((
                    self.uuid(), o.org_id, "consolidation", at(started + 3600), at(started + 3660),
                    json.dumps({"memories": BLOCK, "duplicate_pairs": 0, "summaries": 0})))

        # Per memory.
        category = rng.choice(len(CATEGORIES), n, p=CATEGORY_SHARE)
        episodic = category == 3
        working = ~episodic & (rng.random(n) < 0.15)
        scope_of = [scopes[b] for b in block_of]
        in_user_namespace = np.array([scope.startswith("users/") for scope in scope_of])
        store_item = ~episodic & ~working & in_user_namespace & (rng.random(n) < 0.04)
        roll = rng.random(n)
        status = np.where(roll < 0.04, "archived", np.where(roll < 0.07, "superseded", "active")).astype(object)
        deleted = rng.random(n) < 0.015
        protected = ~episodic & (rng.random(n) < 0.03)
        expired = working & (rng.random(n) < 0.1)
        extra_version = rng.random(n) < 0.15
        # Review and open conflicts: a few, not in proportion (operators keep the queues short).
        pending = rng.choice(n, 20 if self.number == 0 else 1, replace=False)
        status[store_item] = "active"
        deleted[store_item] = False
        status[pending] = "pending_review"
        deleted[pending] = False
        created = self.block_started[block_of] + np.arange(n) % BLOCK * 120 + rng.random(n) * 60
        created = np.minimum(created, o.now - 1)
        importance = np.round(rng.random(n), 3)
        confidence = np.round(0.5 + 0.5 * rng.random(n), 3)
        since_reinforced = 75 * rng.random(n) ** 3 * 86400
        sensitivity = rng.choice(["internal", "personal", "confidential"], n, p=[0.9, 0.08, 0.02])
        validation = rng.choice(["unverified", "verified", "rejected"], n, p=[0.89, 0.10, 0.01])
        probe = PROBE_INDEX - self.start if self.start <= PROBE_INDEX < self.start + n else None
        if probe is not None:
            category[probe], episodic[probe], working[probe], store_item[probe] = 0, False, False, False
            status[probe], deleted[probe], protected[probe], expired[probe] = "active", False, False, False

        ids = [self.uuid() for _ in range(n)]
        live = (status == "active") & ~deleted & ~expired
        usage_count: dict[int, int] = {}
        usage_last: dict[int, float] = {}
        self.events(ids, scope_of, live, created, agent, block_of, usage_count, usage_last)
        for i in range(n):
            number = self.start + i
            text = self.texts[self.source[i]]
            content = text if number < len(self.texts) else f"{text} (variant {number})"
            cat = CATEGORIES[category[i]]
            mtype = "episodic" if episodic[i] else "working" if working[i] else "semantic"
            key = f"item-{number}" if store_item[i] else None
            decaying = not (episodic[i] or store_item[i] or protected[i])
            decay_rate = 0.1 if decaying else 0.0
            made = created[i]
            reinforced = None
            if decaying and status[i] == "active" and o.now - since_reinforced[i] > made:
                reinforced = at(o.now - since_reinforced[i])
            expires = ttl = None
            if working[i]:
                expires = at(o.now - 3600 if expired[i] else o.now + (1 + 29 * rng.random()) * 86400)
                ttl = 30 * 86400
            operations = ["create"]
            if extra_version[i] or i == probe:
                operations += ["update"] * (PROBE_VERSIONS - 1 if i == probe else 1)
            if protected[i]:
                operations.append("confirm")
            if status[i] == "superseded":
                operations.append("supersede")
            elif status[i] == "archived":
                operations.append("archive")
            if deleted[i]:
                operations.append("delete")
            successor = ids[i + 1] if status[i] == "superseded" and i + 1 < n and block_of[i + 1] == block_of[i] \
                else None
            metadata = json.dumps({"text": content[:200], "kind": "note", "n": number}) if key else "{}"
            updated = made + 600 * (len(operations) - 1)
            agent_id = o.agent(agent[block_of[i]])
            session_id = sessions[block_of[i]]
            self.rows["memories"].append((
                ids[i], o.org_id, agent_id, content, f"{number:064x}", self.vectors[i], EMBEDDING_MODEL, 384,
                at(made), cat, mtype, "user_provided" if key else "extracted", status[i],
                1.0 if protected[i] else confidence[i], 0.5, importance[i], sensitivity[i],
                "verified" if protected[i] else validation[i], scope_of[i], key, "{}", metadata, decay_rate,
                bool(protected[i]), at(made - rng.random() * 172800) if episodic[i] else None, expires, ttl,
                at(updated) if deleted[i] else None, len(operations), at(made), at(updated), session_id, successor,
                reinforced, True))
            for version, operation in enumerate(operations, start=1):
                state = status[i] if version == len(operations) or status[i] == "pending_review" else "active"
                snapshot = {"memory_type": mtype, "scope": scope_of[i], "key": key, "importance": float(importance[i]),
                            "sensitivity": sensitivity[i], "is_protected": bool(protected[i]) and version >= 2,
                            "decay_rate": decay_rate, "session_id": str(session_id) if session_id else None,
                            "tags": []}
                by = CHANGED_BY[operation]
                self.rows["memory_versions"].append((
                    self.uuid(), o.org_id, ids[i], version, operation, content, cat, confidence[i], state, metadata,
                    json.dumps(snapshot), by, agent_id if by == "agent" else None,
                    "" if operation == "create" else f"{operation} (scale benchmark)", at(made + 600 * (version - 1))))
            if rng.random() < 0.10:
                self.rows["provenance"].append((self.uuid(), o.org_id, ids[i], f"agent:{AGENTS[agent[block_of[i]]]}",
                                                "conversation", '{"turn": %d}' % (i % BLOCK), at(made)))
            if i in usage_count:
                self.rows["memory_usage"].append((self.uuid(), o.org_id, ids[i], usage_count[i], at(usage_last[i])))
        self.tags(ids, created, store_item, probe)
        self.entities(ids, scope_of, created, block_numbers, namespace_blocks, probe)
        self.relationships(ids, status, live, deleted, episodic, block_of, created, probe)
        self.housekeeping()

    # ----------------------------------------------------------------------- around them

    def events(self, ids, scope_of, live, created, agent, block_of, usage_count, usage_last) -> None:
        """One retrieval event per 8 memories: ten memories of one conversation, best first."""
        o, rng = self.o, self.rng
        kinds = rng.choice(["search", "context", "retrieve", "namespace_search"], CHUNK // 8, p=[0.7, 0.15, 0.05, 0.1])
        for kind in kinds:
            b = int(rng.integers(0, CHUNK // BLOCK))
            members = [i for i in range(b * BLOCK, (b + 1) * BLOCK) if live[i]]
            if PROBE_INDEX // BLOCK == (self.start // BLOCK) + b and rng.random() < 0.9:
                members.insert(0, PROBE_INDEX - self.start)
            chosen = list(dict.fromkeys(members))[:10]
            if not chosen:
                continue
            moment = created[chosen].max() + rng.random() * 30 * 86400
            if moment >= o.now:  # none in the future, and no two at the same instant
                moment = o.now - rng.random() * 3600
            scores = sorted((round(float(s), 4) for s in rng.uniform(0.3, 0.9, len(chosen))), reverse=True)
            org_wide = rng.random() < 0.4
            scope = "" if org_wide else scope_of[chosen[0]]
            query = self.texts[int(rng.integers(0, len(self.texts)))]
            self.rows["retrieval_events"].append((
                self.uuid(), o.org_id, o.agent(agent[b]), kind, query, scope,
                json.dumps({"filters": {"namespace": scope} if scope else {}, "request": REQUESTS.get(kind, REQUESTS[""])}),
                [ids[i] for i in chosen], scores, [], json.dumps({"degraded": None, "vector_method": "hnsw"}),
                at(moment)))
            for i in chosen:
                usage_count[i] = usage_count.get(i, 0) + 1
                usage_last[i] = max(usage_last.get(i, 0.0), moment)

    def tags(self, ids, created, store_item, probe) -> None:
        rng = self.rng
        weights = 1 / np.arange(1, len(TAGS) + 1) ** 0.8
        weights /= weights.sum()
        for i in range(CHUNK):
            if store_item[i] or (rng.random() >= 0.35 and i != probe):
                continue
            for tag in dict.fromkeys(rng.choice(TAGS, int(rng.integers(1, 4)), p=weights)):
                self.rows["memory_tags"].append((self.uuid(), self.o.org_id, ids[i], str(tag), at(created[i])))

    def entities(self, ids, scope_of, created, block_numbers, namespace_blocks, probe) -> None:
        """The namespaces' entities (made in the chunk of their first memory) and the links of
        half the memories to one or two of their namespace's."""
        o, rng = self.o, self.rng
        made: list[tuple[uuid.UUID, str, str, str]] = []
        if self.start == 0:
            made += [(entity, kind, name, NAMESPACE) for entity, kind, name in namespace_entities(NAMESPACE, 0)]
        for number in block_numbers:
            if number >= namespace_blocks and (number - namespace_blocks) % USER_BLOCKS == 0:
                user = user_of_block(number, namespace_blocks)
                scope = f"users/u{user:06d}"
                made += [(entity, kind, name, scope) for entity, kind, name in namespace_entities(scope, user)]
        end = self.start + CHUNK
        shared_before = shared_entities_until(self.start, o.namespace_size)
        shared_now = shared_entities_until(end, o.namespace_size)
        made += [(*shared_entity(j), "") for j in range(shared_before, shared_now)]
        for entity, kind, name, scope in made:
            self.rows["entities"].append((entity, o.org_id, scope, kind, name, name_key(name), "", "{}", 0,
                                          at(o.now), at(o.now)))
            if kind == "person" and rng.random() < 0.3:
                first = name.split()[0]
                self.rows["entity_aliases"].append((self.uuid(), o.org_id, entity, first, name_key(first), at(o.now)))
        shared_weights = 1 / np.arange(1, shared_now + 1) ** 1.1 if shared_now else None
        if shared_weights is not None:
            shared_weights /= shared_weights.sum()
        namespace_weights = 1 / np.arange(1, 61) ** 1.1
        namespace_weights /= namespace_weights.sum()
        cache: dict[str, list] = {}
        for i in range(CHUNK):
            if rng.random() >= 0.5 and i != probe:
                continue
            scope = scope_of[i]
            links = 2 if rng.random() < 0.3 or i == probe else 1
            if scope == "":
                chosen = [shared_entity(int(j)) for j in rng.choice(shared_now, links, p=shared_weights)]
            else:
                if scope not in cache:
                    cache[scope] = namespace_entities(scope, 0 if scope == NAMESPACE else int(scope[-6:]))
                every = cache[scope]
                if scope == NAMESPACE:
                    chosen = [every[int(j)] for j in rng.choice(len(every), links, p=namespace_weights)]
                else:  # a user's: themselves often, else what they talk about
                    chosen = [every[0] if rng.random() < 0.4 else every[int(rng.integers(1, len(every)))]
                              for _ in range(links)]
            for entity, kind, name in dict.fromkeys(chosen):
                role = "speaker" if kind == "person" and rng.random() < 0.3 else "mentioned"
                self.rows["memory_entities"].append((self.uuid(), o.org_id, ids[i], entity, name, "extractor", role,
                                                     at(created[i])))

    def relationships(self, ids, status, live, deleted, episodic, block_of, created, probe) -> None:
        o, rng = self.o, self.rng
        edges: dict[tuple, tuple] = {}

        def edge(source: int, target: int, kind: str, predicate: str = "", metadata: str = "{}"):
            if source != target and (source, target, kind) not in edges:
                edges[(source, target, kind)] = (
                    self.uuid(), o.org_id, ids[source], ids[target], kind, predicate, 1.0, 0.8, "[]", metadata,
                    at(max(created[source], created[target])))

        previous_episode: dict[int, int] = {}
        for i in range(CHUNK):
            b = block_of[i]
            if episodic[i]:
                if b in previous_episode:
                    edge(previous_episode[b], i, "temporal", "next")
                previous_episode[b] = i
            if status[i] == "superseded" and i + 1 < CHUNK and block_of[i + 1] == b:
                edge(i + 1, i, "supersedes")
            if rng.random() < 0.05 or i == probe:
                other = int(b * BLOCK + rng.integers(0, BLOCK))
                edge(i, other, "supports" if rng.random() < 0.7 else "refines")
            if rng.random() < 0.001:  # a contradiction an operator resolved
                other = int(b * BLOCK + rng.integers(0, BLOCK))
                edge(i, other, "contradicts", "disagrees", json.dumps({"resolution": {
                    "resolution": "both_valid", "resolved_at": at(o.now).isoformat(), "resolved_by": None}}))
        open_pairs = 10 if self.number == 0 else 1
        candidates = [i for i in range(CHUNK) if live[i] and not deleted[i]]
        for _ in range(open_pairs):  # open contradictions
            first = candidates[int(rng.integers(0, len(candidates)))]
            same = [j for j in candidates if block_of[j] == block_of[first] and j != first]
            if same:
                edge(first, same[int(rng.integers(0, len(same)))], "contradicts", "disagrees")
        self.rows["memory_relationships"] = list(edges.values())
        pairs: set[tuple[int, int]] = set()
        resolved = int(CHUNK * 0.003)
        for number in range(resolved + open_pairs):
            first = candidates[int(rng.integers(0, len(candidates)))]
            same = [j for j in candidates if block_of[j] == block_of[first] and j != first]
            if not same:
                continue
            second = same[int(rng.integers(0, len(same)))]
            if (first, second) in pairs:
                continue
            pairs.add((first, second))
            detected = at(max(created[first], created[second]) + 60)
            done = number < resolved
            self.rows["memory_duplicate_candidates"].append((
                self.uuid(), o.org_id, ids[first], ids[second], round(float(rng.uniform(0.9, 0.99)), 4), detected,
                at(o.now - rng.random() * 86400 * 30) if done else None, "both_valid" if done else ""))

    def housekeeping(self) -> None:
        """The scheduled jobs' runs (30 nightly decays and a day of the per-minute expiry sweep,
        recorded once) and a few erasures."""
        o = self.o
        if self.number == 0:
            for day in range(30):
                finished = o.now - day * 86400 - 3600
                self.rows["lifecycle_runs"].append((self.uuid(), o.org_id, "decay", at(finished - 4), at(finished),
                                                    json.dumps({"decaying": 1000, "fading": 90, "archived": 3})))
            for minute in range(1440):
                finished = o.now - minute * 60
                self.rows["lifecycle_runs"].append((self.uuid(), o.org_id, "expiry", at(finished - 1), at(finished),
                                                    json.dumps({"expired": 0})))
        if self.number == 0 or self.number % 20 == 0:
            for _ in range(3 if self.number == 0 else 1):
                self.rows["erasures"].append((
                    self.uuid(), o.org_id, json.dumps({"namespace": f"users/erased-{self.uuid().hex[:8]}"}),
                    json.dumps({"memories": 12, "versions": 15}), "console", at(o.now - 86400 * 3),
                    o.agent(0)))


def chunk_vectors(number: int, texts: list[str], vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The chunk's vectors and the corpus sentence each comes from: the corpus' own first, then
    the search benchmark's augmentation (benchmarks.search.run.augmented), seeded by the chunk."""
    from benchmarks.search.run import augmented

    start, end, base = number * CHUNK, (number + 1) * CHUNK, len(vectors)
    own = np.arange(start, min(end, base))
    out, source = vectors[own], own
    if end > base:
        extra = end - max(start, base)
        made, made_source = augmented(vectors, base + extra, seed=1000 + number)
        out = np.concatenate([out, made[base:]])
        source = np.concatenate([source, made_source[base:]])
    return out, source
