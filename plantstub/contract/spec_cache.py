"""The spec cache: a big spec, loaded and bundled, kept as JSON under a key made of every file it was read from.

One entry per spec file: a header line (format, key, the other files read and their hashes, the payload's hash),
then the Spec as contract/spec_json.py writes it. It is read back with orjson (never pickle) and used only when
every hash matches; anything else (a corrupt, truncated or foreign file, a file read changed) is a miss, and the
entry is written again. Writes go to a temporary file renamed over the entry, so a reader (another xdist
worker) sees a whole entry or none. Only documents that load without error are kept: their warnings come back
with them, and an error is always worded by the loader, with its file:line.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import orjson

from plantstub._fields import ByFields
from plantstub._version import __version__
from plantstub.config import spec_cache_setting
from plantstub.contract import spec_json
from plantstub.contract.model import Spec

log = logging.getLogger("plantstub")

MIN_CACHED = 1 << 20  # bytes of the spec's own file: a smaller one loads in well under a second
MAX_ENTRIES = 16  # kept in the folder; the least recently used go first
MAX_BYTES = 1 << 30  # all entries together
_STALE_TEMP = 3600  # seconds after which a temporary file is a crashed writer's
_PREFIX, _SUFFIX = "spec-", ".json"


def digest(data: bytes | memoryview) -> str:
    """The content hash of one file read."""
    return hashlib.sha256(data).hexdigest()


def default_folder(env: Mapping[str, str] | None = None) -> Path:
    """$XDG_CACHE_HOME/plantstub (when it is an absolute path, as the XDG spec says), else ~/.cache/plantstub."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "plantstub"


def version(package: str) -> str:
    """The installed release of `package`; importlib.metadata is imported only then (a spec under MIN_CACHED bytes
    never asks: a start without it)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(package)
    except PackageNotFoundError:  # importable without its metadata (vendored, copied): an entry of its own
        return "unknown"


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class SpecCache(ByFields):
    """The entries in one folder."""

    folder: Path

    @staticmethod
    def chosen(setting: Path | bool | None) -> SpecCache | None:
        """The cache `--spec-cache` names: a folder, False (off) or True (the default folder); None reads
        PLANTSTUB_SPEC_CACHE. None when it is off."""
        if setting is None:
            setting = spec_cache_setting()
        if setting is False:
            return None
        try:
            return SpecCache(default_folder() if setting is True else Path(setting))
        except RuntimeError:  # no home folder to put it in
            return None

    def key(self, file: Path, shown: str, root: Path, own: str) -> str:
        """An entry's key: what the loader's result depends on besides the other files read (in the header)."""
        # Bundling keeps or sets aside each pattern by what this jsonschema-rs compiles and this Python's `re` reads.
        engines = (version("pyyaml"), version("jsonschema-rs"), sys.version.split()[0])  # PyYAML's: not imported
        parts = (str(spec_json.FORMAT), __version__, *engines, str(file), shown, str(root), own)
        return digest("\0".join(parts).encode("utf-8", "surrogatepass"))

    def entry(self, key: str) -> Path:
        return self.folder / f"{_PREFIX}{key}{_SUFFIX}"

    def get(self, file: Path, shown: str, root: Path) -> Spec | None:
        """The cached Spec of `file` (resolved) read as `shown` with $refs under `root`, or None (a miss)."""
        try:
            if file.stat().st_size < MIN_CACHED:
                return None
            key = self.key(file, shown, root, digest(file.read_bytes()))
            raw = self.entry(key).read_bytes()
            end = raw.find(b"\n")
            header, payload = orjson.loads(raw[:end]), memoryview(raw)[end + 1:]  # a view: no second copy of a big entry
            if header.get("format") != spec_json.FORMAT or header.get("key") != key or header.get("payload") != digest(payload):
                return None
            for name, seen in header["files"]:
                if digest(Path(name).read_bytes()) != seen:  # a $ref'd file changed (or is gone: OSError)
                    return None
            spec = spec_json.decode(orjson.loads(payload))
            del payload  # the view, before `raw` goes
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError):
            return None  # orjson.JSONDecodeError and spec_json.Corrupt are ValueErrors
        with contextlib.suppress(OSError):
            os.utime(self.entry(key))  # used now: pruned last
        return spec

    def keeps(self, file: Path) -> bool:
        """Whether the spec of `file` is kept once loaded (big enough to be worth it)."""
        try:
            return file.stat().st_size >= MIN_CACHED
        except OSError:
            return False

    def put(self, file: Path, shown: str, root: Path, spec: Spec, digests: dict[str, str]) -> None:
        """Keep `spec`, read from the files in `digests` (path -> digest, `file` among them), if it is big enough."""
        own = digests.get(str(file))
        if own is None or file.stat().st_size < MIN_CACHED:
            return
        payload = _payload(spec_json.encode(spec))
        if payload is None:
            return
        key = self.key(file, shown, root, own)
        files = [[name, seen] for name, seen in digests.items() if name != str(file)]
        head = orjson.dumps({"format": spec_json.FORMAT, "key": key, "files": files, "payload": digest(payload)})
        try:
            self.write(self.entry(key), head + b"\n", payload)
            self.prune()
        except OSError as exc:
            log.warning("plantstub: spec cache %s: cannot write (%s); the spec will be loaded again next time"
                        " (--spec-cache DIR moves the cache, --spec-cache off turns it off)", self.folder,
                        exc.strerror or exc)

    def write(self, entry: Path, *data: bytes) -> None:
        """Write `entry` (the pieces of `data` one after the other) whole or not at all: a temporary file beside it,
        renamed over it."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=self.folder, prefix=f".{_PREFIX}", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as out:
                out.writelines(data)
            os.replace(temp, entry)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise

    def prune(self) -> None:
        """Keep the MAX_ENTRIES entries used last, within MAX_BYTES; drop temporary files left by a crash."""
        found: list[tuple[float, int, Path]] = []
        for path in self.folder.iterdir():
            try:
                stat = path.stat()
            except OSError:
                continue  # removed meanwhile by another process
            if path.name.startswith(f".{_PREFIX}") and path.name.endswith(".tmp"):
                if time.time() - stat.st_mtime > _STALE_TEMP:
                    path.unlink(missing_ok=True)
            elif path.name.startswith(_PREFIX) and path.name.endswith(_SUFFIX):
                found.append((stat.st_mtime, stat.st_size, path))
        total = 0
        for kept, (_, size, path) in enumerate(sorted(found, reverse=True)):
            total += size
            if kept >= MAX_ENTRIES or total > MAX_BYTES:
                path.unlink(missing_ok=True)



# The payload's writer: the standard library's C encoder refuses NaN and infinities, which orjson writes as null
# (checking instead that the whole payload read back the same held a second copy of a big spec at the peak of its
# start). ASCII: one byte a character whatever the spec's prose holds, and no second encoding pass.
_ENCODER = json.JSONEncoder(ensure_ascii=True, check_circular=False, allow_nan=False, separators=(",", ":"))
# A run of 19 digits or more where a number may start: orjson, the reader, reads an integer outside the 64-bit
# range (signed or not) as a float. (Such a run inside a string only costs the cache entry.)
_LONG_INTEGER = re.compile(rb"[:,\[](-?[0-9]{19,})")
_READ_EXACTLY = range(-(2**63), 2**64)


def _payload(data: dict[str, object]) -> bytes | None:
    """`data` as an entry's JSON, or None when it might not read back the same: NaN or an infinity, an integer
    orjson reads as a float. (Keys are text: the loader makes every key of a document text, as spec_json does.)"""
    try:
        payload = _ENCODER.encode(data).encode("ascii")
    except (TypeError, ValueError):
        return None
    if any(int(found[1]) not in _READ_EXACTLY for found in _LONG_INTEGER.finditer(payload)):
        return None
    return payload
