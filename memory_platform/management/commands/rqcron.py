"""django-rq's `rqcron`, each periodic job's clock resumed from its last run.

RQ's scheduler starts every interval job's clock afresh, so every start enqueued every job at
once: each restart (a deploy, supervisord bringing back a cron that exited while Redis was
down) ran the strength bands' count over every organisation, the consolidation sweep, the
tenant indexes' sync and the rest together, while the web workers served their first requests
(the search benchmark's first seconds after a start: p95 three times the rest's). RQ records
when each job was enqueued (the cron job's history, a sorted set in Redis kept for a year): a
job resumes from its latest entry and runs at start only if it is due by then. A job with no
history (a new deployment, a Redis that lost its data) runs at once, as before.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone

from django_rq.cron import DjangoCronScheduler
from django_rq.management.commands import rqcron


class ResumingCronScheduler(DjangoCronScheduler):
    def resume(self) -> None:
        """Each interval job's last enqueue time, as its history in Redis has it."""
        for job in self.get_jobs():
            if job.interval is None:
                continue  # a cron expression's next time does not depend on the last run
            latest = self.connection.zrange(job.job_history_key, 0, 0, desc=True, withscores=True)
            if latest:
                job.set_enqueue_time(datetime.fromtimestamp(latest[0][1], tz=timezone.utc))

    def start(self):
        self.resume()
        super().start()


class Command(rqcron.Command):
    help = "Starts the RQ cron scheduler, each job's clock resumed from its last run"

    def handle(self, *args, config_path: str, logging_level: str, **options) -> None:
        scheduler = ResumingCronScheduler(logging_level=getattr(logging, logging_level))
        scheduler.load_config_from_file(config_path)
        self.stdout.write(f"Starting cron scheduler with {len(scheduler.get_jobs())} jobs from {config_path}")
        scheduler.start()
