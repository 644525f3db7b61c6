#!/usr/bin/env python3
"""Offline validation of Kubernetes manifests against the vendored API
schemas (schemas/k8s-strict.json, and schemas/k8s-1.36-dra.json for
the kinds of Dynamic Resource Allocation; see schemas/README.md), with Debian's
python3-jsonschema and python3-yaml. Strict: a field the API does not
have fails, as a misspelt one would be dropped or refused by the API
server.

usage: k8s_validate.py FILE.yaml...   (exit 1 and the errors when one fails)"""
import json
import os
import sys

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = [os.path.join(HERE, "schemas", n)
           for n in ("k8s-strict.json", "k8s-1.36-dra.json")]


class Schemas:
    """The vendored definitions, and one validator per kind, made on first
    use. Each file is a Kubernetes version of its own: a kind is checked
    against the definitions of the file that lists it."""

    def __init__(self, paths=SCHEMAS):
        self.kinds, self.definitions = {}, {}
        for path in paths:
            with open(path) as f:
                data = json.load(f)
            for k, name in data["kinds"].items():
                self.kinds[k] = name
                self.definitions[k] = data["definitions"]
        self.validators = {}

    def validator(self, api_version, kind):
        key = "%s/%s" % (api_version, kind)
        if key not in self.kinds:
            return None
        if key not in self.validators:
            schema = {"$ref": "#/definitions/" + self.kinds[key],
                      "definitions": self.definitions[key]}
            cls = jsonschema.validators.validator_for(
                {"$schema": "http://json-schema.org/draft-07/schema#"})
            cls.check_schema(schema)
            self.validators[key] = cls(schema)
        return self.validators[key]


def where(path):
    """A JSON path as kubectl writes it: spec.containers[0].name."""
    out = ""
    for p in path:
        out += "[%d]" % p if isinstance(p, int) else ("." if out else "") + p
    return out or "(top)"


def errors(doc, schemas):
    """The schema errors of one object, as 'KIND NAME: PATH: MESSAGE'."""
    if not isinstance(doc, dict):
        return ["not an object: %r" % (doc,)]
    kind, api = doc.get("kind"), doc.get("apiVersion")
    name = (doc.get("metadata") or {}).get("name", "?")
    v = schemas.validator(api, kind)
    if v is None:
        return ["%s %s: no schema for apiVersion %s kind %s (the vendored "
                "kinds: %s)" % (kind, name, api, kind,
                                ", ".join(sorted(schemas.kinds)))]
    found = sorted(v.iter_errors(doc), key=lambda e: list(map(str, e.path)))
    return ["%s %s: %s: %s" % (kind, name, where(e.absolute_path), e.message)
            for e in found]


def documents(path):
    """The objects of a YAML file (several documents allowed)."""
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 2 if not argv else 0
    schemas, bad = Schemas(), 0
    for path in argv:
        for doc in documents(path):
            errs = errors(doc, schemas)
            for e in errs:
                print("%s: %s" % (path, e))
            bad += bool(errs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
