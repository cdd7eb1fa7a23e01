"""Does memory come back after a scale-down? The Kubernetes adapter's caches, without a server.

Drives the caches of ``nodewright run`` (its informers for pods, Nodes and NodeClaims and the
cluster state they feed, without their watch threads) with the objects
``bench/data/served_objects.json`` recorded, as ``bench/cluster.py`` has a real API server send
them: each pod as watch events (added, unschedulable, bound, running) ``--batch`` pods at a
time, a Node and a NodeClaim per ``--pods-per-node`` pods, then a scale-down that keeps a
random sample of the pods (as a ReplicaSet does: what it keeps is spread over nodes and
ages) and deletes the rest. Prints the process's RSS and CPU time after each step, then the
RSS of a fresh process (this script again) that listed only what is left, and the ratio.
Neither needs a control plane, so the figures hold on a loaded machine.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import re
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import nodewright.commands.run  # noqa: F401  (everything `nodewright run` imports)
from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import NodeClaim
from nodewright.cluster.kube.adapter import KubeCluster
from nodewright.cluster.kube.informer import Informer
from nodewright.cluster.objects import tune_collector

SERVED = Path(__file__).resolve().parent / "data" / "served_objects.json"
#: Pods whose pod-scheduled (and later running) times fall in the same second.
PODS_PER_SECOND = 40


def rss_mb() -> float:
    status = Path("/proc/self/status").read_text(encoding="utf-8")
    found = re.search(r"VmRSS:\s+(\d+) kB", status)
    return int(found.group(1)) / 1024 if found else 0.0


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _clock(second: int) -> str:
    return f"2026-11-27T{second // 3600 % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z"


def _copy(data: dict[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(data))
    return copied


class Recorded:
    """Versions of the recorded pod, Node and NodeClaim, as a server would send them."""

    def __init__(self) -> None:
        served = json.loads(SERVED.read_text(encoding="utf-8"))
        self.pod, self.node, self.claim = served["Pod"], served["Node"], served["NodeClaim"]
        self.version = 1000

    def _next(self) -> str:
        self.version += 1
        return str(self.version)

    def pod_versions(self, index: int, node: str) -> list[dict[str, Any]]:
        """Pod ``index``'s life as watch events: added, unschedulable, bound, running. What
        differs between a Deployment's pods: names, uid, the service-account volume, IP,
        node and times."""
        running = _copy(self.pod)
        meta = running["metadata"]
        meta["name"] = f"inflate-{index:05d}"
        meta["uid"] = f"{meta['uid'][:-8]}{index:08d}"
        meta["creationTimestamp"] = _clock(index // PODS_PER_SECOND)
        volume = f"kube-api-access-{index:05x}"
        running["spec"]["volumes"][0]["name"] = volume
        running["spec"]["containers"][0]["volumeMounts"][0]["name"] = volume
        running["spec"]["nodeName"] = node
        ip = f"10.{index >> 16 & 255}.{index >> 8 & 255}.{index & 255}"
        started = _clock(index // PODS_PER_SECOND + 9)
        running["status"].update(podIP=ip, podIPs=[{"ip": ip}], startTime=started)
        for condition in running["status"]["conditions"]:
            condition["lastTransitionTime"] = started
        pending = _copy(running)
        pending["spec"].pop("nodeName", None)
        pending["status"] = {"phase": "Pending", "qosClass": "Burstable"}
        unschedulable = _copy(pending)
        unschedulable["status"]["conditions"] = [
            {
                "lastProbeTime": None,
                "lastTransitionTime": _clock(index // PODS_PER_SECOND + 1),
                "message": "0/3 nodes are available: 3 Insufficient cpu.",
                "reason": "Unschedulable",
                "status": "False",
                "type": "PodScheduled",
            }
        ]
        bound = _copy(pending)
        bound["spec"]["nodeName"] = node
        bound["status"]["conditions"] = [
            {
                "lastProbeTime": None,
                "lastTransitionTime": _clock(index // PODS_PER_SECOND + 8),
                "status": "True",
                "type": "PodScheduled",
            }
        ]
        versions = [pending, unschedulable, bound, running]
        for version in versions:
            version["metadata"]["resourceVersion"] = self._next()
        return versions

    def node_pair(self, index: int) -> tuple[dict[str, Any], dict[str, Any]]:
        node, claim = _copy(self.node), _copy(self.claim)
        for data in (node, claim):
            data["metadata"]["name"] = f"bench-{index:05d}"
            data["metadata"]["uid"] = f"{data['metadata']['uid'][:-8]}{index:08d}"
            data["metadata"]["resourceVersion"] = self._next()
        return node, claim

    def deleted(self, data: dict[str, Any]) -> dict[str, Any]:
        gone = _copy(data)
        gone["metadata"]["resourceVersion"] = self._next()
        gone["metadata"]["deletionTimestamp"] = "2026-11-27T23:00:00Z"
        return gone


class Caches:
    """The adapter's informers for pods, Nodes and NodeClaims, fed by hand."""

    def __init__(self) -> None:
        self.cluster = KubeCluster(api_client=None)
        self.informers = {}
        for kind in (Pod, Node, NodeClaim):
            informer = Informer(self.cluster, kind)
            self.cluster._informers[kind] = informer
            self.informers[kind.KIND] = informer

    def event(self, kind: str, event_type: str, data: dict[str, Any]) -> None:
        """What the informer does with one watch event (its JSON parsed from the stream)."""
        informer = self.informers[kind]
        obj = informer._parse(json.loads(json.dumps(data)))
        if obj is not None:
            informer._apply(event_type, obj)
            if event_type == "DELETED" and hasattr(informer, "_dropped"):
                informer._dropped()

    def list(self, kind: str, items: list[dict[str, Any]], page: int = 500) -> None:
        """What the informer does with a list, a page at a time."""
        informer = self.informers[kind]
        objects = []
        for start in range(0, len(items), page):
            answer = json.loads(json.dumps({"items": items[start : start + page]}))
            for item in answer["items"]:
                obj = informer._parse(item)
                if obj is not None:
                    objects.append(obj)
        informer._replace(objects, "1")

    def bookmark(self) -> None:
        """What a watch bookmark (the server sends one about every minute) does."""
        for informer in self.informers.values():
            shared = getattr(informer, "_shared", None)  # None before parts were shared
            if shared is not None:
                shared.settle()

    def held(self) -> dict[str, int]:
        return {kind: len(informer.objects) for kind, informer in self.informers.items()}


def survivors(args: argparse.Namespace) -> list[int]:
    return sorted(random.Random(args.seed).sample(range(max(args.steps)), args.steps[-1]))


def scale_up(
    caches: Caches, recorded: Recorded, args: argparse.Namespace, up: range, live: dict[int, str]
) -> None:
    """Pods in ``up`` come ``--batch`` at a time through each stage of their life."""
    for start in range(up.start, up.stop, args.batch):
        batch = range(start, min(up.stop, start + args.batch))
        lives = {}
        for index in batch:
            node_index = index // args.pods_per_node
            if index % args.pods_per_node == 0:
                node, claim = recorded.node_pair(node_index)
                caches.event("NodeClaim", "ADDED", claim)
                caches.event("Node", "ADDED", node)
            live[index] = f"bench-{node_index:05d}"
            lives[index] = recorded.pod_versions(index, live[index])
        for stage in range(4):
            for index in batch:
                caches.event("Pod", "ADDED" if stage == 0 else "MODIFIED", lives[index][stage])
            caches.cluster.sync()
        caches.bookmark()


def scale_down(
    caches: Caches, recorded: Recorded, args: argparse.Namespace, live: dict[int, str]
) -> None:
    kept = set(survivors(args))
    for count, index in enumerate(sorted(live, reverse=True)):
        if index in kept:
            continue
        data = recorded.pod_versions(index, live.pop(index))[3]
        caches.event("Pod", "MODIFIED", recorded.deleted(data))
        caches.event("Pod", "DELETED", recorded.deleted(data))
        if count % 100 == 0:
            caches.cluster.sync()
    nodes_left = {index // args.pods_per_node for index in live}
    for node_index in range(max(args.steps) // args.pods_per_node + 1):
        if node_index not in nodes_left:
            node, claim = recorded.node_pair(node_index)
            caches.event("Node", "DELETED", recorded.deleted(node))
            caches.event("NodeClaim", "DELETED", recorded.deleted(claim))
    caches.cluster.sync()
    caches.bookmark()


def settle() -> None:
    gc.collect()


def scaled(args: argparse.Namespace) -> tuple[list[tuple[int, float, float]], dict[str, int]]:
    """Run the steps in this process: (pods, RSS MB, CPU s since the start) after each."""
    caches, recorded = Caches(), Recorded()
    for kind in caches.informers:
        caches.list(kind, [])
    live: dict[int, str] = {}
    start, previous, steps = cpu_s(), 0, []
    for target in args.steps:
        if target > previous:
            scale_up(caches, recorded, args, range(previous, target), live)
        elif target < previous:
            scale_down(caches, recorded, args, live)
        settle()
        steps.append((target, rss_mb(), cpu_s() - start))
        previous = target
    return steps, caches.held()


def fresh(args: argparse.Namespace) -> dict[str, Any]:
    """A process that listed the pods, Nodes and NodeClaims left after the steps."""
    caches, recorded = Caches(), Recorded()
    pods: list[dict[str, Any]] = []
    nodes: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    for index in survivors(args):
        node_index = index // args.pods_per_node
        if node_index not in nodes:
            nodes[node_index] = recorded.node_pair(node_index)
        pods.append(recorded.pod_versions(index, f"bench-{node_index:05d}")[3])
    caches.list("NodeClaim", [claim for _, claim in nodes.values()])
    caches.list("Node", [node for node, _ in nodes.values()])
    caches.list("Pod", pods)
    caches.cluster.sync()
    del pods, nodes
    settle()
    return {"rss_mb": rss_mb(), "held": caches.held()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[1000, 5000, 500])
    parser.add_argument("--pods-per-node", type=int, default=180)
    parser.add_argument("--batch", type=int, default=250, help="pods per stage of a scale-up")
    parser.add_argument("--seed", type=int, default=1, help="which pods the scale-down keeps")
    parser.add_argument("--fresh", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    tune_collector()
    if args.fresh:
        print(json.dumps(fresh(args)))
        return 0
    steps, held = scaled(args)
    command = [
        sys.executable, __file__, "--fresh", "--steps", *map(str, args.steps),
        "--pods-per-node", str(args.pods_per_node), "--seed", str(args.seed),
    ]  # fmt: skip
    baseline = json.loads(subprocess.run(command, check=True, capture_output=True).stdout)
    print(f"{'pods':>6} {'RSS MB':>7} {'CPU s':>7}")
    for target, rss, cpu in steps:
        print(f"{target:>6} {rss:7.1f} {cpu:7.2f}")
    after = steps[-1][1]
    print(f"fresh process holding the same {baseline['held']}: RSS {baseline['rss_mb']:.1f} MB")
    print(f"RSS after the steps ({held}) / fresh: {after / baseline['rss_mb']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
