"""`plantstub serve --spec` on a document with the shapes public OpenAPI documents have: path keys with '?' or '#'
(served percent-encoded), a required Accept header parameter, side-by-side path parameters, deepObject, an older JSON Schema dialect."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from tests.helpers import ServeProcess, write

SPEC = """\
openapi: 3.1.0
info: {title: Catalog, version: "1"}
jsonSchemaDialect: "http://json-schema.org/draft-04/schema#"
paths:
  /search?q={q}:
    get:
      responses: {"200": {description: never reached}}
  /docs#intro:
    get:
      responses: {"200": {description: never reached}}
  /items:
    get:
      parameters:
        - {name: Accept, in: header, required: true, schema: {type: string, enum: [application/json]}}
        - name: filter
          in: query
          style: deepObject
          explode: true
          schema: {type: object, properties: {price: {type: number, minimum: 0, exclusiveMinimum: true}}}
      responses:
        "200":
          description: items
          content:
            application/json:
              schema: {type: object, required: [count], properties: {count: {type: integer}}}
  /files/{name}.{ext}:
    get:
      parameters:
        - {name: name, in: path, required: true, schema: {type: string}}
        - {name: ext, in: path, required: true, schema: {type: string, enum: [json, tar.gz]}}
      responses: {"200": {description: ok}}
"""

UNUSABLE = [  # served when percent-encoded, as Prism does (issue 25)
    "paths: '/search?q={q}' holds a ?, which starts a URL's query: served when a client sends it percent-encoded (%3F)",
    "paths./search?q={q}.get: {q} has no declared path parameter; read as a string",
    "paths: '/docs#intro' holds a #, which starts a URL's fragment: served when a client sends it percent-encoded (%23)",
]


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url), timeout=5) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_serve_a_real_world_shaped_document(tmp_path):
    spec = write(tmp_path, "catalog.yaml", SPEC)
    stub = ServeProcess("--port", "0", "--spec", str(spec), cwd=tmp_path)
    try:
        # urllib sends `Accept: */*`, not the enum's value: the Accept parameter is ignored, as OpenAPI says.
        assert get(stub.url + "/items?filter[price]=2.5") == (200, {"count": 0})
        assert get(stub.url + "/items?filter[price]=0") == (
            400, {"error": 400, "message": "query.filter.price: 0 is less than or equal to the minimum of 0"})
        assert get(stub.url + "/files/backup.tar.gz")[0] == 200
        assert get(stub.url + "/search?q=fern") == (
            404, {"error": 404, "message": "path: no path in the spec matches /search; the spec's path '/search?q={q}'"
                                           " holds a '?', which a URL reads as the start of its query: send it as %3F"
                                           " (/search%3Fq={q})"})
        assert get(stub.url + "/search%3Fq=fern") == (200, {})
        assert get(stub.url + "/docs%23intro") == (200, {})
        health = get(stub.url + "/__plantstub/health")[1]
        assert health["spec"]["operations"] == 4
        assert health["spec"]["warnings"] == UNUSABLE
    finally:
        stub.stop()
    assert stub.stderr.splitlines() == [f"plantstub: spec {spec}: {line}" for line in UNUSABLE]
