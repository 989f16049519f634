"""contract/webhooks.py: webhooks and callbacks read from the spec, runtime expressions, the default trigger."""

from __future__ import annotations

from pathlib import Path

import pytest

from plantstub._json import MISSING
from plantstub.contract.load import load_spec
from plantstub.contract.webhooks import RequestValues, default_triggers, evaluate, resolve_url, url_problem
from plantstub.errors import SpecError
from tests.helpers import SPECS, write

REQUEST = RequestValues(
    url="http://127.0.0.1:4010/subscriptions?topic=t", method="POST", headers={"X-Reply-To": "http://r.test/x"},
    query={"topic": ["a/b", "second"]}, path={"id": 7},
    body={"callbackUrl": "http://127.0.0.1:8000/cb", "ids": [1, 2], "a/b": {"~": True}, "none": None},
)


@pytest.mark.parametrize(("expression", "value"), [
    ("$url", "http://127.0.0.1:4010/subscriptions?topic=t"),
    ("$method", "POST"),
    ("$request.header.X-Reply-To", "http://r.test/x"),
    ("$request.query.topic", "a/b"),
    ("$request.path.id", 7),
    ("$request.body#/callbackUrl", "http://127.0.0.1:8000/cb"),
    ("$request.body#/ids/1", 2),
    ("$request.body#/a~1b/~0", True),
    ("$request.body#/ids/5", MISSING),
    ("$request.body#/nothing", MISSING),
    ("$request.query.nothing", MISSING),
], ids=lambda v: str(v))
def test_evaluate_reads_the_request(expression: str, value: object) -> None:
    assert evaluate(expression, REQUEST) == value


@pytest.mark.parametrize(("template", "url", "problem"), [
    ("{$request.body#/callbackUrl}", "http://127.0.0.1:8000/cb", None),
    ("{$request.body#/callbackUrl}/events/{$request.path.id}?topic={$request.query.topic}",
     "http://127.0.0.1:8000/cb/events/7?topic=a%2Fb", None),
    ("{$request.header.X-Reply-To}", "http://r.test/x", None),
    ("{$request.body#/missing}", "", "$request.body#/missing is missing from the request"),
    ("{$request.body#/ids}", "", "$request.body#/ids is not a text value in the request"),
    ("{$request.body#/none}", "", "$request.body#/none is not a text value in the request"),
], ids=["body", "parts-encoded", "header", "missing", "a-list", "null"])
def test_resolve_url_builds_callback_url(template: str, url: str, problem: str | None) -> None:
    assert resolve_url(template, REQUEST) == (url, problem)


@pytest.mark.parametrize(("template", "problem"), [
    ("{$request.body#/callbackUrl}", None),
    ("{$request.query.to}/x?id={$request.body#/id}", None),
    ("http://example.com/hook", "its URL does not start with a value of the triggering request (such as "
                                "{$request.body#/callbackUrl})"),
    ("{$url}/again", "its URL does not start with a value of the triggering request (such as "
                     "{$request.body#/callbackUrl})"),
    ("{$response.body#/url}", "$response.body#/url: plantstub resolves callback URLs from the request only"),
    ("{$request.cookie.x}", "$request.cookie.x is not a runtime expression ($url, $method, $request.header.NAME, "
                            "$request.query.NAME, $request.path.NAME, $request.body#/POINTER)"),
], ids=["body", "query-then-body", "spec-url", "stub-itself", "response", "unknown"])
def test_url_problem_refuses_urls_the_spec_wrote(template: str, problem: str | None) -> None:
    assert url_problem(template) == problem


def test_full_plant_store_post_plants_sends_plant_webhook() -> None:
    spec = load_spec("plant-store-full")
    [hook] = spec.webhooks
    assert (hook.name, hook.operation.method, list(hook.operation.responses), hook.operation.security) == (
        "/plant/webhook", "POST", ["200"], ())
    assert {op.label: [h.name for h in hooks] for op, hooks in default_triggers(spec).items()} == {
        "POST /plants": ["/plant/webhook"]}


def test_default_trigger_needs_the_same_schema(tmp_path: Path) -> None:
    write(tmp_path, "spec.yaml", """\
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /inline:
    post:
      requestBody: {content: {application/json: {schema: {type: object, properties: {a: {type: string}}}}}}
      responses: {"201": {description: made}}
  /other:
    post:
      requestBody: {content: {application/json: {schema: {type: object, properties: {b: {type: string}}}}}}
      responses: {"201": {description: made}}
webhooks:
  same-inline:
    post:
      requestBody: {content: {application/json: {schema: {type: object, properties: {a: {type: string}}}}}}
      responses: {"200": {description: ok}}
""")
    spec = load_spec(tmp_path / "spec.yaml")
    assert {op.label: [h.name for h in hooks] for op, hooks in default_triggers(spec).items()} == {
        "POST /inline": ["same-inline"]}


def test_callbacks_read_from_a_30_spec_and_spec_urls_set_aside() -> None:
    spec = load_spec(SPECS / "subscriptions-callbacks.openapi.yaml")
    [op] = spec.operations
    assert [(c.name, c.expression, c.operation.method) for c in op.callbacks] == [
        ("onEvent", "{$request.body#/callbackUrl}/events?topic={$request.query.topic}", "POST")]
    assert spec.warnings == (
        "paths./subscriptions.post.callbacks.fromTheSpec: 'http://192.0.2.1/hook' is not sent: its URL does not "
        "start with a value of the triggering request (such as {$request.body#/callbackUrl})",)


def test_webhooks_that_are_not_a_mapping_are_a_spec_error(tmp_path: Path) -> None:
    write(tmp_path, "spec.yaml", "openapi: 3.1.0\ninfo: {title: t, version: '1'}\nwebhooks: [a, b]\n")
    with pytest.raises(SpecError, match=r"webhooks: expected a mapping of names to Path Items, found list$"):
        load_spec(tmp_path / "spec.yaml")
