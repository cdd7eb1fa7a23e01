"""The API server's validation of the fields clients get wrong: label values on every object,
and events.k8s.io/v1 Events."""

from __future__ import annotations

import re
from typing import Any

from tests.kube.apiserver.routing import Resource
from tests.kube.apiserver.status import Reply, failure

_MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


#: A label value: empty, or at most 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends.
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")


def validate(r: Resource, body: dict[str, Any]) -> None:
    """The API server's validation of the fields clients get wrong: label values on every
    object, and events.k8s.io/v1 Events. A failure names the object and lists its causes."""
    problems: list[tuple[str, str]] = []
    for value in ((body.get("metadata") or {}).get("labels") or {}).values():
        if not isinstance(value, str) or not _LABEL_VALUE.match(value):
            problems.append(("metadata.labels", f"Invalid value: {value!r}: not a label value"))
    if (r.group, r.plural) == ("events.k8s.io", "events"):
        problems += _event_problems(body)
    if problems:
        name = (body.get("metadata") or {}).get("name", "")
        kind = str(body.get("kind") or r.plural)
        group = f".{r.group}" if r.group else ""
        summary = "; ".join(f"{field}: {message}" for field, message in problems)
        raise Reply(
            422,
            failure(
                422,
                "Invalid",
                f'{kind}{group} "{name}" is invalid: {summary}',
                name=name,
                group=r.group,
                kind=kind,
                causes=[
                    {"reason": "FieldValueInvalid", "message": message, "field": field}
                    for field, message in problems
                ],
            ),
        )


def _event_problems(body: dict[str, Any]) -> list[tuple[str, str]]:
    problems = []
    if not _MICRO_TIME.match(str(body.get("eventTime") or "")):
        problems.append(("eventTime", "Required value (a MicroTime)"))
    for name in ("reportingController", "reportingInstance", "action", "reason"):
        value = body.get(name)
        if not value:
            problems.append((name, "Required value"))
        elif len(value) > 128:
            problems.append((name, "Too long: must have at most 128 bytes"))
    if len((body.get("note") or "").encode()) > 1024:
        problems.append(("note", "Too long: must have at most 1024 bytes"))
    if body.get("type") not in ("Normal", "Warning"):
        problems.append(("type", f"Unsupported value: {body.get('type')!r}"))
    if not (body.get("regarding") or {}).get("kind"):
        problems.append(("regarding.kind", "Required value"))
    series = body.get("series")
    if series is not None and (
        int(series.get("count") or 0) < 2
        or not _MICRO_TIME.match(str(series.get("lastObservedTime") or ""))
    ):
        problems.append(("series", "count must be >= 2 with a lastObservedTime"))
    return problems
