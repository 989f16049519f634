"""Swagger 2.0 read by plantstub against swagger2openapi's conversion: run by hand, not by pytest.

    .venv/bin/python tests/benchmarks/swagger2_compare.py [DOCUMENT...]      # default: the committed examples
    .venv/bin/python tests/benchmarks/swagger2_compare.py --synthetic 800 1500   # a big 2.0 document: time, memory
    .venv/bin/python tests/benchmarks/swagger2_compare.py --write-reference      # remake the committed conversions

Needs node and npm: `npm pack swagger2openapi@7.0.8` and its dependencies are installed into a temporary folder
(the registry is the only thing reached). Each 2.0 document is converted by it ({patch: true, warnOnly: true}), and
both the 2.0 document and the conversion are loaded by plantstub: the script prints, per document, whether they
serve alike (each operation's parameters, bodies, responses, security, and the answer to each declared response;
tests/spec_shape.py), else the first differences.

`--synthetic SCHEMAS PATHS` writes a 2.0 document shaped like Kubernetes' (definitions referring to each other,
path-level parameters, a body on writes, every response in three media types) and prints, for the 2.0 document
served directly and for its swagger2openapi conversion served as OpenAPI 3.0 (what a user did before), the time to
`plantstub serve`'s listening line, the CPU seconds to it and the peak memory then (VmHWM).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from the repo root
from plantstub.contract.load import load_spec
from tests.benchmarks.big_spec import cpu_seconds, memory
from tests.spec_shape import differences, spec_answers, spec_shape

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "tests" / "data" / "specs" / "oas-examples-2.0"
CONVERTER = "swagger2openapi@7.0.8"
CONVERT_JS = """
const s2o = require('swagger2openapi'); const fs = require('fs');
const [,, input, output] = process.argv;
s2o.convertFile(input, {patch: true, warnOnly: true})
  .then(o => fs.writeFileSync(output, JSON.stringify(o.openapi)))
  .catch(e => { console.error(String(e)); process.exit(1); });
"""


def install(folder: Path) -> Path:
    """swagger2openapi installed into `folder` with npm; the conversion script's path."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise SystemExit(f"swagger2_compare: {tool} is not installed")
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(folder), CONVERTER],
                   check=True)
    script = folder / "convert.js"
    script.write_text(CONVERT_JS)
    return script


def convert(script: Path, document: Path, out: Path) -> None:
    subprocess.run(["node", str(script), str(document), str(out)], check=True, cwd=script.parent)


def compare(script: Path, documents: list[Path], folder: Path) -> int:
    same = 0
    for document in documents:
        out = folder / f"{document.name}.openapi.json"
        convert(script, document, out)
        ours, theirs = load_spec(document, cache=False), load_spec(out, cache=False)
        found = differences(spec_shape(ours), spec_shape(theirs)) + differences(spec_answers(ours), spec_answers(theirs))
        print(f"{'same' if not found else 'DIFFERENT':9} {document.relative_to(REPO) if document.is_relative_to(REPO) else document}"
              f" ({len(ours.operations)} operations)")
        for line in found[:8]:
            print(f"          {line}")
        same += not found
    print(f"{same} of {len(documents)} documents serve as their swagger2openapi conversion does")
    return 0


# -- a big 2.0 document -------------------------------------------------------------------------------------
def big_swagger(schemas: int, paths: int, seed: int = 1) -> dict[str, Any]:
    rng = random.Random(seed)
    scalars = [{"type": "string"}, {"type": "integer", "format": "int32"}, {"type": "boolean"},
               {"type": "string", "format": "date-time"}, {"type": "number", "format": "double"},
               {"type": "integer", "format": "int64", "x-nullable": True}]
    definitions: dict[str, Any] = {"Status": {"type": "object", "properties": {
        "code": {"type": "integer", "format": "int32"}, "message": {"type": "string"}}}}
    for i in range(schemas):
        props: dict[str, Any] = {}
        for j in range(rng.randint(3, 15)):
            kind = rng.random()
            if kind < 0.6 or i == 0:
                props[f"field{j}"] = {**rng.choice(scalars), "description": f"Field {j} of kind {i}."}
            elif kind < 0.8:
                props[f"field{j}"] = {"$ref": f"#/definitions/Kind{rng.randrange(i)}"}
            else:
                props[f"field{j}"] = {"type": "array", "items": {"$ref": f"#/definitions/Kind{rng.randrange(i)}"}}
        definitions[f"Kind{i}"] = {"type": "object", "description": f"Kind {i}.", "required": ["field0"],
                                   "properties": props}
        definitions[f"Kind{i}List"] = {"type": "object", "required": ["items"], "properties": {
            "kind": {"type": "string"}, "items": {"type": "array", "items": {"$ref": f"#/definitions/Kind{i}"}}}}
    media = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]
    out: dict[str, Any] = {}
    for k in range(paths):
        kind = rng.randrange(schemas)
        ok = {"description": "OK", "schema": {"$ref": f"#/definitions/Kind{kind}"}}
        common = [{"$ref": "#/parameters/pretty"}]
        out[f"/apis/group{k}/v1/namespaces/{{namespace}}/kinds"] = {
            "parameters": [{"name": "namespace", "in": "path", "required": True, "type": "string"}, *common],
            "get": {"operationId": f"list{k}", "produces": media, "parameters": [
                {"name": "labelSelector", "in": "query", "type": "string"},
                {"name": "limit", "in": "query", "type": "integer"},
                {"name": "fields", "in": "query", "type": "array", "items": {"type": "string"}, "collectionFormat": "csv"}],
                "responses": {"200": {"description": "OK", "schema": {"$ref": f"#/definitions/Kind{kind}List"}},
                              "401": {"description": "Unauthorized"}}},
            "post": {"operationId": f"create{k}", "consumes": ["*/*"], "produces": media,
                     "parameters": [{"name": "body", "in": "body", "required": True,
                                     "schema": {"$ref": f"#/definitions/Kind{kind}"}}],
                     "responses": {"200": ok, "201": {**ok, "description": "Created"},
                                   "401": {"description": "Unauthorized"}}},
        }
        out[f"/apis/group{k}/v1/namespaces/{{namespace}}/kinds/{{name}}"] = {
            "parameters": [{"name": "name", "in": "path", "required": True, "type": "string"},
                           {"name": "namespace", "in": "path", "required": True, "type": "string"}, *common],
            "get": {"operationId": f"read{k}", "produces": media, "responses": {"200": ok}},
            "delete": {"operationId": f"delete{k}", "produces": media, "parameters": [
                {"name": "body", "in": "body", "schema": {"$ref": "#/definitions/Status"}}],
                "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/Status"}}}},
        }
    return {"swagger": "2.0", "info": {"title": "Synthetic clusters", "version": "v1"},
            "securityDefinitions": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}},
            "security": [{"BearerToken": []}],
            "parameters": {"pretty": {"name": "pretty", "in": "query", "type": "string", "uniqueItems": True}},
            "paths": out, "definitions": definitions}


def measure(document: Path, folder: Path) -> dict[str, float]:
    """`plantstub serve --spec document` started afresh: seconds to its listening line, the CPU seconds it took
    (which hold on a busy machine), its peak memory then (VmHWM)."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "plantstub", "serve", "--spec", str(document), "--port", "0",
                             "--spec-cache", "off"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            cwd=folder)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line.startswith("plantstub listening on "):
            raise SystemExit(f"swagger2_compare: {document} did not start")
        return {"seconds": time.perf_counter() - started, "cpu": cpu_seconds(proc.pid),
                "peak_mib": memory(proc.pid)["VmHWM"]}
    finally:
        proc.terminate()
        proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("documents", nargs="*", type=Path, help="Swagger 2.0 documents (default: the committed examples)")
    parser.add_argument("--synthetic", nargs=2, type=int, metavar=("SCHEMAS", "PATHS"),
                        help="measure the load of a big made-up 2.0 document and of its conversion")
    parser.add_argument("--runs", type=int, default=3, help="with --synthetic: loads of each (the best is shown)")
    parser.add_argument("--write-reference", action="store_true",
                        help="write the conversions of the committed examples to tests/data (the reference)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        script = install(folder / "node")
        if args.write_reference:
            for document in sorted([*EXAMPLES.glob("json/*.json"), *EXAMPLES.glob("yaml/*.yaml")]):
                convert(script, document, EXAMPLES / "swagger2openapi" / f"{document.name}.openapi.json")
            print(f"swagger2_compare: wrote {EXAMPLES / 'swagger2openapi'}")
            return 0
        if args.synthetic:
            document = folder / "synthetic.json"
            document.write_text(json.dumps(big_swagger(*args.synthetic)))
            converted = folder / "synthetic.openapi.json"
            started = time.perf_counter()
            convert(script, document, converted)
            node_seconds = time.perf_counter() - started
            print(f"document: {document.stat().st_size / 2**20:.1f} MiB Swagger 2.0;"
                  f" swagger2openapi converts it in {node_seconds:.1f} s (node)")
            runs: dict[str, list[dict[str, float]]] = {"2.0 read by plantstub": [], "its conversion (3.0)": []}
            for _ in range(args.runs):  # alternately, so that a busy moment of the machine falls on both
                for label, path in zip(runs, (document, converted), strict=True):
                    runs[label].append(measure(path, folder))
            for label, found in runs.items():
                best = min(found, key=lambda m: m["cpu"])
                print(f"{label:24} ready in {best['seconds']:6.2f} s, {best['cpu']:6.2f} s CPU,"
                      f" peak {best['peak_mib']:6.1f} MiB (best of {args.runs})")
            return 0
        documents = args.documents or sorted([*EXAMPLES.glob("json/*.json"), *EXAMPLES.glob("yaml/*.yaml"),
                                              *(REPO / "tests" / "data" / "specs" / "swagger2").glob("*.yaml")])
        return compare(script, [d.resolve() for d in documents], folder)


if __name__ == "__main__":
    sys.exit(main())
