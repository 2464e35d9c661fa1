"""Redaction for bundles: credentials out of objects, logs and reports, counted per rule (never the values).

Regexes are best effort (troubleshoot learned the same), so the structured rules do the heavy lifting:
Secrets are never read at all, every env value is masked unless it is a known GPU/runtime setting, the
argument after a credential-looking flag is masked, and `kubectl.kubernetes.io/last-applied-configuration`
(a copy of the whole spec, env included) is dropped. The text rules then run over every remaining string.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

MARK = "[REDACTED:{rule}]"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


class RedactPatternError(ValueError):
    """A `--redact-pattern` that does not compile, or would match the empty string."""


@dataclass(frozen=True, slots=True)
class TextRule:
    """A regex; the named group `mask` (when present) is masked, else the whole match."""

    name: str
    pattern: re.Pattern[str]


_CRED_WORDS = r"(?:password|passwd|passphrase|pwd|secret|token(?!s\b|iz)|api[_-]?key|apikey|access[_-]?key|" \
              r"private[_-]?key|credentials?|client[_-]?secret|auth[_-]?key)"
"""Not `tokens`/`tokenizer`: `--max-num-batched-tokens=8192` and `--tokenizer=meta-llama/...` are model settings."""

TEXT_RULES: tuple[TextRule, ...] = (
    # PEM and PGP (`PRIVATE KEY BLOCK`); a key whose END line is missing is masked to the next blank line.
    TextRule("private-key", re.compile(
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(?=\n[ \t]*\n)|\Z)")),
    TextRule("aws-access-key-id", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])")),
    TextRule("aws-secret-access-key", re.compile(
        r"(?i)(?:aws_?secret_?access_?key|secret_?access_?key|aws_?session_?token)[\"']?\s*[:=]\s*[\"']?"
        r"(?P<mask>[A-Za-z0-9/+=]{16,})")),
    # A bare 40-character AWS secret: base64 alphabet, mixed case plus a digit or / or +, so that
    # hex digests (lower case only) and Kubernetes names (with '-' and '.') never match.
    TextRule("aws-secret-access-key", re.compile(
        r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[0-9/+])"
        r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")),
    TextRule("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    TextRule("bearer-token", re.compile(r"(?i)\bbearer\s+(?P<mask>[A-Za-z0-9\-._~+/]{8,}=*)")),
    TextRule("basic-auth", re.compile(r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?basic\s+(?P<mask>[A-Za-z0-9+/=]{6,})")),
    # user:pass@ with an empty user (`redis://:pw@host`) or an '@' in the password (up to the last '@').
    TextRule("url-credentials", re.compile(
        r"\b[a-zA-Z][a-zA-Z0-9+.-]*://(?P<mask>[^\s/:@\"'<>]*:[^\s/\"'<>]+)@")),
    TextRule("signed-url", re.compile(
        r"(?i)[?&](?:sig|signature|x-goog-signature|x-amz-signature|x-amz-security-token)=(?P<mask>[^&\s\"'<>]+)")),
    TextRule("user-password", re.compile(r"(?<![\w-])(?:-u|--user)\s+[\"']?(?P<mask>[^\s:\"']+:[^\s\"']+)")),
    # Header lines: `-H "X-Api-Key: v"`, `Authorization: Token v` at a line start.
    TextRule("auth-header", re.compile(
        r"(?im)(?:-H\s+[\"']?|^[ \t]*)[\w-]*(?:api-?key|token|auth[\w-]*)[ \t]*:[ \t]*"
        r"(?:(?:token|bearer|basic|apikey)[ \t]+)?(?P<mask>[^\s\"']{6,})")),
    TextRule("api-token", re.compile(
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}|xox[abposr]-[A-Za-z0-9-]{10,}|"
        r"glpat-[A-Za-z0-9_-]{20,}|hf_[A-Za-z0-9]{30,}|AIza[A-Za-z0-9_-]{35}|"
        # OpenAI-style keys are mixed case with digits; a Kubernetes name (`sk-research-...`) is not.
        r"sk-(?=[A-Za-z0-9_-]*[A-Z])(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,})\b")),
    # Azure Storage / Service Bus / Event Hubs connection strings, whole or inside a joined argument
    # (`--conn=DefaultEndpointsProtocol=https;AccountName=a;AccountKey=...==;EndpointSuffix=...`).
    TextRule("connection-string", re.compile(
        r"(?i)(?<![\w])(?:AccountKey|SharedAccessKey|SharedAccessSignature)=(?P<mask>[^;\s\"']+)")),
    # Webhook URLs whose path is the credential (Slack, Discord, Microsoft Teams).
    TextRule("webhook-url", re.compile(
        r"(?i)\bhttps?://(?:hooks\.slack\.com/(?:services|workflows|triggers)|"
        r"(?:discord|discordapp)\.com/api/webhooks|[\w.-]*webhook\.office\.com/webhookb2)/"
        r"(?P<mask>[A-Za-z0-9/_@.-]+)")),
    # .netrc: `machine h login u password X` on one line, or `password X` alone on its line.
    TextRule("netrc-password", re.compile(
        r"(?i)\bmachine\s+\S+(?:\s+login\s+\S+)?\s+password\s+(?P<mask>[^\s\"']+)")),
    TextRule("netrc-password", re.compile(r"(?im)^[ \t]*password[ \t]+(?P<mask>[^\s\"']+)[ \t]*$")),
    # MySQL/MariaDB clients take the password glued to -p (`mysql -uroot -pS3cret db`).
    TextRule("mysql-password", re.compile(
        r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mariadb|mariadb-dump)\b[^\n|;&]*?[ \t]-p(?P<mask>[^\s\"']+)")),
    # A base64 blob decoded and run (`echo <b64> | base64 -d | sh`): what it hides cannot be checked.
    TextRule("encoded-script", re.compile(
        r"(?P<mask>[A-Za-z0-9+/]{16,}={0,2})(?=[\"']?[ \t]*\|[ \t]*base64[ \t]+(?:-d|--decode|-D)\b)")),
    # key=value and key = "value" (shell, TOML), "key":"value" / "key" : "value" (JSON), and a YAML
    # `key: value` at a line start; never "word: text" in prose ("failed to get token: ...").
    TextRule("credential-assignment", re.compile(
        r"(?im)(?:\b[\w.-]*?(?:" + _CRED_WORDS + r"|auth\b)[\w.-]*[\"']?[ \t]*(?:=|[\"']?[ \t]*:(?=[ \t]*[\"']))"
        r"[ \t]*[\"']?"
        r"|^[ \t]*(?:-[ \t]+)?[\w.-]*?" + _CRED_WORDS + r"[\w.-]*:[ \t]+[\"']?)"
        r"(?P<mask>[^\s\"',;&}\]]+)")),
)

# A command-line flag naming a credential: the value is the rest of the flag or the next argument.
_FLAG = re.compile(r"(?i)^--?[\w.-]*(?:" + _CRED_WORDS + r"|pass|auth)[\w.-]*$")
_FLAG_IN_TEXT = re.compile(r"(?i)(?<![\w-])--?[\w.-]*(?:" + _CRED_WORDS + r"|pass\b|auth\b)[\w.-]*\s+"
                           r"(?P<mask>[^\s\-][^\s]*)")
TEXT_RULES = (*TEXT_RULES, TextRule("command-args", _FLAG_IN_TEXT))
"""The flag rule runs over all text too: `mysql --password X` in userData, logs or events."""

_NAME_WORDS = {"password", "passwd", "pwd", "passphrase", "secret", "secrets", "token", "tokens", "credential",
               "credentials", "apikey", "accesskey", "secretkey", "privatekey", "auth", "authorization", "cookie",
               "dsn", "sas"}
_KEY_QUALIFIERS = {"api", "access", "private", "secret", "ssh", "license", "signing", "encryption", "master",
                   "client", "account", "service", "session"}
_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

# Env values kept as they are (still passed through the text rules): GPU and runtime settings that
# explain GPU problems and do not hold credentials. Every other env value is masked.
_ENV_KEEP = re.compile(
    r"^(?:NVIDIA_|CUDA_|NCCL_|NV_|GPU_|DCGM_|NEURON_|HIP_|ROCR_|HSA_|OMP_|MKL_|PYTORCH_CUDA_|TF_GPU_|XLA_|"
    r"MIG_|DP_|GFD_|LC_)|"
    r"^(?:PATH|LD_LIBRARY_PATH|HOME|HOSTNAME|TZ|LANG|NODE_NAME|POD_NAME|POD_NAMESPACE|POD_IP|NAMESPACE|"
    r"FAIL_ON_INIT_ERROR|PASS_DEVICE_SPECS|DEVICE_LIST_STRATEGY|DEVICE_ID_STRATEGY|DEVICE_DISCOVERY_STRATEGY|"
    r"MPS_ROOT|CONFIG_FILE|AWS_REGION|AWS_DEFAULT_REGION|AWS_STS_REGIONAL_ENDPOINTS|WORLD_SIZE|RANK|"
    r"LOCAL_RANK|MASTER_PORT|OMPI_MCA_\w+)$")


_NAME_KEYS = frozenset({"name", "namespace", "generateName", "nodeName", "uid", "nominatedNodeName", "claimName",
                        "serviceAccountName", "schedulerName", "priorityClassName", "runtimeClassName", "nodepool"})
_DNS_NAME = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")
_SELECTOR_KEYS = frozenset({"labels", "nodeSelector", "matchLabels", "selector"})
"""Label maps: keys are label names the checks match on, not credentials."""
_REFERENCE_WORDS = frozenset({"name", "names", "ref", "file", "path", "namespace", "seconds", "ttl", "type", "mode"})


def _secret_like(value: str) -> bool:
    """A label value that could be a credential: 8+ characters with a digit (not `true`, `enabled`, `v1`)."""
    return len(value) >= 8 and any(c.isdigit() for c in value)


def _sensitive_key(key: str) -> bool:
    """A map key that names a credential (`redis-password`, `spark.ssl.keyPassword`), not a reference to one
    (`secretName`, `tokenFile`)."""
    words = [w.lower() for w in _SPLIT.split(key) if w]
    return bool(words) and words[-1] not in _REFERENCE_WORDS and sensitive_name(key)


def sensitive_name(name: str) -> bool:
    """Does an env var, annotation key or flag name look like it holds a credential?"""
    words = [w.lower() for w in _SPLIT.split(name) if w]
    if any(w in _NAME_WORDS for w in words):
        return True
    return "key" in words and any(w in _KEY_QUALIFIERS for w in words)


def node_pseudonyms(nodes: Iterable[Mapping[str, Any]], also: Iterable[str] = ()) -> dict[str, str]:
    """`--redact-names`: each node's name, `kubernetes.io/hostname` label and addresses -> `redacted-node-NNN`
    (`-ip` for its IP addresses), numbered in name order. `also`: node names seen elsewhere (a pod's
    `spec.nodeName` for a node outside the bundle's scope)."""
    aliases: dict[str, list[str]] = {}
    for n in nodes:
        md = n.get("metadata") or {}
        name = str(md.get("name") or "")
        if not name:
            continue
        names = aliases.setdefault(name, [])
        host = (md.get("labels") or {}).get("kubernetes.io/hostname")
        if host:
            names.append(str(host))
        for addr in (n.get("status") or {}).get("addresses") or []:
            if isinstance(addr, Mapping) and addr.get("address"):
                names.append(("ip:" if str(addr.get("type", "")).endswith("IP") else "") + str(addr["address"]))
    for name in also:
        if name:
            aliases.setdefault(name, [])
    out: dict[str, str] = {}
    for i, name in enumerate(sorted(aliases), start=1):
        pseudo = f"redacted-node-{i:03d}"
        out.setdefault(name, pseudo)
        for alias in aliases[name]:
            if alias.startswith("ip:"):
                out.setdefault(alias[3:], f"{pseudo}-ip")
            else:
                out.setdefault(alias, pseudo)
    return out


def compile_patterns(patterns: Iterable[str]) -> tuple[TextRule, ...]:
    """Rules for `--redact-pattern`; raises RedactPatternError with a one-line reason."""
    out = []
    for i, text in enumerate(patterns, start=1):
        try:
            rx = re.compile(text)
        except re.error as exc:
            raise RedactPatternError(f"--redact-pattern {text!r} is not a valid regular expression: {exc}") from None
        if rx.search("") is not None:
            raise RedactPatternError(f"--redact-pattern {text!r} matches the empty string")
        out.append(TextRule(f"custom-{i}", rx))
    return tuple(out)


@dataclass
class Redactor:
    """Masks values in place of copies it returns; `counts` says how many per rule (for the manifest).

    `enabled=False` (`--no-redact`) passes everything through but still drops nothing silently:
    the manifest then says redaction was off.
    """

    enabled: bool = True
    extra: tuple[TextRule, ...] = ()
    literals: Mapping[str, str] = field(default_factory=dict)
    """Exact strings to mask, by rule name (the cluster's API server URL)."""
    counts: Counter[str] = field(default_factory=Counter)
    names: Mapping[str, str] = field(default_factory=dict)
    """`--redact-names`: real node name (and its hostname and addresses) -> pseudonym, applied to every
    value, map key and text alike, so relations still resolve in the reopened bundle."""
    _names_rx: re.Pattern[str] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.enabled and self.names:
            alts = "|".join(re.escape(n) for n in sorted(self.names, key=len, reverse=True))
            # Whole names only: `ip-10-0-1-2` is not inside `ip-10-0-1-23`, `10.0.1.2` not inside `10.0.1.23`.
            self._names_rx = re.compile(rf"(?<![A-Za-z0-9.-])(?:{alts})(?![A-Za-z0-9-]|\.[A-Za-z0-9])")

    def name(self, value: str) -> str:
        """A node name (or alias) as the bundle shows it: its pseudonym under `--redact-names`."""
        if self._names_rx is None:
            return value
        if value not in self.names:
            head, dot, tail = value.rpartition(".")
            if dot and head in self.names and re.fullmatch(r"[0-9a-f]+", tail):
                self.counts["node-name"] += 1  # an Event about the node: `<node name>.<hex>`
                return f"{self.names[head]}.{tail}"
            return value
        self.counts["node-name"] += 1
        return self.names[value]

    def _rename(self, value: str) -> str:
        if self._names_rx is None:
            return value

        def repl(m: re.Match[str]) -> str:
            self.counts["node-name"] += 1
            return self.names[m.group()]

        return self._names_rx.sub(repl, value)

    def _mask(self, rule: str) -> str:
        self.counts[rule] += 1
        return MARK.format(rule=rule)

    # --- text ----------------------------------------------------------------------------------
    def text(self, value: str) -> str:
        """Every text rule (built-in, literal, custom) over one string."""
        if not self.enabled:
            return value
        value = self._rename(value)
        if len(value) < 6:
            return value
        for name, literal in self.literals.items():
            if literal and literal in value:
                self.counts[name] += value.count(literal)
                value = value.replace(literal, MARK.format(rule=name))
        for rule in (*TEXT_RULES, *self.extra):
            value = self._apply(rule, value)
        return value

    def _apply(self, rule: TextRule, value: str) -> str:
        rx = rule.pattern
        if rx.search(value) is None:
            return value
        masked = "mask" in rx.groupindex

        def repl(m: re.Match[str]) -> str:
            if masked and m.group("mask") is not None:
                if m.group("mask").startswith("[REDACTED"):
                    return m.group(0)  # already masked by an earlier, more specific rule
                s, e = m.span("mask")
                whole = m.group(0)
                off = m.start()
                return whole[: s - off] + self._mask(rule.name) + whole[e - off:]
            return self._mask(rule.name)

        return rx.sub(repl, value)

    def lines(self, text: str) -> str:
        """Log text (the rules are line-agnostic; private keys may span lines)."""
        return self.text(text)

    # --- structured ----------------------------------------------------------------------------
    def obj(self, value: Any) -> Any:
        """A copy of a JSON value with credentials masked: env, args/command, annotations, then all strings."""
        if not self.enabled:
            return value
        return self._walk(value, None)

    def _walk(self, value: Any, key: str | None) -> Any:
        if isinstance(value, str):
            if key in _NAME_KEYS and _DNS_NAME.match(value):
                # an object's name: what a reopened bundle looks things up by, never a credential
                return self.name(value)
            return self.text(value)
        if isinstance(value, list):
            if key == "env" and all(isinstance(v, Mapping) for v in value):
                return [self._env(v) for v in value]
            if key in ("args", "command") and all(isinstance(v, str) for v in value):
                return self._argv(value)
            if value and all(isinstance(v, Mapping) and "name" in v and "value" in v for v in value):
                return [self._pair(v) for v in value]  # httpHeaders, parameters: by the name's meaning
            return [self._walk(v, None) for v in value]
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            selector = key in _SELECTOR_KEYS
            for k, v in value.items():
                if k == "managedFields":
                    continue
                if self._names_rx is not None and k in self.names:
                    k = self.name(k)  # per-node maps (metrics by node): keyed by the pseudonym too
                if k == "annotations" and isinstance(v, Mapping):
                    out[k] = self._annotations(v)
                elif isinstance(v, str) and v and _sensitive_key(str(k)) and (not selector or _secret_like(v)):
                    # {"redis-password": ...}, sparkConf's "...secret.key": a credential by its key, anywhere;
                    # in a label map too (`api-token: 9f8e...`), unless the value is a plain setting (`true`).
                    out[k] = self._mask("sensitive-key")
                else:
                    out[k] = self._walk(v, k)
            return out
        return value

    def _pair(self, item: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: self._walk(v, k) for k, v in item.items() if k != "value"}
        val = item["value"]
        if isinstance(val, str) and val and sensitive_name(str(item.get("name") or "")):
            out["value"] = self._mask("sensitive-key")
        else:
            out["value"] = self._walk(val, None)
        return out

    def _env(self, item: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: self._walk(v, k) for k, v in item.items() if k != "value"}
        if "value" in item:
            name, val = str(item.get("name") or ""), item["value"]
            if isinstance(val, str) and val and (sensitive_name(name) or not _ENV_KEEP.match(name)):
                out["value"] = self._mask("env-value")
            else:
                out["value"] = self._walk(val, None)
        return out

    def _argv(self, argv: list[str]) -> list[str]:
        out: list[str] = []
        mask_next = False
        user_next = False
        for arg in argv:
            if mask_next and not arg.startswith("-") or user_next and ":" in arg:  # `curl -u user:pass`
                out.append(self._mask("command-args"))
                mask_next = user_next = False
                continue
            mask_next = bool(_FLAG.match(arg))
            user_next = arg in ("-u", "--user")
            arg = self.text(arg)
            if _FLAG_IN_TEXT.search(arg):
                arg = self._apply(TextRule("command-args", _FLAG_IN_TEXT), arg)
            out.append(arg)
        return out

    def _annotations(self, anns: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in anns.items():
            if k == LAST_APPLIED:
                out[k] = self._mask("last-applied-configuration")
            elif isinstance(v, str) and v and sensitive_name(k.rsplit("/", 1)[-1]):
                out[k] = self._mask("annotation")
            elif isinstance(v, str) and v.lstrip()[:1] in ("{", "["):
                out[k] = self._json_text(v)  # a copy of a spec (kapp, Argo CD...): env and all, walked as one
            else:
                out[k] = self._walk(v, None)
        return out

    def _json_text(self, text: str) -> str:
        try:
            parsed = orjson.loads(text)
        except orjson.JSONDecodeError:
            return self.text(text)
        return orjson.dumps(self._walk(parsed, None)).decode()

    # --- reports -------------------------------------------------------------------------------
    def report(self, data: Any) -> Any:
        """Report JSON: evidence a check marked `sensitive` is masked, then every string as text."""
        if not self.enabled:
            return data
        return self._walk(self._sensitive_evidence(data), None)

    def _sensitive_evidence(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self._sensitive_evidence(v) for v in value]
        if isinstance(value, Mapping):
            if value.get("sensitive") is True and "value" in value and "path" in value:
                out = dict(value)
                out["value"] = self._mask("sensitive-evidence")
                return out
            return {k: self._sensitive_evidence(v) for k, v in value.items()}
        return value

    def fields(self, data: Mapping[str, Any], names: Iterable[str], rule: str) -> dict[str, Any]:
        """Mask top-level fields a data class declares sensitive (MetricFacts.url)."""
        out = dict(data)
        if not self.enabled:
            return out
        for name in names:
            if isinstance(out.get(name), str) and out[name]:
                out[name] = self._mask(rule)
        return out
