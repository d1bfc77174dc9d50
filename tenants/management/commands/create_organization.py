from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError

from tenants import services
from tenants.context import service_account


class Command(BaseCommand):
    help = "Create an organisation."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--slug", help="URL-safe identifier; default: from the name")

    def handle(self, *args, name, slug=None, **options):
        try:
            with service_account():
                org = services.organization_create(name=name, slug=slug)
        except IntegrityError:
            raise CommandError(f"an organisation with slug {slug or name!r} already exists") from None
        self.stdout.write(f"organisation {org.name} created: id {org.id}, slug {org.slug}")
