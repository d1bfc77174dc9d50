"""What a search may return: SearchFilters, the SQL condition built from them, and the named
periods ("last_week") a search may be limited to.

A condition only ever narrows: every one starts from the organisation's own rows, and the
defaults leave out everything not live.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memories.store import values as store_values
from memories.access import namespace_sql
from memories.models import live_sql
from memory_platform import database

LIVE_STATUSES = ("active",)
# The named periods before now, the one list the API's time_range and the console's period offer.
TIME_PRESETS = {"last_day": timedelta(days=1), "last_week": timedelta(days=7), "last_month": timedelta(days=30)}


def time_preset(name: str) -> datetime:
    """When the named period (TIME_PRESETS) began."""
    return timezone.now() - TIME_PRESETS[name]


@dataclass
class SearchFilters:
    """What a search may return. Defaults exclude everything not live: expired, deleted,
    superseded, merged, archived and pending-review memories."""

    agent_ids: list = field(default_factory=list)
    session_id: object = None
    # The sessions an agent named so (their external_id, a thread's or a run's id), of any agent.
    session_external_id: str | None = None
    namespace: str | None = None  # prefix: "memories" also matches "memories/user-1"
    # The prefixes the caller's API key is limited to (memories.access): under any of them.
    within: tuple = ()
    categories: list = field(default_factory=list)
    memory_types: list = field(default_factory=list)
    statuses: list = field(default_factory=lambda: list(LIVE_STATUSES))
    sensitivity: list = field(default_factory=list)  # allow-list; empty means any
    require_verified: bool = False
    validation_statuses: list = field(default_factory=list)
    min_confidence: float | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    valid_at: datetime | None = None  # bi-temporal: only memories valid at this instant
    # When it happened (event_time, as the agent gave it), not when it was recorded: from
    # event_after (inclusive) to event_before (exclusive); event_months: in these months of
    # any year ("in June"). A memory without an event time is outside every such period.
    event_after: datetime | None = None
    event_before: datetime | None = None
    event_months: list = field(default_factory=list)
    tags: list = field(default_factory=list)  # all of them
    # The namespace store's items only (a key in their namespace), and of them those whose value
    # (their metadata) passes this LangGraph filter (memories.store.values).
    store_items: bool = False
    value_filter: dict | None = None
    include_expired: bool = False
    include_deleted: bool = False

    def where(self, org_id, alias: str = "m", tenant_index: bool = True) -> tuple[str, list]:
        """The SQL condition and its parameters. tenant_index=False spells the tenant test so no
        index serves it: full text's index chooses the tenant's rows itself (tenant_lexemes), and
        a bitmap of them ANDed into its matches only costs."""
        # On a Citus cluster the plain test, always: it is what routes the statement to the
        # organisation's shard (the text form would ask every shard).
        tenant_index = tenant_index or database.on_citus()
        conditions = [f"{alias}.org_id = %s" if tenant_index else f"{alias}.org_id::text = %s"]
        params = [org_id if tenant_index else str(org_id)]

        def add(sql, *values):
            conditions.append(sql.replace("{m}", alias))
            params.extend(values)

        if self.uses_live_index():
            # Spelled as the partial indexes are built (memories.models.live_sql), so the planner matches them.
            add(live_sql(alias))
        else:
            if not self.include_deleted:
                add("{m}.deleted_at IS NULL")
            if self.statuses:
                add("{m}.status = ANY(%s)", list(self.statuses))
        if not self.include_expired:
            add("({m}.expires_at IS NULL OR {m}.expires_at > now())")
        if self.agent_ids:
            add("{m}.agent_id = ANY(%s::uuid[])", [str(a) for a in self.agent_ids])
        if self.session_id:
            add("{m}.session_id = %s", self.session_id)
        if self.session_external_id is not None:
            add("{m}.session_id IN (SELECT s.id FROM sessions s WHERE s.org_id = %s AND s.external_id = %s)",
                org_id, self.session_external_id)
        for sql, values in self.namespace_conditions(f"{alias}.scope"):
            add(sql, *values)
        if self.categories:
            add("{m}.category = ANY(%s)", list(self.categories))
        if self.memory_types:
            add("{m}.memory_type = ANY(%s)", list(self.memory_types))
        if self.sensitivity:
            add("{m}.sensitivity = ANY(%s)", list(self.sensitivity))
        if self.require_verified:
            add("{m}.validation_status = 'verified'")
        if self.validation_statuses:
            add("{m}.validation_status = ANY(%s)", list(self.validation_statuses))
        if self.min_confidence is not None:
            add("{m}.confidence >= %s", self.min_confidence)
        if self.created_after:
            add("{m}.created_at >= %s", self.created_after)
        if self.created_before:
            add("{m}.created_at < %s", self.created_before)
        if self.event_after:
            add("{m}.event_time >= %s", self.event_after)
        if self.event_before:
            add("{m}.event_time < %s", self.event_before)
        if self.event_months:
            add("extract(month FROM {m}.event_time AT TIME ZONE 'UTC')::int = ANY(%s)", [int(m) for m in self.event_months])
        if self.valid_at:
            add("({m}.valid_from IS NULL OR {m}.valid_from <= %s) AND ({m}.valid_until IS NULL OR {m}.valid_until > %s)",
                self.valid_at, self.valid_at)
        for tag in self.tags:
            add("EXISTS (SELECT 1 FROM memory_tags t WHERE t.org_id = {m}.org_id AND t.memory_id = {m}.id AND t.tag = %s)",
                tag)
        if self.store_items:
            add("{m}.key IS NOT NULL")
        if self.value_filter:
            sql, values = store_values.filter_sql(store_values.filter_conditions(self.value_filter), f"{alias}.metadata")
            add(sql, *values)
        return " AND ".join(conditions), params

    def namespace_conditions(self, column: str) -> list[tuple[str, list]]:
        """The namespaces the search may look in, as conditions on `column` (a namespace) with
        their parameters: under its namespace filter, and under one of the key's prefixes."""
        conditions = []
        if self.namespace:
            conditions.append(namespace_sql(self.namespace, column))
        if self.within:
            under = [namespace_sql(prefix, column) for prefix in self.within]
            conditions.append(("(" + " OR ".join(sql for sql, _ in under) + ")",
                               [value for _, values in under for value in values]))
        return conditions

    def narrows(self) -> bool:
        """Whether anything beyond the defaults (the tenant's live memories) limits the rows."""
        defaults = SearchFilters()
        return any(getattr(self, name) != getattr(defaults, name) for name in self.__dataclass_fields__
                   if name not in ("include_expired", "include_deleted"))

    def uses_live_index(self) -> bool:
        """Whether the search is within live memories only, the rows the partial indexes (the
        approximate vector index among them) hold."""
        return not self.include_deleted and list(self.statuses) == list(LIVE_STATUSES)

    def as_json(self) -> dict:
        """The filters as a retrieval event records them (from_json reads them back)."""
        return {name: (value.isoformat() if hasattr(value, "isoformat") else
                       [str(v) for v in value] if isinstance(value, list) else
                       str(value) if isinstance(value, uuid.UUID) else value)
                for name, value in asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict) -> SearchFilters:
        values = dict(data)
        values["within"] = tuple(values.get("within") or ())
        for name in ("created_after", "created_before", "valid_at", "event_after", "event_before"):
            if values.get(name):
                values[name] = parse_datetime(values[name])
        return cls(**{name: value for name, value in values.items() if name in cls.__dataclass_fields__})
