"""The cron scheduler resumes each periodic job's clock from its last run (manage.py rqcron,
memory_platform/management/commands/rqcron.py): a restart enqueues what is due, not every job."""

import uuid
from datetime import timedelta

import pytest
from rq import Queue
from rq.utils import now

from memory_platform.management.commands.rqcron import ResumingCronScheduler


def noop():
    """A job for these tests' schedules."""


@pytest.fixture
def scheduler_after_restart(embedded_servers):
    """A scheduler as `rqcron` starts it, with three jobs of their own names (so no other
    scheduler's history is read), and the jobs it enqueued removed after the test."""
    names = {kind: f"test-cron-{kind}-{uuid.uuid4().hex[:8]}" for kind in ("recent", "overdue", "new")}
    made = []

    def make():
        scheduler = ResumingCronScheduler()
        for kind, name in names.items():
            scheduler.register(noop, "maintenance", interval=600, name=name)
        scheduler.register(noop, "maintenance", cron="0 3 * * *", name=names["recent"] + "-nightly")
        made.append(scheduler)
        return scheduler

    yield make, names
    connection = made[0].connection
    for job in made[0].get_jobs():
        for job_id in job.get_job_ids(connection):
            Queue("maintenance", connection=connection).remove(job_id)
        connection.delete(job.job_history_key)


def enqueued_names(scheduler) -> set[str]:
    return {job.name for job in scheduler.enqueue_jobs()}


def test_a_restart_enqueues_only_the_jobs_that_are_due(scheduler_after_restart):
    make, names = scheduler_after_restart
    first = make()
    # A first start with no history: every interval job runs at once (the nightly one waits).
    assert enqueued_names(first) == set(names.values())
    # The "overdue" job last ran 11 minutes ago (its interval is 10), as Redis recorded it.
    overdue = next(job for job in first.get_jobs() if job.name == names["overdue"])
    [job_id] = overdue.get_job_ids(first.connection)
    first.connection.zadd(overdue.job_history_key, {job_id: (now() - timedelta(minutes=11)).timestamp()})
    # Another scheduler has never run the "new" job.
    first.connection.delete(next(job for job in first.get_jobs() if job.name == names["new"]).job_history_key)

    restarted = make()
    restarted.resume()
    assert enqueued_names(restarted) == {names["overdue"], names["new"]}
    recent = next(job for job in restarted.get_jobs() if job.name == names["recent"])
    assert now() + timedelta(minutes=9) < recent.next_enqueue_time <= now() + timedelta(minutes=10)
    # Once enqueued, the overdue job's clock starts again from now, like the others'.
    assert enqueued_names(restarted) == set()

