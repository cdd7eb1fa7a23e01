"""Every file of user input goes through one guarded reader: manifests, scenarios, dumps, the
scheduler configuration, a provider's catalog file and the kubeconfig are read only when they
are regular files within the limits, parsed within the same limits, and a problem is one
``error:`` line naming the file and line, exit status 2; never a traceback, never a wait."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from nodewright.api.manifests import documents
from nodewright.api.manifests.documents import parse_documents
from nodewright.api.manifests.errors import ManifestError
from nodewright.api.manifests.marked import MarkedDict
from nodewright.commands import main
from nodewright.testing.manifests import KWOK_NODE_CLASS, node_pool

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "inflate" / "manifests"

#: Each reader, as the command line names a file to it.
READERS = {
    "scenario": ["simulate", str(EXAMPLE), "--scenario"],
    "dump": ["simulate", "--from-dump"],
    "scheduler config": ["simulate", str(EXAMPLE), "--scheduler-config"],
    "kwok catalog": ["simulate", str(EXAMPLE), "--provider-option"],
    "kubeconfig": ["simulate", "--from-cluster", "--kubeconfig"],
    "manifests": ["simulate"],
}


def _argv(reader: str, path: Path) -> list[str]:
    argv = list(READERS[reader])
    if reader == "kwok catalog":
        return [*argv, f"kwok.instance-types-file={path}"]
    return [*argv, str(path)]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err


@contextmanager
def _never_blocking(fifo: Path) -> Iterator[None]:
    """While the body runs, whatever waits on ``fifo`` for a writer gets one that closes at
    once (an end of file), so a reader that waits fails its assertions instead of hanging."""
    done = threading.Event()

    def unblock() -> None:
        while not done.wait(0.2):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                continue  # nobody is reading

    thread = threading.Thread(target=unblock, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_fifo_is_refused_by_every_reader_without_waiting(
    reader: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "input.yaml"
    os.mkfifo(fifo)
    with _never_blocking(fifo):
        code, err = _run(_argv(reader, fifo), capsys)
    assert code == 2
    (line,) = err.splitlines()
    assert line.startswith("error: ")
    assert f"{fifo}: not a regular file" in line


@pytest.mark.parametrize("reader", sorted(set(READERS) - {"manifests"}))
def test_a_device_is_refused_by_every_reader(
    reader: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(_argv(reader, Path("/dev/zero")), capsys)
    assert code == 2
    (line,) = err.splitlines()
    assert "/dev/zero: not a regular file" in line


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_yaml_escape_beyond_unicode_is_an_error_at_its_line(
    reader: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "input.yaml"
    path.write_text('# a comment\nkey: "\\U00110000"\n')
    code, err = _run(_argv(reader, path), capsys)
    assert code == 2
    (line,) = err.splitlines()
    assert f"{path}:2:" in line
    assert "malformed YAML" in line
    assert "Traceback" not in err


@pytest.mark.parametrize("reader", sorted(READERS))
def test_nesting_beyond_the_limit_is_refused_by_every_reader(
    reader: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "input.yaml"
    path.write_text("key:\n  " + "[" * 1200 + "]" * 1200 + "\n")
    code, err = _run(_argv(reader, path), capsys)
    assert code == 2
    (line,) = err.splitlines()
    assert f"{path}:2:" in line
    assert "refused: nested more than 100 levels deep" in line


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("podTopologySpread:\n  when: 2024-13-45\n", "cannot read '2024-13-45'"),
        ("podTopologySpread:\n  a: !!int 0x\n", "cannot read '0x'"),
        ("podTopologySpread:\n  a: !!float abc\n", "cannot read 'abc'"),
        ("podTopologySpread:\n  a: " + "7" * 5000 + "\n", "(5000 characters)"),
    ],
)
def test_scheduler_config_values_yaml_cannot_build_are_errors_at_their_line(
    text: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(text)
    code, err = _run(_argv("scheduler config", path), capsys)
    assert code == 2
    (line,) = err.splitlines()
    assert f"{path}:2:" in line
    assert problem in line


def test_a_scheduler_config_problem_names_the_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(
        "podTopologySpread:\n  defaultConstraints:\n    - maxSkew: 1\n"
        "      topologyKey: topology.kubernetes.io/zone\n"
        "      whenUnsatisfiable: DoNotSchedule\n      minDomain: 2\n"
    )
    code, err = _run(_argv("scheduler config", path), capsys)
    assert code == 2
    assert err == (
        f"error: --scheduler-config: decoding scheduler config, {path}:6: "
        "podTopologySpread.defaultConstraints[0].minDomain: unknown field\n"
    )


def test_a_kwok_catalog_problem_names_the_file_line_and_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "types.yaml"
    path.write_text(
        "- name: a\n  architecture: amd64\n  operatingSystems: [linux]\n"
        "  resources: {cpu: '1', memory: 1Gi, pods: '10'}\n"
        "  offerings: [{price: 1, available: true, requirements: []}]\n"
    )
    code, err = _run(_argv("kwok catalog", path), capsys)
    assert code == 2
    (line,) = err.splitlines()
    assert f"{path}:1: instance type #0 ('a'): offering #0: no zone" in line


KUBECONFIG = (
    "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\n"
    "users:\n- name: u\n  user: {token: t}\n"
    "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
)


@pytest.mark.parametrize(
    ("before", "after", "problem"),
    [
        ("- name: c\n", "- {}\n- name: c\n", "4: clusters[0].name: required, a non-empty string"),
        (
            "server: 'https://127.0.0.1:1'",
            "server: [a]",
            "5: clusters[0].cluster.server: must be a string",
        ),
        ("user: {token: t}", "user: {exec: [a]}", "8: users[0].user.exec: must be a mapping"),
        (
            "contexts:\n- name: x\n  context: {cluster: c, user: u}\n",
            "contexts: 3\n",
            "9: contexts: must be a list",
        ),
        ("current-context: x", "current-context: [x]", "12: current-context: must be a string"),
    ],
)
def test_a_kubeconfig_not_shaped_as_one_names_the_file_line_and_field(
    before: str, after: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "kubeconfig"
    assert before in KUBECONFIG
    path.write_text(KUBECONFIG.replace(before, after))
    code, err = _run(_argv("kubeconfig", path), capsys)
    assert code == 2
    (line,) = err.splitlines()
    assert f"cannot read the kubeconfig: {path}:{problem}" in line, line


@pytest.mark.parametrize(
    "text",
    [
        KWOK_NODE_CLASS + node_pool(requirements='[{key: a, operator: In, values: ["x"]}]'),
        "a: &x {b: [1, 2.5, null, true, 2026-01-01]}\nc:\n  <<: *x\n  d: 'q'\n---\n- 1\n",
        "a: 'unterminated\n",
        "a: b\na: c\n",
        "a:\n\t- tab\n",
        "- [1, 2\n",
        "{a: 1}}\n",
        'a: "\\x00\\u263a"\n',
        "a: |\n  block\n  text\nb: >\n  folded\n",
    ],
)
def test_the_python_and_libyaml_parsers_read_the_same(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read(loader: object) -> tuple[object, object]:
        saved = documents._Loader
        documents._Loader = loader
        try:
            parsed = parse_documents(text, "x.yaml")
            marked = [d for d in parsed if isinstance(d, MarkedDict)]
            return parsed, [(d.line, d.key_lines) for d in marked]
        except ManifestError as error:
            return error.source.split(":")[1], None
        finally:
            documents._Loader = saved

    quick = read(documents._Loader)  # plain documents read from libyaml's events
    monkeypatch.setattr(yaml, "__with_libyaml__", False)  # only the loaders
    assert read(documents._PythonLoader) == read(documents._Loader) == quick
