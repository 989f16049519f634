"""YAML and JSON reading shared by the spec and scenario loaders (safe, JSON-typed).

PyYAML and plantstub's loaders over it (_yaml_loaders.py) are imported when a YAML document is first read or written:
a start that reads JSON alone (the bundled spec's parsed form, contract/documents.py) pays for neither."""

from __future__ import annotations

import json
import re
from pathlib import Path

from plantstub._json import MAX_ALIASED as MAX_ALIASED  # re-exported: the limits are read here
from plantstub._json import MAX_DEPTH as MAX_DEPTH
from plantstub._json import MAX_SHOWN, TOO_DEEP, DocumentLimit, cut, json_nesting

# The slow way, to find the line where the limit is crossed: a string (escapes and all) or a bracket.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]')


def check_json_shape(text: str) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH, as YAML is (the standard library's decoder recurses); DocumentLimit."""
    if json_nesting(text.encode("utf-8", "surrogatepass")) <= MAX_DEPTH:
        return
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        char = match.group()[0]
        if char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise DocumentLimit(text.count("\n", 0, match.start()) + 1, TOO_DEEP)
        elif char != '"':
            depth -= 1


def dump_yaml(data: object) -> str:
    """`data` (JSON values) as a block-style YAML document, keys in their order: the one way plantstub writes YAML."""
    from plantstub._yaml_loaders import dump_yaml

    return dump_yaml(data)


def parse_text(text: str, name: str, *, quote: bool = True) -> object:
    """Parse JSON (by extension) or YAML text; raises ValueError with `name:line: reason`.

    With `quote=False` a syntax error says where, not what (the parser's words may quote the text):
    for a file that the user did not name, such as the target of a `$ref`.
    """
    try:
        if name.endswith(".json"):
            return _json_loads(text, name, quote)
        return _yaml_loads(text, name, quote)
    except DocumentLimit as exc:
        raise ValueError(f"{name}:{exc.line}: {exc.reason}") from None


def _yaml_loads(text: str, name: str, quote: bool) -> object:
    import yaml

    from plantstub._yaml_events import _Unusual
    from plantstub._yaml_loaders import JsonSafeLoader, read_events

    try:
        try:
            return read_events(text)
        except _Unusual:  # read again, as it always was: the same value, or the error in the same words
            return yaml.load(text, Loader=JsonSafeLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.MarkedYAMLError as exc:
        if text.lstrip().startswith("{"):
            try:  # JSON with tabs is valid JSON but not valid YAML
                return _json_loads(text, name, quote)
            except DocumentLimit:
                raise
            except ValueError:
                pass
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ValueError(f"{name}{line}: not valid YAML{_reason(exc.problem or exc.context, quote)}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{name}: not valid YAML{_reason(str(exc), quote)}") from None


def parse_bytes(data: bytes, name: str, *, quote: bool = True) -> object:
    """parse_text() of a file's bytes, as decode_text() reads them: a YAML file in UTF-8 is given to libyaml as it
    is, never held as text beside them (libyaml reads a text's UTF-8 copy: the two were 90 MB of a 47 MB spec's
    peak). Whatever that way does not read plainly (JSON, a byte-order mark of UTF-16, a tag, a syntax error, bytes
    that are not UTF-8) is read as text, to be read or refused in the same words as ever."""
    if not name.endswith(".json") and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        from plantstub._yaml_events import _Unusual
        from plantstub._yaml_loaders import read_events

        try:
            return read_events(data)
        except (_Unusual, ValueError):  # a DocumentLimit is a ValueError: the text's reading words it
            pass
    return parse_text(decode_text(data, name), name, quote=quote)


def _reason(text: str | None, quote: bool) -> str:
    return f": {cut(text, 3 * MAX_SHOWN)}" if quote and text else ""


def _json_loads(text: str, name: str, quote: bool) -> object:
    check_json_shape(text)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{name}:{exc.lineno}: not valid JSON{_reason(exc.msg, quote)}") from None
    except ValueError as exc:  # an integer of more than 4300 digits
        raise ValueError(f"{name}: not valid JSON{_reason(str(exc), quote)}") from None


def read_bytes(path: Path, name: str) -> bytes:
    """The bytes of one file; ValueError naming it (`name`) when it cannot be read."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ValueError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{name}: is a folder, not a file") from None
    except OSError as exc:
        raise ValueError(f"{name}: cannot read ({exc.strerror})") from None


def decode_text(data: bytes, name: str) -> str:
    """UTF-8 text, a byte-order mark tolerated, line ends as Python's text files read them; ValueError if not UTF-8."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def read_events(text: str) -> object:
    """The value JsonSafeLoader reads from `text`, built straight from libyaml's events (_yaml_events.py)."""
    from plantstub._yaml_loaders import read_events

    return read_events(text)
