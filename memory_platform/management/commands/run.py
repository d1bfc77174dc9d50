"""manage.py run: the whole product in one process tree, until Ctrl-C."""

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from memory_platform import local_services

QUEUES = ("default", "embeddings", "maintenance")


class Command(BaseCommand):
    help = (
        "Run the product: migrate, create the demo tenant, then serve the web app (gunicorn) "
        "and run an RQ worker until interrupted. Embedded services are stopped on exit."
    )

    def add_arguments(self, parser):
        parser.add_argument("--bind", default=os.environ.get("MEMORY_PLATFORM_BIND", "127.0.0.1:8000"))
        parser.add_argument("--web-workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "2")))
        parser.add_argument(
            "--keep-services", action="store_true", help="Leave the embedded PostgreSQL and Redis running on exit."
        )

    def handle(self, *args, bind, web_workers, keep_services, **options):
        call_command("migrate", interactive=False, verbosity=1)
        if not settings.DEBUG:
            call_command("collectstatic", interactive=False, verbosity=0)
        call_command("bootstrap_demo")

        # Children get explicit URLs: they reuse these servers instead of looking for them.
        env = {
            **os.environ,
            "DATABASE_URL": settings.DATABASE_URL,
            "DATABASE_OWNER_URL": settings.DATABASE_OWNER_URL,
            "REDIS_URL": settings.REDIS_URL,
            "MEMORY_PLATFORM_EMBEDDED_POSTGRES": str(settings.EMBEDDED_POSTGRES),
            "MEMORY_PLATFORM_EMBEDDED_REDIS": str(settings.EMBEDDED_REDIS),
        }
        children = {
            "web": subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "memory_platform.wsgi", "--bind", bind,
                 "--config", "python:memory_platform.gunicorn_conf",
                 "--workers", str(web_workers), "--access-logfile", "-", "--graceful-timeout", "10"],
                env=env,
            ),
            "worker": subprocess.Popen(
                # One process, model loaded once at start (memories/worker.py).
                [sys.executable, "manage.py", "rqworker", *QUEUES, "--with-scheduler",
                 "--worker-class", "memories.worker.EmbeddingWorker"], env=env, cwd=settings.BASE_DIR
            ),
            # Periodic jobs: the embedding sweep, purging old idempotency keys (memories/cron.py).
            "cron": subprocess.Popen(
                [sys.executable, "manage.py", "rqcron", "memories.cron"], env=env, cwd=settings.BASE_DIR
            ),
        }
        self.stdout.write(
            self.style.SUCCESS(f"\nMemory Platform is up at http://{bind}/\n")
            + f"  health      http://{bind}/health\n  admin       http://{bind}/admin/\n"
            + "Ctrl-C stops it.\n"
        )
        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        failed = None
        try:
            while not stopping:
                for name, child in children.items():
                    if child.poll() is not None:
                        failed = f"the {name} process exited with status {child.returncode}"
                        stopping = True
                time.sleep(0.5)
        finally:
            for child in children.values():
                if child.poll() is None:
                    child.terminate()
            for child in children.values():
                try:
                    child.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    child.kill()
            if not keep_services:
                if settings.EMBEDDED_REDIS:
                    local_services.stop_redis()
                if settings.EMBEDDED_POSTGRES:
                    local_services.stop_postgres()
        if failed:
            raise CommandError(failed)
