from django.core.management.base import BaseCommand

from tenants import services
from tenants.context import tenant_context
from tenants.management import lookups
from tenants.models import Membership


class Command(BaseCommand):
    help = ("Give a console user a role in an organisation (viewer, operator or admin). A new "
            "user is created with a random password, printed once.")

    def add_arguments(self, parser):
        parser.add_argument("organization", help="organisation slug or id")
        parser.add_argument("username")
        parser.add_argument("--role", choices=Membership.Role.values, default=Membership.Role.OPERATOR)

    def handle(self, *args, organization, username, role, **options):
        org = lookups.organization_find(organization)
        user, password = services.operator_account(username=username)
        with tenant_context(org.id):
            services.membership_set(org=org, user=user, role=role)
        self.stdout.write(f"{username} is {role} in {org.slug}")
        if password:
            self.stdout.write(f"new user {username}, password (shown once): {password}")
