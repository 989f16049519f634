"""Issue 25 item 2: our own 4xx in declared error shapes that are hard to fill; every answer keeps the schema."""

from __future__ import annotations

from typing import Any

import pytest

from plantstub.contract.load import load_spec
from plantstub.contract.operations import serve
from plantstub.contract.outgoing import error_reply

TEXT = "body.name: plantstub's own words"
BASE = {"type": "object", "required": ["code"], "properties": {"code": {"type": "integer"}}}
SHAPES: dict[str, Any] = {
    "oneOf": {"oneOf": [{"type": "object", "required": ["message"], "additionalProperties": False,
                         "properties": {"message": {"type": "string"}}},
                        {"type": "object", "required": ["errors"], "properties": {"errors": {"type": "array"}}}]},
    "allOf": {"allOf": [{"$ref": "#/components/schemas/Base"},
                        {"type": "object", "properties": {"detail": {"type": "string"}}}]},
    "recursive": {"$ref": "#/components/schemas/Nested"},
    "pattern": {"type": "object", "required": ["message"],
                "properties": {"message": {"type": "string", "pattern": "^E[0-9]+$"}}},
    "enum": {"type": "object", "required": ["message"], "properties": {"message": {"enum": ["Bad request"]}}},
    "nullable": {"type": ["object", "null"], "properties": {"reason": {"type": ["string", "null"]}}},
    "anything": {},
    "strings": {"type": "array", "items": {"type": "string"}},
}
SPEC = {
    "openapi": "3.1.0",
    "info": {"title": "shapes", "version": "1"},
    "paths": {f"/{name}": {"post": {"responses": {
        "200": {"description": "ok"},
        "400": {"description": "no", "content": {"application/json": {"schema": schema}}}}}}
        for name, schema in SHAPES.items()},
    "components": {"schemas": {"Base": BASE, "Nested": {"type": "object", "required": ["message"], "properties": {
        "message": {"type": "string"}, "cause": {"$ref": "#/components/schemas/Nested"}}}}},
}
WHERE: dict[str, Any] = {"oneOf": ["message"], "allOf": ["detail"], "recursive": ["message"], "nullable": ["reason"],
                         "strings": [0]}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    import json

    path = tmp_path_factory.mktemp("shapes") / "shapes.json"
    path.write_text(json.dumps(SPEC), encoding="utf-8")
    return {op.path: s for op, s in serve(load_spec(path)).items()}


@pytest.mark.parametrize("name", list(SHAPES))
def test_every_shaped_answer_keeps_its_schema(served, name):
    operation = served[f"/{name}"]
    out = operation.own(error_reply(400, TEXT))
    check = operation.response_check("400", operation.op.responses["400"].content["application/json"])
    assert not isinstance(check, str) and check.is_valid(out.body), out.body
    if name in WHERE:
        value = out.body
        for key in WHERE[name]:
            value = value[key]
        assert value == TEXT and out.headers["X-Plantstub-Error"] == TEXT
    elif name == "anything":  # any JSON: our Error record as it is
        assert out.body == {"error": 400, "message": TEXT} and "X-Plantstub-Error" not in out.headers
    else:  # the schema refuses our text: the generated body, the text in the header only
        assert TEXT not in str(out.body) and out.headers["X-Plantstub-Error"] == TEXT
