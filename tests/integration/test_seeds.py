"""Seeds over HTTP and the command line (issue 39): health's `seed`; a sidecar session's dynamic answers drawn from
the seed and its id, or the `seed_key` it was opened with, whatever other sessions drew; `POST reset` drawing them
again; `plantstub serve` saying the seed it chose the first time it makes a dynamic answer."""

from __future__ import annotations

import re

from plantstub import Stub
from tests.helpers import call

DYNAMIC = {"Prefer": "dynamic=true"}
SAID = re.compile(r"^plantstub: dynamic answers, seed (\d+) \(--seed \1 gives the same answers to the same calls\)$",
                  re.M)


def answers(base: str, n: int = 3) -> list[object]:
    """`n` dynamic answers to GET /plants at `base` (a stub's or a session's URL)."""
    got = [call(base, "GET", "plants?limit=2", headers=DYNAMIC) for _ in range(n)]
    assert all(status == 200 for status, _ in got), got
    return [body for _, body in got]


def open_session(base: str, sid: str, seed_key: str | None = None) -> str:
    body = {"id": sid} if seed_key is None else {"id": sid, "seed_key": seed_key}
    status, opened = call(base, "POST", "__plantstub/sessions", body)
    assert status == 201, opened
    return str(opened["url"])  # type: ignore[index]


def test_health_says_the_seed_given_or_chosen_and_what_the_session_drew():
    with Stub(spec="plant-store-full", seed=77) as stub:
        assert call(stub.url, "GET", "__plantstub/health")[1]["seed"] == 77  # type: ignore[index]
        answers(stub.url, 2)
        health = call(stub.url, "GET", "__plantstub/health")[1]
        assert health["dynamic"] == {"seed_key": None, "answers": 2}  # type: ignore[index]
    with Stub(spec="plant-store-full") as chosen:
        assert call(chosen.url, "GET", "__plantstub/health")[1]["seed"] == chosen.seed  # type: ignore[index]


def test_a_session_draws_from_the_seed_and_its_id_whatever_other_sessions_drew():
    with Stub(spec="plant-store-full", seed=5) as stub:
        first = answers(open_session(stub.url, "ci-1"))
        answers(open_session(stub.url, "ci-2"), 7)
        answers(stub.url, 4)
        call(stub.url, "DELETE", "__plantstub/sessions/ci-1")
        assert answers(open_session(stub.url, "ci-1")) == first  # the id opened again draws them again
        assert answers(open_session(stub.url, "ci-3")) != first
    with Stub(spec="plant-store-full", seed=5) as fresh:  # another stub, the same seed: the same answers
        assert answers(open_session(fresh.url, "ci-1")) == first


def test_a_seed_key_keys_the_draws_and_reset_draws_them_again():
    with Stub(spec="plant-store-full", seed=5) as stub:
        keyed = open_session(stub.url, "a1", seed_key="tests/test_shop.py::test_checkout")
        first = answers(keyed)
        other = open_session(stub.url, "b2", seed_key="tests/test_shop.py::test_checkout")
        assert answers(other) == first  # another id, the same key: the same answers
        status, ended = call(stub.url, "DELETE", "__plantstub/sessions/b2")
        assert (status, ended["dynamic_answers"]) == (200, 3)  # type: ignore[index]
        assert call(keyed, "POST", "__plantstub/reset")[0] == 200  # the key stays; the draws start again
        assert answers(keyed) == first
        assert call(keyed, "POST", "__plantstub/reset", {"seed_key": "another"})[0] == 200
        assert answers(keyed) != first
        assert call(stub.url, "POST", "__plantstub/reset", {"seed_key": "tests/test_shop.py::test_checkout"})[0] == 200
        assert answers(stub.url) == first  # the stub's own session, keyed alike
        for body, message in (({"seed_key": 7}, "body.seed_key: expected a string (a test's node id, say), not int"),
                              ({"seed_key": "x" * 4097}, "body.seed_key: 4097 characters; at most 4096"),
                              ({"seed": 1}, 'body: expected nothing, or {"seed_key": "KEY"} (dynamic answers drawn '
                                            'from the seed and KEY from now on)')):
            status, refused = call(stub.url, "POST", "__plantstub/reset", body)
            assert (status, refused["message"]) == (400, message)  # type: ignore[index]


def test_the_python_api_keys_sessions_and_resets_alike():
    with Stub(spec="plant-store-full", seed=9) as stub:
        with stub.session(seed_key="k") as view:
            first = answers(view.url)
            assert view.dynamic_answers == 3
        stub.reset(seed_key="k")
        assert answers(stub.url) == first and stub.dynamic_answers == 3
        remote = Stub.connect(stub.url)
        assert remote.seed == 9
        with remote.session(seed_key="k") as far:
            assert answers(far.url) == first and far.dynamic_answers == 3
        assert far.ended_answers == 3


def test_serve_says_the_seed_it_chose_when_it_first_makes_a_dynamic_answer(serve):
    plain = serve("--port", "0", "--spec", "plant-store-full")
    assert call(plain.url, "GET", "/plants")[0] == 200
    plain.stop()
    assert "seed" not in plain.stderr  # no dynamic answer: nothing said
    varied = serve("--port", "0", "--spec", "plant-store-full")
    first = answers(varied.url + "/", 2)  # the listening line's URL has no '/'
    seed = call(varied.url, "GET", "/__plantstub/health")[1]["seed"]  # type: ignore[index]
    varied.stop()
    assert [int(s) for s in SAID.findall(varied.stderr)] == [seed]  # once, the first time
    again = serve("--port", "0", "--spec", "plant-store-full", "--seed", str(seed))
    assert answers(again.url + "/", 2) == first  # the seed said draws the same answers again
    again.stop()
    assert "seed" not in again.stderr  # a seed given is not said again
