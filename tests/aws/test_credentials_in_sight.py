"""Whether boto3 is worth importing is decided from what its credential chain would read, without boto3."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.sources.aws import AwsConfig, credentials_in_sight


def test_nothing_in_sight(aws_env: pytest.MonkeyPatch) -> None:
    aws_env.setenv("BOTO_CONFIG", "/nonexistent")  # legacy boto file: a developer's ~/.boto would count
    assert not credentials_in_sight()
    assert not credentials_in_sight(AwsConfig(region="us-west-2"))  # a region is no credential


@pytest.mark.parametrize("var", ["AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
                                 "AWS_CONTAINER_CREDENTIALS_FULL_URI"])
def test_environment_credentials_irsa_and_pod_identity(aws_env: pytest.MonkeyPatch, var: str) -> None:
    aws_env.setenv(var, "x")
    assert credentials_in_sight()


def test_a_shared_config_file_or_a_named_profile(aws_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert credentials_in_sight(AwsConfig(profile="prod"))  # boto3 itself says whether it exists
    config = tmp_path / "config"
    config.write_text("[profile sso]\nsso_session = corp\n")
    aws_env.setenv("AWS_CONFIG_FILE", str(config))
    assert credentials_in_sight()
