"""What the dashboard shows of one organisation: counts, growth, the review and conflict
queues, the lifecycle (when each scheduled job last ran and what it did, strength bands, what
is fading), and the job queues."""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass, field
from datetime import date, datetime

from memories.access import Caller
from memories.models import LifecycleRun
from memories.use_cases import lifecycle

logger = logging.getLogger(__name__)

QUEUES = ("default", "embeddings", "maintenance")

# The scheduled lifecycle jobs (memories.cron), in the words an operator reads them in.
LIFECYCLE_JOBS = (
    (LifecycleRun.Job.DECAY, "Decay", "nightly, 03:00 UTC", "archives the memories that have faded"),
    (LifecycleRun.Job.EXPIRY, "Expiry sweep", "every minute", "removes memories past their time to live"),
    (LifecycleRun.Job.CONSOLIDATION, "Session consolidation", "when a session closes",
     "proposes merges and a summary for review"),
)


@dataclass
class LifecycleJobState:
    job: str
    name: str
    schedule: str
    does: str
    last_run: LifecycleRun | None
    runs_last_day: int

    @property
    def outcome(self) -> list[tuple[str, int]]:
        """What the last run did, as (what, how many), its counts that are numbers."""
        counts = self.last_run.counts if self.last_run else {}
        return [(name.replace("_", " "), value) for name, value in counts.items()
                if isinstance(value, int) and not isinstance(value, bool)]


@dataclass
class Stats:
    total: int
    by_status: list[tuple[str, int]]
    by_category: list[tuple[str, int]]
    by_agent: list[tuple[str, int]]
    added_per_day: list[tuple[date, int]]
    pending_review: int
    open_conflicts: int
    embedding_pending: int
    lifecycle: list[LifecycleJobState] = field(default_factory=list)
    strength: dict = field(default_factory=dict)
    strength_as_of: datetime | None = None  # None: counted for this page
    fading: list = field(default_factory=list)
    queues: list[dict] = field(default_factory=list)
    workers: int | None = None
    queue_error: str = ""


def stats(caller: Caller) -> Stats:
    """The dashboard of the caller's organisation: its counts from the lifecycle use cases
    (read without counting the organisation's memories, docs/adr/0045), the job queues from Redis."""
    counted = lifecycle.dashboard(caller)
    agents = lifecycle.agent_names(caller)
    result = Stats(
        total=counted.total,
        by_status=counted.by_status,
        by_category=counted.by_category,
        by_agent=[(agents.get(agent_id, "?"), n) for agent_id, n in counted.by_agent],
        added_per_day=counted.added_per_day,
        pending_review=counted.pending_review,
        open_conflicts=lifecycle.open_conflicts(caller),
        embedding_pending=counted.embedding_pending,
        lifecycle=lifecycle_jobs(caller),
        strength=counted.strength,
        strength_as_of=counted.strength_as_of,
        fading=counted.fading,
    )
    _add_queue_state(result)
    return result


def lifecycle_jobs(caller: Caller) -> list[LifecycleJobState]:
    """Each scheduled lifecycle job: its last run for the organisation and how many runs in
    the last day."""
    runs = lifecycle.lifecycle_runs(caller, [job for job, *_ in LIFECYCLE_JOBS])
    return [LifecycleJobState(job, name, schedule, does, *runs[job]) for job, name, schedule, does in LIFECYCLE_JOBS]


def _add_queue_state(result: Stats) -> None:
    """Queue lengths and workers from Redis; the dashboard still renders when it is down."""
    try:
        import django_rq
        from rq import Worker
        from rq.registry import FailedJobRegistry, StartedJobRegistry

        for name in QUEUES:
            queue = django_rq.get_queue(name)
            result.queues.append({"name": name, "queued": queue.count,
                                  "running": StartedJobRegistry(queue=queue).count,
                                  "failed": FailedJobRegistry(queue=queue).count})
        result.workers = len(Worker.all(connection=django_rq.get_connection("default")))
    except Exception as exc:  # Redis unreachable: say so instead of failing the page
        logger.warning("job queue state unavailable: %s", type(exc).__name__)
        result.queues, result.queue_error = [], "the job queue (Redis) is unreachable"


def growth_chart_svg(added_per_day: list[tuple[date, int]]) -> str:
    """Memories added per day as an SVG bar chart, drawn by matplotlib (text kept as text)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import dates as mdates
    from matplotlib.figure import Figure

    days = [day for day, _ in added_per_day]
    counts = [n for _, n in added_per_day]
    figure = Figure(figsize=(7.5, 2.4), dpi=96)
    axes = figure.add_subplot()
    axes.bar(days, counts, width=0.8, color="#3465a4")
    axes.set_ylabel("memories added")
    axes.xaxis.set_major_formatter(mdates.DateFormatter("%d %b"))
    axes.xaxis.set_major_locator(mdates.DayLocator(interval=5))
    axes.yaxis.get_major_locator().set_params(integer=True)
    axes.spines[["top", "right"]].set_visible(False)
    axes.set_title(f"Memories added per day, last {len(days)} days", fontsize=10, loc="left")
    figure.tight_layout()
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "memory-platform"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    svg = buffer.getvalue()
    return svg_without_inline_styles(svg[svg.index("<svg"):])  # no XML prolog nor doctype: it is inlined in HTML


_STYLE_ATTRIBUTE = re.compile(r'\sstyle="([^"]*)"')
_STYLE_ELEMENT = re.compile(r"<style[^>]*>.*?</style>", re.DOTALL)


def svg_without_inline_styles(svg: str) -> str:
    """The page's Content-Security-Policy refuses inline styles, which matplotlib writes as
    style attributes and a <style> element (round line joins: a detail). The same properties
    become SVG presentation attributes, which the policy leaves alone."""

    def attributes(match: re.Match) -> str:
        pairs = []
        for declaration in filter(None, (part.strip() for part in match[1].split(";"))):
            name, _, value = (piece.strip() for piece in declaration.partition(":"))
            if name == "font":  # "font: 10px 'DejaVu Sans'" has no presentation attribute
                size, _, family = value.partition(" ")
                pairs += [("font-size", size), ("font-family", family)]
            else:
                pairs.append((name, value))
        return "".join(f' {name}="{value}"' for name, value in pairs if value)

    return _STYLE_ATTRIBUTE.sub(attributes, _STYLE_ELEMENT.sub("", svg))
