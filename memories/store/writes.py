"""The namespace store (spec §3, in LangGraph's shapes; docs/adr/0040): items addressed by
(namespace, key), written by upsert. Each item is a memory like any other (versions, row-level
security, search, the console): its value is the memory's metadata, and its content the text
of the value's indexed fields (memories.store.values)."""

from __future__ import annotations

from django.db import transaction
from django.db.models.expressions import RawSQL

from memories.errors import Conflict
from memories.models import CONTENT_MAX_CHARS, Memory
from memories.reads.selectors import NOT_EXPIRED
from memories.store import values as store_values
from memories.writes.change import memory_delete, memory_update
from memories.writes.create import WriteResult, memory_create
from memories.writes.kernel import Actor

# A store item lives until it is deleted or its time to live runs out, as LangGraph's store
# promises: it does not fade (memories.lifecycle.strength) and is never archived by the nightly decay.
STORE_DECAY_RATE = 0.0


def store_put(*, org_id, agent_id, namespace: str, key: str, value: dict, index=None, ttl: int | None = None,
              speaker: str | None = None, actor: Actor | None = None) -> WriteResult:
    """Upsert by namespace and key: last write wins, and every write leaves a version. value: a
    JSON object, kept as the memory's metadata. index: None (the whole value is its text), False
    (not embedded: found by its key and filters, never by meaning) or the field paths whose text
    is embedded. ttl: a time to live in seconds (None: the item does not expire, and loses one
    it had). speaker: who said it (a person's name), linked as the memory's speaker; a put
    replaces the item whole, so one without a speaker leaves it with none the agent named."""
    actor = actor or Actor(agent_id=agent_id)
    text = store_values.item_text(value, store_values.check_index(index), CONTENT_MAX_CHARS)
    with transaction.atomic():
        current = (Memory.objects.select_for_update()
                   .filter(org_id=org_id, namespace=namespace, key=key, deleted_at__isnull=True).first())
        if current is None:
            try:
                with transaction.atomic():
                    return memory_create(org_id=org_id, agent_id=agent_id, content=text.content, namespace=namespace,
                                         key=key, metadata=value, category=Memory.Category.FACTUAL,
                                         source=Memory.Source.USER_PROVIDED, decay_rate=STORE_DECAY_RATE,
                                         indexed=text.indexed, actor=actor, ttl=ttl, speaker=speaker)
            except Conflict:
                # A concurrent first put of the same key won; this write comes last, so it wins.
                current = Memory.objects.select_for_update().get(org_id=org_id, namespace=namespace, key=key,
                                                                deleted_at__isnull=True)
        changes = {"content": text.content, "metadata": value, "indexed": text.indexed, "speaker": speaker,
                   **({"ttl": ttl} if ttl is not None else {"expires_at": None})}
        memory = memory_update(org_id=org_id, memory_id=current.pk, changes=changes,
                               expected_version=current.version, actor=actor)
        return WriteResult(memory, created=False)


def store_delete(*, org_id, namespace: str, key: str, actor: Actor) -> bool:
    """Delete the item if there is one (soft: its history stays). LangGraph's delete of a
    missing item is no error; returns whether there was one."""
    with transaction.atomic():
        current = (Memory.objects.select_for_update()
                   .filter(org_id=org_id, namespace=namespace, key=key, deleted_at__isnull=True).first())
        if current is None:
            return False
        memory_delete(org_id=org_id, memory_id=current.pk, actor=actor)
        return True


def store_refresh_ttl(*, org_id, items) -> int:
    """A read that refreshes (spec §3 / LangGraph's refresh_ttl): each of these items that was
    written with a time to live, and has not expired, expires that long from now again. Not a
    change of the item: no version, the same ETag; an item without one costs no write. Returns
    how many moved."""
    by_ttl: dict[int, list] = {}
    for item in items:
        if item.ttl_seconds:
            by_ttl.setdefault(item.ttl_seconds, []).append(item.pk)
    # One statement per time to live, named as a value: a Citus cluster refuses now() beside a
    # column reference in an UPDATE (it evaluates now() once, on the coordinator).
    return sum(Memory.objects.filter(NOT_EXPIRED, org_id=org_id, pk__in=ids, ttl_seconds=ttl)
               .update(expires_at=RawSQL("now() + make_interval(secs => %s)", [ttl]))
               for ttl, ids in by_ttl.items())
