#!/usr/bin/env python3
"""Writes the openAPIV3Schema of every version of a CustomResourceDefinition as JSON.

Usage: extract_crd_schemas.py CRD.yaml [OUT_DIR]
One file per served version, named <kind>-<group>-<version>.json in lower case
(servingruntime-serving.kserve.io-v1alpha1.json). The schema is the CRD's, unchanged except that
`description` strings are dropped (they are documentation, not constraints, and are most of the
size). tests/e2e/test_k8s_manifests.py validates the manifests against these files; SOURCES.md says
where each CRD came from. Needs PyYAML (scripts/requirements-dev.txt).
"""
import json
import os
import sys

import yaml


def strip_descriptions(node):
    """The schema without documentation strings (a property *named* description is kept)."""
    if isinstance(node, dict):
        return {k: strip_descriptions(v) for k, v in node.items() if not (k == "description" and isinstance(v, str))}
    if isinstance(node, list):
        return [strip_descriptions(v) for v in node]
    return node


def extract(crd_path, out_dir):
    """Writes the schemas of the CRDs in crd_path into out_dir; returns the paths written."""
    written = []
    with open(crd_path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    for crd in docs:
        if crd.get("kind") != "CustomResourceDefinition":
            raise ValueError(f"{crd_path}: not a CustomResourceDefinition: {crd.get('kind')}")
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served", False):
                continue
            schema = strip_descriptions(version["schema"]["openAPIV3Schema"])
            name = f"{spec['names']['kind']}-{spec['group']}-{version['name']}.json".lower()
            path = os.path.join(out_dir, name)
            with open(path, "w") as f:
                json.dump(schema, f, sort_keys=True, separators=(",", ":"))
                f.write("\n")
            written.append(path)
    return written


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    for p in extract(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else os.path.dirname(os.path.abspath(__file__))):
        print(p)
