"""Doubles for vshare-dra-driver's tests.

Kubelet: the kubelet's side of the plugin registration API (it finds the
driver's socket in the registry directory, asks GetInfo, answers
NotifyRegistrationStatus) and a client of the DRA service v1
(NodePrepareResources, NodeUnprepareResources), speaking the published
protocols (src/k8s/proto) through Debian's python3-grpcio, with the
message classes protoc generates into the build tree (VSHARE_K8S_PB).

ApiServer: an HTTP server that answers as the API server does for the
few calls the driver makes: ResourceSlices (GET, POST, PUT; each one it
is sent is recorded and checked against the vendored resource.k8s.io/v1
schema, and refused with 422 when it does not match) and ResourceClaims
(GET, from the claims a test adds, each checked against the schema as
well). It wants the bearer token it was given."""

import http.server
import json
import os
import re
import sys
import threading

try:
    import grpc
except ImportError:
    grpc = None

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import k8s_validate  # noqa: E402

PB = os.environ.get("VSHARE_K8S_PB")
if PB:
    sys.path.insert(0, PB)
dra = reg = None
if grpc is not None and PB:
    from dra.v1 import api_pb2 as dra  # noqa: E402
    from pluginregistration.v1 import api_pb2 as reg  # noqa: E402

DRA_SERVICE = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/"
REG_SERVICE = "/pluginregistration.Registration/"
# A quantity as Kubernetes writes one (the schema says only "string").
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?([KMGTPE]i|[kMGTPE]|m|[eE][0-9]+)?$")


def missing():
    """Why the doubles cannot run here, or None."""
    if grpc is None:
        return "python3-grpcio is missing (apt-get install python3-grpcio)"
    if dra is None:
        return "VSHARE_K8S_PB does not name the generated protobuf modules"
    return None


class Kubelet:
    """The kubelet as a DRA driver meets it."""

    def __init__(self, registry):
        self.registry = registry
        self.channels = []

    def _channel(self, path):
        # A channel of its own connections: one to a driver that stopped
        # must not be reused for the one started after it.
        ch = grpc.insecure_channel("unix:" + path, options=[
            ("grpc.use_local_subchannel_pool", 1)])
        self.channels.append(ch)
        return ch

    def register(self, sock, ok=True, error=""):
        """GetInfo on the registration socket, then the status: the
        PluginInfo."""
        ch = self._channel(sock)
        info = ch.unary_unary(
            REG_SERVICE + "GetInfo",
            request_serializer=reg.InfoRequest.SerializeToString,
            response_deserializer=reg.PluginInfo.FromString)(
                reg.InfoRequest(), timeout=10)
        ch.unary_unary(
            REG_SERVICE + "NotifyRegistrationStatus",
            request_serializer=reg.RegistrationStatus.SerializeToString,
            response_deserializer=reg.RegistrationStatusResponse.FromString)(
                reg.RegistrationStatus(plugin_registered=ok, error=error),
                timeout=10)
        return info

    def _dra(self, endpoint, name, req, resp):
        ch = self._channel(endpoint)
        return ch.unary_unary(DRA_SERVICE + name,
                              request_serializer=type(req).SerializeToString,
                              response_deserializer=resp.FromString)(
                                  req, timeout=20)

    def prepare(self, endpoint, *claims):
        """claims: (namespace, uid, name) each; the response's claims map
        as {uid: {"error": ..., "devices": [(requests, pool, device,
        share_id, [cdi ids])]}}."""
        req = dra.NodePrepareResourcesRequest()
        for ns, uid, name in claims:
            req.claims.add(namespace=ns, uid=uid, name=name)
        r = self._dra(endpoint, "NodePrepareResources", req,
                      dra.NodePrepareResourcesResponse)
        return {uid: {"error": v.error,
                      "devices": [(list(d.request_names), d.pool_name,
                                   d.device_name, d.share_id,
                                   list(d.cdi_device_ids))
                                  for d in v.devices]}
                for uid, v in r.claims.items()}

    def unprepare(self, endpoint, *claims):
        req = dra.NodeUnprepareResourcesRequest()
        for ns, uid, name in claims:
            req.claims.add(namespace=ns, uid=uid, name=name)
        r = self._dra(endpoint, "NodeUnprepareResources", req,
                      dra.NodeUnprepareResourcesResponse)
        return {uid: v.error for uid, v in r.claims.items()}

    def close(self):
        for ch in self.channels:
            ch.close()


class ApiServer:
    """serve() in a thread of its own on 127.0.0.1 (url), stop() ends
    it. slices: name -> the object as stored (with resourceVersion);
    sent: every ResourceSlice body received, in order, as (method,
    object); invalid: the schema errors of the bodies refused; claims:
    (namespace, name) -> the claim object; gets: the claims' GET paths
    asked, in order."""

    def __init__(self, token, tls=None):
        self.token = token
        self.tls = tls              # (certfile, keyfile) for HTTPS
        self.slices, self.sent, self.invalid = {}, [], []
        self.claims, self.gets = {}, []
        self.version = 100
        self.cond = threading.Condition()
        self.schemas = k8s_validate.Schemas()
        self.httpd = None

    def errors(self, obj):
        errs = k8s_validate.errors(obj, self.schemas)
        for path, value in _quantities(obj):
            if not QUANTITY.match(value):
                errs.append("%s: %r is not a quantity" % (path, value))
        return errs

    def add_claim(self, claim):
        errs = self.errors(claim)
        if errs:
            raise ValueError("the test's claim is not valid: %s" % errs)
        m = claim["metadata"]
        with self.cond:
            self.claims[(m["namespace"], m["name"])] = claim

    def serve(self):
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _answer(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _status(self, code, reason, msg):
                self._answer(code, {"kind": "Status", "apiVersion": "v1",
                                    "status": "Failure", "code": code,
                                    "reason": reason, "message": msg})

            def _body(self):
                n = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(n) or b"null")

            def _authorized(self):
                if self.headers.get("Authorization") != "Bearer " + api.token:
                    self._status(401, "Unauthorized", "Unauthorized")
                    return False
                return True

            def do_GET(self):
                if not self._authorized():
                    return
                m = re.match(r"^/apis/resource\.k8s\.io/v1/namespaces/"
                             r"([^/]+)/resourceclaims/([^/]+)$", self.path)
                if m:
                    with api.cond:
                        api.gets.append(self.path)
                        c = api.claims.get((m.group(1), m.group(2)))
                    if c is None:
                        return self._status(404, "NotFound",
                                            "resourceclaims \"%s\" not found"
                                            % m.group(2))
                    return self._answer(200, c)
                m = re.match(r"^/apis/resource\.k8s\.io/v1/resourceslices/"
                             r"([^/]+)$", self.path)
                if m:
                    with api.cond:
                        s = api.slices.get(m.group(1))
                    if s is None:
                        return self._status(404, "NotFound",
                                            "resourceslices \"%s\" not found"
                                            % m.group(1))
                    return self._answer(200, s)
                self._status(404, "NotFound", "the double has no " + self.path)

            def _store(self, method, name_in_path):
                obj = self._body()
                errs = api.errors(obj)
                name = (obj.get("metadata") or {}).get("name") \
                    if isinstance(obj, dict) else None
                with api.cond:
                    api.sent.append((method, json.loads(json.dumps(obj))))
                    if errs:
                        api.invalid.append(errs)
                        api.cond.notify_all()
                        return self._status(422, "Invalid", "; ".join(errs))
                    old = api.slices.get(name)
                    if method == "POST" and old is not None:
                        api.cond.notify_all()
                        return self._status(409, "AlreadyExists", name)
                    if method == "PUT":
                        if old is None or name != name_in_path:
                            api.cond.notify_all()
                            return self._status(404, "NotFound", name)
                        if obj["metadata"].get("resourceVersion") != \
                                old["metadata"]["resourceVersion"]:
                            api.cond.notify_all()
                            return self._status(409, "Conflict", name)
                    api.version += 1
                    obj["metadata"]["resourceVersion"] = str(api.version)
                    api.slices[name] = obj
                    api.cond.notify_all()
                self._answer(201 if method == "POST" else 200, obj)

            def do_POST(self):
                if not self._authorized():
                    return
                if self.path != "/apis/resource.k8s.io/v1/resourceslices":
                    return self._status(404, "NotFound", self.path)
                self._store("POST", None)

            def do_PUT(self):
                if not self._authorized():
                    return
                m = re.match(r"^/apis/resource\.k8s\.io/v1/resourceslices/"
                             r"([^/]+)$", self.path)
                if not m:
                    return self._status(404, "NotFound", self.path)
                self._store("PUT", m.group(1))

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if self.tls:
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*self.tls)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket,
                                                server_side=True)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.port = self.httpd.server_address[1]
        self.url = "%s://127.0.0.1:%d" % ("https" if self.tls else "http",
                                          self.port)

    def wait_slice(self, count, timeout=20):
        """The count-th ResourceSlice body received (1 first)."""
        import time
        end = time.monotonic() + timeout
        with self.cond:
            while len(self.sent) < count:
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)
            return self.sent[count - 1]

    def stop(self):
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None


def _quantities(obj, path=""):
    """(path, value) of the values the resource API types as quantities:
    capacities, their policies, requests and what a claim consumed."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            p = path + "." + k
            if k in ("value", "default", "min", "max", "step") and \
                    isinstance(v, str) and ".capacity." in p:
                yield p, v
            elif (path.endswith(".consumedCapacity") or
                  path.endswith(".requests")) and isinstance(v, str):
                yield p, v
            else:
                yield from _quantities(v, p)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _quantities(v, "%s[%d]" % (path, i))
