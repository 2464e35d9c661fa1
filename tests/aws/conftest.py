"""One moto EC2 server for the session on 127.0.0.1, reset before each test that seeds it.

boto3 talks to it through the real client. Instance-metadata is disabled for the whole session
(AWS_EC2_METADATA_DISABLED=true): no test ever dials 169.254.169.254.
"""

from __future__ import annotations

import logging
import os
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

os.environ["AWS_EC2_METADATA_DISABLED"] = "true"

REGION = "us-west-2"
CREDENTIAL_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                  "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
                  "AWS_ENDPOINT_URL_EC2", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
                  "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI")


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def reset(url: str) -> None:
    urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST"), timeout=10).read()


def client(url: str, region: str = REGION) -> Any:
    return boto3.client("ec2", endpoint_url=url, region_name=region, aws_access_key_id="testing",
                        aws_secret_access_key="testing")


@pytest.fixture
def ec2(moto_url: str) -> Any:
    """A clean moto (state reset) and a boto3 EC2 client for us-west-2."""
    reset(moto_url)
    return client(moto_url)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """An environment with no AWS configuration at all (no ~/.aws, no keys, no profile)."""
    for k in CREDENTIAL_ENV:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


@pytest.fixture
def moto_env(aws_env: pytest.MonkeyPatch, moto_url: str) -> str:
    """boto3's own chain pointed at moto: keys and endpoint from the environment, like a real shell."""
    aws_env.setenv("AWS_ACCESS_KEY_ID", "testing")
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    aws_env.setenv("AWS_ENDPOINT_URL", moto_url)
    return moto_url
