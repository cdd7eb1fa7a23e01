"""AKSNodeClass ``linuxOSConfig``: every sysctl with its bounds, the CEL rules between them
(evaluated with cel-python, as the API server would), the same checks in the model, the
static hash, and the AKS API's ``linuxOSConfig`` it becomes."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from nodewright_azure.crd import aks_node_class_crd
from nodewright_azure.linuxosconfig import BOUNDED, OTHERS, LinuxOSConfig, machine_linux_os_config
from nodewright_azure.nodeclass import AKSNodeClass, spec_hash
from tests.crds.cel import validate as broken_rules


def document(sysctls: dict[str, Any], **config: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.azure.com/v1beta1",
        "kind": "AKSNodeClass",
        "metadata": {"name": "default"},
        "spec": {"linuxOSConfig": {"sysctls": sysctls, **config}},
    }


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    return aks_node_class_crd()


def schema(crd: dict[str, Any]) -> dict[str, Any]:
    (v1beta1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta1"]
    found: dict[str, Any] = v1beta1["schema"]["openAPIV3Schema"]
    return found


def test_every_sysctl_of_karpenter_azure_is_declared(crd: dict[str, Any]) -> None:
    properties = schema(crd)["properties"]["spec"]["properties"]["linuxOSConfig"]["properties"]
    sysctls = properties["sysctls"]["properties"]
    assert len(sysctls) == 28
    assert set(sysctls) == set(BOUNDED) | set(OTHERS)
    for name, (_, low, high) in BOUNDED.items():
        assert (sysctls[name]["minimum"], sysctls[name]["maximum"]) == (low, high), name
    assert sysctls["netIPv4TCPTwReuse"]["type"] == "boolean"
    assert sysctls["netIPv4IPLocalPortRange"]["pattern"] == r"^\d+ \d+$"


@pytest.mark.parametrize("name", sorted(BOUNDED))
def test_each_bound_is_enforced_by_the_schema_and_the_model(crd: dict[str, Any], name: str) -> None:
    _, low, high = BOUNDED[name]
    for value in (low, high):
        jsonschema.Draft7Validator(schema(crd)).validate(document({name: value}))
        AKSNodeClass.model_validate(document({name: value}))
    for value in (low - 1, high + 1):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft7Validator(schema(crd)).validate(document({name: value}))
        with pytest.raises(ValidationError):
            AKSNodeClass.model_validate(document({name: value}))


@pytest.mark.parametrize(
    ("sysctls", "message"),
    [
        (
            {"netCoreRmemDefault": 300000, "netCoreRmemMax": 250000},
            "netCoreRmemDefault must be <= netCoreRmemMax",
        ),
        (
            {"netCoreWmemDefault": 300000, "netCoreWmemMax": 250000},
            "netCoreWmemDefault must be <= netCoreWmemMax",
        ),
        (
            {"netIPv4NeighDefaultGcThresh1": 4096, "netIPv4NeighDefaultGcThresh2": 2048},
            "netIPv4NeighDefaultGcThresh1 must be <= netIPv4NeighDefaultGcThresh2",
        ),
        (
            {"netIPv4NeighDefaultGcThresh2": 9000, "netIPv4NeighDefaultGcThresh3": 8000},
            "netIPv4NeighDefaultGcThresh2 must be <= netIPv4NeighDefaultGcThresh3",
        ),
        (
            {"netIPv4IPLocalPortRange": "1000 60000"},
            "netIPv4IPLocalPortRange first port must be in [1024, 60999]",
        ),
        (
            {"netIPv4IPLocalPortRange": "32768 70000"},
            "netIPv4IPLocalPortRange last port must be in [32768, 65535]",
        ),
        (
            {"netIPv4IPLocalPortRange": "40000 35000"},
            "netIPv4IPLocalPortRange first port must be <= last port",
        ),
    ],
)
def test_cel_rules_reject_and_the_model_agrees(
    crd: dict[str, Any], sysctls: dict[str, Any], message: str
) -> None:
    assert [b.message for b in broken_rules(crd, document(sysctls))] == [message]
    with pytest.raises(ValidationError, match=message.split(" must", maxsplit=1)[0]):
        AKSNodeClass.model_validate(document(sysctls))


def test_a_full_valid_config_breaks_no_rule(crd: dict[str, Any]) -> None:
    sysctls: dict[str, Any] = {name: low for name, (_, low, _) in BOUNDED.items()}
    sysctls.update({"netIPv4IPLocalPortRange": "32768 60999", "netIPv4TCPTwReuse": True})
    full = document(sysctls, transparentHugePageEnabled="never")
    assert broken_rules(crd, full) == []
    jsonschema.Draft7Validator(schema(crd)).validate(full)
    parsed = AKSNodeClass.model_validate(full)
    assert parsed.to_dict()["spec"]["linuxOSConfig"]["sysctls"] == sysctls


def test_sysctls_are_in_the_static_hash() -> None:
    base = AKSNodeClass.model_validate(document({})).spec
    changed = AKSNodeClass.model_validate(document({"vmMaxMapCount": 262144})).spec
    assert spec_hash(base) != spec_hash(changed)


def test_the_aks_api_names_and_units() -> None:
    config = LinuxOSConfig.model_validate(
        {
            "swapFileSize": "2Gi",
            "transparentHugePageEnabled": "madvise",
            "transparentHugePageDefrag": "defer+madvise",
            "sysctls": {
                "netIPv4TCPKeepaliveIntvl": 30,
                "netIPv4IPLocalPortRange": "32768 60999",
                "netIPv4TCPTwReuse": True,
                "vmMaxMapCount": 262144,
            },
        }
    )
    assert machine_linux_os_config(config) == {
        "swapFileSizeMB": 2048,
        "transparentHugePageEnabled": "madvise",
        "transparentHugePageDefrag": "defer+madvise",
        "sysctls": {
            "netIpv4TcpkeepaliveIntvl": 30,
            "netIpv4IpLocalPortRange": "32768 60999",
            "netIpv4TcpTwReuse": True,
            "vmMaxMapCount": 262144,
        },
    }
    assert machine_linux_os_config(None) is None
