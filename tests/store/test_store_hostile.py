"""--stateful against hostile requests: odd paging numbers, deep bodies, big bodies, bodies the check let
through. None may crash the stub, answer 500 or grow it without bound."""

from __future__ import annotations

import io

import pytest

from plantstub import create_app
from tests.helpers import AUTH, SPECS, write


@pytest.fixture
async def library(aiohttp_client, tmp_path):
    return await aiohttp_client(create_app(spec=str(SPECS / "library.yaml"), scenarios=str(tmp_path), stateful=True))


def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


async def test_store_paging_numbers_beyond_any_list(library):
    await library.post("/books", json={"title": "Dune", "author": "Herbert"})
    for query in ("limit=99999999999999999999999", "offset=99999999999999999999999",
                  "limit=9223372036854775807&offset=9223372036854775807"):
        response = await library.get(f"/books?{query}")
        assert response.status == 200, query
    assert await (await library.get("/books?limit=99999999999999999999999")).json() == [{"bookId": "1", "title": "Dune"}]


@pytest.mark.parametrize("depth", [254, 900, 990], ids=["just-over", "deep", "near-the-parser-limit"])
async def test_store_refuses_to_keep_deep_records(library, depth):
    body = f'{{"title": "t", "author": "a", "x": {nested(depth)}}}'.encode()
    created = await library.post("/books", data=body, headers={"Content-Type": "application/json"})
    # POST /books declares 201 and 409: no 507, no 400, so the honest 507
    assert (created.status, (await created.json())["message"]) == (
        507, "body: nested more than 254 levels deep; the store keeps no record so deep")
    await library.post("/books", json={"title": "Dune", "author": "Herbert"})
    patched = await library.patch("/books/1", data=f'{{"x": {nested(depth)}}}'.encode(),
                                  headers={"Content-Type": "application/json"})
    assert patched.status == 507
    state = await library.get("/__plantstub/state")
    assert (state.status, await state.json()) == (200, {"/books": [{"bookId": "1", "title": "Dune", "author": "Herbert"}]})
    put = await library.put("/__plantstub/state", data=f'{{"/books": [{{"bookId": "1", "title": "t", "author": "a", '
                                                         f'"x": {nested(depth)}}}]}}'.encode(),
                            headers={"Content-Type": "application/json"})
    assert put.status == 400
    # Read by the request bodies' parser (orjson to 1,024 levels), then refused by the store: alike on every Python.
    assert (await put.json())["message"] == "state: a record is nested more than 254 levels deep; the store keeps none so deep"


async def test_store_records_nested_254_deep_are_kept(library):
    body = f'{{"title": "t", "author": "a", "x": {nested(253)}}}'.encode()
    created = await library.post("/books", data=body, headers={"Content-Type": "application/json"})
    assert created.status == 201
    assert (await library.get("/__plantstub/state")).status == 200


async def test_store_is_bounded_in_bytes(aiohttp_client, tmp_path):
    library = await aiohttp_client(create_app(spec=str(SPECS / "library.yaml"), scenarios=str(tmp_path), stateful=True,
                                              max_body=8 * 2**20))
    raw = b'{"title": "' + b"x" * 4_000_000 + b'", "author": "a"}'

    def big() -> dict:
        return {"data": io.BytesIO(raw), "headers": {"Content-Type": "application/json"}}

    statuses = [(await library.post("/books", **big())).status for _ in range(17)]
    assert statuses == [201] * 16 + [507]  # 4,000,000 bytes and what holding each takes, 64 MiB in all
    refused = await library.post("/books", **big())
    assert (await refused.json())["message"] == (
        "store: full, 64 MiB of records is the most a stub keeps; delete some, or reset it (POST /__plantstub/reset)")
    assert (await library.post("/books", json={"title": "small", "author": "a"})).status == 201  # still room for that
    assert (await library.delete("/books/1")).status == 204
    assert (await library.post("/books", **big())).status == 201


async def test_store_leaves_a_body_that_is_no_object_to_the_default_answer(aiohttp_client, tmp_path):
    write(tmp_path, "lax.yaml", "validate_requests: false\n")
    client = await aiohttp_client(create_app(spec="plant-store-full", scenarios=str(tmp_path), scenario="lax",
                                             stateful=True))
    for body in (b"[1, 2]", b'"Fern"', b"not json"):
        response = await client.post("/plants", data=body, headers={**AUTH, "Content-Type": "application/json"})
        assert response.status == 200
    bad_key = await client.post("/plants", json={"id": [1], "name": "Fern"}, headers=AUTH)
    assert (bad_key.status, (await bad_key.json())["message"]) == (400, "body.id: [1] cannot be a key")
    assert await (await client.get("/__plantstub/state")).json() == {"/plants": []}
