"""Bad input to ``nodewright tune`` stops it before anything runs: one ``error:`` line each,
naming the file, line and key (or the flag), exit status 2, nothing on stdout."""

from __future__ import annotations

import pytest

from tests.tune.conftest import Tune

POLICY = """\
parameters:
  - field: spec.disruption.consolidationPolicy
    values: [WhenEmpty, WhenEmptyOrUnderutilized]
"""


@pytest.mark.parametrize(
    ("space", "expected"),
    [
        (
            "parameterz:\n  - field: spec.weight\n    values: [1]\n",
            [
                "error: {space}:1: parameterz: unknown key; expected one of parameters, "
                "sample, constraints",
                "error: {space}:1: parameters: expected a list of parameters, each with field "
                "and values (or range)",
            ],
        ),
        (
            "parameters:\n  - field: spec.disruption.consolidateAfter\n"
            "    range: {from: 10m, to: 0s, step: 1m}\n",
            ["error: {space}:3: parameters[0].range.to: expected to >= from"],
        ),
        (
            "parameters:\n  - field: spec.weight\n    range: {from: 1, to: 5}\n",
            [
                "error: {space}:3: parameters[0].range: expected {{from, to, step}}: numbers "
                "(10, 50, 10) or durations (0s, 10m, 1m)"
            ],
        ),
        (
            "parameters:\n  - field: metadata.labels\n    values: [{}]\n",
            [
                "error: {space}:2: parameters[0].field: 'metadata.labels': a field under spec "
                "(spec.weight, spec.template...)"
            ],
        ),
        (
            "parameters:\n  - field: spec.weight\n    values: []\n",
            ["error: {space}:3: parameters[0].values: expected a non-empty list of values to try"],
        ),
        (
            POLICY + "constraints:\n  maxPodPending: soon\n",
            [
                "error: {space}:5: constraints.maxPodPending: 'soon' is not a duration "
                "(expected forms like '30s', '5m', '720h')"
            ],
        ),
        (
            POLICY + "constraints:\n  maxPendingTime: 2m\n",
            [
                "error: {space}:5: constraints.maxPendingTime: unknown constraint; expected "
                "maxPodPending, maxDisruptionsPerHour, maxPendingPods"
            ],
        ),
        (
            "parameters: [\n",
            ["error: {space}:2:1: malformed YAML: did not find expected node content"],
        ),
    ],
)
def test_a_bad_space_file_names_the_line_and_key(
    tune: Tune, tmp_path: object, space: str, expected: list[str]
) -> None:
    run = tune(space)

    assert run.exit_code == 2
    path = f"{tmp_path}/space.yaml"
    assert run.errors() == [line.format(space=path) for line in expected]
    assert run.stdout == ""


def test_a_value_karpenter_refuses_names_the_parameter_its_line_and_the_nodepool(
    tune: Tune, tmp_path: object
) -> None:
    space = POLICY + "  - field: spec.disruption.consolidateAfter\n    values: [30s, soon]\n"
    run = tune(space)

    assert run.exit_code == 2
    assert run.stdout == ""
    errors = run.errors()
    assert len(errors) == 1  # once, though two combinations hold it
    assert errors[0].startswith(
        f"error: {tmp_path}/space.yaml:4: parameters[1]: consolidateAfter=soon: "
        'NodePool "default": spec.disruption.consolidateAfter: '
    )


def test_a_nodepool_the_inputs_lack_is_named_with_those_they_have(
    tune: Tune, tmp_path: object
) -> None:
    space = "parameters:\n  - name: gpu\n    field: spec.weight\n    values: [10, 20]\n"
    run = tune(space)

    assert run.exit_code == 2
    assert run.errors() == [
        f'error: {tmp_path}/space.yaml:2: parameters[0]: no NodePool "gpu" to vary; '
        "the inputs have NodePool default"
    ]


def test_too_many_combinations_ask_for_a_sample(tune: Tune, tmp_path: object) -> None:
    space = (
        "parameters:\n"
        "  - field: spec.weight\n    range: {from: 1, to: 100, step: 1}\n"
        "  - field: spec.disruption.consolidateAfter\n    range: {from: 0s, to: 200s, step: 1s}\n"
    )
    run = tune(space)

    assert run.exit_code == 2
    assert run.errors() == [
        f"error: {tmp_path}/space.yaml: the parameters make 20100 combinations; tune runs at "
        "most 10000: give sample: N (or --sample N) to draw N of them"
    ]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (
            ("--objective", "cheapest"),
            "error: --objective cheapest: unknown 'cheapest'; expected one or more of cost, "
            "pending, disruptions, nodes, comma-separated",
        ),
        (("--jobs", "0"), "error: --jobs 0: expected a whole number >= 1"),
        (("--sample", "0"), "error: --sample 0: expected a whole number >= 1"),
    ],
)
def test_a_bad_flag_is_an_input_error(tune: Tune, flags: tuple[str, ...], expected: str) -> None:
    run = tune(POLICY, *flags)

    assert run.exit_code == 2
    assert run.errors() == [expected]


def test_bad_manifests_are_reported_as_simulate_reports_them(tune: Tune, tmp_path: object) -> None:
    from pathlib import Path

    broken = Path(str(tmp_path)) / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x\n")
    run = tune(POLICY, inputs=(str(broken),))

    assert run.exit_code == 2
    assert run.errors()[0].startswith(f"error: {broken}:")


@pytest.mark.parametrize(
    ("space", "expected"),
    [
        (
            # A misspelt field: the NodePool's own check suggests the right one.
            "parameters:\n  - field: spec.disruption.consolidateAftr\n    values: [1m]\n",
            'parameters[0]: consolidateAftr=1m: NodePool "default": '
            "spec.disruption.consolidateAftr: unknown field 'consolidateAftr'; "
            "did you mean 'consolidateAfter'?",
        ),
        (
            # A requirement's value is a list of values: [spot] tries "spot", not [spot].
            "parameters:\n"
            "  - field: spec.template.spec.requirements[karpenter.sh/capacity-type]\n"
            "    values: [spot]\n",
            'parameters[0]: capacity-type=spot: NodePool "default": '
            "spec.template.spec.requirements[karpenter.sh/capacity-type]: expected a list of "
            "values or a mapping, got 'spot' (a requirement's values are a list, so each value "
            "to try is one: [[spot], ...])",
        ),
    ],
)
def test_a_mistake_in_a_field_or_value_names_the_line_the_value_and_the_fix(
    tune: Tune, tmp_path: object, space: str, expected: str
) -> None:
    run = tune(space)

    assert run.exit_code == 2
    assert run.stdout == ""
    assert run.errors() == [f"error: {tmp_path}/space.yaml:2: {expected}"]
