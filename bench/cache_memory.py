"""What one cached pod, node and NodeClaim costs in the Kubernetes adapter's caches.

``bench/data/served_objects.json`` holds one of each as realk8s served them to ``nodewright
run`` in ``bench/cluster.py`` (a KWOK pause pod of the ``inflate`` Deployment, its Node and
NodeClaim, ``managedFields`` included). The script makes ``--count`` copies of each (unique
names, uids and resourceVersions, the rest as a Deployment's pods share it), parses them as
the caches do, and prints the memory each one keeps (tracemalloc, after a collection): as the
server sent it, and as the cache keeps it (trimmed, interned and compacted, see
``nodewright.cluster.kube.slim``; for read-only kinds such as pods, equal parts held once, see
``nodewright.cluster.kube.shared``). The copies differ only in name, uid and resourceVersion,
so a cached pod here shares more than a Deployment's pods do (they also differ in node, IP,
service-account volume and times: ``bench/cache_churn.py`` has those).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import NodeClaim
from nodewright.api.meta import KubeObject, compact
from nodewright.cluster.kube.shared import SharedParts
from nodewright.cluster.kube.slim import READ_ONLY, slimmed

SERVED = Path(__file__).resolve().parent / "data" / "served_objects.json"
KINDS: tuple[type[KubeObject], ...] = (Pod, Node, NodeClaim)


def copies(item: dict[str, Any], count: int) -> list[bytes]:
    """``count`` copies of ``item`` as JSON, each with its own name, uid and version."""
    texts = []
    for index in range(count):
        copy = json.loads(json.dumps(item))
        meta = copy["metadata"]
        meta["name"] = f"{meta['name']}-{index}"
        meta["uid"] = f"{meta['uid'][:-8]}{index:08d}"
        meta["resourceVersion"] = str(1000 + index)
        texts.append(json.dumps(copy).encode())
    return texts


def as_served(kind: type[KubeObject]) -> Callable[[bytes], KubeObject]:
    return lambda text: kind.model_validate(json.loads(text))


def as_cached(kind: type[KubeObject]) -> Callable[[bytes], KubeObject]:
    parts = SharedParts() if kind in READ_ONLY else None

    def parse(text: bytes) -> KubeObject:
        obj = kind.model_validate(slimmed(kind, json.loads(text)))
        compact(obj)
        return obj if parts is None else parts.share(obj)

    return parse


def kept_per_object(texts: list[bytes], parse: Callable[[bytes], KubeObject]) -> float:
    gc.collect()
    tracemalloc.start()
    kept = [parse(text) for text in texts]
    gc.collect()
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return current / len(texts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000, help="copies of each object")
    args = parser.parse_args(argv)
    served = json.loads(SERVED.read_text(encoding="utf-8"))
    print(f"{'kind':<10} {'JSON bytes':>10} {'as served':>10} {'as cached':>10}")
    for kind in KINDS:
        texts = copies(served[kind.KIND], args.count)
        raw = kept_per_object(texts, as_served(kind))
        cached = kept_per_object(texts, as_cached(kind))
        print(f"{kind.KIND:<10} {len(texts[0]):>10} {raw:>10.0f} {cached:>10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
