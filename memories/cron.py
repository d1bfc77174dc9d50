"""Periodic jobs, run by `manage.py rqcron memories.cron` (started by `manage.py run`)."""

from rq import cron

from memories import jobs

# Completes embeddings deferred by a failed model call or an unreachable Redis.
cron.register(jobs.embed_pending, jobs.QUEUE, interval=60)
cron.register(jobs.purge_idempotency_records, "maintenance", interval=3600)
