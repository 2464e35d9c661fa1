"""The redactor's rules on real-shaped text: credentials masked, Kubernetes/Karpenter/NVIDIA text left alone."""

from __future__ import annotations

import pytest

from gputui.bundle.redact import Redactor, compile_patterns, sensitive_name


@pytest.mark.parametrize(("text", "rule"), [
    ("key AKIAIOSFODNN7EXAMPLE here", "aws-access-key-id"),
    ("ASIAY34FZKBOKMUTVV7A", "aws-access-key-id"),
    ("secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws-secret-access-key"),
    ("AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJH", "aws-secret-access-key"),
    ("Authorization: Bearer abcdef0123456789", "bearer-token"),
    ("Authorization: Basic dXNlcjpwYXNz", "basic-auth"),
    ("postgres://app:s3cr3t@db.internal:5432/x", "url-credentials"),
    ('{"token":"abc123def456"}', "credential-assignment"),
    ("DB_PASSWORD=hunter22 next", "credential-assignment"),
    ("https://h/x?api_key=0123abcd&x=1", "credential-assignment"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "private-key"),
    ("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJlX2hlcmU", "jwt"),
    ("ghp_0123456789abcdefghijklmnopqrstuvwxyz", "api-token"),
    # Shapes real clusters carry that slipped through before: quoted/spaced shell, TOML and JSON
    # assignments, YAML keys at a line start, credential flags in free text, URL passwords with an
    # empty user or an '@', `curl -u`, API-key headers, PGP keys, non-S3 signed URLs.
    ('export DB_PASSWORD="ShQuotedPw88abc"', "credential-assignment"),
    ('password = "BrRegistryPw22abc"', "credential-assignment"),
    ('auth = "bWU6Qm90dGxlcm9ja2V0UHcx"', "credential-assignment"),
    ('{"password" : "JsonSpacedPw11"}', "credential-assignment"),
    ("db:\n  password: YamlLinePw44abc", "credential-assignment"),
    ("mysql --password Hunter2Mysql -e 'select 1'", "command-args"),
    ("redis://:RedisPw66abc@redis:6379/0", "url-credentials"),
    ("curl -u admin:CurlUserPw99abc https://x", "user-password"),
    ('curl -H "X-Api-Key: ApiHeaderKey77" https://x', "auth-header"),
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----", "private-key"),
    ("https://acct.blob.core.windows.net/c/m.bin?sv=2021&sig=AzureSasSig0123%3D", "signed-url"),
    ("sk-Proj4bXy9ZqW2eRt6YuIo1PlKj", "api-token"),
])
def test_credentials_are_masked(text: str, rule: str) -> None:
    r = Redactor()
    out = r.text(text)
    assert f"[REDACTED:{rule}]" in out and r.counts[rule] == 1


@pytest.mark.parametrize("text", [
    # Real messages a bundle must keep readable (kube-scheduler, Karpenter, kubelet, git/sha digests).
    "0/12 nodes are available: 1 Insufficient nvidia.com/gpu, 3 node(s) had untolerated taint {nvidia.com/gpu: true}",
    'MountVolume.SetUp failed for volume "aws-iam-token" : object "default"/"kube-root-ca.crt" not registered',
    "failed to get token: connection refused",
    "git commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "aws:///us-east-1b/i-01c1f8a990e677825",
    "arn:aws:iam::381492650713:instance-profile/KarpenterNodeInstanceProfile-ml-prod",
    "creating instance, insufficient capacity, all requested instance types were unavailable during launch",
    "GPU-5b1e8f2a-6c0d-4e7a-9f3b-2d4c6a8e0b1f",
    "/var/lib/kubelet/device-plugins/kubelet.sock",
    # Names and model settings that only look like credentials.
    "pod/sk-research-llm-training-jobs/llama3-lora-sft-0-h7x2k",
    "vllm serve --max-num-batched-tokens=8192 --tokenizer=meta-llama/Llama-3-8B --max-tokens 4096",
    "Error: failed to get token: connection refused",
])
def test_ordinary_text_is_kept(text: str) -> None:
    r = Redactor()
    assert r.text(text) == text and not r.counts


def test_structured_rules() -> None:
    r = Redactor()
    obj = {"metadata": {"name": "p", "managedFields": [{"manager": "kubectl"}],
                        "annotations": {"karpenter.sh/do-not-disrupt": "true", "vault.example.com/api-key": "k",
                                        "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
           "spec": {"template": {"spec": {"containers": [{
               "name": "c", "command": ["sh", "-c", "serve --token abc123 --port 80"],
               "args": ["--client-secret", "s", "--verbose", "--gpus", "all"],
               "env": [{"name": "CUDA_VISIBLE_DEVICES", "value": "0,1"}, {"name": "MODEL", "value": "llama"},
                       {"name": "NVIDIA_API_KEY", "value": "nvapi-x"}, {"name": "EMPTY", "value": ""}]}]}}}}
    out = r.obj(obj)
    assert "managedFields" not in out["metadata"]
    anns = out["metadata"]["annotations"]
    assert anns["karpenter.sh/do-not-disrupt"] == "true"
    assert anns["vault.example.com/api-key"] == "[REDACTED:annotation]"
    c = out["spec"]["template"]["spec"]["containers"][0]
    assert c["command"][2] == "serve --token [REDACTED:command-args] --port 80"
    assert c["args"] == ["--client-secret", "[REDACTED:command-args]", "--verbose", "--gpus", "all"]
    assert [e["value"] for e in c["env"]] == ["0,1", "[REDACTED:env-value]", "[REDACTED:env-value]", ""]
    assert obj["metadata"]["annotations"]["vault.example.com/api-key"] == "k"  # the input is not modified


def test_sensitive_evidence_is_masked_in_reports() -> None:
    r = Redactor()
    report = {"findings": [{"evidence": [{"kind": "field", "path": "url", "value": "http://p:9090",
                                          "sensitive": True},
                                         {"kind": "field", "path": "spec", "value": "keep"}]}]}
    ev = r.report(report)["findings"][0]["evidence"]
    assert ev[0]["value"] == "[REDACTED:sensitive-evidence]" and ev[1]["value"] == "keep"


def test_disabled_redactor_passes_everything() -> None:
    r = Redactor(enabled=False)
    assert r.text("AKIAIOSFODNN7EXAMPLE") == "AKIAIOSFODNN7EXAMPLE"
    assert r.obj({"env": [{"name": "A", "value": "b"}]}) == {"env": [{"name": "A", "value": "b"}]}


def test_custom_pattern_masks_only_its_mask_group() -> None:
    r = Redactor(extra=compile_patterns([r"user=(?P<mask>\w+)"]))
    assert r.text("login user=alice ok") == "login user=[REDACTED:custom-1] ok"


@pytest.mark.parametrize(("name", "sensitive"), [
    ("AWS_SECRET_ACCESS_KEY", True), ("HF_TOKEN", True), ("NVIDIA_API_KEY", True), ("dbPassword", True),
    ("ssh-key", True), ("CUDA_VISIBLE_DEVICES", False), ("MONKEY", False), ("karpenter.sh/do-not-disrupt", False),
    ("hotkey", False),
])
def test_sensitive_name(name: str, sensitive: bool) -> None:
    assert sensitive_name(name) is sensitive


def test_credentials_are_found_by_their_key_anywhere_in_an_object() -> None:
    r = Redactor()
    obj = {"metadata": {"name": "sk-research-llm-training-jobs", "labels": {"example.com/secret-tier": "gold"},
                        "annotations": {"kapp.k14s.io/original": '{"spec":{"containers":[{"env":['
                                                                 '{"name":"DB_PASSWORD","value":"KappOrigPw11abc"}]}]}}'}},
           "spec": {"rayStartParams": {"redis-password": "5241590000000000", "dashboard-host": "0.0.0.0"},
                    "sparkConf": {"spark.ssl.keyPassword": "changeit99"},
                    "volumes": [{"name": "creds", "secret": {"secretName": "hf-token"}}],
                    "httpHeaders": [{"name": "X-Api-Key", "value": "ProbeApiKey77abc"},
                                    {"name": "Accept", "value": "application/json"}]}}
    out = r.obj(obj)
    spec = out["spec"]
    assert spec["rayStartParams"] == {"redis-password": "[REDACTED:sensitive-key]", "dashboard-host": "0.0.0.0"}
    assert spec["sparkConf"]["spark.ssl.keyPassword"] == "[REDACTED:sensitive-key]"
    assert spec["httpHeaders"] == [{"name": "X-Api-Key", "value": "[REDACTED:sensitive-key]"},
                                   {"name": "Accept", "value": "application/json"}]
    # References to secrets, label values and object names stay: checks and reopening need them.
    assert spec["volumes"][0]["secret"]["secretName"] == "hf-token"
    assert out["metadata"]["labels"] == {"example.com/secret-tier": "gold"}
    assert out["metadata"]["name"] == "sk-research-llm-training-jobs"
    assert "KappOrigPw11abc" not in out["metadata"]["annotations"]["kapp.k14s.io/original"]
