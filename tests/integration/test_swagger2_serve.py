"""`plantstub serve --spec` on Swagger 2.0 documents: the petstore, a formData upload, a `collectionFormat: multi`
query, `securityDefinitions` with an API key. Every answer is checked with the jsonschema library against the
response schema (for the petstore: the schema of its swagger2openapi conversion, converted apart from plantstub)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import jsonschema

from plantstub.contract.load import load_spec
from plantstub.contract.model import Spec
from tests.helpers import SPECS, ServeProcess

SWAGGER = SPECS / "swagger2"
PETSTORE = SPECS / "oas-examples-2.0" / "yaml" / "petstore.yaml"
PETSTORE_3 = SPECS / "oas-examples-2.0" / "swagger2openapi" / "petstore.yaml.openapi.json"


def send(url: str, method: str, path: str, body: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, str | None, bytes]:
    request = urllib.request.Request(url + path, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers.get("Content-Type"), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type"), exc.read()


def schema_of(spec: Spec, label: str, status: str, media: str = "application/json") -> Any:
    op = next(op for op in spec.operations if op.label == label)
    return op.responses[status].content[media].schema


def answered(status: int, content_type: str | None, payload: bytes, schema: Any) -> Any:
    """The answer's body, checked against `schema` by the jsonschema library."""
    assert content_type is not None and content_type.startswith("application/json"), (status, payload)
    body = json.loads(payload)
    jsonschema.validate(body, schema)
    return body


def test_serve_swagger2_petstore(serve_spec):
    reference = load_spec(PETSTORE_3, cache=False)
    stub = serve_spec(str(PETSTORE))
    key = {"api_key": "special-key"}
    status, kind, payload = send(stub.url, "GET", "/pet/findByStatus?status=available&status=sold",
                                 headers={"Authorization": "Bearer t"})
    assert status == 200
    answered(status, kind, payload, schema_of(reference, "GET /pet/findByStatus", "200"))
    status, kind, payload = send(stub.url, "GET", "/pet/7", headers=key)
    assert answered(status, kind, payload, schema_of(reference, "GET /pet/{petId}", "200"))["name"] == "doggie"
    pet = json.dumps({"name": "Rex", "photoUrls": ["p"], "status": "sold"}).encode()
    status, kind, payload = send(stub.url, "POST", "/pet", pet,
                                 {"Authorization": "Bearer t", "Content-Type": "application/json", "Prefer": "code=405"})
    assert (status, payload) == (405, b"")
    status, kind, payload = send(stub.url, "POST", "/pet/7/uploadImage", _multipart(("file", "a.png", b"\x89PNG")),
                                 {"Authorization": "Bearer t", "Content-Type": "multipart/form-data; boundary=B"})
    answered(status, kind, payload, schema_of(reference, "POST /pet/{petId}/uploadImage", "200"))
    # and what the contract refuses
    assert send(stub.url, "GET", "/pet/7")[0] == 401
    status, _, payload = send(stub.url, "GET", "/pet/findByStatus?status=lost", headers={"Authorization": "Bearer t"})
    assert (status, json.loads(payload)["message"]) == (
        400, "query.status[0]: 'lost' is not one of ['available', 'pending', 'sold']")


def _multipart(*parts: tuple[str, str | None, bytes]) -> bytes:
    out = b""
    for name, filename, data in parts:
        named = f'; filename="{filename}"' if filename else ""
        kind = "\r\nContent-Type: application/octet-stream" if filename else ""
        out += f'--B\r\nContent-Disposition: form-data; name="{name}"{named}{kind}\r\n\r\n'.encode() + data + b"\r\n"
    return out + b"--B--\r\n"


def test_serve_swagger2_form_data_upload(serve_spec):
    spec = load_spec(SWAGGER / "upload.yaml", cache=False)
    stub = serve_spec(str(SWAGGER / "upload.yaml"))
    form = {"Content-Type": "multipart/form-data; boundary=B"}
    sent = _multipart(("photo", "fern.png", b"\x89PNG\r\n"), ("caption", None, b"My fern"), ("tags", None, b"green"),
                      ("tags", None, b"tall"))
    for code in ("201", "400"):
        status, kind, payload = send(stub.url, "POST", "/plants/3/photo", sent, {**form, "Prefer": f"code={code}"})
        assert status == int(code)
        answered(status, kind, payload, schema_of(spec, "POST /plants/{plantId}/photo", code))
    status, _, payload = send(stub.url, "POST", "/plants/3/photo", _multipart(("caption", None, b"no photo")), form)
    assert (status, json.loads(payload)) == (400, {"error": 400, "message": "body: 'photo' is a required property"})
    status, kind, payload = send(stub.url, "GET", "/plants/3/photo.png")
    assert (status, kind) == (200, "image/png") and payload


def test_serve_swagger2_collection_format_multi(serve_spec):
    spec = load_spec(SWAGGER / "multi.yaml", cache=False)
    stub = serve_spec(str(SWAGGER / "multi.yaml"))
    status, kind, payload = send(stub.url, "GET", "/plants?tag=fern&tag=palm&ids=1,2&words=a%20b&heights=1|2&codes=3%094")
    assert answered(status, kind, payload, schema_of(spec, "GET /plants", "200")) == [{"name": "string"}]
    status, _, payload = send(stub.url, "GET", "/plants?tag=fern,palm")  # multi: each value its own name
    assert (status, json.loads(payload)["message"]) == (
        400, "query.tag[0]: 'fern,palm' is not one of ['fern', 'cactus', 'palm']")
    status, _, payload = send(stub.url, "GET", "/plants?tag=fern&ids=1,x")
    assert (status, json.loads(payload)["message"]) == (400, "query.ids[1]: 'x' is not of type 'integer'")


def test_serve_swagger2_api_key(serve_spec):
    spec = load_spec(SWAGGER / "api-key.yaml", cache=False)
    stub = serve_spec(str(SWAGGER / "api-key.yaml"))
    status, _, payload = send(stub.url, "GET", "/plants")
    assert (status, json.loads(payload)) == (401, {"error": 401, "message": "headers.X-Api-Key: missing API key (api_key)"})
    status, kind, payload = send(stub.url, "GET", "/plants", headers={"X-Api-Key": "k"})
    answered(status, kind, payload, schema_of(spec, "GET /plants", "200", "*/*"))
    status, kind, payload = send(stub.url, "GET", "/plants/fern?key=k")
    assert answered(status, kind, payload, schema_of(spec, "GET /plants/{id}", "200", "*/*")) == "string"
    status, _, _ = send(stub.url, "GET", "/plants/fern", headers={"Authorization": "Basic dTpw"})
    assert status == 200
    assert send(stub.url, "GET", "/plants/fern")[0] == 401
    assert send(stub.url, "DELETE", "/plants/fern", headers={"Authorization": "Bearer t"})[:2] == (204, None)
    assert send(stub.url, "GET", "/health")[:2] == (200, None)


def test_serve_swagger2_refusal_names_file_and_line(tmp_path):
    spec = tmp_path / "api.yaml"
    spec.write_text('swagger: "2.0"\ninfo: {title: t, version: "1"}\npaths:\n  /a:\n    get:\n      parameters:\n'
                    "        - {name: n, in: cookie, type: string}\n      responses: {'200': {description: ok}}\n")
    (tmp_path / "scenarios").mkdir()
    stub = None
    try:
        stub = ServeProcess("--spec", str(spec), "--port", "0", "--scenarios", str(tmp_path / "scenarios"))
    except AssertionError as exc:
        assert (f"plantstub: cannot use spec {spec}:7: paths./a.get.parameters[0]: in: 'cookie' is not one of query,"
                " header, path, formData, body") in str(exc)
    else:
        stub.stop()
        raise AssertionError("the stub started")
