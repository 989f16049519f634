"""Sweep `plantstub serve --stateful` on real-world documents: does every answer of the store keep its declared
response, and can every created record be read back?

Run by hand (pytest does not collect it), one document at a time:

    .venv/bin/python tests/benchmarks/sweep_stateful.py --out stateful.json         # the manifest but big.txt
    .venv/bin/python tests/benchmarks/sweep_stateful.py --list /work/sweep-corpus/sample.txt --limit 50
    .venv/bin/python tests/benchmarks/sweep_stateful.py --compare before.json after.json

A document is served only when it has a collection/item pair as docs/store.md defines one: a collection path
P (not ending in a parameter) with POST, and the item path P/{param} (one parameter segment) with GET. Each
document gets `PYTHON -m plantstub serve --stateful --spec DOC --port 0` from an empty folder, and each pair,
in order: a POST of a body `sweep_http.py` believes valid; a GET of the item under the created key (the
answer's key field, else the request's); a GET of the collection (if declared); PUT, PATCH, DELETE of the item
(those declared). Every answer is judged as `sweep.py` judges one (status, body schema with jsonschema and the
document's `$ref`s); the read must also agree with the create: each field sent comes back equal where the read
answer declares it, and each field both answers show is equal. Failures are classified (see CLASSES).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sweep import Served, peak_rss_mib, send
from sweep_http import build_request, json_like, judge
from sweep_oas import Document, NoValue, esc, mapping

CLASSES = ("invalid create answer", "cannot read back", "invalid read answer", "disagreeing read",
           "invalid list answer (array)", "invalid list answer (object-wrapped)", "invalid update answer",
           "invalid delete answer", "wrongful 4xx/5xx", "no answer", "create not built")
NOTES = ("create declares no 2xx", "key unknown", "step not built")  # not failures: counted, not judged
_BUILD_ERRORS = (NoValue, UnicodeEncodeError, RecursionError, KeyError, TypeError, ValueError, AttributeError)


def pairs_of(doc: Document) -> list[tuple[str, str, str, dict]]:
    """(collection, item, parameter, {method: (op, uri, ptr, common)}) per pair, as docs/store.md counts them."""
    by_path: dict[str, dict[str, tuple]] = {}
    for method, path, op, uri, ptr, common in doc.operations():
        by_path.setdefault(path, {})[method] = (op, uri, ptr, common)
    out = []
    for path in by_path:
        base = path.rstrip("/")
        if "post" not in by_path[path] or base.rsplit("/", 1)[-1].startswith("{"):
            continue
        items = [p for p in by_path if p.startswith(base + "/{") and p.endswith("}") and p.count("/") == base.count("/") + 1
                 and p.count("{") == path.count("{") + 1]
        if items and "get" in by_path[items[0]]:
            ops = {**{f"collection {m}": v for m, v in by_path[path].items()}, **by_path[items[0]]}
            out.append((path, items[0], items[0].rsplit("{", 1)[1][:-1], ops))
    return out


def unwrapped(value: Any, sent: Any) -> Any:
    """A record out of a one-property wrapper (`{"user": {...}}`) whose name the request did not send, or sent as
    the same wrapper (PagerDuty's `{"addon": {...}}`)."""
    if isinstance(value, dict) and len(value) == 1:
        (name, inner), = value.items()
        if isinstance(inner, dict) and not (isinstance(sent, dict) and name in sent and not isinstance(sent[name], dict)):
            return inner
    return value


def enveloped(answer: Any, sent: Any) -> tuple[Any, Any]:
    """(answer, sent) out of the one-property envelope both have (PagerDuty's `{"addon": {...}}`), else as they are."""
    if isinstance(sent, dict) and len(sent) == 1 and isinstance(answer, dict):
        (name, inner), = sent.items()
        if isinstance(inner, dict) and isinstance(answer.get(name), dict) and len(answer) == 1:
            return answer[name], inner
    return answer, sent


def batched(answer: Any, sent: Any) -> tuple[Any, Any]:
    """(answer, sent) as the first record of the array both send them in (Xero's `{"Contacts": [{...}]}`, or a bare
    `[{...}]` answered in an object's one array of objects), else as they are."""
    rows = sent if isinstance(sent, list) else None
    # a body of one array property only: a record's own array field (`formElements`) is no batch
    names = [n for n, v in sent.items() if isinstance(v, list)] if isinstance(sent, dict) and len(sent) == 1 else []
    if rows is None and len(names) == 1:
        rows = sent[names[0]]
    if not isinstance(answer, dict) or not rows or not isinstance(rows[0], dict):
        return answer, sent
    held = [v for n, v in answer.items() if isinstance(v, list) and v and isinstance(v[0], dict)
            and (len(names) != 1 or n == names[0])]
    return (held[0][0], rows[0]) if len(held) == 1 else (answer, sent)


def holder(answer: Any, key: str) -> Any:
    """The record in the one object property that holds its key (apideck's `{"status", "operation", "data": {...}}`)
    where the answer itself has no key field; else the answer."""
    if isinstance(answer, dict) and key not in answer and "id" not in answer:
        held = [v for v in answer.values() if isinstance(v, dict) and (key in v or "id" in v)]
        if len(held) == 1:
            return held[0]
    return answer


def declared_props(doc: Document, node: Any, uri: str, ptr: str, depth: int = 0) -> set[str] | None:
    """The property names an answer schema declares (allOf folded in, not writeOnly); None: any."""
    try:
        node, uri, ptr = doc.deref(node, uri, ptr)
    except NoValue:
        return None
    if not isinstance(node, dict) or depth > 8:
        return None
    props = {k for k, v in mapping(node, "properties").items() if not (isinstance(v, dict) and v.get("writeOnly"))}
    found = bool(props)
    for i, part in enumerate(node.get("allOf") or []):
        more = declared_props(doc, part, uri, f"{ptr}/allOf/{i}", depth + 1)
        if more is not None:
            props |= more
            found = True
    return props if found else None


def answer_schema(doc: Document, op: dict, uri: str, ptr: str, status: int) -> tuple[Any, str, str] | None:
    responses = mapping(op, "responses")
    key = next((k for k in (str(status), f"{status // 100}XX", f"{status // 100}xx", "default") if k in responses), None)
    if key is None:
        return None
    resp, ruri, rptr = doc.deref(responses[key], uri, f"{ptr}/responses/{esc(key)}")
    content = mapping(resp, "content")
    media = next((m for m in content if json_like(m)), None)
    if media is None or "schema" not in mapping(content, media):
        return None
    return content[media]["schema"], ruri, f"{rptr}/content/{esc(media)}/schema"


def list_kind(doc: Document, op: dict, uri: str, ptr: str) -> str:
    """"array" or "object-wrapped": what the list operation's lowest 2xx declares."""
    codes = sorted(str(k) for k in mapping(op, "responses") if str(k).startswith("2"))
    found = answer_schema(doc, op, uri, ptr, int(codes[0][:3].replace("X", "0"))) if codes else None
    if found is None:
        return "array"
    node, _, _ = doc.deref(*found)
    return "array" if isinstance(node, dict) and (node.get("type") == "array" or "items" in node) else "object-wrapped"


def disagreement(doc: Document, op: dict, uri: str, ptr: str, status: int, sent: Any, created: Any, read: Any,
                 key: str) -> str | None:
    """Why the read record disagrees with the create (a field sent, or one both answers show); None if it agrees."""
    found = answer_schema(doc, op, uri, ptr, status)
    schema = doc.deref(*found)[0] if found else None
    if isinstance(schema, dict) and len(mapping(schema, "properties")) == 1 and found is not None:
        (name, sub), = mapping(schema, "properties").items()
        props = declared_props(doc, sub, found[1], f"{found[2]}/properties/{esc(name)}")
    else:
        props = declared_props(doc, *found) if found else None
    batch = batched(read, sent)
    if batch[0] is not read and batch[1] is not sent:  # the records in an array: the read's first against the first sent and created
        found = props = None
        read, sent, created = batch[0], batch[1], batched(created, sent)[0]
    record = unwrapped(read, sent)
    sent = enveloped(read, sent)[1]
    if not isinstance(record, dict):
        return None

    def same(a: Any, b: Any, name: str) -> bool:
        return bool(a == b or (name == key and str(a) == str(b)))

    def takes(name: str, value: Any) -> bool:
        """Whether the read answer would stay valid with the field as sent (else it cannot come back as sent)."""
        if found is None:
            return True
        body = {**record, name: value}
        body = {next(iter(read)): body} if record is not read else body
        return doc.errors(body, found[1], found[2], "response") is None

    for name, value in (sent.items() if isinstance(sent, dict) else []):
        if not takes(name, value):
            continue
        if name in record and not same(record[name], value, name):
            return f"{name}: sent {json.dumps(value)[:80]}, read {json.dumps(record[name])[:80]}"
        if name not in record and props is not None and name in props:
            return f"{name}: sent {json.dumps(value)[:80]}, the read answer declares it and lacks it"
    made = unwrapped(created, sent)
    if holder(read, key) is not read:  # both answers' envelopes (`status`, `operation`) may differ: the records
        record, made = holder(read, key), holder(created, key)
    for name, value in (made.items() if isinstance(made, dict) else []):
        if name in record and not same(record[name], value, name) and not (isinstance(sent, dict) and name in sent):
            return f"{name}: created {json.dumps(value)[:80]}, read {json.dumps(record[name])[:80]}"
    return None


def created_key(answer: Any, sent: Any, param: str) -> Any:
    """The key a client reads from the create: the field named as the parameter, else `id`, else one whose name
    ends the parameter's (Asana's `gid` for `allocation_gid`, Twilio's `sid` for `Sid`), in the answer first."""
    batch = batched(answer, sent)
    # records sent in an array: the first one's key (else as a record was sent)
    for pair in ([batch] if batch[1] is not sent else []) + [(answer, sent)]:
        found = _created_key(*enveloped(*pair), param)
        if found is not None:
            return found
    return None


def _created_key(answer: Any, sent: Any, param: str) -> Any:
    inner = [v for v in answer.values() if isinstance(v, dict)] if isinstance(answer, dict) else []
    for source in (answer, unwrapped(answer, sent), sent, *inner):  # then a property holding it (`{"data", "links"}`)
        if isinstance(source, dict):
            tail = [n for n in source if isinstance(n, str) and len(n) > 1 and param.lower().endswith(n.lower())]
            for name in (param, "id", *tail):
                if isinstance(source.get(name), str | int) and not isinstance(source.get(name), bool):
                    return source[name]
    return None


class PairRun:
    """The steps of one pair against one served document, each answer judged and classified."""

    def __init__(self, doc: Document, url: str, name: str, pair: tuple, timeout: float) -> None:
        self.doc, self.url, self.timeout = doc, url, timeout
        self.collection, self.item, self.param, self.ops = pair
        self.rows: list[dict] = []
        self.base = {"document": name, "pair": f"{self.collection} {self.item}"}

    def add(self, step: str, kind: str, detail: str = "", status: int | None = None) -> None:
        self.rows.append({**self.base, "step": step, "class": kind, "status": status, "detail": detail[:300]})

    def call(self, method: str, path: str, target: str | None, bad: str) -> tuple[str, int, Any, Any] | None:
        """Build, send and judge one step; (class, status, sent body, answer body) or None when not built/sent."""
        op, uri, ptr, common = self.ops[method if target is not None else f"collection {method}"]
        try:
            req = build_request(self.doc, method, path, op, uri, ptr, common)
        except _BUILD_ERRORS as exc:
            self.add(f"{method.upper()} {path}", "create not built" if method == "post" else "step not built",
                     f"{type(exc).__name__}: {exc}")
            return None
        if target is not None:
            req["target"] = target + ("?" + req["target"].split("?", 1)[1] if "?" in req["target"] else "")
        step = f"{req['method']} {path}"
        try:
            status, ctype, body = send(self.url, req, self.timeout)
        except Exception as exc:  # a timeout, a broken connection
            self.add(step, "no answer", f"{type(exc).__name__}: {exc}")
            return None
        try:
            kind, detail = judge(self.doc, method, op, uri, ptr, status, ctype, body)
        except _BUILD_ERRORS as exc:
            kind, detail = "ok", f"answer not checked: {type(exc).__name__}: {exc}"
        kind = {"ok": "ok", "server error": "wrongful 4xx/5xx", "wrongful 4xx": "wrongful 4xx/5xx"}.get(kind, bad)
        self.add(step, kind, detail, status)
        sent = answer = None
        with contextlib.suppress(ValueError, TypeError):
            sent = json.loads(req["body"]) if req["body"] else None
        with contextlib.suppress(ValueError):
            answer = json.loads(body) if body else None
        return kind, status, sent, answer

    def run(self) -> None:
        created = self.call("post", self.collection, None, "invalid create answer")
        if created is None:
            return
        kind, status, sent, answer = created
        if not 200 <= status < 300:
            if kind == "ok":
                self.add("POST", "create declares no 2xx", "", status)
            return
        key = created_key(answer, sent, self.param)
        if key is None:
            self.add("POST", "key unknown", f"neither the answer nor the request holds the key: "
                                            f"{json.dumps(answer)[:150]}", status)
            return
        # The collection's concrete path is the POST's; the item is it plus the key.
        op, uri, ptr, common = self.ops["collection post"]
        prefix = build_request(self.doc, "post", self.collection, op, uri, ptr, common)["target"].split("?")[0]
        target = prefix.rstrip("/") + "/" + quote(str(key), safe="")
        read = self.call("get", self.item, target, "invalid read answer")
        if read is not None and read[0] == "wrongful 4xx/5xx" and 400 <= read[1] < 500:
            self.rows[-1]["class"] = "cannot read back"
        elif read is not None and read[0] == "ok" and 200 <= read[1] < 300:
            get = self.ops["get"]
            why = disagreement(self.doc, get[0], get[1], get[2], read[1], sent, answer, read[3], self.param)
            if why:
                self.add(f"GET {self.item}", "disagreeing read", why, read[1])
        if "collection get" in self.ops:
            op, uri, ptr, _ = self.ops["collection get"]
            self.call("get", self.collection, None, f"invalid list answer ({list_kind(self.doc, op, uri, ptr)})")
        for method in ("put", "patch", "delete"):
            if method in self.ops:
                self.call(method, self.item, target, "invalid delete answer" if method == "delete" else "invalid update answer")


def sweep_document(args: argparse.Namespace, path: Path, name: str) -> tuple[dict, list[dict]]:
    row: dict[str, Any] = {"document": name}
    try:
        doc = Document(path)
        pairs = pairs_of(doc)
    except Exception as exc:  # the sweep's own reader failed
        return {**row, "class": "not read", "detail": f"{type(exc).__name__}: {exc}"[:300]}, []
    row["pairs"] = len(pairs)
    if not pairs:
        return {**row, "class": "no pair"}, []
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="sweep-") as cwd:
        parts = Path(name).parts
        # --spec-root-repo: a document of a whole repository's tree may refer to any file of that repository.
        root = ("--spec-root", str(path.parents[len(parts) - 3])) if args.spec_root_repo and parts[0] == "trees" else ()
        served = Served(args.python, path, cwd, ("--stateful", *root))
        try:
            kind, detail = served.wait_listening(args.start_timeout)
            row.update({"class": kind, "detail": "" if kind == "started" else detail})
            began = time.monotonic()
            for pair in pairs[: args.pairs] if kind == "started" else []:
                if time.monotonic() - began > args.doc_timeout:
                    row["timed_out"] = True
                    break
                row["swept"] = row.get("swept", 0) + 1
                run = PairRun(doc, detail, name, pair, args.request_timeout)
                try:
                    run.run()
                except Exception as exc:  # the sweep's own fault: kept, not counted against plantstub
                    row.setdefault("sweep_errors", []).append(f"{pair[0]}: {type(exc).__name__}: {exc}"[:200])
                rows.extend(run.rows)
            row["rss_mib"] = peak_rss_mib(served.proc.pid)
            if kind == "started" and served.proc.poll() is not None:
                row["class"] = "crashed"
        finally:
            served.stop()
        if "Traceback" in "".join(served.err):
            row["log_traceback"] = [x for x in "".join(served.err).splitlines() if x.strip()][-1][:300]
    return row, rows


def summarize(result: dict) -> str:
    docs, rows = result["documents"], result["calls"]
    served = [d for d in docs if d.get("pairs")]
    failures = [r for r in rows if r["class"] in CLASSES]
    counted = Counter(r["class"] for r in rows)
    lines = [f"documents: {len(docs)}; with a pair: {len(served)} ("
             + ", ".join(f"{k} {v}" for k, v in Counter(d['class'] for d in served).items()) + ")",
             f"pairs: {sum(d['pairs'] for d in served)} (swept {sum(d.get('swept', 0) for d in served)}); answers checked: "
             f"{sum(1 for r in rows if r.get('status') is not None)}; failures: {len(failures)} in "
             f"{len({r['document'] for r in failures})} documents, {len({(r['document'], r['pair']) for r in failures})} pairs",
             "notes: " + ", ".join(f"{k} {counted[k]}" for k in NOTES)]
    for name in CLASSES:
        these = [r for r in rows if r["class"] == name]
        lines.append(f"{name}: {len(these)} ({len({r['document'] for r in these})} documents)")
        lines += [f"    {r['document']} {r['step']} -> {r['status']}: {r['detail'][:200]}" for r in these[:3]]
    for label, key in (("timed out", "timed_out"), ("sweep errors", "sweep_errors"), ("tracebacks", "log_traceback")):
        if any(d.get(key) for d in docs):
            lines.append(f"documents with {label}: {sum(1 for d in docs if d.get(key))}")
    lines.append(f"elapsed: {result['meta']['elapsed_s']:.0f} s")
    return "\n".join(lines)


def compare(old_file: str, new_file: str) -> str:
    old, new = json.loads(Path(old_file).read_text()), json.loads(Path(new_file).read_text())
    lines = [f"old ({old_file}):", summarize(old), "", f"new ({new_file}):", summarize(new), "",
             f"{'class':40} {'old':>6} {'new':>6}"]
    was, now = Counter(r["class"] for r in old["calls"]), Counter(r["class"] for r in new["calls"])
    lines += [f"{name:40} {was[name]:6} {now[name]:6}" for name in ("ok", *CLASSES, *NOTES)]
    lines += ["", "changed:"]

    def keyed(rows: list[dict]) -> dict[str, str]:
        return {f"{r['document']} :: {r['pair']} :: {r['step']}": r["class"] for r in rows}

    before, after = keyed(old["calls"]), keyed(new["calls"])
    lines += [f"  {k}: {before.get(k, '(absent)')} -> {after.get(k, '(absent)')}" for k in sorted(before.keys() | after.keys())
              if before.get(k) != after.get(k)]
    return "\n".join(lines)


def default_list(corpus: Path) -> list[str]:
    big = set((corpus / "big.txt").read_text().split())
    return [d["file"] for d in json.loads((corpus / "manifest.json").read_text())["documents"] if d["file"] not in big]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", help="documents, one per line (default: every document of the manifest not in big.txt)")
    ap.add_argument("--corpus", default="/work/sweep-corpus", help="folder the documents are in")
    ap.add_argument("--python", default=sys.executable, help="the Python whose plantstub is swept (default: this one)")
    ap.add_argument("--out", default="sweep_stateful.json", help="every result as JSON")
    ap.add_argument("--pairs", type=int, default=20, help="pairs swept per document at most")
    ap.add_argument("--start-timeout", type=float, default=60.0)
    ap.add_argument("--doc-timeout", type=float, default=30.0, help="seconds of requests per document at most")
    ap.add_argument("--request-timeout", type=float, default=10.0)
    ap.add_argument("--limit", type=int, default=0, help="only the first N documents of the list")
    ap.add_argument("--spec-root-repo", action="store_true",
                    help="serve a document under trees/REPO/ with --spec-root trees/REPO (a plantstub that has it)")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="print what changed between two runs")
    args = ap.parse_args(argv)
    if args.compare:
        print(compare(*args.compare))
        return 0
    corpus = Path(args.corpus)
    names = ([n.strip() for n in Path(args.list).read_text().splitlines() if n.strip() and not n.startswith("#")]
             if args.list else default_list(corpus))
    names = names[: args.limit] if args.limit else names
    began = time.monotonic()
    docs: list[dict] = []
    rows: list[dict] = []
    for i, name in enumerate(names, 1):
        row, found = sweep_document(args, corpus / name, name)
        docs.append(row)
        rows.extend(found)
        bad = Counter(r["class"] for r in found if r["class"] in CLASSES)
        if row.get("pairs"):
            print(f"[{i}/{len(names)}] {row['class']:8} {row['pairs']:3} pairs {name}  {dict(bad) or ''}", flush=True)
    result = {"meta": {"list": args.list or "manifest", "python": args.python,
                       "elapsed_s": round(time.monotonic() - began, 1)}, "documents": docs, "calls": rows}
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(summarize(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
