import pytest
from nodewright_toy.nodeclass import ToyNodeClass, toy_node_class_crd
from pydantic import ValidationError


def test_the_crd_is_generated_from_the_model() -> None:
    crd = toy_node_class_crd()
    assert crd["metadata"]["name"] == "toynodeclasses.toy.nodewright.dev"
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    zones = schema["properties"]["spec"]["properties"]["zones"]
    assert zones["items"]["pattern"] == "^toy-[0-9]+[a-z]$"
    assert zones["maxItems"] == 4
    assert zones["x-kubernetes-validations"][0]["message"] == "zones must not repeat"


def test_the_model_checks_what_the_crd_checks() -> None:
    with pytest.raises(ValidationError, match="zones must not repeat"):
        ToyNodeClass.model_validate(
            {"metadata": {"name": "default"}, "spec": {"zones": ["toy-1a", "toy-1a"]}}
        )
    with pytest.raises(ValidationError, match="pattern"):
        ToyNodeClass.model_validate({"metadata": {"name": "default"}, "spec": {"zones": ["eu-1a"]}})
