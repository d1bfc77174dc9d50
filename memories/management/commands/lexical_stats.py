from memories.management.folded_counts import FoldedCountsCommand
from memories.understanding import lexicon


class Command(FoldedCountsCommand):
    help = ("The word statistics full text ranks by (BM25, docs/adr/0037): fold the pending deltas, "
            "check them against a count of the memories (--verify), or count them again (--rebuild).")
    counts = "statistics"
    keeper = lexicon

    def folded(self, done: dict) -> str:
        return f"folded {done['folded']} deltas, {done['emptied']} words no memory holds any more"

    def difference(self, lexeme, kept, counted) -> str:
        return f"{lexeme or '(all words)'!r} kept docs/tokens {kept}, counted {counted}"
