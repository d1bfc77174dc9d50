"""The tools an agent's language model calls (spec §4's, and the namespace store's), each a
thin adapter: the REST API's serializers validate the arguments (one set of rules), and the
same use cases (memories.use_cases) do the work within the key's reach, as for the REST API.
Results are JSON text; a refusal is a tool error whose message says what to fix."""

from __future__ import annotations

import json
import uuid
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from integrations.langgraph_store import serializers as lg
from integrations.mcp import confirmation as confirmations
from integrations.mcp.boundary import count_against, in_tenant
from memories import keyset
from memories.access import Caller
from memories.api import serializers as s
from memories.api.fields import namespace_labels
from memories.errors import InvalidInput, NotFound
from memories.use_cases import lifecycle, records, retrieval, store

# What a language model needs of a memory; the REST API's full record is one GET away.
BRIEF_FIELDS = ("id", "content", "namespace", "category", "memory_type", "status", "confidence", "importance",
                "strength", "is_protected", "tags", "event_time", "speaker", "created_at", "version")
FACTS_SHOWN = 20
TIMELINE_SHOWN = 50

Namespace = Annotated[list[str] | str | None, Field(
    description='Whose memory this is, as a list of names, e.g. ["users", "alice"], or them joined with "/", '
                '"users/alice": a user\'s memories stay apart from every other user\'s. Omit for the agent\'s '
                "shared memory.")]
NamespacePrefix = Annotated[list[str] | str | None, Field(
    description='Only memories under this namespace, e.g. ["users", "alice"] or "users/alice" (also '
                'users/alice/..., never users/alice2).')]
MemoryId = Annotated[uuid.UUID, Field(description="The memory's id, as search_memory or remember_fact returned it.")]
Category = Literal["factual", "preference", "behavioral", "episodic", "procedural"]  # Memory.Category
MemoryType = Literal["working", "episodic", "semantic"]  # Memory.MemoryType
# A search's filters (search_memory, assemble_context): SearchFiltersSerializer's, by the names a model uses.
Categories = Annotated[list[Category] | None, Field(description="Only these categories.")]
MemoryTypes = Annotated[list[MemoryType] | None, Field(description="Only these memory types.")]
TimeRange = Annotated[Literal["last_day", "last_week", "last_month"] | None,
                      Field(description="Only memories recorded within this period.")]
After = Annotated[str | None, Field(description="Only memories recorded at or after this ISO 8601 date-time, e.g. "
                                                "2026-05-01T00:00:00Z.")]
Before = Annotated[str | None, Field(description="Only memories recorded before this ISO 8601 date-time.")]
Tags = Annotated[list[str] | None, Field(description="Only memories with all of these tags.")]

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)


def as_text(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=str)


def given(**arguments) -> dict:
    """The arguments the caller sent, as a serializer's input (None: not sent)."""
    return {name: value for name, value in arguments.items() if value is not None}


# One per process, as the search view's: a serializer builds its fields the first time it is
# used, which cost a search of ten results ~40 ms here when each result had a new one.
MEMORY = s.MemorySerializer()


def brief(memory) -> dict:
    data = MEMORY.to_representation(memory)
    return {name: data[name] for name in BRIEF_FIELDS}


def search_filters(*, namespace, category, memory_type, time_range, after, before, tags) -> dict | None:
    """The filters a search tool was given, as SearchFiltersSerializer reads them (None: none)."""
    return given(namespace=namespace, category=category, memory_type=memory_type, time_range=time_range,
                 created_after=after, created_before=before, tags=tags) or None


def page(items, *, limit: int, offset: int) -> tuple[list, int | None]:
    """One page of a queryset or list, and the offset of the next (None after the last)."""
    found = list(items[offset:offset + limit + 1])
    return found[:limit], offset + limit if len(found) > limit else None


def page_by_key(items, *, order: keyset.Order, limit: int, offset: int, cursor: str | None) -> tuple[list, dict]:
    """One page of a queryset and how to ask for the next: `next_cursor` (by key, memories.keyset:
    the same cost however deep), and `next_offset` on a first page or after an offset (which
    still works, slower the deeper it skips)."""
    if cursor and offset:
        raise InvalidInput("give a cursor or an offset, not both", field="cursor")
    if offset:
        found, next_offset = page(items.order_by(*order.order_by()), limit=limit, offset=offset)
        following = keyset.cursor_encode(keyset.key_of(found[-1], order)) if next_offset is not None else None
        return found, {"next_cursor": following, "next_offset": next_offset}
    found = keyset.page(items, order=order, limit=limit, cursor=cursor)
    return found.items, {"next_cursor": found.next,
                         "next_offset": (limit if found.next else None) if not cursor else None}


# --------------------------------------------------------------------------- spec §4's tools


async def search_memory(
    ctx: Context,
    query: Annotated[str, Field(description="What to look for, in plain words (a question works best).")],
    limit: Annotated[int, Field(description="How many memories to return, 1-100.")] = 10,
    namespace: NamespacePrefix = None,
    category: Categories = None,
    memory_type: MemoryTypes = None,
    time_range: TimeRange = None,
    after: After = None,
    before: Before = None,
    tags: Tags = None,
    expand: Annotated[int, Field(description="Also the memories 1 or 2 relationships away from the best results "
                                             "(0: none).")] = 0,
) -> str:
    """Search long-term memory: hybrid meaning and keyword search, ranked by relevance, importance, confidence,
    recency and use. Call it before answering anything that depends on what the user said or did before.
    A question naming a period ("in May", "last week") or a person is understood as such."""
    filters = search_filters(namespace=namespace, category=category, memory_type=memory_type,
                             time_range=time_range, after=after, before=before, tags=tags)
    body = given(query=query, limit=limit, expand=expand, filters=filters)

    def work(caller: Caller):
        count_against(caller, "search")
        request = s.validated(s.SearchRequestSerializer, body)
        found = retrieval.memory_search(caller, query=request["query"],
                                        filters=s.SearchFiltersSerializer.to_filters(request.get("filters", {})),
                                        limit=request["limit"], mode=request["mode"], expand=request["expand"])
        return {"results": [{**brief(result.memory), "score": round(result.score, 4)}
                            for result in found.outcome.results],
                "understood": found.outcome.understood, "retrieval_event_id": str(found.event.pk)}

    return as_text(await in_tenant(ctx, body, work))


async def remember_fact(
    ctx: Context,
    content: Annotated[str, Field(description="The fact, preference or event, as one self-contained sentence.")],
    namespace: Namespace = None,
    category: Annotated[Category | None, Field(description="What kind of memory (default factual).")] = None,
    memory_type: Annotated[MemoryType | None, Field(
        description="semantic (a durable fact, the default), episodic (something that happened: give "
                    "event_time) or working (short-lived).")] = None,
    importance: Annotated[float | None, Field(description="0-1: how much it matters; important memories fade "
                                                          "more slowly.")] = None,
    confidence: Annotated[float | None, Field(description="0-1: how sure you are of it.")] = None,
    tags: Annotated[list[str] | None, Field(description="Short labels to filter by later.")] = None,
    event_time: Annotated[str | None, Field(description="When it happened, ISO 8601 (episodes).")] = None,
    metadata: Annotated[dict[str, Any] | None, Field(description="Anything else to keep with it, as JSON.")] = None,
    session_id: Annotated[uuid.UUID | None, Field(
        description="The session it was said in, as open_session returned it: it is listed with the session's "
                    "memories and consolidated when the session closes.")] = None,
    speaker: Annotated[str | None, Field(
        description="Who said it: a person's name (e.g. the user's). A later question naming them ranks what "
                    "they said first.")] = None,
) -> str:
    """Save a fact to long-term memory (embedded for search at once). Saving the same sentence again in the same
    namespace returns the memory already held (deduplicated: true); near-duplicates are reported. To change a
    fact that is wrong, use correct_fact instead."""
    body = given(content=content, namespace=namespace, category=category, memory_type=memory_type,
                 importance=importance, confidence=confidence, tags=tags, event_time=event_time, metadata=metadata,
                 session_id=str(session_id) if session_id else None, speaker=speaker)

    def work(caller: Caller):
        result = records.memory_create(caller, s.validated(s.MemoryCreateSerializer, body))
        return {"memory": brief(result.memory), "created": result.created, "deduplicated": result.deduplicated,
                "near_duplicates": s.WriteResultSerializer(result).data["near_duplicates"]}

    return as_text(await in_tenant(ctx, body, work))


async def correct_fact(
    ctx: Context,
    memory_id: MemoryId,
    content: Annotated[str, Field(description="The corrected fact, as one self-contained sentence.")],
    reason: Annotated[str | None, Field(description="Why it changed, e.g. 'the user moved'.")] = None,
) -> str:
    """Correct a fact that is wrong or out of date: a new memory replaces it (same namespace, category and type)
    and the old one is kept as superseded, linked to its replacement, so its history stays explainable."""
    body = given(content=content, reason=reason)

    def work(caller: Caller):
        request = s.validated(s.SupersedeSerializer, body)
        old, result = records.memory_supersede(caller, memory_id, content=request.pop("content"),
                                               reason=request.pop("reason", ""), **request)
        return {"superseded": brief(old), "memory": brief(result.memory)}

    return as_text(await in_tenant(ctx, {**body, "memory_id": str(memory_id)}, work))


async def confirm_fact(ctx: Context, memory_id: MemoryId) -> str:
    """Confirm a fact the user has verified: confidence becomes 1.0 and it never fades (protected from decay)."""

    def work(caller: Caller):
        return {"memory": brief(records.memory_confirm(caller, memory_id))}

    return as_text(await in_tenant(ctx, {"memory_id": str(memory_id)}, work))


async def forget(ctx: Context, memory_id: MemoryId) -> str:
    """Forget a memory: it is deleted from every search and list (softly: its history is kept and an operator can
    restore it). Use correct_fact instead when the fact changed rather than was wrong to keep."""

    def work(caller: Caller):
        memory = records.memory_delete(caller, memory_id)
        return {"forgotten": str(memory.pk), "deleted_at": memory.deleted_at}

    return as_text(await in_tenant(ctx, {"memory_id": str(memory_id)}, work))


async def get_entity_info(
    ctx: Context,
    name: Annotated[str | None, Field(description="A person's, place's or thing's name or alias (or its "
                                                  "beginning); the most mentioned match is shown.")] = None,
    entity_id: Annotated[uuid.UUID | None, Field(description="The entity's id, if known.")] = None,
    namespace: NamespacePrefix = None,
) -> str:
    """What memory holds about a person, place, organisation or thing: its aliases, the latest facts that mention
    it, and its timeline (what happened, in order). Give a name or an entity_id."""
    query = given(q=name, namespace=namespace)

    def work(caller: Caller):
        if (name is None) == (entity_id is None):
            raise InvalidInput("give a name or an entity_id, one of them", field="name")
        entity = None
        if entity_id is None:
            where = s.validated(s.EntityListQuerySerializer, query)
            entity = lifecycle.entity_list(caller, namespace=where.get("namespace"), query=where["q"]).first()
            if entity is None:
                raise NotFound(f"no entity named {name!r} is remembered", field="name")
        return s.EntityDetailSerializer(lifecycle.entity_detail(caller, entity, entity_id=entity_id,
                                                                facts=FACTS_SHOWN, timeline=TIMELINE_SHOWN)).data

    return as_text(await in_tenant(ctx, query, work))


async def memory_stats(ctx: Context, namespace: NamespacePrefix = None) -> str:
    """Memory at a glance: memories by status, category, type and strength, growth per day, relationships,
    entities, and when the nightly decay and the other maintenance last ran."""
    query = given(namespace=namespace)

    def work(caller: Caller):
        where = s.validated(s.StatsQuerySerializer, query)
        return lifecycle.memory_stats(caller, namespace=where.get("namespace"))

    return as_text(await in_tenant(ctx, query, work))


async def explain_fact(ctx: Context, memory_id: MemoryId) -> str:
    """Why a memory is held and how it ranks: its strength and what drives it, its versions (what changed and
    why), what it supersedes or was derived from, the entities it mentions, its provenance, and the latest
    searches that returned it."""

    def work(caller: Caller):
        return s.ExplanationSerializer(records.memory_explain(caller, memory_id)).data

    return as_text(await in_tenant(ctx, {"memory_id": str(memory_id)}, work))


async def weak_facts(
    ctx: Context,
    below: Annotated[float | None, Field(description="List memories whose strength is below this, 0-1 "
                                                     "(default 0.5).")] = None,
    namespace: NamespacePrefix = None,
    limit: Annotated[int, Field(description="How many, 1-200, the weakest first.")] = 20,
) -> str:
    """Facts that are fading and will be archived unless they are used or confirmed: worth asking the user about,
    then confirm_fact, correct_fact or forget. Each comes with its strength and when it would be archived."""
    query = given(below=below, namespace=namespace, limit=limit)

    def work(caller: Caller):
        where = s.validated(s.WeakQuerySerializer, query)
        weak = lifecycle.weak_memories(caller, below=where.get("below"), namespace=where.get("namespace"),
                                       limit=where["limit"], offset=where["offset"])
        return {"count": weak.count, **weak.label,
                "results": [{**brief(item.memory), "strength": round(item.strength, 4),
                             "archived_after": item.archived_after} for item in weak.fading]}

    return as_text(await in_tenant(ctx, query, work))


# --------------------------------------------------------------------------- context, sessions, erasure, replay
# As the REST API's POST /context, /sessions..., /erase and /retrieval-events/<id>/replay, by the
# same serializers and use cases.

ContextOrder = Literal["relevance", "time"]  # memories.retrieval.context.ORDERS
ContextEncoding = Literal["o200k_base", "cl100k_base"]  # memories.retrieval.context.ENCODINGS
SessionId = Annotated[uuid.UUID, Field(description="The session's id, as open_session or list_sessions returned it.")]
Limit = Annotated[int, Field(description="How many to return, 1-200.")]
SESSIONS_NEWEST_FIRST = keyset.Order(("started_at", "id"))  # as GET /sessions pages them
Offset = Annotated[int, Field(ge=0, description="How many to skip: the next_offset a previous call returned "
                                                 "(slow deep in a long list: prefer cursor).")]
Cursor = Annotated[str | None, Field(description="Where the page starts: the next_cursor a previous call returned.")]


async def assemble_context(
    ctx: Context,
    query: Annotated[str, Field(description="The request the context is for, as the user put it.")],
    max_tokens: Annotated[int, Field(description="The budget, 16-100000: the text returned has at most this many "
                                                 "tokens.")] = 1000,
    namespace: NamespacePrefix = None,
    category: Categories = None,
    memory_type: MemoryTypes = None,
    time_range: TimeRange = None,
    after: After = None,
    before: Before = None,
    tags: Tags = None,
    candidates: Annotated[int | None, Field(description="How many of the search's best results are considered, "
                                                        "1-100; by default as many as the budget could hold "
                                                        "(max_tokens / 20, at least 30).")] = None,
    order: Annotated[ContextOrder, Field(description="The lines by relevance, or in the order the memories "
                                                     "happened (time).")] = "relevance",
    encoding: Annotated[ContextEncoding, Field(description="The tokenizer that counts the budget: o200k_base "
                                                           "(GPT-4o and later) or cl100k_base (GPT-4, "
                                                           "GPT-3.5).")] = "o200k_base",
) -> str:
    """The memories relevant to a request, as text ready to put in a prompt, within a token budget: the same
    search as search_memory ranks them, copies of a better one are left out, and their lines ("- content", or
    "- Speaker: content" when the write named a speaker its text does not show, under a line "[date]" per day)
    are taken best first while the text stays within max_tokens, counted by a real tokenizer. Use it to fill a
    prompt with what memory holds; use search_memory to look at memories one by one. Recorded as a retrieval
    event (replay_retrieval runs it again)."""
    filters = search_filters(namespace=namespace, category=category, memory_type=memory_type,
                             time_range=time_range, after=after, before=before, tags=tags)
    body = given(query=query, max_tokens=max_tokens, candidates=candidates, order=order, encoding=encoding,
                 filters=filters)

    def work(caller: Caller):
        count_against(caller, "search")
        request = s.validated(s.ContextRequestSerializer, body)
        parameters = {name: request[name] for name in ("max_tokens", "encoding", "order")}
        parameters["candidates"] = request.get("candidates")
        assembled = retrieval.context_assemble(
            caller, query=request["query"], filters=s.SearchFiltersSerializer.to_filters(request.get("filters", {})),
            **parameters)
        assembly = assembled.assembly
        parameters["candidates"] = assembled.candidates
        return {"context": assembly.text, "tokens": assembly.tokens, "max_tokens": parameters["max_tokens"],
                "memories": [{"id": str(result.memory.pk), "rank": rank, "score": round(result.score, 4),
                              "tokens": tokens} for rank, result, tokens in assembly.chosen],
                "left_out": [{"id": str(result.memory.pk), "rank": rank, "tokens": tokens}
                             for rank, result, tokens in assembly.left_out],
                "duplicates": [{"id": str(result.memory.pk), "rank": rank, "copy_of": kept}
                               for rank, result, kept in assembly.duplicates],
                "retrieval_event_id": str(assembled.event.pk), "degraded": assembly.outcome.degraded,
                "understood": assembly.outcome.understood}

    return as_text(await in_tenant(ctx, body, work))


def session_data(session) -> dict:
    return s.SessionSerializer(session).data


async def open_session(
    ctx: Context,
    external_id: Annotated[str | None, Field(description="Your own id for the conversation (a thread id): sent "
                                                         "again while the session is open, it finds that "
                                                         "session instead of opening a second.")] = None,
    namespace: Annotated[list[str] | str | None, Field(
        description='Whose conversation it is, e.g. ["users", "alice"] or "users/alice". A key limited to '
                    "namespaces must give one it may write.")] = None,
    metadata: Annotated[dict[str, Any] | None, Field(description="Anything to keep with it, as JSON (e.g. the "
                                                                 "channel).")] = None,
) -> str:
    """Open a session: one conversation or task run, grouping the memories written in it (give its id as
    remember_fact's session_id). With external_id, the open session of that id is returned instead when there
    is one (created: false). Call close_session when the conversation ends."""
    body = given(external_id=external_id, namespace=namespace, metadata=metadata)

    def work(caller: Caller):
        request = s.validated(s.SessionCreateSerializer, body)
        session, created = lifecycle.session_open(caller, external_id=request.get("external_id", ""),
                                                  namespace=request.get("namespace", ""),
                                                  metadata=request.get("metadata"))
        return {"session": session_data(session), "created": created}

    return as_text(await in_tenant(ctx, body, work))


async def list_sessions(
    ctx: Context,
    status: Annotated[Literal["open", "closed"] | None, Field(description="Only open, or only closed, "
                                                                          "sessions.")] = None,
    namespace: Annotated[list[str] | str | None, Field(
        description='Only sessions under this namespace, e.g. ["users", "alice"] or "users/alice".')] = None,
    external_id: Annotated[str | None, Field(description="Only sessions of this external_id.")] = None,
    limit: Limit = 20,
    cursor: Cursor = None,
    offset: Offset = 0,
) -> str:
    """List sessions, the newest first, each with its number of memories, whether it is open or closed, and
    (once closed) what its consolidation proposed. Find an open conversation's session again by external_id.
    For the next page, pass the next_cursor returned."""
    query = given(status=status, namespace=namespace, external_id=external_id, limit=limit, cursor=cursor)

    def work(caller: Caller):
        where = s.validated(s.SessionListQuerySerializer, query)
        found = lifecycle.session_list(caller, status=where.get("status"), namespace=where.get("namespace"),
                                       external_id=where.get("external_id"))
        sessions, following = page_by_key(found, order=SESSIONS_NEWEST_FIRST, limit=where["limit"], offset=offset,
                                          cursor=where.get("cursor"))
        return {"sessions": [session_data(session) for session in sessions], **following}

    return as_text(await in_tenant(ctx, {**query, "offset": offset}, work))


async def close_session(
    ctx: Context,
    session_id: SessionId,
    consolidate: Annotated[bool, Field(description="Propose merges of the session's near-duplicates and a summary, "
                                                   "for review (default true).")] = True,
) -> str:
    """Close a session when its conversation ends: it takes no new memory after. Its consolidation then runs in
    the background, with no language model: near-duplicate memories of one namespace are proposed for merging,
    and a summary waits for review; neither changes memory until a reviewer approves it."""
    body = {"consolidate": consolidate}

    def work(caller: Caller):
        request = s.validated(s.SessionCloseSerializer, body)
        return {"session": session_data(lifecycle.session_close(caller, session_id,
                                                                 consolidate=request["consolidate"]))}

    return as_text(await in_tenant(ctx, {**body, "session_id": str(session_id)}, work))


async def list_session_memories(
    ctx: Context,
    session_id: SessionId,
    limit: Limit = 50,
    cursor: Cursor = None,
    offset: Offset = 0,
) -> str:
    """A session's memories in the order they were written (the conversation's), whatever their status (a
    summary waiting for review included), deleted and expired ones left out. For the next page, pass the
    next_cursor returned."""
    query = given(limit=limit, cursor=cursor)

    def work(caller: Caller):
        where = s.validated(s.SessionMemoriesQuerySerializer, query)
        found = lifecycle.session_memories(caller, session_id)
        memories, following = page_by_key(found, order=keyset.OLDEST_FIRST, limit=where["limit"], offset=offset,
                                          cursor=where.get("cursor"))
        return {"session_id": str(session_id), "memories": [brief(memory) for memory in memories], **following}

    return as_text(await in_tenant(ctx, {**query, "offset": offset, "session_id": str(session_id)}, work))


async def erase_namespace(
    ctx: Context,
    namespace: Annotated[list[str] | str, Field(
        description='The namespace to erase, with every namespace under it, e.g. ["users", "alice"] or '
                    '"users/alice" (never users/alice2).')],
    confirmation: Annotated[str | None, Field(
        description="Omit on the first call. On the second, the confirmation the first returned, once the user "
                    "agreed to erase the number of memories it reported.")] = None,
) -> str:
    """Erase for good, when a user asks to be forgotten, this agent's memories under a namespace that this API
    key may write: with their history, relationships, tags, entity links, the retrieval events that returned
    them and the sessions kept there (other agents' memories stay). Nothing can be restored; to drop one wrong
    fact, use forget. Always two calls: (1) without confirmation, nothing is erased: it answers how many memories
    would go, and a confirmation. Tell the user that number and ask them. (2) Only if they agree, call again with
    the same namespace and that confirmation: exactly the memories counted are erased. A confirmation serves
    this API key and this namespace only, once, for 10 minutes; if a memory was added or removed there in
    between, nothing is erased (scope_changed): count again and ask again."""
    body = given(namespace=namespace, confirmation=confirmation)

    def work(caller: Caller):
        where = s.validated(s.EraseRequestSerializer, {"namespace": namespace})["namespace"]
        labels = namespace_labels(where)
        if confirmation is None:
            _, counted = lifecycle.erase(caller, namespace=where, dry_run=True)
            memories = counted.counts["memories"]
            return {"namespace": labels, "erased": False, "memories": memories, "would_erase": counted.counts,
                    "confirmation": confirmations.issue(caller, where, confirmations.Counted(memories, counted.digest)),
                    "expires_in_seconds": confirmations.LIFETIME_SECONDS,
                    "next": f"Nothing was erased. Ask the user whether to erase "
                            f"{'this 1 memory' if memories == 1 else f'these {memories} memories'} under {where} "
                            "for good; only if they agree, call erase_namespace again with this namespace and this "
                            "confirmation."}
        confirmed = confirmations.read(caller, where, confirmation)
        _, outcome = lifecycle.erase(caller, namespace=where, expected_digest=confirmed.digest)
        return {"namespace": labels, "erased": True, "erasure_id": str(outcome.erasure.pk), "counts": outcome.counts}

    return as_text(await in_tenant(ctx, body, work))


async def replay_retrieval(
    ctx: Context,
    retrieval_event_id: Annotated[uuid.UUID, Field(description="The retrieval event to run again, as "
                                                               "search_memory or assemble_context returned it.")],
) -> str:
    """Run a recorded search (or context assembly) again, as of now, and say what changed since: the memories
    it finds now that it did not (added), those it no longer finds and why (removed: deleted, superseded,
    expired, archived... or outranked), and those that moved, with what it returns now (results, by id: see
    explain_fact). Recorded as a retrieval event of its own. A key limited to namespaces may not: retrieval
    events show what anyone in the organisation searched for."""

    def work(caller: Caller):
        count_against(caller, "search")
        replay = retrieval.retrieval_event_replay(caller, retrieval_event_id)
        event = replay.event
        return {"retrieval_event_id": str(event.pk), "replay_of": str(replay.original.pk), "query": event.query,
                "unchanged": replay.unchanged, "added": replay.added, "removed": replay.removed,
                "moved": replay.moved,
                "results": [{"rank": rank, "id": str(memory_id), "score": round(score, 4)} for rank, (memory_id, score)
                            in enumerate(zip(event.returned_memory_ids, event.returned_scores), start=1)]}

    return as_text(await in_tenant(ctx, {"retrieval_event_id": str(retrieval_event_id)}, work))


# --------------------------------------------------------------------------- the namespace store (spec §3)
# In LangGraph's shapes, as its store API over HTTP (integrations.langgraph_store): an item is a
# JSON value under a namespace and key, validated by that door's serializers.

StoreNamespace = Annotated[list[str], Field(description='The item\'s namespace, its labels in order, e.g. '
                                                        '["users", "alice"].')]
StoreKey = Annotated[str, Field(description="The item's key within its namespace, e.g. 'diet'.")]


def store_item(memory) -> dict:
    return lg.ItemSerializer(memory).data


def store_where(namespace: list[str], key: str) -> dict:
    """The item's namespace (as the store keeps it) and key, checked."""
    return s.validated(lg.DeleteItemSerializer, {"namespace": namespace, "key": key})


async def store_put(
    ctx: Context,
    namespace: StoreNamespace,
    key: StoreKey,
    value: Annotated[dict[str, Any], Field(description='The value to keep, a JSON object, e.g. {"text": '
                                                       '"vegetarian since 2019"}; a "speaker" in it that is a '
                                                       'person\'s name says who said it.')],
    index: Annotated[list[str] | bool | None, Field(description="Which fields are found by meaning: their paths "
                                                                "(e.g. [\"text\"]), false for none; omit for "
                                                                "the whole value.")] = None,
    ttl_minutes: Annotated[float | None, Field(description="Minutes until it expires (reads refresh it); omit "
                                                           "to keep it.")] = None,
) -> str:
    """Keep a value under a namespace and key, replacing what the key held (last write wins; every write is
    versioned). For one slot per user and subject, e.g. ["users", "alice"] / "diet"."""
    body = given(namespace=namespace, key=key, value=value, index=index, ttl=ttl_minutes)

    def work(caller: Caller):
        request = s.validated(lg.PutItemSerializer, body)
        result = store.store_put(caller, namespace=request["namespace"], key=request["key"], value=request["value"],
                                 index=request["index"], ttl=request["ttl"], speaker=request["speaker"])
        return {**store_item(result.memory), "created": result.created}

    return as_text(await in_tenant(ctx, body, work))


async def store_get(ctx: Context, namespace: StoreNamespace, key: StoreKey) -> str:
    """Read the value kept under a namespace and key (not_found if the key holds nothing)."""
    body = {"namespace": namespace, "key": key}

    def work(caller: Caller):
        where = store_where(namespace, key)
        return store_item(store.store_get(caller, namespace=where["namespace"], key=where["key"]))

    return as_text(await in_tenant(ctx, body, work))


async def store_delete(ctx: Context, namespace: StoreNamespace, key: StoreKey) -> str:
    """Delete the value kept under a namespace and key; its history is kept (not_found if the key holds
    nothing)."""
    body = {"namespace": namespace, "key": key}

    def work(caller: Caller):
        where = store_where(namespace, key)
        if not store.store_delete(caller, namespace=where["namespace"], key=where["key"]):
            raise NotFound(f"no item {where['key']!r} in namespace {where['namespace']!r}", field="key")
        return {"deleted": True, "namespace": namespace, "key": key}

    return as_text(await in_tenant(ctx, body, work))


async def store_list_keys(ctx: Context, namespace: StoreNamespace) -> str:
    """List the keys that hold a value in a namespace, in order (empty if none; at most 1000)."""
    body = {"namespace": namespace}

    def work(caller: Caller):
        where = s.validated(lg.SearchItemsSerializer, {"namespace_prefix": namespace})["namespace_prefix"]
        return {"namespace": namespace, "keys": store.store_keys(caller, namespace=where, limit=lg.LIST_MAX)}

    return as_text(await in_tenant(ctx, body, work))


async def store_list_namespaces(
    ctx: Context,
    prefix: Annotated[list[str] | None, Field(description='Only namespaces beginning with these labels, e.g. '
                                                          '["users"]; "*" matches any label.')] = None,
) -> str:
    """List the namespaces that hold store items (at most 100), e.g. to find every user's."""
    query = given(prefix=prefix)

    def work(caller: Caller):
        where = s.validated(lg.ListNamespacesSerializer, query)
        return {"namespaces": store.store_namespaces(caller, prefix=where["prefix"], limit=where["limit"])}

    return as_text(await in_tenant(ctx, query, work))


TOOLS = (
    (search_memory, READ), (remember_fact, WRITE), (correct_fact, WRITE), (confirm_fact, WRITE),
    (forget, DESTRUCTIVE), (get_entity_info, READ), (memory_stats, READ), (explain_fact, READ),
    (weak_facts, READ), (assemble_context, READ), (open_session, WRITE), (list_sessions, READ),
    (close_session, WRITE), (list_session_memories, READ), (erase_namespace, DESTRUCTIVE),
    (replay_retrieval, READ), (store_put, WRITE), (store_get, READ), (store_delete, DESTRUCTIVE),
    (store_list_keys, READ), (store_list_namespaces, READ),
)


def register(server: MCPServer) -> None:
    for function, hints in TOOLS:
        server.add_tool(function, annotations=hints, structured_output=False)
