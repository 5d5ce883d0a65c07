"""Renders deploy/ as kustomize would for what the manifests use (the resources of
kustomization.yaml, and the TLS component's JSON patches on top), validates every resource
against Kubernetes' schemas, strictly (kubernetes-validate), and prints the rendered resources
as JSON: {"base": [...], "tls": [...]}.

Usage: python manifests.py DEPLOY_DIR KUBERNETES_VERSION
Exit 1, naming the resource and the error, on the first invalid resource.
"""

import copy
import json
import sys

import kubernetes_validate
import yaml


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def add(doc, path, value):
    """A JSON-patch `add` (RFC 6902) at `path` of `doc`."""
    parts = path.strip("/").split("/")
    node = doc
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node[p]
    last = parts[-1]
    if isinstance(node, list):
        node.append(value) if last == "-" else node.insert(int(last), value)
    else:
        node[last] = value


def matches(doc, target):
    if target.get("kind") not in (None, doc["kind"]):
        return False
    labels = doc["metadata"].get("labels", {})
    for pair in filter(None, target.get("labelSelector", "").split(",")):
        key, value = pair.split("=")
        if labels.get(key) != value:
            return False
    return True


def with_component(docs, component):
    docs = copy.deepcopy(docs)
    for patch in component["patches"]:
        ops = yaml.safe_load(patch["patch"])
        for doc in docs:
            if matches(doc, patch["target"]):
                for op in ops:
                    assert op["op"] == "add", op
                    add(doc, op["path"], copy.deepcopy(op["value"]))
    return docs


def main():
    deploy, version = sys.argv[1], sys.argv[2]
    kustomization = load(f"{deploy}/kustomization.yaml")[0]
    base = [d for r in kustomization["resources"] for d in load(f"{deploy}/{r}")]
    tls = with_component(base, load(f"{deploy}/components/tls/kustomization.yaml")[0])
    for variant, docs in (("base", base), ("tls", tls)):
        for doc in docs:
            name = f"{doc['kind']}/{doc['metadata']['name']} ({variant})"
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as e:
                print(f"{name}: {e.message} at {list(e.path)}", file=sys.stderr)
                sys.exit(1)
    json.dump({"base": base, "tls": tls, "kustomization": kustomization}, sys.stdout)


main()
