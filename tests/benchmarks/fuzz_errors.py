"""Fuzz `plantstub serve` with schemathesis (`--checks all`) on real documents that declare JSON error bodies.

Run by hand (pytest does not collect it), one document at a time, with schemathesis in a venv of its own:

    python3 -m venv .fuzzvenv && .fuzzvenv/bin/pip install schemathesis==4.32.5
    .venv/bin/python tests/benchmarks/fuzz_errors.py --out fuzz.json                  # 20 documents x 60 s
    .venv/bin/python tests/benchmarks/fuzz_errors.py --docs 3 --seconds 20 --seed 7
    .venv/bin/python tests/benchmarks/fuzz_errors.py --only NAME.yaml --seconds 30    # one document again
    .venv/bin/python tests/benchmarks/fuzz_errors.py --summary fuzz.json              # print a past run again

Documents: single-file documents of --corpus (its manifest.json), shuffled with --seed, kept when some
operation declares a JSON error body (a 4xx, `4XX` or `default` response with an application/json or +json
schema), the first --docs of them. Each is served by `PY -m plantstub serve --spec DOC --port 0` from an
empty folder and fuzzed by `schemathesis run DOC --url URL --checks all --max-time SECONDS` (every phase:
examples, coverage, fuzzing, stateful where schemathesis finds links), with dummy credentials for the
document's security schemes (header API keys, bearer, basic). Every failed check of every answer is read
from schemathesis's NDJSON report and put in one class (see CLASSES); the summary prints counts per class and
per check, the answers and the documents, and --out keeps each failure with its operation, status and text.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from sweep import Served

CLASSES = {
    "ours: answer breaks the declared schema or status": "fix it",
    "ours: accepted what the document forbids (negative_data_rejection)": "a validator gap",
    "ours: refused what the document allows (positive_data_acceptance)": "a wrongful 4xx",
    "document: a refusal status it does not declare": "the operation declares no status for a refused "
    "request (no 4xx, 4XX or default): any refusal is undocumented",
    "document: its own example or schema is at fault": "the example breaks its schema, or no value satisfies it",
    "schemathesis: expects more than the document says": "behaviour the document does not promise",
}
OURS_SCHEMA = "ours: answer breaks the declared schema or status"
NEGATIVE = "ours: accepted what the document forbids (negative_data_rejection)"
POSITIVE = "ours: refused what the document allows (positive_data_acceptance)"
UNDECLARED_REFUSAL = "document: a refusal status it does not declare"
DOC_FAULT = "document: its own example or schema is at fault"
BEYOND = "schemathesis: expects more than the document says"
# Checks that test behaviour the document cannot state: a stateless stub keeps no resources, and it
# checks credentials' presence, not who owns what.
STATEFUL_CHECKS = frozenset(("use_after_free", "ensure_resource_availability", "object_level_authorization"))
IGNORED_HEADERS = frozenset(("accept", "content-type", "authorization"))
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def load(path: Path) -> Any:
    text = path.read_text(encoding="utf-8", errors="replace")
    return json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def deref(doc: Any, node: Any, depth: int = 0) -> Any:
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/") and depth < 20:
        target: Any = doc
        for part in node["$ref"][2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, dict) else None
        node, depth = target, depth + 1
    return node


def is_error_key(code: str) -> bool:
    return code == "default" or code.upper() == "4XX" or (len(code) == 3 and code.startswith("4") and code.isdigit())


def declares_json_error(doc: Any) -> bool:
    """Whether some operation declares a 4xx/4XX/default response with a JSON media type and a schema."""
    for item in (doc.get("paths") or {}).values():
        item = deref(doc, item)
        for method in METHODS:
            op = item.get(method) if isinstance(item, dict) else None
            responses = op.get("responses") if isinstance(op, dict) else None
            for code, response in (responses or {}).items() if isinstance(responses, dict) else ():
                response = deref(doc, response)
                if not is_error_key(str(code)) or not isinstance(response, dict):
                    continue
                for media, body in (response.get("content") or {}).items():
                    name = media.split(";")[0].strip().lower()
                    if (name == "application/json" or name.endswith("+json")) and isinstance(body, dict) and "schema" in body:
                        return True
    return False


def declared_statuses(doc: Any) -> dict[str, set[str]]:
    """Per `METHOD /path`: the response keys its operation declares."""
    out: dict[str, set[str]] = {}
    for path, item in (doc.get("paths") or {}).items():
        item = deref(doc, item)
        for method in METHODS:
            op = item.get(method) if isinstance(item, dict) else None
            if isinstance(op, dict):
                out[f"{method.upper()} {path}"] = {str(k).upper() for k in (op.get("responses") or {})}
    return out


def auth_args(doc: Any) -> list[str]:
    """schemathesis options sending dummy credentials for the document's security schemes."""
    schemes = ((doc.get("components") or {}).get("securitySchemes") or {})
    args: list[str] = []
    authorization = None
    for scheme in schemes.values():
        scheme = deref(doc, scheme)
        if not isinstance(scheme, dict):
            continue
        kind, where = scheme.get("type"), scheme.get("in")
        if kind == "apiKey" and where == "header" and isinstance(scheme.get("name"), str):
            if scheme["name"].lower() == "authorization":
                authorization = authorization or "Bearer fuzz-token"
            else:
                args += ["-H", f"{scheme['name']}: fuzz-key"]
        elif kind == "http" and str(scheme.get("scheme", "")).lower() == "basic":
            authorization = authorization or "Basic " + base64.b64encode(b"fuzz:fuzz").decode()
        elif kind in ("http", "oauth2", "openIdConnect"):
            authorization = authorization or "Bearer fuzz-token"
    if authorization:
        args += ["-H", f"Authorization: {authorization}"]
    return args


def pick_documents(corpus: Path, n: int, seed: int, big: set[str]) -> list[str]:
    manifest = json.loads((corpus / "manifest.json").read_text())
    names = sorted(d["file"] for d in manifest["documents"] if len(d.get("files", [])) <= 1 and d["file"] not in big)
    random.Random(seed).shuffle(names)
    chosen = []
    for name in names:
        try:
            if declares_json_error(load(corpus / name)):
                chosen.append(name)
        except Exception as exc:
            print(f"  skipped {name}: {type(exc).__name__}", file=sys.stderr)
        if len(chosen) >= n:
            break
    return chosen


def classify(failure: dict, op_declares: set[str]) -> str:
    """The class of one failure (see CLASSES); `op_declares` are its operation's response keys, upper-case."""
    check, status, message, body = failure["check"], failure["status"], failure["message"], failure["body"]
    if check in ("negative_data_rejection", "missing_required_header"):
        # OpenAPI: a header parameter named Accept, Content-Type or Authorization "SHALL be ignored".
        if re.search(r"(Missing|missing required) `?'?(Accept|Content-Type|Authorization)\b", message):
            return BEYOND
        left_out = re.search(r"violates `required` \(was ([^)]*)\)", message)
        if left_out and {n.strip().lower() for n in left_out.group(1).split(",")} <= IGNORED_HEADERS:
            return BEYOND
        return NEGATIVE
    if check == "positive_data_acceptance":
        # A value schemathesis took from an earlier answer (the document's own example) breaks the parameter's
        # schema: the example is at fault, and our refusal names the parameter.
        if failure["phase"] == "stateful" and '"message":"path.' in body.replace(" ", ""):
            return DOC_FAULT
        return POSITIVE
    if check in STATEFUL_CHECKS:
        return BEYOND
    if check == "ignored_auth":  # a stub cannot tell a valid credential from an invalid one; a missing one it refuses
        return BEYOND if "invalid credentials" in message else OURS_SCHEMA
    if check == "status_code_conformance" and status in (400, 401) and not {str(status), "4XX", "DEFAULT"} & op_declares:
        return UNDECLARED_REFUSAL  # our refusal of an invalid request or missing credentials, which it does not declare
    if status == 501 and ": no value satisfies the schema" in body:
        # Our 501 names a schema no value satisfies (a `type` no oneOf branch allows: Okta OPA's attribute_value).
        return DOC_FAULT
    if check == "response_schema_conformance" and "discriminator property" in message:
        # Okta's JsonWebKey: `discriminator: {propertyName: kty}` mapped by `use`'s values (sig, enc), while `kty`
        # is RSA or EC: no key satisfies both, and JSON Schema (our check) does not read `discriminator`.
        return DOC_FAULT
    return OURS_SCHEMA


def read_report(ndjson: Path, statuses: dict[str, set[str]], doc_name: str) -> tuple[int, list[dict]]:
    """(answers, failures) from schemathesis's NDJSON event stream (read line by line: it grows large)."""
    answers = 0
    failures: list[dict] = []
    seen: set[tuple] = set()
    with ndjson.open(encoding="utf-8") as stream:
        for line in stream:
            if not line.startswith('{"ScenarioFinished"'):
                continue
            event = json.loads(line)["ScenarioFinished"]
            recorder = event.get("recorder") or {}
            interactions = recorder.get("interactions") or {}
            answers += sum(1 for i in interactions.values() if (i or {}).get("response"))
            for case_id, checks in (recorder.get("checks") or {}).items():
                for check in checks:
                    if check.get("status") != "failure":
                        continue
                    info = ((check.get("failure_info") or {}).get("failure")) or {}
                    response = (interactions.get(case_id) or {}).get("response") or {}
                    status = response.get("status_code")
                    content = response.get("content") or {}
                    body = base64.b64decode(content["$base64"]).decode("utf-8", "replace") if "$base64" in content else ""
                    operation = info.get("operation") or recorder.get("label", "")
                    message = str(info.get("message", ""))
                    key = (check["name"], operation, status, info.get("title"), message[:200])
                    if key in seen:
                        continue
                    seen.add(key)
                    failure = {"document": doc_name, "check": check["name"], "operation": operation,
                               "status": status, "phase": event.get("phase"), "title": info.get("title"),
                               "message": message[:1500], "body": body[:600]}
                    failure["class"] = classify(failure, statuses.get(operation, set()))
                    failures.append(failure)
    return answers, failures


def fuzz_document(args: argparse.Namespace, name: str) -> dict:
    path = Path(args.corpus) / name
    doc = load(path)
    row: dict[str, Any] = {"document": name, "answers": 0, "failures": []}
    with tempfile.TemporaryDirectory(prefix="fuzz-errors-") as tmp:
        served = Served(args.python, path, tmp)
        try:
            started, url = served.wait_listening(args.start_timeout)
            row["start"] = started
            if started != "started":
                row["detail"] = url
                return row
            report = Path(tmp) / "report"
            command = [args.schemathesis, "run", str(path), "--url", url, "--checks", "all",
                       "--max-time", str(args.seconds), "--seed", str(args.seed), "--workers", "1",
                       "--request-timeout", "10", "--report", "ndjson", "--report-dir", str(report),
                       "--no-color", "--generation-database", "none", *auth_args(doc)]
            began = time.monotonic()
            try:
                done = subprocess.run(command, cwd=tmp, capture_output=True, text=True, timeout=args.seconds + 120)
                row["exit"] = done.returncode
                row["tail"] = done.stdout[-1500:] + done.stderr[-500:]
            except subprocess.TimeoutExpired:
                row["exit"] = "timeout"
            row["seconds"] = round(time.monotonic() - began, 1)
            row["server_alive"] = served.proc.poll() is None
            reports = sorted(report.glob("*.ndjson"))
            if reports:
                row["answers"], row["failures"] = read_report(reports[-1], declared_statuses(doc), name)
        finally:
            served.stop()
    return row


def summarize(rows: list[dict]) -> str:
    fuzzed = [r for r in rows if r.get("start") == "started"]
    failures = [f for r in rows for f in r["failures"]]
    lines = [f"documents: {len(rows)} ({len(fuzzed)} started), "
             f"{sum(r.get('seconds', 0) for r in fuzzed):.0f} s of fuzzing, "
             f"{sum(r['answers'] for r in rows):,} answers, {len(failures)} distinct failures"]
    for row in rows:
        if row.get("start") != "started":
            lines.append(f"  not started: {row['document']}: {row.get('start')} {row.get('detail', '')[:200]}")
        elif not row.get("server_alive", True):
            lines.append(f"  SERVER DIED: {row['document']}")
    by_class = Counter(f["class"] for f in failures)
    lines.append("per class:")
    for name in CLASSES:
        docs = len({f["document"] for f in failures if f["class"] == name})
        lines.append(f"  {by_class.get(name, 0):5}  {name}  ({docs} documents)")
    lines.append("per check (class):")
    for (check, cls), count in sorted(Counter((f["check"], f["class"]) for f in failures).items()):
        lines.append(f"  {count:5}  {check}  [{cls}]")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parents[2]
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default="/work/sweep-corpus")
    ap.add_argument("--docs", type=int, default=20, help="documents fuzzed")
    ap.add_argument("--seconds", type=int, default=60, help="schemathesis's --max-time per document")
    ap.add_argument("--seed", type=int, default=25, help="picks the documents, and schemathesis's --seed")
    ap.add_argument("--only", action="append", help="fuzz these documents (names in the corpus) instead")
    ap.add_argument("--python", default=sys.executable, help="the Python whose plantstub is served")
    ap.add_argument("--schemathesis", default=str(here / ".fuzzvenv" / "bin" / "schemathesis"))
    ap.add_argument("--start-timeout", type=float, default=60.0)
    ap.add_argument("--out", default="fuzz-errors.json", help="every document and failure as JSON")
    ap.add_argument("--summary", metavar="JSON", help="only print the summary of a past --out")
    args = ap.parse_args(argv)
    if args.summary:  # classified again: the rules may have changed since
        rows = json.loads(Path(args.summary).read_text())["documents"]
        for row in rows:
            statuses = declared_statuses(load(Path(args.corpus) / row["document"])) if row["failures"] else {}
            for failure in row["failures"]:
                failure["class"] = classify(failure, statuses.get(failure["operation"], set()))
        print(summarize(rows))
        return 0
    corpus = Path(args.corpus)
    big = set((corpus / "big.txt").read_text().split()) if (corpus / "big.txt").exists() else set()
    names = args.only or pick_documents(corpus, args.docs, args.seed, big)
    rows: list[dict] = []
    for i, name in enumerate(names, 1):
        print(f"[{i}/{len(names)}] {name}", flush=True)
        row = fuzz_document(args, name)
        rows.append(row)
        print(f"    {row.get('start')}: {row['answers']} answers, {len(row['failures'])} failures, "
              f"{row.get('seconds', 0)} s", flush=True)
        Path(args.out).write_text(json.dumps({"seed": args.seed, "seconds": args.seconds, "documents": rows}, indent=1))
    print(summarize(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
