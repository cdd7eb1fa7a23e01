import pytest
from nodewright_toy.nodeclass import ToyNodeClass
from nodewright_toy.plugin import ToyProvider

from nodewright.testing import ProviderConformance


class TestToyConformance(ProviderConformance):
    @pytest.fixture
    def provider(self) -> ToyProvider:
        return ToyProvider()

    @pytest.fixture
    def node_class(self) -> ToyNodeClass:
        return ToyNodeClass.model_validate({"metadata": {"name": "default"}})
