"""Path parameters side by side in one segment (`{name}.{ext}`, `{name}{ext}`), split by their schemas."""

from __future__ import annotations

import pytest

from plantstub import create_app
from plantstub.matching import path_pattern, split_segment
from tests.helpers import no_hang, write

SPEC = """\
openapi: 3.1.0
info: {title: Files, version: "1"}
paths:
  /files/{name}{ext}:
    get:
      parameters:
        - {name: name, in: path, required: true, schema: {type: string}}
        - {name: ext, in: path, required: true, schema: {type: string, enum: [.json, .xml]}}
      responses: {"200": {description: ok}}
  /dotted/{name}.{ext}:
    get:
      parameters:
        - {name: name, in: path, required: true, schema: {type: string}}
        - {name: ext, in: path, required: true, schema: {type: string, pattern: "^(json|tar\\\\.gz)$"}}
      responses: {"200": {description: ok}}
    delete:
      parameters:
        - {name: name, in: path, required: true, schema: {type: string, maxLength: 3}}
        - {name: ext, in: path, required: true, schema: {type: string}}
      responses: {"204": {description: gone}}
  /v{major}.{minor}/status:
    get:
      parameters:
        - {name: major, in: path, required: true, schema: {type: integer}}
        - {name: minor, in: path, required: true, schema: {type: integer, maximum: 9}}
      responses: {"200": {description: ok}}
  /v{anything}/status:
    get:
      parameters: [{name: anything, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
  /run/{a}{b}{c}.sh:
    get:
      responses: {"200": {description: ok}}
"""


@pytest.fixture
async def client(aiohttp_client, tmp_path):
    return await aiohttp_client(create_app(spec=str(write(tmp_path, "files.yaml", SPEC))))


async def answer(client, method: str, url: str) -> tuple[int, str]:
    response = await client.request(method, url)
    body = await response.json() if response.status not in (200, 204) else {}
    return response.status, body.get("message", "")


@pytest.mark.parametrize(
    ("method", "url", "status", "message"),
    [
        ("GET", "/files/report.json", 200, ""),  # name=report, ext=.json: the split whose values fit
        ("GET", "/files/report.v2.xml", 200, ""),
        ("GET", "/files/report.txt", 400, "path.ext: 't' is not one of ['.json', '.xml']"),  # none fits: the first
        ("GET", "/dotted/archive.tar.gz", 200, ""),  # name=archive, ext=tar.gz
        ("GET", "/dotted/a.b.json", 200, ""),  # name=a.b, ext=json
        ("GET", "/dotted/archive", 404, "path: no path in the spec matches /dotted/archive"),  # no '.' to split at
        ("DELETE", "/dotted/abc.tar.gz", 204, ""),  # each operation splits by its own schemas: name=abc
        ("DELETE", "/dotted/abcd.gz", 400, "path.name: 'abcd' is too long"),
        ("GET", "/v2.1/status", 200, ""),
        ("GET", "/v2.10/status", 400, "path.minor: 10 is greater than the maximum of 9"),
        ("GET", "/vX/status", 200, ""),  # no '.': the next template
        ("GET", "/run/xyz.sh", 200, ""),
        ("GET", "/run/xy.sh", 404, "path: no path in the spec matches /run/xy.sh"),  # three values need three characters
    ],
)
async def test_adjacent_path_parameters_are_split_by_their_schemas(client, method, url, status, message):
    assert await answer(client, method, url) == (status, message)


async def test_adjacent_path_parameters_are_percent_decoded_after_the_split(client):
    # name=a/b: three characters once decoded (%2F is part of the value, not a segment break).
    assert await answer(client, "DELETE", "/dotted/a%2Fb.gz") == (204, "")
    assert await answer(client, "DELETE", "/dotted/a%2Fbc.gz") == (400, "path.name: 'a/bc' is too long")


async def test_a_long_segment_of_adjacent_parameters_answers_promptly(client):
    with no_hang("three requests"):
        found = [(await answer(client, "GET", url))[0] for url in (
            "/run/" + "a" * 6000 + ".sh",
            "/run/" + "a" * 6000 + ".s",  # no match: a regex per value would try 6000^2 splits
            "/files/" + "." * 6000,  # thousands of splits, none fits: the first is reported
        )]
    assert found == [200, 404, 400]


def test_split_segment_tries_the_longest_first_value_first():
    assert list(split_segment("{name}.{ext}", "a.b.c")) == [{"name": "a.b", "ext": "c"}, {"name": "a", "ext": "b.c"}]
    assert list(split_segment("{a}{b}", "xyz")) == [{"a": "xy", "b": "z"}, {"a": "x", "b": "yz"}]
    assert list(split_segment("v{n}", "w1")) == []


def test_path_pattern_of_adjacent_parameters_does_not_backtrack_per_split():
    # A scenario rule's path, matched against every request path; `x` never comes.
    pattern = path_pattern("/x/{a}.{b}.{c}/end")
    assert pattern.match("/x/1.2.3/end")
    assert not pattern.match("/x/1.2/end")
    with no_hang("two matches"):
        assert not pattern.match("/x/" + "." * 6000 + "/nope")  # one regex per value: minutes
        assert not pattern.match("/x/" + "." * 6000 + "/end/more")
