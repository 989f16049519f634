"""A real service for --proxy tests: an aiohttp app answering the Plant Store, and for some names breaking the
contract or HTTP itself. Run as `python tests/upstream_app.py [CERT KEY]`; prints `upstream listening on URL`.

By the request body's `name`: Broken (a Plant with an integer name), Teapot (418), NotJson (invalid JSON said to be
JSON), Html (text/html), Slow (answers after 5 s), Big (a 10 MB valid Plant), HugeHeader (a 20 kB header), Gzip (a
compressed answer), Drop (closes the connection unanswered), Secret (secret fields), Braces (`{{` in the body); anything else gets the Plant back, with hop-by-hop
headers that must not reach the client. `GET /__seen` shows the last request it got.

`GET .../plants` answers `limit` plants (2 without it), `[{"name": "plant 0"}, ...]`. Whatever the body, a request with `X-Answer: BASE64` gets those bytes as a JSON answer (status `X-Answer-Status`, 200 by
default), and one with `X-Raw-Answer: BASE64` gets those bytes written on the socket as the whole answer (a header no
server library would send). `GET ...?bulk=N` answers a list of about N bytes: of `{}` objects (`&shape=empty`,
~330,000 values a MB), of `{"name":"p"}` plants (`&shape=plants`, ~150,000 values a MB) or of one plant whose name is
N bytes long (`&shape=long`).
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import sys

from aiohttp import web

seen: dict = {}


async def plants(request: web.Request) -> web.StreamResponse:
    raw = await request.read()
    seen.clear()
    seen.update(method=request.method, path=request.path, query=request.query_string,
                headers=dict(request.headers.items()), body=raw.decode("utf-8", "replace"))
    if "X-Raw-Answer" in request.headers:
        assert request.transport is not None
        request.transport.write(base64.b64decode(request.headers["X-Raw-Answer"]))
        request.transport.close()
        await asyncio.sleep(1)
        return web.json_response({})
    if "X-Answer" in request.headers:
        return web.Response(body=base64.b64decode(request.headers["X-Answer"]), content_type="application/json",
                            status=int(request.headers.get("X-Answer-Status", "200")))
    if request.query.get("bulk"):
        size = int(request.query["bulk"])
        if request.query.get("shape") == "long":
            return web.Response(body=b'[{"name": "%s"}]' % (b"x" * size), content_type="application/json")
        if request.query.get("shape") == "plants":
            return web.Response(body=b"[" + b'{"name":"p"},' * (size // 13) + b'{"name":"p"}]',
                                content_type="application/json")
        return web.Response(body=b"[" + b"{}," * (size // 3) + b"{}]", content_type="application/json")
    if request.method == "GET" and request.path.endswith("/plants"):  # as many plants as `limit` says (2 without)
        return web.json_response([{"name": f"plant {i}"} for i in range(int(request.query.get("limit", "2")))])
    if request.method != "POST":
        return web.json_response({"name": "Listed", "method": request.method})
    try:
        body = await request.json()
        name = body.get("name") if isinstance(body, dict) else None
    except ValueError:
        name = None
    if name == "Broken":
        return web.json_response({"name": 42})
    if name == "Teapot":
        return web.json_response({"error": 418, "message": "I am a teapot"}, status=418)
    if name == "NotJson":
        return web.Response(body=b'{"name": "oops', content_type="application/json")
    if name == "Html":
        return web.Response(text="<p>hello</p>", content_type="text/html")
    if name == "Slow":
        await asyncio.sleep(5)
        return web.json_response({"name": name})
    if name == "Big":
        return web.json_response({"name": "Big", "tag": "x" * (10 * 1024 * 1024)})
    if name == "HugeHeader":
        return web.json_response({"name": name}, headers={"X-Huge": "h" * 20_000})
    if name == "Gzip":
        response = web.json_response({"name": name, "tag": "z" * 1000})
        response.enable_compression()
        return response
    if name == "Drop":
        assert request.transport is not None
        request.transport.close()
        await asyncio.sleep(1)
        return web.json_response({})
    if name == "Secret":
        return web.json_response({"name": name, "access_token": "abc123", "nested": {"apiKey": "k-1"}},
                                 headers={"Set-Cookie": "sid=s3cr3t"})
    if name == "Braces":
        return web.json_response({"name": "{{ not a placeholder }}"})
    if name == "Invalid400":
        return web.json_response({"error": 400, "message": "nope"}, status=400)
    answer = {"name": name} if body.get("tag") is None else {"name": name, "tag": body["tag"]}
    return web.json_response(answer, headers={
        "X-Upstream": "yes", "Keep-Alive": "timeout=5", "Connection": "keep-alive, X-Drop-Me", "X-Drop-Me": "1",
        "Set-Cookie": "session=abc",
    })


async def last(request: web.Request) -> web.Response:
    return web.json_response(seen)


async def main() -> None:
    app = web.Application()
    app.router.add_get("/__seen", last)
    app.router.add_route("*", "/{tail:.*}", plants)
    context = None
    if len(sys.argv) == 3:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(sys.argv[1], sys.argv[2])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = runner.addresses[0][1]
    print(f"upstream listening on {'https' if context else 'http'}://127.0.0.1:{port}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
