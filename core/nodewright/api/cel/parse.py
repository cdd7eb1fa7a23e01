"""The CEL grammar of device selectors, parsed into a small tree.

A DeviceClass or a claim's request picks devices with CEL expressions over one variable,
``device`` (``device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].memory
>= 40``). Kubernetes compiles them with cel-go in its base environment; nodewright parses the
whole CEL expression grammar here (operators, member access, indexes, calls, list and map
literals, ternaries) and :mod:`nodewright.api.cel.program` evaluates the part of the
language selectors use. What it does not evaluate is refused when the expression is read
(:class:`CelUnsupported`), never guessed at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The API server's limit on a selector's length (``CELSelectorExpressionMaxLength``).
MAX_LENGTH = 10 * 1024
#: Nesting beyond this is refused (cel-go's parser stops at 250 recursions as well).
MAX_DEPTH = 100


class CelError(ValueError):
    """An expression that is not CEL, or fails when evaluated (a CEL error value)."""


class CelUnsupported(CelError):
    """Valid CEL that nodewright does not evaluate; the message names what."""


# --- the tree -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Literal:
    value: object


@dataclass(frozen=True, slots=True)
class Ident:
    name: str


@dataclass(frozen=True, slots=True)
class Select:
    operand: Node
    field: str
    #: ``has(operand.field)``: a presence test instead of a read.
    test_only: bool = False


@dataclass(frozen=True, slots=True)
class Index:
    operand: Node
    index: Node


@dataclass(frozen=True, slots=True)
class Call:
    function: str
    target: Node | None
    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class ListExpr:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class MapExpr:
    entries: tuple[tuple[Node, Node], ...]


@dataclass(frozen=True, slots=True)
class Unary:
    op: str
    operand: Node


@dataclass(frozen=True, slots=True)
class Binary:
    op: str
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Conditional:
    condition: Node
    then: Node
    otherwise: Node


@dataclass(frozen=True, slots=True)
class Comprehension:
    """A macro over a list or map: ``all``, ``exists``, ``exists_one``, ``map``, ``filter``."""

    macro: str
    target: Node
    variable: str
    body: Node
    #: ``map(x, predicate, transform)``'s transform.
    transform: Node | None = None


Node = (
    Literal
    | Ident
    | Select
    | Index
    | Call
    | ListExpr
    | MapExpr
    | Unary
    | Binary
    | Conditional
    | Comprehension
)

# --- tokens -------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<number>(?:0[xX][0-9a-fA-F]+
      |[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?
      |\.[0-9]+(?:[eE][+-]?[0-9]+)?)[uU]?)
  | (?P<string>[rRbB]{0,2}(?:\"\"\"|'''|"|'))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||[-+*/%!<>?:.,()\[\]{}])
    """,
    re.VERBOSE,
)
_RESERVED = frozenset(
    [
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)
_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "`": "`",
    "?": "?",
}


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # number, string, ident, op, end
    text: str
    value: object = None


def _string(expression: str, start: int, prefix: str, quote: str) -> tuple[str, int]:
    """The string literal whose opening quote ends at ``start``, and where it ends."""
    raw = "r" in prefix.lower()
    out: list[str] = []
    i = start
    while True:
        if i >= len(expression):
            raise CelError(f"unterminated string literal at {start - len(quote)}")
        if expression.startswith(quote, i):
            return "".join(out), i + len(quote)
        ch = expression[i]
        if ch == "\n" and len(quote) == 1:
            raise CelError(f"newline in a string literal at {i}")
        if ch == "\\" and not raw:
            i += 1
            if i >= len(expression):
                raise CelError("unterminated escape sequence")
            esc = expression[i]
            if esc in _ESCAPES:
                out.append(_ESCAPES[esc])
                i += 1
                continue
            hex_digits = {"x": 2, "u": 4, "U": 8}.get(esc)
            if hex_digits is not None:
                digits = expression[i + 1 : i + 1 + hex_digits]
                if len(digits) != hex_digits or not re.fullmatch(r"[0-9a-fA-F]+", digits):
                    raise CelError(f"invalid escape sequence \\{esc} at {i - 1}")
                out.append(chr(int(digits, 16)))
                i += 1 + hex_digits
                continue
            if esc in "0123":
                digits = expression[i : i + 3]
                if len(digits) != 3 or not re.fullmatch(r"[0-7]{3}", digits):
                    raise CelError(f"invalid octal escape at {i - 1}")
                out.append(chr(int(digits, 8)))
                i += 3
                continue
            raise CelError(f"invalid escape sequence \\{esc} at {i - 1}")
        out.append(ch)
        i += 1


def _number(text: str) -> object:
    if text[-1] in "uU":
        raise CelUnsupported(f"unsigned integer literal {text}: uint values are not evaluated")
    if text.lower().startswith("0x"):
        return int(text, 16)
    if any(c in text for c in ".eE"):
        return float(text)
    return int(text)


def tokenize(expression: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while position < len(expression):
        match = _TOKEN.match(expression, position)
        if match is None:
            raise CelError(f"unexpected character {expression[position]!r} at position {position}")
        kind = match.lastgroup or ""
        text = match.group()
        if kind == "space":
            position = match.end()
            continue
        if kind == "string":
            quote = text.lstrip("rRbB")
            prefix = text[: len(text) - len(quote)]
            if "b" in prefix.lower():
                raise CelUnsupported("bytes literals are not evaluated")
            value, position = _string(expression, match.end(), prefix, quote)
            tokens.append(_Token("string", expression[match.start() : position], value))
            continue
        if kind == "number":
            tokens.append(_Token("number", text, _number(text)))
        elif kind == "ident" and text in ("true", "false", "null"):
            tokens.append(_Token("literal", text, {"true": True, "false": False}.get(text)))
        elif kind == "ident" and text in ("in",):
            tokens.append(_Token("op", text))
        elif kind == "ident" and text in _RESERVED:
            raise CelError(f"reserved identifier {text!r}")
        else:
            tokens.append(_Token(kind, text))
        position = match.end()
    tokens.append(_Token("end", ""))
    return tokens


# --- the parser ---------------------------------------------------------------------------------

_RELATIONS = ("<", "<=", ">=", ">", "==", "!=", "in")
_MACROS = {"all": 2, "exists": 2, "exists_one": 2, "filter": 2, "map": (2, 3)}


class _Parser:
    def __init__(self, expression: str) -> None:
        self.tokens = tokenize(expression)
        self.at = 0
        self.depth = 0

    def peek(self, text: str) -> bool:
        token = self.tokens[self.at]
        return token.kind == "op" and token.text == text

    def take(self, text: str) -> bool:
        if self.peek(text):
            self.at += 1
            return True
        return False

    def expect(self, text: str) -> None:
        if not self.take(text):
            found = self.tokens[self.at].text or "the end"
            raise CelError(f"expected {text!r}, found {found!r}")

    def parse(self) -> Node:
        node = self.expr()
        if self.tokens[self.at].kind != "end":
            raise CelError(f"unexpected {self.tokens[self.at].text!r} after the expression")
        return node

    def expr(self) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CelError(f"expression nested more than {MAX_DEPTH} deep")
        condition = self.binary_level(0)
        if self.take("?"):
            then = self.binary_level(0)
            self.expect(":")
            otherwise = self.expr()
            condition = Conditional(condition, then, otherwise)
        self.depth -= 1
        return condition

    _LEVELS: tuple[tuple[str, ...], ...] = (
        ("||",),
        ("&&",),
        _RELATIONS,
        ("+", "-"),
        ("*", "/", "%"),
    )

    def binary_level(self, level: int) -> Node:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary_level(level + 1)
        ops = self._LEVELS[level]
        while True:
            token = self.tokens[self.at]
            if token.kind != "op" or token.text not in ops:
                return left
            self.at += 1
            right = self.binary_level(level + 1)
            left = Binary(token.text, left, right)

    def unary(self) -> Node:
        for op in ("!", "-"):
            if self.peek(op):
                count = 0
                while self.take(op):
                    count += 1
                operand = self.member()
                if op == "-" and isinstance(operand, Literal) and count % 2 == 1:
                    value = operand.value
                    if isinstance(value, int | float) and not isinstance(value, bool):
                        return Literal(-value)
                for _ in range(count):
                    operand = Unary(op, operand)
                return operand
        return self.member()

    def member(self) -> Node:
        node = self.primary()
        while True:
            if self.take("."):
                token = self.tokens[self.at]
                if token.kind != "ident":
                    raise CelError(f"expected a field name after '.', found {token.text!r}")
                self.at += 1
                node = self.call(token.text, node) if self.take("(") else Select(node, token.text)
            elif self.take("["):
                index = self.expr()
                self.expect("]")
                node = Index(node, index)
            else:
                return node

    def arguments(self, closing: str) -> tuple[Node, ...]:
        args: list[Node] = []
        if self.take(closing):
            return ()
        while True:
            args.append(self.expr())
            if self.take(closing):
                return tuple(args)
            self.expect(",")
            if self.take(closing):
                return tuple(args)

    def call(self, function: str, target: Node | None) -> Node:
        args = self.arguments(")")
        if target is not None and function in _MACROS:
            counts = _MACROS[function]
            allowed = counts if isinstance(counts, tuple) else (counts,)
            if len(args) in allowed:
                variable = args[0]
                if not isinstance(variable, Ident):
                    raise CelError(f"{function}() needs a variable name as its first argument")
                transform = args[2] if len(args) == 3 else None
                return Comprehension(function, target, variable.name, args[1], transform)
        if target is None and function == "has":
            if len(args) != 1 or not isinstance(args[0], Select):
                raise CelError("has() needs one field selection, such as has(a.b)")
            selected = args[0]
            return Select(selected.operand, selected.field, test_only=True)
        return Call(function, target, args)

    def primary(self) -> Node:
        token = self.tokens[self.at]
        self.at += 1
        if token.kind in ("number", "string", "literal"):
            return Literal(token.value)
        if token.kind == "ident":
            if self.take("("):
                return self.call(token.text, None)
            return Ident(token.text)
        if token.kind == "op":
            if token.text == ".":
                name = self.tokens[self.at]
                if name.kind != "ident":
                    raise CelError("expected an identifier after a leading '.'")
                self.at += 1
                if self.take("("):
                    return self.call(name.text, None)
                return Ident(name.text)
            if token.text == "(":
                node = self.expr()
                self.expect(")")
                return node
            if token.text == "[":
                return ListExpr(self.arguments("]"))
            if token.text == "{":
                return self.map_literal()
        found = token.text or "the end of the expression"
        raise CelError(f"unexpected {found!r}")

    def map_literal(self) -> Node:
        entries: list[tuple[Node, Node]] = []
        if self.take("}"):
            return MapExpr(())
        while True:
            key = self.expr()
            self.expect(":")
            entries.append((key, self.expr()))
            if self.take("}"):
                return MapExpr(tuple(entries))
            self.expect(",")
            if self.take("}"):
                return MapExpr(tuple(entries))


def parse(expression: str) -> Node:
    """The expression's tree; raises :class:`CelError` for text that is not CEL."""
    if len(expression) > MAX_LENGTH:
        raise CelError(f"expression is longer than {MAX_LENGTH} characters")
    return _Parser(expression).parse()
