"""Writes to memories (docs/architecture.md, "The write path"), one module per family of
actions:

- kernel: the building blocks every write uses (actor, redaction, hashing, version rows,
  the embedding job, the hot set); other modules use these, never each other's insides;
- duplicates: near-duplicate detection (also run by the embedding job);
- create: new memories, one or a batch;
- change: edits and state changes (delete, restore, confirm, archive, supersede, feedback);
- review: a reviewer's approve and reject;
- tagging: tags and relationships;
- conflicts: contradictions and near-duplicates, and how an operator resolves them (keep one,
  merge both, or declare both valid);
- store: spec §3's namespace store (upsert by namespace and key).

Every write is one transaction, and every change of a memory leaves a MemoryVersion row (a
usefulness signal and a relationship are not versions of a memory); side effects (embedding
jobs, the hot set) run on commit. The caller's boundary has set the tenant (API authentication, the
console, a job, a command: tenants.context); writes assume it and filter by org_id anyway.
"""
