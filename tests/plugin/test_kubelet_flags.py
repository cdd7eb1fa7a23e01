"""The provider kit's kubelet flags: the shapes AWS user data and Azure custom data pass."""

from __future__ import annotations

from nodewright.plugin import kubelet_flag, kubelet_flags


def test_scalars_booleans_and_strings() -> None:
    assert kubelet_flag("max-pods", 58) == "--max-pods=58"
    assert kubelet_flag("max-pods", 0) == "--max-pods=0"
    assert kubelet_flag("cpu-cfs-quota", False) == "--cpu-cfs-quota=false"
    assert kubelet_flag("fail-swap-on", True) == "--fail-swap-on=true"
    assert kubelet_flag("cluster-dns", "10.0.0.10") == "--cluster-dns=10.0.0.10"


def test_maps_are_sorted_pairs_with_their_separator() -> None:
    labels = {"b": "2", "a": "1"}
    assert kubelet_flag("node-labels", labels) == "--node-labels=a=1,b=2"
    eviction = {"nodefs.available": "10%", "memory.available": "5%"}
    assert (
        kubelet_flag("eviction-hard", eviction, separator="<")
        == "--eviction-hard=memory.available<5%,nodefs.available<10%"
    )


def test_lists_are_comma_joined_in_order() -> None:
    taints = ["b=:NoSchedule", "a=x:NoExecute"]
    assert kubelet_flag("register-with-taints", taints) == (
        "--register-with-taints=b=:NoSchedule,a=x:NoExecute"
    )


def test_unset_settings_write_no_flag() -> None:
    assert kubelet_flag("pods-per-core", None) is None
    assert kubelet_flag("node-labels", {}) is None
    assert kubelet_flag("allowed-unsafe-sysctls", []) is None
    assert kubelet_flags(
        kubelet_flag("max-pods", 4), kubelet_flag("kube-reserved", None), kubelet_flag("x", [])
    ) == ["--max-pods=4"]
