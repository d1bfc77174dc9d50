from memories.lifecycle import tallies
from memories.management.folded_counts import FoldedCountsCommand


class Command(FoldedCountsCommand):
    help = ("The tallies the stats, the dashboard and the lists of namespaces read (memories, namespaces, relationships: "
            "docs/adr/0045, 0057, 0060): fold the pending deltas, "
            "check them against a count of the memories (--verify), or count them again (--rebuild).")
    counts = "tallies"
    keeper = tallies

    def folded(self, done: dict) -> str:
        return f"folded {done['folded']} deltas, {done['emptied']} tallies that count nothing any more"

    def difference(self, key, kept, counted) -> str:
        if key[0] == "day":
            return f"created on {key[1]} kept {kept[0]}, counted {counted[0]}"
        if key[0] == "relationships":
            return f"relationships of type {key[1]} kept {kept[0]}, counted {counted[0]}"
        if key[0] == "namespace":
            return (f"namespace {key[1]!r} ({key[2]}) kept {dict(zip(tallies.NAMESPACE_COUNTS, kept))}, "
                    f"counted {dict(zip(tallies.NAMESPACE_COUNTS, counted))}")
        return (f"{dict(zip(tallies.KEY, map(str, key)))} kept {dict(zip(tallies.COUNTS, kept))}, "
                f"counted {dict(zip(tallies.COUNTS, counted))}")
