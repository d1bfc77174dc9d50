"""manage.py run: the whole product under supervisord (docs/adr/0036), until Ctrl-C."""

import http.client
import io
import json
import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from memory_platform import local_services, supervision
from memory_platform.secret_key import secret_key
from memory_platform.security import DEFAULT_BIND, base_url

QUEUES = ("default", "embeddings", "maintenance")
# What the served processes run with (DEBUG off, a kept secret, Secure cookies on https...):
# this command's own settings may be the development ones manage.py defaults to.
SERVED_SETTINGS = "memory_platform.settings.production"
# The banner waits this long at most for the web app's first answer to GET /health.
READY_SECONDS = 300
VERBOSE_VARIABLE = "MEMORY_PLATFORM_VERBOSE"


def verbose_default() -> bool:
    return os.environ.get(VERBOSE_VARIABLE, "").strip().lower() in {"1", "true", "yes", "on"}


def health(url: str, timeout: float = 5) -> dict | None:
    """GET {url}/health once: its JSON when it answers 200, else None."""
    if not url.startswith("http://"):
        return None
    host = url.removeprefix("http://")
    connection = http.client.HTTPConnection(host, timeout=timeout)
    try:
        connection.request("GET", "/health")
        response = connection.getresponse()
        body = response.read()
        return json.loads(body) if response.status == 200 else None
    except (OSError, http.client.HTTPException, ValueError):
        return None
    finally:
        connection.close()


def wait_until_serving(url: str, supervisord: subprocess.Popen, *, seconds: float = READY_SECONDS) -> dict | None:
    """/health's report once the web app answers 200; None if supervisord exits first, or after
    `seconds`, or for a bind no browser URL reaches (a Unix socket)."""
    if not url.startswith("http://"):
        return None
    deadline = time.monotonic() + seconds
    while supervisord.poll() is None and time.monotonic() < deadline:
        # A request made before a web worker is ready waits in the listen queue: a long timeout
        # keeps it there instead of queueing another.
        report = health(url, timeout=30)
        if report is not None:
            return report
        time.sleep(0.25)
    return None


class Command(BaseCommand):
    help = (
        "Run the product: migrate, create the demo tenant, then serve the web app and the MCP server "
        "(gunicorn, one port), an RQ "
        "worker and the cron scheduler under supervisord, which restarts any of them that exits. "
        "Embedded services are supervised too, and stopped on exit."
    )

    def add_arguments(self, parser):
        parser.add_argument("--bind", default=os.environ.get("MEMORY_PLATFORM_BIND", DEFAULT_BIND))
        parser.add_argument("--web-workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "2")))
        parser.add_argument(
            "--keep-services", action="store_true", help="Leave the embedded PostgreSQL and Redis running on exit."
        )
        parser.add_argument(
            "--verbose", action="store_true", default=verbose_default(),
            help=f"Log every job the worker and the cron scheduler run (or {VERBOSE_VARIABLE}=1). "
                 "Without it they log warnings and errors only.",
        )

    def handle(self, *args, bind, web_workers, keep_services, verbose=False, **options):
        url = base_url(bind)
        local_services.record_served(local_services.data_dir())
        call_command("migrate", interactive=False, verbosity=1)
        call_command("collectstatic", interactive=False, verbosity=0)  # whitenoise serves them
        # Printed in the banner, once the app answers, not scrolled away by the start's logs.
        demo = io.StringIO()
        call_command("bootstrap_demo", url=url, stdout=demo)

        # Children get explicit URLs: they reuse these servers instead of starting their own.
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": SERVED_SETTINGS,
            "MEMORY_PLATFORM_DATA_DIR": str(local_services.data_dir()),
            "MEMORY_PLATFORM_BIND": bind,
            "DATABASE_URL": settings.DATABASE_URL,
            "DATABASE_OWNER_URL": settings.DATABASE_OWNER_URL,
            "REDIS_URL": settings.REDIS_URL,
            "MEMORY_PLATFORM_EMBEDDED_POSTGRES": str(settings.EMBEDDED_POSTGRES),
            "MEMORY_PLATFORM_EMBEDDED_REDIS": str(settings.EMBEDDED_REDIS),
            "PYTHONUNBUFFERED": "1",
            # The served processes' job logs (settings.LOGGING's "rq"): quiet unless --verbose.
            VERBOSE_VARIABLE: "1" if verbose else "0",
        }
        # Made here, once, before several processes would race to make it.
        if not env.get("DJANGO_SECRET_KEY"):
            secret_key(local_services.data_dir())
        config = supervision.write_config(
            data_dir=local_services.data_dir(), programs=self.programs(bind, web_workers, verbose=verbose),
            working_directory=settings.BASE_DIR,
        )
        if settings.EMBEDDED_REDIS:
            local_services.stop_redis()  # started daemonized by manage.py; supervisord runs it from here on

        supervisord = subprocess.Popen(
            supervision.supervisord_command(config), env=env, cwd=settings.BASE_DIR,
            # Its own session: Ctrl-C reaches this process only, which stops supervisord,
            # which stops the programs in order.
            start_new_session=True,
        )

        def stop(signum, frame):
            if supervisord.poll() is None:
                supervisord.send_signal(signal.SIGTERM)

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        # Ctrl-C from here on stops supervisord, which ends the wait.
        report = wait_until_serving(url, supervisord)
        if supervisord.poll() is None:
            if report is None:
                self.stdout.write(self.style.WARNING(f"\nMemory Platform started; {url}/health does not answer yet\n"))
            else:
                self.stdout.write(self.style.SUCCESS(f"\nMemory Platform is up at {url}/") + f" (health: {report.get('status')})\n")
            self.stdout.write(
                f"  API docs    {url}/api/docs/\n"
                + f"  MCP         {url}/mcp  (Authorization: Bearer <API key>)\n"
                + f"  health      {url}/health\n"
                + f"  data        {local_services.data_dir()}  (manage.py in another shell uses it while this runs)\n"
                + f"  processes   {sys.executable} -m supervisor.supervisorctl -c {config} status\n"
                + demo.getvalue().rstrip("\n") + "\n"
                + ("" if verbose else "Job logs are quiet: warnings and errors only (--verbose for every job).\n")
                + "Ctrl-C stops it.\n"
            )
        self.stdout.flush()

        try:
            status = supervisord.wait()
        finally:
            if supervisord.poll() is None:
                supervisord.terminate()
                try:
                    supervisord.wait(timeout=90)
                except subprocess.TimeoutExpired:
                    supervisord.kill()
            if keep_services:
                if settings.EMBEDDED_REDIS:
                    local_services.ensure_redis()  # supervisord stopped its foreground one: daemonized again
            else:
                if settings.EMBEDDED_REDIS:
                    local_services.stop_redis()
                if settings.EMBEDDED_POSTGRES:
                    local_services.stop_postgres()
        if status != 0:
            raise CommandError(f"supervisord exited with status {status}")

    def programs(self, bind: str, web_workers: int, *, verbose: bool = False) -> list[supervision.Program]:
        python = sys.executable
        # Quiet by default: an idle worker and cron log ~30 lines a minute at INFO.
        worker_verbosity, cron_level = ("1", "INFO") if verbose else ("0", "WARNING")
        programs = [
            supervision.Program(
                "web",
                # One port for the site and /mcp: an ASGI app in uvicorn's worker (docs/adr/0041).
                [python, "-m", "gunicorn", "memory_platform.asgi", "--bind", bind,
                 "--worker-class", "memory_platform.serving.Worker",
                 "--config", "python:memory_platform.gunicorn_conf",
                 "--workers", str(web_workers), "--access-logfile", "-", "--graceful-timeout", "10"],
                priority=30,
            ),
            supervision.Program(
                # One process, model loaded once at start (memories/worker.py).
                "worker",
                [python, "manage.py", "rqworker", *QUEUES, "--with-scheduler",
                 "--worker-class", "memories.worker.EmbeddingWorker", "--verbosity", worker_verbosity],
                priority=40, stop_seconds=30,
            ),
            # Periodic jobs: the embedding sweep, purging old idempotency keys (memories/cron.py).
            supervision.Program("cron", [python, "manage.py", "rqcron", "memories.cron", "--logging-level", cron_level],
                               priority=50),
        ]
        if settings.EMBEDDED_POSTGRES:
            programs.append(supervision.Program(
                "postgres", [python, "-m", "memory_platform.local_services", "supervise-postgres"],
                priority=10, start_seconds=3,
            ))
        if settings.EMBEDDED_REDIS:
            programs.append(supervision.Program(
                "redis", local_services.redis_foreground_command(), priority=20, start_seconds=2,
            ))
        return programs
