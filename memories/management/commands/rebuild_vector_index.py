from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from memories import vector_index


class Command(BaseCommand):
    help = "Rebuild the vector index on memories.embedding as HNSW or IVFFlat (default: the configured kind)."

    def add_arguments(self, parser):
        parser.add_argument("--kind", choices=vector_index.KINDS, help="Index kind; default MEMORY_PLATFORM_VECTOR_INDEX.")

    def handle(self, *args, kind=None, **options):
        try:
            with transaction.atomic(using="owner"):
                built = vector_index.rebuild(kind)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(f"vector index {vector_index.INDEX_NAME} is now {built}"))
