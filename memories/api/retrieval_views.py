"""Retrieval endpoints: search, retrieve (spec §2), store search (spec §3), the hot set, and
retrieval events with replay."""

from __future__ import annotations

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers as drf
from rest_framework.response import Response

from memories import keyset
from memories.api import serializers as s
from memories.api.pagination import KeysetPagination
from memories.api.schema import EXAMPLE_MEMORY, documented, list_of
from memories.api.views import AgentAPIView
from memories.use_cases import retrieval

EXAMPLE_SIGNALS = {"vector": {"rank": 1, "similarity": 0.83}, "fulltext": {"rank": 2, "bm25": 4.21},
                   "fused": 0.0325, "blend": {"relevance": 1.0, "importance": 0.4, "confidence": 0.9,
                                              "recency": 0.98, "usage": 0.0}}


# One per process: a serializer builds its fields (for MemorySerializer, from the model's
# metadata) the first time it is used, which was ~40% of serialising a search's results, and
# representing a result only reads them.
SEARCH_RESULT = s.SearchResultSerializer()


def search_response(found: retrieval.Found) -> dict:
    outcome, event = found.outcome, found.event
    return {
        "results": [SEARCH_RESULT.to_representation(result) for result in outcome.results],
        "retrieval_event_id": str(event.pk),
        "degraded": outcome.degraded,
        "vector_method": outcome.vector_method,
        "filled_from_fulltext": outcome.filled_from_fulltext,
        "understood": outcome.understood,
    }


class SearchView(AgentAPIView):
    rate_limit_scope = "search"
    reads_only = True

    @documented(
        summary="Search memories (hybrid: vector + full text, fused by reciprocal rank)",
        request=s.SearchRequestSerializer,
        response=inline_serializer("SearchResponse", {
            "results": s.SearchResultSerializer(many=True), "retrieval_event_id": drf.UUIDField(),
            "degraded": drf.CharField(allow_null=True), "vector_method": drf.CharField(allow_null=True),
            "filled_from_fulltext": drf.IntegerField(),
            "understood": drf.DictField(help_text="What the search read from the query (intent: why, when, who, "
                                                  "where, how, what or general; the period it names; the one "
                                                  "person it names who speaks in the namespaces searched, whose "
                                                  "own words it weighs above others'; asks_for: the class it asks "
                                                  "for when its members go by a name, whose memories that name "
                                                  "something it weighs above the rest) and the signals that found "
                                                  "results.")}),
        request_example={"query": "what does the user drink in the morning?", "limit": 5,
                         "filters": {"category": ["preference"], "time_range": "last_month"}},
        response_example={"results": [{"memory": EXAMPLE_MEMORY, "score": 0.93, "signals": EXAMPLE_SIGNALS}],
                          "retrieval_event_id": "6c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f", "degraded": None,
                          "vector_method": "hnsw", "filled_from_fulltext": 0,
                          "understood": {"intent": "what", "period": None, "speaker": None, "asks_for": None,
                                         "signals": ["vector", "fulltext"]}},
        operation_id="search")
    def post(self, request):
        body = self.validated(s.SearchRequestSerializer, request.data)
        found = retrieval.memory_search(self.caller, query=body["query"],
                                        filters=s.SearchFiltersSerializer.to_filters(body.get("filters", {})),
                                        limit=body["limit"], mode=body["mode"], expand=body["expand"],
                                        threshold=body.get("threshold"))
        return Response(search_response(found))


class RetrieveView(AgentAPIView):
    rate_limit_scope = "search"
    reads_only = True

    @documented(
        summary="Retrieve context candidates (spec §2): identifiers and evidence, never a prompt",
        request=s.RetrieveRequestSerializer,
        response=inline_serializer("RetrieveResponse", {"candidates": s.RetrievedMemorySerializer(many=True),
                                                         "retrieval_event_id": drf.UUIDField()}),
        request_example={"query": "dietary restrictions", "scope": "memories/user-42",
                         "allowed_sensitivity": ["internal"], "require_verified": False, "limit": 8},
        response_example={"candidates": [{"id": EXAMPLE_MEMORY["id"], "summary": "The user is vegetarian",
                                          "scope": "memories/user-42", "sensitivity": "internal",
                                          "validation_status": "verified", "provenance": {}, "artifact_refs": []}],
                          "retrieval_event_id": "6c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"},
        operation_id="retrieve")
    def post(self, request):
        body = self.validated(s.RetrieveRequestSerializer, request.data)
        retrieved = retrieval.memory_retrieve(self.caller, query=body["query"], namespace=body["scope"],
                                              sensitivity=body["allowed_sensitivity"],
                                              require_verified=body["require_verified"], limit=body["limit"])
        candidates = s.RetrievedMemorySerializer(retrieved.outcome.results, many=True,
                                                 context={"artifacts": retrieved.artifacts}).data
        return Response({"candidates": candidates, "retrieval_event_id": str(retrieved.event.pk)})


class ContextView(AgentAPIView):
    rate_limit_scope = "search"
    reads_only = True

    @documented(
        summary="Assemble the context for a prompt: the best memories, formatted, within a token budget",
        request=s.ContextRequestSerializer,
        response=inline_serializer("ContextResponse", {
            "context": drf.CharField(help_text="The text to put in the prompt: a header, then for each day a line "
                                               "`[date]` (the day it happened, else when it was recorded) and "
                                               "one line `- content` per memory of that day (`- Speaker: content` "
                                               "when the write named a speaker its text does not show); empty "
                                               "when not even one memory fits."),
            "tokens": drf.IntegerField(help_text="The text's tokens, as `encoding` counts them."),
            "max_tokens": drf.IntegerField(), "encoding": drf.CharField(), "candidates": drf.IntegerField(),
            "order": drf.CharField(),
            "memories": drf.ListField(child=drf.DictField(), help_text="What went in, in the text's order: id, "
                                                                        "rank in the search, score, tokens it "
                                                                        "cost (its line, and its day's line for "
                                                                        "the first of a day), and why the search "
                                                                        "found it (signals)."),
            "left_out": drf.ListField(child=drf.DictField(), help_text="Candidates that did not fit: id, rank, "
                                                                        "tokens they would have cost."),
            "duplicates": drf.ListField(child=drf.DictField(), help_text="Candidates left out as copies of a "
                                                                          "better-ranked one (the same words): id, "
                                                                          "rank, and the rank of the copy kept "
                                                                          "(copy_of)."),
            "retrieval_event_id": drf.UUIDField(), "degraded": drf.CharField(allow_null=True),
            "understood": drf.DictField()}),
        request_example={"query": "What should I cook for Alice tonight?", "max_tokens": 300,
                         "filters": {"namespace": "users/alice"}},
        response_example={
            "context": "Memories relevant to this request (most relevant first):\n"
                       "[2026-11-02]\n- Alice is vegetarian\n[2026-10-14]\n- Alice loves Thai food",
            "tokens": 29, "max_tokens": 300, "encoding": "o200k_base", "candidates": 30, "order": "relevance",
            "memories": [{"id": EXAMPLE_MEMORY["id"], "rank": 1, "score": 0.91, "tokens": 10,
                          "signals": EXAMPLE_SIGNALS}],
            "left_out": [], "duplicates": [], "retrieval_event_id": "6c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f", "degraded": None,
            "understood": {"intent": "what", "period": None, "speaker": None, "asks_for": None,
                           "signals": ["vector", "fulltext"]}},
        description="The same hybrid search as `POST /search` ranks `candidates` memories; a copy of a "
                    "better-ranked one (the same words) is left out as a duplicate, and the others' lines are "
                    "taken in rank order while the text stays within `max_tokens` (a line that does not fit is "
                    "left out and shorter ones after it are still tried), counted by a real tokenizer over the "
                    "whole text. Each day is named once, its memories' lines under it; the days come in the "
                    "order of their best memory (`relevance`) or of when they were (`time`). "
                    "Recorded as a retrieval event of kind `context` (what went into the prompt), which a replay "
                    "assembles again. No language model is involved.",
        operation_id="context")
    def post(self, request):
        body = self.validated(s.ContextRequestSerializer, request.data)
        parameters = {name: body[name] for name in ("max_tokens", "encoding", "order")}
        parameters["candidates"] = body.get("candidates")
        assembled = retrieval.context_assemble(self.caller, query=body["query"],
                                               filters=s.SearchFiltersSerializer.to_filters(body.get("filters", {})),
                                               **parameters)
        assembly = assembled.assembly
        parameters["candidates"] = assembled.candidates

        def described(rank, result, tokens) -> dict:
            return {"id": str(result.memory.pk), "rank": rank, "score": result.score, "tokens": tokens,
                    "signals": result.signals}

        return Response({
            "context": assembly.text, "tokens": assembly.tokens, **parameters,
            "memories": [described(*item) for item in assembly.chosen],
            "left_out": [{"id": str(result.memory.pk), "rank": rank, "tokens": tokens}
                         for rank, result, tokens in assembly.left_out],
            "duplicates": [{"id": str(result.memory.pk), "rank": rank, "copy_of": kept}
                           for rank, result, kept in assembly.duplicates],
            "retrieval_event_id": str(assembled.event.pk), "degraded": assembly.outcome.degraded,
            "understood": assembly.outcome.understood,
        })


class HotView(AgentAPIView):
    @documented(summary="The calling agent's hot memories (spec §1's hot cache)",
                response=list_of(s.MemorySerializer, "HotList"), parameters=[s.HotQuerySerializer],
                response_example={"results": [EXAMPLE_MEMORY]}, operation_id="hot")
    def get(self, request):
        query = self.validated(s.HotQuerySerializer, s.query_data(request.query_params, ()))
        memories = retrieval.hot_memories(self.caller, limit=query["limit"])
        return Response({"results": s.MemorySerializer(memories, many=True).data})


EXAMPLE_EVENT = {"id": "6c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f", "kind": "search",
                 "agent_id": EXAMPLE_MEMORY["agent_id"], "query": "what does the user drink?", "scope": "",
                 "filters": {"filters": {"statuses": ["active"]}, "request": {"limit": 5, "mode": "hybrid"}},
                 "returned_memory_ids": [EXAMPLE_MEMORY["id"]], "returned_scores": [0.93],
                 "returned_artifact_ids": [], "results": [{"rank": 1, "id": EXAMPLE_MEMORY["id"], "score": 0.93,
                                                           "signals": EXAMPLE_SIGNALS}],
                 "details": {"degraded": None, "vector_method": "hnsw"}, "replay_of": None,
                 "created_at": "2026-11-21T17:00:00Z"}


class RetrievalEventListView(AgentAPIView):
    @documented(summary="Retrieval events of the organisation, newest first",
                response=list_of(s.RetrievalEventSerializer, "RetrievalEventPage", paginated=True),
                parameters=[s.RetrievalEventQuerySerializer],
                response_example={"next": None, "previous": None, "results": [EXAMPLE_EVENT]},
                operation_id="retrieval_events_list")
    def get(self, request):
        query = self.validated(s.RetrievalEventQuerySerializer, s.query_data(request.query_params, ()))
        events = retrieval.retrieval_event_list(self.caller, **{name: query[name] for name in (
            "kind", "agent", "created_after", "created_before") if name in query})
        paginator = KeysetPagination(keyset.NEWEST_FIRST)
        page = paginator.paginate_queryset(events, request)
        return paginator.get_paginated_response(s.RetrievalEventSerializer(page.items, many=True).data)


class RetrievalEventDetailView(AgentAPIView):
    @documented(summary="One retrieval event: what the caller was shown, in order, with scores",
                response=s.RetrievalEventSerializer, response_example=EXAMPLE_EVENT, operation_id="retrieval_event")
    def get(self, request, event_id):
        return Response(s.RetrievalEventSerializer(retrieval.retrieval_event_get(self.caller, event_id)).data)


class RetrievalEventReplayView(AgentAPIView):
    rate_limit_scope = "search"
    reads_only = True

    @documented(
        summary="Run a recorded retrieval again and report what changed since",
        response=inline_serializer("ReplayResponse", {
            "event": s.RetrievalEventSerializer(), "replay_of": drf.UUIDField(), "unchanged": drf.BooleanField(),
            "added": drf.ListField(child=drf.DictField()), "removed": drf.ListField(child=drf.DictField()),
            "moved": drf.ListField(child=drf.DictField())}),
        request=None, status=201,
        response_example={"event": {**EXAMPLE_EVENT, "kind": "replay"}, "replay_of": EXAMPLE_EVENT["id"],
                          "unchanged": False, "added": [{"id": "9e8d7c6b-5a49-4382-b1a0-f9e8d7c6b5a4", "rank": 1}],
                          "removed": [{"id": EXAMPLE_MEMORY["id"], "rank": 1, "reason": "superseded"}], "moved": []},
        operation_id="retrieval_event_replay")
    def post(self, request, event_id):
        replay = retrieval.retrieval_event_replay(self.caller, event_id)
        return Response({"event": s.RetrievalEventSerializer(replay.event).data, "replay_of": str(replay.original.pk),
                         "unchanged": replay.unchanged, "added": replay.added, "removed": replay.removed,
                         "moved": replay.moved}, status=201)
