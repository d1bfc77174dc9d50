import json as json_module

from django.core.management.base import BaseCommand, CommandError

from memory_platform import distribution
from memory_platform.database import citus_present


class Command(BaseCommand):
    help = ("The Citus cluster: its nodes, each table's kind (distributed by which column, "
            "reference, local) and each node's rows of each distributed table.")

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print it as JSON")
        parser.add_argument("--database", default="owner")

    def handle(self, *args, json: bool = False, database: str, **options):
        if not citus_present(database):
            raise CommandError("this database has no Citus extension: it is a single PostgreSQL")
        report = distribution.status(database)
        if json:
            self.stdout.write(_dumps(report))
            return
        self.stdout.write("nodes")
        for node in report["nodes"]:
            state = "active" if node["active"] else "INACTIVE"
            self.stdout.write(f"  {node['role']:<12} {node['name']}:{node['port']}  {state}")
        self.stdout.write("tables")
        for table in report["tables"]:
            kind = table["kind"] + (f" by {table['column']}" if table.get("column") else "")
            self.stdout.write(f"  {table['table']:<30} {kind}")
            for node, rows in table.get("rows_by_node", {}).items():
                self.stdout.write(f"      {rows:>10,} rows  {node}")


def _dumps(report: dict) -> str:
    return json_module.dumps(report, indent=2)
