"""The console's forms: what an operator may type, checked before any service runs. Every text
field is a CleanCharField (memories.intake.cleaning: storable, within its length, and what becomes of a
secret in it, which it states); tests/unit/test_cleaning_fields.py keeps it so."""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta

from django import forms
from django.utils import timezone

from memories.intake.cleaning import SECRET_RULES, Secrets, Unclean, clean_text
from memories.models import CONTENT_MAX_CHARS, NAMESPACE_MAX_CHARS, Entity, Memory, RetrievalEvent
from memories.retrieval.filters import TIME_PRESETS, SearchFilters, time_preset

TAG_PATTERN = re.compile(r"^[\w.:/-]{1,64}$")
SORTS = {
    "newest": ("Newest first", ["-created_at", "-id"]),
    "oldest": ("Oldest first", ["created_at", "id"]),
    "confidence": ("Confidence", ["-confidence", "-created_at", "-id"]),
    "importance": ("Importance", ["-importance", "-created_at", "-id"]),
    "updated": ("Recently changed", ["-updated_at", "-id"]),
    # The memories retrieved at least once, the most retrieved first: paged by key over
    # memory_usage (console.views.memories.MOST_RETRIEVED; docs/adr/0051).
    "retrieved": ("Most retrieved", ["-retrieval_count", "-id"]),
}
ALL_STATUSES = "any"


class CleanCharField(forms.CharField):
    """Text an operator types, cleaned once the CharField's own checks passed; `secrets` says
    what becomes of a secret in it (memories.intake.cleaning.Secrets)."""

    def __init__(self, *, secrets: Secrets, **kwargs):
        self.secrets = secrets
        super().__init__(**kwargs)

    def clean(self, value):
        value = super().clean(value)
        try:
            # Shown beside the field, as Django's "This field is required." is.
            return clean_text(value, field="This field", secrets=self.secrets, max_length=self.max_length)
        except Unclean as problem:
            raise forms.ValidationError(problem.message) from None

    def bound_data(self, data, initial):
        """What a form shown again (after an error) holds: the text as it would be kept, never a
        secret the operator typed, refused or not. A lookup (a search box) shows what was typed."""
        if isinstance(data, str) and self.secrets is not Secrets.LOOKUP:
            return SECRET_RULES.plain(data)
        return data


def parse_tags(raw: str) -> list[str]:
    """Tags typed as a comma- or space-separated list; each must look like a tag."""
    tags = [tag.strip() for tag in re.split(r"[,\s]+", raw or "") if tag.strip()]
    bad = [tag for tag in tags if not TAG_PATTERN.match(tag)]
    if bad:
        raise forms.ValidationError(
            f"not a tag: {bad[0]!r} (letters, digits and . : / - _, at most 64 characters)")
    return sorted(set(tags))


class NamespaceFilterField(CleanCharField):
    """A namespace prefix to filter by, as typed: "users/42" holds users/42 and users/42/...
    (memories.access.namespace_bounds), never users/420. Empty: every namespace."""

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", "a prefix: users/42 also shows users/42/...")
        super().__init__(secrets=Secrets.LOOKUP, required=False, max_length=NAMESPACE_MAX_CHARS, **kwargs)

    def clean(self, value):
        value = (super().clean(value) or "").strip().strip("/")
        if value and any(not label.strip() for label in value.split("/")):
            raise forms.ValidationError("a namespace is labels joined with '/', none of them empty")
        return value


class NamespaceForm(forms.Form):
    """The namespace filter of the review queue and the conflicts."""

    namespace = NamespaceFilterField()


class SessionFilterForm(forms.Form):
    """The sessions list's filters, all of them in the query string."""

    namespace = NamespaceFilterField()
    agent = forms.ChoiceField(required=False)
    state = forms.ChoiceField(required=False, choices=[("", "open or closed"), ("open", "open"), ("closed", "closed")])

    def __init__(self, *args, agents=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent"].choices = [("", "any")] + [(str(agent.pk), agent.name) for agent in agents]


def _choices(values, blank="any"):
    return [("", blank)] + [(value, value.replace("_", " ")) for value in values]


class MemoryFilterForm(forms.Form):
    """The memory browser's state, all of it in the query string."""

    q = CleanCharField(secrets=Secrets.LOOKUP, required=False, max_length=2000, label="Search")
    namespace = NamespaceFilterField()
    agent = forms.ChoiceField(required=False)
    category = forms.ChoiceField(required=False, choices=_choices(Memory.Category.values))
    memory_type = forms.ChoiceField(required=False, choices=_choices(Memory.MemoryType.values))
    status = forms.ChoiceField(required=False, choices=[("", "active"), (ALL_STATUSES, "any status")]
                               + [(s, s.replace("_", " ")) for s in Memory.Status.values if s != "active"])
    validation_status = forms.ChoiceField(required=False, choices=_choices(Memory.ValidationStatus.values))
    sensitivity = CleanCharField(secrets=Secrets.LOOKUP, required=False, max_length=64)
    tags = CleanCharField(secrets=Secrets.LOOKUP, required=False, max_length=500, help_text="all of these")
    period = forms.ChoiceField(required=False, choices=[
        ("", "any time"), *[(name, name.replace("_", " ")) for name in TIME_PRESETS], ("custom", "between dates")])
    created_after = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    created_before = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    sort = forms.ChoiceField(required=False, choices=[("", "relevance / newest")]
                             + [(key, label) for key, (label, _) in SORTS.items()])
    deleted = forms.BooleanField(required=False, label="include deleted")

    def __init__(self, *args, agents=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent"].choices = [("", "any")] + [(str(agent.pk), agent.name) for agent in agents]

    def clean_tags(self):
        return parse_tags(self.cleaned_data["tags"])

    def clean(self):
        data = super().clean()
        after, before = data.get("created_after"), data.get("created_before")
        if after and before and after > before:
            self.add_error("created_before", "must be on or after the start date")
        return data

    def search_filters(self) -> SearchFilters:
        data = self.cleaned_data
        status = data.get("status")
        after = before = None
        if data.get("period") in TIME_PRESETS:
            after = time_preset(data["period"])
        if data.get("created_after"):
            after = timezone.make_aware(datetime.combine(data["created_after"], time.min))
        if data.get("created_before"):
            before = timezone.make_aware(datetime.combine(data["created_before"] + timedelta(days=1), time.min))
        return SearchFilters(
            agent_ids=[data["agent"]] if data.get("agent") else [],
            categories=[data["category"]] if data.get("category") else [],
            memory_types=[data["memory_type"]] if data.get("memory_type") else [],
            statuses=[] if status == ALL_STATUSES else [status or "active"],
            validation_statuses=[data["validation_status"]] if data.get("validation_status") else [],
            sensitivity=[data["sensitivity"].strip()] if data.get("sensitivity", "").strip() else [],
            tags=data.get("tags") or [],
            created_after=after,
            created_before=before,
            include_expired=status == ALL_STATUSES,
            namespace=data.get("namespace") or None,
            include_deleted=bool(data.get("deleted")),
        )


class TagsForm(forms.Form):
    tags = CleanCharField(secrets=Secrets.REFUSE, max_length=500, label="Add tags")

    def clean_tags(self):
        tags = parse_tags(self.cleaned_data["tags"])
        if not tags:
            raise forms.ValidationError("type at least one tag")
        return tags


class MemoryEditForm(forms.Form):
    content = CleanCharField(secrets=Secrets.RECORDED, widget=forms.Textarea(attrs={"rows": 6}),
                             max_length=CONTENT_MAX_CHARS, strip=True)
    category = forms.ChoiceField(choices=Memory.Category.choices)
    memory_type = forms.ChoiceField(choices=Memory.MemoryType.choices)
    confidence = forms.DecimalField(min_value=0, max_value=1, decimal_places=3)
    importance = forms.DecimalField(min_value=0, max_value=1, decimal_places=3)
    sensitivity = CleanCharField(secrets=Secrets.REFUSE, max_length=64)
    version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)
    reason = CleanCharField(secrets=Secrets.REDACT, required=False, max_length=500, label="Why (kept in the version)")


class SupersedeForm(forms.Form):
    content = CleanCharField(secrets=Secrets.RECORDED, widget=forms.Textarea(attrs={"rows": 4}),
                             max_length=CONTENT_MAX_CHARS, label="Corrected memory")
    reason = CleanCharField(secrets=Secrets.REDACT, required=False, max_length=500)
    version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)


class ReasonForm(forms.Form):
    reason = CleanCharField(secrets=Secrets.REDACT, max_length=500, strip=True)


class TagRemoveForm(forms.Form):
    # No tag holds a secret (adding one refuses it), so one sent with a secret is refused unquoted.
    tag = CleanCharField(secrets=Secrets.REFUSE, max_length=64)


class ActionForm(forms.Form):
    """A change of a memory's state (archive, confirm, delete, restore): why, if said, and the
    version it was made on."""

    reason = CleanCharField(secrets=Secrets.REDACT, required=False, max_length=500)
    version = forms.IntegerField(required=False, min_value=1)


class BulkForm(forms.Form):
    ACTIONS = [("tag", "Add tags"), ("archive", "Archive"), ("approve", "Approve")]
    action = forms.ChoiceField(choices=ACTIONS)
    ids = forms.TypedMultipleChoiceField(coerce=str)
    tags = CleanCharField(secrets=Secrets.REFUSE, required=False, max_length=500)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["ids"].choices = [(value, value) for value in self.data.getlist("ids")][:500]
        self.fields["ids"].error_messages["required"] = "select at least one memory"

    def clean_ids(self):
        import uuid

        try:
            return [uuid.UUID(value) for value in self.cleaned_data["ids"]]
        except ValueError:
            raise forms.ValidationError("not a memory id") from None

    def clean(self):
        data = super().clean()
        if data.get("action") == "tag":
            try:
                data["tags"] = parse_tags(data.get("tags", ""))
            except forms.ValidationError as error:
                self.add_error("tags", error)
                return data
            if not data["tags"]:
                self.add_error("tags", "type the tags to add")
        return data


class ResolveForm(forms.Form):
    resolution = forms.ChoiceField(choices=[("keep", "keep one"), ("merge", "merge both"), ("both_valid", "both valid")])
    keep = forms.UUIDField(required=False)
    content = CleanCharField(secrets=Secrets.RECORDED, required=False, max_length=CONTENT_MAX_CHARS,
                             widget=forms.Textarea(attrs={"rows": 5}))
    reason = CleanCharField(secrets=Secrets.REDACT, required=False, max_length=500)


class EventFilterForm(forms.Form):
    agent = forms.ChoiceField(required=False)
    kind = forms.ChoiceField(required=False, choices=_choices(RetrievalEvent.Kind.values))
    q = CleanCharField(secrets=Secrets.LOOKUP, required=False, max_length=200, label="Query contains")

    def __init__(self, *args, agents=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent"].choices = [("", "any")] + [(str(agent.pk), agent.name) for agent in agents]


class EntityFilterForm(forms.Form):
    """The entity list's state, all of it in the query string."""

    q = CleanCharField(secrets=Secrets.LOOKUP, required=False, max_length=256, label="Name or alias")
    kind = forms.ChoiceField(required=False, choices=_choices(Entity.Kind.values))
    namespace = NamespaceFilterField()


AGENT_DESCRIPTION_MAX_CHARS = 2000


class AgentForm(forms.Form):
    # An agent's name is unique in its organisation: it identifies the agent, so it is refused
    # rather than redacted (two names redacted alike would collide).
    name = CleanCharField(secrets=Secrets.REFUSE, max_length=128)
    description = CleanCharField(secrets=Secrets.REDACT, required=False, max_length=AGENT_DESCRIPTION_MAX_CHARS,
                                 widget=forms.Textarea(attrs={"rows": 2}))


class ApiKeyForm(forms.Form):
    name = CleanCharField(secrets=Secrets.REDACT, required=False, max_length=128, label="Key name")
    namespaces = CleanCharField(
        secrets=Secrets.REFUSE, required=False, max_length=2000, label="Only namespaces",
        help_text="Comma-separated prefixes such as users/alice; empty: the whole organisation.")
    read_only = forms.BooleanField(required=False, label="Read-only")

    def clean_namespaces(self) -> list[str]:
        from tenants.services import api_key_namespaces

        try:
            return api_key_namespaces(p for p in self.cleaned_data["namespaces"].split(",") if p.strip())
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None


class ExportForm(forms.Form):
    """What to download: the organisation, an agent's memories, a namespace's, or both."""

    agent = forms.ChoiceField(required=False)
    namespace = NamespaceFilterField(help_text="A prefix: users/alice covers users/alice/... too, never users/alice2.")
    without_embeddings = forms.BooleanField(required=False, label="without vectors (a third the size; the "
                                                                  "importing deployment embeds them again)")

    def __init__(self, *args, agents=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.agents = {str(agent.pk): agent for agent in agents}
        self.fields["agent"].choices = [("", "every agent")] + [(key, a.name) for key, a in self.agents.items()]

    def clean_namespace(self) -> str | None:
        return self.cleaned_data["namespace"] or None


class ImportForm(forms.Form):
    file = forms.FileField(label="JSONL file", help_text="A file export_memories (or this page) wrote.")
    skip_bad_lines = forms.BooleanField(required=False, label="import the good lines and list the bad ones "
                                                              "(otherwise a bad line stops the import, nothing "
                                                              "imported)")


class EraseForm(forms.Form):
    """What to erase for good: a namespace prefix, an agent's memories, a session's, or the
    whole organisation's memory; `confirm` (the organisation's slug, typed) once counted."""

    SCOPES = (("namespace", "a namespace (an end user's memories)"), ("agent", "an agent's memories"),
              ("session", "a session's memories"), ("all", "the organisation's whole memory"))

    scope = forms.ChoiceField(choices=SCOPES, widget=forms.RadioSelect, initial="namespace", label="Erase")
    # Kept in the erasure's record: a secret in it is refused (no namespace can hold one).
    namespace = CleanCharField(secrets=Secrets.REFUSE, required=False, max_length=NAMESPACE_MAX_CHARS,
                               help_text="A prefix: users/alice covers users/alice/... too, never users/alice2.")
    agent = forms.ChoiceField(required=False)
    session = forms.UUIDField(required=False, help_text="The session's id.")
    confirm = CleanCharField(secrets=Secrets.LOOKUP, required=False, max_length=128,
                             label="To erase, type the organisation's slug")

    def __init__(self, *args, agents=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.agents = {str(agent.pk): agent for agent in agents}
        self.fields["agent"].choices = [("", "choose an agent")] + [(key, a.name) for key, a in self.agents.items()]

    def clean(self):
        data = super().clean()
        scope = data.get("scope")
        namespace = (data.get("namespace") or "").strip().strip("/")
        data["namespace"] = namespace
        if scope == "namespace" and not namespace:
            self.add_error("namespace", "Give the namespace to erase.")
        if scope == "agent" and not data.get("agent"):
            self.add_error("agent", "Choose the agent whose memories to erase.")
        if scope == "session" and not data.get("session"):
            self.add_error("session", "Give the session's id.")
        return data

    def erasure_scope(self):
        """The memories.lifecycle.erasure scope the valid form names."""
        from memories.lifecycle.erasure import ErasureScope

        data, scope = self.cleaned_data, self.cleaned_data["scope"]
        return ErasureScope(namespace=data["namespace"] if scope == "namespace" else None,
                            agent_id=self.agents[data["agent"]].pk if scope == "agent" else None,
                            session_id=data["session"] if scope == "session" else None,
                            everything=scope == "all")

    def confirmed(self, slug: str) -> bool:
        return self.cleaned_data.get("confirm", "").strip() == slug
