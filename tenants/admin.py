from django import forms
from django.contrib import admin, messages
from django.contrib.postgres.forms import SimpleArrayField
from django.core.validators import validate_slug
from django.utils import timezone

from console.forms import AGENT_DESCRIPTION_MAX_CHARS, CleanCharField
from memories.intake.cleaning import Secrets
from memories.intake.redaction import redactor_for
from memories.models import NAMESPACE_MAX_CHARS
from tenants import services
from tenants.models import Agent, ApiKey, Membership, Organization

# Every text field here cleans what it reads as the console's do (memories.intake.cleaning).


class OrganizationForm(forms.ModelForm):
    name = CleanCharField(secrets=Secrets.REDACT, max_length=200)
    slug = CleanCharField(secrets=Secrets.REFUSE, max_length=64, validators=[validate_slug])

    class Meta:
        model = Organization
        fields = ["name", "slug", "is_active", "redact_personal_data"]


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    form = OrganizationForm
    list_display = ["name", "slug", "is_active", "redact_personal_data", "created_at"]
    list_filter = ["is_active", "redact_personal_data"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}


class AgentForm(forms.ModelForm):
    name = CleanCharField(secrets=Secrets.REFUSE, max_length=128)
    description = CleanCharField(secrets=Secrets.REDACT, required=False, max_length=AGENT_DESCRIPTION_MAX_CHARS,
                                 widget=forms.Textarea)

    class Meta:
        model = Agent
        fields = ["org", "name", "description", "is_active"]


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    form = AgentForm
    list_display = ["name", "org", "is_active", "created_at"]
    list_filter = ["is_active", "org"]
    search_fields = ["name", "description"]
    list_select_related = ["org"]


class ApiKeyForm(forms.ModelForm):
    name = CleanCharField(secrets=Secrets.REDACT, required=False, max_length=128)
    namespaces = SimpleArrayField(CleanCharField(secrets=Secrets.REFUSE, max_length=NAMESPACE_MAX_CHARS),
                                  required=False)

    class Meta:
        model = ApiKey
        fields = ["agent", "name", "namespaces", "read_only"]

    def clean_namespaces(self) -> list[str]:
        agent = self.cleaned_data.get("agent")
        namespaces = self.cleaned_data.get("namespaces") or []
        try:
            if agent is None:  # refused on its own field; the namespaces are checked once it is chosen
                return services.api_key_namespaces(namespaces)
            return services.api_key_reach(redactor=redactor_for(agent.org_id), namespaces=namespaces)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Issue a key by adding one (it is shown once, in the confirmation message); revoke with
    the action. A key's hash and prefix are never editable."""

    form = ApiKeyForm

    list_display = ["prefix", "name", "agent", "org", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["org", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["prefix", "name", "agent__name"]
    list_select_related = ["agent", "org"]
    readonly_fields = ["org", "prefix", "key_hash", "created_by", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    # A key's reach is chosen when it is issued and never widened afterwards: issue another.
    def get_fields(self, request, obj=None):
        reach = ["namespaces", "read_only"]
        return ["agent", "name", *reach] if obj is None else ["agent", "name", *reach, *self.readonly_fields]

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if obj is None else ["agent", "namespaces", "read_only", *self.readonly_fields]

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        issued, key = services.api_key_new(agent=obj.agent, name=obj.name, created_by=request.user,
                                           namespaces=obj.namespaces, read_only=obj.read_only)
        for field in ("org_id", "prefix", "key_hash", "created_by", "namespaces"):
            setattr(obj, field, getattr(issued, field))
        super().save_model(request, obj, form, change)
        messages.warning(request, f"New API key for {obj.agent.name} (shown only now): {key}")

    @admin.action(description="Revoke selected API keys")
    def revoke(self, request, queryset):
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"{count} API key(s) revoked.")


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "org", "role", "created_at"]
    list_filter = ["role", "org"]
    search_fields = ["user__username", "user__email"]
    list_select_related = ["user", "org"]
