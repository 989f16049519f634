"""Parameters read by every style OpenAPI defines, over HTTP through create_app()."""

from __future__ import annotations

import pytest

from plantstub import create_app
from tests.helpers import write

# Ids: 2 or 3 integers >= 1. Color: an object with integers R and G (both required).
SPEC = """\
openapi: 3.1.0
info: {title: Styles, version: "1"}
paths:
  /simple/{ids}:
    get:
      parameters: [{name: ids, in: path, required: true, schema: {$ref: "#/components/schemas/Ids"}}]
      responses: {"200": {description: ok}}
  /label/{ids}:
    get:
      parameters: [{name: ids, in: path, required: true, style: label, schema: {$ref: "#/components/schemas/Ids"}}]
      responses: {"200": {description: ok}}
  /label-exploded/{ids}:
    get:
      parameters:
        - {name: ids, in: path, required: true, style: label, explode: true, schema: {$ref: "#/components/schemas/Ids"}}
      responses: {"200": {description: ok}}
  /label-scalar/{n}:
    get:
      parameters: [{name: n, in: path, required: true, style: label, schema: {type: number, maximum: 9}}]
      responses: {"200": {description: ok}}
  /matrix/{id}:
    get:
      parameters: [{name: id, in: path, required: true, style: matrix, schema: {type: integer}}]
      responses: {"200": {description: ok}}
  /matrix-list/{ids}:
    get:
      parameters: [{name: ids, in: path, required: true, style: matrix, schema: {$ref: "#/components/schemas/Ids"}}]
      responses: {"200": {description: ok}}
  /matrix-exploded/{ids}:
    get:
      parameters:
        - {name: ids, in: path, required: true, style: matrix, explode: true, schema: {$ref: "#/components/schemas/Ids"}}
      responses: {"200": {description: ok}}
  /matrix-object/{color}:
    get:
      parameters:
        - {name: color, in: path, required: true, style: matrix, explode: true, schema: {$ref: "#/components/schemas/Color"}}
      responses: {"200": {description: ok}}
  /simple-object/{color}:
    get:
      parameters: [{name: color, in: path, required: true, schema: {$ref: "#/components/schemas/Color"}}]
      responses: {"200": {description: ok}}
  /simple-object-exploded/{color}:
    get:
      parameters: [{name: color, in: path, required: true, explode: true, schema: {$ref: "#/components/schemas/Color"}}]
      responses: {"200": {description: ok}}
  /query:
    get:
      parameters:
        - {name: csv, in: query, explode: false, schema: {$ref: "#/components/schemas/Ids"}}
        - {name: repeated, in: query, schema: {$ref: "#/components/schemas/Ids"}}
        - {name: spaced, in: query, style: spaceDelimited, explode: false, schema: {$ref: "#/components/schemas/Ids"}}
        - {name: piped, in: query, style: pipeDelimited, explode: false, schema: {$ref: "#/components/schemas/Ids"}}
        - {name: point, in: query, explode: false, schema: {$ref: "#/components/schemas/Color"}}
        - name: filter
          in: query
          style: deepObject
          explode: true
          schema: {type: object, properties: {size: {type: integer, maximum: 10}, tags: {type: array, items: {type: integer}}}}
      responses: {"200": {description: ok}}
  /spread:
    get:
      parameters:
        - {name: color, in: query, required: true, schema: {$ref: "#/components/schemas/Color"}}
        - {name: page, in: query, schema: {type: integer}}
      responses: {"200": {description: ok}}
  /spread-open:
    get:
      parameters:
        - {name: tags, in: query, required: true, schema: {type: object, additionalProperties: {type: integer}}}
        - {name: page, in: query, schema: {type: string}}
      responses: {"200": {description: ok}}
  /headers:
    get:
      parameters:
        - {name: X-Ids, in: header, schema: {$ref: "#/components/schemas/Ids"}}
        - {name: X-Color, in: header, explode: true, schema: {$ref: "#/components/schemas/Color"}}
        - {name: ids, in: cookie, schema: {$ref: "#/components/schemas/Ids"}}
      responses: {"200": {description: ok}}
  /content:
    get:
      parameters:
        - name: where
          in: query
          required: true
          content:
            application/json:
              schema: {type: object, required: [lat], properties: {lat: {type: number, maximum: 90}}}
      responses: {"200": {description: ok}}
  /ignored:
    get:
      parameters:
        - {name: Accept, in: header, required: true, schema: {type: string, enum: [application/xml]}}
        - {name: content-type, in: header, required: true, schema: {type: string}}
        - {name: Authorization, in: header, required: true, schema: {type: string}}
        - {name: X-Kept, in: header, required: true, schema: {type: string}}
      responses: {"200": {description: ok}}
components:
  schemas:
    Ids: {type: array, minItems: 2, maxItems: 3, items: {type: integer, minimum: 1}}
    Color:
      type: object
      required: [R, G]
      properties: {R: {type: integer}, G: {type: integer}}
      additionalProperties: false
"""


@pytest.fixture
async def client(aiohttp_client, tmp_path):
    return await aiohttp_client(create_app(spec=str(write(tmp_path, "styles.yaml", SPEC))))


async def answer(client, url: str, headers: dict | None = None) -> tuple[int, str]:
    response = await client.get(url, headers=headers or {})
    body = await response.json() if response.status != 200 else {}
    return response.status, body.get("message", "")


@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        ("/simple/3,4,5", 200, ""),
        ("/simple/3,x", 400, "path.ids[1]: 'x' is not of type 'integer'"),
        ("/label/.3,4", 200, ""),
        ("/label/3,4", 400, "path.ids: expected '.' first (style: label), got '3,4'"),
        ("/label-exploded/.3.4.5", 200, ""),
        ("/label-exploded/.3.4.5.6", 400, "path.ids: [3, 4, 5, 6] is too long"),
        ("/label-scalar/.2.5", 200, ""),  # a scalar is not split: 2.5
        ("/label-scalar/.20.5", 400, "path.n: 20.5 is greater than the maximum of 9"),
        ("/matrix/;id=5", 200, ""),
        ("/matrix/5", 400, "path.id: expected ';id' first (style: matrix), got '5'"),
        ("/matrix/;other=5", 400, "path.id: expected ';id=' before each value (style: matrix), got ';other=5'"),
        ("/matrix-list/;ids=1,2", 200, ""),
        ("/matrix-list/;ids=1", 400, "path.ids: [1] is too short"),
        ("/matrix-exploded/;ids=1;ids=2;ids=3", 200, ""),
        ("/matrix-exploded/;ids=1;ids=0", 400, "path.ids[1]: 0 is less than the minimum of 1"),
        ("/matrix-object/;R=100;G=200", 200, ""),
        ("/matrix-object/;R=100;B=200", 400, "path.color: 'G' is a required property; "
                                             "path.color: Additional properties are not allowed ('B' was unexpected)"),
        ("/simple-object/R,100,G,200", 200, ""),
        ("/simple-object/R,100,G", 400, "path.color: expected name,value pairs"),
        ("/simple-object-exploded/R=100,G=200", 200, ""),
        ("/simple-object-exploded/R=100,G=x", 400, "path.color.G: 'x' is not of type 'integer'"),
        ("/simple-object-exploded/R,100", 400, "path.color: expected name=value members"),
    ],
)
async def test_path_parameter_styles(client, url, status, message):
    assert await answer(client, url) == (status, message)


@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        ("/query?csv=1,2", 200, ""),
        ("/query?csv=1", 400, "query.csv: [1] is too short"),
        ("/query?repeated=1&repeated=2", 200, ""),
        ("/query?repeated=1,2", 400, "query.repeated: ['1,2'] is too short; query.repeated[0]: '1,2' is not of type 'integer'"),
        ("/query?spaced=1%202%203", 200, ""),
        ("/query?spaced=1%202%200", 400, "query.spaced[2]: 0 is less than the minimum of 1"),
        ("/query?piped=1|2", 200, ""),
        ("/query?piped=1|2|3|4", 400, "query.piped: [1, 2, 3, 4] is too long"),
        ("/query?point=R,1,G,2", 200, ""),
        ("/query?point=R,1", 400, "query.point: 'G' is a required property"),
        ("/query?filter[size]=3&filter[tags]=1&filter[tags]=2", 200, ""),
        ("/query?filter[size]=30", 400, "query.filter.size: 30 is greater than the maximum of 10"),
        ("/query?filter[tags]=x", 400, "query.filter.tags[0]: 'x' is not of type 'integer'"),
        ("/query?filter[box][w]=1", 200, ""),  # a further [...] nests: {"box": {"w": "1"}}
        ("/query?filter[size]=3&filter[size][w]=1", 400,
         "query.filter: 'filter[size][w]' nests inside a member that is not an object (style: deepObject)"),
        ("/spread?R=1&G=2&page=3", 200, ""),  # an exploded object: its members are query names
        ("/spread?R=1&page=3", 400, "query.color: 'G' is a required property"),
        ("/spread?page=3", 400, "query.color: required parameter is missing"),
        ("/spread-open?a=1&b=2&page=x", 200, ""),  # every name but the other parameters'
        ("/spread-open?a=1&b=z", 400, "query.tags.b: 'z' is not of type 'integer'"),
        ("/content?where=%7B%22lat%22%3A%2045.5%7D", 200, ""),  # content: application/json
        ("/content?where=%7B%22lat%22%3A%20145%7D", 400, "query.where.lat: 145 is greater than the maximum of 90"),
    ],
)
async def test_query_parameter_styles(client, url, status, message):
    assert await answer(client, url) == (status, message)


async def test_content_parameter_that_is_not_json_is_refused_in_our_words(client):
    status, message = await answer(client, "/content?where=lat")
    assert status == 400
    assert message.startswith("query.where: not valid JSON")
    assert message.endswith("(application/json)")


@pytest.mark.parametrize(
    ("headers", "status", "message"),
    [
        ({"X-Ids": "1, 2, 3"}, 200, ""),  # HTTP lists may space their items
        ({"X-Ids": "1"}, 400, "headers.X-Ids: [1] is too short"),
        ({"X-Color": "R=1,G=2"}, 200, ""),
        ({"X-Color": "R=1,G=x"}, 400, "headers.X-Color.G: 'x' is not of type 'integer'"),
        ({"Cookie": "ids=1,2"}, 200, ""),
        ({"Cookie": "ids=1,0"}, 400, "cookies.ids[1]: 0 is less than the minimum of 1"),
    ],
)
async def test_header_and_cookie_parameter_styles(client, headers, status, message):
    assert await answer(client, "/headers", headers) == (status, message)


async def test_accept_content_type_and_authorization_header_parameters_are_ignored(client):
    assert await answer(client, "/ignored", {"X-Kept": "k"}) == (200, "")
    assert await answer(client, "/ignored", {"Accept": "application/json"}) == (
        400, "headers.X-Kept: required parameter is missing")


async def test_a_style_the_location_does_not_have_reads_as_its_default_with_a_warning(aiohttp_client, tmp_path):
    text = """\
openapi: 3.1.0
info: {title: Odd, version: "1"}
paths:
  /odd/{ids}:
    get:
      parameters: [{name: ids, in: path, required: true, style: form, schema: {type: array, items: {type: integer}}}]
      responses: {"200": {description: ok}}
"""
    client = await aiohttp_client(create_app(spec=str(write(tmp_path, "odd.yaml", text))))
    health = await (await client.get("/__plantstub/health")).json()
    assert health["spec"]["warnings"] == [
        "paths./odd/{ids}.get.parameters[0]: style: 'form' is not a style of path parameters (simple, label, matrix);"
        " read as simple"]
    assert await answer(client, "/odd/1,2") == (200, "")
    assert await answer(client, "/odd/1,x") == (400, "path.ids[1]: 'x' is not of type 'integer'")
