"""What configures the controllers: the settings of ``nodewright run`` (:mod:`.run`, every
option a flag and an environment variable) and what ``nodewright simulate`` takes too, the
feature gates (:mod:`.featuregates`) and the scheduler configuration (:mod:`.schedulerconfig`).

Each lives in its own module, and this package imports none of them: ``simulate`` reads the
gates without loading what ``run``'s settings are built on (pydantic-settings).
"""
