"""Use cases over an organisation's whole memory, for its admins in the console: erasure (count,
then queue, then follow), export (count, and the lines of the file) and import (queue, then
follow). A caller limited to namespaces may make none of them; the jobs run in the worker, as
the organisation."""

from __future__ import annotations

from collections.abc import Iterator

from memories.access import Caller
from memories.errors import OutOfReach
from memories.lifecycle import erasure, export, importing
from memories.lifecycle.portability import ExportScope
from tenants.context import tenant_context


def _whole_organisation(caller: Caller, *, writes: bool = False) -> None:
    if caller.limited:
        raise OutOfReach("this needs a caller that reaches the whole organisation")
    if writes:
        caller.check_writable()


def erasure_count(caller: Caller, scope: erasure.ErasureScope) -> int:
    """How many memories the scope holds: what an admin confirms before erasing."""
    _whole_organisation(caller)
    return erasure.memory_count(caller.org_id, scope)


def erasure_start(caller: Caller, scope: erasure.ErasureScope) -> str:
    """Queue the erasure, recorded as the caller's; the job's id. Redis's errors if the queue
    is unreachable (nothing is erased then)."""
    _whole_organisation(caller, writes=True)
    return erasure.erase_enqueue(org_id=caller.org_id, scope=scope, user_id=getattr(caller.user, "pk", None))


def erasure_status(caller: Caller, job_id) -> erasure.ErasureStatus | None:
    _whole_organisation(caller)
    return erasure.erase_status(org_id=caller.org_id, job_id=str(job_id))


def export_count(caller: Caller, scope: ExportScope) -> int:
    _whole_organisation(caller)
    return export.memory_count(org_id=caller.org_id, scope=scope)


def export_lines(caller: Caller, *, org, scope: ExportScope, embeddings: bool) -> Iterator[str]:
    """The export file's lines, for a response to stream: they are read as they are sent,
    after the request's transaction, so in a boundary of their own (one snapshot, as the
    organisation)."""
    _whole_organisation(caller)

    def lines():
        with export.export_snapshot(), tenant_context(caller.org_id):
            yield from export.memories_export(org=org, scope=scope, embeddings=embeddings)

    return lines()


def import_start(caller: Caller, *, chunks: Iterator[bytes], name: str, skip_bad_lines: bool) -> str:
    """Keep the uploaded file and queue its import; the job's id. OSError if the file cannot be
    kept, Redis's errors if the queue is unreachable (nothing is kept then)."""
    _whole_organisation(caller, writes=True)
    return importing.import_enqueue(org_id=caller.org_id, chunks=chunks, name=name, skip_bad_lines=skip_bad_lines)


def import_status(caller: Caller, job_id) -> importing.ImportStatus | None:
    _whole_organisation(caller)
    return importing.import_status(org_id=caller.org_id, job_id=str(job_id))
