"""A stand-in for the Kubernetes API server, for the one thing gridtest's autoscaler asks of it:
the scale subresource of StatefulSets. It is strict where the real one is: every request must be
an operation the Kubernetes API defines on that subresource (GET, PUT or PATCH of
/apis/apps/v1/namespaces/NS/statefulsets/NAME/scale, with the query parameters the API allows,
a patch content type the API accepts, the bearer token), and every body must validate strictly
against Kubernetes' schema of autoscaling/v1 Scale (kubernetes-validate: unknown fields, wrong
types and a wrong apiVersion or kind are refused). Anything else is answered 4xx and logged as
a violation.

Usage: python kube_api.py PORT_FILE LOG_FILE TOKEN NAMESPACE NAME=REPLICAS...
Writes the port to PORT_FILE once listening, and one JSON line per request to LOG_FILE:
{"method", "path", "status", "violation" (null when the request is valid), "replicas"}.
"""

import http.server
import json
import re
import sys
import threading
import urllib.parse

import kubernetes_validate

KUBERNETES = "1.31.0"
SCALE = re.compile(r"^/apis/apps/v1/namespaces/([a-z0-9-]+)/statefulsets/([a-z0-9.-]+)/scale$")
# The query parameters of the scale subresource's operations in the OpenAPI document.
QUERY = {
    "GET": {"pretty"},
    "PUT": {"pretty", "dryRun", "fieldManager", "fieldValidation"},
    "PATCH": {"pretty", "dryRun", "fieldManager", "fieldValidation", "force"},
}
PATCH_TYPES = {
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
}

port_file, log_file, token, namespace = sys.argv[1:5]
replicas = {name: int(n) for name, n in (a.split("=") for a in sys.argv[5:])}
lock = threading.RLock()


def scale(name):
    doc = {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas[name]},
        "status": {"replicas": replicas[name]},
    }
    kubernetes_validate.validate(doc, KUBERNETES, strict=True)
    return doc


def validate_scale(body):
    """The body as a Scale (a merge patch may leave out apiVersion and kind), or raise."""
    if not isinstance(body, dict):
        raise ValueError("the body is not a JSON object")
    doc = {"apiVersion": "autoscaling/v1", "kind": "Scale", **body}
    kubernetes_validate.validate(doc, KUBERNETES, strict=True)
    return body


class Api(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, doc, violation=None, name=None):
        with lock:
            with open(log_file, "a") as log:
                log.write(json.dumps({
                    "method": self.command,
                    "path": self.path,
                    "status": status,
                    "violation": violation,
                    "replicas": replicas.get(name) if name else None,
                }) + "\n")
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def refuse(self, status, why, name=None):
        doc = {"apiVersion": "v1", "kind": "Status", "status": "Failure", "message": why,
               "code": status}
        self.answer(status, doc, violation=why, name=name)

    def handle_any(self):
        url = urllib.parse.urlsplit(self.path)
        match = SCALE.match(url.path)
        if not match:
            return self.refuse(404, f"not an operation of the scale subresource: {url.path}")
        ns, name = match.groups()
        extra = set(urllib.parse.parse_qs(url.query)) - QUERY[self.command]
        if extra:
            return self.refuse(400, f"query parameters the API does not define: {sorted(extra)}")
        if self.headers.get("Authorization") != f"Bearer {token}":
            return self.refuse(401, "no or wrong bearer token")
        if ns != namespace or name not in replicas:
            doc = {"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 404,
                   "reason": "NotFound",
                   "message": f'statefulsets.apps "{name}" not found'}
            return self.answer(404, doc)
        if self.command == "GET":
            with lock:
                return self.answer(200, scale(name), name=name)
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"null")
        except ValueError as e:
            return self.refuse(400, f"the body is not JSON: {e}", name)
        kind = self.headers.get("Content-Type", "").split(";")[0]
        if self.command == "PATCH" and kind not in PATCH_TYPES:
            return self.refuse(415, f"not a patch content type: {kind!r}", name)
        if self.command == "PUT" and kind != "application/json":
            return self.refuse(415, f"not JSON: {kind!r}", name)
        if self.command == "PATCH" and kind == "application/json-patch+json":
            return self.refuse(415, "JSON patches are not handled here", name)
        try:
            body = validate_scale(body)
        except (kubernetes_validate.ValidationError, ValueError) as e:
            return self.refuse(422, f"Scale: {getattr(e, 'message', e)}", name)
        wanted = (body.get("spec") or {}).get("replicas")
        if wanted is None or wanted < 0:
            return self.refuse(422, "spec.replicas: a count is required", name)
        with lock:
            replicas[name] = wanted
            return self.answer(200, scale(name), name=name)

    do_GET = do_PUT = do_PATCH = handle_any

    def do_POST(self):
        self.refuse(405, "POST is not an operation of the scale subresource")

    do_DELETE = do_POST


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Api)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os  # noqa: E402

os.rename(port_file + ".tmp", port_file)
server.serve_forever()
