#!/usr/bin/env python3
"""Make k8s-strict.json, the Kubernetes API schemas that test_manifests.py
validates deploy/kubernetes/ against, from the npm packages named in
README.md (unpacked with `npm pack` and `tar xzf`). It is run by hand, once
per new Kubernetes version, never by the tests: CI has no npm registry.

Each definition of the packages is a JavaScript module whose `const schema
= {...};` is JSON. What this script changes, so that the result is a strict
JSON schema for python3-jsonschema:
- `"$ref": "io.k8s.NAME#"` becomes `"#/definitions/io.k8s.NAME"`;
- `{"oneOf": [X, {"type": "null"}]}` (an optional field that may be null)
  becomes X, and the keyword `nullable` goes: a manifest never needs an
  explicit null, and one schema per field gives clearer errors than a
  oneOf;
- every object schema with `properties` and no `additionalProperties` gets
  `"additionalProperties": false`, so an unknown or misspelt field fails
  (the API server drops unknown fields or, with strict field validation,
  refuses them);
- only the definitions that the kinds in KINDS reach are kept.

usage: vendor_schemas.py PKG_DIR... > k8s-strict.json
  PKG_DIR: an unpacked package (its package/ folder)"""
import glob
import json
import os
import re
import sys

# The kinds deploy/kubernetes/ uses, and a few it may use later.
KINDS = {
    "v1/ConfigMap": "io.k8s.api.core.v1.ConfigMap",
    "v1/Namespace": "io.k8s.api.core.v1.Namespace",
    "v1/Pod": "io.k8s.api.core.v1.Pod",
    "v1/Service": "io.k8s.api.core.v1.Service",
    "v1/ServiceAccount": "io.k8s.api.core.v1.ServiceAccount",
    "apps/v1/DaemonSet": "io.k8s.api.apps.v1.DaemonSet",
    "rbac.authorization.k8s.io/v1/ClusterRole":
        "io.k8s.api.rbac.v1.ClusterRole",
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding":
        "io.k8s.api.rbac.v1.ClusterRoleBinding",
    "scheduling.k8s.io/v1/PriorityClass":
        "io.k8s.api.scheduling.v1.PriorityClass",
}

SCHEMA_RE = re.compile(r"^const schema = (\{.*?^\});$", re.M | re.S)
NAME_RE = re.compile(r'register\)\("([^"]+)", schema\)')


def load(dirs):
    defs = {}
    for d in dirs:
        for path in glob.glob(os.path.join(d, "_schemas", "*.js")):
            with open(path) as f:
                text = f.read()
            m, n = SCHEMA_RE.search(text), NAME_RE.search(text)
            if m and n:
                defs[n.group(1)] = json.loads(m.group(1))
    return defs


def convert(node, refs):
    if isinstance(node, list):
        return [convert(x, refs) for x in node]
    if not isinstance(node, dict):
        return node
    one = node.get("oneOf")
    if (one and len(one) == 2 and one[1] == {"type": "null"}
            and len(node) == 1):
        return convert(one[0], refs)
    out = {k: convert(v, refs) for k, v in node.items() if k != "nullable"}
    if "$ref" in out:
        name = out["$ref"].rstrip("#")
        refs.add(name)
        out["$ref"] = "#/definitions/" + name
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    raw = load(sys.argv[1:])
    todo, done = list(KINDS.values()), {}
    while todo:
        name = todo.pop()
        if name in done:
            continue
        if name not in raw:
            sys.exit("vendor_schemas: no definition of %s" % name)
        refs = set()
        done[name] = convert(raw[name], refs)
        todo.extend(refs - done.keys())
    json.dump({"$schema": "http://json-schema.org/draft-07/schema#",
               "kinds": KINDS,
               "definitions": dict(sorted(done.items()))},
              sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
