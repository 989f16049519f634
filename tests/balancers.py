"""A real load balancer in front of plantstub replicas, as docs/scale.md's recipes say: nginx or HAProxy with the
page's configuration, word for word but for the ports, started by the page's own command line (its `$PWD` the
test's folder), in the foreground, and stopped by its PID."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from tests.helpers import REPO

PAGE = REPO / "docs" / "scale.md"
DOC_REPLICAS = ("127.0.0.1:4011", "127.0.0.1:4012", "127.0.0.1:4013")
SH_BLOCK = re.compile(r"^```sh\n(?P<code>.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Recipe:
    """One balancer of docs/scale.md: its block's language, the text of its listening line on port 4010, the file
    the page names for the configuration, the Debian package that has it, and the signal that stops it gently."""

    name: str
    listen: str
    file: str
    package: str
    stop_signal: int

    def config(self) -> str:
        """The configuration, as written on the page (its one block in this language)."""
        blocks = re.findall(rf"^```{self.name}\n(.*?)^```", PAGE.read_text(), re.S | re.M)
        assert len(blocks) == 1, f"docs/scale.md: expected one {self.name} block, found {len(blocks)}"
        return str(blocks[0])

    def command(self) -> str:
        """The page's command line that starts it (the one line of its sh blocks that begins with its name)."""
        lines = [line for block in SH_BLOCK.findall(PAGE.read_text()) for line in block.splitlines()
                 if line.startswith(f"{self.name} ")]
        assert len(lines) == 1, f"docs/scale.md: expected one `{self.name} ...` command line, found {lines}"
        return lines[0]

    def binary(self) -> str:
        """On PATH, or Debian's /usr/sbin; the test fails, naming the package, without it."""
        where = f"/usr/sbin/{self.name}"
        found = shutil.which(self.name) or (where if os.access(where, os.X_OK) else None)
        assert found, (f"{self.name} is not installed: apt-get install -y {self.package} (.ci/run does when it is "
                       "missing)")
        return found


NGINX = Recipe("nginx", "listen 127.0.0.1:4010;", "nginx/nginx.conf", "nginx-light", 3)  # SIGQUIT: finish, then stop
HAPROXY = Recipe("haproxy", "bind 127.0.0.1:4010", "haproxy.cfg", "haproxy", 15)  # SIGTERM: at once
RECIPES = {recipe.name: recipe for recipe in (NGINX, HAPROXY)}


def placed(recipe: Recipe, conf: str, replicas: list[str], port: int) -> str:
    """The page's configuration with the test's replica addresses and port in the page's places (nothing else
    changes: each place must be there exactly once)."""
    assert len(replicas) == len(DOC_REPLICAS)
    ours = recipe.listen.replace("4010", str(port))
    for doc, mine in [*zip(DOC_REPLICAS, replicas, strict=True), (recipe.listen, ours)]:
        assert conf.count(doc) == 1, f"docs/scale.md's {recipe.name} block: {doc!r} is not there exactly once"
        conf = conf.replace(doc, mine)
    return conf


def argv(recipe: Recipe, folder: Path) -> list[str]:
    """The page's command line as a shell in `folder` runs it: `$PWD` is the folder, the trailing `&` (run it in
    the background of the job) is the test's Popen."""
    line = recipe.command().removesuffix("&").strip()
    words = shlex.split(line.replace("$PWD", str(folder)))
    return [recipe.binary(), *words[1:]]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Balancer:
    """`recipe`'s balancer in front of `replicas` (their base URLs), in `folder`; `url` is its own."""

    def __init__(self, recipe: Recipe, folder: Path, replicas: list[str]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.recipe, self.folder = recipe, folder
        port = _free_port()
        conf = folder / recipe.file
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text(placed(recipe, recipe.config(), [urlsplit(url).netloc for url in replicas], port))
        self.log = folder / f"{recipe.name}.stderr"
        with self.log.open("w") as err:
            self.proc = subprocess.Popen(argv(recipe, folder), cwd=folder, stdout=subprocess.DEVNULL, stderr=err)
        self.url = f"http://127.0.0.1:{port}"
        self._wait_listening(port)

    def _wait_listening(self, port: int, seconds: float = 60.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.recipe.name} exited with {self.proc.returncode}: {self.errors()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise AssertionError(f"{self.recipe.name} did not listen on 127.0.0.1:{port} within {seconds:g} s: "
                             f"{self.errors()}")

    def errors(self) -> str:
        """What it said on stderr, and nginx's error log."""
        logs = [self.log, self.folder / "nginx" / "error.log"]
        return "\n".join(path.read_text() for path in logs if path.exists())

    def stop(self) -> None:
        """Stop it by its PID, gently (the requests in flight finish), killing it after 10 s."""
        if self.proc.poll() is None:
            self.proc.send_signal(self.recipe.stop_signal)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
