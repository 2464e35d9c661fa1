"""Secret shapes that passed redaction, and node names masked consistently (issue #24, item 2).

Planted where real clusters leak them (a joined argument, a label, userData, a webhook in a command)
into the gpu-not-advertised scenario; the archive's decompressed bytes must not hold any of them.
`--redact-names` replaces node names in every place they appear, the bundle still reopens to the
same findings, and the mapping is written beside the bundle, never into it.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import re
import stat
from pathlib import Path

import pytest

from gputui.bundle.redact import Redactor
from gputui.errors import ExitCode
from gputui.sim.scenario import Scenario, load_scenario
from tests.bundle.helpers import findings, members, served

POD = "llama3-lora-sft-0-h7x2k"
AZURE_KEY = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3A="
PLANTED = {
    "azure-joined-arg": f"--conn=DefaultEndpointsProtocol=https;AccountName=mlprod;AccountKey={AZURE_KEY};"
                        "EndpointSuffix=core.windows.net",
    "label": ("api-token", "9f8e7d6c5b4a39281706"),
    "netrc": "machine git.example.com login ci password NetrcPlanted771",
    "mysql": "mysql -uroot -pMysqlPlanted662 -h db.internal app",
    "slack": "https://hooks.slack.com/services/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",
    "base64-sh": "IyEvYmluL3NoCmV4cG9ydCBUT0tFTj1CYXNlNjRQbGFudGVkNDQ0Cg==",
}
SECRETS = [AZURE_KEY, "9f8e7d6c5b4a39281706", "NetrcPlanted771", "MysqlPlanted662", "SlackPlantedSecret553xyz",
           "B0PLANT02/SlackPlanted", PLANTED["base64-sh"]]


def planted_scenario() -> Scenario:
    sc = copy.deepcopy(load_scenario("gpu-not-advertised"))
    pod = next(p for p in sc.objects["Pod"] if p["metadata"]["name"] == POD)
    c = pod["spec"]["containers"][0]
    c["args"] = [*c["args"], PLANTED["azure-joined-arg"], "--notify", PLANTED["slack"]]
    c["command"] = ["sh", "-c", f"{PLANTED['mysql']} < /init.sql && exec python train.py"]
    key, value = PLANTED["label"]
    pod["metadata"].setdefault("labels", {})[key] = value
    ncs = sc.objects.get("EC2NodeClass") or []
    assert ncs, "the scenario has an EC2NodeClass to carry userData"
    ncs[0]["spec"]["userData"] = (
        "#!/bin/bash\n"
        f"cat > /root/.netrc <<'EOF'\n{PLANTED['netrc']}\nEOF\n"
        f"echo {PLANTED['base64-sh']} | base64 -d | sh\n")
    return sc


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """One plain bundle and one with --redact-names, of the planted cluster, and the live findings."""
    from _pytest.monkeypatch import MonkeyPatch

    from gputui.cli.program import main

    tmp = tmp_path_factory.mktemp("planted")
    mp = MonkeyPatch()
    try:
        with served(planted_scenario(), tmp, mp) as (sim, kc):
            plain, named = tmp / "plain.tar.gz", tmp / "named.tar.gz"
            assert main(["bundle", "-q", "--kubeconfig", str(kc), "-o", str(plain)]) == ExitCode.OK
            assert main(["bundle", "-q", "--redact-names", "--kubeconfig", str(kc), "-o", str(named)]) == ExitCode.OK
            # A link planted where the names file's temp copy goes must not lead the write elsewhere.
            victim, linked = tmp / "victim.txt", tmp / "linked.tar.gz"
            victim.write_text("not yours\n")
            (tmp / ".linked.tar.gz.names.json.partial").symlink_to(victim)
            assert main(["bundle", "-q", "--redact-names", "--kubeconfig", str(kc), "-o", str(linked)]) == ExitCode.OK
            nodes = [n["metadata"]["name"] for n in sim.objects("Node")]
            hosts = [(n["metadata"].get("labels") or {}).get("kubernetes.io/hostname") for n in sim.objects("Node")]
            ips = [a["address"] for n in sim.objects("Node") for a in (n.get("status") or {}).get("addresses") or []
                   if a.get("type") == "InternalIP"]
        return {"plain": plain, "named": named, "nodes": nodes, "hosts": [h for h in hosts if h], "ips": ips,
                "kc": kc, "victim": victim, "linked": linked}
    finally:
        mp.undo()


def test_planted_shapes_are_in_zero_bytes_of_the_archive(bundles: dict[str, object]) -> None:
    raw = gzip.decompress(Path(str(bundles["plain"])).read_bytes())
    for secret in SECRETS:
        for form in (secret, json.dumps(secret)[1:-1]):
            assert form.encode() not in raw, secret
    rules = json.loads(members(Path(str(bundles["plain"])))["manifest.json"])["redaction"]["rules"]
    for rule in ("connection-string", "sensitive-key", "netrc-password", "mysql-password", "webhook-url",
                 "encoded-script"):
        assert rules.get(rule), (rule, rules)


@pytest.mark.parametrize("text, rule", [
    (PLANTED["azure-joined-arg"], "connection-string"),
    ("Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=SbKeyPlanted12345=",
     "connection-string"),
    (PLANTED["netrc"], "netrc-password"),
    ("machine git.example.com\n  login ci\n  password NetrcLinePw55\n", "netrc-password"),
    (PLANTED["mysql"], "mysql-password"),
    (f"curl -d @msg.json {PLANTED['slack']}", "webhook-url"),
    ("https://discord.com/api/webhooks/1234567890/DiscordPlantedTok_xyz", "webhook-url"),
    (f"echo '{PLANTED['base64-sh']}' | base64 --decode | bash", "encoded-script"),
])
def test_each_shape_is_masked(text: str, rule: str) -> None:
    r = Redactor()
    assert f"[REDACTED:{rule}]" in r.text(text) and r.counts[rule] >= 1


@pytest.mark.parametrize("text", [
    "the password is required for login",
    "mysql -h db.internal -P 3306 app",
    "echo hello | base64 -d",
    "DefaultEndpointsProtocol=https;AccountName=mlprod;EndpointSuffix=core.windows.net",
])
def test_look_alikes_are_kept(text: str) -> None:
    r = Redactor()
    assert r.text(text) == text and not r.counts


def test_a_label_that_names_a_credential_is_masked_a_plain_setting_is_not() -> None:
    out = Redactor().obj({"metadata": {"labels": {"api-token": "9f8e7d6c5b4a39281706", "token-enabled": "true",
                                                  "app": "trainer"}}})
    assert out["metadata"]["labels"] == {"api-token": "[REDACTED:sensitive-key]", "token-enabled": "true",
                                         "app": "trainer"}


def test_redact_names_masks_every_node_name_and_keeps_relations(bundles: dict[str, object],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    named = Path(str(bundles["named"]))
    raw = gzip.decompress(named.read_bytes())
    nodes = list(bundles["nodes"])  # type: ignore[call-overload]
    hosts = list(bundles["hosts"])  # type: ignore[call-overload]
    ips = list(bundles["ips"])  # type: ignore[call-overload]
    assert nodes
    text = raw.decode("utf-8", "replace")
    for name in [*nodes, *hosts, *ips]:
        # whole names only: a pod IP 10.0.88.210 is not node address 10.0.88.21
        assert not re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-]|\.\w)", text), name
    files = members(named)
    node_objs = json.loads(files["resources/nodes.json"])["items"]
    assert all(n["metadata"]["name"].startswith("redacted-node-") for n in node_objs)
    pods = json.loads(files["resources/pods.json"])["items"]
    bound = [p["spec"]["nodeName"] for p in pods if (p.get("spec") or {}).get("nodeName")]
    assert bound and all(n.startswith("redacted-node-") for n in bound)
    # The same node is the same pseudonym everywhere: the bundle reopens to the same findings, by pseudonym.
    plain_found = findings(capsys, "--bundle", str(bundles["plain"]))
    named_found = findings(capsys, "--bundle", str(named))
    mapping = json.loads(Path(f"{named}.names.json").read_text())["nodes"]
    real = {pseudo: reals[0] for pseudo, reals in mapping.items()}

    def unmask(subject: str) -> str:
        kind, _, name = subject.partition("/")
        return f"{kind}/{real.get(name, name)}"

    assert [(c, unmask(s), sev) for c, s, sev in named_found] == plain_found
    assert any(s.startswith("node/redacted-node-") for _c, s, _sev in named_found)


def test_a_link_planted_at_the_names_files_temp_path_is_not_followed(bundles: dict[str, object]) -> None:
    assert Path(str(bundles["victim"])).read_text() == "not yours\n"
    side = Path(f"{bundles['linked']}.names.json")
    assert stat.S_ISREG(os.lstat(side).st_mode) and stat.S_IMODE(os.stat(side).st_mode) == 0o600
    assert json.loads(side.read_text())["nodes"]


def test_the_names_mapping_is_beside_the_bundle_not_in_it(bundles: dict[str, object]) -> None:
    named = Path(str(bundles["named"]))
    side = Path(f"{named}.names.json")
    assert stat.S_IMODE(os.stat(side).st_mode) == 0o600
    assert not any(m.endswith("names.json") for m in members(named))
    manifest = json.loads(members(named)["manifest.json"])
    assert manifest["redaction"]["node_names"].startswith("pseudonyms") and manifest["redaction"]["rules"]["node-name"]
