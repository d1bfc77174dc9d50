from django.core.management.commands.flush import Command as DjangoFlushCommand
from django.db import connections


class Command(DjangoFlushCommand):
    help = (
        "Empty every table, as the schema owner: TRUNCATE ignores row-level security, so the "
        "runtime role is never given it."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(database="owner")

    def handle(self, **options):
        # The runtime connection and the owner connection reach the same database.
        if options["database"] == "default":
            options["database"] = "owner"
        result = super().handle(**options)
        with connections[options["database"]].cursor() as cursor:
            # The lexical statistics are no model's table, and no trigger empties them with
            # memories (memories migration 0030).
            cursor.execute("TRUNCATE memory_lexeme_stats, memory_lexeme_deltas")
            # Nor are the memories' tallies and strength bands (memories migrations 0035, 0037, 0049, 0053).
            cursor.execute("TRUNCATE memory_tallies, memory_tally_deltas, memory_day_tallies, memory_day_tally_deltas, "
                           "memory_namespace_tallies, memory_namespace_tally_deltas, memory_relationship_tallies, "
                           "memory_relationship_tally_deltas, memory_strength_bands, "
                           "memory_hot_sets")
        return result
