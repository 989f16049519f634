"""`--spec-root DIR`: the folder whose files a spec's $refs may read (default: the spec's own folder)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from plantstub import create_app
from plantstub.contract.load import load_spec
from plantstub.errors import SpecError
from tests.helpers import write

WHERE = "paths./plants.post.requestBody.content.application/json.schema"
SECRET = "hunter2-not-for-quoting"


def layout(tmp_path: Path, ref: str = "../models/Plant.yaml") -> Path:
    """project/reference/api.yaml referring to project/models/Plant.yaml, as many public API repositories do."""
    (tmp_path / "project" / "reference").mkdir(parents=True)
    (tmp_path / "project" / "models").mkdir()
    write(tmp_path / "project" / "models", "Plant.yaml",
          "type: object\nrequired: [name]\nproperties: {name: {type: string}}\n")
    write(tmp_path, "secret.yaml", f"{SECRET}: 1\n")
    return write(tmp_path / "project" / "reference", "api.yaml", f"""\
openapi: 3.1.0
info: {{title: Split, version: "1"}}
paths:
  /plants:
    post:
      requestBody: {{required: true, content: {{application/json: {{schema: {{$ref: '{ref}'}}}}}}}}
      responses: {{"204": {{description: created}}}}
""")


def refusal(spec: Path, root: Path | None = None) -> str:
    with pytest.raises(SpecError) as caught:
        load_spec(spec, root=root)
    assert SECRET not in str(caught.value)
    return str(caught.value)


def test_ref_outside_the_spec_folder_is_refused_naming_the_option(tmp_path):
    spec = layout(tmp_path)
    assert refusal(spec) == (
        f"cannot use spec {spec}: {WHERE}: $ref '../models/Plant.yaml': {tmp_path / 'project/models/Plant.yaml'}"
        f" is outside the spec's folder {spec.parent}; not read (--spec-root DIR lets $refs read files under DIR)")


async def test_ref_under_the_spec_root_is_served(aiohttp_client, tmp_path):
    spec = layout(tmp_path)
    client = await aiohttp_client(create_app(spec=str(spec), spec_root=str(tmp_path / "project")))
    assert (await client.post("/plants", json={"name": "Fern"})).status == 204
    answer = await client.post("/plants", json={"tag": "x"})
    assert (answer.status, (await answer.json())["message"]) == (400, "body: 'name' is a required property")


@pytest.mark.parametrize(("ref", "named"), [
    ("../../secret.yaml", "secret.yaml"),
    ("../models/../../secret.yaml", "secret.yaml"),
    ("../models/link.yaml", "project/models/link.yaml"),  # a link inside the root to a file outside it
])
def test_dot_dot_and_symlinks_leaving_the_spec_root_are_refused(tmp_path, ref, named):
    spec = layout(tmp_path, ref)
    (tmp_path / "project" / "models" / "link.yaml").symlink_to(tmp_path / "secret.yaml")
    root = tmp_path / "project"
    assert refusal(spec, root) == (
        f"cannot use spec {spec}: {WHERE}: $ref '{ref}': {tmp_path / named} is outside --spec-root {root};"
        " not read")


def test_spec_root_that_is_not_a_folder_is_refused(tmp_path):
    spec = layout(tmp_path)
    assert refusal(spec, tmp_path / "nowhere") == f"cannot use spec {spec}: --spec-root {tmp_path / 'nowhere'} is not a folder"


@pytest.mark.parametrize("how", ["flag", "env"])
def test_cli_check_reads_spec_root_from_flag_and_environment(tmp_path, how):
    spec = layout(tmp_path)
    scenario = write(tmp_path, "fern.yaml", "rules:\n  - match: {path: /plants}\n    reply: {status: 204}\n")
    command = [sys.executable, "-m", "plantstub", "check", "--spec", str(spec), str(scenario)]
    refused = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert refused.returncode == 1
    assert "(--spec-root DIR lets $refs read files under DIR)" in refused.stderr
    env = {"PATH": "/usr/bin:/bin", "PLANTSTUB_SPEC_ROOT": str(tmp_path / "project")} if how == "env" else None
    extra = ["--spec-root", str(tmp_path / "project")] if how == "flag" else []
    served = subprocess.run(command[:4] + extra + command[4:], capture_output=True, text=True, timeout=60,
                            cwd=tmp_path, env=env)
    assert (served.returncode, served.stdout) == (0, "plantstub: 1 scenario OK\n"), served.stderr
