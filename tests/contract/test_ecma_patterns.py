"""ECMA-262 patterns Python's `re` refuses, served as ECMA reads them: checked and generated, over HTTP."""

from __future__ import annotations

import pytest

from plantstub import create_app
from plantstub.contract.pattern import ecma_pattern
from tests.helpers import no_hang, write

SLUG, TAG, WHO = r"^[0-9A-Za-z_-.]+$", r"^[a-zA-Z\d-_\s]+$", r"^(#\d+|(?i)[A-Z]+@[A-Z]+\.[A-Z]{2,})$"

SPEC = f"""\
openapi: 3.0.3
info: {{title: Patterns, version: "1"}}
paths:
  /names:
    post:
      requestBody: {{content: {{application/json: {{schema: {{$ref: '#/components/schemas/Name'}}}}}}}}
      responses: {{"204": {{description: ok}}}}
    get:
      responses:
        "200": {{description: one, content: {{application/json: {{schema: {{$ref: '#/components/schemas/Name'}}}}}}}}
  /counts:
    get:
      responses:
        "200": {{description: by key, content: {{application/json: {{schema: {{$ref: '#/components/schemas/Counts'}}}}}}}}
  /slow:
    post:
      requestBody:
        content: {{application/json: {{schema: {{type: string, pattern: '^([\\d-_]+)+$'}}}}}}
      responses: {{"204": {{description: ok}}}}
components:
  schemas:
    Name:
      type: object
      required: [slug, tag, who]
      properties:
        slug: {{type: string, pattern: '{SLUG}'}}
        tag: {{type: string, pattern: '{TAG}'}}
        who: {{type: string, pattern: '{WHO}'}}
    Counts:
      type: object
      minProperties: 1
      patternProperties: {{'^[\\w-.]+$': {{type: integer}}}}
      additionalProperties: false
"""


@pytest.mark.parametrize(
    ("pattern", "read_as"),
    [
        (SLUG, r"^[0-9A-Za-z_\-.]+$"),  # `_-.` is a range in reverse order: a hyphen between two characters
        (TAG, r"^[a-zA-Z\d\-_\s]+$"),  # a `-` beside a class escape is a hyphen
        (r"[\w-]", r"[\w-]"),  # Python reads these already: left as written
        (r"[a-z-\d]", r"[a-z-\d]"),
        (WHO, r"^(#\d+|(?i:[A-Z]+@[A-Z]+\.[A-Z]{2,}))$"),  # an inline flag applies to the rest of its group
        (r"a|(?i)b|c", r"a|(?i:b|c)"),
        (r"(?i)^(all|none)$", r"(?i)^(all|none)$"),  # at the start: Python reads it
        (r"^\p{L}[\p{L}-]+$", r"^\p{L}[\p{L}-]+$"),  # jsonschema-rs reads it: left alone
    ],
)
def test_ecma_pattern_rewrites_only_what_python_reads_otherwise(pattern, read_as):
    assert ecma_pattern(pattern) == read_as


@pytest.fixture
async def client(aiohttp_client, tmp_path):
    return await aiohttp_client(create_app(spec=str(write(tmp_path, "api.yaml", SPEC))))


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"slug": "a-b.c_d", "tag": "x-y_z 1", "who": "Ann@Example.org"}, 204),
        ({"slug": "-", "tag": "-", "who": "#12"}, 204),
        ({"slug": "a/b", "tag": "x", "who": "#1"}, 400),
        ({"slug": "a", "tag": "x.y", "who": "#1"}, 400),
        ({"slug": "a", "tag": "x", "who": "#ann@b.cd"}, 400),
    ],
)
async def test_ecma_patterns_are_checked_as_ecma_reads_them(client, body, status):
    assert (await client.post("/names", json=body)).status == status


async def test_ecma_patterns_generate_matching_answers(client):
    assert await (await client.get("/names")).json() == {"slug": "0", "tag": "a", "who": "#0"}
    assert await (await client.get("/counts")).json() == {"a": 0}


async def test_a_translated_pattern_that_backtracks_still_cannot_freeze_the_stub(client):
    with no_hang("the request"):
        answer = await client.post("/slow", json="1" * 40 + "!")
    assert answer.status == 400


def test_a_pattern_with_thousands_of_inline_flags_is_not_rewritten_for_seconds():
    # Rewritten one by one, 5,000 of them took about 30 s, and the time grows with the square of the count: these
    # 20,000 would take 8 minutes that way (a fraction of a second now).
    pattern = "a(?i)" * 20_000
    with no_hang("the rewrite"):
        assert ecma_pattern(pattern) == pattern
