"""Swagger 2.0 read as it means: a 2.0 document converted in process to the OpenAPI 3.0 document the loader serves.

Body and formData parameters become request bodies in the media types the operation `consumes`; responses carry
their schema in those it `produces`; `securityDefinitions` become security schemes, `host`/`basePath`/`schemes`
servers; `x-` extensions are kept. Schemas stay where they were written: `definitions` (fixed where 2.0 writes a
keyword otherwise, swagger2_parts.SchemaFixes) keep their `#/definitions/...` references, so nothing is copied that
does not change. Every converted place is mapped back to the place it was written (contract/origins.py), so each
message of the loader names the 2.0 document's location and line.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import NamedTuple

from plantstub._json import essence, shown
from plantstub._memo import IdentityMemo
from plantstub.contract.bundle import Lookup
from plantstub.contract.origins import Origins, Steps, shown_at
from plantstub.contract.securities import expect
from plantstub.contract.swagger2_parts import (
    MULTIPART,
    URLENCODED,
    SchemaFixes,
    extensions,
    form_encoding,
    form_property,
    parameter,
    response,
    security_scheme,
)
from plantstub.errors import SpecError

Deref = Callable[[object, str, str], "tuple[object, str]"]

TARGET = "3.0.3"  # the OpenAPI version a 2.0 document is converted to
METHODS = ("get", "put", "post", "delete", "options", "head", "patch")  # a 2.0 Path Item's operations
_LOCATIONS = ("query", "header", "path", "formData", "body")
# Top-level fields that the conversion replaces; the others (info, tags, security, externalDocs, `x-`, and the
# `parameters` and `responses` a schema's `$ref` may point into) are kept as written.
_REPLACED = frozenset(("swagger", "host", "basePath", "schemes", "consumes", "produces", "securityDefinitions",
                       "definitions", "paths"))


class _Param:
    """A 2.0 parameter as an operation has it: its `$ref`s followed, where it was written, its file's URI."""

    __slots__ = ("at", "base", "raw")

    def __init__(self, raw: dict[str, object], base: str, at: Steps) -> None:
        self.raw, self.base, self.at = raw, base, at

    @property
    def key(self) -> tuple[str, str]:
        return (str(self.raw["name"]), str(self.raw["in"]))


class Converted(NamedTuple):
    """A Swagger 2.0 document as OpenAPI 3.0, the conversion's own warnings (each with the 2.0 location it is
    about), and what its schemas need where they are read from other files (`schemas()`)."""

    doc: dict[str, object]
    notes: list[tuple[str, Steps]]
    fixes: SchemaFixes

    def schemas(self, lookup: Lookup) -> Lookup:
        """`lookup` (the loader's, for the bundler) with the schemas of other files fixed as the document's are."""
        main = self.fixes.main

        def fixed(target: str, where: str, ref: str) -> tuple[object, str]:
            contents, base = lookup(target, where, ref)
            return (contents, base) if base == main else (self.fixes.fix(contents, base), base)

        return fixed


def convert(doc: dict[str, object], deref: Deref, uri: str, origins: Origins) -> Converted:
    """The OpenAPI 3.0 document `doc` (a Swagger 2.0 document at `uri`) means. `deref(node, base, where)` follows a
    `$ref` as the loader does; `origins` gets where each converted place was written.

    Raises SpecError, already placed (`FILE:LINE: location: ...`), when the document cannot be converted."""
    converter = _Converter(doc, deref, uri, origins)
    try:
        return Converted(converter.document(), converter.notes, converter.fixes)
    except SpecError as exc:
        raise SpecError(origins.placed([(str(exc), converter.at)])[0]) from None


class _Converter:
    def __init__(self, doc: dict[str, object], deref: Deref, uri: str, origins: Origins) -> None:
        self.doc = doc
        self.deref = deref
        self.uri = uri
        self.origins = origins
        self.fixes = SchemaFixes(uri)
        self.notes: list[tuple[str, Steps]] = []
        self.parameters: IdentityMemo[dict[str, object]] = IdentityMemo()  # a 2.0 parameter -> its 3.0 form
        self.answers: IdentityMemo[dict[str, object]] = IdentityMemo()  # a 2.0 response, per media types -> its 3.0 form
        self.at: Steps = ()  # the place being converted: where a refusal is placed
        self.consumes: list[str] = []
        self.produces: list[str] = []

    def warn(self, text: str, at: Steps) -> None:
        self.notes.append((f"{shown_at(at)}: {text}", at))

    def media_list(self, raw: object, at: Steps) -> list[str]:
        """`consumes` / `produces`: a list of media types (a lone string read as one)."""
        if raw is None:
            return []
        if isinstance(raw, str):
            return [raw]
        if not isinstance(raw, list) or not all(isinstance(m, str) for m in raw):
            self.at = at
            raise SpecError(f"{shown_at(at)}: expected a list of media types, found {shown(raw)}")
        return list(dict.fromkeys(raw))

    def document(self) -> dict[str, object]:
        doc = self.doc
        self.at = ("swagger",)
        if str(doc.get("swagger")) != "2.0":
            raise SpecError(f"swagger: {shown(doc.get('swagger'))} is not supported (plantstub reads Swagger 2.0 and"
                            " OpenAPI 3.0, 3.1 and 3.2)")
        self.consumes = self.media_list(doc.get("consumes"), ("consumes",))
        self.produces = self.media_list(doc.get("produces"), ("produces",))
        out: dict[str, object] = {key: value for key, value in doc.items() if key not in _REPLACED}
        out["openapi"] = TARGET
        servers = self.servers()
        if servers:
            out["servers"] = servers
        self.at = ("definitions",)
        definitions = expect(dict, doc.get("definitions"), "definitions", "a mapping of schemas")
        # Kept under their own name, so the `#/definitions/...` references of every schema still lead to them.
        out["definitions"] = {name: self.fixes.fix(schema, self.uri) for name, schema in definitions.items()}
        self.at = ("securityDefinitions",)
        schemes = expect(dict, doc.get("securityDefinitions"), "securityDefinitions", "a mapping of security schemes")
        converted = {}
        for name, raw in schemes.items():
            at = ("securityDefinitions", str(name))
            self.origins.map(f"components.securitySchemes.{name}", at)
            converted[name] = security_scheme(raw, at, self.warn) if isinstance(raw, dict) else raw
        self.origins.map("components.securitySchemes", ("securityDefinitions",))
        out["components"] = {"schemas": out["definitions"], "securitySchemes": converted}
        self.at = ("paths",)
        out["paths"] = self.paths(expect(dict, doc.get("paths"), "paths", "a mapping of path templates"))
        return out

    def servers(self) -> list[dict[str, str]]:
        """`host`, `basePath` and `schemes` as OpenAPI 3 servers (documentation: paths are served as written)."""
        host, base_path, schemes = self.doc.get("host"), self.doc.get("basePath"), self.doc.get("schemes")
        base_path = base_path.rstrip("/") if isinstance(base_path, str) else ""
        if isinstance(host, str) and host:
            written = [s for s in schemes if isinstance(s, str)] if isinstance(schemes, list) else []
            return [{"url": f"{scheme + ':' if scheme else ''}//{host}{base_path}"} for scheme in written or [""]]
        return [{"url": base_path}] if base_path else []

    # -- paths and operations ---------------------------------------------------------------------------------
    def paths(self, paths: dict[str, object]) -> dict[str, object]:
        out: dict[str, object] = {}
        for template, item in paths.items():
            if not isinstance(template, str) or template.startswith("x-"):
                out[template] = item  # an extension, or a key the loader refuses in its own words
                continue
            at = self.at = ("paths", template)
            item, base = self.deref(item, self.uri, f"paths.{template}")
            if not isinstance(item, dict):
                out[template] = item
                continue
            shared = self.params(item.get("parameters"), base, at)
            converted: dict[str, object] = {key: value for key, value in item.items()
                                         if key not in METHODS and key not in ("parameters", "$ref")}
            kept = [p for p in shared if p.raw["in"] not in ("body", "formData")]
            if kept:
                converted["parameters"] = [self.parameter(p) for p in kept]
            # Where each converted place came from is written down only if a message needs it (Origins.later).
            self.origins.later(partial(_mark_params, self.origins, f"paths.{template}", at, kept))
            for method in METHODS:
                if method in item:
                    converted[method] = self.operation(item[method], base, template, method, shared)
            out[template] = converted
        return out

    def params(self, raw: object, base: str, at: Steps) -> list[_Param]:
        """A `parameters` list, each `$ref` followed; SpecError for one that is no parameter."""
        found = []
        listed = f"{shown_at(at)}.parameters"
        for i, param in enumerate(expect(list, raw, listed, "a list")):
            here, where = (*at, "parameters", i), f"{listed}[{i}]"
            self.at = here
            param, param_base = self.deref(param, base, where)
            param = expect(dict, param, where, "a Parameter mapping")
            if "name" not in param or "in" not in param:
                raise SpecError(f"{where}: a parameter needs 'name' and 'in'")
            if param["in"] not in _LOCATIONS:
                raise SpecError(f"{where}: in: {shown(param['in'])} is not one of {', '.join(_LOCATIONS)}")
            found.append(_Param(param, param_base, here))
        return found

    def parameter(self, param: _Param) -> dict[str, object]:
        # One conversion per parameter object: a shared one (`#/parameters/...`) is one schema to bundle and compile.
        return self.parameters.make(param.raw, lambda: parameter(param.raw, self.fixes, param.base, param.at, self.warn),
                                   param.base)

    def operation(self, node: object, base: str, template: str, method: str, shared: list[_Param]) -> object:
        at = self.at = ("paths", template, method)
        where = f"paths.{template}.{method}"
        node, base = self.deref(node, base, where)
        if not isinstance(node, dict):
            return node
        consumes = self.media_list(node["consumes"], (*at, "consumes")) if "consumes" in node else self.consumes
        produces = self.media_list(node["produces"], (*at, "produces")) if "produces" in node else self.produces
        own = self.params(node.get("parameters"), base, at)
        mine = {p.key for p in own}
        # A path-level parameter applies unless the operation declares one of the same name and location.
        every = [p for p in shared if p.key not in mine] + own
        out: dict[str, object] = {key: value for key, value in node.items()
                               if key not in ("parameters", "responses", "consumes", "produces", "schemes")}
        kept = [p for p in own if p.raw["in"] not in ("body", "formData")]
        if kept:
            out["parameters"] = [self.parameter(p) for p in kept]
        body = self.request_body([p for p in every if p.raw["in"] in ("body", "formData")], consumes, where)
        if body is not None:
            out["requestBody"] = body
        out["responses"] = responses = self.responses(node.get("responses"), base, produces, at, where)
        self.origins.later(partial(_mark_operation, self.origins, where, at, kept, responses))
        return out

    def request_body(self, params: list[_Param], consumes: list[str], where: str) -> dict[str, object] | None:
        """The body parameter, or the formData parameters, as one request body."""
        bodies = [p for p in params if p.raw["in"] == "body"]
        forms = [p for p in params if p.raw["in"] == "formData"]
        for extra in bodies[1:]:
            self.warn(f"a second body parameter ({shown(extra.raw['name'])}): an operation has one body; set aside",
                      extra.at)
        if bodies:
            for extra in forms:
                self.warn(f"formData parameter {shown(extra.raw['name'])} beside a body parameter: set aside", extra.at)
            return self.body(bodies[0], consumes, where)
        if not forms:
            return None
        medias = [m for m in consumes if essence(m) in (URLENCODED, MULTIPART)]
        if not medias:  # 2.0 says a form is sent as one of these two; a file only as multipart
            medias = [MULTIPART if any(p.raw.get("type") == "file" for p in forms) else URLENCODED]
        properties: dict[str, object] = {}
        required: list[str] = []
        encoding: dict[str, object] = {}
        for param in forms:
            name = str(param.raw["name"])
            properties[name] = form_property(param.raw, self.fixes, param.base)
            if param.raw.get("required") is True:
                required.append(name)
            sent = form_encoding(param.raw)
            if sent is not None and sent != {"style": "form", "explode": True}:
                encoding[name] = sent
        schema: dict[str, object] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        self.origins.later(partial(_mark_form, self.origins, where, forms, medias))
        content = {media: {"schema": schema, **({"encoding": encoding} if encoding else {})} for media in medias}
        return {"content": content, **({"required": True} if required else {})}

    def body(self, param: _Param, consumes: list[str], where: str) -> dict[str, object]:
        raw = param.raw
        schema = self.fixes.fix({} if raw.get("schema") is None else raw["schema"], param.base)  # the loader checks it
        medias = consumes or ["application/json"]  # as swagger2openapi reads an operation that consumes nothing
        self.origins.later(partial(_mark_body, self.origins, where, param.at, medias))
        out: dict[str, object] = {"content": {media: {"schema": schema} for media in medias}}
        if "description" in raw:
            out["description"] = raw["description"]
        if raw.get("required") is True:
            out["required"] = True
        out.update(extensions(raw))
        return out

    def responses(self, raw: object, base: str, produces: list[str], at: Steps, where: str) -> dict[str, object]:
        if raw is None:  # required in 2.0; swagger2openapi's conversion declares one default response
            self.warn("no responses declared; read as one `default` response with no body", at)
            return {"default": {"description": "Default response"}}
        declared = expect(dict, raw, f"{where}.responses", "a mapping of status codes")
        out: dict[str, object] = {}
        for status, value in declared.items():
            status = str(status)
            if status.startswith("x-"):
                out[status] = value
                continue
            here = self.at = (*at, "responses", status)
            value, response_base = self.deref(value, base, f"{where}.responses.{status}")
            value = expect(dict, value, f"{where}.responses.{status}", "a Response mapping")
            # One conversion per response object and media types: a shared one (`#/responses/...`) is bundled once.
            tag = (response_base, tuple(produces))
            converted = self.answers.get(value, tag)
            if converted is None:
                converted = self.answers.put(value, response(value, produces, self.fixes, response_base, here,
                                                             self.warn), tag)
            out[status] = converted
        return out


# -- where each converted place came from (run only when a message needs it) -----------------------------------
def _mark_params(origins: Origins, where: str, at: Steps, params: list[_Param]) -> None:
    origins.map(where, at)
    for j, param in enumerate(params):
        origins.map(f"{where}.parameters[{j}]", param.at)
        origins.map(f"{where}.parameters[{j}].schema", param.at)  # a 2.0 parameter holds its type itself


def _mark_operation(origins: Origins, where: str, at: Steps, params: list[_Param], responses: dict[str, object]) -> None:
    _mark_params(origins, where, at, params)
    for status, converted in responses.items():
        if status.startswith("x-") or not isinstance(converted, dict):
            continue
        here, prefix = (*at, "responses", status), f"{where}.responses.{status}"
        origins.map(prefix, here)
        for media in converted.get("content", {}):
            origins.map(f"{prefix}.content.{media}", here)
            origins.map(f"{prefix}.content.{media}.schema", (*here, "schema"))
            origins.map(f"{prefix}.content.{media}.examples.response", (*here, "examples", media))
        for name in converted.get("headers", {}):
            origins.map(f"{prefix}.headers.{name}", (*here, "headers", name))
            origins.map(f"{prefix}.headers.{name}.schema", (*here, "headers", name))


def _mark_body(origins: Origins, where: str, at: Steps, medias: list[str]) -> None:
    origins.map(f"{where}.requestBody", at)
    for media in medias:
        origins.map(f"{where}.requestBody.content.{media}", at)
        origins.map(f"{where}.requestBody.content.{media}.schema", (*at, "schema"))


def _mark_form(origins: Origins, where: str, forms: list[_Param], medias: list[str]) -> None:
    origins.map(f"{where}.requestBody", forms[0].at)
    for media in medias:
        origins.map(f"{where}.requestBody.content.{media}", forms[0].at)
        for param in forms:
            origins.map(f"{where}.requestBody.content.{media}.schema.properties.{param.raw['name']}", param.at)
