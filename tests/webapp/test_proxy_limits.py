"""The proxy's outer ring: the nginx block docs/deploy.md gives limits requests and connections per client address,
lets a class's worth through and answers a flood 429 itself (the web process never sees it)."""
from __future__ import annotations

import shutil
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.fixtures.proxy import Proxy, deploy_config

pytestmark = [pytest.mark.services]


class Upstream(BaseHTTPRequestHandler):
    """The web process's place: 200 to everything, each request counted."""

    seen = 0

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        type(self).seen += 1
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args) -> None:
        pass


class UpstreamServer(ThreadingHTTPServer):
    """A listen backlog a class's burst fits in: socketserver's default of 5 let a loaded machine drop nginx's
    connections (its proxy_connect_timeout, 2 s, then answered 504)."""

    request_queue_size = 256


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_the_documented_zones_let_a_class_through_and_answer_a_flood_429(tmp_path: Path):
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx is not installed (Debian: apt-get install nginx-light)")
    site = deploy_config()
    for line in ("limit_req_zone $binary_remote_addr", "limit_conn_zone $binary_remote_addr", "limit_req zone=",
                 "limit_conn encdec_connections", "limit_req_status 429"):
        assert line in site, f"docs/deploy.md's nginx block has no {line}"
    server = UpstreamServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"127.0.0.1:{server.server_address[1]}"
    proxies: list[Proxy] = []
    try:
        documented = Proxy(tmp_path / "documented", [upstream])  # nginx starts with the block as documented
        proxies.append(documented)
        with ThreadPoolExecutor(20) as pool:  # a class of 200's first seconds: far under its burst
            assert set(pool.map(lambda _: status(documented.url + "/lesson/"), range(200))) == {200}
        documented.stop()

        small = Proxy(tmp_path / "small", [upstream], edit=lambda text: text.replace("rate=200r/s", "rate=1r/s")
                      .replace("burst=2000", "burst=5"))
        proxies.append(small)
        Upstream.seen = 0
        with ThreadPoolExecutor(10) as pool:
            codes = list(pool.map(lambda _: status(small.url + "/lesson/"), range(40)))
        assert codes.count(429) >= 30 and Upstream.seen <= 10  # refused by nginx, not passed on
    finally:
        for proxy in proxies:
            proxy.stop()
        server.shutdown()
