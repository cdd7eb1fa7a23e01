"""What YAML values read as, and which line they are on, whichever way the text is read: the
quick reader of plain documents (libyaml's events) or the full loader it leaves anything else
to (tags, merge keys, problems). Values are YAML 1.1, as PyYAML's safe loader reads them."""

from __future__ import annotations

import math
from datetime import date, datetime, timedelta, timezone

import pytest
import yaml

from nodewright.api.manifests.documents import line_of, parse_documents, parse_yaml
from nodewright.api.manifests.errors import ManifestError
from nodewright.api.manifests.limits import Limits
from nodewright.api.manifests.marked import MarkedDict, MarkedList


@pytest.fixture(params=["quick", "full"])
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test runs with the quick reader, and with only the full loader (as where PyYAML
    has no libyaml)."""
    if request.param == "full":
        monkeypatch.setattr(yaml, "__with_libyaml__", False)
    return str(request.param)


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("yes", True),
        ("No", False),
        ("ON", True),
        ("off", False),
        ("true", True),
        ("y", "y"),
        ("n", "n"),
        ("'yes'", "yes"),
        ("010", 8),
        ('"010"', "010"),
        ("0o10", "0o10"),
        ("0x1F", 31),
        ("0b101", 5),
        ("1_000", 1000),
        ("+12", 12),
        ("1:30", 90),
        ("3.", 3.0),
        ("1.5e+3", 1500.0),
        ("1.5e3", "1.5e3"),
        ("1e3", "1e3"),
        (".inf", math.inf),
        ("-.Inf", -math.inf),
        ("~", None),
        ("null", None),
        ("", None),
        ("2001-12-14", date(2001, 12, 14)),
        (
            "2001-12-14t21:59:43.10-05:00",
            datetime(2001, 12, 14, 21, 59, 43, 100000, tzinfo=timezone(timedelta(hours=-5))),
        ),
        ("'2026-11-20T09:00:00Z'", "2026-11-20T09:00:00Z"),
        ("!!str 12", "12"),
        ("!!int '7'", 7),
        ("250m", "250m"),
        ("|\n  two\n  lines", "two\nlines\n"),
    ],
)
def test_a_value_reads_as_yaml_1_1_says(reader: str, written: str, read: object) -> None:
    document = parse_yaml(f"value: {written}\n", "v.yaml")
    assert isinstance(document, dict)
    value = document["value"]
    assert value == read
    assert type(value) is type(read)


def test_not_a_number_reads_as_a_float(reader: str) -> None:
    document = parse_yaml("value: .NaN\n", "v.yaml")
    assert isinstance(document, dict)
    value = document["value"]
    assert isinstance(value, float)
    assert math.isnan(value)


def test_anchors_aliases_and_merge_keys_read_as_before(reader: str) -> None:
    text = (
        "labels: &labels {app: web, tier: front}\n"
        "selector: {matchLabels: *labels}\n"
        "template: {metadata: {labels: *labels}}\n"
        "base: &base {cpu: 1, memory: 2}\n"
        "merged: {<<: *base, cpu: 3}\n"
        "name: &name web\n"
        "again: *name\n"
    )
    document = parse_yaml(text, "a.yaml")
    assert document == {
        "labels": {"app": "web", "tier": "front"},
        "selector": {"matchLabels": {"app": "web", "tier": "front"}},
        "template": {"metadata": {"labels": {"app": "web", "tier": "front"}}},
        "base": {"cpu": 1, "memory": 2},
        "merged": {"cpu": 3, "memory": 2},
        "name": "web",
        "again": "web",
    }


def test_keys_that_are_not_strings_read_as_before(reader: str) -> None:
    document = parse_yaml("2: two\ntrue: yes\n~: nothing\n", "k.yaml")
    assert document == {2: "two", True: True, None: "nothing"}


def test_lines_of_keys_items_and_documents(reader: str) -> None:
    text = (
        "apiVersion: v1\n"
        "kind: List\n"
        "items:\n"
        "- kind: Pod\n"
        "  metadata:\n"
        "    name: web\n"
        "  spec:\n"
        "    containers:\n"
        "    - name: a\n"
        "    - name: b\n"
        "      image: pause\n"
        "---\n"
        "kind: Node\n"
        "metadata: {name: n1,\n"
        "  labels: {zone: a}}\n"
    )
    first, second = parse_documents(text, "l.yaml")
    assert line_of(first, []) == 1
    assert line_of(first, ["items"]) == 3
    assert line_of(first, ["items", 0]) == 4
    assert line_of(first, ["items", 0, "metadata", "name"]) == 6
    assert line_of(first, ["items", 0, "spec", "containers", 1]) == 10
    assert line_of(first, ["items", 0, "spec", "containers", 1, "image"]) == 11
    assert line_of(first, ["items", 0, "spec", "missing", 3]) == 7
    assert line_of(second, ["metadata", "labels", "zone"]) == 15
    assert isinstance(first, MarkedDict)
    assert first.span == text.index("---")
    assert isinstance(first["items"], MarkedList)


def test_an_alias_is_on_the_line_of_what_it_names(reader: str) -> None:
    (document,) = parse_documents("a: &x {b: 1}\nc:\n- *x\n- d\n", "x.yaml")
    assert line_of(document, ["c", 0, "b"]) == 1
    assert line_of(document, ["c", 1]) == 4


@pytest.mark.parametrize(
    ("text", "limits", "where", "message"),
    [
        ("a: [[[1]]]\n", Limits(depth=3), "x.yaml:1:6", "refused: nested more than 3 levels deep"),
        (
            "a: [1, 2, 3]\n",
            Limits(values=4),
            "x.yaml:1:8",
            "refused: more than 4 values in one file",
        ),
        (
            "a: bbbbbb\n",
            Limits(string_length=5),
            "x.yaml:1:4",
            "refused: a string of 6 characters; at most 5 are read",
        ),
        (
            "a: 1\n---\nb: 2\n",
            Limits(documents=1),
            "x.yaml:2:1",
            "refused: more than 1 documents in one file",
        ),
        (
            "a: &a [1, 2]\nb: [*a, *a]\n",
            Limits(alias_values=5),
            "x.yaml:2:9",
            "refused: aliases expand to more than 5 values in one document",
        ),
        (
            "a: &a [*a]\n",
            Limits(),
            "x.yaml:1:8",
            "refused: alias *a is inside its own anchor (a cycle)",
        ),
        ("a: 1\na: 2\n", Limits(), "x.yaml:2:1", "malformed YAML: found duplicate key 'a'"),
        ("a: '1'\n'a': 2\n", Limits(), "x.yaml:2:1", "malformed YAML: found duplicate key 'a'"),
        (
            "a: *nowhere\n",
            Limits(),
            "x.yaml:1:4",
            "malformed YAML: found undefined alias 'nowhere'",
        ),
        ("a: [1\n", Limits(), "x.yaml:2:1", "malformed YAML: did not find expected ',' or ']'"),
    ],
)
def test_limits_and_problems_are_the_same_either_way(
    reader: str, text: str, limits: Limits, where: str, message: str
) -> None:
    with pytest.raises(ManifestError) as raised:
        parse_documents(text, "x.yaml", limits)
    assert (raised.value.source, raised.value.message) == (where, message)
