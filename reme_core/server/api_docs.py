"""``/docs``: the HTTP API described as one server-rendered page, from the app's own OpenAPI
schema, with nothing fetched from the network.

FastAPI's Swagger UI loads its script and stylesheet from a CDN: offline (the normal case for a
local-first server) it was a blank page, and it was served without the studio's CSP. This page
lists every operation (method, path, summary, description, parameters, request fields,
responses) and every schema, links to ``/openapi.json`` for tools, and is rendered by the
studio's templates, so it carries the same security headers and needs no script to read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from starlette.responses import Response

from reme_core.studio.web import Studio

DOCS_PATH = "/docs"
SCHEMA_PATH = "/openapi.json"
METHODS = ("get", "post", "put", "patch", "delete")
REF_PREFIX = "#/components/schemas/"

Part = tuple[str, str | None]
"""A piece of a type as shown: its text, and the schema it names (linked), if any."""


@dataclass
class Field:
    name: str
    type: list[Part]
    required: bool
    description: str = ""
    where: str = ""
    """For a parameter: query, header, path or cookie."""
    default: str = ""


@dataclass
class Operation:
    method: str
    path: str
    summary: str
    description: str
    anchor: str
    parameters: list[Field] = field(default_factory=list)
    body: str | None = None
    """The request body's schema name (its fields are under Schemas), or None."""
    body_fields: list[Field] = field(default_factory=list)
    responses: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Group:
    name: str
    operations: list[Operation]


def add_api_docs(app: FastAPI, studio: Studio) -> None:
    """Serve the page at ``/docs`` (build ``app`` with ``docs_url=None, redoc_url=None``)."""

    @app.get(DOCS_PATH, include_in_schema=False)
    async def docs(request: Request) -> Response:
        schema = app.openapi()
        context = {
            "page": None,
            "info": schema.get("info", {}),
            "groups": groups(schema),
            "schemas": schemas(schema),
            "schema_url": SCHEMA_PATH,
            "base_url": str(request.base_url).rstrip("/"),
        }
        return studio.html("api_docs.html", context)


def groups(schema: dict[str, Any]) -> list[Group]:
    """The operations of ``schema``, grouped by their first tag (the token profile they need),
    in the order the schema lists them; untagged ones (``/health``, ``/status``) last."""
    found: dict[str, list[Operation]] = {}
    components = schema.get("components", {}).get("schemas", {})
    for path, item in schema.get("paths", {}).items():
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            tags = op.get("tags") or ["service"]
            found.setdefault(str(tags[0]), []).append(_operation(method, path, op, components))
    order = sorted(found, key=lambda tag: tag == "service")  # stable: schema order otherwise
    return [Group(tag, found[tag]) for tag in order]


def schemas(schema: dict[str, Any]) -> list[tuple[str, str, list[Field]]]:
    """Every component schema: name, description, fields."""
    components = schema.get("components", {}).get("schemas", {})
    return [
        (name, str(body.get("description", "")), _fields(body))
        for name, body in sorted(components.items())
    ]


def _operation(method: str, path: str, op: dict[str, Any], components: dict) -> Operation:
    summary = str(op.get("summary", ""))
    description = str(op.get("description", ""))
    if description.startswith(summary):  # FastAPI repeats the summary as the first paragraph
        description = description[len(summary) :].strip()
    found = Operation(
        method=method.upper(),
        path=path,
        summary=summary,
        description=description,
        anchor=f"op-{method}-{path.strip('/').replace('/', '-') or 'root'}",
    )
    for param in op.get("parameters", []):
        param_schema = param.get("schema", {})
        found.parameters.append(
            Field(
                name=str(param.get("name", "")),
                type=type_parts(param_schema),
                required=bool(param.get("required")),
                description=str(param.get("description") or param_schema.get("description", "")),
                where=str(param.get("in", "")),
            )
        )
    content = op.get("requestBody", {}).get("content", {})
    body = content.get("application/json", {}).get("schema")
    if body is not None:
        ref = body.get("$ref", "")
        if ref.startswith(REF_PREFIX):
            found.body = ref[len(REF_PREFIX) :]
            found.body_fields = _fields(components.get(found.body, {}))
        else:
            found.body_fields = _fields(body)
    for code, response in op.get("responses", {}).items():
        found.responses.append((str(code), str(response.get("description", ""))))
    return found


def _fields(schema: dict[str, Any]) -> list[Field]:
    required = set(schema.get("required", []))
    fields = []
    for name, prop in schema.get("properties", {}).items():
        default = json.dumps(prop["default"]) if "default" in prop else ""
        fields.append(
            Field(
                name=name,
                type=type_parts(prop),
                required=name in required,
                description=str(prop.get("description", "")),
                default=default,
            )
        )
    return fields


def type_parts(schema: dict[str, Any]) -> list[Part]:
    """A JSON schema as a short type (``list[string] | null``), schema names linkable."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.removeprefix(REF_PREFIX)
        return [(name, name if ref.startswith(REF_PREFIX) else None)]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return _joined([type_parts(s) for s in schema[key]], " | ")
    if len(schema.get("allOf", [])) == 1:
        return type_parts(schema["allOf"][0])
    if "enum" in schema:
        return [(" | ".join(json.dumps(v) for v in schema["enum"]), None)]
    if "const" in schema:
        return [(json.dumps(schema["const"]), None)]
    kind = schema.get("type")
    if isinstance(kind, list):
        return [(" | ".join(str(k) for k in kind), None)]
    if kind == "array":
        return [("list[", None), *type_parts(schema.get("items", {})), ("]", None)]
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return [("dict[string, ", None), *type_parts(schema["additionalProperties"]), ("]", None)]
    return [(str(kind) if kind else "any", None)]


def _joined(parts: list[list[Part]], separator: str) -> list[Part]:
    joined: list[Part] = []
    for i, part in enumerate(parts):
        if i:
            joined.append((separator, None))
        joined.extend(part)
    return joined
