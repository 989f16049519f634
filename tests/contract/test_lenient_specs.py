"""Real-world documents that break a rule of OpenAPI, served as their authors meant, with a warning at start."""

from __future__ import annotations

import json
import urllib.request

import pytest

from plantstub import Stub, create_app
from plantstub.errors import ConfigError
from tests.helpers import jsonschema_rs_compiles, write

BEARER = {"Authorization": "Bearer t"}

# Security requirements naming `oauth2` and `session`, which components.securitySchemes never declares.
SECURITY = """\
openapi: 3.1.0
info: {title: Undeclared schemes, version: "1"}
security: [{oauth2: [read]}]
paths:
  /only-undeclared:
    get:
      responses: {"200": {description: ok}}
  /either:
    get:
      security: [{oauth2: []}, {key: []}]
      responses: {"200": {description: ok}, "401": {description: who}}
  /both:
    get:
      security: [{key: [], session: []}]
      responses: {"200": {description: ok}, "401": {description: who}}
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-Key}
"""

SECURITY_WARNINGS = [
    "security[0] (and 1 more place): security scheme 'oauth2' is not declared in components.securitySchemes"
    " (declared: key); not enforced",
    "paths./both.get.security[0]: security scheme 'session' is not declared in components.securitySchemes"
    " (declared: key); not enforced",
]


@pytest.fixture
async def security_client(aiohttp_client, tmp_path):
    return await aiohttp_client(create_app(spec=str(write(tmp_path, "api.yaml", SECURITY))))


async def test_undeclared_security_scheme_is_served_with_one_warning_per_scheme(security_client):
    health = await (await security_client.get("/__plantstub/health")).json()
    assert health["spec"]["warnings"] == SECURITY_WARNINGS


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        ("/only-undeclared", {}, 200),  # its one requirement names only undeclared schemes: met
        ("/either", {}, 200),  # one alternative names only undeclared schemes: it cannot be shown unmet
        ("/either", BEARER, 200),
        ("/either", {"X-Key": "k"}, 200),
        ("/both", {}, 401),  # the declared scheme of the requirement still holds
        ("/both", {"X-Key": "k"}, 200),
    ],
)
async def test_undeclared_security_scheme_is_not_enforced(security_client, path, headers, status):
    response = await security_client.get(path, headers=headers)
    assert response.status == status
    if status == 401:
        assert (await response.json())["message"] == "headers.X-Key: missing API key (key)"


def test_undeclared_security_scheme_warning_is_printed_once_at_start(serve, tmp_path):
    spec = write(tmp_path, "api.yaml", SECURITY)
    process = serve("--spec", str(spec), "--port", "0", cwd=tmp_path)
    with urllib.request.urlopen(process.url + "/only-undeclared", timeout=5) as response:
        assert response.status == 200
    with urllib.request.urlopen(process.url + "/__plantstub/health", timeout=5) as response:
        assert json.load(response)["spec"]["warnings"] == SECURITY_WARNINGS
    process.stop()
    assert [line for line in process.stderr.splitlines() if "securitySchemes" in line] == [
        f"plantstub: spec {spec}: {warning}" for warning in SECURITY_WARNINGS]


# `orgID` is declared but the template says `{orgId}`; `/blue` declares a path parameter it has no place for.
TEMPLATES = """\
openapi: 3.1.0
info: {title: Templates, version: "1"}
paths:
  /orgs/{orgId}/users/{userId}:
    parameters: [{name: userId, in: path, required: true, schema: {type: integer}}]
    get:
      parameters: [{name: orgID, in: path, required: true, schema: {type: integer}}]
      responses: {"200": {description: ok}, "400": {description: bad}}
  /blue:
    get:
      parameters: [{name: org, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
"""


async def test_path_parameters_follow_the_template_with_a_warning(aiohttp_client, tmp_path):
    client = await aiohttp_client(create_app(spec=str(write(tmp_path, "api.yaml", TEMPLATES))))
    health = await (await client.get("/__plantstub/health")).json()
    assert health["spec"]["warnings"] == [
        "paths./orgs/{orgId}/users/{userId}.get: path parameter 'orgID' is not in the template"
        " (did you mean 'orgId'?); ignored",
        "paths./orgs/{orgId}/users/{userId}.get: {orgId} has no declared path parameter; read as a string",
        "paths./blue.get: path parameter 'org' is not in the template; ignored",
    ]
    assert (await client.get("/blue")).status == 200  # no longer demands a value no request can carry
    assert (await client.get("/orgs/acme/users/7")).status == 200  # {orgId} holds any text
    answer = await client.get("/orgs/acme/users/x")  # the declared {userId} is still checked
    assert (answer.status, (await answer.json())["message"]) == (400, "path.userId: 'x' is not of type 'integer'")
    calls = await (await client.get("/__plantstub/calls")).json()
    assert [call["valid"] for call in calls] == [True, True, False]


# OpenAPI 3.1 lets an operation declare no responses at all.
NO_RESPONSES = """\
openapi: 3.1.0
info: {title: Silent, version: "1"}
paths:
  /ping:
    post:
      requestBody: {content: {application/json: {schema: {type: object, required: [n]}}}}
"""


async def test_operation_without_responses_answers_204_with_no_body(aiohttp_client, tmp_path):
    client = await aiohttp_client(create_app(spec=str(write(tmp_path, "api.yaml", NO_RESPONSES))))
    answer = await client.post("/ping", json={"n": 1})
    assert (answer.status, await answer.read(), answer.headers.get("Content-Type")) == (204, b"", None)
    refused = await client.post("/ping", json={})  # the request is still checked
    assert (refused.status, (await refused.json())["message"]) == (400, "body: 'n' is a required property")
    preferred = await client.post("/ping", json={"n": 1}, headers={"Prefer": "code=200"})
    assert (preferred.status, (await preferred.json())["message"]) == (
        400, "headers.Prefer: code=200 is not declared for POST /ping (declared: 204)")
    coverage = await (await client.get("/__plantstub/coverage")).json()
    assert coverage["operations"][0]["responses"] == [{"status": "204", "calls": 1}]


def test_operation_without_responses_takes_a_scenario_reply_of_204_only(tmp_path):
    spec = write(tmp_path, "api.yaml", NO_RESPONSES)
    (tmp_path / "scenarios").mkdir()
    write(tmp_path / "scenarios", "done.yaml", "rules:\n  - match: {path: /ping}\n    reply: {status: 204}\n")
    with Stub(spec=spec, scenarios=tmp_path / "scenarios", scenario="done") as stub:
        request = urllib.request.Request(stub.url + "/ping", data=b'{"n": 1}', method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as response:
            assert (response.status, response.read()) == (204, b"")
        assert stub.calls[0].rule == "rules[0]"
    teapot = write(tmp_path / "scenarios", "teapot.yaml", "rules:\n  - match: {path: /ping}\n    reply: {status: 200}\n")
    with pytest.raises(ConfigError) as refused:
        Stub(spec=spec, scenarios=tmp_path / "scenarios").start()
    assert str(refused.value).splitlines()[1:] == [
        f"{teapot}:3: rules[0].reply.status: 200 is not declared for POST /ping (declared: 204); add"
        " `off_contract: true` to this rule to serve it anyway"]


# Regular expressions jsonschema-rs cannot compile: over its size limit (Adyen's TerminalAPI writes this one), and
# Python's `\Z`. `\p{L}`, `[\d-_]` and a mid-pattern `(?i)` it runs (the last two once rewritten: test_ecma_patterns).
PATTERNS = r"""
openapi: 3.1.0
info: {title: Patterns, version: "1"}
paths:
  /notes:
    post:
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                text: {type: string, pattern: "^.{0,262144}$", maxLength: 5}
                code: {type: string, pattern: "^[a-z]+\\Z"}
                city: {type: string, pattern: "^\\p{L}+$"}
      responses: {"204": {description: ok}, "400": {description: bad}}
"""
BIG, PYTHONS = "^.{0,262144}$", "^[a-z]+\\Z"


async def test_a_pattern_jsonschema_rs_cannot_compile_is_served_unchecked_with_a_warning(aiohttp_client, tmp_path):
    refused = [pattern for pattern in (BIG, PYTHONS) if not jsonschema_rs_compiles(pattern)]
    assert PYTHONS in refused  # the case this test is about: a pattern jsonschema-rs cannot compile
    client = await aiohttp_client(create_app(spec=str(write(tmp_path, "api.yaml", PATTERNS))))
    health = await (await client.get("/__plantstub/health")).json()
    assert health["spec"]["warnings"] == [
        f"paths./notes.post.requestBody.content.application/json.schema: pattern {pattern!r} is not checked:"
        " jsonschema-rs cannot compile it" for pattern in refused]
    text = "line\n" if BIG in refused else "line"  # unchecked, a line break passes; checked, `.` refuses it
    assert (await client.post("/notes", json={"text": text, "code": "AB1", "city": "Évora"})).status == 204
    answer = await client.post("/notes", json={"text": "longer", "code": 1, "city": "ab1"})  # the rest still holds
    assert (answer.status, (await answer.json())["message"]) == (400, "; ".join([
        "body.city: 'ab1' does not match '^\\\\p{L}+$'", "body.code: 1 is not of type 'string'",
        "body.text: 'longer' is too long"]))


UNKNOWN_CLASS = """
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /notes:
    post:
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                text: {type: string, pattern: "[\\\\p{all}]*", maxLength: 5}
                code: {type: string, pattern: "^[a-z]+$"}
      responses: {"204": {description: ok}, "400": {description: bad}}
"""


async def test_a_pattern_with_an_unknown_class_is_served_unchecked_with_a_line_not_refused(aiohttp_client, tmp_path):
    client = await aiohttp_client(create_app(spec=str(write(tmp_path, "api.yaml", UNKNOWN_CLASS))))
    health = await (await client.get("/__plantstub/health")).json()
    assert health["spec"]["warnings"] == [
        "paths./notes.post.requestBody.content.application/json.schema: pattern '[\\\\p{all}]*' is not checked:"
        " '\\\\p{all}' is no Unicode property class jsonschema-rs knows"]
    assert (await client.post("/notes", json={"text": "any 1", "code": "ab"})).status == 204
    answer = await client.post("/notes", json={"text": "longer", "code": "AB"})  # the rest still holds
    assert (answer.status, (await answer.json())["message"]) == (400, "; ".join([
        "body.code: 'AB' does not match '^[a-z]+$'", "body.text: 'longer' is too long"]))
