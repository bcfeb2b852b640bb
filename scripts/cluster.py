"""A school's deployment on one machine: each host a network namespace on one bridge, real links between them.

    sudo .venv/bin/python scripts/cluster.py up [--rtt 1ms] [--jitter 0ms] [--loss 0%] [--env KEY=VALUE ...]
                                                                                          (make cluster)
    .venv/bin/python scripts/cluster.py status [--json]
    .venv/bin/python scripts/cluster.py fault cut web1 data 10s [--mode stall|reset]
    .venv/bin/python scripts/cluster.py fault heal web1 data
    .venv/bin/python scripts/cluster.py fault shape --rtt 20ms [--jitter 2ms] [--loss 2%]
    .venv/bin/python scripts/cluster.py fault kill gpu [interactive]      (SIGKILL a host's processes, or one)
    .venv/bin/python scripts/cluster.py fault restart data redis [--after 3s]   (SIGKILL, then start it again)
    .venv/bin/python scripts/cluster.py fault start gpu2  (bring the standby GPU host's workers up: a second gpu)
    .venv/bin/python scripts/cluster.py commands 20s      (Redis commands by host and name, for that long)
    .venv/bin/python scripts/cluster.py down

Hosts (namespace `encdec-<host>`, address 10.251.0.N/24 on the bridge `encdec-br`; the root namespace gets no
address): `proxy` (nginx with TLS, the site block of docs/deploy.md, a certificate made here), `web1` and `web2`
(`python -m webapp.server`, as scripts/run_stack.py starts it), `gpu` (the interactive and demonstrations
workers), `gpu2` (a standby second GPU host: on the network with its links, its workers started by `fault start
gpu2`, as an operator brings a spare machine in when `gpu` is lost), `cpu` (experiments and training), `data` (Debian's redis-server and PostgreSQL, run as processes with
their data under this cluster's temporary folder) and `client` (the school's network: a browser or a benchmark
runs there with `ip netns exec encdec-client ...`).

Every connection from one host to another goes through scripts/linkproxy.py in the connecting host's namespace
(the processes connect to 127.0.0.1:PORT): it adds `--rtt` (half each way), `--jitter` and `--loss`, and `fault cut`
partitions it. The client's link to the proxy has no added delay. Every process runs with the production settings
module and only environment variables, as docs/deploy.md tells an operator; migrations run once, from `client`,
straight against the data host's PostgreSQL. Everything this made (namespaces, the bridge, processes, the
temporary folder) is listed in one state file (`/run/encdec-cluster.json`, or $ENCDEC_CLUSTER_STATE), so `down`
from any shell removes it all.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import resource
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = ROOT / ".venv" / "bin"
BIN = VENV_BIN if (VENV_BIN / "python").exists() else Path(sys.executable).parent
PYTHON = str(BIN / "python")
sys.path.insert(0, str(ROOT))

from scripts.linkproxy import control  # noqa: E402

STATE = Path(os.environ.get("ENCDEC_CLUSTER_STATE", "/run/encdec-cluster.json"))
PREFIX = "encdec-"
BRIDGE = "encdec-br"
SUBNET = "10.251.0"
HOSTS = {"proxy": 10, "web1": 11, "web2": 12, "gpu": 21, "gpu2": 23, "cpu": 22, "data": 30, "client": 100}
WEBS = ("web1", "web2")
WEB_PORT, REDIS_PORT, PG_PORT = 8000, 6379, 5432
PG_BIN = max(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
             default=Path("/usr/lib/postgresql/15/bin"))  # Debian's newest installed
PACKAGES = ("nginx-light", "redis-server", "postgresql", "openssl", "iproute2")
WORKERS = {  # host -> (queue, pool options), as scripts/run_stack.py starts them
    "gpu": [("interactive", ["--pool", "threads", "--concurrency", "4"]),
            ("demonstrations", ["--pool", "threads", "--concurrency", "2"])],
    "cpu": [("experiments", ["--pool", "prefork", "--concurrency", "1"]),
            ("training", ["--pool", "prefork", "--concurrency", "1"])],
}
STANDBY = {"gpu2": "gpu"}  # host -> the host whose workers it runs once started (`fault start`); none at `up`
CLONE_NEWNET = 0x40000000
# `up --bench`: the limits bench/classroom.py and bench/stream.py lift on a stack of their own. Their users' sessions
# are written straight into the database, so no web process has seen them signed in: their sockets pay from the
# unknown's door budget; and bench/stream.py's 32 clients are one user.
BENCH_ENV = {"DOOR_ANONYMOUS_SOCKET_BURST": "2000", "DOOR_ANONYMOUS_SOCKETS_PER_MINUTE": "120000",
             "PLAYGROUND_MAX_CONCURRENT": "1000", "PLAYGROUND_REQUESTS_PER_MINUTE": "100000",
             "SOCKETS_PER_USER": "1000"}


def address(host: str) -> str:
    return f"{SUBNET}.{HOSTS[host]}"


def namespace(host: str) -> str:
    return PREFIX + host


def links(host: str) -> list[tuple[str, int, str, int]]:
    """The links `host` opens to others: (peer, local port, peer's address, peer's port)."""
    if host == "proxy":
        return [(web, WEB_PORT + 1 + i, address(web), WEB_PORT) for i, web in enumerate(WEBS)]
    if host in (*WEBS, *WORKERS, *STANDBY):
        return [("data", REDIS_PORT, address("data"), REDIS_PORT), ("data", PG_PORT, address("data"), PG_PORT)]
    return []


def proxy_url() -> str:
    return f"https://{address('proxy')}/"


# -- small helpers ------------------------------------------------------------------------------------------


def duration_s(text: str) -> float:
    """`10s`, `500ms`, `2m` or a bare number of seconds."""
    found = re.fullmatch(r"\s*([0-9.]+)\s*(ms|s|m)?\s*", text)
    if not found:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 10s, 500ms)")
    value, unit = float(found.group(1)), found.group(2) or "s"
    return value / 1000 if unit == "ms" else value * 60 if unit == "m" else value


def duration_ms(text: str) -> float:
    """A delay: `1ms`, `20ms`, `0`, `0.5s` (a bare number is milliseconds)."""
    return duration_s(text if re.search(r"[a-z]", text) else text + "ms") * 1000


def fraction(text: str) -> float:
    """`2%` or `0.02`."""
    value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"loss must be in [0, 1): {text!r}")
    return value


def setting(text: str) -> str:
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*=.*", text):
        raise argparse.ArgumentTypeError(f"not KEY=VALUE: {text!r}")
    return text


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def load_state() -> dict[str, Any] | None:
    try:
        return json.loads(STATE.read_text())
    except FileNotFoundError:
        return None


def save_state(state: dict[str, Any]) -> None:
    STATE.parent.mkdir(parents=True, exist_ok=True)
    part = STATE.with_suffix(".tmp")
    part.write_text(json.dumps(state, indent=2))
    part.replace(STATE)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


_libc = ctypes.CDLL(None, use_errno=True)


def in_namespace(host: str, fn: Any, *args: Any) -> Any:
    """fn(*args) on a thread that joined `host`'s network namespace (sockets it opens live there)."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            fd = os.open(f"/run/netns/{namespace(host)}", os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns failed")
            finally:
                os.close(fd)
            result["value"] = fn(*args)
        except BaseException as error:  # noqa: BLE001 (handed to the caller)
            result["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


def tcp_open(host: str, port: int) -> bool:
    import socket

    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def wait_for(what: str, check: Any, timeout: float, state: dict[str, Any] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if state is not None:
            dead = [p for p in state["processes"] if not alive(p["pid"])]
            if dead:
                raise RuntimeError(f"{dead[0]['host']}/{dead[0]['name']} died; its log: {dead[0]['log']}")
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not come up within {timeout:g} s")


def https_get(path: str, timeout: float = 5) -> tuple[int, bytes]:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # the cluster's own certificate
    try:
        with urllib.request.urlopen(proxy_url().rstrip("/") + path, timeout=timeout, context=context) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except OSError:
        return 0, b""


# -- bringing it up -----------------------------------------------------------------------------------------


def _raise_nofile() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def spawn(state: dict[str, Any], host: str, name: str, argv: list[str], env: dict[str, str],
          user: str | None = None, stop_signal: int = signal.SIGTERM) -> int:
    """Start `argv` in `host`'s namespace, in a session of its own, detached; recorded in the state file."""
    log = Path(state["dir"]) / "logs" / f"{host}-{name}.log"
    prefix = ["ip", "netns", "exec", namespace(host)]
    if user is not None:
        prefix += ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--"]
    with log.open("ab") as out:
        proc = subprocess.Popen([*prefix, *argv], cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_raise_nofile)
    state["processes"].append({"host": host, "name": name, "pid": proc.pid, "log": str(log),
                               "stop_signal": int(stop_signal), "argv": argv, "user": user,
                               "app": env.get("DJANGO_SETTINGS_MODULE") == "webapp.settings.production"})
    save_state(state)
    return proc.pid


def network_up(state: dict[str, Any]) -> None:
    sh("ip", "link", "add", BRIDGE, "type", "bridge")
    state["bridge"] = BRIDGE
    save_state(state)
    sh("ip", "link", "set", BRIDGE, "up")
    for host in HOSTS:
        ns, outside = namespace(host), PREFIX + host
        sh("ip", "netns", "add", ns)
        state["namespaces"].append(ns)
        save_state(state)
        sh("ip", "link", "add", outside, "type", "veth", "peer", "name", outside + "p")
        sh("ip", "link", "set", outside + "p", "netns", ns)
        sh("ip", "-n", ns, "link", "set", outside + "p", "name", "eth0")
        sh("ip", "-n", ns, "addr", "add", f"{address(host)}/24", "dev", "eth0")
        sh("ip", "-n", ns, "link", "set", "eth0", "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "link", "set", outside, "master", BRIDGE)
        sh("ip", "link", "set", outside, "up")


def data_up(state: dict[str, Any]) -> None:
    base = Path(state["dir"]) / "data"
    (base / "redis").mkdir(parents=True)
    spawn(state, "data", "redis", ["/usr/bin/redis-server", "--bind", "0.0.0.0", "--port", str(REDIS_PORT),
                                    "--protected-mode", "no", "--save", "", "--appendonly", "no",
                                    "--dir", str(base / "redis"), "--maxclients", "10000"], dict(os.environ))
    pg = base / "postgresql"
    pg.mkdir()
    shutil.chown(pg, "postgres", "postgres")
    subprocess.run(["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--",
                    str(PG_BIN / "initdb"), "-D", str(pg), "-U", "encdec", "--auth=trust", "-E", "UTF8",
                    "--locale=C.UTF-8"], check=True, capture_output=True)
    with (pg / "pg_hba.conf").open("a") as hba:  # the cluster's own bridge only
        hba.write(f"host all all {SUBNET}.0/24 trust\n")
    spawn(state, "data", "postgresql", [str(PG_BIN / "postgres"), "-D", str(pg), "-c", "listen_addresses=*",
                                        "-c", f"port={PG_PORT}", "-c", f"unix_socket_directories={pg}",
                                        "-c", "max_connections=400", "-c", "fsync=off"],
          dict(os.environ), user="postgres", stop_signal=signal.SIGINT)
    wait_for("redis", lambda: in_namespace("client", tcp_open, address("data"), REDIS_PORT), 30, state)
    wait_for("postgresql", lambda: in_namespace("client", tcp_open, address("data"), PG_PORT), 60, state)
    deadline = time.monotonic() + 30
    while True:  # accepting connections is not yet answering them
        made = subprocess.run(["ip", "netns", "exec", namespace("data"), str(PG_BIN / "createdb"), "-h", "127.0.0.1",
                               "-U", "encdec", "encdec"], capture_output=True, text=True)
        if made.returncode == 0:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"createdb failed: {made.stderr.strip()}")
        time.sleep(0.5)


def links_up(state: dict[str, Any]) -> None:
    for host in HOSTS:
        specs = [f"{peer}=127.0.0.1:{port}>{target}:{target_port}" for peer, port, target, target_port in links(host)]
        if not specs:
            continue
        sock = Path(state["dir"]) / "links" / f"{host}.sock"
        argv = [PYTHON, "-m", "scripts.linkproxy", "--control", str(sock), "--rtt-ms", str(state["rtt_ms"]),
                "--jitter-ms", str(state["jitter_ms"]), "--loss", str(state["loss"])]
        for spec in specs:
            argv += ["--link", spec]
        spawn(state, host, "linkproxy", argv, dict(os.environ, PYTHONUNBUFFERED="1"))
        state["links"][host] = str(sock)
        save_state(state)
    for host, sock in state["links"].items():
        wait_for(f"{host}'s link proxy", lambda s=sock: Path(s).exists(), 30, state)


def workers_up(state: dict[str, Any], host: str, like: str, env: dict[str, str]) -> None:
    """Start on `host` the Celery workers WORKERS gives `like` (the same queues and pools, named for `host`)."""
    for queue, options in WORKERS[like]:
        spawn(state, host, queue, [str(BIN / "celery"), "-A", "webapp", "worker", "-Q", queue, "-n", f"{queue}@{host}",
                                   "--loglevel", "INFO", *options], env)


def app_env(state: dict[str, Any], *, direct: bool = False) -> dict[str, str]:
    """The environment an operator writes for every process (docs/deploy.md), as seen from a host: Redis and
    PostgreSQL through the host's link (127.0.0.1), or straight at the data host (`direct`, for the one-off jobs)."""
    data = address("data") if direct else "127.0.0.1"
    shared = Path(state["dir"]) / "shared"  # what a network file system would share: the model store, media
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "PYTEST"))}
    env.update({
        "DJANGO_SETTINGS_MODULE": "webapp.settings.production",
        "DEBUG": "0",
        "SECRET_KEY": state["secret_key"],
        "ALLOWED_HOSTS": f"{address('proxy')},localhost",
        "CSRF_TRUSTED_ORIGINS": f"https://{address('proxy')}",
        "TRUSTED_PROXIES": address("proxy"),
        "REDIS_URL": f"redis://{data}:{REDIS_PORT}/0",
        "DATABASE_URL": f"postgres://encdec@{data}:{PG_PORT}/encdec",
        "DATA_DIR": str(shared),
        "MODEL_STORE": str(shared / "models"),
        "MODELCORE_DEVICE": "cpu",
        "SECURE_HSTS_PRELOAD": "0",
        "SECURE_HSTS_SECONDS": "0",
        "DEMO_PASSWORD": state["demo_password"],
        "PYTHONUNBUFFERED": "1",
    })
    env.update(state.get("env", {}))  # the operator's own lines (up --env)
    collected = ROOT / "var" / "staticfiles"  # make setup's collectstatic: the image's static files
    if (collected / "staticfiles.json").exists():
        env["STATIC_ROOT"] = str(collected)
    return env


def one_off(state: dict[str, Any], *argv: str) -> None:
    """A management command from the client host, straight against the data host."""
    done = subprocess.run(["ip", "netns", "exec", namespace("client"), PYTHON, "manage.py", *argv], cwd=ROOT,
                          env=app_env(state, direct=True), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(argv)} failed:\n{done.stdout[-2000:]}{done.stderr[-4000:]}")


def nginx_conf(folder: Path) -> Path:
    """docs/deploy.md's site block, its upstreams the proxy host's links to the web hosts, behind TLS."""
    site = re.search(r"```nginx\n(.*?)```", (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8"), re.S)
    if site is None:
        raise RuntimeError("docs/deploy.md has no nginx block")
    block = site.group(1)
    servers = re.findall(r"^\s*server \S+:8000\b[^;]*;\n", block, re.M)
    options = servers[0].split(":8000", 1)[1]
    block = block.replace("".join(servers), "".join(f"    server 127.0.0.1:{port}{options}"
                                                    for _peer, port, _t, _tp in links("proxy")))
    block = block.replace("listen 80;", f"listen 443 ssl;\n    ssl_certificate {folder}/cert.pem;\n"
                                        f"    ssl_certificate_key {folder}/key.pem;")
    conf = folder / "nginx.conf"
    conf.write_text(
        f"pid {folder}/nginx.pid;\nerror_log {folder}/error.log warn;\nworker_processes 1;\n"
        f"worker_rlimit_nofile 65536;\nevents {{ worker_connections 16384; }}\n"
        f"http {{\n  access_log off;\n  client_body_temp_path {folder}/body;\n  proxy_temp_path {folder}/proxy;\n"
        f"  fastcgi_temp_path {folder}/fastcgi;\n  uwsgi_temp_path {folder}/uwsgi;\n  scgi_temp_path {folder}/scgi;\n"
        f"  server {{ listen 80; return 301 https://$host$request_uri; }}\n{block}}}\n")
    return conf


def certificate(folder: Path) -> None:
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-subj",
                    "/CN=encdec-cluster", "-addext", f"subjectAltName=IP:{address('proxy')},DNS:localhost",
                    "-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem")],
                   check=True, capture_output=True)


def healthy() -> bool:
    status, body = in_namespace("client", https_get, "/healthz")
    if status != 200:
        return False
    workers = json.loads(body).get("workers", {})
    return all(workers.get(queue, 0) >= 1 for queues in WORKERS.values() for queue, _ in queues)


def link_overhead(state: dict[str, Any], count: int = 200) -> dict[str, Any]:
    """Redis PING round trips from web1 through its link, and straight to the data host, interleaved."""
    done = subprocess.run(["ip", "netns", "exec", namespace("web1"), PYTHON, "-m", "scripts.linkproxy", "ping",
                           "--via", f"127.0.0.1:{REDIS_PORT}", "--direct", f"{address('data')}:{REDIS_PORT}",
                           "--count", str(count)], cwd=ROOT, capture_output=True, text=True, check=True)
    return {"rtt_ms": state["rtt_ms"], **json.loads(done.stdout)}


def up(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        print("error: the cluster needs root (network namespaces)", file=sys.stderr)
        return 1
    if load_state() is not None or any(line.split()[0].startswith(PREFIX) for line in
                                       sh("ip", "netns", "list").stdout.splitlines() if line.strip()):
        print(f"error: a cluster is up already (state: {STATE}); `scripts/cluster.py down` first", file=sys.stderr)
        return 1
    subprocess.run([str(ROOT / "scripts" / "ensure_system_packages.sh"), *PACKAGES], check=True)
    folder = Path(tempfile.mkdtemp(prefix="encdec-cluster-"))
    folder.chmod(0o755)  # PostgreSQL runs as its own user under it
    for sub in ("logs", "links", "proxy", "shared"):
        (folder / sub).mkdir()
    state: dict[str, Any] = {"dir": str(folder), "rtt_ms": args.rtt, "jitter_ms": args.jitter, "loss": args.loss,
                             "env": {**(BENCH_ENV if args.bench else {}),
                                     **dict(item.split("=", 1) for item in args.env)},
                             "namespaces": [], "bridge": None, "processes": [], "links": {},
                             "secret_key": secrets.token_urlsafe(40),
                             "demo_password": os.environ.get("DEMO_PASSWORD") or secrets.token_urlsafe(9),
                             "started": time.time()}
    save_state(state)
    started = time.monotonic()
    try:
        print(f"[cluster] hosts on {BRIDGE} ({SUBNET}.0/24), folder {folder}", flush=True)
        network_up(state)
        print("[cluster] data: redis-server and PostgreSQL", flush=True)
        data_up(state)
        print(f"[cluster] links: rtt {args.rtt:g} ms, jitter {args.jitter:g} ms, loss {args.loss:.2%}", flush=True)
        links_up(state)
        print("[cluster] migrations and accounts, once, against the data host", flush=True)
        one_off(state, "migrate", "--noinput", "-v", "0")
        one_off(state, "register_shipped_models")
        one_off(state, "demo_accounts")
        if "STATIC_ROOT" not in app_env(state):
            one_off(state, "collectstatic", "--noinput", "-v", "0")
        env = app_env(state)
        for web in WEBS:
            spawn(state, web, "web", [PYTHON, "-m", "webapp.server", "-b", address(web), "-p", str(WEB_PORT),
                                      "webapp.asgi:application"], env)
        for host in WORKERS:
            workers_up(state, host, host, env)
        proxy_dir = folder / "proxy"
        certificate(proxy_dir)
        conf = nginx_conf(proxy_dir)
        spawn(state, "proxy", "nginx", [shutil.which("nginx") or "/usr/sbin/nginx", "-p", str(proxy_dir), "-c",
                                        str(conf), "-g", "daemon off;"], dict(os.environ), stop_signal=signal.SIGQUIT)
        for web in WEBS:
            wait_for(web, lambda w=web: in_namespace("proxy", tcp_open, address(w), WEB_PORT), 120, state)
        wait_for("/healthz through the proxy with every worker", healthy, 180, state)
        print("[cluster] measuring the link's own latency (Redis PING from web1, through its link and straight)",
              flush=True)
        state["link_overhead"] = link_overhead(state)
        save_state(state)
    except BaseException as error:
        print(f"[cluster] up failed: {error}; taking everything down", file=sys.stderr, flush=True)
        down_everything(state)
        return 1
    overhead = state["link_overhead"]
    print(f"[cluster] up in {time.monotonic() - started:.0f} s: {proxy_url()} (self-signed; demo accounts admin, "
          f"instructor, student; password {state['demo_password']})\n"
          f"[cluster] link at rtt {args.rtt:g} ms: PING p50 {overhead['through_p50_ms']} ms through it, "
          f"{overhead['direct_p50_ms']} ms straight (added {overhead['added_p50_ms']} ms)\n"
          f"[cluster] a browser or a benchmark: ip netns exec {namespace('client')} ...; "
          f"`scripts/cluster.py down` removes it all", flush=True)
    return 0


# -- status, faults, down -----------------------------------------------------------------------------------


def describe(state: dict[str, Any]) -> dict[str, Any]:
    hosts: dict[str, Any] = {}
    for host in HOSTS:
        hosts[host] = {"address": address(host), "namespace": namespace(host), "processes": {}}
    for proc in state["processes"]:
        hosts[proc["host"]]["processes"][proc["name"]] = {"pid": proc["pid"], "alive": alive(proc["pid"]),
                                                          "log": proc["log"]}
    for host, sock in state["links"].items():
        try:
            link = control(Path(sock), {"op": "status"}, timeout=2)
            hosts[host]["links"] = {"rtt_ms": link["rtt_ms"], "jitter_ms": link["jitter_ms"], "loss": link["loss"],
                                    "peers": link["peers"]}
        except OSError as error:
            hosts[host]["links"] = {"error": str(error)}
    return {"proxy": proxy_url(), "hosts": hosts,
            "client_namespace": namespace("client"),
            "redis_url": f"redis://{address('data')}:{REDIS_PORT}/0",
            "database_url": f"postgres://encdec@{address('data')}:{PG_PORT}/encdec",
            "rtt_ms": state["rtt_ms"], "jitter_ms": state["jitter_ms"], "loss": state["loss"],
            "link_overhead": state.get("link_overhead"), "env": state.get("env", {}), "demo_password": state["demo_password"],
            "dir": state["dir"], "state": str(STATE)}


def for_bench() -> tuple[dict[str, Any], dict[str, Any]]:
    """A benchmark pointed at the cluster (bench/classroom.py --cluster): re-runs the calling script in the client
    namespace when it is not there yet, then gives the cluster's description (status --json) and the environment of
    a one-off job there (straight at the data host)."""
    state = load_state()
    if state is None:
        raise SystemExit("no cluster is up (sudo .venv/bin/python scripts/cluster.py up --bench --rtt 1ms)")
    if any(state.get("env", {}).get(key) != value for key, value in BENCH_ENV.items()):
        raise SystemExit("bring the cluster up with --bench (the limits the benchmarks lift on stacks of their own)")
    if os.environ.get("ENCDEC_CLUSTER_CLIENT") != namespace("client"):
        os.environ["ENCDEC_CLUSTER_CLIENT"] = namespace("client")
        os.execvp("ip", ["ip", "netns", "exec", namespace("client"), sys.executable, *sys.argv])
    return describe(state), dict(app_env(state, direct=True), PYTHONUNBUFFERED="1")


def status(args: argparse.Namespace) -> int:
    state = load_state()
    if state is None:
        print(json.dumps({"proxy": None, "hosts": {}}) if args.json else "no cluster is up")
        return 1
    info = describe(state)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"proxy {info['proxy']}  (rtt {info['rtt_ms']:g} ms, jitter {info['jitter_ms']:g} ms, loss "
          f"{info['loss']:.2%}; folder {info['dir']})")
    for host, about in info["hosts"].items():
        procs = ", ".join(f"{name} {p['pid']}{'' if p['alive'] else ' DEAD'}" for name, p in about["processes"].items())
        cuts = [f"{peer} cut {p['cut_left_s']} s ({p['cut_mode']})"
                for peer, p in about.get("links", {}).get("peers", {}).items() if p.get("cut_left_s")]
        print(f"  {host:7} {about['address']:13} {procs}{'  ' + '; '.join(cuts) if cuts else ''}")
    return 0


def fault(args: argparse.Namespace) -> int:
    state = load_state()
    if state is None:
        print("error: no cluster is up", file=sys.stderr)
        return 1
    if args.fault in ("cut", "heal"):
        for end in (args.a, args.b):
            if end not in HOSTS:
                print(f"error: no host {end!r} (hosts: {', '.join(HOSTS)})", file=sys.stderr)
                return 1
        done = 0
        for source, peer in ((args.a, args.b), (args.b, args.a)):
            if source in state["links"] and any(p == peer for p, *_ in links(source)):
                request = ({"op": "cut", "peer": peer, "seconds": args.duration, "mode": args.mode}
                           if args.fault == "cut" else {"op": "heal", "peer": peer})
                control(Path(state["links"][source]), request)
                done += 1
        if not done:
            print(f"error: no link between {args.a} and {args.b}", file=sys.stderr)
            return 1
        print(f"{args.a} <-> {args.b}: " + (f"cut for {args.duration:g} s ({args.mode})" if args.fault == "cut"
                                             else "healed"))
        return 0
    if args.fault == "shape":
        request: dict[str, Any] = {"op": "set"}
        for key, value in (("rtt_ms", args.rtt), ("jitter_ms", args.jitter), ("loss", args.loss)):
            if value is not None:
                request[key] = value
                state[key] = value
        for sock in state["links"].values():
            control(Path(sock), request)
        save_state(state)
        print(f"every link: rtt {state['rtt_ms']:g} ms, jitter {state['jitter_ms']:g} ms, loss {state['loss']:.2%}")
        return 0
    if args.fault == "start":
        queues = {queue for queue, _ in WORKERS[STANDBY[args.host]]}
        if any(p["host"] == args.host and p["name"] in queues and alive(p["pid"]) for p in state["processes"]):
            print(f"error: {args.host}'s workers are running already", file=sys.stderr)
            return 1
        workers_up(state, args.host, STANDBY[args.host], app_env(state))
        print(f"started {args.host}'s workers ({', '.join(q for q, _ in WORKERS[STANDBY[args.host]])}); "
              f"/healthz counts them once they have connected", flush=True)
        return 0
    if args.fault in ("kill", "restart"):
        hit = [p for p in state["processes"] if p["host"] == args.host and (args.process is None or
                                                                            p["name"] == args.process)]
        if not hit:
            print(f"error: no process {args.process or ''} on {args.host}", file=sys.stderr)
            return 1
        for proc in hit:
            _kill_group(proc["pid"], signal.SIGKILL)
            print(f"killed {proc['host']}/{proc['name']} (pid {proc['pid']})", flush=True)
        if args.fault == "restart":
            time.sleep(args.after)
            for proc in hit:
                state["processes"].remove(proc)
                env = app_env(state) if proc.get("app") else dict(os.environ, PYTHONUNBUFFERED="1")
                pid = spawn(state, proc["host"], proc["name"], proc["argv"], env, user=proc.get("user"),
                            stop_signal=proc.get("stop_signal", signal.SIGTERM))
                print(f"started {proc['host']}/{proc['name']} again (pid {pid})")
        return 0
    return 1


def redis_commands(seconds: float) -> dict[str, dict[str, int]]:
    """Every command the data host's Redis runs for `seconds` (MONITOR), counted by the host that sent it (each
    host's link connects from its address) and by name."""
    import socket

    names = {address(host): host for host in HOSTS}
    counts: dict[str, dict[str, int]] = {}
    with socket.create_connection((address("data"), REDIS_PORT), timeout=1) as sock:
        sock.sendall(b"MONITOR\r\n")
        deadline, rest = time.monotonic() + seconds, b""
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(1 << 20)
            except TimeoutError:
                continue
            if not chunk:
                break
            lines = (rest + chunk).split(b"\r\n")
            rest = lines.pop()
            for line in lines:
                found = re.match(rb'\+[0-9.]+ \[\d+ ([0-9.]+):\d+\] "([^"]+)"', line)
                if found:
                    host = names.get(found.group(1).decode(), found.group(1).decode())
                    name = found.group(2).decode().upper()
                    counts.setdefault(host, {}).setdefault(name, 0)
                    counts[host][name] += 1
    return counts


def count_commands(args: argparse.Namespace) -> int:
    if load_state() is None:
        print("error: no cluster is up", file=sys.stderr)
        return 1
    counts = in_namespace("client", redis_commands, args.seconds)
    print(json.dumps({host: dict(sorted(c.items(), key=lambda kv: -kv[1])) for host, c in sorted(counts.items())},
                     indent=2))
    return 0


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def down_everything(state: dict[str, Any] | None) -> list[str]:
    """Stop every process, remove the namespaces, the bridge, the folder and the state file; what was left."""
    problems = []
    processes = (state or {}).get("processes", [])
    for proc in processes:
        _kill_group(proc["pid"], proc.get("stop_signal", signal.SIGTERM))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(p["pid"]) for p in processes):
        time.sleep(0.1)
    for proc in processes:
        _kill_group(proc["pid"], signal.SIGKILL)
    ours = [line.split()[0] for line in sh("ip", "netns", "list").stdout.splitlines()
            if line.strip() and line.split()[0].startswith(PREFIX)]
    for ns in sorted(set(ours) | set((state or {}).get("namespaces", []))):
        left = sh("ip", "netns", "pids", ns, check=False).stdout.split()
        for pid in left:  # anything still running in a namespace this script made
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        if left:
            time.sleep(0.2)
        if sh("ip", "netns", "del", ns, check=False).returncode != 0 and ns in ours:
            problems.append(f"namespace {ns}")
    for host in HOSTS:  # veth ends go with their namespace; these only if a step failed between the two
        sh("ip", "link", "del", PREFIX + host, check=False)
    if sh("ip", "link", "show", BRIDGE, check=False).returncode == 0:
        sh("ip", "link", "del", BRIDGE, check=False)
    if state is not None and state.get("dir"):
        shutil.rmtree(state["dir"], ignore_errors=True)
        if Path(state["dir"]).exists():
            problems.append(state["dir"])
    STATE.unlink(missing_ok=True)
    STATE.with_suffix(".tmp").unlink(missing_ok=True)
    return problems


def down(_args: argparse.Namespace) -> int:
    state = load_state()
    problems = down_everything(state)
    if problems:
        print(f"left behind: {', '.join(problems)}", file=sys.stderr)
        return 1
    print("cluster down: no namespace, bridge, process or folder left" if state else "no cluster was up")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("up", help="bring every host up")
    start.add_argument("--rtt", type=duration_ms, default=0.0, help="round trip added on every link (1ms, 20ms)")
    start.add_argument("--jitter", type=duration_ms, default=0.0, help="extra one-way delay, uniform in [0, this]")
    start.add_argument("--loss", type=fraction, default=0.0, help="segment loss (2%% or 0.02)")
    start.add_argument("--env", action="append", default=[], type=setting, metavar="KEY=VALUE",
                       help="a setting for every app process, as a line of the operator's .env (repeatable)")
    start.add_argument("--bench", action="store_true",
                       help="lift the limits the benchmarks lift on their own stacks (bench/classroom.py --cluster)")
    commands.add_parser("down", help="stop and remove everything")
    show = commands.add_parser("status", help="hosts, processes and links")
    show.add_argument("--json", action="store_true")
    faults = commands.add_parser("fault", help="partition a link, shape every link, kill a host's processes")
    kinds = faults.add_subparsers(dest="fault", required=True)
    cut = kinds.add_parser("cut", help="partition the link between two hosts for a while")
    cut.add_argument("a")
    cut.add_argument("b")
    cut.add_argument("duration", type=duration_s)
    cut.add_argument("--mode", choices=("stall", "reset"), default="stall")
    heal = kinds.add_parser("heal", help="end a cut now")
    heal.add_argument("a")
    heal.add_argument("b")
    shape = kinds.add_parser("shape", help="change every link's delay, jitter or loss")
    shape.add_argument("--rtt", type=duration_ms)
    shape.add_argument("--jitter", type=duration_ms)
    shape.add_argument("--loss", type=fraction)
    kill = kinds.add_parser("kill", help="SIGKILL a host's processes (or one of them)")
    kill.add_argument("host", choices=list(HOSTS))
    kill.add_argument("process", nargs="?")
    restart = kinds.add_parser("restart", help="SIGKILL a host's processes (or one), then start them again")
    restart.add_argument("host", choices=list(HOSTS))
    restart.add_argument("process", nargs="?")
    restart.add_argument("--after", type=duration_s, default=0.0, help="how long it stays down (e.g. 3s)")
    begin = kinds.add_parser("start", help="start a standby host's workers (gpu2: those of gpu)")
    begin.add_argument("host", choices=list(STANDBY))
    count = commands.add_parser("commands", help="count the data host's Redis commands by host and name (MONITOR)")
    count.add_argument("seconds", type=duration_s)
    args = parser.parse_args()
    return {"up": up, "down": down, "status": status, "fault": fault, "commands": count_commands}[args.command](args)


if __name__ == "__main__":
    raise SystemExit(main())
