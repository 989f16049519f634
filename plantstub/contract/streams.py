"""OpenAPI 3.2's sequential media types: a stream of items, each held to the media type's `itemSchema`.

JSON Lines (`application/jsonl`), NDJSON (`application/x-ndjson`), JSON text sequences (`application/json-seq`,
`+json-seq`: each item after a record separator, 0x1E) and Server-Sent Events (`text/event-stream`: each event
an object of its `data`, `event`, `id` and `retry` fields, as the specification maps them). A request's stream is
read item by item and each item checked where it stands (`body[2].level`); an answer is a short stream of items
that each pass the item schema, written in the media type's framing and read back by the same rules before it is
sent.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from plantstub._json import BodyError, decode_json, essence, json_bytes
from plantstub.contract.compiled import Checks
from plantstub.contract.flatten import defs_of, types_of
from plantstub.contract.model import MediaType
from plantstub.contract.sample_values import NONE
from plantstub.contract.samples import generate
from plantstub.contract.schema import SchemaCheck, Violation

ITEMS = 3  # the items of a stream the stub answers with (a short, finite stream: the answer ends)
MAX_ITEMS = 10_000  # items of a request's stream that are read; the rest are refused, not read
MAX_LINES = 100_000  # lines (or record separators) a stream may hold: counted at C speed before any is read
MAX_VIOLATIONS = 50  # as many as one body's check lists
_JSON_LINES = frozenset(("application/jsonl", "application/x-ndjson", "application/x-jsonlines"))
_SSE = "text/event-stream"
_RS = b"\x1e"
_SSE_FIELDS = ("event", "id", "retry")  # written before `data`; `data` may span several lines
_LINE_END = re.compile(r"\r\n|\r|\n")


class ItemError(BodyError):
    """One item of a stream cannot be read: which (`index`, from 0), and why."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(reason)
        self.index = index


def is_sequential(media: str) -> bool:
    """Whether a media type is one of the sequential types plantstub reads and writes item by item."""
    kind = essence(media)
    return kind in _JSON_LINES or kind == _SSE or kind == "application/json-seq" or kind.endswith("+json-seq")


def is_stream(media: MediaType) -> bool:
    """Whether a declared media type is read and answered as a stream: a sequential type with an `itemSchema`, or
    with a `schema` of an array, which OpenAPI 3.2 holds the items to as one array (a schema of anything else, as
    3.0 documents wrote for each line of NDJSON, is left as it was: not checked, as any other media type)."""
    if not is_sequential(media.name):
        return False
    return media.item_schema is not None or "array" in (types_of(media.schema, defs_of(media.schema)) or ())


def read_items(raw: bytes, media: str) -> list[object]:
    """The items of a stream sent as `media`; ItemError for an item that cannot be read (its line, and why), BodyError
    for a stream that is none."""
    kind = essence(media)
    breaks = raw.count(_RS) if kind not in _JSON_LINES and kind != _SSE else raw.count(b"\n") + raw.count(b"\r")
    if breaks > MAX_LINES:  # a stream of blank lines or comments would cost a Python step per line
        raise BodyError(f"more than {MAX_LINES:,} lines; plantstub reads at most {MAX_LINES:,}")
    if kind == _SSE:
        return _events(raw)
    if kind in _JSON_LINES:
        chunks = [(n + 1, line) for n, line in enumerate(raw.split(b"\n")) if line.strip()]
    else:  # json-seq: each item follows a record separator; what precedes the first is not an item
        parts = raw.split(_RS)
        if parts[0].strip():
            raise BodyError("a JSON text sequence starts with a record separator (0x1E) before each item")
        chunks = [(0, part) for part in parts[1:]]
    if len(chunks) > MAX_ITEMS:
        raise BodyError(f"more than {MAX_ITEMS:,} items; plantstub reads at most {MAX_ITEMS:,}")
    items: list[object] = []
    for i, (line, chunk) in enumerate(chunks):
        try:
            items.append(decode_json(chunk.strip(b"\r\n\t ")))
        except BodyError as exc:
            # One line holds one item: the line's number, and the column within it
            raise ItemError(i, f"line {line}: {str(exc).replace(' at line 1 column ', ' at column ')}" if line
                            else str(exc)) from None
    return items


def _events(raw: bytes) -> list[object]:
    """A text/event-stream as the WHATWG parser reads it: fields up to a blank line make one event; `data` lines
    join with a newline; comments (`:`), unknown fields and a `retry` that is not digits are ignored; an event
    with no `data` is none (as a browser dispatches none). The last event needs no blank line after it."""
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise BodyError(f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    events: list[object] = []  # each an event: its fields
    current: dict[str, object] = {}
    data: list[str] = []
    for line in [*_LINE_END.split(text), ""]:
        if not line:
            if data:
                events.append({**current, "data": "\n".join(data)})
                if len(events) > MAX_ITEMS:
                    raise BodyError(f"more than {MAX_ITEMS:,} events; plantstub reads at most {MAX_ITEMS:,}")
            current, data = {}, []
            continue
        field, colon, value = line.partition(":")
        if not field:  # a comment
            continue
        value = value[1:] if colon and value.startswith(" ") else value
        if field == "data":
            data.append(value)
        elif field in ("event", "id"):
            current[field] = value
        elif field == "retry" and value.isascii() and value.isdigit():
            current[field] = int(value)
    return events


def write_items(items: list[object], media: str) -> bytes:
    """`items` in the framing of `media` (each JSON item on its line, after a record separator, or as an event)."""
    kind = essence(media)
    if kind == _SSE:
        return b"".join(_event(item) for item in items)
    if kind in _JSON_LINES:
        return b"".join(json_bytes(item) + b"\n" for item in items)
    return b"".join(_RS + json_bytes(item) + b"\n" for item in items)


def _event(item: object) -> bytes:
    """One event: its fields, `data` last (one `data:` line per line of it), then a blank line. A field that is
    not text (an object for `data`) is written as JSON, which reads back as text: the check after says if the
    item schema takes that."""
    fields = item if isinstance(item, dict) else {"data": item}
    lines = []
    for name in (*_SSE_FIELDS, "data"):
        if name in fields:
            value = fields[name]
            text = value if isinstance(value, str) else json_bytes(value).decode("utf-8")
            lines += [f"{name}: {part}" for part in (text.split("\n") if name == "data" else [_one_line(text)])]
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")


class StreamCheck:
    """A request body in a sequential media type: its items, each held to the item schema (and all of them, as an
    array, to the media type's `schema` when it declares one too)."""

    def __init__(self, media: str, item: SchemaCheck | None, whole: SchemaCheck | None) -> None:
        self.media = media
        self.item = item
        self.whole = whole

    def violations(self, raw: bytes, root: str = "body") -> tuple[list[Violation], list[object] | None]:
        """Every problem of the stream (up to MAX_VIOLATIONS), and its items as the call records them."""
        try:
            items = read_items(raw, self.media)
        except ItemError as exc:
            return [Violation(f"{root}[{exc.index}]", str(exc))], None
        except BodyError as exc:
            return [Violation(root, str(exc))], None
        found: list[Violation] = []
        if self.item is not None:
            for i, item in enumerate(items):
                found += self.item.errors(item, f"{root}[{i}]")
                if len(found) >= MAX_VIOLATIONS:
                    return found[:MAX_VIOLATIONS], items
        if self.whole is not None:
            found += self.whole.errors(items, root)
        return found[:MAX_VIOLATIONS], items


def stream_problem(items: list[object], media: str, check: SchemaCheck | None) -> tuple[bytes, str | None]:
    """`items` written in `media`, and why the stream breaks its item schema once read back (None: it keeps it)."""
    payload = write_items(items, media)
    if check is None:
        return payload, None
    read = read_items(payload, media)
    if len(read) != len(items):
        return payload, f"its items cannot be written as {essence(media)} (an event needs `data`)"
    for item in read:
        errors = check.errors(item, "item")
        if errors:
            return payload, f"an item written as {essence(media)} and read back breaks its itemSchema: {errors[0]}"
    return payload, None


def stream_answer(media: MediaType, examples: dict[str, object], samples: Checks | None) -> tuple[str, str | None]:
    """A default answer in a sequential media type: a declared example whose items all keep the item schema (as
    written: the serialized stream, or a list of its items), else ITEMS items generated from it (or, with a
    `schema` of the whole array only, its generated array). Returns the text to send and why no stream keeps the
    contract (None: it does)."""
    checks = samples if samples is not None else Checks()
    check = checks.check(media.item_schema) if isinstance(media.item_schema, dict) else None
    whole = checks.check(media.schema) if isinstance(media.schema, dict) else None
    for value in examples.values():
        try:
            items = read_items(value.encode("utf-8"), media.name) if isinstance(value, str) else value
        except BodyError:
            continue
        if isinstance(items, list) and items and _fit(items, check, whole):
            return value if isinstance(value, str) else write_items(items, media.name).decode("utf-8"), None
    kind = "itemSchema" if media.item_schema is not None else "schema"
    made = checks.generated(media.item_schema if media.item_schema is not None else media.schema, generate)
    if made.problem is not None:
        found = "no value satisfies" if made.certain else "plantstub finds no value that satisfies"
        return "", f"{found} the {kind} of its {essence(media.name)} stream: {made.problem}"
    items = [made.value] * ITEMS if media.item_schema is not None else made.value
    if not isinstance(items, list):
        return "", f"the schema of its {essence(media.name)} stream takes a value that is no array of items"
    payload, problem = stream_problem(items, media.name, check)
    if problem is None and whole is not None and not whole.is_valid(items):
        problem = f"{len(items)} items of its itemSchema break the stream's own schema"
    return payload.decode("utf-8"), problem


def _fit(items: list[object], check: SchemaCheck | None, whole: SchemaCheck | None) -> bool:
    return (check is None or all(check.is_valid(item) for item in items)) and (whole is None or whole.is_valid(items))


def streamed(media: MediaType, draw: Callable[[], object], checks: Checks) -> bytes | None:
    """A dynamic stream: ITEMS items each drawn by `draw()` (a few tries each) and checked, written in `media`; None
    when no draw fits (the fixed answer is sent instead). With no item schema, `draw()` gives the whole array."""
    if media.item_schema is None:
        whole = draw()
        if not isinstance(whole, list) or not isinstance(media.schema, dict) or not checks.check(media.schema).is_valid(whole):
            return None
        return write_items(whole, media.name)
    check = checks.check(media.item_schema) if isinstance(media.item_schema, dict) else None
    items = []
    for _ in range(ITEMS):
        item = next((v for v in (draw() for _ in range(3)) if v is not NONE and (check is None or check.is_valid(v))),
                    NONE)
        if item is NONE:
            return None
        items.append(item)
    payload, problem = stream_problem(items, media.name, check)
    return payload if problem is None else None
