"""Discovery documents (/api, /apis, APIResourceList) and the sliver of OpenAPI v3 kubectl needs."""

from __future__ import annotations

from typing import Any

from gputui.sim import status as st
from gputui.sim.access import AccessPolicy
from gputui.sim.kinds import KindInfo, KindRegistry


class Discovery:
    """Answers discovery in the plain (non-aggregated) format; absent CRDs disappear from it."""

    def __init__(self, kinds: KindRegistry, access: AccessPolicy, git_version: str) -> None:
        self.kinds = kinds
        self.access = access
        self.git_version = git_version

    def _visible(self, info: KindInfo) -> bool:
        return not self.access.is_absent(info)

    def _group_entry(self, group: str, versions: list[str]) -> dict[str, Any]:
        vs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": vs, "preferredVersion": vs[0]}

    def _visible_versions(self, group: str) -> list[str]:
        versions = self.kinds.groups().get(group, [])
        return [v for v in versions if any(self._visible(k) for k in self.kinds.in_group_version(group, v))]

    def group_list(self) -> dict[str, Any]:
        groups = [self._group_entry(g, vs) for g in self.kinds.groups() if g and (vs := self._visible_versions(g))]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def group(self, group: str) -> dict[str, Any] | None:
        versions = self._visible_versions(group)
        if not group or not versions:
            return None
        return {"kind": "APIGroup", "apiVersion": "v1", **self._group_entry(group, versions)}

    def resource_list(self, group: str, version: str) -> dict[str, Any]:
        resources = []
        for info in self.kinds.in_group_version(group, version):
            if not self._visible(info):
                continue
            entry: dict[str, Any] = {"name": info.plural, "singularName": info.singular, "namespaced": info.namespaced,
                                     "kind": info.kind, "verbs": list(info.verbs)}
            if info.short_names:
                entry["shortNames"] = list(info.short_names)
            if info.categories:
                entry["categories"] = list(info.categories)
            resources.append(entry)
            for sub in info.subresources:
                verbs = {"log": ["get"], "status": ["get", "patch", "update"], "eviction": ["create"],
                         "scale": ["get", "patch", "update"]}.get(sub, ["get"])
                resources.append({"name": f"{info.plural}/{sub}", "singularName": "", "namespaced": info.namespaced,
                                  "kind": "Eviction" if sub == "eviction" else info.kind, "verbs": verbs})
        if not resources:
            raise st.resource_not_found()
        gv = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}

    def openapi(self, segs: list[str]) -> dict[str, Any]:
        """Just enough OpenAPI v3 for kubectl to see that the server validates fields itself.

        kubectl create/apply ask /openapi/v3 whether PATCH takes `fieldValidation`; with that answer they
        send `fieldValidation=Strict` instead of downloading schemas. /openapi/v2 stays 404.
        """
        if segs == ["v3"]:
            index = {}
            for group, versions in self.kinds.groups().items():
                for version in self._visible_versions(group) if group else versions:
                    gv = f"apis/{group}/{version}" if group else f"api/{version}"
                    index[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash=0"}
            return {"paths": index}
        if len(segs) >= 3 and segs[0] == "v3" and segs[1] in ("api", "apis"):
            group, version = ("", segs[2]) if segs[1] == "api" else (segs[2], segs[3] if len(segs) > 3 else "")
            prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
            paths: dict[str, Any] = {}
            for info in self.kinds.in_group_version(group, version):
                if not self._visible(info):
                    continue
                scope = "/namespaces/{namespace}" if info.namespaced else ""
                paths[f"{prefix}{scope}/{info.plural}/{{name}}"] = {"patch": {
                    "operationId": f"patch{info.kind}",
                    "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
                    "responses": {"200": {"description": "OK"}},
                    "x-kubernetes-action": "patch",
                    "x-kubernetes-group-version-kind": {"group": info.group, "version": info.version,
                                                        "kind": info.kind},
                }}
            if paths:
                return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": self.git_version},
                        "paths": paths, "components": {"schemas": {}}}
        raise st.resource_not_found()
