"""--stateful with a second shape of spec (tests/data/specs/library.yaml): a server-assigned string key,
201 on create, GET, PUT, PATCH and DELETE of an item, 404 and 409 declared, paging and a filter."""

from __future__ import annotations

import pytest

from plantstub import create_app
from tests.helpers import SPECS

BOOKS = [
    {"title": "Dune", "author": "Herbert", "year": 1965},
    {"title": "Emma", "author": "Austen"},
    {"title": "Persuasion", "author": "Austen", "year": 1817},
]


@pytest.fixture
async def client(aiohttp_client, tmp_path):
    return await aiohttp_client(create_app(spec=str(SPECS / "library.yaml"), scenarios=str(tmp_path), stateful=True))


async def answer(response):
    return response.status, (await response.json() if response.status != 204 else None)


async def test_library_assigns_string_keys_and_answers_201_with_the_book(client):
    created = [await answer(await client.post("/books", json=book)) for book in BOOKS]
    assert created == [(201, {"bookId": str(i), **book}) for i, book in enumerate(BOOKS, 1)]
    assert await answer(await client.get("/books/2")) == (200, {"bookId": "2", "title": "Emma", "author": "Austen"})
    # the list answers BookSummary: bookId and title only
    assert await answer(await client.get("/books")) == (
        200, [{"bookId": "1", "title": "Dune"}, {"bookId": "2", "title": "Emma"}, {"bookId": "3", "title": "Persuasion"}])


async def test_library_paging_and_filter(client):
    for book in BOOKS:
        await client.post("/books", json=book)
    titles = [b["title"] for b in (await (await client.get("/books?offset=1&limit=1")).json())]
    assert titles == ["Emma"]
    assert [b["title"] for b in await (await client.get("/books?author=Austen")).json()] == ["Emma", "Persuasion"]
    assert [b["title"] for b in await (await client.get("/books?author=Austen&offset=1")).json()] == ["Persuasion"]
    assert await (await client.get("/books?author=Nobody")).json() == []
    assert await (await client.get("/books?offset=9")).json() == []


async def test_library_put_replaces_and_patch_merges(client):
    await client.post("/books", json=BOOKS[0])
    replaced = await answer(await client.put("/books/1", json={"title": "Dune Messiah", "author": "Herbert"}))
    assert replaced == (200, {"bookId": "1", "title": "Dune Messiah", "author": "Herbert"})  # year is gone
    patched = await answer(await client.patch("/books/1", json={"year": 1969}))
    assert patched == (200, {"bookId": "1", "title": "Dune Messiah", "author": "Herbert", "year": 1969})
    cleared = await answer(await client.patch("/books/1", json={"year": None}))  # merge patch: null removes
    assert cleared == (200, {"bookId": "1", "title": "Dune Messiah", "author": "Herbert"})
    kept = await answer(await client.patch("/books/1", json={"bookId": "99"}))  # the path names the record
    assert kept[1]["bookId"] == "1"
    assert await answer(await client.get("/books/99")) == (
        404, {"error": 404, "message": "path.bookId: no record in /books has bookId '99'"})


@pytest.mark.parametrize(("method", "body"), [("GET", None), ("PUT", BOOKS[0]), ("PATCH", {"year": 1}), ("DELETE", None)],
                         ids=["get", "put", "patch", "delete"])
async def test_library_unknown_key_answers_the_declared_404(client, method, body):
    response = await client.request(method, "/books/nope", json=body)
    assert await answer(response) == (404, {"error": 404, "message": "path.bookId: no record in /books has bookId 'nope'"})


async def test_library_duplicate_key_answers_the_declared_409(client):
    assert (await client.post("/books", json={"bookId": "dune", **BOOKS[0]})).status == 201
    assert await answer(await client.post("/books", json={"bookId": "dune", **BOOKS[1]})) == (
        409, {"error": 409, "message": "body.bookId: a record in /books already has bookId 'dune'"})
    # assigned keys skip one a client chose
    await client.post("/books", json={"bookId": "1", **BOOKS[1]})
    assert (await (await client.post("/books", json=BOOKS[2])).json())["bookId"] == "2"


async def test_library_delete_then_the_book_is_gone(client):
    await client.post("/books", json=BOOKS[0])
    await client.post("/books", json=BOOKS[1])
    assert await answer(await client.delete("/books/1")) == (204, None)
    assert (await client.get("/books/1")).status == 404
    assert await (await client.get("/books")).json() == [{"bookId": "2", "title": "Emma"}]
    # a deleted key is not given again
    assert (await (await client.post("/books", json=BOOKS[2])).json())["bookId"] == "3"
