from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from memories.errors import InvalidInput, NotFound
from memories.lifecycle import erasure
from tenants.context import tenant_context
from tenants.management import lookups


class Command(BaseCommand):
    help = ("Erase memories for good, with everything that refers to them (memories.lifecycle.erasure): "
            "under a namespace prefix, of an agent, of a session, or the organisation's whole memory. "
            "Without --yes it only counts what would go.")

    def add_arguments(self, parser):
        parser.add_argument("org", help="The organisation (slug or id).")
        scope = parser.add_mutually_exclusive_group(required=True)
        scope.add_argument("--namespace", help="A namespace prefix, labels joined with '/' (users/alice): it and "
                                               "every namespace under it.")
        scope.add_argument("--agent", help="An agent (name or id): every memory it wrote, its sessions, retrieval "
                                           "events and idempotency records. The agent and its keys stay.")
        scope.add_argument("--session", help="A session's id: its memories and the session.")
        scope.add_argument("--all", action="store_true", dest="everything",
                           help="The organisation's whole memory. The organisation, its agents, keys and "
                                "operators stay.")
        parser.add_argument("--yes", action="store_true", help="Erase. Without it the command counts and erases "
                                                               "nothing.")

    def handle(self, *args, org, namespace=None, agent=None, session=None, everything=False, yes=False, **options):
        organization = lookups.organization_find(org)
        try:
            scope = erasure.ErasureScope(
                namespace=namespace.strip("/") if namespace is not None else None,
                agent_id=lookups.agent_find(organization, agent).id if agent else None,
                session_id=lookups.uuid_or_error(session, "session") if session else None,
                everything=everything)
        except InvalidInput as exc:
            raise CommandError(exc.message) from None
        bar = tqdm(desc="erasing memories", unit="memory", file=self.stderr, disable=not yes)

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        try:
            with tenant_context(organization.id):
                outcome = erasure.erase(organization.id, scope, via="command", dry_run=not yes, progress=progress)
        except NotFound as exc:
            raise CommandError(f"{organization.slug}: {exc.message}") from None
        finally:
            bar.close()
        counted = ", ".join(f"{kind.replace('_', ' ')}: {count}" for kind, count in outcome.counts.items() if count)
        if not yes:
            self.stdout.write(f"{organization.slug}, {scope.describe()}: would erase {counted}.\n"
                              "Nothing was erased; run again with --yes to erase it.")
            return
        self.stdout.write(f"{organization.slug}, {scope.describe()}: erased {counted} "
                          f"(erasure {outcome.erasure.pk}).")
