"""`manage.py run` (what scripts/run execs), started for real: its own data folder and embedded
servers, a free port on 127.0.0.1. The tests run in order against one running product:

- what it serves is production-safe (DEBUG off, no setting in any error page, CSP and the other
  headers, Secure cookies and HSTS on https only, the kept secret);
- the banner prints the URLs it serves;
- what it logs: routes, not paths; no forwarded address it cannot trust;
- idle connections outlast a polling client's pauses;
- supervision: a killed worker or Redis comes back (the worker's scheduler with it, none of
  the old processes left), so does a killed web master (its workers gone with it), the web app
  serves through a 15-second Redis outage (writes accepted, /health degraded), and while the
  database restarts a write gets 201 or JSON 503 with Retry-After; everything is healthy again
  after;
- Ctrl-C stops every process, the embedded servers included.
"""

from __future__ import annotations

import html
import http.client
import json
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

import anyio
import httpx
import psutil
import pytest
import requests
from django.conf import settings

from memory_platform import supervision
from memory_platform.log_format import UNMATCHED
from tests.integrations.mcp.client import data_of, mcp_client
from tests.ports import free_port

pytestmark = pytest.mark.slow

START_SECONDS = 240


class Product:
    """A running `manage.py run`, its output collected as it comes."""

    def __init__(self, data_dir: Path, port: int):
        self.data_dir, self.port = data_dir, port
        env = {key: value for key, value in os.environ.items()
               if key not in {"DATABASE_URL", "DATABASE_OWNER_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE",
                              "DJANGO_SECRET_KEY", "DJANGO_DEBUG", "DJANGO_ALLOWED_HOSTS", "MEMORY_PLATFORM_BIND"}}
        env["MEMORY_PLATFORM_DATA_DIR"] = str(data_dir)
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "run", "--bind", f"127.0.0.1:{port}", "--web-workers", "1"],
            cwd=settings.BASE_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        self.started = time.monotonic()
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    @property
    def config(self) -> Path:
        return supervision.config_path(self.data_dir)

    def request(self, method: str, path: str, *, headers: dict | None = None, body: bytes | str | None = None,
                timeout: float = 15) -> tuple[int, http.client.HTTPMessage, str]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, response.msg, response.read().decode("utf-8", "replace")
        finally:
            connection.close()

    def health(self) -> tuple[int, dict]:
        status, _, body = self.request("GET", "/health")
        return status, json.loads(body)

    def api_key(self) -> str:
        return re.search(r"API key\s+(mp_\S+)", self.output)[1]

    def remember(self, content: str) -> tuple[int, dict]:
        status, _, body = self.request(
            "POST", "/api/v1/memories", body=json.dumps({"content": content}),
            headers={"Authorization": f"Bearer {self.api_key()}", "Content-Type": "application/json"},
        )
        return status, json.loads(body)

    def remember_batch(self, contents: list[str]) -> tuple[int, dict]:
        status, _, body = self.request(
            "POST", "/api/v1/memories", body=json.dumps({"memories": [{"content": c} for c in contents]}),
            headers={"Authorization": f"Bearer {self.api_key()}", "Content-Type": "application/json"},
        )
        return status, json.loads(body)

    def memory(self, memory_id: str) -> dict:
        _, _, body = self.request("GET", f"/api/v1/memories/{memory_id}",
                                  headers={"Authorization": f"Bearer {self.api_key()}"})
        return json.loads(body)

    def ctl(self, *arguments: str) -> str:
        return supervision.supervisorctl(self.config, *arguments).stdout

    def pid(self, program: str) -> int:
        return int(self.ctl("pid", program).strip() or 0)

    def states(self) -> dict[str, str]:
        return {line.split()[0]: line.split()[1] for line in self.ctl("status").splitlines() if line.strip()}


def wait_until(predicate, *, seconds: float, interval: float = 0.5, what: str = ""):
    deadline = time.monotonic() + seconds
    while True:
        try:
            value = predicate()
        except (OSError, http.client.HTTPException, ValueError):
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting for {what or predicate}")
        time.sleep(interval)


@pytest.fixture(scope="module")
def product():
    with tempfile.TemporaryDirectory(prefix="memory-platform-run-") as folder:
        running = Product(Path(folder) / "data", free_port())
        try:
            wait_until(lambda: running.process.poll() is None and running.health()[1]["status"] == "ok",
                       seconds=START_SECONDS, interval=1, what="the product to be healthy")
            # The banner follows the app's first answer to /health, which the run command polls too.
            wait_until(lambda: "Ctrl-C stops it." in running.output, seconds=30, what="the whole banner")
            yield running
        finally:
            if running.process.poll() is None:
                running.process.send_signal(signal.SIGINT)
                try:
                    running.process.wait(timeout=90)
                except subprocess.TimeoutExpired:
                    running.process.kill()
            # Whatever happened above, leave no server behind.
            subprocess.run([sys.executable, "-m", "memory_platform.local_services", "stop"], cwd=settings.BASE_DIR,
                           env={**os.environ, "MEMORY_PLATFORM_DATA_DIR": str(running.data_dir)},
                           capture_output=True, timeout=60)


# --------------------------------------------------------------------------- what it serves


def test_the_banner_prints_the_urls_it_serves(product):
    base = f"http://127.0.0.1:{product.port}"
    assert f"Memory Platform is up at {base}/" in product.output
    assert f"  console       {base}/console/" in product.output  # the demo tenant's lines
    assert f"  admin         {base}/admin/" in product.output
    assert f"  data        {product.data_dir}" in product.output
    assert ":8000" not in product.output


def test_the_banner_comes_once_the_app_answers_and_after_the_start_logs(product):
    """"up" is printed once the web app answered /health (what it answered is in the banner),
    and the credentials are in the banner, not before the programs' start-up logs."""
    banner = product.output.index("Memory Platform is up at")
    assert re.search(r"Memory Platform is up at \S+ \(health: (ok|degraded)\)", product.output)
    assert product.output.index("API key       mp_") > banner
    assert product.output.index("user demo, password") > banner


def test_the_administrator_in_the_banner_signs_into_the_admin(product):
    username, password = re.search(r"user (\S+), password (\S+) \(staff", product.output).groups()
    origin = f"http://127.0.0.1:{product.port}"
    _, headers, page = product.request("GET", "/admin/login/?next=/admin/")
    csrf = _cookies(headers)["csrftoken"].split("=", 1)[1].split(";")[0]
    token = html.unescape(re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1])
    status, headers, _ = product.request(
        "POST", "/admin/login/?next=/admin/",
        body=urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token, "next": "/admin/"}),
        headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"csrftoken={csrf}",
                 "Origin": origin, "Referer": f"{origin}/admin/login/"},
    )
    assert status == 302 and headers["Location"] == "/admin/"
    session = _cookies(headers)["sessionid"].split(";")[0]
    status, _, page = product.request("GET", "/admin/", headers={"Cookie": session})
    assert status == 200 and "Memory Platform administration" in page
    # Kept for the next run, readable by this user only; never in the logs otherwise.
    kept = product.data_dir / "admin_password"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and kept.read_text().strip() == password
    assert product.output.count(password) == 1


def test_the_favicon_is_served(product):
    status, headers, _ = product.request("GET", "/favicon.ico")
    assert status == 302
    status, headers, body = product.request("GET", headers["Location"])
    assert status == 200 and headers["Content-Type"].startswith("image/svg+xml") and "<svg" in body


def test_debug_is_off_and_errors_carry_no_setting(product):
    secret = (product.data_dir / "secret_key").read_text().strip()
    forbidden = ["DATABASE_URL", "REDIS_URL", "SECRET_KEY", "Traceback", "DEBUG", "urlpatterns", "URLconf",
                 secret, str(product.data_dir), "memory_app@"]
    status, _, body = product.request("GET", "/health", headers={"Host": "evil.example"})
    assert status == 400 and "Bad Request" in body
    assert not [word for word in forbidden if word in body], body
    status, _, body = product.request("GET", "/no/such/page")
    assert status == 404 and not [word for word in forbidden if word in body], body
    status, _, body = product.request("GET", "/console/no-such-org/memories/x/")
    assert status in (302, 404) and not [word for word in forbidden if word in body]
    assert secret not in product.output


def test_security_headers_and_a_content_security_policy(product):
    status, headers, _ = product.request("GET", "/console/sign-in/")
    assert status == 200
    policy = headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy and "unsafe" not in policy
    assert "frame-ancestors 'none'" in policy
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"
    assert headers["X-Frame-Options"] == "DENY"
    assert "Strict-Transport-Security" not in headers  # plain http
    _, headers, _ = product.request("GET", "/console/sign-in/", headers={"X-Forwarded-Proto": "https"})
    assert headers["Strict-Transport-Security"].startswith("max-age=")
    status, headers, body = product.request("GET", "/api/docs/")
    assert status == 200 and "style-src 'self' 'unsafe-inline'" in headers["Content-Security-Policy"]


def _cookies(headers: http.client.HTTPMessage) -> dict[str, str]:
    return {line.split("=", 1)[0]: line for line in headers.get_all("Set-Cookie") or []}


def _sign_in(product, *, https: bool) -> dict[str, str]:
    scheme = {"X-Forwarded-Proto": "https"} if https else {}
    origin = f"{'https' if https else 'http'}://127.0.0.1:{product.port}"
    _, headers, page = product.request("GET", "/console/sign-in/", headers=scheme)
    csrf = _cookies(headers)["csrftoken"].split("=", 1)[1].split(";")[0]
    token = html.unescape(re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1])
    password = re.search(r"user demo, password (\S+)", product.output)[1]
    status, headers, _ = product.request(
        "POST", "/console/sign-in/",
        body=urlencode({"username": "demo", "password": password, "csrfmiddlewaretoken": token}),
        headers={**scheme, "Content-Type": "application/x-www-form-urlencoded", "Cookie": f"csrftoken={csrf}",
                 "Origin": origin, "Referer": f"{origin}/console/sign-in/"},
    )
    assert status == 302, "sign-in refused"
    return _cookies(headers)


def test_session_cookie_is_secure_on_https_and_sign_in_works_over_plain_http(product):
    over_http = _sign_in(product, https=False)
    assert "sessionid" in over_http and "Secure" not in over_http["sessionid"]
    over_https = _sign_in(product, https=True)
    assert "Secure" in over_https["sessionid"] and "HttpOnly" in over_https["sessionid"]


def test_the_secret_is_kept_in_the_data_folder_with_mode_0600(product):
    path = product.data_dir / "secret_key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # Every process uses that one key: a session made by one web worker is read by the next.
    before = path.read_text()
    product.ctl("restart", "web")
    wait_until(lambda: product.health()[0] == 200, seconds=120, what="the web app back")
    assert path.read_text() == before


def test_mcp_is_served_on_the_same_port_with_the_api_key(product):
    status, headers, body = product.request("POST", "/mcp", body="{}", headers={"Content-Type": "application/json"})
    assert status == 401 and json.loads(body)["error"]["code"] == "not_authenticated"
    assert headers["WWW-Authenticate"].startswith("Bearer")

    async def call():
        async with mcp_client(f"http://127.0.0.1:{product.port}/mcp", product.api_key()) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            remembered = data_of(await client.call_tool("remember_fact", {"content": "Served over MCP"}))
            return names, remembered

    names, remembered = anyio.run(call)
    assert {"search_memory", "remember_fact", "store_put"} <= names
    assert remembered["created"] and product.memory(remembered["memory"]["id"])["content"] == "Served over MCP"


def test_the_access_log_names_paths_without_their_query_string(product):
    product.request("GET", "/health?marker=query-string-value")
    wait_until(lambda: '"GET /health HTTP/1.1" 200' in product.output, seconds=10, what="the access line")
    assert "query-string-value" not in product.output


def test_the_access_log_names_routes_not_paths_and_trusts_no_forwarded_address(product):
    """No proxy is configured: X-Forwarded-For is anyone's to write, and is not logged."""
    product.request("DELETE", "/api/v1/memories/0b0e7a9e-1111-4111-8111-111111111111/tags/tag-jane-doe",
                    headers={"Authorization": f"Bearer {product.api_key()}", "X-Forwarded-For": "198.51.100.77"})
    product.request("GET", "/users/path-jane-doe/notes")
    deleted = '127.0.0.1 "DELETE /api/v1/memories/<memory_id>/tags/<tag> HTTP/1.1" 404'
    # Each web worker writes its own lines: the two requests' lines may come in either order.
    wait_until(lambda: f'"GET {UNMATCHED} HTTP/1.1" 404' in product.output and deleted in product.output,
               seconds=10, what="the access lines")
    assert f"Not Found: {UNMATCHED}" in product.output
    assert "jane-doe" not in product.output and "198.51.100.77" not in product.output


def test_polling_clients_never_race_the_close_of_an_idle_connection(product):
    """A client polling every 1, 2 and 5 s reuses its connection; the server keeps it open
    longer than that (MEMORY_PLATFORM_KEEPALIVE_SECONDS), so no request meets a connection the
    server is closing. requests keeps an idle connection as long as the server does; httpx drops
    its own after 5 s."""
    url, headers = f"http://127.0.0.1:{product.port}/api/v1/stats", {"Authorization": f"Bearer {product.api_key()}"}
    gaps = (0, 1, 1, 2, 2, 5, 5)

    def with_requests() -> set[int]:
        local_ports = set()
        with requests.Session() as session:
            for gap in gaps:
                time.sleep(gap)
                response = session.get(url, headers=headers, timeout=30, stream=True)
                local_ports.add(response.raw.connection.sock.getsockname()[1])
                assert response.status_code == 200 and response.json()
        return local_ports

    def with_httpx() -> None:
        with httpx.Client(timeout=30) as client:
            for gap in gaps:
                time.sleep(gap)
                assert client.get(url, headers=headers).status_code == 200

    with ThreadPoolExecutor(max_workers=2) as pool:
        polled_with_requests, polled_with_httpx = pool.submit(with_requests), pool.submit(with_httpx)
        assert len(polled_with_requests.result()) == 1  # one connection, kept through every gap
        polled_with_httpx.result()  # raises what httpx raised, if anything


def test_idle_job_logs_are_quiet_by_default(product):
    """The cron enqueues jobs every 30 s and the worker runs them: neither logs them at INFO
    unless --verbose, so the banner stays on screen. (Runs after a minute of the product's life.)"""
    wait_until(lambda: product.ctl("status") and time.monotonic() - product.started > 70, seconds=90,
               what="a minute of jobs")
    after_banner = product.output[product.output.index("Ctrl-C stops it."):]
    for noisy in ("Enqueued job", "Job OK", "Successfully completed", "Result is kept", "default: ", "maintenance: "):
        assert noisy not in after_banner, noisy
    assert product.api_key() not in after_banner


# --------------------------------------------------------------------------- supervision


def test_a_killed_worker_is_restarted_while_the_app_keeps_serving(product):
    """...and what it forked (RQ's scheduler) dies with it: none of the old worker's processes
    is left, and the new worker's own scheduler runs (the locks were let go)."""
    old = product.pid("worker")
    children = wait_until(lambda: psutil.Process(old).children(recursive=True), seconds=60,
                          what="the worker's scheduler")
    os.kill(old, signal.SIGKILL)
    assert product.remember("Written while the worker was down")[0] == 201
    assert product.health()[0] == 200
    new = wait_until(lambda: (pid := product.pid("worker")) not in (0, old) and pid, seconds=60,
                     what="a new worker")
    assert psutil.pid_exists(new)
    wait_until(lambda: product.health()[1]["status"] == "ok", seconds=120, what="the worker registered again")
    _, left = psutil.wait_procs(children, timeout=30)
    assert left == [], [process.pid for process in left]
    wait_until(lambda: psutil.Process(new).children(), seconds=60, what="the new worker's scheduler")
    wait_until(lambda: set(product.states().values()) == {"RUNNING"}, seconds=30, what="every program running")


def test_a_killed_web_master_takes_its_workers_along(product):
    """uvicorn's workers never check their parent: orphans would go on serving the port, and
    keep the new master from binding it."""
    old = product.pid("web")
    workers = psutil.Process(old).children(recursive=True)
    assert workers
    os.kill(old, signal.SIGKILL)
    wait_until(lambda: (pid := product.pid("web")) not in (0, old) and pid, seconds=60, what="a new web master")
    _, left = psutil.wait_procs(workers, timeout=30)
    assert left == [], [process.pid for process in left]
    wait_until(lambda: product.health()[0] == 200, seconds=120, what="the web app back")


def test_the_app_serves_through_a_redis_outage_and_everything_recovers(product):
    assert "redis" in product.ctl("stop", "redis")
    outage_started = time.monotonic()
    pending_ids = []
    try:
        while time.monotonic() - outage_started < 15:
            status, body = product.health()
            assert status == 200 and body["status"] == "degraded" and not body["redis"]["ok"]
            assert body["database"]["ok"]
            status, created = product.remember(f"Written during the outage at {time.monotonic()}")
            assert status == 201, created
            status, batch = product.remember_batch([f"Batch during the outage {time.monotonic()}"])
            assert status == 201, batch
            pending_ids += [item["id"] for item in batch["results"]]
            assert all(item["embedding_status"] == "pending" for item in batch["results"])
            time.sleep(2)
        # Nothing gave up for good: the worker and the cron are running or being retried.
        assert not {state for name, state in product.states().items() if name != "redis"} & {"FATAL", "STOPPED"}
    finally:
        product.ctl("start", "redis")
    wait_until(lambda: product.health()[1]["status"] == "ok", seconds=120, what="healthy again")
    wait_until(lambda: set(product.states().values()) == {"RUNNING"}, seconds=60, what="every program running")
    # The embeddings deferred by the outage are completed (the sweep runs as the cron starts).
    wait_until(lambda: all(product.memory(i)["embedding_status"] == "ready" for i in pending_ids),
               seconds=150, interval=2, what="the deferred embeddings")


def test_a_killed_redis_comes_back(product):
    old = product.pid("redis")
    os.kill(old, signal.SIGKILL)
    wait_until(lambda: (pid := product.pid("redis")) not in (0, old) and pid, seconds=30, what="Redis restarted")
    wait_until(lambda: product.health()[1]["redis"]["ok"], seconds=60, what="Redis answering")


def _postmaster(product) -> int:
    return int((product.data_dir / "postgres" / "postmaster.pid").read_text().split()[0])


def test_a_killed_postgres_comes_back_and_writes_meanwhile_are_answered_2xx_or_json_503(product):
    """The supervised watcher sees its postmaster gone, exits, and is started again, which
    starts PostgreSQL again (crash recovery from its WAL); the web app reconnects. A client
    writing all along gets its memory stored (201) or a JSON 503 with Retry-After, nothing else."""
    headers = {"Authorization": f"Bearer {product.api_key()}", "Content-Type": "application/json"}
    answers, stop = [], threading.Event()

    def write():
        while not stop.is_set():
            body = json.dumps({"content": f"Written around a restart of the database, {len(answers)}"})
            try:
                answers.append(product.request("POST", "/api/v1/memories", body=body, headers=headers, timeout=60))
            except (OSError, http.client.HTTPException) as failure:
                answers.append((0, None, repr(failure)))

    old = _postmaster(product)
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        wait_until(lambda: len(answers) >= 3, seconds=60, what="writes under way")
        os.kill(old, signal.SIGKILL)
        wait_until(lambda: (pid := _postmaster(product)) != old and psutil.pid_exists(pid), seconds=120,
                   what="a new postmaster")
        assert "exited: postgres" in product.output
        wait_until(lambda: product.health()[1]["database"]["ok"], seconds=60, what="the database answering")
        written_back = len(answers)
        wait_until(lambda: any(status == 201 for status, _, _ in answers[written_back:]), seconds=60,
                   what="writes accepted again")
    finally:
        stop.set()
        writer.join(timeout=90)
    refused = [answer for answer in answers if not 200 <= answer[0] < 300]
    for status, answer_headers, body in refused:
        assert status == 503, (status, body[:300])
        assert answer_headers["Content-Type"] == "application/json" and answer_headers["Retry-After"].isdigit()
        assert json.loads(body)["error"]["code"] == "database_unavailable"
    assert refused, "no write met the database down: the test did not test it"


# --------------------------------------------------------------------------- stopping


def test_ctrl_c_stops_every_process_and_the_embedded_servers(product):
    supervisord = psutil.Process(int((supervision.run_directory(product.data_dir) / "supervisord.pid").read_text()))
    processes = [supervisord, *supervisord.children(recursive=True)]
    postmaster = psutil.Process(int((product.data_dir / "postgres" / "postmaster.pid").read_text().split()[0]))
    processes.append(postmaster)
    assert len(processes) >= 7  # supervisord, web (+ worker), worker, cron, redis, postgres watcher, postmaster

    product.process.send_signal(signal.SIGINT)
    assert product.process.wait(timeout=90) == 0, product.output[-3000:]
    gone, alive = psutil.wait_procs(processes, timeout=30)
    assert alive == [], [p.info if hasattr(p, "info") else p for p in alive]
    status = subprocess.run([sys.executable, "-m", "memory_platform.local_services", "status"], cwd=settings.BASE_DIR,
                            env={**os.environ, "MEMORY_PLATFORM_DATA_DIR": str(product.data_dir)},
                            capture_output=True, text=True, timeout=60).stdout
    assert "postgres     stopped" in status and "redis        stopped" in status
