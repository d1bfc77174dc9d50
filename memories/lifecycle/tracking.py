"""Long operations an operator starts in the console and follows there (an import, an
erasure): a job on the worker's queue that keeps its progress in its own metadata, read back
by its id for its organisation only."""

from __future__ import annotations

from dataclasses import dataclass

KEPT_SECONDS = 24 * 3600  # how long a finished job's outcome can be read
RUNNING = ("queued", "started", "scheduled", "deferred")


@dataclass
class Tracked:
    state: str  # queued, started, finished, failed
    meta: dict
    result: dict | None  # what the job returned once finished


def tracked_job(queue: str, *, org_id, job_id: str) -> Tracked | None:
    """The job of this organisation; None for an unknown job or another organisation's (the
    same answer: missing)."""
    import django_rq
    from rq.exceptions import NoSuchJobError
    from rq.job import Job

    try:
        job = Job.fetch(job_id, connection=django_rq.get_queue(queue).connection)
    except NoSuchJobError:
        return None
    if job.meta.get("org_id") != str(org_id):
        return None
    state = job.get_status(refresh=False)
    state = state.value if hasattr(state, "value") else str(state)
    return Tracked(state=state, meta=job.meta, result=job.return_value() if state == "finished" else None)


def report_progress(**progress) -> None:
    """Inside a tracked job: record how far it got (read by tracked_job's meta)."""
    from rq import get_current_job

    job = get_current_job()
    if job is not None:
        job.meta.update(progress)
        job.save_meta()
