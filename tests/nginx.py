"""A real nginx in front of plantstub replicas, with the configuration of docs/scale.md: run as the current user,
its prefix, temporary folders and logs in a folder of the test's, listening on 127.0.0.1, stopped by its PID."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

from tests.helpers import REPO

NGINX_BLOCK = re.compile(r"^```nginx\n(?P<conf>.*?)^```", re.S | re.M)
DOC_REPLICAS = ("127.0.0.1:4011", "127.0.0.1:4012", "127.0.0.1:4013")
DOC_LISTEN = "listen 127.0.0.1:4010;"
MAIN = """\
{user}worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
daemon off;
events {{ worker_connections 512; }}
http {{
    access_log {folder}/access.log;
    client_body_temp_path {folder}/client_body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    include {folder}/plantstub.conf;
}}
"""


def nginx_binary() -> str:
    """nginx on PATH or Debian's /usr/sbin/nginx (nginx-light); the test fails, naming the package, without it."""
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
    assert found, "nginx is not installed: apt-get install -y nginx-light (.ci/run does when it is missing)"
    return found


def doc_config() -> str:
    """The nginx configuration of docs/scale.md, as written there (its one ```nginx block)."""
    blocks = NGINX_BLOCK.findall((REPO / "docs" / "scale.md").read_text())
    assert len(blocks) == 1, f"docs/scale.md: expected one nginx block, found {len(blocks)}"
    return str(blocks[0])


def placed(conf: str, replicas: list[str], port: int) -> str:
    """The doc's configuration with the test's replica addresses and nginx port in the doc's places (nothing else
    changes: each place must be there exactly once)."""
    assert len(replicas) == len(DOC_REPLICAS)
    for doc, ours in [*zip(DOC_REPLICAS, replicas, strict=True), (DOC_LISTEN, f"listen 127.0.0.1:{port};")]:
        assert conf.count(doc) == 1, f"docs/scale.md's nginx block: {doc!r} is not there exactly once"
        conf = conf.replace(doc, ours)
    return conf


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Nginx:
    """nginx serving docs/scale.md's configuration in front of `replicas` (their base URLs); `url` is its own."""

    def __init__(self, folder: Path, replicas: list[str]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        port = _free_port()
        addresses = [urlsplit(url).netloc for url in replicas]
        (folder / "plantstub.conf").write_text(placed(doc_config(), addresses, port))
        # Run as whoever runs the test: as root, nginx's workers would otherwise become `nobody`, who cannot use
        # this folder.
        user = f"user {pwd.getpwuid(os.geteuid()).pw_name};\n" if os.geteuid() == 0 else ""
        (folder / "nginx.conf").write_text(MAIN.format(user=user, folder=folder))
        self.proc = subprocess.Popen([nginx_binary(), "-p", str(folder), "-c", str(folder / "nginx.conf"),
                                      "-e", str(folder / "error.log")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.url = f"http://127.0.0.1:{port}"
        self._wait_listening(port)

    def _wait_listening(self, port: int, seconds: float = 60.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"nginx exited with {self.proc.returncode}: {self.errors()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise AssertionError(f"nginx did not listen on 127.0.0.1:{port} within {seconds:g} s: {self.errors()}")

    def errors(self) -> str:
        log = self.folder / "error.log"
        stderr = self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else ""
        return stderr + (log.read_text() if log.exists() else "")

    def stop(self) -> None:
        """Stop nginx by its PID (SIGQUIT: finish the requests in flight), killing it after 10 s."""
        if self.proc.poll() is None:
            self.proc.send_signal(3)  # SIGQUIT
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()
