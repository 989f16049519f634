"""Build the sweep's corpus: public OpenAPI 3.x documents out of git mirrors, and a seeded sample.

Run by hand (pytest does not collect it); the documents stay outside the repository:

    .venv/bin/python tests/benchmarks/sweep_corpus.py                  # repos of sweep_sources.txt
    .venv/bin/python tests/benchmarks/sweep_corpus.py --git-dir /path/to/repo.git ... --seed 14 --sample 300

Each source is a bare git directory (the `owner/name` lines of `sweep_sources.txt` are looked up as
`MIRROR_ROOT/owner+name/repo`). Every `.yaml`/`.yml`/`.json` blob of its HEAD up to `--max-bytes` that
parses to a mapping with `openapi: 3.x` is a document. A self-contained one is written as
`OUT/owner__name__path` (slashes become `__`); one with relative `$ref`s to other files of the repo is
written with those files, transitively, under `OUT/trees/owner__name/path`; one whose `$ref`s leave the
repo or point at files that are absent is skipped. Copies (the same blob, or the same title, version,
paths and schema names, such as a JSON and a YAML twin) are kept once, and of the documents of one
repository that share a title (dated versions, variants) only the last in path order. Swagger 2.0
files are counted, not written.

Outputs in OUT: `manifest.json` (every document: source, path, commit, bytes, version, operations),
`sample.txt` (`--sample` documents drawn with `random.Random(--seed)` from the sorted list of the
documents that are not big, at most `--per-repo` of them from one repository), `big.txt` (the
`--big` largest documents, then for each `--merge` repository one document merged from all of its
documents: a stand-in for the 5-20 MB descriptions, which snapshots without files of 4 MiB or more lack) and `counts.txt`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import posixpath
import random
import re
import subprocess
import sys
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag

import yaml

HERE = Path(__file__).resolve().parent
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Repo:
    """A bare git directory read with one `git cat-file --batch` process."""

    def __init__(self, git_dir: Path, name: str) -> None:
        self.git_dir, self.name = git_dir, name
        self.commit = self._git("rev-parse", "HEAD").strip()
        self.blobs: dict[str, tuple[str, int]] = {}  # path -> (sha, size)
        self.absent: list[str] = []
        self.cache: dict[str, set[str] | None] = {}
        for line in self._git("ls-tree", "-r", "-l", "-z", "HEAD").split("\0"):
            if not line:
                continue
            meta, path = line.split("\t", 1)
            _, kind, sha, size = meta.split()
            if kind == "blob" and size.isdigit():  # a blob the snapshot lacks reads "BAD"
                self.blobs[path] = (sha, int(size))
            elif kind == "blob":
                self.absent.append(path)
        self.cat = subprocess.Popen(["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", "--git-dir", str(self.git_dir), *args], check=True,
                              capture_output=True).stdout.decode("utf-8", "replace")

    def read(self, path: str) -> bytes:
        assert self.cat.stdin is not None and self.cat.stdout is not None
        self.cat.stdin.write(self.blobs[path][0].encode() + b"\n")
        self.cat.stdin.flush()
        header = self.cat.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            return b""
        data = self.cat.stdout.read(int(header[2]))
        self.cat.stdout.read(1)
        return data

    def refs(self, path: str) -> set[str] | None:
        """The file `$ref`s of one file (parsed once), None when it does not parse."""
        if path not in self.cache:
            doc = parse(self.read(path), path)
            self.cache[path] = None if doc is None else file_refs(doc)
        return self.cache[path]

    def close(self) -> None:
        assert self.cat.stdin is not None
        self.cat.stdin.close()
        self.cat.wait(10)


def parse(data: bytes, path: str) -> Any:
    """The file's content, or None when it is neither JSON nor YAML."""
    try:
        text = data.decode("utf-8-sig")
        if path.endswith(".json"):
            return json.loads(text)
        return yaml.load(text, Loader=_LOADER)
    except (ValueError, yaml.YAMLError, RecursionError):
        return None


def nodes(doc: Any) -> Any:
    """Every mapping of `doc` once, shared (YAML alias) nodes included only once."""
    seen: set[int] = set()
    stack = [doc]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict | list) or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        else:
            stack.extend(node)


def file_refs(doc: Any) -> set[str]:
    """The file parts of `$ref`s that leave the document (absolute URLs included)."""
    out = set()
    for node in nodes(doc):
        ref = node.get("$ref")
        if isinstance(ref, str):
            file = urldefrag(ref)[0]
            if file:
                out.add(file)
    return out


def mapping(node: Any, key: str) -> dict:
    """`node[key]` when both are mappings, else an empty one."""
    value = node.get(key) if isinstance(node, dict) else None
    return value if isinstance(value, dict) else {}


def count_operations(doc: dict) -> int:
    paths = doc.get("paths")
    if not isinstance(paths, dict):
        return 0
    return sum(1 for item in paths.values() if isinstance(item, dict) for m in item if m in METHODS)


def signature(doc: dict) -> str:
    """Same title, version, paths and schema names: the same document (a JSON/YAML twin, a copy)."""
    info = mapping(doc, "info")
    paths, schemas = mapping(doc, "paths"), mapping(mapping(doc, "components"), "schemas")
    key = [str(doc.get("openapi")), str(info.get("title")), str(info.get("version")),
           sorted(map(str, paths)), sorted(map(str, schemas)), count_operations(doc)]
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()


_TOP_KEY = re.compile(rb'(?m)^["\']?(?:openapi|swagger)["\']?[ \t]*:|"(?:openapi|swagger)"[ \t\r\n]*:')


def closure(repo: Repo, root: str, max_bytes: int) -> set[str] | str:
    """The repo files `root` needs through relative `$ref`s, or why they cannot all be had."""
    need, todo = {root}, [root]
    while todo:
        path = todo.pop()
        refs = repo.refs(path)
        if refs is None:
            return f"{path} does not parse"
        for ref in refs:
            if "://" in ref or ref.startswith("/"):
                return f"$ref to {ref[:80]} leaves the repository"
            target = posixpath.normpath(posixpath.join(posixpath.dirname(path), unquote(ref)))
            if target not in repo.blobs or repo.blobs[target][1] > max_bytes:
                return f"$ref {ref[:80]} from {path}: not in the repository"
            if target not in need:
                need.add(target)
                todo.append(target)
    return need


def flat(repo: str, path: str) -> str:
    return f"{repo.replace('/', '__')}__{path.replace('/', '__')}"


def title_of(doc: dict) -> str:
    info = doc.get("info")
    return str(info.get("title")) if isinstance(info, dict) else ""


_TITLE = re.compile(rb'(?m)^ {1,4}["\']?title["\']?[ \t]*:[ \t]*(.+?)[ \t,]*$')


def candidates(repo: Repo, max_bytes: int, counts: Counter) -> dict[str, dict]:
    """The OpenAPI 3 documents of `repo`: path -> a partial manifest entry.

    Of the files that share a title (dated versions, variants of one API), only the last in path
    order is kept: dated folders make that the newest. A first indented `title:` line groups YAML
    files before they are parsed (parsing all of a repository's versions takes minutes).
    """
    last: dict[bytes, str] = {}
    seen = 0
    for path, (_, size) in sorted(repo.blobs.items()):
        if not path.lower().endswith((".yaml", ".yml", ".json")):
            continue
        if size > max_bytes:
            counts["skipped: larger than --max-bytes"] += 1
            continue
        data = repo.read(path)
        if not _TOP_KEY.search(data):
            continue
        seen += 1
        title = _TITLE.search(data[:16384])
        last[title.group(1) if title and title.group(1).strip(b"'\"") else path.encode()] = path
    keep = set(last.values())
    counts["skipped: an older version or variant (same title)"] += seen - len(keep)
    found: dict[str, dict] = {}
    titles: dict[str, str] = {}
    for path in sorted(keep):
        doc = parse(repo.read(path), path)
        if not isinstance(doc, dict):
            continue
        if "swagger" in doc and "openapi" not in doc:
            counts["Swagger 2.0 (not OpenAPI 3)"] += 1
            continue
        if not str(doc.get("openapi", "")).startswith("3."):
            continue
        repo.cache[path] = file_refs(doc)
        name = title_of(doc)
        if name in titles:
            counts["skipped: an older version or variant (same title)"] += 1
            del found[titles[name]]
        if name not in ("", "None"):
            titles[name] = path
        found[path] = {"bytes": repo.blobs[path][1], "openapi": str(doc["openapi"]),
                       "operations": count_operations(doc), "title": title_of(doc), "signature": signature(doc)}
    return found


def harvest(repo: Repo, out: Path, max_bytes: int, seen: set[str], counts: Counter) -> list[dict]:
    """Write the OpenAPI 3 documents of `repo` into `out`; one manifest entry each."""
    found = candidates(repo, max_bytes, counts)
    entries, blob_seen = [], set()
    for path, info in found.items():
        sha = repo.blobs[path][0]
        if sha in blob_seen or info["signature"] in seen:
            counts["skipped: a copy of another document"] += 1
            continue
        blob_seen.add(sha)
        if repo.cache[path]:
            need = closure(repo, path, max_bytes)
            if isinstance(need, str):
                counts["skipped: $ref outside the repository or missing"] += 1
                print(f"  skip {repo.name}:{path}: {need}", file=sys.stderr)
                continue
            base = out / "trees" / repo.name.replace("/", "__")
            for item in need:
                (base / item).parent.mkdir(parents=True, exist_ok=True)
                (base / item).write_bytes(repo.read(item))
            name = str((base / path).relative_to(out))
            files = sorted(str((base / item).relative_to(out)) for item in need)
            counts["OpenAPI 3 (multi-file)"] += 1
        else:
            name = flat(repo.name, path)
            (out / name).write_bytes(repo.read(path))
            files = [name]
            counts["OpenAPI 3 (one file)"] += 1
        seen.add(info["signature"])
        entries.append({"file": name, "repo": repo.name, "path": path, "commit": repo.commit, "files": files,
                        **{k: info[k] for k in ("bytes", "openapi", "operations", "title")}})
    return entries


def self_consistent(doc: dict) -> bool:
    """Every local `$ref` and every security requirement of `doc` names something it declares."""
    for node in nodes(doc):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = doc
            for part in ref[2:].split("/"):
                part = unquote(part).replace("~1", "/").replace("~0", "~")
                if not isinstance(target, dict) or part not in target:
                    return False
                target = target[part]
    schemes = mapping(mapping(doc, "components"), "securitySchemes")
    reqs = list(doc.get("security") or [])
    for item in (doc.get("paths") or {}).values():
        for op in (item.values() if isinstance(item, dict) else []):
            if isinstance(op, dict):
                reqs += op.get("security") or []
    return all(name in schemes for req in reqs if isinstance(req, dict) for name in req)


def renamed(found: re.Match, prefix: str) -> str:
    """A `"#/components/SECTION/` match with the component name prefixed (security schemes stay)."""
    return found.group(0) if found.group(1) == "securitySchemes" else f'"#/components/{found.group(1)}/{prefix}'


def merged(out: Path, entries: list[dict], repo: str) -> dict | None:
    """One big document out of the one-file, self-consistent 3.0 documents of `repo`: paths under
    `/<n>`, components prefixed `D<n>_`.

    Not a public document itself: a stand-in for the 5-20 MB descriptions (GitHub's, Stripe's, Microsoft
    Graph's) whose files are 4 MiB or more, which the snapshots lack.
    """
    parts = [e for e in entries if e["repo"] == repo and len(e["files"]) == 1]
    if not parts:
        return None
    whole: dict = {"openapi": "3.0.3", "info": {"title": f"{repo}, merged", "version": "1"}, "paths": {},
                   "components": {}}
    for n, entry in enumerate(parts):
        doc = parse((out / entry["file"]).read_bytes(), entry["file"])
        if not isinstance(doc, dict) or not str(doc.get("openapi")).startswith("3.0"):
            continue
        if not self_consistent(doc):
            continue
        prefix = f"D{n}_"
        text = json.dumps(doc)  # a copy; local component $refs renamed below
        text = re.sub(r'"#/components/(\w+)/', partial(renamed, prefix=prefix), text)
        doc = json.loads(text)
        for path, item in (doc.get("paths") or {}).items():
            whole["paths"][f"/{n}{path}"] = item
        for section, named in (doc.get("components") or {}).items():
            box = whole["components"].setdefault(section, {})
            for name, value in (named or {}).items():
                box.setdefault(name if section == "securitySchemes" else f"{prefix}{name}", value)
        if doc.get("security") and "security" not in whole:
            whole["security"] = doc["security"]
    name = f"merged__{repo.replace('/', '__')}.json"
    data = json.dumps(whole, indent=1).encode()
    (out / name).write_bytes(data)
    return {"file": name, "repo": repo, "path": "(merged)", "commit": parts[0]["commit"], "files": [name],
            "bytes": len(data), "openapi": "3.0.3", "operations": count_operations(whole), "title": f"{repo}, merged"}


def remove_previous(out: Path) -> None:
    """Remove the documents a previous run listed in `out/manifest.json` (nothing else)."""
    manifest = out / "manifest.json"
    if not manifest.exists():
        return
    previous = json.loads(manifest.read_text())
    extra = previous.get("merged") or []
    for entry in previous["documents"] + (extra if isinstance(extra, list) else [extra]):
        for item in entry.get("files", [entry["file"]]):
            (out / item).unlink(missing_ok=True)


def sources(args: argparse.Namespace) -> list[tuple[str, Path]]:
    if args.git_dir:
        return [(Path(d).resolve().parent.name.replace("+", "/"), Path(d)) for d in args.git_dir]
    out = []
    for line in Path(args.sources).read_text().splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            out.append((name, Path(args.mirror_root) / name.replace("/", "+") / "repo"))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--git-dir", nargs="*", help="bare git directories (instead of --sources)")
    ap.add_argument("--sources", default=str(HERE / "sweep_sources.txt"), help="owner/name per line")
    ap.add_argument("--mirror-root", default="/work/.mirror", help="where owner+name/repo are")
    ap.add_argument("--out", default="/work/sweep-corpus", help="corpus folder (a previous corpus is removed)")
    ap.add_argument("--max-bytes", type=int, default=50 * 2**20, help="skip larger files (default 50 MiB)")
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--sample", type=int, default=300, help="documents in sample.txt")
    ap.add_argument("--per-repo", type=int, default=40, help="at most this many sampled from one repository (0: no cap)")
    ap.add_argument("--big", type=int, default=3, help="largest documents listed in big.txt, left out of the sample")
    ap.add_argument("--merge", nargs="*", default=["twilio/twilio-oai", "HubSpot/HubSpot-public-api-spec-collection"],
                    help="also write one big document merged from each repository's documents, listed in big.txt")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    remove_previous(out)
    counts: Counter = Counter()
    seen: set[str] = set()
    entries: list[dict] = []
    per_repo: dict[str, int] = {}
    for name, git_dir in sources(args):
        if not git_dir.is_dir():
            print(f"{name}: no mirror at {git_dir}", file=sys.stderr)
            counts["sources missing"] += 1
            continue
        repo = Repo(git_dir, name)
        try:
            found = harvest(repo, out, args.max_bytes, seen, counts)
        finally:
            repo.close()
        per_repo[name] = len(found)
        entries.extend(found)
        print(f"{name}: {len(found)} documents", file=sys.stderr)
    entries.sort(key=lambda e: e["file"])
    big = sorted(entries, key=lambda e: -e["bytes"])[: args.big]
    extra = [e for e in (merged(out, entries, repo) for repo in args.merge) if e]
    rng = random.Random(args.seed)
    pool: list[str] = []
    for name in per_repo:
        mine = [e["file"] for e in entries if e["repo"] == name and e not in big]
        pool += rng.sample(mine, args.per_repo) if args.per_repo and len(mine) > args.per_repo else mine
    pool.sort()
    sample = sorted(rng.sample(pool, min(args.sample, len(pool))))
    (out / "manifest.json").write_text(json.dumps({"seed": args.seed, "documents": entries,
                                                   "merged": extra}, indent=1))
    (out / "sample.txt").write_text("".join(f"{f}\n" for f in sample))
    (out / "big.txt").write_text("".join(f"{e['file']}\n" for e in [*big, *extra]))
    lines = [f"{k}: {v}" for k, v in sorted(counts.items())]
    lines += [f"sources: {len(per_repo)}", f"documents: {len(entries)}",
              f"sample: {len(sample)} (seed {args.seed})"]
    lines += [f"  {name}: {n}" for name, n in per_repo.items()]
    lines += [f"big: {e['file']} ({e['bytes']:,} bytes, {e['operations']} operations)"
              for e in [*big, *extra]]
    (out / "counts.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
