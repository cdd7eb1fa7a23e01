"""Fuzzing the loading path in the suite: mutated manifests through ``simulate`` and
``convert`` exit 0 or 2, print no traceback, name the file on every error line, and stay
within bounded time and memory.

The generator and the property are ``bench/fuzz_inputs.py``'s; here a fixed, small number
of examples keeps the suite fast (the same inputs on every run). The long run and its
figures are in bench/README.md. Inputs the long run found breaking the property are kept
below as regression tests.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from tests.bench_modules import load_bench
from tests.fuzz import fuzz_settings

fuzzing = load_bench("fuzz_inputs")

#: Enough to cover every mutation and seed a few times; about two seconds.
EXAMPLES = 20


@fuzz_settings(EXAMPLES)
@given(fuzzing.manifests())
def test_mutated_manifests_keep_the_property(manifest: tuple[str, str]) -> None:
    text, suffix = manifest
    for outcome in fuzzing.check_input(text, suffix):
        assert outcome.violations == [], (outcome.command, outcome.stderr[:2000])


def _property_holds(text: str, suffix: str = ".yaml") -> list[object]:
    outcomes: list[Any] = fuzzing.check_input(text, suffix)
    for outcome in outcomes:
        assert outcome.violations == [], (outcome.command, outcome.stderr[:2000])
        assert outcome.exit_code == 2, (outcome.command, outcome.stderr)
    return outcomes


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("kind: Pod\nspec: " + "[" * 1000, id="1000-nested-lists"),
        pytest.param("kind: Pod\nspec: " + "{a: " * 1000, id="1000-nested-mappings"),
        pytest.param(fuzzing.AWKWARD_TEXT[-1], id="alias-bomb"),
        pytest.param(
            "apiVersion: v1\nkind: Pod\nmetadata: {}\nspec: {containers: [{name: a}]}\n",
            id="pod-without-name",
        ),
        pytest.param("apiVersion: v1\nkind: {a: 1}\nmetadata: {name: x}\n", id="kind-mapping"),
        pytest.param("apiVersion: [v1]\nkind: Pod\nmetadata: {name: x}\n", id="api-version-list"),
        pytest.param(
            "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: hello\nspec: {}\n",
            id="metadata-string",
        ),
        pytest.param(
            "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: a}\nspec: x\n",
            id="spec-string",
        ),
        pytest.param(
            "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: a}\n"
            "spec: [1]\n",
            id="provisioner-spec-list",
        ),
        pytest.param("", id="empty-file"),
        # Found by bench/fuzz_inputs.py on the code before issue 18 (one per kind of break):
        pytest.param(
            "apiVersion: karpenter.kwok.sh/v1alpha1\nkind: KWOKNodeClass\nmetadata: {}\n",
            id="node-class-without-name",
        ),
        pytest.param(
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {namespace: a}\n"
            "spec: {minAvailable: 1}\n",
            id="budget-without-name",
        ),
        pytest.param(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
            "    - {name: a, resources: {requests: {cpu: 500m, name: v}}}\n",
            id="request-named-name-of-v",
        ),
        pytest.param(
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec:\n"
            "  template: {metadata: {labels: {team: " + "y" * 200_000 + "}}}\n",
            id="label-value-of-200000-characters",
        ),
    ],
)
def test_issue_18_crashing_inputs_are_clear_errors(text: str) -> None:
    _property_holds(text)
