"""Fixtures: one moto server on 127.0.0.1 for the session, reset before each test."""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Iterator

import pytest
from moto.server import ThreadedMotoServer

from providers.aws.tests.aws_helpers import World, build_world

FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    saved = {k: os.environ.get(k) for k in FAKE_CREDENTIALS}
    os.environ.update(FAKE_CREDENTIALS)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def world(moto_endpoint: str) -> World:
    request = urllib.request.Request(f"{moto_endpoint}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass
    return build_world(moto_endpoint)
