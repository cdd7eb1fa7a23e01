"""``nodewright simulate --from-cluster`` against a loopback API server: the snapshot is read
with list calls only (no write verb ever reaches the server), gives the same what-if as the
same objects in a dump, and a cluster that cannot be read ends the run with one clear line and
no credentials."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml

from nodewright.api.core import Pod
from nodewright.cluster.kube.routing import plural_of
from nodewright.cluster.kube.snapshot import PAGE_SIZE, list_all
from nodewright.cluster.kube.transport import Answer
from nodewright.commands import main
from tests.kube.fake_apiserver import TOKEN, FakeApiServer, Fault

ROOT = Path(__file__).resolve().parents[2]
DUMP = ROOT / "examples" / "what-if" / "cluster-dump.yaml"


def _seed(apiserver: FakeApiServer) -> None:
    """Store the example dump's objects on the server, as a real cluster would hold them."""
    for item in yaml.safe_load(DUMP.read_text())["items"]:
        group, _, version = item["apiVersion"].rpartition("/")
        meta = item["metadata"]
        gvr = (group, version, plural_of(item["kind"]))
        apiserver.objects[(gvr, meta.get("namespace", ""), meta["name"])] = item


def _simulate(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(["simulate", *argv])
    finally:
        logging.getLogger("nodewright").handlers.clear()
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_snapshot_is_read_with_gets_only_and_gives_the_dumps_what_if(
    apiserver: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(apiserver)
    report = tmp_path / "report.json"
    code, out, err = _simulate(
        ["--from-cluster", "--kubeconfig", str(apiserver.kubeconfig), "--json", str(report)],
        capsys,
    )
    assert code == 0, err
    assert {method for method, _, _ in apiserver.requests} == {"GET"}
    assert not [path for _, path, _ in apiserver.requests if "watch" in path]
    assert apiserver.count("GET", "/api/v1/pods") == 1
    assert apiserver.count("GET", "/apis/karpenter.sh/v1/nodepools") == 1
    assert apiserver.count("GET", "/apis/karpenter.kwok.sh/v1alpha1/kwoknodeclasses") == 1
    assert TOKEN not in out + err

    what_if = json.loads(report.read_text())["whatIf"]
    assert what_if["source"] == f"cluster {apiserver.host}"
    assert [(c["name"], c["action"], c["reason"]) for c in what_if["changes"]] == [
        ("kwok-c", "removed", "Empty")
    ]
    assert what_if["currentPricePerHour"] == pytest.approx(0.4344, abs=1e-4)
    assert what_if["projectedPricePerHour"] == pytest.approx(0.2172, abs=1e-4)
    assert f"What-if for cluster {apiserver.host}:" in out
    # nothing was written back: the server holds what it held
    assert apiserver.stored("nodes", "kwok-c") is not None


def test_kinds_the_server_does_not_serve_are_left_out(
    apiserver: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(apiserver)
    apiserver.unserved_groups.add("storage.k8s.io")
    code, out, err = _simulate(
        ["--from-cluster", "--kubeconfig", str(apiserver.kubeconfig)], capsys
    )
    assert code == 0, err
    assert "What-if for cluster" in out


def test_an_unreachable_cluster_ends_the_run_with_one_line_and_no_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": TOKEN}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    code, out, err = _simulate(["--from-cluster", "--kubeconfig", str(kubeconfig)], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: --from-cluster {kubeconfig}: ")
    assert "the API server https://127.0.0.1:1 cannot be reached" in lines[0]
    assert TOKEN not in out + err
    assert "Traceback" not in err


def test_a_bad_kubeconfig_or_context_ends_the_run_with_one_line(
    apiserver: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    garbage = tmp_path / "garbage"
    garbage.write_text("this: [is not a kubeconfig")
    code, _, err = _simulate(["--from-cluster", "--kubeconfig", str(garbage)], capsys)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith(
        f"error: --from-cluster {garbage}: cannot read the kubeconfig: {garbage}:2:1: malformed"
    )

    code, out, err = _simulate(
        ["--from-cluster", "--kubeconfig", str(apiserver.kubeconfig), "--context", "nope"],
        capsys,
    )
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: --from-cluster {apiserver.kubeconfig} (context nope): ")
    assert "nope" in line
    assert TOKEN not in out + err
    assert apiserver.requests == []


def test_a_list_the_server_refuses_ends_the_run_naming_the_kind(
    apiserver: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(apiserver)
    message = 'pods is forbidden: User "viewer" cannot list resource "pods" at the cluster scope'
    apiserver.inject(
        Fault(
            "GET",
            "/api/v1/pods",
            status=403,
            body={"kind": "Status", "status": "Failure", "reason": "Forbidden", "message": message},
        )
    )
    code, out, err = _simulate(
        ["--from-cluster", "--kubeconfig", str(apiserver.kubeconfig)], capsys
    )
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line == (
        f"error: --from-cluster {apiserver.kubeconfig}: listing pods: HTTP 403 {message}"
    )
    assert out == ""


class _PagedServer:
    """Answers a list in pages of two, as an API server does with ``limit``/``continue``."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.queries: list[dict[str, str]] = []

    def call(self, method: str, path: str, query: dict[str, str]) -> Answer:
        assert method == "GET"
        self.queries.append(dict(query))
        start = int(query.get("continue") or 0)
        page = self.names[start : start + 2]
        more = start + 2 < len(self.names)
        body = {
            "items": [{"metadata": {"name": name, "namespace": "default"}} for name in page],
            "metadata": {"continue": str(start + 2) if more else ""},
        }
        return Answer(200, {}, body)


def test_a_list_is_read_page_by_page() -> None:
    server = _PagedServer(["a", "b", "c", "d", "e"])
    items = list_all(server, Pod)  # type: ignore[arg-type]
    assert items is not None
    assert [i["metadata"]["name"] for i in items] == ["a", "b", "c", "d", "e"]
    assert all((i["apiVersion"], i["kind"]) == ("v1", "Pod") for i in items)
    assert [q.get("continue") for q in server.queries] == [None, "2", "4"]
    assert {q["limit"] for q in server.queries} == {str(PAGE_SIZE)}
