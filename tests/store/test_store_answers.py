"""`plantstub serve --stateful` (issue 25): every answer validates against its declared response, and every
record created is read back, whatever the spec's keys and response shapes are."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest

from tests.helpers import ServeProcess, call

ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}


def ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def answers(status: str, schema: dict[str, Any] | None) -> dict[str, Any]:
    if schema is None:
        return {status: {"description": "no body"}}
    return {status: {"description": "answer", "content": {"application/json": {"schema": schema}}}}


def pair(name: str, create: dict[str, Any], shown: dict[str, Any], param: dict[str, Any] = ID,
         created: str = "201") -> dict[str, Any]:
    """A collection /NAME (POST create, GET list) and its item /NAME/{param} (GET, PUT, DELETE)."""
    body = {"required": True, "content": {"application/json": {"schema": create}}}
    return {
        f"/{name}": {
            "post": {"requestBody": body, "responses": answers(created, shown)},
            "get": {"responses": answers("200", {"type": "array", "items": shown})},
        },
        f"/{name}/{{{param['name']}}}": {
            "parameters": [param],
            "get": {"responses": {**answers("200", shown), **answers("404", None)}},
            "put": {"requestBody": body, "responses": answers("200", shown)},
            "delete": {"responses": answers("204", None)},
        },
    }


USER = {"type": "object", "required": ["id", "name", "createdAt"],
        "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                       "createdAt": {"type": "string", "format": "date-time"}}}
NEW_USER = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
ACCOUNT = {"type": "object", "required": ["id", "owner"],
           "properties": {"id": {"type": "integer"}, "owner": {"type": "string"}}}
NEW_ACCOUNT = {"type": "object", "required": ["owner"], "properties": {"owner": {"type": "string"}}}
WRAPPED = {"type": "object", "required": ["account"], "properties": {"account": ref("Account")}}



def keyed(name: str, key: dict[str, Any]) -> dict[str, Any]:
    """A record whose key `name` has the schema `key` (required in answers), and a `label`."""
    return {"type": "object", "required": [name, "label"], "properties": {name: key, "label": {"type": "string"}}}


def param(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema}


NEW = {"type": "object", "required": ["label"], "properties": {"label": {"type": "string"}}}
UUID = {"type": "string", "format": "uuid"}
SID = {"type": "string", "pattern": "^CR[0-9a-fA-F]{32}$"}
COLOR = {"type": "string", "enum": ["red", "green"]}
CODE = {"type": "string", "minLength": 5, "maxLength": 5}
KEYS = {
    **pair("tokens", NEW, keyed("id", UUID), param("id", UUID)),
    **pair("calls", NEW, keyed("sid", SID), param("sid", SID)),
    **pair("colors", NEW, keyed("id", COLOR), param("id", COLOR)),
    **pair("codes", NEW, keyed("code", {"type": "string"}), param("code", CODE)),
    # the key field an integer, the item parameter a string (and the other way round)
    **pair("books", keyed("id", {"type": "integer"}), keyed("id", {"type": "integer"}), param("id", {"type": "string"})),
    **pair("tags", keyed("id", {"type": "string"}), keyed("id", {"type": "integer"}), param("id", {"type": "integer"})),
    # integer keys from 100 up: the first keys that fit are 100, 101...
    **pair("orders", NEW, keyed("id", {"type": "integer", "minimum": 100}), param("id", {"type": "integer", "minimum": 100})),
}

PET = keyed("id", {"type": "integer"})
ERROR = {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}}
ONLY_ERROR = {  # the classic Petstore's POST /pet declares only 405
    "/pets": {"post": {"requestBody": {"required": True, "content": {"application/json": {"schema": NEW}}},
                       "responses": answers("405", ERROR)}},
    "/pets/{id}": {"parameters": [ID], "get": {"responses": {**answers("200", PET), **answers("404", None)}}},
}
SLASHED = {  # one collection spelled /things and /things/
    "/things": {"post": {"requestBody": {"required": True, "content": {"application/json": {"schema": NEW}}},
                         "responses": answers("201", PET)}},
    "/things/": {"get": {"responses": answers("200", {"type": "array", "items": PET})}},
    "/things/{id}": {"parameters": [ID], "get": {"responses": {**answers("200", PET), **answers("404", None)}}},
}

# A field the create body and the answer type differently (HubSpot's `associations`: an array sent, a map answered;
# Adyen's `scaInformation`: another object, with a required `status`; an enum of other values).
NEW_CART = {"type": "object", "required": ["label"], "properties": {
    "label": {"type": "string"}, "associations": {"type": "array", "items": {"type": "string"}},
    "sca": {"type": "object", "properties": {"onApproval": {"type": "boolean"}}},
    "kind": {"type": "string", "enum": ["CONTACT"]}, "note": {"type": "string"}}}
CART = {"type": "object", "required": ["id", "label", "sca"], "properties": {
    "id": {"type": "integer"}, "label": {"type": "string"},
    "associations": {"type": "object", "additionalProperties": {"type": "string"}},
    "sca": {"type": "object", "required": ["status"], "properties": {"status": {"type": "string", "enum": ["pending"]}}},
    "kind": {"type": "string", "enum": ["PLATFORM"]}, "note": {"type": "string", "maxLength": 3}}}

DOC = {
    "openapi": "3.1.0",
    "info": {"title": "Shapes", "version": "1"},
    "paths": {
        **pair("users", ref("NewUser"), ref("User")),
        **pair("accounts", ref("NewAccount"), WRAPPED),
        **KEYS,
        **ONLY_ERROR,
        **SLASHED,
        **pair("carts", NEW_CART, CART),
    },
    "components": {"schemas": {"User": USER, "NewUser": NEW_USER, "Account": ACCOUNT, "NewAccount": NEW_ACCOUNT}},
}


def declared(method: str, path: str, status: int) -> dict[str, Any] | None:
    """The schema DOC declares for `status` of `method path` (a concrete path matched against the templates)."""
    for template, item in DOC["paths"].items():
        if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", template), path.split("?")[0]):
            response = item[method.lower()]["responses"][str(status)]
            content = response.get("content")
            return content["application/json"]["schema"] if content else None
    raise AssertionError(f"{method} {path} is not in DOC")


@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shapes")
    (folder / "shapes.json").write_text(json.dumps(DOC), encoding="utf-8")
    (folder / "scenarios").mkdir()
    serve = ServeProcess("--spec", str(folder / "shapes.json"), "--stateful", "--port", "0",
                         "--scenarios", str(folder / "scenarios"))
    try:
        yield serve.url
    finally:
        serve.stop()


def checked(url: str, method: str, path: str, body: Any = None, expected: int = 200) -> Any:
    """Call the stub; the answer must have status `expected` and validate against DOC's declared schema."""
    status, answer = call(url, method, path, body)
    assert status == expected, (method, path, status, answer)
    schema = declared(method, path, status)
    if schema is None:
        assert answer is None
    else:
        jsonschema.Draft202012Validator({**schema, "components": DOC["components"]},
                                        format_checker=jsonschema.FormatChecker()).validate(answer)
    return answer


def test_stateful_fills_required_properties_the_request_did_not_carry(stub):
    made = checked(stub, "POST", "/users", {"name": "Ada"}, 201)
    assert made["name"] == "Ada"
    assert checked(stub, "GET", f"/users/{made['id']}") == made  # a later read agrees
    assert checked(stub, "GET", "/users") == [made]
    replaced = checked(stub, "PUT", f"/users/{made['id']}", {"name": "Grace"})
    assert replaced == {**made, "name": "Grace"}  # the server-assigned createdAt stays
    checked(stub, "DELETE", f"/users/{made['id']}", expected=204)


def test_stateful_answers_a_wrapper_with_the_record_inside(stub):
    made = checked(stub, "POST", "/accounts", {"owner": "Ada"}, 201)
    assert made["account"]["owner"] == "Ada"
    key = made["account"]["id"]
    assert checked(stub, "GET", f"/accounts/{key}") == made
    assert checked(stub, "GET", "/accounts") == [made]


@pytest.mark.parametrize(("collection", "key"), [("tokens", "id"), ("calls", "sid"), ("codes", "code")])
def test_stateful_assigns_keys_the_item_path_takes(stub, collection, key):
    made = [checked(stub, "POST", f"/{collection}", {"label": f"n{i}"}, 201) for i in range(3)]
    assert len({m[key] for m in made}) == 3
    for m in made:
        assert checked(stub, "GET", f"/{collection}/{m[key]}") == m
    checked(stub, "DELETE", f"/{collection}/{made[0][key]}", expected=204)
    again = checked(stub, "POST", f"/{collection}", {"label": "n3"}, 201)
    assert again[key] not in {m[key] for m in made}  # a key is never given again


def test_stateful_assigns_enum_keys_until_none_is_left(stub):
    assert [checked(stub, "POST", "/colors", {"label": n}, 201)["id"] for n in ("a", "b")] == ["red", "green"]
    assert checked(stub, "GET", "/colors/green") == {"id": "green", "label": "b"}
    assert call(stub, "POST", "/colors", {"label": "c"}) == (409, {"error": 409, "message": (
        "body.id: the store has no key left to give a record in /colors (each key /colors/{id} takes is given out); "
        "send one")})


def test_stateful_assigns_the_first_keys_that_fit_past_those_that_do_not(stub):
    assert [checked(stub, "POST", "/orders", {"label": n}, 201)["id"] for n in ("a", "b")] == [100, 101]
    assert checked(stub, "GET", "/orders/101") == {"id": 101, "label": "b"}


def test_stateful_converts_a_key_to_the_types_the_path_and_answer_take(stub):
    assert checked(stub, "POST", "/books", {"id": 1, "label": "Dune"}, 201) == {"id": 1, "label": "Dune"}
    assert checked(stub, "GET", "/books/1") == {"id": 1, "label": "Dune"}
    assert checked(stub, "POST", "/tags", {"id": "7", "label": "new"}, 201) == {"id": 7, "label": "new"}
    assert checked(stub, "GET", "/tags/7") == {"id": 7, "label": "new"}
    assert checked(stub, "GET", "/tags") == [{"id": 7, "label": "new"}]


def test_stateful_create_that_declares_only_an_error_stores_nothing(stub):
    assert checked(stub, "POST", "/pets", {"label": "Rex"}, 405)
    assert call(stub, "GET", "/pets/1")[0] == 404  # its body is our Error record (error shapes: issue 25 item 2)
    assert call(stub, "GET", "/__plantstub/state")[1]["/pets"] == []


def test_stateful_collection_with_and_without_a_trailing_slash_is_one(stub):
    made = checked(stub, "POST", "/things", {"label": "a"}, 201)
    assert checked(stub, "GET", "/things/") == [made]
    assert checked(stub, "GET", f"/things/{made['id']}") == made
    assert list(call(stub, "GET", "/__plantstub/state")[1]).count("/things") == 1


def test_stateful_answers_a_field_the_answer_types_otherwise_in_its_own_type(stub):
    sent = {"label": "a", "associations": ["x"], "sca": {"onApproval": True}, "kind": "CONTACT", "note": "long"}
    made = checked(stub, "POST", "/carts", sent, 201)
    assert made == {"id": made["id"], "label": "a", "sca": {"status": "pending"}}  # required: generated; else left out
    assert checked(stub, "GET", f"/carts/{made['id']}") == made
    assert checked(stub, "GET", "/carts") == [made]
    assert checked(stub, "PUT", f"/carts/{made['id']}", {**sent, "note": "ok"}) == {**made, "note": "ok"}
    assert call(stub, "GET", "/__plantstub/state")[1]["/carts"] == [{"id": made["id"], **sent, "note": "ok"}]
