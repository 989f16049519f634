"""A real Plant Store for `plantstub verify` tests: the whole of `--spec plant-store-full` (GET /plants with `limit`,
POST /plants, DELETE /plants/{id}) behind a bearer token, with contract bugs switched on by `PUT /__bugs`.

Run as `python tests/plant_store_app.py TOKEN`; it prints `plant store listening on URL`. Its own routes:
`PUT /__bugs` (a JSON list of bug names), `POST /__reset` (the first three plants, no bugs, nothing seen),
`GET /__seen` (every request since, as [method, path]).

Bugs: `closed` (POST /plants answers 400, a declared status), `id-as-text` (the listed plants' `id` is a string:
the spec says nothing of it), `created` (POST /plants answers 201, which the spec does not declare), `nameless` (the
listed plants lack the required `name`), `drip` (GET /plants sends its body a byte every half second), `echo` (its
400s quote the Authorization header they got), `moved` (GET /plants redirects to another host).
"""

from __future__ import annotations

import asyncio
import json
import sys

from aiohttp import web

TOKEN = sys.argv[1] if len(sys.argv) > 1 else "t"
FIRST = [{"id": 1, "name": "Fern", "tag": "green"}, {"id": 2, "name": "Ivy", "tag": "climber"},
         {"id": 3, "name": "Moss", "tag": "soft"}]
plants: list[dict] = []
bugs: set[str] = set()
seen: list[list[str]] = []


def reset() -> None:
    plants[:] = [dict(p) for p in FIRST]
    bugs.clear()
    seen.clear()


def error(request: web.Request, status: int, message: str) -> web.Response:
    if "echo" in bugs:
        message += f" (you sent {request.headers.get('Authorization')})"
    return web.json_response({"error": status, "message": message}, status=status)


@web.middleware
async def guard(request: web.Request, handler) -> web.StreamResponse:
    if request.path.startswith("/__"):
        return await handler(request)
    seen.append([request.method, request.path_qs])
    if request.headers.get("Authorization") != f"Bearer {TOKEN}":
        return web.json_response({"error": 401, "message": "a valid bearer token is needed"}, status=401,
                                 headers={"WWW-Authenticate": "Bearer"})
    return await handler(request)


async def list_plants(request: web.Request) -> web.StreamResponse:
    limit = request.query.get("limit", "100")
    if not limit.lstrip("-").isdigit():
        return error(request, 400, f"limit: {limit!r} is not an integer")
    shown = [{"name": p["name"], "tag": p["tag"], "id": p["id"]} for p in plants[: max(0, int(limit))]]
    if "id-as-text" in bugs:
        shown = [{**p, "id": str(p["id"])} for p in shown]
    if "nameless" in bugs:
        shown = [{k: v for k, v in p.items() if k != "name"} for p in shown]
    if "moved" in bugs:
        raise web.HTTPFound("http://elsewhere.invalid/plants")
    if "drip" in bugs:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        for byte in json.dumps(shown).encode():
            await response.write(bytes([byte]))
            await asyncio.sleep(0.5)
        await response.write_eof()
        return response
    return web.json_response(shown)


async def create_plant(request: web.Request) -> web.Response:
    try:
        body = await request.json()
    except ValueError:
        return error(request, 400, "body: not JSON")
    if not isinstance(body, dict) or not isinstance(body.get("name"), str):
        return error(request, 400, "body.name: a string is required")
    if not isinstance(body.get("id"), int) or isinstance(body.get("id"), bool):
        return error(request, 400, "body.id: an integer is required")
    if "tag" in body and not isinstance(body["tag"], str):
        return error(request, 400, "body.tag: must be a string")
    if "closed" in bugs:
        return error(request, 400, "The store is closed")
    if body["name"].startswith("Cact"):
        return error(request, 400, "Cacti are sold out")
    if any(p["id"] == body["id"] for p in plants):
        return error(request, 400, f"a plant with id {body['id']} exists")
    plants.append({"id": body["id"], "name": body["name"], "tag": body.get("tag", "")})
    answer = {"name": body["name"], **({"tag": body["tag"]} if "tag" in body else {})}
    return web.json_response(answer, status=201 if "created" in bugs else 200)


async def delete_plant(request: web.Request) -> web.Response:
    raw = request.match_info["id"]
    if not raw.isdigit():
        return error(request, 400, f"id: {raw!r} is not an integer")
    found = [p for p in plants if p["id"] == int(raw)]
    if not found:
        return error(request, 400, f"no plant with id {raw}")
    plants.remove(found[0])
    return web.Response(status=204)


async def set_bugs(request: web.Request) -> web.Response:
    bugs.clear()
    bugs.update(await request.json())
    return web.json_response(sorted(bugs))


async def do_reset(request: web.Request) -> web.Response:
    reset()
    return web.json_response({})


async def get_seen(request: web.Request) -> web.Response:
    return web.json_response(seen)


async def main() -> None:
    reset()
    app = web.Application(middlewares=[guard])
    app.router.add_get("/plants", list_plants)
    app.router.add_post("/plants", create_plant)
    app.router.add_delete("/plants/{id}", delete_plant)
    app.router.add_put("/__bugs", set_bugs)
    app.router.add_post("/__reset", do_reset)
    app.router.add_get("/__seen", get_seen)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(f"plant store listening on http://127.0.0.1:{runner.addresses[0][1]}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
