"""Load an OpenAPI 3.0/3.1 document (YAML or JSON, local and sibling $refs) into a Spec."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlparse

import referencing
import referencing.exceptions

from .errors import SpecError
from .schemas import bundle_schema
from .yamlio import read_document

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()


@dataclass(frozen=True, slots=True)
class Parameter:
    """One declared parameter: where it lives, whether it is required, its bundled schema."""

    name: str
    location: str  # path, query, header, cookie
    required: bool
    schema: dict | bool | None
    explode: bool = True
    style: str = ""


@dataclass(frozen=True, slots=True)
class MediaType:
    """A media type under a request body or response: schema and examples."""

    name: str
    schema: dict | bool | None
    example: Any = MISSING
    examples: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Response:
    """A declared response: status key as written ("200", "4XX", "default") and its content."""

    status: str
    description: str
    content: dict[str, MediaType]
    headers: dict[str, dict | bool | None]


@dataclass(frozen=True, slots=True)
class SecurityScheme:
    """A security scheme as it matters to a stub: what a request must carry."""

    name: str
    type: str  # http, apiKey, oauth2, openIdConnect, mutualTLS
    scheme: str = ""  # for http: bearer, basic, ...
    location: str = ""  # for apiKey: header, query, cookie
    param: str = ""  # for apiKey: the header, query or cookie name


@dataclass(frozen=True, slots=True)
class Operation:
    """One method on one path template, with everything needed to check and answer it."""

    method: str
    path: str
    operation_id: str | None
    parameters: tuple[Parameter, ...]
    body_required: bool
    body: dict[str, MediaType] | None
    responses: dict[str, Response]
    security: tuple[tuple[SecurityScheme, ...], ...]  # alternatives; () means none needed

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}"

    def declared_statuses(self) -> list[str]:
        return list(self.responses)

    def response_for(self, status: int) -> Response | None:
        """The declared response covering `status`: exact code, then nXX, then default."""
        text = str(status)
        return (
            self.responses.get(text)
            or self.responses.get(text[0] + "XX")
            or self.responses.get(text[0] + "xx")
            or self.responses.get("default")
        )


@dataclass(frozen=True, slots=True)
class Spec:
    """A loaded OpenAPI document: its operations in document order."""

    source: str
    openapi: str
    title: str
    version: str
    operations: tuple[Operation, ...]


def bundled_spec_path() -> Path:
    """The Plant Store document shipped with the package."""
    return Path(str(resources.files("plantstub") / "data" / "plant-store.openapi.yaml"))


def load_spec(path: str | Path | None = None) -> Spec:
    """Load and check an OpenAPI 3.0/3.1 document; the bundled Plant Store when `path` is None.

    Raises SpecError with a one-paragraph reason when the file is missing, unreadable, not
    OpenAPI 3.x, or holds a $ref or schema that cannot be used.
    """
    file = Path(path) if path is not None else bundled_spec_path()
    try:
        return _Loader(file.resolve()).load()
    except SpecError as exc:
        raise SpecError(f"cannot use spec {file}: {exc}") from None


def _retrieve(uri: str) -> referencing.Resource:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        raise SpecError(f"$ref to {uri!r}: only local files can be referenced (no network)")
    try:
        contents = read_document(Path(unquote(parsed.path)))
    except ValueError as exc:
        raise SpecError(f"$ref target {exc}") from None
    return referencing.Resource.opaque(contents)


class _Loader:
    def __init__(self, file: Path) -> None:
        self.file = file
        self.uri = file.as_uri()

    def load(self) -> Spec:
        try:
            doc = read_document(self.file)
        except ValueError as exc:
            raise SpecError(str(exc)) from None
        if not isinstance(doc, dict):
            raise SpecError("the document is not a mapping of OpenAPI fields")
        version = doc.get("openapi")
        if version is None:
            if "swagger" in doc:
                raise SpecError(
                    f"this is a Swagger {doc['swagger']} document; plantstub reads OpenAPI 3.0 and 3.1"
                    " (convert it first, e.g. with swagger2openapi)"
                )
            raise SpecError("no 'openapi' field: this is not an OpenAPI 3.x document")
        version = str(version)
        if not (version.startswith("3.0") or version.startswith("3.1")):
            raise SpecError(f"openapi: {version!r} is not supported (expected 3.0.x or 3.1.x)")
        self.legacy = version.startswith("3.0")
        self.registry = referencing.Registry(retrieve=_retrieve).with_resource(
            self.uri, referencing.Resource.opaque(doc)
        )
        self.schemes = doc.get("components", {}).get("securitySchemes", {}) if isinstance(
            doc.get("components"), dict
        ) else {}
        paths = doc.get("paths") or {}
        if not isinstance(paths, dict):
            raise SpecError("paths: expected a mapping of path templates")
        operations: list[Operation] = []
        global_security = doc.get("security", [])
        for template, item in paths.items():
            if not isinstance(template, str) or not template.startswith("/"):
                raise SpecError(f"paths: {template!r} must start with '/'")
            item, base = self.deref(item, self.uri, f"paths.{template}")
            if not isinstance(item, dict):
                raise SpecError(f"paths.{template}: expected a Path Item mapping")
            shared = item.get("parameters", [])
            for method in METHODS:
                if method in item:
                    where = f"paths.{template}.{method}"
                    operations.append(
                        self.operation(method, template, item[method], shared, global_security, base, where)
                    )
        info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
        return Spec(
            source=str(self.file),
            openapi=version,
            title=str(info.get("title", "")),
            version=str(info.get("version", "")),
            operations=tuple(operations),
        )

    # -- $ref handling -----------------------------------------------------------------
    def deref(self, node: Any, base: str, where: str) -> tuple[Any, str]:
        """Follow `$ref`s of a non-schema object; returns the target and its base URI."""
        seen = set()
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            target = urljoin(base, node["$ref"])
            if target in seen:
                raise SpecError(f"{where}: $ref {node['$ref']!r} refers to itself in a loop")
            seen.add(target)
            node, base = self.lookup(target, where, node["$ref"])
        return node, base

    def lookup(self, target: str, where: str, ref: str) -> tuple[Any, str]:
        try:
            resolved = self.registry.resolver().lookup(target)
        except SpecError as exc:
            raise SpecError(f"{where}: {exc}") from None
        except referencing.exceptions.Unresolvable as exc:
            raise SpecError(f"{where}: $ref {ref!r} cannot be resolved ({type(exc).__name__}: {exc})") from None
        return resolved.contents, urldefrag(target)[0]

    def schema(self, node: Any, base: str, where: str) -> dict | bool | None:
        if node is None:
            return None
        return bundle_schema(node, base, self.lookup, legacy=self.legacy, where=where)

    # -- objects ---------------------------------------------------------------------------
    def operation(
        self, method: str, template: str, node: Any, shared: Any, global_security: Any, base: str, where: str
    ) -> Operation:
        node, base = self.deref(node, base, where)
        if not isinstance(node, dict):
            raise SpecError(f"{where}: expected an Operation mapping")
        params: dict[tuple[str, str], Parameter] = {}
        for i, raw in enumerate(list(shared or []) + list(node.get("parameters") or [])):
            param = self.parameter(raw, base, f"{where}.parameters[{i}]")
            params[(param.name.lower() if param.location == "header" else param.name, param.location)] = param
        body_required, body = False, None
        if node.get("requestBody") is not None:
            raw, body_base = self.deref(node["requestBody"], base, f"{where}.requestBody")
            body_required = bool(raw.get("required", False))
            body = self.content(raw.get("content") or {}, body_base, f"{where}.requestBody.content")
        responses: dict[str, Response] = {}
        for status, raw in (node.get("responses") or {}).items():
            status = str(status)
            resp_where = f"{where}.responses.{status}"
            raw, resp_base = self.deref(raw, base, resp_where)
            if not isinstance(raw, dict):
                raise SpecError(f"{resp_where}: expected a Response mapping")
            headers = {}
            for name, header in (raw.get("headers") or {}).items():
                header, header_base = self.deref(header, resp_base, f"{resp_where}.headers.{name}")
                headers[name] = self.schema(header.get("schema"), header_base, f"{resp_where}.headers.{name}")
            responses[status] = Response(
                status=status,
                description=str(raw.get("description", "")),
                content=self.content(raw.get("content") or {}, resp_base, f"{resp_where}.content"),
                headers=headers,
            )
        security = node.get("security", global_security)
        return Operation(
            method=method.upper(),
            path=template,
            operation_id=node.get("operationId"),
            parameters=tuple(params.values()),
            body_required=body_required,
            body=body,
            responses=responses,
            security=self.security(security, f"{where}.security"),
        )

    def parameter(self, raw: Any, base: str, where: str) -> Parameter:
        raw, base = self.deref(raw, base, where)
        if not isinstance(raw, dict) or "name" not in raw or "in" not in raw:
            raise SpecError(f"{where}: a parameter needs 'name' and 'in'")
        location = raw["in"]
        if location not in ("path", "query", "header", "cookie"):
            raise SpecError(f"{where}: in: {location!r} is not one of path, query, header, cookie")
        schema_node = raw.get("schema")
        if schema_node is None and isinstance(raw.get("content"), dict) and raw["content"]:
            schema_node = next(iter(raw["content"].values())).get("schema")
        style = raw.get("style", "form" if location in ("query", "cookie") else "simple")
        return Parameter(
            name=str(raw["name"]),
            location=location,
            required=bool(raw.get("required", location == "path")),
            schema=self.schema(schema_node, base, f"{where}.schema"),
            explode=bool(raw.get("explode", style == "form")),
            style=style,
        )

    def content(self, raw: Any, base: str, where: str) -> dict[str, MediaType]:
        if not isinstance(raw, dict):
            raise SpecError(f"{where}: expected a mapping of media types")
        result = {}
        for name, media in raw.items():
            media, media_base = self.deref(media or {}, base, f"{where}.{name}")
            examples = {}
            for ex_name, example in (media.get("examples") or {}).items():
                example, _ = self.deref(example, media_base, f"{where}.{name}.examples.{ex_name}")
                if isinstance(example, dict) and "value" in example:
                    examples[str(ex_name)] = example["value"]
            result[str(name)] = MediaType(
                name=str(name),
                schema=self.schema(media.get("schema"), media_base, f"{where}.{name}.schema"),
                example=media.get("example", MISSING),
                examples=examples,
            )
        return result

    def security(self, raw: Any, where: str) -> tuple[tuple[SecurityScheme, ...], ...]:
        if not raw:
            return ()
        alternatives = []
        for requirement in raw:
            if not requirement:  # {} is an alternative that needs nothing: security is optional
                return ()
            schemes = []
            for name in requirement:
                scheme, _ = self.deref(self.schemes.get(name), self.uri, f"{where}.{name}")
                if not isinstance(scheme, dict):
                    raise SpecError(f"{where}: security scheme {name!r} is not declared in components.securitySchemes")
                schemes.append(
                    SecurityScheme(
                        name=name,
                        type=str(scheme.get("type", "")),
                        scheme=str(scheme.get("scheme", "")).lower(),
                        location=str(scheme.get("in", "")),
                        param=str(scheme.get("name", "")),
                    )
                )
            alternatives.append(tuple(schemes))
        return tuple(alternatives)
