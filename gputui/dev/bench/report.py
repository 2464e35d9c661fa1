"""Raw benchmark runs -> medians, ratios and target verdicts, and the table printed for humans."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gputui.dev.bench.stats import median, paired_ratios, percentile, ratio, verdict

TARGETS = {
    "cold_start_vs_floor": 1.3,
    "cold_start_vs_kubectl": 0.5,
    "diagnostics_ms_at_L": 300.0,
    "watch_p99_event_to_screen_ms": 200.0,
    "peak_rss_mb_at_L": 600.0,
    "oneshot_vs_floor": 3.0,
    "key_p95_ms": 100.0,
}
ONESHOT_VS_CHECKLIST = {"M": 0.5, "L": 0.25}
"""The one-shot against the guide's manual checklist (issue #25; `kubectl describe` alone answers
nothing about a pending GPU pod, so the old <= 1.0x describe target is retired)."""
FIRST_USEFUL_S = {"M": 1.5, "L": 4.0}


def _ok(runs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in runs if "error" not in r and not r.get("timed_out")]


def _med(runs: Iterable[dict[str, Any]], *path: str) -> float | None:
    vals = []
    for r in _ok(runs):
        v: Any = r
        for p in path:
            v = v.get(p) if isinstance(v, dict) else None
        if isinstance(v, (int, float)):
            vals.append(float(v))
    m = median(vals)
    return None if m is None else round(m, 3)


def summarize(res: dict[str, Any]) -> dict[str, Any]:
    runs = res["runs"]
    cold = runs["cold_start"]
    g, f, k = (_med(cold[x], "complete_s") for x in ("gputui", "floor", "kubectl"))
    models_runs = cold.get("models", [])
    capped = next((m for m in models_runs if m.get("timed_out")), None)
    models: dict[str, Any] = {"median_s": _med(models_runs, "complete_s")}
    if capped is not None:
        models = {"median_s": None, "timed_out": True, "cap_s": capped["cap_s"],
                  "progress": (capped.get("progress") or {}).get("counts", {})}
    warm: list[float] = []
    first: list[float] = []
    checks: list[float] = []
    index: list[float] = []
    for r in _ok(cold["gputui"]):
        diag = r["diagnostics"]["runs"]
        first.append(diag[0]["total_ms"])
        warm += [d["total_ms"] for d in diag[1:]]
        checks += [d["checks_ms"] for d in diag[1:]]
        index += [d["index_ms"] + d["snapshot_ms"] for d in diag[1:]]
    diag_src = next(iter(_ok(cold["gputui"])), {}).get("diagnostics", {})
    oneshot = runs["oneshot"]
    d_med = _med([o.get("gputui", {"error": "missing"}) for o in oneshot], "wall_s")
    cl_med = _med([o.get("checklist", {"error": "missing"}) for o in oneshot], "wall_s")
    fl_med = _med([o.get("floor", {"error": "missing"}) for o in oneshot], "wall_s")
    steps: dict[str, list[float]] = {}
    for o in _ok(o.get("checklist", {"error": "missing"}) for o in oneshot):
        for k2, v in o["steps"].items():
            steps.setdefault(k2, []).append(v)
    tui = runs.get("tui", [])
    watches = [t["watch"] for t in _ok(tui) if t.get("watch")]
    cache_watch = next((r["watch"] for r in _ok(cold["gputui"]) if r.get("watch")), None)
    counts_ok = all(r.get("counts_match") for x in ("gputui", "floor", "kubectl") for r in _ok(cold[x])) and all(
        m.get("counts_match") for m in _ok(models_runs))
    out = {
        "cold_start_s": {"gputui": g, "floor": f, "kubectl": k, "models": models,
                         "gputui_breakdown": {"interpreter_s": _med(cold["gputui"], "interpreter_s"),
                                              "imports_s": _med(cold["gputui"], "imports_s"),
                                              "list_and_watch_s": _med(cold["gputui"], "list_and_watch_s")},
                         "ratio_vs_floor": ratio(g, f), "ratio_vs_kubectl": ratio(g, k),
                         "ratio_vs_models": ratio(g, models.get("median_s"))},
        "diagnostics_ms": {"warm_median": median(warm), "first_run_median": median(first),
                           "checks_median": median(checks), "snapshot_and_index_median": median(index),
                           "findings": diag_src.get("findings"), "results": diag_src.get("results"),
                           "errored": diag_src.get("errored")},
        "oneshot_s": {"gputui_diagnose": d_med, "checklist": cl_med, "floor": fl_med,
                      "checklist_steps": {k2: median(v) for k2, v in steps.items()},
                      "floor_requests": len(runs.get("oneshot_reads", [])),
                      "peak_rss_mb": {x: _med([o.get(x, {"error": "missing"}) for o in oneshot], "peak_rss_mb")
                                      for x in ("gputui", "checklist", "floor")},
                      **{k2: v for k2, v in runs.get("oneshot_imports", {}).items()}},
        "tui": {"first_complete_s": _med(tui, "first_complete_s"), "synced_s": _med(tui, "synced_s"),
                "first_useful_s": _med(tui, "first_useful_s"), "keys": _keys(_ok(tui)),
                "imports_s": _med(tui, "imports_s"), "first_update_ms": _med(tui, "first_frame", "update_ms"),
                "rows": next((t["rows"] for t in _ok(tui)), None)},
        "watch": {
            "rate_per_s": res["options"]["burst_rate"], "seconds": res["options"]["burst_seconds"],
            "tui_event_to_screen_p50_ms": median([w["event_to_screen"]["p50_ms"] for w in watches]),
            "tui_event_to_screen_p99_ms": median([w["event_to_screen"]["p99_ms"] for w in watches]),
            "tui_event_to_screen_lower_bound": any(w["event_to_screen"].get("lower_bound") for w in watches),
            "tui_event_to_screen_max_ms": max((w["event_to_screen"]["max_ms"] or 0 for w in watches), default=None),
            "tui_cache_lag_p99_ms": median([w["cache_lag"]["p99_ms"] for w in watches]),
            "tui_cache_lag_max_ms": max((w["cache_lag"]["max_ms"] or 0 for w in watches), default=None),
            "tui_update_p50_ms": median([w["update"]["p50_ms"] for w in watches]),
            "tui_update_p99_ms": median([w["update"]["p99_ms"] for w in watches]),
            "tui_frames": median([w["frames"] for w in watches]),
            "tui_ui_gap_max_ms": max((w["ui_gap"]["max_ms"] or 0 for w in watches), default=None),
            "tui_cache_lag_by_quarter_p50_ms": watches[0]["cache_lag"]["by_quarter_p50_ms"] if watches else None,
            "cache_only": cache_watch["cache_lag"] if cache_watch else None,
            "growing_lag": any(w["cache_lag"]["growing"] for w in watches)
            or bool(cache_watch and cache_watch["cache_lag"]["growing"]),
            "all_applied": all(w["applied"] == w["planned"] for w in watches)
            and (cache_watch is None or cache_watch["applied"] == cache_watch["planned"]),
            "unshown": sum(w["unshown"] for w in watches),
            "relists": sum(w["relists"] for w in watches) + (cache_watch["relists"] if cache_watch else 0),
        },
        "rss_mb": {"gputui_cache": _med(cold["gputui"], "rss_at_cache_mb"),
                   "gputui_cache_peak": _med(cold["gputui"], "peak_rss_mb"),
                   "tui_peak": max((t["peak_rss_mb"] for t in _ok(tui) if t.get("peak_rss_mb")), default=None),
                   "floor": _med(cold["floor"], "peak_rss_mb"), "kubectl": _med(cold["kubectl"], "peak_rss_mb"),
                   "models": (capped or {}).get("peak_rss_mb") or _med(models_runs, "peak_rss_mb"),
                   "server": res["fleet"].get("server_rss_mb", {}).get("VmHWM")},
        "counts_match": counts_ok,
        "errors": _errors(runs),
    }
    out["verdicts"] = verdicts(res, out)
    out["targets"] = targets(res["scale"], out)
    return out


def _keys(tui: list[dict[str, Any]]) -> dict[str, Any]:
    """Key -> repaint by key (every run's samples together) and each run's p95 over all its keys."""
    by_key: dict[str, list[float]] = {}
    per_run: list[float] = []
    for t in tui:
        keys = t.get("keys") or {}
        every = [v * 1000 for vals in keys.values() for v in vals]
        if every:
            per_run.append(percentile(every, 95) or 0.0)
        for k, vals in keys.items():
            by_key.setdefault(k, []).extend(v * 1000 for v in vals)
    return {"by_key": {k: {"n": len(v), "p50_ms": round(percentile(v, 50) or 0, 1),
                           "p95_ms": round(percentile(v, 95) or 0, 1)} for k, v in by_key.items()},
            "run_p95_ms": [round(v, 1) for v in per_run]}


def _values(runs: Iterable[dict[str, Any]], *path: str) -> list[float | None]:
    """One value per run (None where the run failed), in run order: pairs keep their index."""
    out: list[float | None] = []
    for r in runs:
        v: Any = None if "error" in r or r.get("timed_out") else r
        for p in path:
            v = v.get(p) if isinstance(v, dict) else None
        out.append(float(v) if isinstance(v, (int, float)) else None)
    return out


def _loads(runs: Iterable[dict[str, Any]]) -> list[float]:
    return [float(r["load"][0]) for r in runs if r.get("load")]


def verdicts(res: dict[str, Any], s: dict[str, Any]) -> list[dict[str, Any]]:
    """Every goal judged on per-pair ratios (or per-run values) with their spread and the load they ran under.

    Rows named `checklist`, `floor`, `first useful screen` and `key` are issue #25's; `applies` is
    False where a goal is stated for another scale (its verdict is printed for information).
    """
    runs, scale = res["runs"], res["scale"]
    cold, oneshot, tui = runs["cold_start"], runs["oneshot"], runs.get("tui", [])
    cold_loads = _loads(cold.get("load", []))
    diag = [median([d["total_ms"] for d in r["diagnostics"]["runs"][1:]]) if "error" not in r else None
            for r in cold["gputui"]]
    key_limit = TARGETS["key_p95_ms"]
    rows: list[tuple[str, str, list[float], float, bool, str, list[float]]] = [
        ("checklist", "one-shot / the guide's kubectl checklist",
         paired_ratios(_values([o.get("gputui", {"error": "-"}) for o in oneshot], "wall_s"),
                       _values([o.get("checklist", {"error": "-"}) for o in oneshot], "wall_s")),
         ONESHOT_VS_CHECKLIST.get(scale, ONESHOT_VS_CHECKLIST["M"]), scale in ONESHOT_VS_CHECKLIST, "x",
         _loads(oneshot)),
        ("floor", "one-shot / the same GETs with urllib + json",
         paired_ratios(_values([o.get("gputui", {"error": "-"}) for o in oneshot], "wall_s"),
                       _values([o.get("floor", {"error": "-"}) for o in oneshot], "wall_s")),
         TARGETS["oneshot_vs_floor"], True, "x", _loads(oneshot)),
        ("first useful screen", "TUI launch -> GPU nodes + pending GPU pods + findings",
         [v for v in _values(tui, "first_useful_s") if v is not None],
         FIRST_USEFUL_S.get(scale, FIRST_USEFUL_S["M"]), scale in FIRST_USEFUL_S, "s", _loads(tui)),
        ("key", "key -> repaint p95 (every key, per run)", s["tui"]["keys"]["run_p95_ms"], key_limit, True, "ms",
         _loads(tui)),
        ("cold start vs floor", "cache complete / paged raw GET + orjson",
         paired_ratios(_values(cold["gputui"], "complete_s"), _values(cold["floor"], "complete_s")),
         TARGETS["cold_start_vs_floor"], True, "x", cold_loads),
        ("cold start vs kubectl", "cache complete / kubectl get -A -o json",
         paired_ratios(_values(cold["gputui"], "complete_s"), _values(cold["kubectl"], "complete_s")),
         TARGETS["cold_start_vs_kubectl"], True, "x", cold_loads),
        ("diagnostics", "full-cluster diagnostics, warm cache (ms)", [d for d in diag if d is not None],
         TARGETS["diagnostics_ms_at_L"], scale == "L", "ms", cold_loads),
        ("watch p99", "burst event -> screen p99",
         [t["watch"]["event_to_screen"]["p99_ms"] for t in _ok(tui) if t.get("watch")],
         TARGETS["watch_p99_event_to_screen_ms"], True, "ms", _loads(tui)),
        ("peak RSS", "TUI process peak RSS",
         [t["peak_rss_mb"] for t in _ok(tui) if t.get("peak_rss_mb")], TARGETS["peak_rss_mb_at_L"], scale == "L", "MB",
         _loads(tui)),
    ]
    out = []
    for name, what, values, limit, applies, unit, loads in rows:
        v = verdict(values, limit)
        out.append({"name": name, "what": what, **v, "unit": unit, "applies": applies,
                    "load": {"median": median(loads), "min": min(loads, default=None), "max": max(loads, default=None)}})
    return out


def _errors(runs: dict[str, Any]) -> list[str]:
    errs = []
    for name, items in runs["cold_start"].items():
        errs += [f"cold_start.{name}: {r['error']}" for r in items if "error" in r]
    errs += ["tui: no first useful screen (GPU nodes, pending GPU pods and their findings) before the probe ended"
             for t in _ok(runs.get("tui", [])) if t.get("first_useful_s") is None]
    for o in runs["oneshot"]:
        errs += [f"oneshot.{k}: {v['error']}" for k, v in o.items() if isinstance(v, dict) and "error" in v]
    errs += [f"tui: {t['error']}" for t in runs.get("tui", []) if "error" in t]
    return errs


def targets(scale: str, s: dict[str, Any]) -> list[dict[str, Any]]:
    """The goals: the judged ones (`verdicts`) plus the yes/no ones (growing lag, the one-shot's imports)."""
    out = [{"target": f"{v['name']}: {v['what']}", "value": v["median"], "limit": v["limit"], "unit": v["unit"],
            "applies": v["applies"], "verdict": v["verdict"],
            "met": {"met": True, "missed": False}.get(v["verdict"])} for v in s["verdicts"]]
    w = s["watch"]
    flat = not w["growing_lag"] and w["all_applied"]
    out.append({"target": "no growing watch lag", "value": "growing" if w["growing_lag"] else "flat", "limit": "flat",
                "unit": "", "applies": True, "met": flat, "verdict": "met" if flat else "missed"})
    for lib, key in (("Textual", "imports_textual"), ("boto3 (no AWS credentials in sight)", "imports_boto3")):
        seen = s["oneshot_s"].get(key)
        met = None if seen is None else not seen
        out.append({"target": f"one-shot path does not import {lib}",
                    "value": None if seen is None else ("imports it" if seen else "not imported"),
                    "limit": "not imported", "unit": "", "applies": True, "met": met,
                    "verdict": "not measured" if met is None else ("met" if met else "missed")})
    return out


def _fmt(v: Any, unit: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, str):
        return v
    if isinstance(v, float):
        if unit == "s":
            return f"{v:.2f} s"
        if unit == "ms":
            return f"{v:.0f} ms" if v >= 10 else f"{v:.1f} ms"
        if unit == "MB":
            return f"{v:.0f} MB"
        if unit == "x":
            return f"{v:.2f}x"
        return f"{v:g}"
    return f"{v}{(' ' + unit) if unit else ''}"


def render(res: dict[str, Any], s: dict[str, Any]) -> str:
    m, fl = res["machine"], res["fleet"]
    cs, d, o, t, w, r = s["cold_start_s"], s["diagnostics_ms"], s["oneshot_s"], s["tui"], s["watch"], s["rss_mb"]
    lines = [
        f"gputui fleet benchmark · scale {res['scale']}: {fl['nodes']} nodes ({fl['gpu_nodes']} GPU x "
        f"{fl['gpus_per_node']}), {fl['pods']} pods ({fl['gpu_pods']} GPU, {fl['pending_gpu_pods']} pending), "
        f"{fl['nodeclaims']} NodeClaims, {fl['nodepools']} NodePools, {fl['ec2nodeclasses']} EC2NodeClasses, "
        f"{fl['events']} events",
        f"{m['cpu']} · {m['cores']} cores · {m['memory_gb']} GB · Python {m['python']} · kubectl {m['kubectl']} · "
        f"{m['date']} · load {m['load_average_start']} -> {m.get('load_average_end')} · "
        f"{res['options']['repeat']} runs (pairs) per measurement",
        "",
    ]

    def row(label: str, value: str, note: str = "") -> None:
        lines.append(f"  {label:<58} {value:>12}  {note}".rstrip())

    lines.append("Cold start (process start -> all kinds listed, watches open)")
    row("gputui (LiveSession: 10 kinds, list + watch)", _fmt(cs["gputui"], "s"),
        f"interpreter {_fmt(cs['gputui_breakdown']['interpreter_s'], 's')}, imports "
        f"{_fmt(cs['gputui_breakdown']['imports_s'], 's')}, list+watch {_fmt(cs['gputui_breakdown']['list_and_watch_s'], 's')}")
    row("cold-start floor (http.client pages + orjson, GC off, 10 kinds)", _fmt(cs["floor"], "s"),
        f"gputui/floor {_fmt(cs['ratio_vs_floor'], 'x')}")
    row("kubectl get nodes,pods,events,nodeclaims,nodepools -A -o json", _fmt(cs["kubectl"], "s"),
        f"gputui/kubectl {_fmt(cs['ratio_vs_kubectl'], 'x')}")
    mod = cs["models"]
    row("kubernetes client, default models (unpaged, 10 kinds)",
        f"> {mod['cap_s']:.0f} s" if mod.get("timed_out") else _fmt(mod.get("median_s"), "s"),
        f"capped; finished: {', '.join(mod.get('progress') or {}) or 'none'}" if mod.get("timed_out")
        else f"gputui/models {_fmt(cs['ratio_vs_models'], 'x')}")
    lines.append("Diagnostics (full cluster, in-process, warm cache)")
    row("diagnostics.run: snapshot + index + every check", _fmt(d["warm_median"], "ms"),
        f"index {_fmt(d['snapshot_and_index_median'], 'ms')}, checks {_fmt(d['checks_median'], 'ms')}; first run "
        f"{_fmt(d['first_run_median'], 'ms')} (loads the checks); {d['findings']} findings")
    rss = o["peak_rss_mb"]
    lines.append("One-shot for a pending GPU pod (process start -> exit; medians; ratios per pair below)")
    row("gputui diagnose pod/NS/NAME", _fmt(o["gputui_diagnose"], "s"),
        f"peak RSS {_fmt(rss['gputui'], 'MB')}; imports {_fmt(o.get('import_ms'), 'ms')}; Textual imported: "
        f"{_fmt(o.get('imports_textual'))}; boto3 imported: {_fmt(o.get('imports_boto3'))}")
    row("checklist: the guide's kubectl commands, one after another", _fmt(o["checklist"], "s"),
        f"peak RSS {_fmt(rss['checklist'], 'MB')}; "
        + ", ".join(f"{k} {_fmt(v, 's')}" for k, v in o["checklist_steps"].items()))
    row(f"floor: the one-shot's {o['floor_requests']} GETs at once, urllib + json", _fmt(o["floor"], "s"),
        f"peak RSS {_fmt(rss['floor'], 'MB')}")
    lines.append("TUI (headless run_test)")
    row("first useful screen: GPU nodes + pending GPU pods + findings", _fmt(t["first_useful_s"], "s"),
        "launch -> painted")
    row("launch -> first complete overview render", _fmt(t["first_complete_s"], "s"),
        f"cache synced at {_fmt(t['synced_s'], 's')}; first table update {_fmt(t['first_update_ms'], 'ms')}; "
        f"rows {t['rows']}")
    for label, k in t["keys"]["by_key"].items():
        row(f"press {label} -> repaint p50 / p95", f"{_fmt(k['p50_ms'], 'ms')} / {_fmt(k['p95_ms'], 'ms')}",
            f"{k['n']} presses (posted key events)")
    lines.append(f"Watch burst ({w['rate_per_s']:g} pod changes/s for {w['seconds']:g} s)")
    gt = "> " if w.get("tui_event_to_screen_lower_bound") else ""
    row("event -> screen p50 / p99 / max (TUI)",
        f"{_fmt(w['tui_event_to_screen_p50_ms'], 'ms')} / {gt}{_fmt(w['tui_event_to_screen_p99_ms'], 'ms')}",
        f"max {gt}{_fmt(w['tui_event_to_screen_max_ms'], 'ms')}; {w['tui_frames']} frames"
        + (f"; {w['unshown']} changes never painted (counted until the probe gave up)" if w["unshown"] else ""))
    row("cache lag p99 / max (TUI process)",
        f"{_fmt(w['tui_cache_lag_p99_ms'], 'ms')} / {_fmt(w['tui_cache_lag_max_ms'], 'ms')}",
        f"median by quarter {w['tui_cache_lag_by_quarter_p50_ms']} ms")
    co = w["cache_only"]
    if co:
        row("cache lag p99 / max (cache-only process)", f"{_fmt(co['p99_ms'], 'ms')} / {_fmt(co['max_ms'], 'ms')}",
            f"median by quarter {co['by_quarter_p50_ms']} ms")
    row("table update (refresh_data) p50 / p99", f"{_fmt(w['tui_update_p50_ms'], 'ms')} / "
        f"{_fmt(w['tui_update_p99_ms'], 'ms')}", f"longest UI-loop stall {_fmt(w['tui_ui_gap_max_ms'], 'ms')}")
    lines.append("Peak RSS")
    row("gputui cache process / TUI process", f"{_fmt(r['gputui_cache_peak'], 'MB')} / {_fmt(r['tui_peak'], 'MB')}",
        f"floor {_fmt(r['floor'], 'MB')}, kubectl {_fmt(r['kubectl'], 'MB')}, models {_fmt(r['models'], 'MB')}, "
        f"simulator {_fmt(r['server'], 'MB')}")
    lines.append("")
    lines.append(f"Harness: cache counts equal server counts: {_fmt(s['counts_match'])}")
    lines.append("Verdicts: median of per-pair ratios (per-run values for times); spread = the median's 90 % "
                 "confidence interval (5 pairs: lowest to highest); load = 1-min load average before each run")
    lines.append(f"  {'row':<22} {'median':>9} {'spread':>17} {'target':>10} {'load':>15}  verdict")
    for v in s["verdicts"]:
        unit = v["unit"]
        sp = v["spread"]
        spread_txt = "-" if sp is None else f"{_fmt(float(sp[0]), unit)}-{_fmt(float(sp[1]), unit)}"
        ld = v["load"]
        load_txt = "-" if ld["median"] is None else f"{ld['median']:.1f} ({ld['min']:.1f}-{ld['max']:.1f})"
        note = "" if v["applies"] else f" (target is for {'L' if v['name'] in ('diagnostics', 'peak RSS') else 'M/L'})"
        lines.append(f"  {v['name']:<22} {_fmt(v['median'], unit):>9} {spread_txt:>17} "
                     f"{'<= ' + _fmt(float(v['limit']), unit):>10} {load_txt:>15}  {v['verdict']}{note}  "
                     f"[{v['what']}; n={v['n']}]")
    for tg in s["targets"][len(s["verdicts"]):]:
        lines.append(f"  {tg['target']:<48} {_fmt(tg['value'], tg['unit']):>12}  {tg['verdict']}")
    for e in s["errors"]:
        lines.append(f"ERROR {e[:300]}")
    return "\n".join(lines)


def markdown(res: dict[str, Any], s: dict[str, Any]) -> str:
    """The README's table for this run: every verdict with its spread and load, under the machine line."""
    m, fl, o, t = res["machine"], res["fleet"], s["oneshot_s"], s["tui"]
    cs = s["cold_start_s"]
    values = {
        "checklist": (_fmt(o["gputui_diagnose"], "s"), f"guide checklist {_fmt(o['checklist'], 's')}"),
        "floor": (_fmt(o["gputui_diagnose"], "s"), f"the same {o['floor_requests']} GETs, urllib + json, threads "
                                                   f"{_fmt(o['floor'], 's')}"),
        "first useful screen": (_fmt(t["first_useful_s"], "s"), f"complete overview {_fmt(t['first_complete_s'], 's')}"),
        "key": ("", "worst key p95 per run; by key below"),
        "cold start vs floor": (_fmt(cs["gputui"], "s"), f"floor {_fmt(cs['floor'], 's')}"),
        "cold start vs kubectl": (_fmt(cs["gputui"], "s"), f"`kubectl get ... -A -o json` {_fmt(cs['kubectl'], 's')}"),
        "diagnostics": ("", "warm cache, full cluster"),
        "watch p99": ("", f"{s['watch']['rate_per_s']:g} changes/s for {s['watch']['seconds']:g} s"),
        "peak RSS": ("", "TUI process" + (f" (cache-only process {_fmt(s['rss_mb']['gputui_cache_peak'], 'MB')})"
                                          if s["rss_mb"]["gputui_cache_peak"] else "")),
    }
    lines = [f"Scale {res['scale']} ({fl['nodes']} nodes, {fl['pods']} pods, {fl['pending_gpu_pods']} pending GPU "
             f"pods), {m['date'][:10]}, {m['cpu']}, {m['cores']} cores, Python {m['python']}, kubectl {m['kubectl']}, "
             f"load {m['load_average_start'][0] if m['load_average_start'] else '-'} -> "
             f"{(m.get('load_average_end') or ['-'])[0]}, {res['options']['repeat']} pairs:", "",
             "| row | gputui | compared with | median (spread) | target | load | verdict |",
             "|---|---|---|---|---|---|---|"]
    skipped = [v["name"] for v in s["verdicts"] if not v["n"]]
    for v in s["verdicts"]:
        if not v["n"]:
            continue
        unit, sp, ld = v["unit"], v["spread"], v["load"]
        mid = _fmt(v["median"], unit)
        if sp is not None:
            mid += f" ({_fmt(float(sp[0]), unit)}-{_fmt(float(sp[1]), unit)})"
        ours, other = values.get(v["name"], ("", ""))
        verdict_txt = v["verdict"] if v["applies"] else f"{v['verdict']} (goal is for another scale)"
        load = "-" if ld["median"] is None else f"{ld['median']:.1f}"
        lines.append(f"| `{v['name']}` | {ours} | {other} | {mid} | ≤ {_fmt(float(v['limit']), unit)} | {load} | "
                     f"{verdict_txt} |")
    keys = ", ".join(f"{k} {_fmt(x['p50_ms'], 'ms')} / {_fmt(x['p95_ms'], 'ms')}" for k, x in t["keys"]["by_key"].items())
    lines += ["", f"Key -> repaint p50 / p95: {keys}."]
    if skipped:
        lines.append(f"Not measured in this run: {', '.join(skipped)}.")
    return "\n".join(lines)
