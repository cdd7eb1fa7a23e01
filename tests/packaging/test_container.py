"""The controller image, run as the chart's Deployment runs it, against a real control plane
(``.ci/image-suite`` builds the image with a container engine and starts the control plane).

``NODEWRIGHT_TEST_IMAGE`` names the built image and ``NODEWRIGHT_TEST_KUBECONFIG`` an admin
kubeconfig; without both the tests are skipped. ``NODEWRIGHT_TEST_ENGINE`` is the engine
(default ``podman``). The chart is rendered with ``hostNetwork: true`` (the container shares
the host's network, where the control plane listens on 127.0.0.1) and its own ports picked
free; the container gets exactly the rendered Deployment's arguments, environment (the
downward API's fields filled in as kubelet fills them), user, read-only root file system,
dropped capabilities and ``/tmp`` emptyDir, plus what kubelet adds to every pod: the
ServiceAccount's token, CA and namespace at the in-cluster path and ``KUBERNETES_SERVICE_*``.
Nothing runs in the image but its entry point and, for the probes, its Python.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.charts.helm import render
from tests.kube import live
from tests.kube.polling import eventually
from tests.ports import free_ports

IMAGE = os.environ.get("NODEWRIGHT_TEST_IMAGE", "")
ENGINE = os.environ.get("NODEWRIGHT_TEST_ENGINE", "podman")
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
REPLICAS = 4
#: The shells of the stand-in for the distroless base image (Debian's), masked in the container.
SHELLS = ("/usr/bin/dash", "/usr/bin/bash")
#: The pod's own address as the downward API gives it: on the host's network, the host's.
POD_IP = "127.0.0.1"

pytestmark = [
    *live.LIVE,
    pytest.mark.skipif(not IMAGE, reason="NODEWRIGHT_TEST_IMAGE names no built image"),
]


def engine(*args: str, timeout: float = 120) -> str:
    done = subprocess.run(
        [ENGINE, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise AssertionError(f"{ENGINE} {' '.join(args[:2])}: {done.stderr.strip()}")
    return done.stdout


def field_value(path: str, namespace: str, pod_name: str) -> str:
    """What kubelet puts in an environment variable from a ``fieldRef``."""
    values = {"metadata.namespace": namespace, "metadata.name": pod_name, "status.podIP": POD_IP}
    assert path in values, f"the chart sets a variable from {path}, which this test cannot fill"
    return values[path]


def service_account_files(where: Path, token: str, namespace: str) -> Path:
    """The projected volume kubelet mounts at SERVICE_ACCOUNT_DIR: token, CA, namespace."""
    admin = yaml.safe_load(Path(live.KUBECONFIG).read_text(encoding="utf-8"))
    (cluster,) = [c["cluster"] for c in admin["clusters"]]
    where.mkdir(mode=0o755)
    if "certificate-authority-data" in cluster:
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
    else:
        ca = (Path(live.KUBECONFIG).parent / cluster["certificate-authority"]).read_text()
    for name, text in {"token": token, "ca.crt": ca, "namespace": namespace}.items():
        (where / name).write_text(text)
        (where / name).chmod(0o644)
    return where


@dataclasses.dataclass
class Controller:
    """The container and what it showed."""

    name: str
    namespace: str
    health_port: int
    metrics_port: int
    pool: str


def container_command(
    deployment: dict[str, Any], name: str, accounts: Path, pod_name: str
) -> list[str]:
    """``ENGINE create`` with what the Deployment's pod spec says, as kubelet would run it."""
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    namespace = deployment["metadata"]["namespace"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert pod.get("hostNetwork") is True
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert mounts == {"/tmp": "tmp"}
    assert "emptyDir" in volumes["tmp"]
    server = urlsplit(
        yaml.safe_load(Path(live.KUBECONFIG).read_text())["clusters"][0]["cluster"]["server"]
    )
    command = [
        "create", "--name", name, "--network", "host",
        "--read-only", "--read-only-tmpfs=false", "--tmpfs", "/tmp:rw,mode=1777",
        "--user", f"{security['runAsUser']}:{security['runAsGroup']}",
        *[f"--cap-drop={c}" for c in security["capabilities"]["drop"]],
        "--security-opt", "no-new-privileges",
        # The stand-in base image has a shell, the real one none: nothing may run one.
        *[f"-v=/dev/null:{shell}:ro" for shell in SHELLS],
        "-v", f"{accounts}:{SERVICE_ACCOUNT_DIR}:ro",
        "-e", f"KUBERNETES_SERVICE_HOST={server.hostname}",
        "-e", f"KUBERNETES_SERVICE_PORT={server.port}",
    ]  # fmt: skip
    assert not security["allowPrivilegeEscalation"]
    for variable in container["env"]:
        if "valueFrom" in variable:
            value = field_value(variable["valueFrom"]["fieldRef"]["fieldPath"], namespace, pod_name)
        else:
            value = variable["value"]
        command += ["-e", f"{variable['name']}={value}"]
    return [*command, IMAGE, *container["args"]]


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://{POD_IP}:{port}{path}", timeout=2) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, ""
    except OSError:
        return 0, ""


def inside(controller: Controller, port: int, path: str) -> tuple[int, str]:
    """GET from inside the container, with the image's Python (it has no shell, no curl)."""
    script = (
        "import sys, urllib.request, urllib.error\n"
        "try:\n"
        f"    answer = urllib.request.urlopen('http://{POD_IP}:{port}{path}', timeout=5)\n"
        "    print(answer.status); sys.stdout.write(answer.read().decode())\n"
        "except urllib.error.HTTPError as error:\n"
        "    print(error.code)\n"
    )
    out = engine("exec", controller.name, "python3", "-c", script)
    status, _, body = out.partition("\n")
    return int(status), body


def cpu_seconds(name: str) -> float:
    """The CPU time (user and system) the container's main process has used so far."""
    pid = engine("inspect", "--format", "{{.State.Pid}}", name).strip()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def logs(name: str) -> str:
    done = subprocess.run([ENGINE, "logs", name], capture_output=True, text=True, check=False)
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controller]:
    assert shutil.which(ENGINE), f"no {ENGINE} to run {IMAGE}"
    repository, _, _ = IMAGE.rpartition(":")
    tag = live.suffix()
    release = f"nodewright-{tag}"
    health_port, metrics_port = free_ports(2)
    (deployment,) = [
        o
        for o in render(
            {
                "settings": {"clusterName": release},
                "providers": {"enabled": "kwok"},
                "replicas": 1,
                "hostNetwork": True,
                "controller": {
                    "image": {"repository": repository},
                    "metrics": {"port": metrics_port},
                    "healthProbe": {"port": health_port},
                },
            },
            release=release,
            namespace=release,
        )
        if o["kind"] == "Deployment"
    ]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    # The tag bin/build gave the image is the one the chart derives from providers.enabled.
    assert container["image"] == IMAGE
    live.kubectl("apply", "-f", "-", stdin=engine("run", "--rm", IMAGE, "crds"))
    live.kubectl("wait", "--for=condition=established", "--timeout=60s", "crd", "--all")
    name = f"nodewright-image-{tag}"
    with live.chart_identity(tmp_path_factory.mktemp("identity"), release) as identity:
        token = yaml.safe_load(Path(identity.kubeconfig).read_text())["users"][0]["user"]
        accounts = service_account_files(
            tmp_path_factory.mktemp("pod") / "serviceaccount", token["token"], release
        )
        pool = f"image-{tag}"
        live.apply(
            live.run_manifests(
                pool,
                "[{key: kubernetes.io/os, operator: In, values: [linux]}]",
                live.inflate(pool, release, replicas=REPLICAS),
            )
        )
        engine(*container_command(deployment, name, accounts, f"{release}-7d4f9-q2x8z"))
        try:
            started = time.monotonic()
            engine("start", name)
            while get(health_port, "/readyz")[0] != 200:
                assert time.monotonic() - started < 60, f"never ready:\n{logs(name)}"
                time.sleep(0.02)
            ready_after = time.monotonic() - started
            print(f"\ncontainer start to /readyz: {ready_after:.2f}s, {cpu_seconds(name):.2f}s CPU")
            yield Controller(name, release, health_port, metrics_port, pool)
        finally:
            subprocess.run([ENGINE, "rm", "-f", "-t", "0", name], capture_output=True, check=False)
            live.kubectl("delete", "nodepool", pool, "--ignore-not-found", "--wait=false")


def test_the_image_provisions_nodes_for_pending_pods(controller: Controller) -> None:
    def running() -> bool:
        listed = live.kubectl(
            "get", "pods", "-n", controller.namespace, "-l", "app=inflate", "-o", "json"
        )
        pods = json.loads(listed)["items"]
        return len(pods) == REPLICAS and all(
            p["status"].get("phase") == "Running" and p["spec"].get("nodeName") for p in pods
        )

    eventually(running, "the inflate pods run on new nodes", timeout=live.TIMEOUT, every=1.0)
    nodes = json.loads(
        live.kubectl("get", "nodes", "-l", f"karpenter.sh/nodepool={controller.pool}", "-o", "json")
    )["items"]
    assert nodes, logs(controller.name)


def test_the_probes_and_metrics_answer_inside_the_container(controller: Controller) -> None:
    assert inside(controller, controller.health_port, "/healthz")[0] == 200
    assert inside(controller, controller.health_port, "/readyz")[0] == 200
    status, body = inside(controller, controller.metrics_port, "/metrics")
    assert status == 200
    assert "karpenter_nodeclaims_created_total" in body


def test_sigterm_stops_the_container_cleanly(controller: Controller) -> None:
    began = time.monotonic()
    engine("stop", "-t", "60", controller.name)  # SIGTERM, then SIGKILL after 60 s
    took = time.monotonic() - began
    state = json.loads(engine("inspect", controller.name))[0]["State"]
    assert state["ExitCode"] == 0, logs(controller.name)
    assert took < 30, f"took {took:.1f}s to stop:\n{logs(controller.name)}"
