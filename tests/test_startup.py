"""What a command loads before it runs: every command imports all of them and every installed
provider, so what only one command or one cloud needs is imported where it is used.

Each check runs in a fresh interpreter (this one has imported everything by now).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

#: Needed only by ``run`` (the API client, pydantic-settings), by the clouds' own clients
#: (requests, azure-mgmt, botocore's client configuration) or by ``--from-cluster``.
NOT_AT_START = (
    "kubernetes",
    "urllib3",
    "pydantic_settings",
    "requests",
    "azure.mgmt.core",
    "botocore.config",
    "boto3",
    "nodewright.cluster.kube",
    "nodewright.service.runner",
    "nodewright.settings.run",
)


def _fresh(script: str) -> object:
    """What ``script`` prints as JSON, run in a new interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def test_commands_and_providers_load_without_what_only_run_or_a_cloud_needs() -> None:
    loaded = _fresh(
        f"""
        import json, sys
        from nodewright.commands import build_parser
        from nodewright.commands.host import load_host

        build_parser()
        assert load_host().node_class_kinds()
        print(json.dumps([m for m in {NOT_AT_START!r} if m in sys.modules]))
        """
    )
    assert loaded == []


def test_models_are_built_when_first_used_or_all_at_once() -> None:
    built = _fresh(
        """
        import json
        from nodewright.api.core import Pod
        from nodewright.api.meta import Model, build_models

        def models():
            found, waiting = [], [Model]
            while waiting:
                model = waiting.pop()
                found.append(model)
                waiting.extend(model.__subclasses__())
            return found

        at_import = Pod.__pydantic_complete__
        pod = Pod.model_validate({"metadata": {"name": "a"}, "spec": {"nodeName": "n"}})
        after_use = Pod.__pydantic_complete__ and pod.spec.node_name == "n"
        build_models()
        every = all(m.__pydantic_complete__ for m in models())

        class DefinedLater(Model):  # a module imported after run built every model
            size: int = 0

        print(json.dumps([at_import, after_use, every, DefinedLater.__pydantic_complete__]))
        """
    )
    assert built == [False, True, True, True]
