"""What a pod asks of a node: upstream request rules, tolerations, ports, node terms."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.api.core import Pod
from nodewright.api.core import Taint as ApiTaint
from nodewright.scheduling.model import HostPort
from nodewright.scheduling.pods import (
    node_fit_problem,
    pod_host_ports,
    pod_preferred_terms,
    pod_request,
    pod_requests,
    pod_requirement_terms,
    pod_tolerations,
    taints_from_api,
    validate_pod,
)
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import resources
from nodewright.scheduling.taints import Taint, Toleration


def make_pod(spec: dict[str, Any], name: str = "p") -> Pod:
    return Pod.model_validate({"metadata": {"name": name, "namespace": "default"}, "spec": spec})


def container(cpu: str | None = None, memory: str | None = None, **extra: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return {"name": "c", "resources": {"requests": requests}, **extra}


class TestPodRequests:
    def test_app_containers_add_up_and_count_one_pod(self) -> None:
        pod = make_pod({"containers": [container("1", "1Gi"), container("500m", "1Gi")]})
        assert pod_requests(pod) == resources(cpu="1500m", memory="2Gi", pods=1)

    def test_pod_without_requests_still_takes_a_slot(self) -> None:
        assert pod_requests(make_pod({"containers": [{"name": "c"}]})) == resources(pods=1)

    def test_init_container_larger_than_app_containers_wins(self) -> None:
        pod = make_pod(
            {"containers": [container("1", "1Gi")], "initContainers": [container("2", "1Gi")]}
        )
        assert pod_requests(pod) == resources(cpu="2", memory="1Gi", pods=1)

    def test_max_is_taken_per_resource(self) -> None:
        pod = make_pod(
            {"containers": [container("1", "3Gi")], "initContainers": [container("2", "1Gi")]}
        )
        assert pod_requests(pod) == resources(cpu="2", memory="3Gi", pods=1)

    def test_sidecars_add_to_app_containers(self) -> None:
        pod = make_pod(
            {
                "containers": [container("1", "1Gi")],
                "initContainers": [container("500m", "128Mi", restartPolicy="Always")],
            }
        )
        assert pod_requests(pod) == resources(cpu="1500m", memory="1152Mi", pods=1)

    def test_init_container_runs_beside_earlier_sidecars_only(self) -> None:
        pod = make_pod(
            {
                "containers": [container("100m")],
                "initContainers": [
                    container("1", restartPolicy="Always"),
                    container("2"),  # runs beside the 1-CPU sidecar: 3 CPU peak
                    container("1", restartPolicy="Always"),
                ],
            }
        )
        assert pod_requests(pod)["cpu"] == 3000

    def test_later_sidecars_do_not_count_for_earlier_init_containers(self) -> None:
        pod = make_pod(
            {
                "containers": [container("100m")],
                "initContainers": [container("2"), container("1", restartPolicy="Always")],
            }
        )
        # steady state 1.1 CPU, init peak 2 CPU (the sidecar starts after it)
        assert pod_requests(pod)["cpu"] == 2000

    def test_overhead_is_added(self) -> None:
        pod = make_pod({"containers": [container("1")], "overhead": {"cpu": "250m"}})
        assert pod_requests(pod)["cpu"] == 1250

    def test_limits_stand_in_for_missing_requests(self) -> None:
        pod = make_pod({"containers": [{"name": "c", "resources": {"limits": {"cpu": "2"}}}]})
        assert pod_requests(pod)["cpu"] == 2000


def test_tolerations_and_taints_convert_with_defaults() -> None:
    pod = make_pod(
        {"tolerations": [{"key": "a", "operator": "Exists"}, {"key": "b", "value": "x"}]}
    )
    assert pod_tolerations(pod) == (
        Toleration("a", "Exists", "", ""),
        Toleration("b", "Equal", "x", ""),
    )
    assert taints_from_api([ApiTaint(key="k", effect="NoSchedule")]) == (
        Taint("k", "NoSchedule", ""),
    )


def test_host_ports_include_sidecars_but_not_plain_init_containers() -> None:
    pod = make_pod(
        {
            "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}],
            "initContainers": [
                {"name": "i", "ports": [{"containerPort": 81, "hostPort": 8081}]},
                {
                    "name": "s",
                    "restartPolicy": "Always",
                    "ports": [{"containerPort": 82, "hostPort": 8082, "protocol": "UDP"}],
                },
            ],
        }
    )
    assert pod_host_ports(pod) == (HostPort(8080), HostPort(8082, "UDP"))


class TestRequirementTerms:
    def test_node_selector_alone_is_one_term(self) -> None:
        pod = make_pod({"nodeSelector": {"failure-domain.beta.kubernetes.io/zone": "z1"}})
        assert pod_requirement_terms(pod) == (
            Requirements.of(("topology.kubernetes.io/zone", "In", ["z1"])),
        )

    def test_node_selector_is_intersected_into_every_ored_term(self) -> None:
        pod = make_pod(
            {
                "nodeSelector": {"team": "a"},
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "z", "operator": "In", "values": ["1"]}
                                    ]
                                },
                                {
                                    "matchExpressions": [
                                        {"key": "z", "operator": "In", "values": ["2"]}
                                    ]
                                },
                            ]
                        }
                    }
                },
            }
        )
        assert pod_requirement_terms(pod) == (
            Requirements.of(("team", "In", ["a"]), ("z", "In", ["1"])),
            Requirements.of(("team", "In", ["a"]), ("z", "In", ["2"])),
        )

    def test_preferred_terms_heaviest_first(self) -> None:
        def pref(weight: int, value: str) -> dict[str, Any]:
            return {
                "weight": weight,
                "preference": {
                    "matchExpressions": [{"key": "z", "operator": "In", "values": [value]}]
                },
            }

        pod = make_pod(
            {
                "affinity": {
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            pref(1, "a"),
                            pref(100, "b"),
                            pref(50, "c"),
                        ]
                    }
                }
            }
        )
        assert [w for w, _ in pod_preferred_terms(pod)] == [100, 50, 1]
        assert pod_preferred_terms(pod)[0][1] == Requirements.of(("z", "In", ["b"]))


def _affinity(expression: dict[str, Any], fields: bool = False) -> dict[str, Any]:
    term = {"matchFields": [expression]} if fields else {"matchExpressions": [expression]}
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
    }


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        (
            {"nodeSelector": {"kubernetes.io/hostname": "n1"}},
            "kubernetes.io/hostname is restricted",
        ),
        ({"nodeSelector": {"karpenter.sh/custom": "x"}}, "karpenter.sh/custom is restricted"),
        (_affinity({"key": "a", "operator": "Near", "values": ["x"]}), "unsupported operator"),
        (
            _affinity({"key": "metadata.name", "operator": "In", "values": ["x"]}, True),
            "matchFields",
        ),
        (_affinity({"key": "a", "operator": "Gt", "values": ["x"]}), "integer"),
        (
            _affinity({"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}),
            "not run on a Karpenter provisioned node",
        ),
    ],
)
def test_validate_pod_rejects(spec: dict[str, Any], fragment: str) -> None:
    problem = validate_pod(make_pod(spec))
    assert problem is not None
    assert fragment in problem


@pytest.mark.parametrize(
    "spec",
    [
        {},
        {"nodeSelector": {"karpenter.sh/nodepool": "default", "team": "a"}},
        {"nodeSelector": {"node.kubernetes.io/instance-type": "m5.large"}},
        _affinity({"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}),
    ],
)
def test_validate_pod_accepts(spec: dict[str, Any]) -> None:
    assert validate_pod(make_pod(spec)) is None


def test_validate_pod_accepts_provider_well_known_labels_in_restricted_domains() -> None:
    pod = make_pod({"nodeSelector": {"karpenter.kwok.sh/instance-family": "c"}})
    domains = frozenset({"karpenter.sh", "karpenter.kwok.sh"})
    assert validate_pod(pod, restricted_domains=domains) is not None
    assert (
        validate_pod(
            pod,
            restricted_domains=domains,
            well_known_labels=frozenset({"karpenter.kwok.sh/instance-family"}),
        )
        is None
    )


class TestNodeFit:
    allocatable = resources(cpu="4", memory="4Gi", pods=5)

    def fit(self, spec: dict[str, Any], **kwargs: Any) -> str | None:
        args: dict[str, Any] = {
            "labels": {"zone": "a"},
            "taints": (),
            "allocatable": self.allocatable,
            "requested": {},
            "used_ports": (),
        }
        args.update(kwargs)
        return node_fit_problem(pod_request(make_pod(spec)), **args)

    def test_fits(self) -> None:
        assert self.fit({"containers": [container("1", "1Gi")]}) is None

    def test_insufficient_cpu(self) -> None:
        assert (
            self.fit({"containers": [container("1")]}, requested=resources(cpu="3500m"))
            == "Insufficient cpu"
        )

    def test_too_many_pods(self) -> None:
        assert self.fit({}, requested=resources(pods=5)) == "Too many pods"

    def test_untolerated_taint(self) -> None:
        assert (
            self.fit({}, taints=(Taint("dedicated", "NoSchedule", "gpu"),))
            == "node(s) had untolerated taint {dedicated: gpu}"
        )

    def test_tolerated_and_prefer_taints_pass(self) -> None:
        spec = {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}
        taints = (Taint("dedicated", "NoSchedule", "gpu"), Taint("x", "PreferNoSchedule"))
        assert self.fit(spec, taints=taints) is None

    def test_affinity_mismatch(self) -> None:
        assert (
            self.fit({"nodeSelector": {"zone": "b"}})
            == "node(s) didn't match Pod's node affinity/selector"
        )

    def test_any_ored_term_matches(self) -> None:
        spec = _affinity({"key": "zone", "operator": "In", "values": ["a"]})
        assert self.fit(spec) is None

    def test_host_port_conflict(self) -> None:
        spec = {"containers": [{"name": "c", "ports": [{"containerPort": 1, "hostPort": 80}]}]}
        assert (
            self.fit(spec, used_ports=(HostPort(80),))
            == "node(s) didn't have free ports for the requested pod ports"
        )
        assert self.fit(spec, used_ports=(HostPort(80, "UDP"),)) is None
