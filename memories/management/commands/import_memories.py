from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from memories.lifecycle import importing
from tenants.context import tenant_context
from tenants.management import lookups


class Command(BaseCommand):
    help = ("Import a JSONL file `export_memories` wrote (here or in another deployment) into an organisation "
            "(memories.lifecycle.importing), all or nothing: every row gets a new id; what the organisation holds "
            "already (an earlier import of the same file) is not written again, and duplicates are skipped and "
            "reported.")

    def add_arguments(self, parser):
        parser.add_argument("org", help="The organisation to import into (slug or id).")
        parser.add_argument("file", help="The JSONL file.")
        parser.add_argument("--skip-bad-lines", action="store_true",
                            help="Import the good lines and report the bad ones, instead of stopping at the first "
                                 "bad line with nothing imported.")

    def handle(self, *args, org, file, skip_bad_lines=False, **options):
        organization = lookups.organization_find(org)
        bars: dict[str, tqdm] = {}

        def progress(phase: str, done: int, total: int) -> None:
            if phase not in bars:
                for bar in bars.values():
                    bar.close()
                bars[phase] = tqdm(total=total, desc=phase, unit="B", unit_scale=True, file=self.stderr)
            bars[phase].update(done - bars[phase].n)

        try:
            with open(file, "rb") as source, tenant_context(organization.id):
                report = importing.memories_import(org_id=organization.id, file=source,
                                                   skip_bad_lines=skip_bad_lines, progress=progress)
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc.strerror}") from None
        except importing.ImportFailed as exc:
            raise CommandError(f"{file}, {exc.message}. Nothing was imported.") from None
        finally:
            for bar in bars.values():
                bar.close()
        self.stdout.write(self.summary(organization.slug, file, report))

    def summary(self, slug: str, file: str, report: importing.ImportReport) -> str:
        def listed(counts: dict) -> str:
            return ", ".join(f"{kind.replace('_', ' ')}: {n}" for kind, n in counts.items() if n) or "nothing"

        lines = [f"{slug}: imported {file} (from {report.source or 'an unnamed organisation'}): "
                 f"created {listed(report.created)}."]
        if any(report.present.values()):
            lines.append(f"Already here, left as they are: {listed(report.present)}.")
        if report.duplicates:
            lines.append(f"Duplicates skipped: {report.duplicates}.")
            lines += [f"  line {item['line']}: {item['reason']} ({item['existing']})" for item in report.duplicate_lines]
        if not report.complete:
            lines.append(f"The file ends at line {report.lines} without its end record: it was cut short, and what "
                         "came before was imported.")
        if report.bad:
            lines.append(f"Bad lines skipped: {report.bad}.")
            lines += [f"  line {item['line']}: {item['message']}" for item in report.bad_lines]
        if any(report.left_out.values()):
            lines.append(f"Left out, naming memories the file does not hold: {listed(report.left_out)}.")
        if report.embeddings_pending:
            lines.append(f"{report.embeddings_pending} memories came without a vector of this deployment's model: "
                         "the worker embeds them.")
        return "\n".join(lines)
