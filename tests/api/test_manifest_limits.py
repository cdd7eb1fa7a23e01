"""Loading never crashes and never runs away: limits on what a manifest may hold, and a clear
error naming file and line for everything beyond them (issue 18's crashing inputs)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nodewright.api.manifests.documents import parse_documents, parse_yaml
from nodewright.api.manifests.errors import ManifestError
from nodewright.api.manifests.files import read_manifest
from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.limits import Limits
from nodewright.api.manifests.loading import load_manifests

POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: a}]}\n"

#: A "billion laughs" document: nine aliases per level, nine levels (387 million values).
ALIAS_BOMB = "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n" + "".join(
    f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * 9)}]\n" if level else 'l0: &l0 ["x"]\n'
    for level in range(10)
)


def _error(text: str, source: str = "x.yaml", limits: Limits | None = None) -> ManifestError:
    with pytest.raises(ManifestError) as raised:
        parse_documents(text, source, *(limits,) if limits else ())
    return raised.value


@pytest.mark.parametrize("opening", ["[", "{a: "], ids=["lists", "mappings"])
def test_a_thousand_nested_levels_are_refused_with_their_line(opening: str) -> None:
    error = _error("kind: Pod\nspec: " + opening * 1000)
    assert error.source.startswith("x.yaml:2:")
    assert error.message == "refused: nested more than 100 levels deep"


def test_nesting_up_to_the_limit_is_read() -> None:
    (document,) = parse_documents("a: " + "[" * 99 + "]" * 99 + "\n", "x.yaml")
    depth, value = 1, document["a"]
    while isinstance(value, list) and value:
        depth, value = depth + 1, value[0]
    assert depth == 99


def test_an_alias_bomb_is_refused_before_it_expands() -> None:
    error = _error(ALIAS_BOMB)
    assert error.message == "refused: aliases expand to more than 100000 values in one document"
    assert error.source.startswith("x.yaml:9:")  # level 5, whose aliases pass the limit


def test_ordinary_aliases_and_merge_keys_are_read() -> None:
    text = "base: &base {a: 1, b: 2}\nmerged:\n  <<: *base\n  b: 3\ncopy: *base\n"
    (document,) = parse_documents(text, "m.yaml")
    assert document["merged"] == {"a": 1, "b": 3}
    assert document["copy"] == {"a": 1, "b": 2}


def test_a_recursive_alias_is_refused() -> None:
    error = _error("a: &a [1, *a]\n")
    assert "alias *a is inside its own anchor" in error.message


def test_too_many_documents_are_refused() -> None:
    error = _error("---\na: 1\n" * 6, limits=Limits(documents=5))
    assert error.message == "refused: more than 5 documents in one file"
    assert error.source.startswith("x.yaml:11:")


def test_a_very_long_string_is_refused_and_not_echoed() -> None:
    error = _error(f"a: {'x' * 300_000}\n")
    assert error.message == "refused: a string of 300000 characters; at most 262144 are read"
    assert len(str(error)) < 200


def test_a_file_over_the_size_limit_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(POD + "# padding\n" * 200)
    with pytest.raises(ManifestError, match=r"refused: \d+ bytes is more than the 1000"):
        read_manifest(path, Limits(file_bytes=1000))


def test_an_object_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "pods.yaml"
    big = POD.replace(
        "metadata: {name: web}", "metadata: {name: big, annotations: {a: " + "x" * 600 + "}}"
    )
    path.write_text(POD + "---\n" + big)
    result = load_manifests([path], KindRegistry(), limits=Limits(object_bytes=500))
    (error,) = result.errors
    assert error.source == f"{path}:6"
    assert error.message.startswith("refused: an object of ")
    assert [o.name for o in result.objects] == ["web"]


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("1" * 5000, "cannot read '1111"),  # Python refuses ints of more than 4300 digits
        ("2024-13-45", "cannot read '2024-13-45': month must be in 1..12"),
    ],
    ids=["integer-of-5000-digits", "impossible-date"],
)
def test_values_python_cannot_build_are_errors_at_their_line(value: str, words: str) -> None:
    error = _error(f"kind: Pod\nmetadata:\n  name: {value}\n")
    assert error.source == "x.yaml:3:9"
    assert words in error.message
    assert len(str(error)) < 300


def test_a_nul_byte_in_the_text_names_its_line() -> None:
    error = _error("a: 1\nb: \x00\n")
    assert error.source == "x.yaml:2"
    assert "malformed YAML: character '\\x00' is not allowed" in str(error)


def test_a_file_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(ManifestError) as raised:
        read_manifest(path)
    assert str(raised.value) == f"{path}:2: not UTF-8 text (byte 0xe9)"


def test_a_fifo_is_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    result = load_manifests([fifo], KindRegistry())
    assert [str(e) for e in result.errors] == [f"{fifo}: not a regular file or directory"]


def test_a_path_with_a_nul_byte_is_an_error_not_a_crash() -> None:
    result = load_manifests([Path("bad\x00.yaml")], KindRegistry())
    (error,) = result.errors
    assert error.message == "not a valid path"


def test_an_empty_file_among_others_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("# nothing yet\n")
    (tmp_path / "b.yaml").write_text(POD)
    result = load_manifests([tmp_path], KindRegistry())
    assert not result.errors
    assert [str(w) for w in result.warnings] == [f"{tmp_path / 'a.yaml'}: no objects in this file"]


def test_nothing_to_read_at_all_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty.yaml").write_text("")
    result = load_manifests([tmp_path / "empty.yaml"], KindRegistry())
    assert [e.message for e in result.errors] == [
        "no objects to read (the files are empty or only comments)"
    ]


def test_a_directory_without_manifests_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a manifest")
    result = load_manifests([tmp_path], KindRegistry())
    assert [str(e) for e in result.errors] == [
        f"{tmp_path}: directory has no manifest files (names ending .yaml, .yml, .json)"
    ]


def test_too_many_files_are_refused(tmp_path: Path) -> None:
    for index in range(4):
        (tmp_path / f"{index}.yaml").write_text(POD.replace("web", f"web-{index}"))
    result = load_manifests([tmp_path], KindRegistry(), limits=Limits(files=3))
    assert [e.message for e in result.errors] == ["refused: more than 3 files in one load"]


def test_json_with_tabs_keeps_its_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "pod.json"
    path.write_text('{\n\t"apiVersion": "v1",\n\t"kind": "Pod",\n\t"metadata": {"name": "A"}\n}\n')
    result = load_manifests([path], KindRegistry())
    assert [e.source for e in result.errors] == [f"{path}:4", f"{path}:1"]


def test_json_yaml_cannot_read_has_the_same_limits(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    long_key = "k" * 2000  # YAML reads implicit keys of at most 1024 characters
    path.write_text('{"' + long_key + '": ' + "[" * 150 + "]" * 150 + "}")
    result = load_manifests([path], KindRegistry())
    assert [str(e) for e in result.errors] == [f"{path}: refused: nested more than 100 levels deep"]


def test_a_scenario_is_read_with_the_same_limits() -> None:
    with pytest.raises(ManifestError, match="refused: nested more than 100 levels deep"):
        parse_yaml("- settle: " + "[" * 500, "scenario.yaml")
    assert parse_yaml("- advance: 5m\n", "scenario.yaml") == [{"advance": "5m"}]
