"""Just enough of a Dockerfile reader for the tests: stages, their instructions, and the
values of ``ARG`` and ``ENV`` lines (no engine here to build the image)."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Instruction:
    keyword: str
    arguments: str

    def exec_form(self) -> list[str]:
        """``["a", "b"]`` of ENTRYPOINT/CMD; a shell-form line is an error."""
        value = json.loads(self.arguments)
        assert isinstance(value, list), f"{self.keyword} is not in exec form: {self.arguments}"
        return [str(v) for v in value]


@dataclass
class Stage:
    base: str
    name: str
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def env(self) -> dict[str, str]:
        """The ``ENV KEY=VALUE ...`` settings of this stage, ``${ARG}`` left as written."""
        values: dict[str, str] = {}
        for line in self.all("ENV"):
            for pair in shlex.split(line.arguments):
                key, _, value = pair.partition("=")
                values[key] = value
        return values


@dataclass
class Dockerfile:
    args: dict[str, str]
    stages: list[Stage]

    def stage(self, name: str) -> Stage:
        (found,) = [s for s in self.stages if s.name == name]
        return found


def logical_lines(text: str) -> list[str]:
    """Lines with comments dropped and backslash continuations joined."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        if raw.lstrip().startswith("#"):
            continue
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        line = (pending + raw).strip()
        pending = ""
        if line:
            lines.append(re.sub(r"\s+", " ", line))
    return lines


def parse(path: Path) -> Dockerfile:
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in logical_lines(path.read_text()):
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            words = rest.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else ""
            stages.append(Stage(words[0], name))
        elif not stages:
            if keyword == "ARG":
                key, _, value = rest.partition("=")
                args[key] = value
        else:
            stages[-1].instructions.append(Instruction(keyword, rest))
    return Dockerfile(args, stages)
