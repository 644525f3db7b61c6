#!/usr/bin/env python3
"""Make k8s-1.36-dra.json, the schemas of the Dynamic Resource Allocation
objects (resource.k8s.io/v1) and of the few other kinds their manifests
use, from Kubernetes' own OpenAPI v2 document of release 1.36 (as the
Kubernetes Python client's repository keeps it, README.md). It is run by
hand, once per new Kubernetes version, never by the tests.

What it changes, as vendor_schemas.py does for the older file: the
descriptions go (the API reference has them); every
object schema with `properties` and no `additionalProperties` gets
`"additionalProperties": false` (strict: an unknown or misspelt field
fails); a quantity or an int-or-string may be a number too (the API
server takes `memory: 2`, YAML's integer, and the document says only
"string"); only the definitions the listed kinds reach are kept. The
document's `$ref`s are already `#/definitions/NAME`.

usage: vendor_openapi.py SWAGGER.json > k8s-1.36-dra.json"""
import json
import sys

KINDS = {
    # A pod's resourceClaims as they are since 1.31 (the older file's are
    # the alpha API's).
    "v1/Pod": "io.k8s.api.core.v1.Pod",
    "resource.k8s.io/v1/DeviceClass": "io.k8s.api.resource.v1.DeviceClass",
    "resource.k8s.io/v1/ResourceClaim": "io.k8s.api.resource.v1.ResourceClaim",
    "resource.k8s.io/v1/ResourceClaimTemplate":
        "io.k8s.api.resource.v1.ResourceClaimTemplate",
    "resource.k8s.io/v1/ResourceSlice": "io.k8s.api.resource.v1.ResourceSlice",
    "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy":
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
    "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding":
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
}

NUMBERS_TOO = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "number",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "integer",
}


def convert(node, refs):
    if isinstance(node, list):
        return [convert(x, refs) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: convert(v, refs) for k, v in node.items()
           if not (k == "description" and isinstance(v, str))}
    if isinstance(out.get("$ref"), str):
        refs.add(out["$ref"].rsplit("/", 1)[1])
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        raw = json.load(f)["definitions"]
    todo, done = list(KINDS.values()), {}
    while todo:
        name = todo.pop()
        if name in done:
            continue
        if name not in raw:
            sys.exit("vendor_openapi: no definition of %s" % name)
        refs = set()
        done[name] = convert(raw[name], refs)
        if name in NUMBERS_TOO:
            done[name]["type"] = ["string", NUMBERS_TOO[name]]
        todo.extend(refs - done.keys())
    json.dump({"$schema": "http://json-schema.org/draft-07/schema#",
               "kinds": KINDS,
               "definitions": dict(sorted(done.items()))},
              sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
