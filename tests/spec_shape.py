"""What a loaded spec serves, as plain data to compare two loadings of one API: each operation's parameters, bodies,
responses and security, and the answer plantstub gives for each declared response.

Used by tests/contract/test_swagger2_examples.py (a Swagger 2.0 document against its swagger2openapi conversion)
and by tests/benchmarks/swagger2_compare.py.
"""

from __future__ import annotations

import json
from typing import Any

from plantstub._json import MISSING
from plantstub.contract.model import MediaType, Spec
from plantstub.contract.operations import serve


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True))


def _media(media: MediaType) -> dict[str, Any]:
    return {"schema": _plain(media.schema), "items": _plain(media.item_schema),
            "example": None if media.example is MISSING else _plain(media.example), "examples": _plain(media.examples)}


def spec_shape(spec: Spec) -> dict[str, Any]:
    """Each operation (`GET /pets`) -> what requests it takes and what it declares to answer."""
    return {op.label: {
        "parameters": sorted([p.name, p.location, p.required, p.style, p.explode, p.media, json.dumps(_plain(p.schema))]
                             for p in op.parameters),
        "body_required": op.body_required,
        "body": None if op.body is None else {name: _media(m) for name, m in op.body.items()},
        "responses": {status: {"content": {name: _media(m) for name, m in r.content.items()},
                               "headers": _plain(r.headers), "required": list(r.required_headers)}
                      for status, r in op.responses.items()},
        "security": [[[s.name, s.type, s.scheme, s.location, s.param] for s in alt] for alt in op.security],
    } for op in spec.operations}


def spec_answers(spec: Spec) -> dict[str, dict[str, list[Any]]]:
    """Each operation -> each declared response -> [status, Content-Type, payload] of plantstub's answer."""
    served = serve(spec, seed=1)
    return {op.label: {key: [out.status, out.content_type, out.payload.decode("utf-8", "replace")]
                       for key in op.responses for out in [served[op].answer(key).build(None)]}
            for op in spec.operations}


def differences(ours: Any, theirs: Any, at: str = "") -> list[str]:
    """Where two shapes differ, one line each (`only in ours: ...`, `differ at ...`)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = []
        for key in sorted(set(ours) | set(theirs), key=str):
            if key not in theirs:
                out.append(f"only in ours: {at}/{key}")
            elif key not in ours:
                out.append(f"only in theirs: {at}/{key}")
            else:
                out += differences(ours[key], theirs[key], f"{at}/{key}")
        return out
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [line for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) for line in differences(a, b, f"{at}[{i}]")]
    return [] if ours == theirs else [f"differ at {at}: ours {json.dumps(ours)[:200]}, theirs {json.dumps(theirs)[:200]}"]
