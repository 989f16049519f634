"""A big block-YAML document read in two halves at once: this process reads the first, a child process the second.

PyYAML hands libyaml's events over as Python objects, which takes five times longer than libyaml's parsing (a
20 MB spec: 3.6 of 4.3 s) and holds the interpreter's lock, so a second core only helps in a second process.
The text is cut before a line that is a key of the top-level mapping, or of the mapping of one of its keys
(`paths:`, whose child keys are then written under a copy of the `paths:` line): every block structure open
above that line ends there, so each half reads as that part of the whole. An open flow collection or quoted
scalar is an error in the first half; anything out of the ordinary (an anchor, an alias, a document marker, a
key in both halves, an error in either) and the caller reads the whole text in one piece, as it always has.
"""

from __future__ import annotations

import marshal
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

MIN_SPLIT = 2_000_000  # characters (2 MB of YAML: 0.7 s to read); a second Python takes 0.15 s to start
# A line that is a plain or quoted key and nothing else after the colon but a value on the same line.
_KEY = r"(?:[A-Za-z0-9_/$][^\n#:]*|\"[^\"\n\\]*\"|'[^'\n]*'):(?:[ \t]|$)"
_KEY_LINE = re.compile(rf"[ ]*{_KEY}", re.MULTILINE)
_LINE = re.compile(r"^([ ]*)[^ \n#]", re.MULTILINE)  # a line that is not blank nor a comment, and its indent
_HEADER = re.compile(r"^([ ]*)([A-Za-z0-9_/$][^\n#: ]*):[ \t]*$", re.MULTILINE)  # `paths:` alone on its line
_LEVELS = 4  # how deep to look for a key near the middle
_OPENERS = frozenset(" \t\r\n[]{},")
_ENDERS = frozenset(["", " ", "\t", "\r", "\n", "[", "]", "{", "}", ","])
_MARKER = re.compile(r"\n(?:---|\.\.\.)(?:\s|$)")  # a document's start or end inside the text
_WORKER = "import sys; sys.path.insert(0, {root!r}); from plantstub._yaml import read_chunk; read_chunk()"


class _NoSplit(Exception):
    """Read it in one piece."""


def read_split(text: str, read: Callable[[str], Any]) -> Any:
    """`read(text)`, in two processes for a big block-YAML document whose halves read as the whole does."""
    if len(text) < MIN_SPLIT or text.lstrip()[:1] in ("{", "[") or _unsplittable(text):
        return read(text)
    try:
        first, second, section = _halves(text)
        return _read_halves(first, second, section, read)
    except _NoSplit:
        return read(text)


def _unsplittable(text: str) -> bool:
    """Whether a half could mean something else than in the whole: an anchor, alias or tag (`&a`, `*a`, `!t`
    after a space or a flow indicator) or a document marker. str.find() at C speed; a regex took 1.5 s."""
    for mark in "&*!":
        at = text.find(mark)
        while at != -1:
            if (at == 0 or text[at - 1] in _OPENERS) and text[at + 1:at + 2] not in _ENDERS:
                return True
            at = text.find(mark, at + 1)
    return ("\n---" in text or "\n..." in text) and _MARKER.search(text) is not None


def _halves(text: str) -> tuple[str, str, list[str]]:
    """The two texts, and the keys (from the top) of the mapping both hold part of ([]: the top-level one).

    Found with str.find() near the middle: a regular expression over the whole text took a second.
    """
    middle, near = len(text) // 2, len(text) // 8
    opening = _LINE.search(text)
    if opening is None or opening.group(1) or not _KEY_LINE.match(text, opening.start()):  # no mapping at column 0
        raise _NoSplit
    start, end, indent, prefix = opening.start(), len(text), 0, ""
    path: list[str] = []
    for _ in range(_LEVELS):
        before, after = _key_before(text, start, middle, indent), _key_after(text, middle, end, indent)
        cuts = sorted((k for k in (before, after) if k is not None and k > start), key=lambda k: abs(k - middle))
        if cuts and abs(cuts[0] - middle) < near:  # a key near the middle: cut before it
            return text[:cuts[0]], prefix + text[cuts[0]:], path
        # Else go down into the mapping of the key whose lines hold the middle, if it is `key:` alone on its line;
        # if it is not, cut before the key nearest to the middle all the same.
        header = _HEADER.match(text, before if before is not None else start)
        inner = header.end() + 1 if header is not None and header.group(1) == indent * " " else None
        child = None if inner is None else _LINE.search(text, inner, after if after is not None else end)
        if child is None or len(child.group(1)) <= indent or not _KEY_LINE.match(text, child.start()):
            if not cuts:
                raise _NoSplit
            return text[:cuts[0]], prefix + text[cuts[0]:], path
        assert header is not None and inner is not None
        start, end = inner, after if after is not None else end
        prefix += text[header.start():start]
        path.append(header.group(2))
        start, indent = child.start(), len(child.group(1))
    raise _NoSplit


def _key_before(text: str, start: int, middle: int, indent: int) -> int | None:
    """The start of the last line in text[start:middle] that is a key indented by `indent` spaces."""
    window = 1 << 16
    while True:  # look back from the middle in ever larger windows: most keys are near it
        low = max(start, middle - window)
        found = None
        for lead in _lead(indent).finditer(text, low, middle + indent + 2):  # room for the look-ahead
            if lead.start() < middle and _KEY_LINE.match(text, lead.end()):
                found = lead.start() + 1
        if found is not None:
            return found
        if low == start:
            at_start = _LINE.match(text, start)
            return start if at_start and len(at_start.group(1)) == indent and _KEY_LINE.match(text, start) else None
        window *= 4


def _key_after(text: str, middle: int, end: int, indent: int) -> int | None:
    """The start of the first line in text[middle:end] that is a key indented by `indent` spaces."""
    for lead in _lead(indent).finditer(text, middle - 1, end):  # a line that starts at `middle` too
        if _KEY_LINE.match(text, lead.end()):
            return lead.start() + 1
    return None


def _lead(indent: int) -> re.Pattern[str]:
    """A line break and `indent` spaces before a key's first character (a literal start: the regex engine then
    skips to each line break at C speed)."""
    return re.compile("\n" + " " * indent + "(?=[A-Za-z0-9_/$\"'])")


def _read_halves(first: str, second: str, section: list[str], read: Callable[[str], Any]) -> Any:
    root = str(Path(__file__).resolve().parents[1])
    # The second half goes in through an unnamed temporary file, written at once: fed through a pipe by a thread,
    # each 64 KiB waited for this process's busy thread to let go of the interpreter (a second in all).
    with tempfile.TemporaryFile() as given:
        given.write(second.encode("utf-8", "surrogatepass"))
        given.seek(0)
        try:
            child = subprocess.Popen([sys.executable, "-c", _WORKER.format(root=root)], stdin=given,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError:
            raise _NoSplit from None
    assert child.stdout is not None
    try:
        try:
            head = read(first)
        except Exception:  # noqa: BLE001 - whatever the first half cannot be, the whole text says in its own words
            raise _NoSplit from None
        answer = child.stdout.read()
        if child.wait() != 0 or not answer:
            raise _NoSplit
        try:
            tail = marshal.loads(answer)
        except (ValueError, EOFError, TypeError):  # not what read_chunk() writes: some other program answered
            raise _NoSplit from None
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
    return _merged(head, tail, section)


def _merged(head: Any, tail: Any, path: list[str]) -> dict[str, Any]:
    """The two halves as one mapping, in the order of the text; _NoSplit when a key is in both."""
    into, outer = head, tail
    for key in ["", *path]:
        if type(into) is not dict or type(outer) is not dict:
            raise _NoSplit
        if key:
            if next(reversed(into), None) != key or next(iter(outer), None) != key:
                raise _NoSplit
            into, outer = into[key], outer[key]
            if type(into) is not dict or type(outer) is not dict:
                raise _NoSplit
    # Each mapping on the path holds its last key in the head and first key in the tail, the same one.
    levels = [(head, tail)]
    for key in path:
        levels.append((levels[-1][0][key], levels[-1][1][key]))
    for depth, (mine, theirs) in enumerate(levels):
        shared = {path[depth]} if depth < len(path) else set()
        if not (mine.keys() & theirs.keys()) <= shared:
            raise _NoSplit
    for depth in range(len(levels) - 1, -1, -1):
        mine, theirs = levels[depth]
        if depth < len(path):
            theirs = {k: v for k, v in theirs.items() if k != path[depth]}
        mine.update(theirs)
    return head
