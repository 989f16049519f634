"""Load an OpenAPI 3.0/3.1/3.2 or Swagger 2.0 document (YAML or JSON, local and sibling $refs) into a Spec."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plantstub._json import MISSING, cut, shown
from plantstub.config import BUNDLED_SPECS, bundled_name
from plantstub.contract import oas32
from plantstub.contract.bundle import Bundler
from plantstub.contract.compiled import places
from plantstub.contract.documents import SHIPPED, Documents
from plantstub.contract.model import MediaType, Operation, Parameter, Response, Spec, unsent_header
from plantstub.contract.property_map import PropertyMap
from plantstub.contract.securities import Securities, expect, suggest
from plantstub.contract.spec_cache import SpecCache
from plantstub.contract.webhooks import read_callbacks, read_webhooks
from plantstub.errors import SpecError
from plantstub.matching import template_names

if TYPE_CHECKING:  # imported when a Swagger 2.0 document is met: a 3.x one never pays for the conversion's modules
    from plantstub.contract.origins import Origins, Steps
    from plantstub.contract.swagger2 import Converted

log = logging.getLogger("plantstub")

STYLES = {  # the styles each location allows (OpenAPI 3.1, "Style Values")
    "path": ("simple", "label", "matrix"),
    "query": ("form", "spaceDelimited", "pipeDelimited", "deepObject"),
    "header": ("simple",),
    "cookie": ("form",),
}
IGNORED_HEADERS = ("accept", "content-type", "authorization")  # "the parameter definition SHALL be ignored"


def bundled_spec_path(name: str = "plant-store") -> Path:
    """A document shipped with the package: the seed's Plant Store (the default) or the whole store."""
    return SHIPPED / f"{name}.openapi.yaml"


def spec_file(path: str | Path | None) -> Path:
    """The file `--spec` names: a path, or the name of a bundled document when no such file exists."""
    if path is None:
        return bundled_spec_path()
    name = bundled_name(path) if len(Path(path).parts) == 1 else None
    if name is not None:
        return bundled_spec_path(name)
    return Path(path)


def load_spec(path: str | Path | None = None, root: str | Path | None = None, *,
              cache: Path | bool | None = None) -> Spec:
    """Load and check an OpenAPI 3.0/3.1/3.2 or Swagger 2.0 document; the bundled Plant Store when `path` is None.

    `root` (`--spec-root`) is the folder whose files $refs may read; the spec's own folder when None.
    `cache` (`--spec-cache`): the folder of the spec cache, True for the default one, False for none;
    None reads PLANTSTUB_SPEC_CACHE (contract/spec_cache.py).
    Raises SpecError with a one-paragraph reason when the file is missing, unreadable, not
    OpenAPI 3.x, or holds a $ref or schema that cannot be used.
    """
    file = spec_file(path)
    if not file.exists() and not file.suffix and len(file.parts) == 1:  # meant as a name: say which names there are
        raise SpecError(f"cannot use spec {file}: no such file (the bundled documents, by name: {', '.join(BUNDLED_SPECS)})")
    loader = _Loader(file, None if root is None else Path(root), SpecCache.chosen(cache))
    try:
        spec = loader.cached() or loader.load()
        for warning in spec.warnings:  # said once, where the stub starts (stderr) and in GET /__plantstub/health
            if warning.startswith(f"{file}:"):  # `FILE:LINE: ...`: a Swagger 2.0 document's place (origins.py)
                log.warning("plantstub: spec %s", warning)
            else:
                log.warning("plantstub: spec %s: %s", file, warning)
        return spec
    except SpecError as exc:
        text = str(exc)
        if loader.origins is not None and not text.startswith(f"{file}:"):
            text = loader.origins.placed([text])[0]  # in the Swagger 2.0 document's own places and lines
        # A parse error already starts with `FILE:line:`; anything else gets the file in front.
        raise SpecError(f"cannot use spec {text if text.startswith(str(file) + ':') else f'{file}: {text}'}") from None
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        # A safety net: a shape no check above foresaw still gets one readable paragraph.
        raise SpecError(
            f"cannot use spec {file}: the document has an unexpected shape ({type(exc).__name__}: {cut(str(exc))});"
            " check it with an OpenAPI validator"
        ) from None
    except RecursionError:
        raise SpecError(f"cannot use spec {file}: the document is nested too deeply") from None
    finally:
        loader.forget()  # serve freezes what is loaded, and a cycle frozen is never freed



class _Loader(Documents):
    """One document read into a Spec: its files and $refs (Documents), then its paths, operations, parameters,
    bodies and responses, each schema bundled."""

    def __init__(self, file: Path, root: Path | None = None, cache: SpecCache | None = None) -> None:
        super().__init__(file, root, cache)
        self.warnings: list[str] = []  # what is set aside, and why (Spec.warnings)
        self.origins: Origins | None = None  # a Swagger 2.0 document's: where each converted place was written
        self.notes: list[tuple[str, Steps]] = []  # the 2.0 conversion's own warnings, at the 2.0 places
        self.converted: Converted | None = None
        self.styles = STYLES  # the styles each location allows
        self.v32 = False  # an OpenAPI 3.2 document: its additions are read (contract/oas32.py)
        self.aside: list[str] = []  # the 3.2 fields it holds that plantstub does not serve, each with its place

    def cached(self) -> Spec | None:
        """The spec from the cache, when it holds this very document (every file it read unchanged)."""
        if self.cache is None or (self.root_given and not self.root.is_dir()):
            return None
        return self.cache.get(self.file, str(self.shown), self.root)

    def load(self) -> Spec:
        spec = self.read_spec()
        if self.cache is not None and self.cache.keeps(self.file):
            # The parsed files are freed first: a big spec's entry is written beside the Spec, not beside both.
            self.forget()
            # Its shared validator's property map is kept too: walked now, and not again when it is served.
            spec = replace(spec, property_map=PropertyMap.of(list(places(spec))))
            self.cache.put(self.file, str(self.shown), self.root, spec, self.digests)
        return spec

    def forget(self) -> None:
        """Drop the parsed files and what holds them (the bundler and the security reader hold this loader's
        methods, a cycle: broken here, they are freed at once, not by a collection)."""
        super().forget()
        self.__dict__.pop("bundler", None)
        self.__dict__.pop("securities", None)

    def read_spec(self) -> Spec:
        if self.root_given and not self.root.is_dir():
            raise SpecError(f"--spec-root {self.root} is not a folder")
        doc = self.read(self.uri, str(self.shown))
        if not isinstance(doc, dict):
            raise SpecError("the document is not a mapping of OpenAPI fields")
        version = doc.get("openapi")
        written = None
        if version is None and "swagger" in doc:
            written = str(doc["swagger"])
            doc = self.swagger(doc)
            version = doc["openapi"]
        if version is None:
            raise SpecError("no 'openapi' field: this is not an OpenAPI 3.x document (nor Swagger 2.0: no 'swagger' field)")
        version = str(version)
        if not version.startswith(("3.0", "3.1", "3.2")):
            raise SpecError(f"openapi: {shown(version)} is not supported (expected 3.0.x, 3.1.x or 3.2.x)")
        self.v32 = version.startswith("3.2")
        self.own = oas32.self_base(doc, self.uri, self.warnings) if self.v32 else None
        lookup = self.lookup if self.converted is None else self.converted.schemas(self.lookup)
        self.bundler = Bundler(lookup, legacy=version.startswith("3.0"))
        dialect = doc.get("jsonSchemaDialect")
        if dialect is not None and not version.startswith("3.0"):  # 3.0 has no such field
            if not isinstance(dialect, str):
                raise SpecError(f"jsonSchemaDialect: expected a URI, found {type(dialect).__name__} {shown(dialect)}")
            self.bundler.dialect = self.bundler.dialect_named(dialect, "jsonSchemaDialect")
        components = expect(dict, doc.get("components"), "components", "a mapping")
        schemes = expect(dict, components.get("securitySchemes"), "components.securitySchemes", "a mapping")
        self.securities = Securities(schemes, lambda node, where: self.deref(node, self.uri, where))
        paths = expect(dict, doc.get("paths"), "paths", "a mapping of path templates")
        global_security = doc.get("security", [])
        operations: list[Operation] = []
        for template, item in paths.items():
            if isinstance(template, str) and template.startswith("x-"):
                continue  # a specification extension, not a path
            if not isinstance(template, str) or not template.startswith("/"):
                raise SpecError(f"paths: {shown(template)} must start with '/'")
            if "?" in template or "#" in template:
                char = "?" if "?" in template else "#"
                self.warnings.append(f"paths: {shown(template)} holds a {char}, which starts a URL's"
                                     f" {'query' if char == '?' else 'fragment'}: served when a client sends it"
                                     f" percent-encoded ({'%3F' if char == '?' else '%23'})")
            where = f"paths.{template}"
            item, base = self.deref(item, self.uri, where)
            item = expect(dict, item, where, "a Path Item mapping")
            shared = [
                param
                for i, raw in enumerate(expect(list, item.get("parameters"), f"{where}.parameters", "a list"))
                if (param := self.parameter(raw, base, f"{where}.parameters[{i}]")) is not None
            ]
            for method, node, here in self.methods(item, where):
                operations.append(self.operation(method, template, node, shared, global_security, base, here))
        webhooks = read_webhooks(self, doc, self.uri)
        info = doc["info"] if isinstance(doc.get("info"), dict) else {}
        title, release = str(info.get("title", "")), str(info.get("version", ""))
        if self.v32:
            self.warnings += [*oas32.tag_warnings(doc), *oas32.aside_line(self.aside)]
        warnings = tuple(dict.fromkeys([*self.warnings, *self.securities.warnings(), *self.bundler.warnings]))
        if self.origins is not None:
            warnings = tuple(dict.fromkeys(self.origins.placed([*self.notes, *warnings])))
        return Spec(str(self.shown), written or version, title, release, tuple(operations), warnings, webhooks,
                    frozenset(self.bundler.annotated))

    def swagger(self, doc: dict[str, Any]) -> dict[str, Any]:
        """A Swagger 2.0 document as the OpenAPI 3.0 document it means (contract/swagger2.py): the one `$refs` read
        from now on (its `#/definitions/...` are where they were)."""
        from plantstub.contract.origins import Origins
        from plantstub.contract.swagger2 import convert
        from plantstub.contract.swagger2_parts import STYLES as SWAGGER_STYLES

        self.styles = SWAGGER_STYLES  # 2.0's delimiters that 3.x has no style for
        self.origins = Origins(self.file, str(self.shown))
        self.converted = convert(doc, self.deref, self.uri, self.origins)
        self.notes = self.converted.notes
        self.read_files[self.uri] = self.converted.doc
        self.found.clear()  # targets found while converting lead into the document as read
        self.registry = None
        return self.converted.doc

    def methods(self, item: dict[str, Any], where: str) -> list[tuple[str, Any, str]]:
        """(method, Operation, location) of each operation of a Path Item (OpenAPI 3.2's QUERY and others too)."""
        return oas32.operations(item, where, self.v32, self.warnings)

    def schema(self, node: Any, base: str, where: str, direction: str = "request") -> dict | bool | None:
        """The bundled, checked 2020-12 schema of `node` (None when there is none), as a request ("request") or
        an answer ("response") is checked by it: `readOnly` / `writeOnly` properties are required only the
        other way (Bundler.directed)."""
        if node is None:
            return None
        return self.bundler.directed(self.bundler.bundle(node, base, where), direction)

    # -- objects ---------------------------------------------------------------------------
    def operation(
        self, method: str, template: str, node: Any, shared: list[Parameter], global_security: Any, base: str,
        where: str,
    ) -> Operation:
        node, base = self.deref(node, base, where)
        node = expect(dict, node, where, "an Operation mapping")
        params: dict[tuple[str, str], Parameter] = {}
        own = expect(list, node.get("parameters"), f"{where}.parameters", "a list")
        # Path-level parameters first: an operation parameter with the same name and location replaces one.
        for param in shared + [self.parameter(raw, base, f"{where}.parameters[{i}]") for i, raw in enumerate(own)]:
            if param is not None:
                params[(param.name.lower() if param.location == "header" else param.name, param.location)] = param
        self.match_template(template, params, base, where)
        if self.v32:
            self.warnings += oas32.querystring_warnings(list(params.values()), where)
        body_required, body = False, None
        if node.get("requestBody") is not None:
            raw, body_base = self.deref(node["requestBody"], base, f"{where}.requestBody")
            raw = expect(dict, raw, f"{where}.requestBody", "a Request Body mapping")
            body_required = raw.get("required", False) is True
            body = self.content(raw.get("content"), body_base, f"{where}.requestBody.content", "request")
        responses: dict[str, Response] = {}
        declared = expect(dict, node.get("responses"), f"{where}.responses", "a mapping of status codes")
        for status, raw in declared.items():
            status = str(status)
            if status.startswith("x-"):
                continue
            responses[status] = self.response(status, raw, base, f"{where}.responses.{status}")
        if not responses:  # allowed in 3.1: the one answer is "done, nothing to say" (docs/cli.md "Other specs")
            responses[NO_RESPONSES.status] = NO_RESPONSES
        return Operation(
            method=method.upper(),
            path=template,
            operation_id=node.get("operationId"),
            parameters=tuple(params.values()),
            body_required=body_required,
            body=body,
            responses=responses,
            # An operation's own `security` (even []) replaces the document's; errors name where it was written.
            security=self.securities.read(
                node.get("security", global_security), f"{where}.security" if "security" in node else "security"
            ),
            callbacks=read_callbacks(self, node.get("callbacks"), base, f"{where}.callbacks"),
        )

    def match_template(self, template: str, params: dict[tuple[str, str], Parameter], base: str, where: str) -> None:
        """Path parameters as the template has them: a declared one it lacks is dropped (no request can carry
        it), and a `{name}` nothing declares is read as a string; each with a warning."""
        named = template_names(template)
        for key, param in list(params.items()):
            if param.location == "path" and param.name not in named:
                del params[key]
                self.warnings.append(f"{where}: path parameter {shown(param.name)} is not in the template"
                                     f"{suggest(param.name, dict.fromkeys(named)) if named else ''}; ignored")
        for name in named:
            if (name, "path") not in params:
                schema = self.schema({"type": "string"}, base, f"{where}.parameters")
                params[(name, "path")] = Parameter(name=name, location="path", required=True, schema=schema, style="simple",
                                                   explode=False)
                self.warnings.append(f"{where}: {{{name}}} has no declared path parameter; read as a string")

    def response(self, status: str, raw: Any, base: str, where: str) -> Response:
        raw, base = self.deref(raw, base, where)
        raw = expect(dict, raw, where, "a Response mapping")
        headers = {}
        required = []
        for name, header in expect(dict, raw.get("headers"), f"{where}.headers", "a mapping").items():
            header, header_base = self.deref(header, base, f"{where}.headers.{name}")
            header = expect(dict, header, f"{where}.headers.{name}", "a Header mapping")
            headers[str(name)] = self.schema(
                _content_schema(header, f"{where}.headers.{name}"), header_base, f"{where}.headers.{name}.schema",
                "response")
            unsent = unsent_header(str(name)) if header.get("required") is True else "not required"
            if unsent is None:
                required.append(str(name))
            elif unsent != "not required" and str(name).lower() not in ("content-type", "content-length"):
                self.warnings.append(f"{where}.headers.{name}: required, but never sent: {unsent}")
        return Response(
            status=status,
            description=str(raw.get("description", "")),
            content=self.content(raw.get("content"), base, f"{where}.content", "response"),
            headers=headers,
            required_headers=tuple(required),
        )

    def parameter(self, raw: Any, base: str, where: str) -> Parameter | None:
        """The declared parameter; None for an Accept, Content-Type or Authorization header, which OpenAPI ignores."""
        raw, base = self.deref(raw, base, where)
        raw = expect(dict, raw, where, "a Parameter mapping")
        if "name" not in raw or "in" not in raw:
            raise SpecError(f"{where}: a parameter needs 'name' and 'in'")
        location = raw["in"]
        if location == "querystring" and self.v32:
            return oas32.querystring(self, raw, base, where)
        if location not in STYLES:
            also = ", querystring" if self.v32 else " (querystring is OpenAPI 3.2's)" if location == "querystring" else ""
            raise SpecError(f"{where}: in: {shown(location)} is not one of path, query, header, cookie{also}")
        name = str(raw["name"])
        if location == "header" and name.lower() in IGNORED_HEADERS:
            return None
        styles = self.styles[location]
        if self.v32 and location == "cookie":
            styles = ("form", "cookie")
        style = raw.get("style", styles[0])
        if style not in styles:
            self.warnings.append(f"{where}: style: {shown(style)} is not a style of {location} parameters"
                                 f" ({', '.join(styles)}); read as {styles[0]}")
            style = styles[0]
        explode = raw.get("explode", style == "form")
        if not isinstance(explode, bool):
            self.warnings.append(f"{where}: explode: {shown(explode)} is not true or false; read as {style == 'form'}")
            explode = style == "form"
        content = raw.get("content") if raw.get("schema") is None else None
        return Parameter(
            name=name,
            location=location,
            required=location == "path" or raw.get("required", False) is True,
            schema=self.schema(_content_schema(raw, where), base, f"{where}.schema"),
            explode=explode,
            style=style,
            media=str(next(iter(content))) if isinstance(content, dict) and content else "",
        )

    def content(self, raw: Any, base: str, where: str, direction: str) -> dict[str, MediaType]:
        result = {}
        for name, media in expect(dict, raw, where, "a mapping of media types").items():
            media_where = f"{where}.{name}"
            media, media_base = self.deref({} if media is None else media, base, media_where)
            media = expect(dict, media, media_where, "a Media Type mapping")
            examples = {}
            declared = expect(dict, media.get("examples"), f"{media_where}.examples", "a mapping of Example objects")
            for ex_name, example in declared.items():
                example, _ = self.deref(example, media_base, f"{media_where}.examples.{ex_name}")
                if isinstance(example, dict):  # 3.2: `dataValue` is the value; `serializedValue` the text sent
                    value = next((example[k] for k in ("value", "dataValue", "serializedValue") if k in example), MISSING)
                    if value is not MISSING:
                        examples[str(ex_name)] = value
            if self.v32:
                self.aside += oas32.media_aside(media, str(name), media_where)
            items = media.get("itemSchema")
            result[str(name)] = MediaType(
                name=str(name),
                schema=self.schema(media.get("schema"), media_base, f"{media_where}.schema", direction),
                example=media.get("example", MISSING),
                examples=examples,
                item_schema=None if items is None else self.schema(items, media_base, f"{media_where}.itemSchema",
                                                                    direction),
            )
        return result

# What an operation that declares no responses answers: 204, no body (scenarios and `Prefer` may name it too).
NO_RESPONSES = Response(status="204", description="no responses declared: plantstub answers 204 with no body",
                        content={}, headers={})


def _content_schema(node: dict, where: str) -> Any:
    """A parameter's or header's schema: `schema`, else the schema of its one `content` entry."""
    if node.get("schema") is None and isinstance(node.get("content"), dict) and node["content"]:
        media = next(iter(node["content"].values()))
        return expect(dict, media, f"{where}.content", "a Media Type mapping").get("schema")
    return node.get("schema")
