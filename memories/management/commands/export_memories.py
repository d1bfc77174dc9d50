import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from memories.lifecycle import export
from memories.lifecycle.portability import ExportScope
from tenants.context import tenant_context
from tenants.management import lookups


class Command(BaseCommand):
    help = ("Export memories as JSONL (memories.lifecycle.export): the organisation's, an agent's, or those under a "
            "namespace, with their versions, tags, relationships, entities, artifacts and provenance. "
            "`import_memories` reads the file, here or in another deployment.")

    def add_arguments(self, parser):
        parser.add_argument("org", help="The organisation (slug or id).")
        parser.add_argument("--agent", help="Only the memories this agent (name or id) wrote.")
        parser.add_argument("--namespace", help="Only the memories under this namespace prefix, labels joined with "
                                                "'/' (users/alice: it and users/alice/..., never users/alice2).")
        parser.add_argument("--output", required=True, help="The file to write (FILE.jsonl).")
        parser.add_argument("--without-embeddings", action="store_true",
                            help="Leave the vectors out (a file a third the size): the importing deployment embeds "
                                 "the memories again.")

    def handle(self, *args, org, agent=None, namespace=None, output, without_embeddings=False, **options):
        organization = lookups.organization_find(org)
        found = lookups.agent_find(organization, agent) if agent else None
        if namespace is not None and not namespace.strip("/"):
            raise CommandError("the namespace is empty: leave --namespace out to export every namespace")
        scope = ExportScope(namespace=namespace.strip("/") if namespace is not None else None,
                            agent_id=found.id if found else None, agent_name=found.name if found else None)
        target = Path(output)
        partial = target.with_name(target.name + ".partial")  # the file appears whole, or not at all
        with export.export_snapshot(), tenant_context(organization.id):
            total = export.memory_count(org_id=organization.id, scope=scope)
            bar = tqdm(total=total, desc="exporting memories", unit="memory", file=self.stderr)
            try:
                with partial.open("w", encoding="utf-8") as file:
                    for text in export.memories_export(org=organization, scope=scope,
                                                       embeddings=not without_embeddings,
                                                       progress=lambda done: bar.update(done - bar.n)):
                        file.write(text)
            except OSError as exc:
                partial.unlink(missing_ok=True)
                raise CommandError(f"cannot write {output}: {exc.strerror}") from None
            except BaseException:
                partial.unlink(missing_ok=True)
                raise
            finally:
                bar.close()
        os.replace(partial, target)
        self.stdout.write(f"{organization.slug}, {scope.describe()}: exported {total} memories to {output}.")
