"""--stateful records against the memory budget: held as compact JSON, counted in real bytes under "records" in
the session's budget, and a create the budget has no room for refused with the store's "full" answer."""

from __future__ import annotations

import gc
import io
import json
import re
import tracemalloc

from plantstub import create_app
from tests.helpers import SPECS

JSON = {"Content-Type": "application/json"}


def empties(size: int) -> bytes:
    """A book whose JSON is about `size` bytes of `{}`: parsed, each of them is a dict of 64 bytes."""
    return b'{"title": "t", "author": "a", "x": [' + b",".join([b"{}"] * (size // 3)) + b"]}"


async def health(client) -> dict:
    return await (await client.get("/__plantstub/health")).json()


async def test_store_holds_records_in_the_bytes_health_counts(aiohttp_client, tmp_path):
    client = await aiohttp_client(create_app(spec=str(SPECS / "library.yaml"), scenarios=str(tmp_path),
                                             stateful=True, journal_size=1))
    body = empties(50_000)
    await client.post("/books", data=body, headers=JSON)  # warm: the first answer builds what every one uses
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held_before = (await health(client))["memory"]["session"]["parts"]["records"]
        for _ in range(40):
            assert (await client.post("/books", data=body, headers=JSON)).status == 201
        await client.post("/books", json={"title": "t", "author": "a"})  # the last parsed body is let go
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    figures = await health(client)
    held = figures["memory"]["session"]["parts"]["records"] - held_before
    # 2 MB as JSON: parsed, the 40 records took 40 MB; held as JSON, what health counts is what Python holds
    assert 2_000_000 < held < 2_200_000
    assert 0.75 < grown / held < 1.25, (grown, held)
    assert figures["store"] == {"records": 42, "collections": 1, "bytes": figures["memory"]["session"]["parts"]["records"],
                                "max_records": 10_000, "max_bytes": 64 * 2**20}


async def test_store_create_the_memory_budget_refuses_answers_full(aiohttp_client, tmp_path):
    client = await aiohttp_client(create_app(spec=str(SPECS / "library.yaml"), scenarios=str(tmp_path),
                                             stateful=True, max_bytes=2**20, max_body=4 * 2**20))
    big = {"title": "x" * 400_000, "author": "a"}
    assert [(await client.post("/books", json=big)).status for _ in range(2)] == [201, 201]
    refused = await client.post("/books", json=big)
    # POST /books declares 201 and 409 only: the honest 507, naming the budget
    assert refused.status == 507
    size = _refused_bytes((await refused.json())["message"], "this session holds at most 1,048,576")
    assert 400_000 < size < 400_500  # the record's JSON and what Python holds for it (a few bytes more or less by version)
    patched = await client.patch("/books/1", json={"author": "y" * 400_000})
    assert patched.status == 507
    figures = await health(client)
    dropped = figures["memory"]["session"]["dropped"]["records"]
    assert dropped["count"] == 1 and size + 399_900 < dropped["bytes"] < size + 400_100  # the PATCH's growth too
    assert figures["store"]["records"] == 2
    assert [b["bookId"] for b in (await (await client.get("/__plantstub/state")).json())["/books"]] == ["1", "2"]
    assert (await client.delete("/books/1")).status == 204  # room again
    assert (await client.post("/books", json=big)).status == 201
    state = json.dumps({"/books": [{"bookId": str(i), **big} for i in range(3)]}).encode()
    put = await client.put("/__plantstub/state", data=io.BytesIO(state), headers=JSON)
    assert put.status == 400
    [found] = (await put.json())["problems"]
    held = re.fullmatch(r"([\d,]+) bytes of records as held; the memory budget holds at most 1,048,576 bytes "
                        r"\(--max-bytes\)", found["message"])
    assert found["at"] == "state" and held is not None and 3 * size < int(held[1].replace(",", "")) < 3 * size + 2_000


async def test_store_create_the_stub_wide_budget_refuses_names_it(aiohttp_client, tmp_path):
    client = await aiohttp_client(create_app(spec=str(SPECS / "library.yaml"), scenarios=str(tmp_path),
                                             stateful=True, max_bytes=2 * 2**20))
    for _ in range(2):  # the default session takes most of the stub's 2 MiB
        assert (await client.post("/books", json={"title": "x" * 1_000_000, "author": "a"})).status == 201
    opened = await client.post("/__plantstub/sessions", json={"id": "s1"})
    assert opened.status == 201
    refused = await client.post("/__session/s1/books", json={"title": "x" * 100_000, "author": "a"})
    # the session's 128 KiB have room for it (its first record and its collection); all sessions' 2 MiB do not
    assert refused.status == 507
    size = _refused_bytes((await refused.json())["message"], "all sessions together hold at most 2,097,152")
    assert 100_000 < size < 100_600  # the record, and its collection's first bytes
    figures = await health(client)
    assert figures["memory"]["stub"]["dropped"]["records"] == {"count": 1, "bytes": size}


def _refused_bytes(message: str, budget: str) -> int:
    """The bytes a store's refusal for lack of memory names, the message being ours otherwise word for word."""
    found = re.fullmatch(r"store: full, the memory budget has no room for ([\d,]+) more bytes \(" + re.escape(budget)
                         + r" bytes of what clients send, --max-bytes\); delete some, or reset it "
                           r"\(POST /__plantstub/reset\)", message)
    assert found is not None, message
    return int(found[1].replace(",", ""))
