"""Sweep real-world OpenAPI documents: does `plantstub serve --spec DOC` start, and answer as the spec means?

Run by hand (pytest does not collect it), one document at a time:

    .venv/bin/python tests/benchmarks/sweep.py --list /work/sweep-corpus/sample.txt --out before.json
    .venv/bin/python tests/benchmarks/sweep.py --list /work/sweep-corpus/big.txt --start-timeout 120 --out big.json
    .venv/bin/python tests/benchmarks/sweep.py --compare before.json after.json

Each document: `PYTHON -m plantstub serve --spec DOC --port 0` from an empty folder; started (the
`listening on` line within --start-timeout), refused (exit with a `plantstub:` message and no
traceback), crashed (a traceback or a signal) or hung (no line in time). For a started one, up to
--operations operations (evenly spread over the sorted list) get one request each, built by
`sweep_http.py` from the spec alone and believed valid, and each answer is: server error (5xx),
wrongful 4xx (any 4xx: the request was believed valid; its message is kept), undeclared status,
(an operation that declares no 2xx and no default is judged by the declared status it answers instead),
invalid 2xx body (breaks the declared schema), no answer (timeout or reset), or ok. Operations for
which no request can be built are counted as "not built" with the reason.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from sweep_http import build_request, judge
from sweep_oas import Document, NoValue

START_CLASSES = ("started", "refused", "crashed", "hung")
CALL_CLASSES = ("ok", "server error", "invalid 2xx body", "undeclared status", "wrongful 4xx", "no answer",
                "not built")
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER.add_handler(_NoRedirect())


def peak_rss_mib(pid: int) -> float | None:
    """The process's resident-memory high-water mark (VmHWM), in MiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


class Served:
    """One `plantstub serve` subprocess and what it printed."""

    def __init__(self, python: str, doc: Path, cwd: str, extra: tuple[str, ...] = ()) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PLANTSTUB_")}
        self.began = time.monotonic()
        self.proc = subprocess.Popen([python, "-m", "plantstub", "serve", "--spec", str(doc), "--port", "0", *extra],
                                     cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.out: list[str] = []
        self.err: list[str] = []
        for stream, sink in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=self._drain, args=(stream, sink), daemon=True).start()

    @staticmethod
    def _drain(stream: Any, sink: list[str]) -> None:
        for line in iter(stream.readline, b""):
            if len("".join(sink)) < 200_000:
                sink.append(line.decode("utf-8", "replace"))

    def wait_listening(self, timeout: float) -> tuple[str, str]:
        """(class, url or detail) once the server listens, exits, or the timeout passes."""
        while time.monotonic() - self.began < timeout:
            for line in list(self.out):
                found = re.search(r"listening on (http://\S+)", line)
                if found:
                    return "started", found.group(1).rstrip("/")
            code = self.proc.poll()
            if code is not None:
                time.sleep(0.2)  # let the reader threads take the last lines
                return self.exit_class(code)
            time.sleep(0.02)
        return "hung", f"no 'listening on' line within {timeout:.0f} s"

    def exit_class(self, code: int) -> tuple[str, str]:
        err = "".join(self.err)
        last = [line.strip() for line in err.splitlines() if line.strip()]
        if code < 0:
            return "crashed", f"signal {-code}: {' | '.join(last[-2:])[:400]}"
        if "Traceback (most recent call last)" in err:
            return "crashed", (last[-1] if last else "")[:400]
        said = [line for line in last if line.startswith("plantstub:")]
        if code != 0 and said:
            return "refused", said[-1][:600]
        return "crashed", f"exit {code} without listening: {' | '.join(last[-2:])[:400]}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def send(url: str, req: dict, timeout: float) -> tuple[int, str, bytes]:
    request = urllib.request.Request(url + req["target"], data=req["body"], headers=req["headers"],
                                     method=req["method"])
    try:
        with _OPENER.open(request, timeout=timeout) as answer:
            return answer.status, answer.headers.get("Content-Type", ""), answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read()


def pick(items: list, n: int) -> list:
    """`n` items evenly spread over `items` (all of them when there are fewer)."""
    if len(items) <= n:
        return items
    return [items[i * len(items) // n] for i in range(n)]


def sweep_operations(doc: Document, url: str, name: str, n: int, timeout: float) -> list[dict]:
    out = []
    for method, path, op, uri, ptr, common in pick(doc.operations(), n):
        row: dict[str, Any] = {"document": name, "operation": f"{method.upper()} {path}"}
        doc.unchecked.clear()
        try:
            req = build_request(doc, method, path, op, uri, ptr, common)
        except (NoValue, UnicodeEncodeError, RecursionError, KeyError, TypeError, ValueError, AttributeError) as exc:
            out.append({**row, "class": "not built", "detail": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        row["request"] = {"target": req["target"][:300], "headers": req["headers"],
                          "body": (req["body"] or b"")[:300].decode("utf-8", "replace")}
        began = time.monotonic()
        try:
            status, ctype, body = send(url, req, timeout)
        except (OSError, urllib.error.URLError, ValueError) as exc:
            out.append({**row, "class": "no answer", "detail": f"{type(exc).__name__}: {exc}"[:300],
                        "ms": round((time.monotonic() - began) * 1000, 1)})
            continue
        row["ms"] = round((time.monotonic() - began) * 1000, 1)
        try:
            kind, detail = judge(doc, method, op, uri, ptr, status, ctype, body)
        except (NoValue, RecursionError, KeyError, TypeError, ValueError, AttributeError) as exc:
            kind, detail = "ok", f"answer not checked: {type(exc).__name__}: {exc}"[:300]
        if doc.unchecked:
            row["unchecked"] = sorted(set(doc.unchecked))[:3]
        out.append({**row, "class": kind, "status": status, "detail": detail})
    return out


def sweep_document(python: str, path: Path, name: str, args: argparse.Namespace) -> tuple[dict, list[dict]]:
    with tempfile.TemporaryDirectory(prefix="sweep-") as cwd:
        parts = Path(name).parts
        # --spec-root-repo: a document of a whole repository's tree may refer to any file of that repository.
        root = ("--spec-root", str(path.parents[len(parts) - 3])) if args.spec_root_repo and parts[0] == "trees" else ()
        served = Served(python, path, cwd, root)
        try:
            kind, detail = served.wait_listening(args.start_timeout)
            row: dict[str, Any] = {"document": name, "class": kind, "start_s": round(time.monotonic() - served.began, 2),
                                   "detail": "" if kind == "started" else detail}
            calls: list[dict] = []
            if kind == "started":
                try:
                    doc = Document(path)
                    row["operations"] = len(doc.operations())
                    calls = sweep_operations(doc, detail, name, args.operations, args.request_timeout)
                except Exception as exc:  # the sweep's own reader failed: say so, keep sweeping
                    row["reader_error"] = f"{type(exc).__name__}: {exc}"[:300]
                if served.proc.poll() is not None:
                    row["class"], row["detail"] = "crashed", "died while serving: " + served.exit_class(served.proc.returncode)[1]
            row["rss_mib"] = peak_rss_mib(served.proc.pid)
        finally:
            served.stop()
        err = "".join(served.err)
        if kind == "started" and "Traceback" in err:
            row["log_traceback"] = [line for line in err.splitlines() if line.strip()][-1][:300]
    return row, calls


def summarize(result: dict) -> str:
    docs, calls = result["documents"], result["calls"]
    dc = Counter(d["class"] for d in docs)
    cc = Counter(c["class"] for c in calls)
    lines = [f"documents: {len(docs)}  " + ", ".join(f"{k} {dc[k]}" for k in START_CLASSES),
             f"operations swept: {len(calls)}  " + ", ".join(f"{k} {cc[k]}" for k in CALL_CLASSES)]
    started = [d for d in docs if d["class"] == "started" or "operations" in d]
    if started:
        lines.append(f"operations in started documents: {sum(d.get('operations', 0) for d in started)};"
                     f" started documents without any: {sum(1 for d in started if not d.get('operations'))}")
        times = [d["start_s"] for d in started]
        slow = max(started, key=lambda d: d["start_s"])
        lines.append(f"start: median {statistics.median(times):.2f} s, max {slow['start_s']:.2f} s ({slow['document']})")
        rss = [d for d in started if d.get("rss_mib")]
        if rss:
            top = max(rss, key=lambda d: d["rss_mib"])
            lines.append(f"peak RSS: median {statistics.median(d['rss_mib'] for d in rss):.0f} MiB,"
                         f" max {top['rss_mib']:.0f} MiB ({top['document']})")
    timed = [c for c in calls if "ms" in c]
    if timed:
        top = max(timed, key=lambda c: c["ms"])
        lines.append(f"first call per operation: median {statistics.median(c['ms'] for c in timed):.0f} ms,"
                     f" max {top['ms']:.0f} ms ({top['document']} {top['operation']})")
    unchecked = sum(1 for c in calls if c.get("unchecked"))
    if unchecked:
        lines.append(f"calls with a value or answer the sweep could not check (counted ok or believed valid): {unchecked}")
    traced = sum(1 for d in docs if d.get("log_traceback"))
    if traced:
        lines.append(f"documents with a traceback in the server's log: {traced}")
    lines.append(f"elapsed: {result['meta']['elapsed_s']:.0f} s")
    return "\n".join(lines)


def key_of(row: dict) -> str:
    return f"{row['document']} :: {row.get('operation', '(start)')}"


def compare(old_file: str, new_file: str) -> str:
    old, new = json.loads(Path(old_file).read_text()), json.loads(Path(new_file).read_text())
    lines = [f"old ({old_file}):", summarize(old), "", f"new ({new_file}):", summarize(new), "",
             f"{'class':20} {'old':>6} {'new':>6}"]
    for group, classes in (("documents", START_CLASSES), ("calls", CALL_CLASSES)):
        was, now = Counter(r["class"] for r in old[group]), Counter(r["class"] for r in new[group])
        lines += [f"{name:20} {was[name]:6} {now[name]:6}" for name in classes]
    lines += ["", "changed:"]
    before = {key_of(r): r for r in old["documents"] + old["calls"]}
    after = {key_of(r): r for r in new["documents"] + new["calls"]}
    for key in sorted(before.keys() | after.keys()):
        a, b = before.get(key), after.get(key)
        was, now = (a or {}).get("class", "(absent)"), (b or {}).get("class", "(absent)")
        if was != now:
            lines.append(f"  {key}: {was} -> {now}  {(b or a or {}).get('detail', '')[:200]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", default="/work/sweep-corpus/sample.txt", help="documents, one per line (relative to --corpus)")
    ap.add_argument("--corpus", help="folder the list's names are in (default: the list's folder)")
    ap.add_argument("--python", default=sys.executable, help="the Python whose plantstub is swept (default: this one)")
    ap.add_argument("--out", default="sweep.json", help="every result as JSON")
    ap.add_argument("--operations", type=int, default=10, help="operations swept per document")
    ap.add_argument("--start-timeout", type=float, default=60.0)
    ap.add_argument("--request-timeout", type=float, default=10.0)
    ap.add_argument("--limit", type=int, default=0, help="only the first N documents of the list")
    ap.add_argument("--spec-root-repo", action="store_true",
                    help="serve a document under trees/REPO/ with --spec-root trees/REPO (a plantstub that has it)")
    ap.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"), help="print what changed between two runs")
    args = ap.parse_args(argv)
    if args.compare:
        print(compare(*args.compare))
        return 0
    listing = Path(args.list)
    corpus = Path(args.corpus) if args.corpus else listing.parent
    names = [n.strip() for n in listing.read_text().splitlines() if n.strip() and not n.startswith("#")]
    if args.limit:
        names = names[: args.limit]
    began = time.monotonic()
    docs: list[dict] = []
    calls: list[dict] = []
    for i, name in enumerate(names, 1):
        row, found = sweep_document(args.python, corpus / name, name, args)
        docs.append(row)
        calls.extend(found)
        bad = Counter(c["class"] for c in found if c["class"] != "ok")
        print(f"[{i}/{len(names)}] {row['class']:8} {row['start_s']:6.2f} s {name}  {dict(bad) or ''}"
              f"{'  ' + row['detail'][:120] if row['detail'] else ''}", flush=True)
    where = subprocess.run([args.python, "-c", "import plantstub; print(plantstub.__version__, plantstub.__file__)"],
                           capture_output=True, text=True).stdout.split()
    version, commit = (where[0] if where else ""), ""
    with contextlib.suppress(OSError, subprocess.SubprocessError, IndexError):
        commit = subprocess.run(["git", "-C", str(Path(where[1]).parent), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
    result = {"meta": {"list": str(listing), "python": args.python, "plantstub": version, "commit": commit,
                       "operations": args.operations, "elapsed_s": round(time.monotonic() - began, 1)},
              "documents": docs, "calls": calls}
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(summarize(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
