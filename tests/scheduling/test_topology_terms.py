"""Topology terms as keys: pods of one Deployment share one term, and a term's kept hash never
outlives the process that worked it out.

The solver keys its memo tables on terms; a term keeps its hash once worked out, and equal
terms built from different pods are one object. A term unpickled in another process (a tune
variant's worker, say) must hash as that process hashes it, or lookups of equal terms miss.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

from nodewright.api.labels import HOSTNAME_LABEL, ZONE_LABEL
from nodewright.scheduling.topologyterm import TopologyTerm
from tests.scheduling.test_topology import make_pod, spread, term

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _zone_spread(selector: dict[str, str]) -> TopologyTerm:
    (found,) = make_pod(labels=selector, spread=[spread(ZONE_LABEL, selector=selector)]).topology
    return found


def test_pods_stating_the_same_constraint_share_one_term() -> None:
    first, second = _zone_spread({"app": "web"}), _zone_spread({"app": "web"})
    assert first is second
    other = _zone_spread({"app": "api"})
    assert other != first
    assert other is not first


def test_equal_terms_hash_alike_whichever_was_hashed_first() -> None:
    pods = [
        make_pod(labels={"app": "web"}, affinity={"podAntiAffinity": {REQUIRED: [term(k)]}})
        for k in (HOSTNAME_LABEL, ZONE_LABEL, HOSTNAME_LABEL)
    ]
    hostname, zone, again = (p.topology[0] for p in pods)
    assert {hostname: "h"}[again] == "h"
    assert hash(hostname) == hash(again)
    assert zone not in {hostname}


_PICKLE_IN_CHILD = """
import pickle, sys
from nodewright.api.labels import ZONE_LABEL
from tests.scheduling.test_topology import make_pod, spread
(term,) = make_pod(labels={"app": "web"}, spread=[spread(ZONE_LABEL)]).topology
hash(term)
sys.stdout.buffer.write(pickle.dumps(term))
"""


def test_a_term_from_another_process_hashes_as_this_process_hashes_it() -> None:
    # String hashes differ from process to process (PYTHONHASHSEED): the child's hash must
    # not travel with the term.
    pickled = subprocess.run(
        [sys.executable, "-c", _PICKLE_IN_CHILD],
        check=True,
        capture_output=True,
        env={"PYTHONHASHSEED": "1", "PATH": ""},
    ).stdout
    received = pickle.loads(pickled)
    here = _zone_spread({"app": "web"})
    assert received == here
    assert hash(received) == hash(here)
    assert {here: "found"}[received] == "found"
