"""Django admin for the memory tables: every organisation's rows (administration runs as the
service account, memory_platform/admin_site.py), to look at, not to edit. A memory changes
through the API or the console, which write a version row for every change; admin forms
would not, so these pages are read-only."""

from django.contrib import admin

from memories.models import (
    Artifact,
    DuplicateCandidate,
    EmbeddingModel,
    IdempotencyRecord,
    Memory,
    MemoryArtifact,
    MemoryEmbedding,
    MemoryRelationship,
    MemoryTag,
    MemoryUsage,
    MemoryVersion,
    Provenance,
    RetrievalEvent,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    list_per_page = 50

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Memory)
class MemoryAdmin(ReadOnlyAdmin):
    list_display = ["short_content", "org", "agent", "namespace", "key", "category", "memory_type", "state",
                    "sensitivity", "validation_status", "version", "created_at"]
    list_filter = ["status", ("deleted_at", admin.EmptyFieldListFilter), "category", "memory_type", "validation_status",
                   "sensitivity", "source", "org"]
    search_fields = ["content", "namespace", "key"]
    list_select_related = ["org", "agent"]
    exclude = ["embedding"]  # 384 numbers help no one reading the page
    readonly_fields = ["state", "retrieval_count", "last_retrieved_at"]  # state: status or deleted; the others from memory_usage
    date_hierarchy = "created_at"

    @admin.display(description="content")
    def short_content(self, memory):
        return memory.content[:100]

    @admin.display(description="status", ordering="status")
    def state(self, memory):
        """Its status, and "deleted" over it: a deleted store item keeps the status it had
        (active), which alone would show it as live."""
        return f"deleted ({memory.status})" if memory.deleted_at else memory.status


@admin.register(MemoryVersion)
class MemoryVersionAdmin(ReadOnlyAdmin):
    list_display = ["memory_id", "version_num", "operation", "changed_by_type", "org", "created_at"]
    list_filter = ["operation", "changed_by_type", "org"]
    search_fields = ["content", "change_reason", "memory__id"]
    list_select_related = ["org"]


@admin.register(MemoryRelationship)
class MemoryRelationshipAdmin(ReadOnlyAdmin):
    list_display = ["source_id", "relation_type", "target_id", "confidence", "org", "created_at"]
    list_filter = ["relation_type", "org"]
    list_select_related = ["org"]


@admin.register(MemoryTag)
class MemoryTagAdmin(ReadOnlyAdmin):
    list_display = ["tag", "memory_id", "org", "created_at"]
    list_filter = ["org"]
    search_fields = ["tag"]
    list_select_related = ["org"]


@admin.register(Artifact)
class ArtifactAdmin(ReadOnlyAdmin):
    list_display = ["artifact_type", "namespace", "storage_uri", "org", "created_at"]
    list_filter = ["artifact_type", "org"]
    search_fields = ["storage_uri", "namespace", "sha256"]
    list_select_related = ["org"]


@admin.register(MemoryArtifact)
class MemoryArtifactAdmin(ReadOnlyAdmin):
    list_display = ["memory_id", "artifact_id", "namespace", "org", "created_at"]
    list_filter = ["org"]
    list_select_related = ["org"]


@admin.register(RetrievalEvent)
class RetrievalEventAdmin(ReadOnlyAdmin):
    list_display = ["query", "kind", "agent", "org", "created_at"]
    list_filter = ["kind", "org"]
    search_fields = ["query", "namespace"]
    list_select_related = ["org", "agent"]
    date_hierarchy = "created_at"


@admin.register(Provenance)
class ProvenanceAdmin(ReadOnlyAdmin):
    list_display = ["source_identity", "source_event", "memory_id", "artifact_id", "retrieval_event_id", "org"]
    list_filter = ["org"]
    search_fields = ["source_identity", "source_event"]
    list_select_related = ["org"]


@admin.register(DuplicateCandidate)
class DuplicateCandidateAdmin(ReadOnlyAdmin):
    list_display = ["memory_id", "candidate_id", "similarity", "resolved_at", "org", "detected_at"]
    list_filter = [("resolved_at", admin.EmptyFieldListFilter), "org"]
    list_select_related = ["org"]


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(ReadOnlyAdmin):
    list_display = ["key", "agent", "response_status", "org", "created_at"]
    list_filter = ["org"]
    search_fields = ["key"]
    list_select_related = ["org", "agent"]


@admin.register(MemoryUsage)
class MemoryUsageAdmin(ReadOnlyAdmin):
    list_display = ["memory_id", "retrieval_count", "last_retrieved_at", "org"]
    list_filter = ["org"]
    list_select_related = ["org"]
    ordering = ["-last_retrieved_at"]


@admin.register(MemoryEmbedding)
class MemoryEmbeddingAdmin(ReadOnlyAdmin):
    list_display = ["memory_id", "model", "embedded_at", "org"]
    list_filter = ["model", "org"]
    list_select_related = ["org"]
    exclude = ["embedding"]


@admin.register(EmbeddingModel)
class EmbeddingModelAdmin(ReadOnlyAdmin):
    """The deployment's models: changed by `manage.py reembed` or the console's Embeddings page,
    which move the vectors with them, never by a form here."""

    list_display = ["name", "state", "memories_done", "memories_total", "task", "activated_at", "finished_at"]
