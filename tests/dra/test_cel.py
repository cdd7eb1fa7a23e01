"""Device selectors evaluate as Kubernetes' CEL environment does: the device's driver,
attributes (an unknown domain is empty, a missing id an error) and capacities, errors that
``&&``/``||`` absorb, Kubernetes' quantity and semver libraries; what nodewright does not
evaluate is refused by name, never guessed. Standard CEL (no ``device``) is checked against
cel-python, an independent implementation."""

from __future__ import annotations

from fractions import Fraction

import celpy
import pytest
from celpy import celtypes

from nodewright.api.cel.parse import CelError, CelUnsupported
from nodewright.api.cel.program import DeviceInput, compile_selector
from nodewright.api.cel.values import Semver

GPU = DeviceInput(
    "gpu.example.com",
    {
        "model": "A100",
        "gpu.example.com/memoryGB": 80,
        "driverVersion": Semver.parse("535.104.5"),
        "mig": False,
        "pci.example.com/root": "pci0",
    },
    {"memory": Fraction(80 * 2**30), "gpu.example.com/cores": Fraction(6912)},
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.driver == "gpu.example.com"', True),
        ('device.driver != "gpu.example.com"', False),
        ('device.attributes["gpu.example.com"].model == "A100"', True),
        ('device.attributes["gpu.example.com"].memoryGB >= 40', True),
        ('device.attributes["gpu.example.com"].memoryGB < 40', False),
        ('device.attributes["gpu.example.com"].mig', False),
        ('device.attributes["pci.example.com"].root == "pci0"', True),
        ('"model" in device.attributes["gpu.example.com"]', True),
        ('"model" in device.attributes["other.example.com"]', False),
        ('has(device.attributes["gpu.example.com"].model)', True),
        ('has(device.attributes["gpu.example.com"].colour)', False),
        ('device.attributes["gpu.example.com"].model.startsWith("A1")', True),
        ('device.attributes["gpu.example.com"].model.matches("^A[0-9]+$")', True),
        ('device.attributes["gpu.example.com"].model.lowerAscii() == "a100"', True),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) > 0', True),
        ('device.capacity["gpu.example.com"].memory.isLessThan(quantity("80Gi"))', False),
        ('device.capacity["gpu.example.com"].cores.asInteger() == 6912', True),
        (
            'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("535.0.0"))',
            True,
        ),
        ('device.attributes["gpu.example.com"].driverVersion.major() == 535', True),
        ('semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))', True),
        ("device.allowMultipleAllocations", False),
        # CEL's commutative error handling: false && error is false, true || error is true.
        ('false && device.attributes["x.example.com"].y == 1', False),
        ('device.attributes["x.example.com"].y == 1 || true', True),
        ('["A100", "H100"].exists(m, device.attributes["gpu.example.com"].model == m)', True),
        ('device.attributes["gpu.example.com"].model in ["A100", "H100"]', True),
        ('device.attributes["gpu.example.com"].memoryGB == 80.0', True),
    ],
)
def test_selector_answers(expression: str, expected: bool) -> None:
    assert compile_selector(expression).matches(GPU) is expected


@pytest.mark.parametrize(
    "expression",
    [
        'device.attributes["x.example.com"].y == 1',  # missing id: "no such key"
        'device.attributes["gpu.example.com"].model > 1',  # no ordering string/int
        'device.attributes["gpu.example.com"].model',  # not a bool
        "1 / 0 == 1",
        "9223372036854775807 + 1 > 0",
    ],
)
def test_runtime_errors_are_errors_not_answers(expression: str) -> None:
    with pytest.raises(CelError):
        compile_selector(expression).matches(GPU)


@pytest.mark.parametrize(
    ("expression", "named"),
    [
        ('timestamp("2024-01-01T00:00:00Z") > timestamp("2023-01-01T00:00:00Z")', "timestamp"),
        ("1u == 1u", "uint"),
        ('b"abc" == b"abc"', "bytes"),
        ('device.attributes["gpu.example.com"].model.matches("A(?=1)")', "RE2"),
        ('device.attributes["gpu.example.com"].model.format([]) == ""', "format"),
    ],
)
def test_unsupported_cel_is_refused_by_name(expression: str, named: str) -> None:
    with pytest.raises(CelUnsupported, match=named):
        compile_selector(expression)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("device.colour == 1", "undefined field 'colour'"),
        ("gpu.memory > 1", "undeclared reference to 'gpu'"),
        ("device.driver ==", "unexpected"),
        ('device.driver == "unterminated', "unterminated string"),
    ],
)
def test_expressions_cel_would_not_compile(expression: str, message: str) -> None:
    with pytest.raises(CelError, match=message):
        compile_selector(expression)


#: Standard CEL without ``device``: nodewright and cel-python must agree on every one.
STANDARD = [
    "1 + 2 * 3 == 7",
    "7 / 2 == 3 && -7 / 2 == -3 && -7 % 3 == -1",
    "2.5 * 2.0 == 5.0",
    '"ab" + "cd" == "abcd"',
    '"abc" < "abd"',
    "size([1, 2, 3]) == 3",
    '{"a": 1}["a"] == 1',
    '"a" in {"a": 1}',
    "[1, 2, 3].all(x, x > 0)",
    "[1, 2, 3].exists_one(x, x == 2)",
    "[1, 2, 3].map(x, x * 2) == [2, 4, 6]",
    "[1, 2, 3].filter(x, x > 1) == [2, 3]",
    "true ? 1 == 1 : false",
    "!false && !(1 > 2)",
    '"hello".contains("ell") && "hello".endsWith("lo")',
    '"hello".size() == 5',
    "int(3.9) == 3",
    'string(12) == "12"',
    "double(1) == 1.0",
    "[1, 2] + [3] == [1, 2, 3]",
    "0x10 == 16",
    "false || (1 == 1 && 2 != 3)",
]


@pytest.mark.parametrize("expression", STANDARD)
def test_standard_cel_agrees_with_cel_python(expression: str) -> None:
    environment = celpy.Environment()
    theirs = environment.program(environment.compile(expression)).evaluate({})
    assert isinstance(theirs, celtypes.BoolType)
    assert compile_selector(expression).matches(GPU) is bool(theirs)
