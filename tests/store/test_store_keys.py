"""--stateful keys (tests/data/specs/things.yaml): every key a record is created with is one its item path names,
and distinct keys are distinct records; a key no path names is refused, naming it."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from plantstub import create_app
from tests.helpers import SPECS

JSON = {"Content-Type": "application/json"}
LONG = "1" * 80  # shown() cuts values at 80 characters: keys once collided past it


@pytest.fixture
async def things(aiohttp_client, tmp_path):
    return await aiohttp_client(create_app(spec=str(SPECS / "things.yaml"), scenarios=str(tmp_path), stateful=True))


async def answer(response):
    return response.status, (await response.json() if response.status != 204 else None)


@pytest.mark.parametrize("digits", [19, 25, 30, 31, 81, 4300])  # `type: integer` has no size limit (issue 25)
async def test_store_long_integer_keys_are_distinct_and_addressable(things, digits):
    first, second = int("1" * (digits - 1) + "2"), int("1" * (digits - 1) + "3")
    for n in (first, second):
        assert await answer(await things.post("/numbers", data=f'{{"n": {n}}}', headers=JSON)) == (201, {"n": n})
    for n in (first, second):
        assert await answer(await things.get(f"/numbers/{n}")) == (200, {"n": n})
    assert await answer(await things.put(f"/numbers/{first}", data=f'{{"n": {first}}}', headers=JSON)) == (
        200, {"n": first})
    assert (await things.delete(f"/numbers/{first}")).status == 204
    assert await answer(await things.get(f"/numbers/{second}")) == (200, {"n": second})


async def test_store_integer_keys_are_distinct_past_80_digits(things):
    first, second = LONG + "2", LONG + "3"  # cut at 80 characters, they collided as one key
    for n in (first, second):
        assert (await things.post("/labels", data=f'{{"label": {n}}}', headers=JSON)).status == 201
    for n in (first, second):  # the key's parameter is any text: its path names it
        assert await answer(await things.get(f"/labels/{n}")) == (200, {"label": int(n)})


@pytest.mark.parametrize(("raw", "shown", "reason"), [
    (b'""', "''", "an empty path segment"),
    (b'"."', "'.'", "clients drop a path segment . or .. before sending"),
    (b'".."', "'..'", "clients drop a path segment . or .. before sending"),
    (b'"\\ud800"', "'\\ud800'", "a lone surrogate, which no URL carries"),
    (b'"a\\udfffb"', "'a\\udfffb'", "a lone surrogate, which no URL carries"),
], ids=["empty", "dot", "dot-dot", "lone-surrogate", "surrogate-inside"])
async def test_store_string_keys_no_path_names_are_refused(things, raw, shown, reason):
    refused = await answer(await things.post("/words", data=b'{"word": ' + raw + b"}", headers=JSON))
    assert refused == (409, {"error": 409, "message": (
        f"body.word: {shown} cannot be a key: no path /words/{{word}} names it ({reason})")})
    nested = await answer(await things.post("/shelves/a/words", data=b'{"word": ' + raw + b"}", headers=JSON))
    assert nested[0] == 409
    assert await (await things.get("/__plantstub/state")).json() == {"/labels": [], "/numbers": [], "/words": []}


@pytest.mark.parametrize("word", ["a/b", "a?b#c", "%", " ", "100%25", "ü", "😀", "-1", "x" * 500])
async def test_store_string_keys_a_path_names_are_kept(things, word):
    assert await answer(await things.post("/words", json={"word": word})) == (201, {"word": word})
    path = "/words/" + quote(word, safe="")
    assert await answer(await things.get(path)) == (200, {"word": word})
    assert await answer(await things.put(path, json={"word": "other"})) == (200, {"word": word})
    assert (await things.delete(path)).status == 204
    assert (await things.get(path)).status == 404


async def test_store_state_with_keys_no_path_names_is_refused(things):
    # An integer key of 80 digits is one a path names (issue 25): only the words are refused.
    state = b'{"/words": [{"word": ""}, {"word": "\\ud800"}, {"word": "ok"}], "/numbers": [{"n": ' + LONG.encode() + b"}]}"
    put = await things.put("/__plantstub/state", data=state, headers=JSON)
    assert put.status == 400
    assert (await put.json())["problems"] == [
        {"at": "state./words[0].word", "message": "'' cannot be a key: no path /words/{word} names it (an empty path "
                                                  "segment)"},
        {"at": "state./words[1].word", "message": "'\\ud800' cannot be a key: no path /words/{word} names it (a lone "
                                                  "surrogate, which no URL carries)"},
    ]
