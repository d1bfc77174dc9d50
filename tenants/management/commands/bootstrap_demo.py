import os
import secrets
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from memory_platform import local_services
from memory_platform.security import DEFAULT_BIND, base_url
from tenants import services
from tenants.context import service_account, tenant_context
from tenants.models import ApiKey, Membership

DEMO_KEY_NAME = "demo key"
# Kept in the data folder, readable by this user only: the demo key (reused while it is active)
# and the local administrator's first password (shown while it is still the password).
DEMO_KEY_FILE = "demo_api_key"
ADMIN_PASSWORD_FILE = "admin_password"
ADMIN_USERNAME = "admin"


def read_private(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def write_private(path: Path, value: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(value + "\n")
    path.chmod(0o600)  # an existing file keeps its mode through os.open


def demo_key(agent, folder: Path) -> tuple[ApiKey, str, bool]:
    """The demo key kept in the data folder while it is still active; else a new one, kept there.
    Every other demo key of the agent is revoked: one demo key is valid at a time.
    Returns the row, the key and whether it was issued now. In the tenant's context."""
    kept = read_private(folder / DEMO_KEY_FILE)
    current = None
    if kept:
        current = ApiKey.objects.filter(agent=agent, key_hash=services.api_key_hash(kept),
                                        revoked_at__isnull=True).first()
    issued = current is None
    if issued:
        current, kept = services.api_key_issue(agent=agent, name=DEMO_KEY_NAME)
        write_private(folder / DEMO_KEY_FILE, kept)
    for older in ApiKey.objects.filter(agent=agent, name=DEMO_KEY_NAME, revoked_at__isnull=True).exclude(pk=current.pk):
        services.api_key_revoke(api_key=older)
    return current, kept, issued


def admin_account(folder: Path) -> tuple[str, str | None]:
    """The local administrator (a staff superuser, for /admin/): made once with a random password
    kept in the data folder. Returns its username and that password while it still signs in
    (None once it was changed, or for an account this command did not make)."""
    User = get_user_model()
    path = folder / ADMIN_PASSWORD_FILE
    user = User.objects.filter(username=ADMIN_USERNAME).first()
    if user is None:
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(username=ADMIN_USERNAME, email="", password=password)
        write_private(path, password)
        return ADMIN_USERNAME, password
    password = read_private(path)
    if password and user.is_active and user.is_staff and user.check_password(password):
        return ADMIN_USERNAME, password
    return ADMIN_USERNAME, None


class Command(BaseCommand):
    help = ("Create (or reuse) the demo organisation, agent and console user, and a local administrator; "
            "reuse the demo API key kept in the data folder (or issue one, revoking earlier demo keys); "
            "give the console user a fresh password, and print them.")

    def add_arguments(self, parser):
        parser.add_argument("--url", help="Where the console is served (default: from MEMORY_PLATFORM_BIND).")

    def handle(self, *args, url=None, **options):
        url = (url or base_url(os.environ.get("MEMORY_PLATFORM_BIND") or DEFAULT_BIND)).rstrip("/")
        folder = local_services.data_dir()
        with service_account():
            org, _ = services.organization_get_or_create(name="Demo organisation", slug="demo")
            admin_username, admin_password = admin_account(folder)
        # The console's demo operator gets a fresh password on every run, printed like the key.
        user, _ = services.operator_account(username="demo")
        password = secrets.token_urlsafe(12)
        user.set_password(password)
        user.save(update_fields=["password"])
        with tenant_context(org.id):
            agent, _ = services.agent_get_or_create(org=org, name="demo-agent")
            _, key, issued = demo_key(agent, folder)
            services.membership_set(org=org, user=user, role=Membership.Role.ADMIN)
        admin_line = (f"user {admin_username}, password {admin_password} (staff, kept in the data folder)"
                      if admin_password else
                      f"user {admin_username} (password changed: manage.py changepassword {admin_username})")
        self.stdout.write(
            "\n".join(
                [
                    "Demo tenant ready:",
                    f"  organisation  {org.name} ({org.id})",
                    f"  agent         {agent.name} ({agent.id})",
                    f"  API key       {key}",
                    "                (" + ("new; earlier demo keys revoked" if issued else "the same as last run")
                    + ", kept in the data folder)",
                    f"  console       {url}/console/",
                    f"                user demo, password {password} (new on every run), admin of {org.slug}",
                    f"  admin         {url}/admin/",
                    f"                {admin_line}",
                ]
            )
        )
