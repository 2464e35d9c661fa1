"""The reliability report as text (for README's reliability section) from the parts' JSON."""

from __future__ import annotations

import re
from typing import Any


def _mark(ok: bool) -> str:
    return "ok  " if ok else "FAIL"


def render(data: dict[str, Any]) -> str:
    lines: list[str] = ["# gputui reliability report", ""]
    soak = data.get("soak")
    if soak:
        worst = soak.get("max_recovery") or {}
        lines += [
            f"## Soak ({_mark(soak['ok'])}) - seed {soak['seed']}, scenario {soak['scenario']}, {soak['duration_s']} s",
            f"faults injected: {soak['faults_injected']}   mutations meanwhile: {soak['mutations_total']}   "
            f"divergent objects after: {soak['divergent_objects']}   "
            f"unrecovered: {len(soak['unrecovered'])}",
            f"max recovery: {worst.get('seconds', 0)} s ({worst.get('fault', '-')}, {worst.get('source', '-')})   "
            f"final convergence: {soak['final_convergence_s']} s",
            "",
            "| fault | injected | recoveries | median s | p95 s | max s |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name, f in soak["faults_by_type"].items():
            lines.append(f"| {name} | {f['injected']} | {f['recovered']} | {f['median_s']} | {f['p95_s']} | "
                         f"{f['max_s']} |")
        ra = soak["retry_after"]
        server = soak["server"]
        lines += ["", f"server: {server['requests']} requests, error answers {server['error_answers']}, "
                      f"{server['streams_dropped']} watch streams dropped",
                  f"429 Retry-After honoured: {ra['followed_by_a_retry'] - ra['retried_too_early']}/"
                  f"{ra['followed_by_a_retry']} (shortest wait {ra['shortest_wait_s']} s)",
                  f"sources not ok after recovery: {soak['statuses_not_ok'] or 'none'}"]
        tui = soak.get("tui") or {}
        if tui.get("ran"):
            lines.append(f"TUI on the churned cluster: first report {tui['first_report_s']} s, key -> screen "
                         f"{tui['key_to_screen_s']} s, cluster change -> screen {tui['change_to_screen_s']} s "
                         f"{tui['error']}".rstrip())
        if soak.get("error"):
            lines.append(f"error: {soak['error']}")
        lines.append("")
    perms = data.get("permissions")
    if perms:
        ok = all(c["ok"] for c in perms)
        lines += [f"## Permissions matrix ({_mark(ok)})", "",
                  "| resource | denial | diagnose | live | checks skipped with the reason | unaffected checks ran |",
                  "|---|---|---|---|---:|---:|"]
        for c in perms:
            by = {r["mode"]: r for r in c["results"]}
            d, live = by.get("diagnose", {}), by.get("live", {})
            lines.append(f"| {c['resource']} | {c['denial']} | {_mark(d.get('ok', False))} exit {d.get('exit_code')} | "
                         f"{_mark(live.get('ok', False))} | {d.get('skipped_with_reason', 0)} | "
                         f"{d.get('unaffected_ran', 0)} |")
        lines.append("")
    rbac = data.get("rbac")
    if rbac:
        lines += [f"## RBAC manifests ({_mark(rbac['ok'])})",
                  f"read-only ClusterRole: missing {rbac['readonly_missing'] or 'nothing'}, extra "
                  f"{rbac['readonly_extra'] or 'nothing'}, write verbs {rbac['readonly_write_verbs'] or 'none'}, "
                  f"sensitive {rbac['readonly_sensitive'] or 'none'}",
                  f"debug-pod Role: missing {rbac['debug_missing'] or 'nothing'}, "
                  f"extra {rbac['debug_extra'] or 'nothing'}",
                  "on a cluster enforcing exactly them: " + ", ".join(
                      f"{k} {_mark(v['ok']).strip()}" for k, v in rbac["e2e"].items()), ""]
    opt = data.get("optional_sources")
    if opt:
        ok = all(c["ok"] for c in opt)
        lines += [f"## Prometheus and AWS down, slow, denied ({_mark(ok)})", "",
                  "| source | condition | status | checks skipped | exit (without) | seconds (bound) |",
                  "|---|---|---|---:|---|---:|"]
        for c in opt:
            lines.append(f"| {c['source']} | {c['condition']} | {c['status']['state']} | {c['checks_skipped']} | "
                         f"{c['exit_code']} ({c['baseline_exit_code']}) | {c['seconds']} ({c['bound_s']}) |")
        lines.append("")
    bad = data.get("bad_input")
    if bad:
        runs, props = bad["diagnose"], bad["properties"]
        ok = all(r["ok"] for r in runs) and all(p["ok"] for p in props)
        long_texts = sorted({re.sub(r" findings\[\d+\]", "", t) for r in runs for t in r["long_texts"]})
        lines += [f"## Bad input ({_mark(ok)})",
                  f"malformed objects diagnosed: {len(runs)} runs (targets x json/text), "
                  f"{sum(1 for r in runs if not r['ok'])} failed, errored checks: "
                  f"{sorted({e for r in runs for e in r['errored']}) or 'none'}",
                  f"over-long evidence: {long_texts or 'none'}"]
        for p in props:
            lines.append(f"property run '{p['strategy']}': {p['examples']} clusters, errored checks "
                         f"{p['errored'] or 'none'}, crashes {list(p['crashed']) or 'none'} ({p['seconds']} s)")
        lines.append("")
    cli = data.get("cli")
    if cli:
        bad_rows = [r for r in cli["results"] if not r["ok"]]
        unknown = [r for r in bad_rows if not r["known_bug"]]
        lines += [f"## CLI errors ({_mark(not unknown)}): {len(cli['results'])} cases, "
                  f"{len(bad_rows)} not as expected ({len(bad_rows) - len(unknown)} known)", ""]
        for r in bad_rows:
            known = "known: " if r["known_bug"] else ""
            lines.append(f"- {known}{r['case']}: {'; '.join(r['problems'])} - `{r['stderr'][:160]}`")
        lines += ["", cli["exit_code_table"], ""]
    dbg = data.get("debug")
    if dbg:
        ok = all(c["ok"] for c in dbg)
        lines += [f"## Debug pod safety ({_mark(ok)})", "",
                  "| case | exit | gputui pods left | after `gputui debug --cleanup` |", "|---|---:|---:|---:|"]
        for c in dbg:
            code = "exception raised" if c["disturbance"] == "exception" else str(c["exit_code"])
            if c.get("signal"):
                code = f"killed by {c['signal']} ({c['exit_code']})"
            lines.append(f"| {c['name']} | {code} | {c['pods_left']} | {c['pods_after_cleanup']} |")
        lines.append("")
    hostile = data.get("hostile")
    if hostile:
        trials = hostile["trials"]
        ok = all(t["ok"] for t in trials)
        lines += [f"## Hostile and broken input ({_mark(ok)})", "", "| class | tried | held |", "|---|---:|---:|"]
        for group, n in hostile["summary"].items():
            lines.append(f"| {group} | {n['tried']} | {n['held']} |")
        lines += [""] + [f"- FAIL {t['group']}: {t['name']} - {t['detail']}" for t in trials if not t["ok"]]
        lines.append("")
    return "\n".join(lines)
