"""Render the hook reference (``docs/plugins/hooks.md``) from the hook specs.

The specs are the contract; the reference is generated from them so the two cannot drift
(``tests/test_docs.py`` fails when the committed page differs). Regenerate with::

    python -m nodewright.plugin.reference > docs/plugins/hooks.md
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from nodewright.plugin import hookspecs
from nodewright.plugin.names import NAME

_BANNER = re.compile(r"^# -{10,}\n# (?P<title>[^\n]+)\n# -{10,}$", re.MULTILINE)
_ROLE = re.compile(r":(?:class|mod|func|data|meth|attr|exc):`~?(?P<target>[^`]+)`")


def hook_functions(module: ModuleType = hookspecs) -> list[Callable[..., Any]]:
    """The hook specs of ``module``, in source order."""
    found = [
        obj
        for name, obj in vars(module).items()
        if name.startswith(f"{NAME}_") and inspect.isfunction(obj)
    ]
    return sorted(found, key=lambda f: f.__code__.co_firstlineno)


def signature(function: Callable[..., Any]) -> str:
    """``name(arg: Type, ...) -> Return``, exactly as the spec declares it."""
    parameters = []
    for parameter in inspect.signature(function).parameters.values():
        annotation = parameter.annotation
        text = parameter.name
        if annotation is not inspect.Parameter.empty:
            text += f": {annotation if isinstance(annotation, str) else annotation.__name__}"
        parameters.append(text)
    returns = inspect.signature(function).return_annotation
    suffix = "" if returns is inspect.Signature.empty else f" -> {returns}"
    return f"{function.__name__}({', '.join(parameters)}){suffix}"


def _markdown(text: str) -> str:
    """The reST subset the specs use, as Markdown: roles, double backticks, ``::`` blocks."""

    def role(match: re.Match[str]) -> str:
        target = match.group("target")
        shown = target.rsplit(".", 1)[-1] if match.group(0).count("~") else target
        return f"`{shown}`"

    lines = inspect.cleandoc(text).splitlines()
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = _ROLE.sub(role, lines[index]).replace("``", "`")
        if line.endswith("::"):
            out.append(line[:-1])
            index += 1
            block: list[str] = []
            while index < len(lines) and (not lines[index].strip() or lines[index][:1] == " "):
                block.append(lines[index])
                index += 1
            code = inspect.cleandoc("\n".join(block))
            language = "toml" if code.startswith("[") else "python"
            out += ["", f"```{language}", code, "```", ""]
            continue
        out.append(line)
        index += 1
    return "\n".join(out).strip()


def _call_style(function: Callable[..., Any]) -> str:
    options = getattr(function, f"{NAME}_spec", {}) or {}
    if options.get("firstresult"):
        return (
            "*Owner hook*: only the owning provider's implementation is called, and its "
            "answer is the result."
        )
    return "*Called on every plugin that implements it*, one at a time."


def _sections(module: ModuleType) -> Iterator[tuple[str, list[Callable[..., Any]]]]:
    source = inspect.getsource(module)
    banners = [
        (source.count("\n", 0, match.start()) + 1, match.group("title"))
        for match in _BANNER.finditer(source)
    ]
    current: tuple[str, list[Callable[..., Any]]] | None = None
    for function in hook_functions(module):
        line = function.__code__.co_firstlineno
        title = next((t for start, t in reversed(banners) if start < line), "Hooks")
        if current is None or current[0] != title:
            if current is not None:
                yield current
            current = (title, [])
        current[1].append(function)
    if current is not None:
        yield current


def render(module: ModuleType = hookspecs) -> str:
    """The whole reference page."""
    out = [
        "# Hook reference",
        "",
        "<!-- Generated from nodewright/plugin/hookspecs.py by",
        "     `python -m nodewright.plugin.reference > docs/plugins/hooks.md`. Do not edit. -->",
        "",
        _markdown(module.__doc__ or ""),
        "",
        "Mark implementations with `from nodewright.plugin import hookimpl`.",
        "",
    ]
    for title, functions in _sections(module):
        out += [f"## {title}", ""]
        for function in functions:
            out += [
                f"### `{signature(function)}`",
                "",
                _call_style(function),
                "",
                _markdown(function.__doc__ or ""),
                "",
            ]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
