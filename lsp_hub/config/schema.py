"""The configuration's schema (`loader`): the keys each table may hold and their types, from the model's attrs
classes, the strict converter that turns a file's values into them, and how a type or value is named in a problem."""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any

import attrs
import cattrs

from lsp_hub.config.model import HubOptions, IndexOptions, LanguageSpec, ServerSpec


def _schema(cls: type) -> dict[str, Any]:
    attrs.resolve_types(cls)
    return {field.name: field.type for field in attrs.fields(cls) if field.name != "name"}


SERVER_SCHEMA: dict[str, Any] = _schema(ServerSpec)
LANGUAGE_SCHEMA: dict[str, Any] = _schema(LanguageSpec)
# trust_workspace is not a file setting: it is derived from the client's trust flag.
HUB_SCHEMA: dict[str, Any] = {key: kind for key, kind in _schema(HubOptions).items() if key != "trust_workspace"}
INDEX_SCHEMA: dict[str, Any] = _schema(IndexOptions)


def _reject(expected: str) -> TypeError:
    return TypeError(f"expected {expected}")


def _structure_str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise _reject("a string")
    return value


def _structure_bool(value: Any, _: type) -> bool:
    # cattrs' default would turn "no" into True.
    if not isinstance(value, bool):
        raise _reject("true or false")
    return value


def _structure_int(value: Any, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _reject("an integer")
    return value


def _structure_float(value: Any, _: type) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _reject("a number")
    return float(value)


def _is_homogeneous_tuple(kind: Any) -> bool:
    args = typing.get_args(kind)
    return typing.get_origin(kind) is tuple and len(args) == 2 and args[1] is Ellipsis


def _is_dict(kind: Any) -> bool:
    return typing.get_origin(kind) is dict


def _make_converter() -> cattrs.Converter:
    """A strict converter: TOML/JSON lists become tuples, and nothing is coerced (no str(5), no bool("no"))."""
    converter = cattrs.Converter(forbid_extra_keys=True)
    converter.register_structure_hook(str, _structure_str)
    converter.register_structure_hook(bool, _structure_bool)
    converter.register_structure_hook(int, _structure_int)
    converter.register_structure_hook(float, _structure_float)

    def structure_tuple(value: Any, kind: Any) -> tuple[Any, ...]:
        # Without this a string would be split into a tuple of characters.
        if not isinstance(value, list | tuple):
            raise _reject("a list")
        element = typing.get_args(kind)[0]
        return tuple(converter.structure(item, element) for item in value)

    def structure_dict(value: Any, kind: Any) -> dict[Any, Any]:
        if not isinstance(value, Mapping):
            raise _reject("a table")
        key_type, value_type = typing.get_args(kind) or (Any, Any)
        return {converter.structure(k, key_type): converter.structure(v, value_type) for k, v in value.items()}

    converter.register_structure_hook_func(_is_homogeneous_tuple, structure_tuple)
    converter.register_structure_hook_func(_is_dict, structure_dict)
    return converter


CONVERTER = _make_converter()


def describe_type(kind: Any) -> str:
    """What a schema type looks like to someone writing TOML."""
    if kind is Any:
        return "any value"
    origin = typing.get_origin(kind)
    args = typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        inner = [arg for arg in args if arg is not type(None)]
        return " or ".join(describe_type(arg) for arg in inner)
    if origin is typing.Literal:
        return "one of " + ", ".join(f'"{arg}"' if isinstance(arg, str) else repr(arg) for arg in args)
    if origin is tuple:
        element = describe_type(args[0]) if args else "any value"
        return "a list of strings" if args and args[0] is str else f"a list of ({element})"
    if origin is dict:
        if args and args[1] is str:
            return "a table of strings"
        return "a table"
    names = {str: "a string", bool: "true or false", int: "an integer", float: "a number"}
    return names.get(kind, getattr(kind, "__name__", str(kind)))


def describe_value(value: Any) -> str:
    """A short name for the kind of value that was found."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        inner = sorted({describe_value(item) for item in value})
        return f"a list of {', '.join(inner)}" if inner else "an empty list"
    if isinstance(value, Mapping):
        inner = sorted({describe_value(item) for item in value.values()})
        return f"a table of {', '.join(inner)}" if inner else "an empty table"
    return type(value).__name__
