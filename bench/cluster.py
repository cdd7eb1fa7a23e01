"""``nodewright run`` against a real control plane at scale (see bench/README.md).

Starts realk8s (``../shared/tools/realk8s`` beside the clone, or ``--realk8s``) with a KWOK
controller as kubelet and an audit log of the ``operator`` identity's requests, runs
``nodewright run`` as that identity with the KWOK provider, scales a Deployment of 1-CPU / 1Gi
pause pods through ``--steps`` (default 0 -> 1,000 -> 5,000 -> 500), and prints for each step:
wall time until every pod is Running (Deployment ``readyReplicas``), nodewright's CPU time and
peak RSS over the step, its RSS at the end, and its requests by verb and resource (from the
audit log). After the last step it stops nodewright with SIGTERM (how long it took to exit),
starts a fresh process on the same cluster and reports that one's RSS once it is idle, the
baseline for "memory comes back". The load average is printed with every step: the machine
may be shared.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "bench"
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    users: ["operator"]
  - level: None
"""
MANIFESTS = """apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata:
  name: bench
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: bench
spec:
  template:
    spec:
      requirements:
        - {key: kubernetes.io/os, operator: In, values: [linux]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: bench}
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 30s
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: inflate
  namespace: bench
spec:
  replicas: 0
  selector:
    matchLabels: {app: inflate}
  template:
    metadata:
      labels: {app: inflate}
    spec:
      terminationGracePeriodSeconds: 0
      nodeSelector: {karpenter.sh/nodepool: bench}
      containers:
        - name: inflate
          image: public.ecr.aws/eks-distro/kubernetes/pause:3.7
          resources:
            requests: {cpu: "1", memory: 1Gi}
"""
#: Seconds between two samples of nodewright's CPU and RSS, and two looks at the Deployment.
SAMPLE_EVERY = 0.5
POLL_EVERY = 1.0
TICKS = os.sysconf("SC_CLK_TCK")


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


# -- the control plane --------------------------------------------------------------------------


@dataclass
class ControlPlane:
    realk8s: Path
    home: Path

    @property
    def admin(self) -> str:
        return str(self.home / "run" / "admin.kubeconfig")

    @property
    def operator(self) -> str:
        return str(self.home / "run" / "operator.kubeconfig")

    @property
    def audit_log(self) -> Path:
        return self.home / "bench-audit" / "audit.log"

    def env(self) -> dict[str, str]:
        return dict(os.environ, REALK8S_HOME=str(self.home))

    def up(self) -> None:
        folder = self.audit_log.parent
        folder.mkdir(parents=True, exist_ok=True)
        policy = folder / "policy.yaml"
        policy.write_text(AUDIT_POLICY, encoding="utf-8")
        self.audit_log.unlink(missing_ok=True)
        env = self.env()
        env["KWOK"] = "1"
        env["EXTRA_APISERVER_ARGS"] = (
            f"--audit-policy-file {policy} --audit-log-path {self.audit_log} "
            "--audit-log-maxsize 0 --audit-log-format json"
        )
        subprocess.run([str(self.realk8s / "down.sh")], env=env, check=False, capture_output=True)
        subprocess.run([str(self.realk8s / "up.sh")], env=env, check=True)

    def down(self) -> None:
        subprocess.run([str(self.realk8s / "down.sh")], env=self.env(), check=False)

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            ["kubectl", "--kubeconfig", self.admin, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def prepare(self) -> None:
        crds = subprocess.run(
            [sys.executable, "-m", "nodewright.commands", "crds"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        self.kubectl("apply", "-f", "-", stdin=crds)
        self.kubectl("wait", "--for=condition=established", "--timeout=120s", "crd", "--all")
        self.kubectl("create", "namespace", NAMESPACE)
        self.kubectl("apply", "-f", "-", stdin=MANIFESTS)

    def deployment(self) -> tuple[int, int]:
        """(pods Running and ready, pods that exist) of the Deployment."""
        out = self.kubectl(
            "get",
            "deploy/inflate",
            "-n",
            NAMESPACE,
            "-o",
            "jsonpath={.status.readyReplicas},{.status.replicas}",
        )
        ready, _, exist = out.partition(",")
        return int(ready or 0), int(exist or 0)

    def nodes(self) -> int:
        out = self.kubectl("get", "nodes", "-l", "karpenter.sh/nodepool=bench", "-o", "name")
        return len(out.split())


# -- nodewright -----------------------------------------------------------------------------------


@dataclass
class Sample:
    at: float
    cpu: float
    rss_mb: float


@dataclass
class Process:
    """``nodewright run`` as the operator identity, sampled every SAMPLE_EVERY seconds."""

    plane: ControlPlane
    log_path: Path
    samples: list[Sample] = field(default_factory=list)

    def start(self) -> None:
        env = dict(
            os.environ,
            NODEWRIGHT_PLUGINS="kwok",
            LOG_FORMAT="text",
            KUBE_CLIENT_QPS="200",
            KUBE_CLIENT_BURST="300",
        )
        env.pop("KUBECONFIG", None)
        self._log = self.log_path.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "nodewright.commands", "run",
                "--kubeconfig", self.plane.operator,
                "--metrics-port", "0", "--health-probe-port", "0",
                "--leader-election-namespace", "default",
                "--leader-election-name", "nodewright-bench",
                "--provider-option", "kwok.manage-nodes=false",
            ],
            env=env, stdout=self._log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _read(self) -> Sample | None:
        pid = self.process.pid
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return None
        cpu = (int(stat[11]) + int(stat[12])) / TICKS
        found = re.search(r"VmRSS:\s+(\d+) kB", status)
        rss = int(found.group(1)) / 1024 if found else 0.0
        return Sample(time.monotonic(), cpu, rss)

    def _sample(self) -> None:
        while not self._stop.is_set():
            sample = self._read()
            if sample is not None:
                self.samples.append(sample)
            self._stop.wait(SAMPLE_EVERY)

    def now(self) -> Sample:
        sample = self._read()
        assert sample is not None, "nodewright exited"
        return sample

    def wait_for_log(self, pattern: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(pattern, self.log_path.read_text(encoding="utf-8")):
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"nodewright exited: see {self.log_path}")
            time.sleep(0.2)
        raise RuntimeError(f"no {pattern!r} in {self.log_path} within {timeout:g}s")

    def terminate(self) -> float:
        """SIGTERM; seconds until the process was gone."""
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        took = time.monotonic() - started
        self._stop.set()
        self._log.close()
        return took

    def peak(self, since: float) -> float:
        return max((s.rss_mb for s in self.samples if s.at >= since), default=0.0)


# -- requests ------------------------------------------------------------------------------------


def _instant(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def requests_between(audit_log: Path, start: float, end: float) -> collections.Counter[str]:
    """The operator's requests received in [start, end) (wall-clock seconds), by
    "verb resource[/subresource]"."""
    counts: collections.Counter[str] = collections.Counter()
    if not audit_log.exists():
        return counts
    with audit_log.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("user", {}).get("username") != "operator":
                continue
            when = _instant(entry.get("requestReceivedTimestamp", "1970-01-01T00:00:00Z"))
            if not start <= when < end:
                continue
            ref = entry.get("objectRef") or {}
            resource = ref.get("resource", entry.get("requestURI", "?").split("?")[0])
            if ref.get("subresource"):
                resource += "/" + ref["subresource"]
            counts[f"{entry.get('verb', '?')} {resource}"] += 1
    return counts


# -- the run -------------------------------------------------------------------------------------


@dataclass
class Step:
    name: str
    replicas: int
    wall: float = 0.0
    #: seconds until the Deployment's pods all existed (the control plane's part of the wall)
    created: float = 0.0
    cpu: float = 0.0
    peak_mb: float = 0.0
    end_mb: float = 0.0
    nodes: int = 0
    scheduled: int = 0
    requests: dict[str, int] = field(default_factory=dict)
    load: str = ""

    @property
    def total(self) -> int:
        return sum(self.requests.values())


def scale(plane: ControlPlane, nodewright: Process, replicas: int, timeout: float) -> Step:
    before_ready, _ = plane.deployment()
    step = Step(f"{before_ready} -> {replicas}", replicas)
    start_wall, start = time.time(), nodewright.now()
    plane.kubectl("scale", "deploy/inflate", "-n", NAMESPACE, f"--replicas={replicas}")
    while True:
        ready, exist = plane.deployment()
        if replicas > before_ready and not step.created and exist >= replicas:
            step.created = time.monotonic() - start.at
        if ready == replicas and exist == replicas:
            break
        if time.monotonic() - start.at > timeout:
            raise RuntimeError(f"{step.name}: {ready} ready, {exist} pods after {timeout:g}s")
        time.sleep(POLL_EVERY)
    end = nodewright.now()
    step.wall = end.at - start.at
    step.cpu = end.cpu - start.cpu
    step.peak_mb = nodewright.peak(start.at)
    step.end_mb = end.rss_mb
    step.nodes = plane.nodes()
    step.scheduled = max(0, replicas - before_ready)
    step.requests = dict(requests_between(plane.audit_log, start_wall, time.time() + 1))
    step.load = load()
    return step


def idle(plane: ControlPlane, nodewright: Process, seconds: float, name: str) -> Step:
    step = Step(name, plane.deployment()[0])
    start_wall, start = time.time(), nodewright.now()
    time.sleep(seconds)
    end = nodewright.now()
    step.wall, step.cpu = end.at - start.at, end.cpu - start.cpu
    step.peak_mb, step.end_mb = nodewright.peak(start.at), end.rss_mb
    step.nodes = plane.nodes()
    step.requests = dict(requests_between(plane.audit_log, start_wall, time.time() + 1))
    step.load = load()
    return step


def print_steps(steps: list[Step]) -> None:
    print(
        f"{'step':<22} {'wall s':>7} {'made s':>7} {'cpu s':>7} {'peak MB':>8} {'end MB':>7}"
        f" {'nodes':>6} {'requests':>9} {'req/pod':>8}  load"
    )
    for s in steps:
        per_pod = f"{s.total / s.scheduled:.2f}" if s.scheduled else "-"
        made = f"{s.created:7.1f}" if s.created else f"{'-':>7}"
        print(
            f"{s.name:<22} {s.wall:7.1f} {made} {s.cpu:7.1f} {s.peak_mb:8.0f} {s.end_mb:7.0f}"
            f" {s.nodes:6d} {s.total:9d} {per_pod:>8}  {s.load}"
        )
    for s in steps:
        top = sorted(s.requests.items(), key=lambda kv: -kv[1])
        print(f"  {s.name}: " + ", ".join(f"{k} {v}" for k, v in top[:12]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--realk8s",
        default=os.environ.get("NODEWRIGHT_REALK8S", str(ROOT.parent / "shared/tools/realk8s")),
    )
    parser.add_argument("--steps", default="1000,5000,500", help="replica counts, in order")
    parser.add_argument("--idle", type=float, default=60.0, help="idle seconds after the steps")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds a step may take")
    parser.add_argument("--keep", action="store_true", help="leave the control plane up")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args(argv)
    home = Path(os.environ.get("REALK8S_HOME") or Path(tempfile.gettempdir()) / "realk8s")
    plane = ControlPlane(Path(args.realk8s), home)
    print(f"control plane at {home} (REALK8S_HOME); load average {load()}", flush=True)
    plane.up()
    steps: list[Step] = []
    extra: dict[str, Any] = {}
    try:
        plane.prepare()
        first = Process(plane, home / "bench-nodewright.log")
        first.start()
        first.wait_for_log("became leader", 120)
        for replicas in (int(r) for r in args.steps.split(",")):
            steps.append(scale(plane, first, replicas, args.timeout))
            print_steps(steps[-1:])
        steps.append(idle(plane, first, args.idle, f"idle {args.idle:g}s"))
        extra["sigterm_exit_s"] = round(first.terminate(), 2)
        fresh = Process(plane, home / "bench-nodewright-fresh.log")
        fresh.start()
        fresh.wait_for_log("became leader", 120)
        steps.append(idle(plane, fresh, args.idle, f"fresh, idle {args.idle:g}s"))
        fresh.terminate()
        extra["rss_after_vs_fresh"] = round(steps[-2].end_mb / max(steps[-1].end_mb, 1.0), 2)
    finally:
        if not args.keep:
            plane.down()
    print()
    print_steps(steps)
    print(
        f"SIGTERM to exit: {extra.get('sigterm_exit_s')} s; RSS after the steps / a fresh "
        f"process holding the same: {extra.get('rss_after_vs_fresh')}"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"steps": [s.__dict__ for s in steps], **extra}, indent=2),
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
