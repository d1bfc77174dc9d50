from django.core.management.base import BaseCommand

from memories import jobs


class Command(BaseCommand):
    help = "Embed every memory still waiting for its embedding (what the periodic sweep does)."

    def handle(self, *args, **options):
        embedded = jobs.embed_pending()
        self.stdout.write(f"embedded {embedded} memories")
