"""Settings shared by every environment; each value that varies comes from the environment."""
from __future__ import annotations

from pathlib import Path

import dj_database_url
import plotly
from csp.constants import NONE, SELF, UNSAFE_INLINE
from django.utils.translation import gettext_lazy as _
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from webapp.settings.env import (
    env_bool,
    env_choice,
    env_int,
    env_list,
    env_networks,
    env_path,
    env_str,
    redis_url_for_celery,
    validate_redis_url,
)

BASE_DIR = Path(__file__).resolve().parent.parent.parent
DATA_DIR = env_path("DATA_DIR", BASE_DIR / "var")
RUN_DIR = DATA_DIR / "run"
DATA_DIR.mkdir(parents=True, exist_ok=True)  # the default SQLite file and run folder live here

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY", required=not DEBUG)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "webapp.site_pages.apps.LabAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "axes",
    "webapp.site_pages",
    "webapp.realtime",
    "webapp.ops",
    "webapp.accounts",
    "webapp.classroom",
    "webapp.experiments",
    "webapp.lesson",
    "webapp.playground",
    "webapp.registry",
    "webapp.training",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "webapp.realtime.door.known_session_middleware",
    "webapp.accounts.roles.RoleMemoMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "webapp.ops.busy.BusyDatabaseMiddleware",
    "webapp.site_pages.method_page.MethodNotAllowedPageMiddleware",
    # Axes must come last: it inspects the outcome of authentication.
    "axes.middleware.AxesMiddleware",
]

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "webapp.urls"
ASGI_APPLICATION = "webapp.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "webapp.accounts.context_processors.roles",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{DATA_DIR / 'db.sqlite3'}"),
        # Kept open between requests: a web process reaches the database from a pool of threads, and a socket's
        # join made several queries, each on a connection opened and closed for it (a third of a join's CPU).
        conn_max_age=env_int("DB_CONN_MAX_AGE", 60, minimum=0),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # IMMEDIATE: a transaction takes the write lock when it begins, so a busy database waits its turn
    # (up to `timeout` seconds) instead of failing at once on a read lock it cannot upgrade.
    # WAL: readers never wait for a writer, nor a writer for readers (with the default rollback journal, 100
    # students' page views, each recording a visit, queued behind each other for seconds: bench/class_load.py).
    DATABASES["default"].setdefault("OPTIONS", {}).update({
        "transaction_mode": "IMMEDIATE", "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    })
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "site_pages:home"
LOGOUT_REDIRECT_URL = "accounts:login"
# Students may create their own accounts unless an operator turns it off.
REGISTRATION_OPEN = env_bool("REGISTRATION_OPEN", True)
# Accounts one client address may make in an hour (a class behind one address registers at once).
REGISTRATIONS_PER_HOUR = env_int("REGISTRATIONS_PER_HOUR", 40, minimum=1)

# Live sessions (docs/deploy.md, "Live sessions"): idle ones end, a cap per instructor, wrong join codes throttled.
CLASSROOM_IDLE_HOURS = env_int("CLASSROOM_IDLE_HOURS", 4, minimum=1)
CLASSROOM_LIVE_SESSIONS_PER_INSTRUCTOR = env_int("CLASSROOM_LIVE_SESSIONS_PER_INSTRUCTOR", 5, minimum=1)
CLASSROOM_JOIN_FAILURES_PER_USER = env_int("CLASSROOM_JOIN_FAILURES_PER_USER", 10, minimum=1)
CLASSROOM_JOIN_FAILURES_PER_ADDRESS = env_int("CLASSROOM_JOIN_FAILURES_PER_ADDRESS", 60, minimum=1)
CLASSROOM_JOIN_WINDOW_S = env_int("CLASSROOM_JOIN_WINDOW_S", 60, minimum=1)
# Seeds the students of one session may add to its revealed comparisons ("Add my seed", docs/classroom-socket.md).
CLASSROOM_SEEDS_PER_SESSION = env_int("CLASSROOM_SEEDS_PER_SESSION", 30, minimum=0)
# A browser that signed in as a user carries a signed device cookie for that user (docs/deploy.md): its wrong
# passwords count apart from the address's, so a shared address's lockout does not keep that user out.
DEVICE_COOKIE_DAYS = env_int("DEVICE_COOKIE_DAYS", 180, minimum=1)

# Lock an account/IP pair out after repeated failed logins (django-axes).
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = env_int("AXES_COOLOFF_MINUTES", 15, minimum=1) / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_LOCKOUT_TEMPLATE = "accounts/locked_out.html"
AXES_RESET_ON_SUCCESS = True
# An address that fails this often across any usernames is locked for all of them (password spraying).
AXES_ADDRESS_FAILURE_LIMIT = env_int("AXES_ADDRESS_FAILURE_LIMIT", 30, minimum=1)
AXES_HANDLER = "webapp.accounts.lockout.AccountAndAddressHandler"
AXES_CLIENT_IP_CALLABLE = "webapp.accounts.lockout.client_ip"
# Behind a proxy every connection comes from the proxy: the client's address is then read from
# CLIENT_IP_HEADER, but only on connections from these proxies (anyone else can write that header).
TRUSTED_PROXY_NETWORKS = env_networks("TRUSTED_PROXIES")
CLIENT_IP_HEADER = env_str("CLIENT_IP_HEADER", "X-Forwarded-For")

LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("zh-hans", _("Simplified Chinese"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
# plotly.min.js is served from the installed plotly package (no CDN, no copy in git).
STATICFILES_DIRS = [BASE_DIR / "static", ("vendor/plotly", Path(plotly.__file__).parent / "package_data")]
STATIC_ROOT = env_path("STATIC_ROOT", DATA_DIR / "staticfiles")
# Files browsers ask for at the site's root (/favicon.ico), served by WhiteNoise.
WHITENOISE_ROOT = BASE_DIR / "root_files"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "webapp.ops.storage.StaticStorage"},
}
MEDIA_ROOT = env_path("MEDIA_ROOT", DATA_DIR / "media")

# Trained models live here (safetensors folders); the shipped ones are registered from modelcore/shipped.
MODEL_STORE = env_path("MODEL_STORE", DATA_DIR / "models")
MODELCORE_DEVICE = env_choice("MODELCORE_DEVICE", "auto", ("auto", "cpu", "cuda"))

# Training jobs (docs/admin-guide.md): a run holds a lease in the database that it renews every few seconds;
# a job whose worker died is resumed from its checkpoint once the lease lapses, up to MAX_ATTEMPTS runs.
TRAINING_MAX_ATTEMPTS = env_int("TRAINING_MAX_ATTEMPTS", 3, minimum=1)
TRAINING_LEASE_SECONDS = env_int("TRAINING_LEASE_SECONDS", 60, minimum=2)
# Memory of a training worker: a job whose weights, gradients and optimizer state need more is refused.
TRAINING_WORKER_MEMORY_GIB = env_int("TRAINING_WORKER_MEMORY_GIB", 8, minimum=1)
TRAINING_UPLOAD_MAX_BYTES = env_int("TRAINING_UPLOAD_MAX_BYTES", 20 * 1024 * 1024, minimum=1024)

# Every WebSocket (docs/protocol.md, docs/deploy.md): what one socket may have unsent to a client that does not read
# before it is closed (4408), the sockets one user may hold open in one web process (the next is closed with 4409),
# and how often a socket's `resync` is answered (one asked sooner is answered when the interval ends, once).
SOCKET_SEND_BUFFER_BYTES = env_int("SOCKET_SEND_BUFFER_BYTES", 4 * 1024 * 1024, minimum=65_536)
# ... and what all of one web process's sockets together may hold unsent: past it, a socket holding more than a
# sixteenth of SOCKET_SEND_BUFFER_BYTES unsent is closed with 4408 as it is sent more.
SOCKET_SEND_PROCESS_BYTES = env_int("SOCKET_SEND_PROCESS_BYTES", 32 * 1024 * 1024, minimum=1_048_576)
SOCKETS_PER_USER = env_int("SOCKETS_PER_USER", 8, minimum=1)
SOCKET_RESYNC_EVERY_MS = env_int("SOCKET_RESYNC_EVERY_MS", 2000, minimum=0)
# The door (webapp/realtime/door.py, docs/deploy.md): what HTTP requests and socket handshakes may cost, counted in the
# event loop before Django sees them; past a budget, 429 (or the handshake refused) after
# DOOR_REFUSAL_WAIT_MS. Per signed-in session (tight), per client address (generous: a class behind one NAT).
DOOR_LIMITS = env_bool("DOOR_LIMITS", True)
DOOR_SESSION_PER_MINUTE = env_int("DOOR_SESSION_PER_MINUTE", 300, minimum=1)
DOOR_SESSION_BURST = env_int("DOOR_SESSION_BURST", 60, minimum=1)
DOOR_SESSION_DEMOS_PER_MINUTE = env_int("DOOR_SESSION_DEMOS_PER_MINUTE", 60, minimum=1)
DOOR_SESSION_DEMO_BURST = env_int("DOOR_SESSION_DEMO_BURST", 20, minimum=1)
DOOR_ADDRESS_PER_MINUTE = env_int("DOOR_ADDRESS_PER_MINUTE", 12_000, minimum=1)
DOOR_ADDRESS_BURST = env_int("DOOR_ADDRESS_BURST", 2_000, minimum=1)
DOOR_ANONYMOUS_PER_MINUTE = env_int("DOOR_ANONYMOUS_PER_MINUTE", 1_200, minimum=1)
DOOR_ANONYMOUS_BURST = env_int("DOOR_ANONYMOUS_BURST", 300, minimum=1)
DOOR_ANONYMOUS_SOCKETS_PER_MINUTE = env_int("DOOR_ANONYMOUS_SOCKETS_PER_MINUTE", 120, minimum=1)
DOOR_ANONYMOUS_SOCKET_BURST = env_int("DOOR_ANONYMOUS_SOCKET_BURST", 200, minimum=1)
DOOR_STATIC_PER_MINUTE = env_int("DOOR_STATIC_PER_MINUTE", 12_000, minimum=1)
DOOR_STATIC_BURST = env_int("DOOR_STATIC_BURST", 2_000, minimum=1)
DOOR_REFUSAL_WAIT_MS = env_int("DOOR_REFUSAL_WAIT_MS", 1000, minimum=0)
DOOR_HELD_PER_ADDRESS = env_int("DOOR_HELD_PER_ADDRESS", 1024, minimum=0)
# The decoding playground (docs/protocol.md): per-user limits, per-request caps, models kept warm per worker.
PLAYGROUND_MAX_CONCURRENT = env_int("PLAYGROUND_MAX_CONCURRENT", 2, minimum=1)
PLAYGROUND_REQUESTS_PER_MINUTE = env_int("PLAYGROUND_REQUESTS_PER_MINUTE", 30, minimum=1)
PLAYGROUND_MAX_SOURCE_CHARS = env_int("PLAYGROUND_MAX_SOURCE_CHARS", 200, minimum=1)
PLAYGROUND_MAX_TOKENS = env_int("PLAYGROUND_MAX_TOKENS", 128, minimum=1)
PLAYGROUND_MAX_SECONDS = env_int("PLAYGROUND_MAX_SECONDS", 120, minimum=1)
PLAYGROUND_WARM_MODELS = env_int("PLAYGROUND_WARM_MODELS", 4, minimum=1)
# A decode is answered or refused, never left hanging: a worker beats for each request it holds every
# second; a request whose worker has been silent PLAYGROUND_WORKER_LOST_S ends with `worker_lost`, and
# one no worker has taken within PLAYGROUND_QUEUE_WAIT_S is refused with `no_worker`.
PLAYGROUND_WORKER_LOST_S = env_int("PLAYGROUND_WORKER_LOST_S", 5, minimum=2)
PLAYGROUND_QUEUE_WAIT_S = env_int("PLAYGROUND_QUEUE_WAIT_S", 15, minimum=2)
# Torch threads of an interactive worker process: small decoding steps are bound by per-op overhead,
# and idle OpenMP threads spinning beside the loop slowed each step 10x on a busy 2-core machine.
PLAYGROUND_TORCH_THREADS = env_int("PLAYGROUND_TORCH_THREADS", 1, minimum=1)
# The lesson's demonstrations, per user (only those not answered from the cache count): how many at once and how
# many new ones a minute; their stored results, kept while used within LESSON_DEMO_CACHE_DAYS, at most
# LESSON_DEMO_CACHE_ROWS (the least recently used go first); torch threads of a demonstrations worker's each run.
LESSON_DEMO_MAX_CONCURRENT = env_int("LESSON_DEMO_MAX_CONCURRENT", 2, minimum=1)
LESSON_DEMOS_PER_MINUTE = env_int("LESSON_DEMOS_PER_MINUTE", 30, minimum=1)
LESSON_DEMO_CACHE_DAYS = env_int("LESSON_DEMO_CACHE_DAYS", 14, minimum=1)
LESSON_DEMO_CACHE_ROWS = env_int("LESSON_DEMO_CACHE_ROWS", 5000, minimum=10)
LESSON_DEMO_TORCH_THREADS = env_int("LESSON_DEMO_TORCH_THREADS", 1, minimum=1)
# A worker that serves none of the decodes (demonstrations, experiments, training) runs this much nicer than the rest
# (webapp/ops/priority.py): on shared cores it takes what decoding leaves. 0: the same priority as every process.
BACKGROUND_WORKER_NICE = env_int("BACKGROUND_WORKER_NICE", 10, minimum=0)

# Experiments (docs/experiments.md): new runs a non-admin may start in 24 hours, and the torch
# threads of each run (one: runs share the training worker's cores with each other).
EXPERIMENTS_DAILY_QUOTA = env_int("EXPERIMENTS_DAILY_QUOTA", 3, minimum=0)
EXPERIMENTS_TORCH_THREADS = env_int("EXPERIMENTS_TORCH_THREADS", 1, minimum=1)
# Worker processes consuming the `experiments` queue (for the queue's wait estimate; make run starts 1).
EXPERIMENTS_WORKERS = env_int("EXPERIMENTS_WORKERS", 1, minimum=1)
# Seeds one experiments worker trains together: a sweep with more is split into parts of this many across the
# workers (webapp/experiments/sweep_parts.py). 4, 8 or 16, so that each part is a sweep of its own.
EXPERIMENTS_SWEEP_BATCH = int(env_choice("EXPERIMENTS_SWEEP_BATCH", "8", ("4", "8", "16")))

# Redis serves the channel layer, the Celery broker and its results. Unset: the embedded
# redis-server that `make run` (and the test suite) starts on a Unix socket in RUN_DIR.
REDIS_URL = validate_redis_url(env_str("REDIS_URL", f"unix://{RUN_DIR / 'redis.sock'}"))

CHANNEL_LAYERS = {
    "default": {
        # The pub/sub layer loses nothing under bursts (the list-based layer drops past its capacity).
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {
            # redis-py's 5 s default socket timeout kills idle sockets (channels_redis#422).
            # retry: a command that fails for its connection (ConnectionError, TimeoutError) is sent once
            # more on a new one, at once. After a Redis restart a web process whose sockets were all closed
            # meanwhile still holds the dead pub/sub connection (nobody read it); over TCP its first
            # SUBSCRIBE vanishes into it and the next fails "Connection lost", which refused a socket
            # with `unavailable` (4013) however long after the return. The reconnect re-subscribes
            # every channel, the vanished one included. While Redis is away the reconnect fails at once
            # and the error is raised as before (docs/deploy.md, "When something fails").
            "hosts": [{"address": REDIS_URL, "socket_timeout": None, "retry": Retry(NoBackoff(), 1)}],
        },
    }
}

CELERY_BROKER_URL = redis_url_for_celery(REDIS_URL)
CELERY_RESULT_BACKEND = redis_url_for_celery(REDIS_URL)
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "interactive"
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_CONSUMER = "webapp.ops.broker:QuickReconnectConsumer"  # back within 1 s of a Redis restart
# Redis redelivers an unacknowledged task after this many seconds: longer than the longest job.
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 12 * 3600, minimum=60)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"axes": {"level": "WARNING"}, "daphne": {"level": "WARNING"}},
}

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie; kept readable for JS modules.
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (django-csp): scripts, sockets and everything else from this site only.
# Inline style attributes stay allowed: the templates size progress bars with them and htmx and
# plotly.js insert <style> elements; no page runs an inline script.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:", "blob:"],
        "font-src": [SELF, "data:"],
        "connect-src": [SELF],  # fetch and the WebSockets (ws:/wss: of this host)
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
