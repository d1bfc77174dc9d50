from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from memories.errors import MemoryServiceError
from memories.lifecycle import reembed
from memories.vectors.embeddings import active_model


class Command(BaseCommand):
    help = ("Re-embed every memory with another embedding model while searches go on "
            "(memories.lifecycle.reembed): --model NAME builds its vectors beside the active model's, "
            "--activate NAME switches to it in one transaction, --rollback switches back. "
            "Without an option, lists the models and where each stands.")

    def add_arguments(self, parser):
        action = parser.add_mutually_exclusive_group()
        action.add_argument("--model", metavar="NAME",
                            help="Embed every memory of every organisation with this model, beside the active "
                                 "model's vectors (searches keep using those). Run again, it goes on where it "
                                 "stopped.")
        action.add_argument("--activate", metavar="NAME",
                            help="Switch to this model, once built: embed what its build missed or what changed "
                                 "since, then swap every memory's vector in one transaction. The active model's "
                                 "vectors are kept, to roll back to.")
        action.add_argument("--rollback", action="store_true",
                            help="Switch back to the model the active one replaced.")
        action.add_argument("--drop", metavar="NAME",
                            help="Delete the kept vectors of a model that is not active (1.5 kB a memory); it "
                                 "needs a build again before it can be switched to.")
        parser.add_argument("--threads", type=int, default=0,
                            help="CPU threads the model may use (default: one per core). On a small machine "
                                 "that also serves searches, 1 leaves them a core.")

    def handle(self, *args, model=None, activate=None, rollback=False, drop=None, threads=0, **options):
        if threads < 0:
            raise CommandError("--threads must be 0 (one per core) or more")
        self.threads = threads
        try:
            if model:
                self.build(model)
            elif activate or rollback:
                self.switch(activate)
            elif drop:
                dropped = reembed.drop(model=drop)
                self.stdout.write(f"dropped {dropped} vectors of {drop}.")
            else:
                self.list()
        except MemoryServiceError as exc:
            raise CommandError(exc.message) from None

    def bar(self, description: str):
        bar = tqdm(desc=description, unit="memory", file=self.stderr)

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        return bar, progress

    def build(self, model: str) -> None:
        bar, progress = self.bar(f"embedding with {model}")
        try:
            built = reembed.build(model=model, progress=progress, threads=self.threads)
        finally:
            bar.close()
        self.stdout.write(f"{model}: embedded {built.embedded} memories; {built.done} of {built.total} have a "
                          f"vector of it. Searches still use {active_model()}: "
                          f"`manage.py reembed --activate {model}` switches to it.")

    def switch(self, model: str | None) -> None:
        # One bar: the catch-up's memories with a vector of the model, then those whose own vector it is.
        bar, progress = self.bar(f"catching up with, then moving to {model}" if model else "catching up, then moving back")
        try:
            if model:
                switched = reembed.activate(model=model, progress=progress, threads=self.threads)
            else:
                switched = reembed.rollback(progress=progress, threads=self.threads)
        finally:
            bar.close()
        pending = (f"; {switched.pending} written meanwhile are pending, and the worker embeds them"
                   if switched.pending else "")
        self.stdout.write(f"{switched.model} is the active model (was {switched.previous}): embedded "
                          f"{switched.embedded} to catch up, then moved {switched.switched} memories' vectors in "
                          f"{switched.batches} batches (the longest {switched.longest_batch:.2f} s) and "
                          f"flipped in {switched.seconds:.2f} s{pending}. {switched.previous}'s vectors are kept: "
                          f"`manage.py reembed --rollback` switches back.")

    def list(self) -> None:
        for standing in reembed.standings():
            line = f"{standing.name}: {standing.state or 'not built'}"
            if standing.state in ("building", "ready", "switching", "retired") and standing.total:
                line += f", {standing.done} of {standing.total} memories"
            if standing.task:
                line += f" ({standing.task} {standing.status})"
            if standing.error:
                line += f"; stopped: {standing.error}"
            self.stdout.write(f"{line}\n    {standing.about}")
