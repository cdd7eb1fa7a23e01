"""Bad input against a real API server: what ``simulate`` refuses at load time, the API server
refuses too (built-in kinds by its own validation, Karpenter's kinds by nodewright's CRDs), and
what the CRDs let through is reported by the running controller as a status condition and an
event, never a crash loop.

Runs only when ``NODEWRIGHT_TEST_KUBECONFIG`` names a kubeconfig (``.ci/run`` starts
``../shared/tools/realk8s`` for it) and ``kubectl`` is installed. Objects are sent with
``kubectl apply --dry-run=server --validate=strict``, as a user would apply them, so the
server's refusal is the one a user sees; nothing refused is created.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from nodewright.api.fielderror import FieldError
from nodewright.api.karpenter import NodePool
from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import load_manifests
from nodewright.api.meta import KubeObject
from nodewright.api.validation import validate_node_pool
from nodewright.commands.crds import run_crds
from nodewright.plugin.host import PluginHost
from nodewright.service.runner import RunService, connect
from nodewright.settings.run import RunSettings
from nodewright.testing.manifests import KWOK_NODE_CLASS_REF, deployment, node_pool, pod
from nodewright_kwok.nodeclass import KWOKNodeClass
from tests.kube.polling import eventually

KUBECONFIG = os.environ.get("NODEWRIGHT_TEST_KUBECONFIG", "")
KUBECTL = shutil.which("kubectl")

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(not KUBECONFIG, reason="NODEWRIGHT_TEST_KUBECONFIG is not set"),
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed"),
]

TIMEOUT = float(os.environ.get("NODEWRIGHT_TEST_TIMEOUT", "300"))


def kubectl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    return subprocess.run(
        [KUBECTL, "--kubeconfig", KUBECONFIG, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def host() -> PluginHost:
    loaded = PluginHost.load(only=["kwok"])
    assert loaded.node_class_kinds(), "the kwok provider must be installed"
    return loaded


@pytest.fixture(scope="module")
def crds(host: PluginHost) -> None:
    """``nodewright crds | kubectl apply -f -``, then wait until they are served."""
    printed = io.StringIO()
    assert run_crds(host, out=printed) == 0
    applied = kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=printed.getvalue()
    )
    assert applied.returncode == 0, applied.stderr
    waited = kubectl(
        "wait", "--for", "condition=established", "--timeout=60s",
        "crd/nodepools.karpenter.sh", "crd/kwoknodeclasses.karpenter.kwok.sh",
    )  # fmt: skip
    assert waited.returncode == 0, waited.stderr


def _karpenter_rules(obj: KubeObject) -> list[FieldError]:
    return validate_node_pool(obj) if isinstance(obj, NodePool) else []


def _loader_refuses(text: str, tmp_path: Any) -> list[str]:
    registry = KindRegistry()
    registry.register(KWOKNodeClass)
    path = tmp_path / "input.yaml"
    path.write_text(text)
    result = load_manifests([path], registry, rules=_karpenter_rules)
    return [str(error) for error in result.errors]


def pool(
    name: str = "ok",
    *,
    weight: int | None = None,
    node_class: str = "default",
    expire: str = "720h",
    key: str = "karpenter.sh/capacity-type",
    operator: str = "In",
    value: str = "on-demand",
) -> str:
    """A NodePool with one requirement; each bad variant changes one field."""
    return node_pool(
        name,
        weight=weight,
        requirements=f"[{{key: {key}, operator: {operator}, values: [{value}]}}]",
        template_spec=f"expireAfter: {expire}",
        node_class_ref={**KWOK_NODE_CLASS_REF, "name": node_class},
    )


REFUSED_BY_THE_SERVER = {
    "pod-named-UPPER_case": pod(name="UPPER_case!"),
    "pod-without-name": pod(name='""'),
    "label-value-of-64": pod(labels="{team: " + "a" * 64 + "}"),
    "label-name-of-64": pod(labels="{" + "a" * 64 + ": x}"),
    "nul-in-label-key": pod(labels='{"te\\0am": x}'),
    "unknown-top-level-field": pod(extra="spce: {}"),
    "cpu-lots-in-a-pod": pod(cpu="lots"),
    "cpu-lots-in-a-deployment": deployment("lots", 0, cpu="lots", memory=None),
    "node-pool-weight-500": pool(weight=500),
    "node-pool-operator-Inn": pool(operator="Inn"),
    "node-pool-expire-30d": pool(expire="30d"),
    "node-pool-named-UPPER_case": pool(name="UPPER_case!"),
    "node-pool-restricted-label": pool(key="karpenter.sh/custom", operator="Exists", value=""),
}


@pytest.mark.usefixtures("crds")
@pytest.mark.parametrize(
    "text", list(REFUSED_BY_THE_SERVER.values()), ids=list(REFUSED_BY_THE_SERVER)
)
def test_the_api_server_refuses_what_the_loader_refuses(text: str, tmp_path: Any) -> None:
    applied = kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-", stdin=text)
    assert applied.returncode != 0, f"the API server accepted it:\n{applied.stdout}"
    assert "Traceback" not in applied.stderr
    refused = _loader_refuses(text, tmp_path)
    assert refused, "the loader accepted what the API server refused"
    assert all(line.startswith(f"{tmp_path / 'input.yaml'}:") for line in refused), refused


@pytest.mark.usefixtures("crds")
def test_valid_objects_pass_both(tmp_path: Any) -> None:
    text = pod() + pool()
    applied = kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-", stdin=text)
    assert applied.returncode == 0, applied.stderr
    assert _loader_refuses(text, tmp_path) == []


# --- what the CRDs accept: the running controller reports it --------------------------------


@pytest.fixture
def controller(host: PluginHost, crds: None) -> Iterator[RunService]:
    """nodewright running against the cluster (KWOK provider) in a thread."""
    suffix = uuid.uuid4().hex[:6]
    settings = RunSettings(
        kubeconfig=KUBECONFIG,
        metrics_port=0,
        health_probe_port=0,
        bind_address="127.0.0.1",
        leader_election_namespace="default",
        leader_election_name=f"nodewright-bad-input-{suffix}",
        log_format="text",
    )
    service = RunService(settings, connect(settings), host, identity=f"bad-input-{suffix}")
    service.start_endpoints()
    outcome: list[object] = []
    thread = threading.Thread(target=lambda: outcome.append(service.run()), daemon=True)
    thread.start()
    yield service
    service.request_stop()
    thread.join(60)
    assert not thread.is_alive(), "the controller did not stop"
    assert outcome == [0], outcome


def _node_pool(name: str) -> dict[str, Any]:
    got = kubectl("get", "nodepool", name, "-o", "json")
    return json.loads(got.stdout) if got.returncode == 0 else {}


def _condition(name: str, kind: str) -> dict[str, Any]:
    conditions = _node_pool(name).get("status", {}).get("conditions", [])
    return next((c for c in conditions if c.get("type") == kind), {})


def _events(name: str) -> list[dict[str, Any]]:
    got = kubectl(
        "get", "events", "-A", "-o", "json", "--field-selector",
        f"involvedObject.kind=NodePool,involvedObject.name={name}",
    )  # fmt: skip
    return list(json.loads(got.stdout).get("items", [])) if got.returncode == 0 else []


@pytest.mark.parametrize(
    ("change", "condition", "reason", "words"),
    [
        (
            {"value": "spotty"},
            "ValidationSucceeded",
            "FailedValidation",
            "is a valid value for 'karpenter.sh/capacity-type'",
        ),
        ({"name_length": 64}, "ValidationSucceeded", "FailedValidation", "must be at most 63"),
        (
            {"expire": "99999999999999999999h"},
            "ValidationSucceeded",
            "FailedValidation",
            "is out of range",
        ),
        ({"node_class": "missing"}, "NodeClassReady", "", "missing"),
    ],
    ids=["capacity-type-spotty", "name-of-64-characters", "expire-overflow", "node-class-missing"],
)
def test_what_the_crds_accept_gets_a_condition_and_an_event(
    controller: RunService,
    tmp_path: Any,
    *,
    change: dict[str, Any],
    condition: str,
    reason: str,
    words: str,
) -> None:
    suffix = uuid.uuid4().hex[:6]
    name = f"bad-{suffix}" + "x" * max(0, change.get("name_length", 0) - len(f"bad-{suffix}"))
    node_class = f"class-{suffix}"
    classes = (
        "apiVersion: karpenter.kwok.sh/v1alpha1\nkind: KWOKNodeClass\n"
        f"metadata: {{name: {node_class}}}\n"
    )
    text = pool(
        name,
        node_class=change.get("node_class", node_class),
        value=change.get("value", "on-demand"),
        expire=change.get("expire", "720h"),
    )
    good = pool(f"good-{suffix}", node_class=node_class)
    applied = kubectl("apply", "-f", "-", stdin=classes + "---\n" + text + good)
    assert applied.returncode == 0, applied.stderr
    try:
        eventually(
            lambda: _condition(name, condition).get("status") == "False",
            f"{condition} False on NodePool {name}",
            TIMEOUT,
            every=1.0,
        )
        assert words in _condition(name, condition).get("message", "")
        eventually(
            lambda: any(
                e.get("type") == "Warning" and (not reason or e.get("reason") == reason)
                for e in _events(name)
            ),
            f"a Warning event on NodePool {name}",
            TIMEOUT,
            every=1.0,
        )
        # The controller keeps working: the valid NodePool beside it becomes ready.
        eventually(
            lambda: _condition(f"good-{suffix}", "Ready").get("status") == "True",
            "the valid NodePool ready",
            TIMEOUT,
            every=1.0,
        )
        if condition == "ValidationSucceeded":  # simulate refuses it at load time too
            assert _loader_refuses(classes + "---\n" + text, tmp_path)
    finally:
        kubectl("delete", "--wait=false", "nodepool", name, f"good-{suffix}")
        kubectl("delete", "--wait=false", "kwoknodeclass", node_class)
