from __future__ import annotations

import pytest

from nodewright_azure.vmsize import VMSizeError, parse_vm_size

# size, family, subfamily, vCPUs, constrained, features, accelerator, series, sku-version
CASES = [
    ("D8s_v5", "D", "", 8, None, "s", "", "Ds_v5", "5"),
    ("D2_v2", "D", "", 2, None, "", "", "D_v2", "2"),
    ("DS2_v2", "D", "S", 2, None, "", "", "DS_v2", "2"),
    ("D4pls_v6", "D", "", 4, None, "pls", "", "Dpls_v6", "6"),
    ("B2s", "B", "", 2, None, "s", "", "Bs", "1"),
    ("NC24ads_A100_v4", "N", "C", 24, None, "ads", "A100", "NCads_v4", "4"),
    ("NC4as_T4_v3", "N", "C", 4, None, "as", "T4", "NCas_v3", "3"),
    ("ND96isr_H100_v5", "N", "D", 96, None, "isr", "H100", "NDisr_v5", "5"),
    ("NV36ads_A10_v5", "N", "V", 36, None, "ads", "A10", "NVads_v5", "5"),
    ("NC24lds_xl_RTXPRO6000BSE_v6", "N", "C", 24, None, "lds", "RTXPRO6000BSE", "NClds_v6", "6"),
    ("ND96isr_MI300X_v5", "N", "D", 96, None, "isr", "MI300X", "NDisr_v5", "5"),
    ("M8-2ms", "M", "", 8, 2, "ms", "", "Mms", "1"),
    ("NC6s_v3", "N", "C", 6, None, "s", "V100", "NCs_v3", "3"),
    ("E16as_v5", "E", "", 16, None, "as", "", "Eas_v5", "5"),
    ("F16s_v2", "F", "", 16, None, "s", "", "Fs_v2", "2"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_parse_vm_size(case: tuple[str, str, str, int, int | None, str, str, str, str]) -> None:
    size, family, sub, cpus, constrained, features, accel, series, version = case
    parsed = parse_vm_size(f"Standard_{size}")
    assert parsed.family == family
    assert parsed.subfamily == sub
    assert parsed.cpus == cpus
    assert parsed.constrained_cpus == constrained
    assert parsed.additive_features == features
    assert parsed.accelerator == accel
    assert parsed.series == series
    assert parsed.version_label == version


@pytest.mark.parametrize("name", ["Standard_", "Standard_d2s_v5", "Standard_D", "Basic"])
def test_names_outside_the_grammar_are_errors_naming_the_size(name: str) -> None:
    with pytest.raises(VMSizeError, match=name):
        parse_vm_size(name)
