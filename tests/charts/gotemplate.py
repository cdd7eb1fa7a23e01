"""A small Go text/template renderer for the subset of Helm the nodewright chart uses.

No ``helm`` binary can be installed from the package registries this project may use, so the
chart tests render with this: actions with ``{{-``/``-}}`` trimming; ``if``/``else if``/
``else``, ``with``/``else``, ``range``, ``define``; pipelines; variables (``$x :=``, ``$``);
parentheses; and the functions below (Go's and Sprig's semantics for the cases the chart
uses). Anything else (an unknown function, an unclosed block, a missing template) raises
:class:`TemplateError`, so a broken template fails the tests instead of rendering quietly.
"""

from __future__ import annotations

import copy
import json
import re
from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml


class TemplateError(Exception):
    pass


_ACTION = re.compile(r"{{(-\s)?(.*?)(\s-)?}}", re.DOTALL)
_TOKEN = re.compile(
    r'\s*(?:(?P<string>"(?:[^"\\]|\\.)*")|(?P<raw>`[^`]*`)|(?P<number>-?\d+(?:\.\d+)?)'
    r"|(?P<open>\()|(?P<close>\))|(?P<pipe>\|)|(?P<assign>:?=)|(?P<comma>,)"
    r"|(?P<field>(?:\$[A-Za-z0-9_]*)?(?:\.[A-Za-z0-9_]+)+|\$[A-Za-z0-9_]*|\.)"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*))"
)


# --- parsing --------------------------------------------------------------------------------


@dataclass
class Text:
    text: str


@dataclass
class Action:
    source: str
    line: int


@dataclass
class Block:
    keyword: str  # if, with, range
    condition: str
    line: int
    body: list[Any] = field(default_factory=list)
    #: (condition or None for plain else, body) for each else branch.
    branches: list[tuple[str | None, list[Any]]] = field(default_factory=list)


def _split(source: str) -> list[Text | Action]:
    pieces: list[Text | Action] = []
    position = 0
    for match in _ACTION.finditer(source):
        text = source[position : match.start()]
        if match.group(1):
            text = text.rstrip()
        pieces.append(Text(text))
        line = source.count("\n", 0, match.start()) + 1
        pieces.append(Action(match.group(2).strip(), line))
        position = match.end()
        if match.group(3):
            while position < len(source) and source[position] in " \t\r\n":
                position += 1
    pieces.append(Text(source[position:]))
    return pieces


def parse(source: str, name: str) -> tuple[list[Any], dict[str, list[Any]]]:
    """The template's nodes, and the templates it defines."""
    defines: dict[str, list[Any]] = {}
    root: list[Any] = []
    stack: list[tuple[Block | str, list[Any]]] = []
    current = root
    for piece in _split(source):
        if isinstance(piece, Text):
            if piece.text:
                current.append(piece)
            continue
        action = piece.source
        if action.startswith("/*"):
            continue
        keyword, _, rest = action.partition(" ")
        if keyword in ("if", "with", "range"):
            block = Block(keyword, rest.strip(), piece.line)
            current.append(block)
            stack.append((block, current))
            current = block.body
        elif keyword == "define":
            define_name = json.loads(rest.strip())
            body: list[Any] = []
            defines[define_name] = body
            stack.append((f"define {define_name}", current))
            current = body
        elif keyword == "else":
            if not stack or not isinstance(stack[-1][0], Block):
                raise TemplateError(f"{name}:{piece.line}: else outside a block")
            block = stack[-1][0]
            condition = rest.strip()
            condition = condition.removeprefix("if ").strip() if condition else ""
            branch: list[Any] = []
            block.branches.append((condition or None, branch))
            current = branch
        elif keyword == "end":
            if not stack:
                raise TemplateError(f"{name}:{piece.line}: end without a block")
            _, current = stack.pop()
        else:
            current.append(piece)
    if stack:
        opened = stack[-1][0]
        what = opened.keyword if isinstance(opened, Block) else opened
        raise TemplateError(f"{name}: {what} is never closed with {{{{ end }}}}")
    return root, defines


# --- evaluation -----------------------------------------------------------------------------


def _truthy(value: Any) -> bool:
    return bool(value) if value is not None else False


def _to_yaml(value: Any) -> str:
    if value is None:
        return "null"
    return yaml.safe_dump(value, default_flow_style=False, sort_keys=True).rstrip("\n")


def _indent(width: int, text: Any) -> str:
    pad = " " * int(width)
    return "\n".join(pad + line for line in str(text).split("\n"))


def _quote(*values: Any) -> str:
    return " ".join(json.dumps(_str(v)) for v in values if v is not None)


def _str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


def _printf(pattern: str, *args: Any) -> str:
    converted = tuple(_str(a) if isinstance(a, bool) or a is None else a for a in args)
    return re.sub(r"%v", "%s", pattern) % converted


def _required(message: str, value: Any) -> Any:
    if value is None or value == "":
        raise TemplateError(f"required value missing: {message}")
    return value


def _default(fallback: Any, value: Any = None) -> Any:
    return value if _truthy(value) else fallback


def _fail(message: str) -> Any:
    raise TemplateError(f"fail: {message}")


def _index(collection: Any, *keys: Any) -> Any:
    """Go's index: a missing map key is nil; a list index out of range is an error."""
    value = collection
    for key in keys:
        if isinstance(value, Mapping):
            value = value.get(key)
        elif value is None:
            return None
        else:
            value = value[int(key)]
    return value


def _set(mapping: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    mapping[key] = value
    return mapping


def _merge(destination: dict[str, Any], *sources: Mapping[str, Any]) -> dict[str, Any]:
    """Sprig's merge: keys already in the destination win, maps merge deeply."""
    for source in sources:
        for key, value in source.items():
            if key not in destination:
                destination[key] = copy.deepcopy(value)
            elif isinstance(destination[key], dict) and isinstance(value, Mapping):
                _merge(destination[key], value)
    return destination


def _from_yaml_array(text: str) -> list[Any]:
    value = yaml.safe_load(text)
    return list(value or [])


def _uniq(items: list[Any]) -> list[Any]:
    seen: list[Any] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


Variables = ChainMap[str, Any]


class Renderer:
    def __init__(self, defines: dict[str, list[Any]]) -> None:
        self.defines = defines
        self.functions: dict[str, Callable[..., Any]] = {
            "include": self._include,
            "toYaml": _to_yaml,
            "nindent": lambda width, text: "\n" + _indent(width, text),
            "indent": _indent,
            "quote": _quote,
            "squote": lambda v: "'" + _str(v) + "'",
            "default": _default,
            "required": _required,
            "printf": _printf,
            "trunc": lambda n, s: _str(s)[: int(n)],
            "trimSuffix": lambda suffix, s: _str(s).removesuffix(suffix),
            "replace": lambda old, new, s: _str(s).replace(old, new),
            "lower": lambda s: _str(s).lower(),
            "upper": lambda s: _str(s).upper(),
            "toString": _str,
            "not": lambda v: not _truthy(v),
            "and": lambda *vs: next((v for v in vs if not _truthy(v)), vs[-1]),
            "or": lambda *vs: next((v for v in vs if _truthy(v)), vs[-1]),
            "eq": lambda a, *bs: any(a == b for b in bs),
            "ne": lambda a, b: a != b,
            "empty": lambda v: not _truthy(v),
            "join": lambda sep, items: sep.join(_str(i) for i in items),
            "splitList": lambda sep, s: _str(s).split(sep),
            "has": lambda needle, items: needle in (items or []),
            "contains": lambda substring, s: substring in _str(s),
            "nospace": lambda s: re.sub(r"\s", "", _str(s)),
            "list": lambda *items: list(items),
            "append": lambda items, item: [*(items or []), item],
            "first": lambda items: items[0] if items else None,
            "uniq": _uniq,
            "sortAlpha": lambda items: sorted(_str(i) for i in items),
            "dict": lambda *pairs: {_str(pairs[i]): pairs[i + 1] for i in range(0, len(pairs), 2)},
            "hasKey": lambda mapping, key: key in (mapping or {}),
            "index": _index,
            "set": _set,
            "merge": _merge,
            "deepCopy": copy.deepcopy,
            "toJson": lambda v: json.dumps(v, separators=(",", ":")),
            "fromJsonArray": lambda text: list(json.loads(text)),
            "fromYaml": lambda text: yaml.safe_load(text) or {},
            "fromYamlArray": _from_yaml_array,
            "fail": _fail,
            "tpl": self._tpl,
        }

    def _tpl(self, source: str, dot: Any) -> str:
        """Render a value as a template with the context given (Helm's tpl)."""
        nodes, defines = parse(_str(source), "tpl")
        return Renderer({**self.defines, **defines}).render(nodes, dot, ChainMap({"$": dot}))

    def _include(self, name: str, dot: Any) -> str:
        body = self.defines.get(name)
        if body is None:
            raise TemplateError(f'include: no template named "{name}"')
        return self.render(body, dot, ChainMap({"$": dot}))

    def render(self, nodes: list[Any], dot: Any, variables: Variables) -> str:
        out: list[str] = []
        for node in nodes:
            if isinstance(node, Text):
                out.append(node.text)
            elif isinstance(node, Action):
                value = self._pipeline(node.source, dot, variables, node.line)
                if value is not None:  # an assignment prints nothing
                    out.append(_str(value))
            else:
                out.append(self._block(node, dot, variables))
        return "".join(out)

    def _block(self, block: Block, dot: Any, variables: Variables) -> str:
        scope = variables.new_child()
        if block.keyword == "range":
            return self._range(block, dot, scope)
        value = self._pipeline(block.condition, dot, scope, block.line)
        if _truthy(value):
            return self.render(block.body, value if block.keyword == "with" else dot, scope)
        for condition, body in block.branches:
            if condition is None:
                return self.render(body, dot, scope)
            branch_value = self._pipeline(condition, dot, scope, block.line)
            if _truthy(branch_value):
                return self.render(body, dot, scope)
        return ""

    def _range(self, block: Block, dot: Any, scope: Variables) -> str:
        condition = block.condition
        names: list[str] = []
        if ":=" in condition:
            left, _, condition = condition.partition(":=")
            names = [n.strip() for n in left.split(",")]
        items = self._pipeline(condition, dot, scope, block.line)
        # Go ranges over a map in the order of its sorted keys.
        pairs = (
            sorted(items.items()) if isinstance(items, Mapping) else list(enumerate(items or []))
        )
        if not pairs:
            for branch_condition, body in block.branches:
                if branch_condition is None:
                    return self.render(body, dot, scope)
            return ""
        out = []
        for key, value in pairs:
            if len(names) == 2:
                scope[names[0]], scope[names[1]] = key, value
            elif len(names) == 1:
                scope[names[0]] = value
            out.append(self.render(block.body, value, scope))
        return "".join(out)

    # -- pipelines -------------------------------------------------------------------------

    def _pipeline(self, source: str, dot: Any, variables: Variables, line: int) -> Any:
        tokens = self._tokens(source, line)
        assign = declare = None
        if len(tokens) > 2 and tokens[1][0] == "assign":
            assign, declare = tokens[0][1], tokens[1][1] == ":="
            tokens = tokens[2:]
        value, rest = self._expression(tokens, dot, variables, line)
        if rest:
            raise TemplateError(f"line {line}: unexpected {rest[0][1]!r} in {{{{ {source} }}}}")
        if assign is not None:
            if declare:
                variables[assign] = value
            else:  # "=" changes the variable where it was declared, as Go does
                scope = next((m for m in variables.maps if assign in m), None)
                if scope is None:
                    raise TemplateError(f"line {line}: undefined variable {assign}")
                scope[assign] = value
            return None
        return value

    def _tokens(self, source: str, line: int) -> list[tuple[str, str]]:
        tokens: list[tuple[str, str]] = []
        position = 0
        source = source.rstrip()
        while position < len(source):
            match = _TOKEN.match(source, position)
            if match is None or match.end() == position:
                raise TemplateError(f"line {line}: cannot parse {source[position:]!r}")
            kind = match.lastgroup
            assert kind is not None
            tokens.append((kind, match.group(kind)))
            position = match.end()
        return tokens

    def _expression(
        self, tokens: list[tuple[str, str]], dot: Any, variables: Variables, line: int
    ) -> tuple[Any, list[tuple[str, str]]]:
        """A pipeline until a closing parenthesis or the end: ``cmd | cmd | ...``."""
        value, tokens = self._command(tokens, dot, variables, line, piped=())
        while tokens and tokens[0][0] == "pipe":
            value, tokens = self._command(tokens[1:], dot, variables, line, piped=(value,))
        return value, tokens

    def _command(
        self,
        tokens: list[tuple[str, str]],
        dot: Any,
        variables: Variables,
        line: int,
        piped: tuple[Any, ...],
    ) -> tuple[Any, list[tuple[str, str]]]:
        if not tokens:
            raise TemplateError(f"line {line}: missing value")
        kind, text = tokens[0]
        if kind == "word" and text not in ("true", "false", "nil"):
            function = self.functions.get(text)
            if function is None:
                raise TemplateError(f'line {line}: function "{text}" not defined')
            args: list[Any] = []
            tokens = tokens[1:]
            while tokens and tokens[0][0] not in ("pipe", "close"):
                arg, tokens = self._operand(tokens, dot, variables, line)
                args.append(arg)
            try:
                return function(*args, *piped), tokens
            except TemplateError:
                raise
            except Exception as error:
                raise TemplateError(f"line {line}: {text}: {error}") from error
        value, tokens = self._operand(tokens, dot, variables, line)
        if piped:
            raise TemplateError(f"line {line}: cannot pipe into a value")
        return value, tokens

    def _operand(
        self, tokens: list[tuple[str, str]], dot: Any, variables: Variables, line: int
    ) -> tuple[Any, list[tuple[str, str]]]:
        kind, text = tokens[0]
        rest = tokens[1:]
        if kind == "open":
            value, rest = self._expression(rest, dot, variables, line)
            if not rest or rest[0][0] != "close":
                raise TemplateError(f"line {line}: unclosed parenthesis")
            return value, rest[1:]
        if kind == "string":
            return json.loads(text), rest
        if kind == "raw":
            return text[1:-1], rest
        if kind == "number":
            return (float(text) if "." in text else int(text)), rest
        if kind == "word":
            if text in ("true", "false"):
                return text == "true", rest
            if text == "nil":
                return None, rest
            # a function used as an argument without parentheses takes the remaining args
            return self._command(tokens, dot, variables, line, piped=())
        if kind == "field":
            return self._field(text, dot, variables, line), rest
        raise TemplateError(f"line {line}: unexpected {text!r}")

    def _field(self, text: str, dot: Any, variables: Variables, line: int) -> Any:
        if text == ".":
            return dot
        if text.startswith("$"):
            name, _, path = text.partition(".")
            if name not in variables:
                raise TemplateError(f"line {line}: undefined variable {name}")
            value = variables[name]
        else:
            value, path = dot, text[1:]
        for part in path.split(".") if path else []:
            if isinstance(value, Mapping):
                value = value.get(part)
            elif value is None:
                return None
            else:
                raise TemplateError(f"line {line}: cannot read .{part} of {type(value).__name__}")
        return value


def render_chart(templates: Mapping[str, str], context: Mapping[str, Any]) -> dict[str, str]:
    """Render every template (``_*.tpl`` only define) with the Helm context given."""
    defines: dict[str, list[Any]] = {}
    parsed: dict[str, list[Any]] = {}
    for name, source in templates.items():
        nodes, found = parse(source, name)
        defines.update(found)
        if not name.rsplit("/", 1)[-1].startswith("_"):
            parsed[name] = nodes
    renderer = Renderer(defines)
    return {
        name: renderer.render(nodes, context, ChainMap({"$": context}))
        for name, nodes in parsed.items()
    }
