"""A `--stateful` record as the store holds it: compact JSON in bytes, parsed again when read; and the merge of a
PATCH body into a record (RFC 7396)."""

from __future__ import annotations

from typing import Any

import orjson

from plantstub._json import decode_json, json_bytes, nests_deeper


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch: objects merge member by member, `null` removes, anything else replaces.

    Level by level, without recursion: a patch nested as deep as a body may be must not exhaust the stack."""
    if not isinstance(patch, dict):
        return patch
    root = dict(target) if isinstance(target, dict) else {}
    todo = [(root, patch)]
    while todo:
        merged, part = todo.pop()
        for name, value in part.items():
            if value is None:
                merged.pop(name, None)
            elif isinstance(value, dict):
                old = merged.get(name)
                merged[name] = sub = dict(old) if isinstance(old, dict) else {}
                todo.append((sub, value))
            else:
                merged[name] = value
    return root


# Levels of objects and arrays a stored record may have: as many as orjson writes (what it refuses is
# written by the standard library later, deeper in the stack, where Python's limit would not take it).
MAX_DEPTH = 254


class Written(bytes):
    """A record the standard library wrote (integers beyond 64 bits, lone surrogates): read back the same way."""

    __slots__ = ()


class TooDeep(Written):
    """A record nested more than MAX_DEPTH levels: in a state, refused; in a scenario's seed, kept as loaded."""

    __slots__ = ()


def encode(record: Any) -> bytes | None:
    """A record as the store holds it: compact JSON in bytes of its own size; None when it is nested more than
    MAX_DEPTH levels (not kept: the admin API and the answers write it again later, and Python's stack would not
    take it)."""
    try:
        # A copy: orjson's bytes keep the whole buffer they were written in, up to 64 times what they hold.
        return memoryview(orjson.dumps(record)).tobytes()  # orjson refuses more than 255 levels: shallow enough
    except orjson.JSONEncodeError:
        if nests_deeper(record, MAX_DEPTH):
            return None
        return Written(json_bytes(record))


def decode(payload: bytes) -> Any:
    """A held record parsed again, exactly as it went in."""
    return decode_json(payload) if type(payload) is Written else orjson.loads(payload)
