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
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

MIN_SPLIT = 4_000_000  # characters: a smaller document reads faster than a second Python starts
# A line that is a plain or quoted key and nothing else after the colon but a value on the same line.
_KEY = r"(?:[A-Za-z0-9_/$][^\n#:]*|\"[^\"\n\\]*\"|'[^'\n]*'):(?:[ \t]|$)"
_HEADER = re.compile(r"^([ ]*)([A-Za-z0-9_/$][^\n#: ]*):[ \t]*$", re.MULTILINE)  # `paths:` alone on its line
_LEVELS = 4  # how deep to look for a key near the middle
# What could make a half mean something else than in the whole: anchors, aliases, tags, document markers.
_UNSPLITTABLE = re.compile(r"(?:^|[\s\[\]{},])[&*!][^\s\[\]{},]|\n(?:---|\.\.\.)(?:\s|$)")
_WORKER = "import sys; sys.path.insert(0, {root!r}); from plantstub._yaml import read_chunk; read_chunk()"


class _NoSplit(Exception):
    """Read it in one piece."""


def read_split(text: str, read: Callable[[str], Any]) -> Any:
    """`read(text)`, in two processes for a big block-YAML document whose halves read as the whole does."""
    if len(text) < MIN_SPLIT or text.lstrip()[:1] in ("{", "[") or _UNSPLITTABLE.search(text):
        return read(text)
    try:
        first, second, section = _halves(text)
        return _read_halves(first, second, section, read)
    except _NoSplit:
        return read(text)


def _halves(text: str) -> tuple[str, str, list[str]]:
    """The two texts, and the keys (from the top) of the mapping both hold part of ([]: the top-level one)."""
    middle = len(text) // 2
    opening = re.search(r"^[^\s#]", text, re.MULTILINE)  # the first line that is not blank or a comment
    if opening is None or not re.match(_KEY, text[opening.start():]):  # not a block mapping at column 0
        raise _NoSplit
    start, end, indent, prefix, path = opening.start(), len(text), 0, "", []
    for _ in range(_LEVELS):
        keys = [start + m.start() for m in re.finditer(rf"^[ ]{{{indent}}}{_KEY}", text[start:end], re.MULTILINE)]
        if not keys or keys[0] != start:
            raise _NoSplit
        inside = [k for k in keys[1:] if abs(k - middle) < len(text) // 8]
        if inside:  # a key near the middle: cut before it
            cut = min(inside, key=lambda k: abs(k - middle))
            return text[:cut], prefix + text[cut:], path
        # Else go down into the mapping of the key whose lines hold the middle, if it is `key:` alone on its line.
        holder = max(k for k in keys if k <= middle) if keys[0] <= middle else keys[0]
        header = _HEADER.match(text, holder)
        if header is None or header.group(1) != indent * " ":
            raise _NoSplit
        following = [k for k in keys if k > holder]
        start, end = header.end() + 1, following[0] if following else end
        child = re.compile(r"^([ ]*)[^ \n#]", re.MULTILINE).search(text, start, end)
        if child is None or len(child.group(1)) <= indent:
            raise _NoSplit
        # A line less indented than the keys below (but more than the key) would end the mapping: leave it whole.
        if re.compile(rf"^[ ]{{{indent + 1},{len(child.group(1)) - 1}}}[^ \n#]", re.MULTILINE).search(text, start, end):
            raise _NoSplit
        prefix += text[holder:start]
        path.append(header.group(2))
        start, indent = child.start(), len(child.group(1))
    raise _NoSplit


def _read_halves(first: str, second: str, section: list[str], read: Callable[[str], Any]) -> Any:
    root = str(Path(__file__).resolve().parents[1])
    try:
        child = subprocess.Popen([sys.executable, "-c", _WORKER.format(root=root)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError:
        raise _NoSplit from None
    assert child.stdin is not None and child.stdout is not None
    stdin = child.stdin

    def feed() -> None:
        try:
            stdin.write(second.encode("utf-8", "surrogatepass"))
            stdin.close()
        except OSError:  # it died: its answer says so
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        try:
            head = read(first)
        except Exception:  # noqa: BLE001 - whatever the first half cannot be, the whole text says in its own words
            raise _NoSplit from None
        answer = child.stdout.read()
        if child.wait() != 0 or not answer:
            raise _NoSplit
        tail = marshal.loads(answer)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        feeder.join()
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
