"""--stateful with other shapes of spec: a collection under a parameter, and a Petstore-style `{petId}` naming `id`."""

from __future__ import annotations

from plantstub import create_app
from tests.helpers import write

SHELVES = """\
openapi: 3.1.0
info: {title: Shelves, version: "1"}
paths:
  /shelves/{shelf}/books:
    parameters: [{name: shelf, in: path, required: true, schema: {type: integer}}]
    get:
      responses:
        "200":
          description: the shelf's books
          content: {application/json: {schema: {type: array, items: {$ref: "#/components/schemas/Book"}}}}
    post:
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: "#/components/schemas/Book"}}}
      responses:
        "201":
          description: shelved
          content: {application/json: {schema: {$ref: "#/components/schemas/Book"}}}
  /shelves/{shelf}/books/{n}:
    parameters:
      - {name: shelf, in: path, required: true, schema: {type: integer}}
      - {name: n, in: path, required: true, schema: {type: integer}}
    get:
      responses:
        "200":
          description: the book
          content: {application/json: {schema: {$ref: "#/components/schemas/Book"}}}
        "404": {description: no such book}
components:
  schemas:
    Book:
      type: object
      required: [title]
      properties: {n: {type: integer}, title: {type: string}}
"""


async def test_nested_collections_keep_one_list_per_parent(aiohttp_client, tmp_path):
    spec = write(tmp_path, "shelves.yaml", SHELVES)
    (tmp_path / "scenarios").mkdir()
    client = await aiohttp_client(create_app(spec=str(spec), scenarios=str(tmp_path / "scenarios"), stateful=True))
    assert (await (await client.post("/shelves/1/books", json={"title": "Dune"})).json()) == {"n": 1, "title": "Dune"}
    assert (await (await client.post("/shelves/2/books", json={"title": "Emma"})).json()) == {"n": 1, "title": "Emma"}
    assert await (await client.get("/shelves/1/books")).json() == [{"n": 1, "title": "Dune"}]
    assert await (await client.get("/shelves/2/books/1")).json() == {"n": 1, "title": "Emma"}
    missing = await client.get("/shelves/3/books/1")
    assert (missing.status, await missing.json()) == (404, {"error": 404, "message": "path.n: no record in /shelves/3/books has n 1"})
    state = await (await client.get("/__plantstub/state")).json()
    assert state == {"/shelves/1/books": [{"n": 1, "title": "Dune"}], "/shelves/2/books": [{"n": 1, "title": "Emma"}]}
    put = await client.put("/__plantstub/state", json={"/shelves/7/books": [{"n": 4, "title": "Ulysses"}]})
    assert put.status == 200
    assert await (await client.get("/shelves/7/books")).json() == [{"n": 4, "title": "Ulysses"}]
    assert await (await client.get("/shelves/1/books")).json() == []


PETS = """\
openapi: 3.0.3
info: {title: Pets, version: "1"}
paths:
  /pet:
    post:
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: "#/components/schemas/Pet"}}}
      responses:
        "200":
          description: the pet
          content: {application/json: {schema: {$ref: "#/components/schemas/Pet"}}}
  /pet/{petId}:
    parameters: [{name: petId, in: path, required: true, schema: {type: integer}}]
    get:
      responses:
        "200":
          description: the pet
          content: {application/json: {schema: {$ref: "#/components/schemas/Pet"}}}
        "404": {description: no such pet}
    post:
      parameters: [{name: name, in: query, schema: {type: string}}]
      responses:
        "200":
          description: updated
          content: {application/json: {schema: {$ref: "#/components/schemas/Pet"}}}
components:
  schemas:
    Pet:
      type: object
      required: [name]
      properties: {id: {type: integer}, name: {type: string}}
"""


async def test_petstore_path_parameter_names_the_records_id(aiohttp_client, tmp_path):
    spec = write(tmp_path, "pets.yaml", PETS)
    (tmp_path / "scenarios").mkdir()
    client = await aiohttp_client(create_app(spec=str(spec), scenarios=str(tmp_path / "scenarios"), stateful=True))
    assert await (await client.post("/pet", json={"id": 10, "name": "Rex"})).json() == {"id": 10, "name": "Rex"}
    assert await (await client.post("/pet", json={"name": "Tom"})).json() == {"id": 1, "name": "Tom"}
    assert await (await client.get("/pet/10")).json() == {"id": 10, "name": "Rex"}
    missing = await client.get("/pet/3")
    assert (missing.status, await missing.json()) == (404, {"error": 404, "message": "path.petId: no record in /pet has id 3"})
    # POST /pet/{petId} updates a pet (with a form, in the Petstore): not a collection, the default answer
    updated = await client.post("/pet/10?name=Max")
    assert updated.status == 200
    assert await (await client.get("/__plantstub/state")).json() == {"/pet": [{"id": 10, "name": "Rex"}, {"id": 1, "name": "Tom"}]}
