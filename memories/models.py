"""The memory record and everything around it: versions, relationships, tags, artifacts,
retrieval events and provenance. docs/adr/0032 maps the specification's fields (docs/specification.md) onto these models.

Row-level security, the composite (org_id, id) keys, the vector index and the triggers live
in the migrations as SQL, written with memory_platform/schema.py.
"""


from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import F, Q
from pgvector.django import VectorField

from tenants.models import (
    Agent,
    ReferencedTenantModel,
    ReferencesClearedQuerySet,
    Session,
    TenantModel,
    tenant_fk,
    user_fk,
)

EMBEDDING_DIMENSIONS = 384

# A live memory: active and not deleted. The one definition, as an ORM filter and as SQL (the
# partial indexes are built on exactly this condition, so statements spell it the same way for
# the planner to match them).
LIVE = Q(status="active", deleted_at__isnull=True)


def live_sql(alias: str = "") -> str:
    """A live memory as SQL, for the memories row named `alias` (none: the table's own columns)."""
    row = f"{alias}." if alias else ""
    return f"{row}status = 'active' AND {row}deleted_at IS NULL"


LIVE_SQL = live_sql()

# A memory waiting for its embedding: stored without one, not deleted, and meant to be found by
# meaning (an unindexed store item never is). The embedding jobs and the partial index that
# serves them read this one definition.
EMBEDDING_PENDING = Q(embedding__isnull=True, deleted_at__isnull=True, indexed=True)


# What the final ranking reads of a memory's own row (memories.retrieval.ranking.RankingRow),
# also held by the covering index of live vectors so an exact search reads no heap row.
RANKING_MEMORY_COLUMNS = ("importance", "confidence", "created_at", "decay_rate", "reinforced_at")
# What memories.lifecycle.decay reads of a decaying memory (its strength's inputs, its expiry
# and namespace), also held by the index of decaying memories.
DECAYING_COLUMNS = ["id", "created_at", "reinforced_at", "decay_rate", "importance", "expires_at", "namespace"]


# The longest content a memory may hold, in characters (also a check constraint).
CONTENT_MAX_CHARS = 8192
# The longest namespace, its labels joined with "/" (the serializers and the console's forms read it).
NAMESPACE_MAX_CHARS = 256


def unit_interval(name: str, field: str) -> models.CheckConstraint:
    return models.CheckConstraint(condition=Q(**{f"{field}__gte": 0}) & Q(**{f"{field}__lte": 1}), name=name)


class MemoryCategory(models.TextChoices):
    FACTUAL = "factual"
    PREFERENCE = "preference"
    BEHAVIORAL = "behavioral"
    EPISODIC = "episodic"
    PROCEDURAL = "procedural"


class MemoryType(models.TextChoices):
    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"


class MemorySource(models.TextChoices):
    EXTRACTED = "extracted"
    USER_PROVIDED = "user_provided"
    IMPORTED = "imported"
    INFERRED = "inferred"


class MemoryStatus(models.TextChoices):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    MERGED = "merged"
    ARCHIVED = "archived"
    PENDING_REVIEW = "pending_review"


class MemoryValidationStatus(models.TextChoices):
    UNVERIFIED = "unverified"
    VERIFIED = "verified"
    REJECTED = "rejected"


class MemoryQuerySet(ReferencesClearedQuerySet):
    """Memories with their usage (retrieval_count, last_retrieved_at), read from memory_usage
    once the rows are loaded: one query per organisation among them, on its (org_id,
    memory_id) key. Not correlated subqueries in the statement, as before: on a Citus cluster a
    statement with those asks every shard, and a locking read with them is refused
    (docs/adr/0042). Filters and order never used them; values() and iterator() read no usage."""

    _with_usage = True

    def without_usage(self):
        """These memories without their usage, for a caller that has it already and sets it on
        them (a search reads it for its ranking); unset, they read 0 and None."""
        clone = self._chain()
        clone._with_usage = False
        return clone

    def _clone(self):
        clone = super()._clone()
        clone._with_usage = self._with_usage
        return clone

    def _fetch_all(self):
        loading = self._result_cache is None
        super()._fetch_all()
        if loading and self._with_usage and self._iterable_class is models.query.ModelIterable:
            read_usage(self._result_cache, using=self.db)


def read_usage(memories: list, *, using: str = "default") -> None:
    """Set each memory's retrieval_count and last_retrieved_at from memory_usage."""
    by_org: dict = {}
    for memory in memories:
        by_org.setdefault(memory.org_id, []).append(memory)
    for org_id, rows in by_org.items():
        usage = {memory_id: (count, last) for memory_id, count, last in MemoryUsage.objects.using(using).filter(
            org_id=org_id, memory_id__in=[memory.pk for memory in rows]).values_list(
            "memory_id", "retrieval_count", "last_retrieved_at")}
        for memory in rows:
            memory.retrieval_count, memory.last_retrieved_at = usage.get(memory.pk, (0, None))


class MemoryManager(models.Manager.from_queryset(MemoryQuerySet)):
    """Memories with their usage (MemoryQuerySet)."""


class Memory(ReferencedTenantModel):
    Category = MemoryCategory
    MemoryType = MemoryType
    Source = MemorySource
    Status = MemoryStatus
    ValidationStatus = MemoryValidationStatus

    agent = tenant_fk(Agent, related_name="memories")
    session = tenant_fk(Session, null=True, related_name="memories")

    # Content
    content = models.TextField()
    content_hash = models.CharField(max_length=64, help_text="SHA-256 hex of the normalised content.")
    # Maintained by PostgreSQL from content; ts_rank_cd ranks by its positions. Full text finds
    # its matches through tenant_lexemes, a column of the table the model leaves out: the same
    # lexemes tagged with the organisation, with the GIN index (migration 0013).
    search_vector = models.GeneratedField(
        expression=SearchVector("content", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    # Null while the embedding is pending (written before the model ran, completed by a job).
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=128, blank=True, default="")
    embedding_dimensions = models.PositiveSmallIntegerField(null=True, blank=True)
    embedded_at = models.DateTimeField(null=True, blank=True)
    # False: kept out of search by meaning, never embedded (a LangGraph store item put with
    # index=False, or whose indexed fields hold no text; docs/adr/0040). Not pending either:
    # no job embeds it, and a vector it had goes when it is written so.
    indexed = models.BooleanField(default=True, db_default=True)

    # Classification
    category = models.CharField(max_length=16, choices=Category.choices)
    memory_type = models.CharField(max_length=16, choices=MemoryType.choices, default=MemoryType.SEMANTIC)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.EXTRACTED)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)

    # Quality signals, all in [0, 1]
    confidence = models.DecimalField(max_digits=4, decimal_places=3, default=0.8)
    usefulness_score = models.DecimalField(max_digits=4, decimal_places=3, default=0.5)
    importance = models.DecimalField(max_digits=4, decimal_places=3, default=0.0)

    # Governance (spec §2)
    sensitivity = models.CharField(max_length=64, default="internal")
    validation_status = models.CharField(
        max_length=16, choices=ValidationStatus.choices, default=ValidationStatus.UNVERIFIED
    )
    # Spec §2's scope string and spec §3's namespace tuple, joined with "/" (column: scope).
    namespace = models.CharField(max_length=NAMESPACE_MAX_CHARS, blank=True, default="", db_column="scope")
    key = models.CharField(max_length=256, null=True, blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    # Usage (drives ranking and decay). retrieval_count and last_retrieved_at live in
    # memory_usage (MemoryUsage), not in this row: they change on every retrieval, and each
    # change of a memory row is a new row version with an entry in each of its indexes (HNSW
    # and GIN included) and a page that index-only scans must read from the heap again
    # (docs/adr/0035). The default manager reads them; a memory made here has none yet.
    retrieval_count = 0
    last_retrieved_at = None
    last_injected_at = models.DateTimeField(null=True, blank=True)

    # Decay (spec §4; memories.lifecycle.strength): confirmed memories are protected and do not decay.
    decay_rate = models.FloatField(default=0.1)
    is_protected = models.BooleanField(default=False)
    # When the decay clock last restarted other than by a retrieval: changed, confirmed,
    # approved, restored or unarchived (None: when it was written).
    reinforced_at = models.DateTimeField(null=True, blank=True)

    # Bi-temporal validity (spec §4): when the fact holds, and when the event happened.
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_until = models.DateTimeField(null=True, blank=True)
    event_time = models.DateTimeField(null=True, blank=True)

    # Lifecycle
    superseded_by = tenant_fk("self", null=True, db_column="superseded_by")
    merged_into = tenant_fk("self", null=True, db_column="merged_into")
    expires_at = models.DateTimeField(null=True, blank=True)
    # The time to live it was written with, in seconds: a read that refreshes it (refresh_ttl)
    # moves expires_at that far from now again.
    ttl_seconds = models.PositiveIntegerField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    # Optimistic concurrency: bumped with every change, matched against If-Match.
    version = models.PositiveIntegerField(default=1)

    created_at = models.DateTimeField(auto_now_add=True, db_default=models.functions.Now())
    updated_at = models.DateTimeField(auto_now=True, db_default=models.functions.Now())

    objects = MemoryManager()

    class Meta:
        base_manager_name = "objects"  # related lookups (a version's memory...) read the usage too
        db_table = "memories"
        ordering = ["-created_at"]
        verbose_name_plural = "memories"
        indexes = [
            # Context assembly: an agent's live memories, newest first.
            models.Index(F("org"), F("agent"), F("created_at").desc(), condition=LIVE, name="memories_agent_live"),
            models.Index(
                F("org"), F("agent"), F("category"), F("created_at").desc(),
                condition=Q(deleted_at__isnull=True), name="memories_agent_category",
            ),
            models.Index(fields=["org", "status", "-created_at"], name="memories_org_status_created"),
            # The store's items without a query (LangGraph's search), the last updated first.
            models.Index(F("org"), F("updated_at").desc(), F("id"),
                         condition=Q(key__isnull=False, deleted_at__isnull=True), name="memories_store_recent"),
            # The list of memories (API, console), newest first or oldest, paged by key
            # (memories.keyset); deleted rows in it too, for the lists that include them.
            models.Index(F("org"), F("created_at").desc(), F("id").desc(), name="memories_org_recent"),
            # The console's other sorts, paged by key the same way (memories migration 0041).
            models.Index(F("org"), F("confidence").desc(), F("created_at").desc(), F("id").desc(),
                         name="memories_org_confidence"),
            models.Index(F("org"), F("importance").desc(), F("created_at").desc(), F("id").desc(),
                         name="memories_org_importance"),
            models.Index(F("org"), F("updated_at").desc(), F("id").desc(), name="memories_org_changed"),
            # The namespaces that hold store items, walked one distinct namespace at a time
            # (LangGraph's list_namespaces: memories.store.reads.NAMESPACES_SQL).
            models.Index(F("org"), OpClass("namespace", name="varchar_pattern_ops"),
                         condition=Q(key__isnull=False, deleted_at__isnull=True), name="memories_store_namespaces"),
            # A namespace's live memories in the order they were written: a search's
            # neighbours signal steps one memory back and forth from each of its best results.
            models.Index(fields=["org", "namespace", "created_at", "id"], condition=LIVE,
                         name="memories_namespace_order"),
            # A session's memories (memories.retrieval.sessions): one namespace, one event time.
            models.Index(fields=["org", "namespace", "event_time"], condition=LIVE,
                         name="memories_namespace_event_time"),
            models.Index(
                F("org"), OpClass("namespace", name="varchar_pattern_ops"),
                condition=Q(deleted_at__isnull=True), name="memories_scope_prefix",
            ),
            # Every memory of a namespace, whatever its status: what an erasure of it takes and
            # its count (memories.lifecycle.erasure.memory_count, docs/adr/0052).
            models.Index(F("org"), OpClass("namespace", name="varchar_pattern_ops"), name="memories_namespace_all"),
            # The deleted memories' ids: with the tallies of the others, every memory an
            # organisation holds (memories.lifecycle.tallies.memories_held), and the relationships
            # the stats leave out (docs/adr/0056).
            models.Index(fields=["org", "id"], condition=Q(deleted_at__isnull=False), name="memories_deleted"),
            models.Index(
                fields=["expires_at"], condition=Q(expires_at__isnull=False, deleted_at__isnull=True),
                name="memories_expiring",
            ),
            # The live memories that decay, with what their strength is computed from: the weak
            # list, the strength bands and the nightly decay read only this index (an index-only
            # scan of ~35 bytes a row, where the table's rows are ~4 kB with their vector); a
            # namespace's as a range of it (memories migration 0052).
            models.Index(fields=["org", "namespace"], opclasses=["uuid_ops", "varchar_pattern_ops"],
                         include=[column for column in DECAYING_COLUMNS if column != "namespace"],
                         condition=LIVE & Q(decay_rate__gt=0), name="memories_decaying_namespaces"),
            models.Index(
                fields=["org", "created_at"], condition=EMBEDDING_PENDING, name="memories_embedding_pending",
            ),
            # Vectors of a model that is no longer the active one (written across a switch): the
            # embedding sweep's question, across organisations, and the switch's last step's
            # (deleted memories too), answered without a scan (memories migration 0059).
            models.Index(fields=["embedding_model"], condition=Q(embedding__isnull=False), name="memories_vector_model"),
            # Exact vector search of a tenant's live memories reads only this index (an
            # index-only scan): ~1 µs a row instead of ~3 for heap rows, and the columns the
            # ranking reads of the rows it returns (docs/adr/0035; RANKING_MEMORY_COLUMNS).
            models.Index(
                fields=["org"], include=["id", "embedding", "expires_at", *RANKING_MEMORY_COLUMNS],
                condition=LIVE & Q(embedding__isnull=False), name="memories_live_vectors",
            ),
        ]
        constraints = [
            # Exact dedup (spec §0) for free-form memories, within one agent's namespace: a
            # namespace is an end user's boundary, and the same sentence kept for two users is
            # two memories (docs/architecture.md, "Namespaces"). Keyed store items (spec §3)
            # are identified, and upserted, by their key instead (docs/adr/0032).
            models.UniqueConstraint(
                fields=["org", "agent", "namespace", "content_hash"], condition=LIVE & Q(key__isnull=True),
                name="memories_content_hash_live_unique",
            ),
            models.UniqueConstraint(
                fields=["org", "namespace", "key"], condition=Q(key__isnull=False, deleted_at__isnull=True),
                name="memories_scope_key_live_unique",
            ),
            models.CheckConstraint(condition=Q(content__length__gt=0), name="memories_content_not_empty"),
            models.CheckConstraint(condition=Q(indexed=True) | Q(embedding__isnull=True),
                                   name="memories_unindexed_has_no_vector"),
            models.CheckConstraint(condition=Q(content__length__lte=CONTENT_MAX_CHARS),
                                  name="memories_content_max_length"),
            models.CheckConstraint(
                condition=Q(content_hash__regex=r"^[0-9a-f]{64}$"), name="memories_content_hash_is_sha256"
            ),
            models.CheckConstraint(
                condition=Q(category__in=MemoryCategory.values), name="memories_category_valid"
            ),
            models.CheckConstraint(
                condition=Q(memory_type__in=MemoryType.values), name="memories_memory_type_valid"
            ),
            models.CheckConstraint(condition=Q(source__in=MemorySource.values), name="memories_source_valid"),
            models.CheckConstraint(condition=Q(status__in=MemoryStatus.values), name="memories_status_valid"),
            models.CheckConstraint(
                condition=Q(validation_status__in=MemoryValidationStatus.values), name="memories_validation_status_valid"
            ),
            unit_interval("memories_confidence_range", "confidence"),
            unit_interval("memories_usefulness_range", "usefulness_score"),
            unit_interval("memories_importance_range", "importance"),
            models.CheckConstraint(
                condition=~Q(status="active", superseded_by__isnull=False), name="memories_superseded_or_active"
            ),
            models.CheckConstraint(
                condition=Q(sensitivity__length__gt=0), name="memories_sensitivity_not_empty"
            ),
            models.CheckConstraint(condition=Q(key__isnull=True) | Q(key__length__gt=0), name="memories_key_not_empty"),
            models.CheckConstraint(condition=Q(decay_rate__gte=0), name="memories_decay_rate_non_negative"),
            models.CheckConstraint(condition=Q(ttl_seconds__isnull=True) | Q(ttl_seconds__gt=0, expires_at__isnull=False),
                                   name="memories_ttl_positive_and_expiring"),
            models.CheckConstraint(
                condition=Q(is_protected=False) | Q(decay_rate=0), name="memories_protected_do_not_decay"
            ),
            models.CheckConstraint(
                condition=Q(valid_until__isnull=True) | Q(valid_from__isnull=True)
                | Q(valid_until__gte=F("valid_from")),
                name="memories_validity_ordered",
            ),
            models.CheckConstraint(
                condition=(Q(embedding__isnull=True) & Q(embedding_dimensions__isnull=True))
                | (Q(embedding__isnull=False, embedding_dimensions__isnull=False)
                   & Q(embedding_dimensions=EMBEDDING_DIMENSIONS) & ~Q(embedding_model="")),
                name="memories_embedding_described",
            ),
            models.CheckConstraint(condition=~Q(superseded_by=F("id")), name="memories_not_superseded_by_itself"),
            models.CheckConstraint(condition=~Q(merged_into=F("id")), name="memories_not_merged_into_itself"),
        ]

    def __str__(self) -> str:
        return self.content[:80]

    @property
    def is_live(self) -> bool:
        """Whether this memory is live (LIVE): active and not deleted."""
        return self.status == Memory.Status.ACTIVE and self.deleted_at is None


class VersionOperation(models.TextChoices):
    CREATE = "create"
    UPDATE = "update"
    SUPERSEDE = "supersede"
    MERGE = "merge"
    ARCHIVE = "archive"
    DELETE = "delete"
    RESTORE = "restore"
    CONFIRM = "confirm"
    REVIEW = "review"


class VersionChangedByType(models.TextChoices):
    EXTRACTION = "extraction"
    USER = "user"
    AGENT = "agent"
    SYSTEM = "system"
    CONFLICT_RESOLUTION = "conflict_resolution"


class MemoryVersion(TenantModel):
    """One immutable row per change to a memory: a snapshot plus who changed it and why."""

    Operation = VersionOperation
    ChangedByType = VersionChangedByType

    memory = tenant_fk(Memory, related_name="versions")
    version_num = models.PositiveIntegerField()
    operation = models.CharField(max_length=16, choices=Operation.choices)

    # Snapshot of the memory at this version (spec §0's columns, then the rest as JSON).
    content = models.TextField()
    category = models.CharField(max_length=16)
    confidence = models.DecimalField(max_digits=4, decimal_places=3)
    status = models.CharField(max_length=16)
    metadata = models.JSONField(default=dict, blank=True)
    snapshot = models.JSONField(default=dict, blank=True, help_text="Every other field of the memory.")

    # Who and why
    changed_by_type = models.CharField(max_length=24, choices=ChangedByType.choices)
    changed_by_agent = tenant_fk(Agent, null=True, db_column="changed_by_agent_id")
    changed_by_user = user_fk(null=True)
    change_reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_default=models.functions.Now())

    class Meta:
        db_table = "memory_versions"
        ordering = ["memory", "version_num"]
        constraints = [
            models.UniqueConstraint(fields=["org", "memory", "version_num"], name="memory_versions_num_unique"),
            models.CheckConstraint(condition=Q(operation__in=VersionOperation.values), name="memory_versions_operation_valid"),
            models.CheckConstraint(
                condition=Q(changed_by_type__in=VersionChangedByType.values), name="memory_versions_changed_by_valid"
            ),
            models.CheckConstraint(condition=Q(version_num__gte=1), name="memory_versions_num_positive"),
        ]


class RelationshipRelationType(models.TextChoices):
    SUPPORTS = "supports"
    CONTRADICTS = "contradicts"
    SUPERSEDES = "supersedes"
    REFINES = "refines"
    CO_OCCURS = "co_occurs"
    DERIVED_FROM = "derived_from"
    TEMPORAL = "temporal"
    CAUSAL = "causal"
    ENTITY = "entity"


class MemoryRelationship(TenantModel):
    RelationType = RelationshipRelationType

    source = tenant_fk(Memory, related_name="outgoing_relationships")
    target = tenant_fk(Memory, related_name="incoming_relationships")
    relation_type = models.CharField(max_length=16, choices=RelationType.choices)
    predicate = models.CharField(max_length=128, blank=True, default="")
    weight = models.FloatField(default=1.0)
    confidence = models.DecimalField(max_digits=4, decimal_places=3, default=0.8)
    evidence = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_default=models.functions.Now())

    class Meta:
        db_table = "memory_relationships"
        indexes = [
            models.Index(fields=["org", "source"], name="memory_relationships_source"),
            models.Index(fields=["org", "target"], name="memory_relationships_target"),
            models.Index(fields=["org", "relation_type"], name="memory_relationships_type"),
            # The open contradictions in the conflicts page's order (memories.writes.conflicts).
            models.Index(fields=["org", "created_at", "id"],
                         condition=Q(relation_type=RelationshipRelationType.CONTRADICTS) & ~Q(metadata__has_key="resolution"),
                         name="relationships_open_contradicts"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["org", "source", "target", "relation_type"], name="memory_relationships_unique_per_type"
            ),
            models.CheckConstraint(condition=~Q(source=F("target")), name="memory_relationships_no_self_loop"),
            models.CheckConstraint(
                condition=Q(relation_type__in=RelationshipRelationType.values), name="memory_relationships_type_valid"
            ),
            unit_interval("memory_relationships_confidence_range", "confidence"),
        ]


class MemoryTag(TenantModel):
    memory = tenant_fk(Memory, related_name="tags")
    tag = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True, db_default=models.functions.Now())

    class Meta:
        db_table = "memory_tags"
        ordering = ["tag"]
        indexes = [models.Index(fields=["org", "tag"], name="memory_tags_lookup")]
        constraints = [
            models.UniqueConstraint(fields=["org", "memory", "tag"], name="memory_tags_unique"),
            models.CheckConstraint(
                condition=Q(tag__length__gte=1) & Q(tag__length__lte=64), name="memory_tags_length"
            ),
        ]


class MemoryUsage(TenantModel):
    """How often a memory was retrieved, and when last: counted in Redis after each search and
    written here in batches (memories/retrieval/events.py flush_retrievals), one narrow row per
    retrieved memory, so a retrieval never rewrites the memory's own row."""

    memory = tenant_fk(Memory, related_name="+")
    retrieval_count = models.PositiveIntegerField(default=0)
    last_retrieved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "memory_usage"
        constraints = [models.UniqueConstraint(fields=["org", "memory"], name="memory_usage_unique")]
        # The console's "Most retrieved" sort, paged by key (memories migration 0041).
        indexes = [models.Index(F("org"), F("retrieval_count").desc(), F("memory").desc(),
                                name="memory_usage_most_retrieved")]


class EmbeddingModelState(models.TextChoices):
    BUILDING = "building"  # its vectors are being made, or a build stopped before it finished
    READY = "ready"  # every memory had a vector of it when its build finished
    # Its vectors are moving into memories.embedding, a batch at a time, while searches still
    # compare with the active model's wherever they are (memories.lifecycle.reembed, ADR-0050).
    SWITCHING = "switching"
    ACTIVE = "active"  # memories.embedding holds its vectors: searches compare with them
    RETIRED = "retired"  # was active; its vectors are kept in memory_embeddings, to roll back to


class EmbeddingModel(models.Model):
    """An embedding model's standing in this deployment (memories.lifecycle.reembed): exactly
    one is active, the rest are being built, ready to switch to, or kept to roll back to. The
    deployment's, not an organisation's: every process reads the active one
    (memories.vectors.embeddings.active_model), and only the service account may change a row."""

    State = EmbeddingModelState

    name = models.CharField(max_length=128, primary_key=True, help_text="Its name in memories.vectors.embeddings.KNOWN_MODELS.")
    state = models.CharField(max_length=16, choices=State.choices)
    memories_total = models.PositiveIntegerField(default=0, help_text="Memories to embed, when last counted.")
    memories_done = models.PositiveIntegerField(default=0, help_text="Of them, those with a vector of this model.")
    # What is under way for it: "build" or "activate" (and the queued job's id, when the console
    # started it); empty when nothing is. A process that stopped leaves it set: the console
    # tells that from one running by the lock a running one holds.
    task = models.CharField(max_length=16, blank=True, default="")
    job_id = models.CharField(max_length=64, blank=True, default="")
    error = models.TextField(blank=True, default="", help_text="Why the last build or switch stopped, if it failed.")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True, help_text="When its last build finished.")
    activated_at = models.DateTimeField(null=True, blank=True)
    retired_at = models.DateTimeField(null=True, blank=True)
    replaced = models.CharField(max_length=128, blank=True, default="",
                                help_text="The model that was active before this one: a rollback's target.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "embedding_models"
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["state"], condition=Q(state="active"), name="embedding_models_one_active"),
            models.CheckConstraint(condition=Q(state__in=EmbeddingModelState.values),
                                   name="embedding_models_state_valid"),
            models.CheckConstraint(condition=Q(task__in=["", "build", "activate"]), name="embedding_models_task_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.state})"


class MemoryEmbedding(TenantModel):
    """A memory's vector by a model that is not the active one: the model being built before a
    switch, or the one switched from, kept to roll back to (memories.lifecycle.reembed). The
    active model's vector is the memory's own (Memory.embedding), which searches read."""

    memory = tenant_fk(Memory, related_name="+")
    model = models.CharField(max_length=128)
    dimensions = models.PositiveSmallIntegerField(default=EMBEDDING_DIMENSIONS)
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS)
    # The exact text embedded, not the memory's normalised content_hash: a cased model tells
    # "Tea" from "tea". A vector whose text differs from the memory's content is stale.
    text_hash = models.CharField(max_length=64, help_text="SHA-256 hex of the exact text embedded.")
    embedded_at = models.DateTimeField()

    class Meta:
        db_table = "memory_embeddings"
        constraints = [
            # org_id leads: a switch reads one model's vectors of every memory (by org, model).
            models.UniqueConstraint(fields=["org", "model", "memory"], name="memory_embeddings_unique"),
            models.CheckConstraint(condition=Q(dimensions=EMBEDDING_DIMENSIONS), name="memory_embeddings_dimensions"),
            models.CheckConstraint(condition=~Q(model=""), name="memory_embeddings_model_named"),
            models.CheckConstraint(condition=Q(text_hash__regex=r"^[0-9a-f]{64}$"),
                                   name="memory_embeddings_text_hash_is_sha256"),
        ]


class Artifact(TenantModel):
    """A pointer to external evidence (spec §2): never the bytes themselves."""

    namespace = models.CharField(max_length=NAMESPACE_MAX_CHARS, blank=True, default="", db_column="scope")
    sha256 = models.CharField(max_length=64)
    storage_uri = models.TextField()
    artifact_type = models.CharField(max_length=64)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_default=models.functions.Now())

    class Meta:
        db_table = "artifacts"
        indexes = [models.Index(fields=["org", "namespace"], name="artifacts_scope")]
        constraints = [
            models.CheckConstraint(condition=Q(sha256__regex=r"^[0-9a-f]{64}$"), name="artifacts_sha256_is_hex"),
            models.CheckConstraint(condition=Q(storage_uri__length__gt=0), name="artifacts_storage_uri_not_empty"),
            models.CheckConstraint(condition=Q(artifact_type__length__gt=0), name="artifacts_type_not_empty"),
        ]


class MemoryArtifact(TenantModel):
    """Links a memory to an artifact. Its namespace is held equal to both ends' namespace by
    composite foreign keys, so an artifact can only be linked within its own namespace."""

    memory = tenant_fk(Memory, related_name="artifact_links")
    artifact = tenant_fk(Artifact, related_name="memory_links")
    namespace = models.CharField(max_length=NAMESPACE_MAX_CHARS, blank=True, default="", db_column="scope")
    created_at = models.DateTimeField(auto_now_add=True, db_default=models.functions.Now())

    class Meta:
        db_table = "memory_artifacts"
        indexes = [models.Index(fields=["org", "artifact"], name="memory_artifacts_artifact")]
        constraints = [
            models.UniqueConstraint(fields=["org", "memory", "artifact"], name="memory_artifacts_unique"),
        ]


class RetrievalEventKind(models.TextChoices):
    SEARCH = "search"
    RETRIEVE = "retrieve"
    NAMESPACE_SEARCH = "namespace_search"
    REPLAY = "replay"
    CONTEXT = "context"  # a context assembly: the memories put in a prompt


class RetrievalEvent(ReferencedTenantModel):
    """What a caller was shown, in order, for audit and replay (spec §2). Append-only."""

    Kind = RetrievalEventKind

    kind = models.CharField(max_length=24, choices=Kind.choices)
    agent = tenant_fk(Agent, null=True, related_name="retrieval_events")
    user = user_fk(null=True)
    query = models.TextField()
    namespace = models.CharField(max_length=NAMESPACE_MAX_CHARS, blank=True, default="", db_column="scope")
    filters = models.JSONField(default=dict, blank=True)
    returned_memory_ids = ArrayField(models.UUIDField(), default=list, blank=True)
    returned_scores = ArrayField(models.FloatField(), default=list, blank=True)
    returned_artifact_ids = ArrayField(models.UUIDField(), default=list, blank=True)
    # Per-result signal detail (vector / full-text rank and score) for the console.
    details = models.JSONField(default=dict, blank=True)
    replay_of = tenant_fk("self", null=True, db_column="replay_of")
    created_at = models.DateTimeField(auto_now_add=True, db_default=models.functions.Now())

    class Meta:
        db_table = "retrieval_events"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["org", "-created_at"], name="retrieval_events_recent"),
            models.Index(fields=["org", "agent", "-created_at"], name="retrieval_events_agent"),
            # The searches that returned a memory: explain's, and an erasure's (docs/adr/0052),
            # read once per memory: no pending list to read each time (migration 0057).
            GinIndex(fields=["returned_memory_ids"], name="retrieval_events_returned", fastupdate=False),
            # Those asked in a namespace, which an erasure of it takes (namespace_sql's bounds).
            models.Index(F("org"), OpClass("namespace", name="varchar_pattern_ops"), name="retrieval_events_namespace"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=RetrievalEventKind.values), name="retrieval_events_kind_valid"),
            models.CheckConstraint(
                condition=Q(returned_scores__len=models.Func(F("returned_memory_ids"), function="cardinality")),
                name="retrieval_events_one_score_per_id",
            ),
        ]


class Provenance(TenantModel):
    """Lineage of exactly one memory, artifact or retrieval event (spec §2)."""

    memory = tenant_fk(Memory, null=True, related_name="provenance_records")
    artifact = tenant_fk(Artifact, null=True, related_name="provenance_records")
    retrieval_event = tenant_fk(RetrievalEvent, null=True, related_name="provenance_records")
    source_identity = models.CharField(max_length=256, blank=True, default="")
    source_event = models.CharField(max_length=256, blank=True, default="")
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_default=models.functions.Now())

    class Meta:
        db_table = "provenance"
        indexes = [
            models.Index(fields=["org", "memory"], name="provenance_memory"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    Q(memory__isnull=False, artifact__isnull=True, retrieval_event__isnull=True)
                    | Q(memory__isnull=True, artifact__isnull=False, retrieval_event__isnull=True)
                    | Q(memory__isnull=True, artifact__isnull=True, retrieval_event__isnull=False)
                ),
                name="provenance_exactly_one_subject",
            ),
        ]


class DuplicateCandidate(TenantModel):
    """A live memory found close to a newly written one (cosine similarity at or above
    MEMORY_PLATFORM["NEAR_DUPLICATE_SIMILARITY"], same agent and namespace), waiting for review."""

    memory = tenant_fk(Memory, related_name="duplicate_candidates")
    candidate = tenant_fk(Memory, related_name="+")
    similarity = models.FloatField()
    detected_at = models.DateTimeField(auto_now_add=True, db_default=models.functions.Now())
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution = models.CharField(max_length=32, blank=True, default="")

    class Meta:
        db_table = "memory_duplicate_candidates"
        indexes = [
            models.Index(
                fields=["org", "-detected_at"], condition=Q(resolved_at__isnull=True), name="duplicate_candidates_open"
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["org", "memory", "candidate"], name="duplicate_candidates_unique"),
            models.CheckConstraint(condition=~Q(memory=F("candidate")), name="duplicate_candidates_not_itself"),
            models.CheckConstraint(
                condition=Q(similarity__gte=-1) & Q(similarity__lte=1), name="duplicate_candidates_similarity_range"
            ),
        ]


class IdempotencyRecord(TenantModel):
    """The first response to a POST carrying an Idempotency-Key, replayed for retries."""

    agent = tenant_fk(Agent, related_name="+")
    key = models.CharField(max_length=255)
    request_fingerprint = models.CharField(max_length=64, help_text="SHA-256 of method, path and body.")
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_default=models.functions.Now())

    class Meta:
        db_table = "idempotency_records"
        indexes = [models.Index(fields=["created_at"], name="idempotency_records_created")]
        constraints = [
            models.UniqueConstraint(fields=["org", "agent", "key"], name="idempotency_records_unique"),
        ]


class EntityKind(models.TextChoices):
    PERSON = "person"
    PLACE = "place"
    ORGANIZATION = "organization"
    DATE = "date"
    QUANTITY = "quantity"
    PROJECT = "project"
    CONCEPT = "concept"
    TOOL = "tool"


class Entity(TenantModel):
    """Someone or something memories speak of (spec §4's entities): a person, a place, an
    organisation, a date, a quantity... one per name and kind within a namespace, as memories
    are kept per namespace (the same "Caroline" remembered for two end users is two entities).
    Found in memories by the extractor (memories.understanding.entities) or named by the agent on write."""

    Kind = EntityKind

    namespace = models.CharField(max_length=NAMESPACE_MAX_CHARS, blank=True, default="", db_column="scope")  # as a memory's
    kind = models.CharField(max_length=16, choices=Kind.choices)
    name = models.CharField(max_length=256)  # canonical: the longest form seen ("Melanie", not "Mel")
    key = models.CharField(max_length=256, help_text="The name folded for matching (memories.understanding.entities.name_key).")
    summary = models.TextField(blank=True, default="")
    attributes = models.JSONField(default=dict, blank=True)
    mention_count = models.PositiveIntegerField(default=0)
    first_seen_at = models.DateTimeField(auto_now_add=True, db_default=models.functions.Now())
    last_seen_at = models.DateTimeField(auto_now_add=True, db_default=models.functions.Now())

    class Meta:
        db_table = "entities"
        indexes = [
            models.Index(fields=["org", "namespace", "-mention_count"], name="entities_scope_mentions"),
            # The list of entities, the most mentioned first, paged by key over the ties (memories.keyset).
            models.Index(F("org"), F("mention_count").desc(), F("id").desc(), name="entities_org_mentions"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["org", "namespace", "kind", "key"], name="entities_unique_name"),
            models.CheckConstraint(condition=Q(kind__in=EntityKind.values), name="entities_kind_valid"),
        ]

    def __str__(self):
        return f"{self.name} ({self.kind})"


class EntityAlias(TenantModel):
    """Another name an entity goes by ("Mel" for Melanie); a mention of it is the entity."""

    entity = tenant_fk(Entity, related_name="aliases")
    alias = models.CharField(max_length=256)
    key = models.CharField(max_length=256)
    created_at = models.DateTimeField(auto_now_add=True, db_default=models.functions.Now())

    class Meta:
        db_table = "entity_aliases"
        indexes = [models.Index(fields=["org", "key"], name="entity_aliases_key")]
        constraints = [models.UniqueConstraint(fields=["org", "entity", "key"], name="entity_aliases_unique")]


class MemoryEntity(TenantModel):
    """A memory mentions an entity (spec §4's node_entities), as written in the memory."""

    Source = models.TextChoices("Source", [("agent", "agent"), ("extractor", "extractor")])
    # speaker: the memory is in the entity's own words ("Caroline: I went..."); mentioned: it names it.
    Role = models.TextChoices("Role", [("speaker", "speaker"), ("mentioned", "mentioned")])

    memory = tenant_fk(Memory, related_name="entity_links")
    entity = tenant_fk(Entity, related_name="memory_links")
    mention = models.CharField(max_length=256)
    source = models.CharField(max_length=16, choices=Source.choices, default="extractor")
    role = models.CharField(max_length=16, choices=Role.choices, default="mentioned", db_default="mentioned")
    created_at = models.DateTimeField(auto_now_add=True, db_default=models.functions.Now())

    class Meta:
        db_table = "memory_entities"
        constraints = [
            models.UniqueConstraint(fields=["org", "memory", "entity"], name="memory_entities_unique"),
            models.CheckConstraint(condition=Q(role__in=["speaker", "mentioned"]), name="memory_entities_role_valid"),
        ]
        # The people who speak in a namespace (memories.retrieval.speakers).
        indexes = [models.Index(fields=["org", "entity"], condition=Q(role="speaker"), name="memory_entities_speaker")]


class Erasure(TenantModel):
    """A hard delete that was carried out (memories.lifecycle.erasure): who asked, for what
    scope, and how many rows of each kind went; never what they held."""

    scope = models.JSONField(help_text='What was erased: {"namespace": "users/alice"}, {"agent": id}, '
                                       '{"session": id} or {"all": true}, and for an agent\'s own data its agent.')
    counts = models.JSONField(default=dict, help_text="Rows deleted, by kind.")
    requested_by_agent = tenant_fk(Agent, null=True, db_column="requested_by_agent_id")
    requested_by_user = user_fk(null=True)
    via = models.CharField(max_length=16, help_text="api, console or command")
    created_at = models.DateTimeField(auto_now_add=True, db_default=models.functions.Now())

    class Meta:
        db_table = "erasures"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["org", "-created_at"], name="erasures_org_created")]


class LifecycleJob(models.TextChoices):
    DECAY = "decay"
    EXPIRY = "expiry"
    CONSOLIDATION = "consolidation"


class LifecycleRun(TenantModel):
    """What a scheduled lifecycle job did to one organisation's memories (memories.lifecycle):
    the nightly decay (how many it weighed, archived, and how many are fading), the expiry
    sweep (how many it removed), a session's consolidation (what it proposed). Read by the stats
    and the console's dashboard."""

    Job = LifecycleJob

    job = models.CharField(max_length=16, choices=Job.choices)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(auto_now_add=True, db_default=models.functions.Now())
    counts = models.JSONField(default=dict)

    class Meta:
        db_table = "lifecycle_runs"
        ordering = ["-finished_at"]
        indexes = [models.Index(fields=["org", "job", "-finished_at"], name="lifecycle_runs_latest")]
        constraints = [models.CheckConstraint(condition=Q(job__in=LifecycleJob.values), name="lifecycle_runs_job_valid")]
