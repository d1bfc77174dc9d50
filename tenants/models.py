"""Organisations and who acts for them: agents, their sessions and API keys, operator memberships.

Every table here but organizations carries org_id, and every reference between tenant rows is
a composite foreign key (org_id, x_id) -> (org_id, id): a row can never point into another
organisation, and the tables can be distributed by org_id (docs/adr/0032).
"""

import uuid
from collections import defaultdict

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models, router, transaction
from django.db.models import F, Q
from django.db.models.functions import Length

from memory_platform.references import clear_references

# `content__length__gt=0` and the like, in check constraints and queries.
models.CharField.register_lookup(Length)
models.TextField.register_lookup(Length)


class Organization(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=64, unique=True)
    is_active = models.BooleanField(default=True)
    # Policy: also redact e-mail addresses, card numbers and phone numbers from everything
    # stored (secrets are always redacted; memories.intake.redaction).
    redact_personal_data = models.BooleanField(
        default=False, help_text="Also redact e-mail addresses, card numbers and phone numbers before storing.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "organizations"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TenantModel(models.Model):
    """A row owned by one organisation; row-level security keys on org_id."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # The constraint (ON DELETE CASCADE) is declared by the migration, like every other here.
    org = models.ForeignKey(
        Organization,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,  # the (org_id, id) primary key leads with it
        db_column="org_id",
        related_name="+",
    )

    class Meta:
        abstract = True

    def _do_update(self, base_qs, using, pk_val, values, update_fields, forced_update):
        """Saving a row updates it by organisation and id, (org_id, id) being its key: on a
        Citus cluster the UPDATE then goes to the organisation's shard only, as a router
        statement (an UPDATE by id alone asks every shard, and with the memories' triggers is
        refused there: docs/adr/0042)."""
        return super()._do_update(base_qs.filter(org_id=self.org_id), using, pk_val, values, update_fields,
                                  forced_update)


class TenantForeignKey(models.ForeignKey):
    """A foreign key whose joins also match org_id: `JOIN entities e ON e.id = a.entity_id AND
    e.org_id = a.org_id`, the composite key the database declares. The same rows join (a
    reference never leaves its organisation); on a Citus cluster the join is then on the
    distribution column, so it runs inside one organisation's shard group (docs/adr/0042)."""

    def get_joining_fields(self, reverse_join=False):
        fields = super().get_joining_fields(reverse_join)
        own, theirs = self.model._meta.get_field("org"), self.related_model._meta.get_field("org")
        return (*fields, (theirs, own) if reverse_join else (own, theirs))

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        return name, "django.db.models.ForeignKey", args, kwargs  # the column is the same


class ReferencesClearedQuerySet(models.QuerySet):
    """A delete that first empties the references to the rows it deletes (their composite
    foreign keys are ON DELETE NO ACTION, memory_platform.references): Django admin's, a
    command's, a test's. SQL that deletes calls clear_references itself."""

    def delete(self):
        with transaction.atomic(using=self.db, savepoint=False):
            _clear_references_to(self.model, self.values_list("org_id", "pk"), using=self.db)
            return super().delete()

    delete.alters_data = True
    delete.queryset_only = True


def _clear_references_to(model, rows, *, using: str) -> None:
    ids_by_org = defaultdict(list)
    for org_id, pk in rows:
        ids_by_org[org_id].append(pk)
    for org_id, ids in ids_by_org.items():
        clear_references(model._meta.db_table, org_id=org_id, rows=ids, using=using)


class ReferencedTenantModel(TenantModel):
    """A tenant row that other rows may refer to and outlive (a session's agent, a memory's
    superseded_by...): deleting it, one or a queryset of them, empties those references first,
    in the same transaction."""

    objects = ReferencesClearedQuerySet.as_manager()

    class Meta:
        abstract = True

    def delete(self, using=None, keep_parents=False):
        using = using or router.db_for_write(type(self), instance=self)
        with transaction.atomic(using=using, savepoint=False):
            _clear_references_to(type(self), [(self.org_id, self.pk)], using=using)
            return super().delete(using=using, keep_parents=keep_parents)


def tenant_fk(to, *, null=False, related_name="+", db_column=None, **kwargs):
    """A reference to another tenant row.

    The database owns the constraint and its ON DELETE action: a composite foreign key
    (org_id, <column>) -> (org_id, id) declared in the migration (memory_platform/schema.py).
    Django neither creates a single-column constraint nor emulates cascades in Python, and
    joins along it on both columns (TenantForeignKey). A nullable reference that outlives its
    row is ON DELETE NO ACTION and emptied before the row goes (memory_platform.references;
    the model referred to is a ReferencedTenantModel).
    """
    return TenantForeignKey(
        to,
        on_delete=models.DO_NOTHING,
        null=null,
        blank=null,
        db_constraint=False,
        db_index=False,  # the migration indexes (org_id, <column>) with the constraint
        related_name=related_name,
        db_column=db_column,
        **kwargs,
    )


def user_fk(*, null=False, related_name="+"):
    """A reference to an operator account; the migration declares its ON DELETE action."""
    return models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,  # indexed with the constraint the migration declares
        null=null,
        blank=null,
        related_name=related_name,
    )


class Agent(ReferencedTenantModel):
    name = models.CharField(max_length=128)
    description = models.TextField(blank=True, default="")
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "agents"
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["org", "name"], name="agents_org_name_unique"),
            models.CheckConstraint(condition=~Q(name=""), name="agents_name_not_empty"),
        ]

    def __str__(self) -> str:
        return self.name


class Session(ReferencedTenantModel):
    """A conversation or task run of an agent (spec §0's prerequisite, spec §2's sessions)."""

    agent = tenant_fk(Agent, null=True, related_name="sessions")
    namespace = models.CharField(max_length=256, blank=True, default="", db_column="scope")
    external_id = models.CharField(max_length=256, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # When the consolidation of the closed session ran (memories.lifecycle.consolidation), and
    # what it proposed: it runs once; its sweep picks up a recently closed one not reached.
    consolidated_at = models.DateTimeField(null=True, blank=True)
    consolidation = models.JSONField(null=True, blank=True)

    class Meta:
        db_table = "sessions"
        ordering = ["-started_at"]
        indexes = [
            models.Index(fields=["org", "agent", "-started_at"], name="sessions_org_agent_started"),
            # The list of sessions, newest first, paged by key (memories.keyset).
            models.Index(F("org"), F("started_at").desc(), F("id").desc(), name="sessions_org_started"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(ended_at__isnull=True) | Q(ended_at__gte=models.F("started_at")),
                name="sessions_ends_after_start",
            ),
        ]


class ApiKey(TenantModel):
    """A bearer key for one agent. Only its SHA-256 is stored; the key is shown once."""

    agent = tenant_fk(Agent, related_name="api_keys")
    name = models.CharField(max_length=128, blank=True, default="")
    prefix = models.CharField(max_length=16, help_text="The key's first characters, to recognise it.")
    key_hash = models.CharField(max_length=64)
    created_by = user_fk(null=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # What the key may reach (memories.access.KeyReach). By default an agent's key reaches its
    # whole organisation: agents of one organisation share what they remember.
    namespaces = ArrayField(
        models.CharField(max_length=256), default=list, blank=True,
        help_text="Namespace prefixes (joined with '/') the key is limited to; empty: the whole organisation.")
    read_only = models.BooleanField(default=False, help_text="The key may read and search, never write.")

    class Meta:
        db_table = "api_keys"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["key_hash"], name="api_keys_key_hash")]
        constraints = [
            models.UniqueConstraint(fields=["org", "key_hash"], name="api_keys_org_key_hash_unique"),
            models.CheckConstraint(condition=Q(key_hash__regex=r"^[0-9a-f]{64}$"), name="api_keys_hash_is_sha256"),
        ]

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'unnamed'})"


class Membership(TenantModel):
    """An operator's role in one organisation."""

    class Role(models.TextChoices):
        VIEWER = "viewer", "Viewer"
        OPERATOR = "operator", "Operator"
        ADMIN = "admin", "Admin"

    user = user_fk(related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memberships"
        constraints = [
            models.UniqueConstraint(fields=["org", "user"], name="memberships_org_user_unique"),
            models.CheckConstraint(condition=Q(role__in=["viewer", "operator", "admin"]), name="memberships_role_valid"),
        ]
