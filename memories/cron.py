"""Periodic jobs, run by `manage.py rqcron memories.cron` (started by `manage.py run`; each job's
clock resumes from its last run: memory_platform/management/commands/rqcron.py)."""

from rq import cron

from memories import jobs
from memories.lifecycle import consolidation, decay, expiry, tallies
from memories.retrieval import events
from memories.understanding import lexicon
from memories.vectors import index as vector_index
from memory_platform.config import config

# Completes embeddings deferred by a failed model call or an unreachable Redis.
cron.register(jobs.embed_pending, jobs.QUEUE, interval=60)
cron.register(jobs.purge_idempotency_records, "maintenance", interval=3600)
# Writes the retrievals counted in Redis (memories.retrieval.events.reinforce_after_commit).
cron.register(events.flush_retrievals, "default", interval=config().retrievals_flush_seconds)
# Gives large tenants an HNSW index of their own, drops those no longer needed.
cron.register(vector_index.sync_tenant_indexes, "maintenance", interval=3600)
# Moves the deltas the write triggers append into each tenant's word statistics (BM25).
cron.register(lexicon.fold, "maintenance", interval=30)
# Moves the deltas the write triggers append into each tenant's memory tallies (the stats).
cron.register(tallies.fold, "maintenance", interval=30)
# Sets right the relationships two transactions racing on their memories left miscounted.
cron.register(tallies.repair_relationships, "maintenance", interval=3600)
# Counts each tenant's strength bands and weakest memories (the stats, the dashboard).
cron.register(decay.count_bands, "maintenance", interval=600, job_timeout=3600)
# Removes for good the memories past their expiry (they left every read when they expired).
cron.register(expiry.expire, "maintenance", interval=60)
# Archives what has faded (spec §4's nightly decay), at 03:00 UTC.
cron.register(decay.decay, "maintenance", cron="0 3 * * *", job_timeout=3600)
# Consolidates a recently closed session whose queued consolidation never ran.
cron.register(consolidation.consolidate_pending, "maintenance", interval=600, job_timeout=3600)
