"""docs/real-service.md's sample recording is what `--record` writes (issue 39): a real service (a plantstub playing
staging, answering from rules) gets the traffic the sample's comment describes through a recording stub, and the
file written is the page's, byte for byte but for the service's address."""

from __future__ import annotations

import re
from pathlib import Path

from plantstub import Stub
from tests.helpers import REPO, call

PAGE = REPO / "docs" / "real-service.md"
STAGING = "https://staging.example.com/api"


def sample() -> str:
    """The page's recorded file, without its first line (`# scenarios/recorded-001.yaml`, where the page puts it)."""
    found = re.search(r"^```yaml\n# scenarios/recorded-001\.yaml\n(?P<file>.*?)^```", PAGE.read_text(), re.S | re.M)
    assert found, "docs/real-service.md: no recorded-001.yaml sample"
    return found["file"]


def test_the_sample_recording_is_what_record_writes(tmp_path: Path):
    with Stub(spec="plant-store-full") as staging:
        staging.when(method="POST", path="/plants", body={"id": 1}).replies([
            {"status": 200, "body": {"name": "Fern"}},
            {"status": 400, "body": {"error": 400, "message": "A plant with id 1 exists"}},
        ])
        staging.when(method="POST", path="/plants", body={"id": 2}, off_contract=True).reply(200, {"name": 42})
        staging.when(method="GET", path="/plants").reply(200, [{"name": "Fern"}])
        service = staging.url.rstrip("/")
        with Stub(spec="plant-store-full", proxy=service, record=tmp_path) as stub:
            for body in ({"id": 1, "name": "Fern"}, {"id": 1, "name": "Fern"}, {"id": 2, "name": "Ivy"}):
                call(stub.url, "POST", "plants", body)
            assert call(stub.url, "GET", "plants")[1] == [{"name": "Fern"}]
            call(stub.url, "POST", "plants", {"name": "no id"})  # refused by the stub: never reaches the service
            status, saved = call(stub.url, "POST", "__plantstub/record/save")
    assert status == 200 and saved["rules"] == 2  # type: ignore[index]
    written = (tmp_path / "recorded-001.yaml").read_text()
    assert written.replace(service, STAGING) == sample()
