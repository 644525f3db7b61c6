"""A kubelet double for vshare-device-plugin's tests: the kubelet's side
of the device plugin API v1beta1 (the Registration service on
DIR/kubelet.sock, then calls to the plugin's own socket) and of the
PodResources API v1 (List), speaking the published protocols
(src/k8s/proto) through Debian's python3-grpcio.

The message classes are protoc's Python output, generated into the build
tree (tests/k8s/CMakeLists.txt); the services are declared here with
grpc's generic handlers, so no gRPC code generator for Python is needed.
The directory of the generated modules comes from VSHARE_K8S_PB.

Used as a module by the tests, or as a program (see --help) for a
by-hand run against a plugin, e.g. in a container."""

import argparse
import json
import os
import queue
import signal
import sys
import threading
import time

try:
    import grpc
except ImportError:  # the tests skip with this reason
    grpc = None

PB = os.environ.get("VSHARE_K8S_PB")
if PB:
    sys.path.insert(0, PB)
dp = pr = None
if grpc is not None and PB:
    from deviceplugin.v1beta1 import api_pb2 as dp  # noqa: E402
    from podresources.v1 import api_pb2 as pr  # noqa: E402


def missing():
    """Why the double cannot run here, or None."""
    if grpc is None:
        return "python3-grpcio is missing (apt-get install python3-grpcio)"
    if dp is None:
        return "VSHARE_K8S_PB does not name the generated protobuf modules"
    return None


def _unary(fn, req, resp):
    return grpc.unary_unary_rpc_method_handler(
        fn, request_deserializer=req.FromString,
        response_serializer=resp.SerializeToString)


class Kubelet:
    """The double: serve() starts the kubelet's sockets, restart() does
    what a kubelet does when it starts again (every socket in the device
    plugin directory removed, its own created anew), stop() ends it.

    registrations: every RegisterRequest received, in order (wait_register
    waits for the next). pods: what PodResources List answers, a list of
    (namespace, pod, container, resource, [device ids]). reject: when
    set, the message of the error that Register answers (the kubelet's
    own errors reach the plugin with code UNKNOWN). sock: the
    Registration socket, DIR/kubelet.sock unless given."""

    def __init__(self, plugin_dir, pod_resources, sock=None):
        self.dir = plugin_dir
        self.sock = sock or os.path.join(plugin_dir, "kubelet.sock")
        self.podres_sock = pod_resources
        self.reject = None
        self.registrations = []
        self.pods = []
        self.cond = threading.Condition()
        self.server = None
        self.podres = None

    # --- the kubelet's services ---
    def _register(self, req, ctx):
        with self.cond:
            self.registrations.append(req)
            self.cond.notify_all()
        if self.reject:
            ctx.abort(grpc.StatusCode.UNKNOWN, self.reject)
        return dp.Empty()

    def _list(self, req, ctx):
        out = pr.ListPodResourcesResponse()
        with self.cond:
            pods = list(self.pods)
        for ns, pod, ctr, res, ids in pods:
            p = out.pod_resources.add(name=pod, namespace=ns)
            c = p.containers.add(name=ctr)
            c.devices.add(resource_name=res, device_ids=ids)
        return out

    def serve(self):
        self.server = grpc.server(_pool())
        self.server.add_generic_rpc_handlers((
            grpc.method_handlers_generic_handler("v1beta1.Registration", {
                "Register": _unary(self._register, dp.RegisterRequest,
                                   dp.Empty)}),))
        self.server.add_insecure_port("unix:" + self.sock)
        self.server.start()
        if self.podres is None and self.podres_sock:
            self.podres = grpc.server(_pool())
            self.podres.add_generic_rpc_handlers((
                grpc.method_handlers_generic_handler(
                    "v1.PodResourcesLister", {
                        "List": _unary(self._list,
                                       pr.ListPodResourcesRequest,
                                       pr.ListPodResourcesResponse)}),))
            self.podres.add_insecure_port("unix:" + self.podres_sock)
            self.podres.start()

    def restart(self):
        """A kubelet that starts again: its Registration server goes, every
        socket in the directory is removed (the plugin's too), and a new
        server creates kubelet.sock."""
        self.server.stop(None).wait()
        for name in os.listdir(self.dir):
            path = os.path.join(self.dir, name)
            if not os.path.isdir(path):
                os.unlink(path)
        self.serve()

    def stop(self):
        for s in (self.server, self.podres):
            if s is not None:
                s.stop(None).wait()
        self.server = self.podres = None

    def wait_register(self, count, timeout=20):
        """The count-th RegisterRequest (1 first), waiting for it."""
        end = time.monotonic() + timeout
        with self.cond:
            while len(self.registrations) < count:
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)
            return self.registrations[count - 1]

    # --- calls to the plugin, as the kubelet makes them ---
    def plugin(self, endpoint):
        return Plugin(os.path.join(self.dir, endpoint))


def _pool():
    from concurrent import futures
    return futures.ThreadPoolExecutor(max_workers=4)


class Plugin:
    """A client of the plugin's DevicePlugin service."""

    def __init__(self, path):
        self.channel = grpc.insecure_channel("unix:" + path)
        self.streams = []

    def _call(self, name, req, resp_cls, timeout=10):
        fn = self.channel.unary_unary(
            "/v1beta1.DevicePlugin/" + name,
            request_serializer=type(req).SerializeToString,
            response_deserializer=resp_cls.FromString)
        return fn(req, timeout=timeout)

    def options(self):
        return self._call("GetDevicePluginOptions", dp.Empty(),
                          dp.DevicePluginOptions)

    def allocate(self, *containers):
        """One ContainerAllocateRequest per list of ids."""
        req = dp.AllocateRequest()
        for ids in containers:
            req.container_requests.add(devices_ids=ids)
        return self._call("Allocate", req, dp.AllocateResponse)

    def preferred(self, avail, must, size):
        req = dp.PreferredAllocationRequest()
        req.container_requests.add(available_deviceIDs=avail,
                                   must_include_deviceIDs=must,
                                   allocation_size=size)
        return self._call("GetPreferredAllocation", req,
                          dp.PreferredAllocationResponse)

    def pre_start(self, ids):
        return self._call("PreStartContainer",
                          dp.PreStartContainerRequest(devices_ids=ids),
                          dp.PreStartContainerResponse)

    def watch(self, topology=False):
        """ListAndWatch in a thread of its own: a queue that gets each
        response as {device id: health} (with topology, {device id:
        (health, [NUMA node ids])}), then None when the stream ends."""
        q = queue.Queue()
        fn = self.channel.unary_stream(
            "/v1beta1.DevicePlugin/ListAndWatch",
            request_serializer=dp.Empty.SerializeToString,
            response_deserializer=dp.ListAndWatchResponse.FromString)
        call = fn(dp.Empty())
        self.streams.append(call)

        def pump():
            try:
                for r in call:
                    q.put({d.ID: (d.health, [n.ID for n in d.topology.nodes])
                           if topology else d.health for d in r.devices})
            except grpc.RpcError:
                pass
            q.put(None)
        threading.Thread(target=pump, daemon=True).start()
        return q

    def close(self):
        for s in self.streams:
            s.cancel()
        self.channel.close()


def response_json(r):
    """A ContainerAllocateResponse as plain data."""
    return {"envs": dict(r.envs),
            "mounts": [[m.host_path, m.container_path, m.read_only]
                       for m in r.mounts],
            "devices": [[d.host_path, d.container_path, d.permissions]
                        for d in r.devices],
            "cdi_devices": [c.name for c in r.cdi_devices]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True,
                    help="the device plugin directory (kubelet.sock)")
    ap.add_argument("--pod-resources", required=True,
                    help="the PodResources socket to serve")
    ap.add_argument("--allocate", type=int, default=0, metavar="N",
                    help="after registration, allocate N shares (the "
                    "plugin's preferred ones) and print the answer")
    ap.add_argument("--pod", default="default/demo/main",
                    help="NAMESPACE/POD/CONTAINER that PodResources lists "
                    "for the allocated shares")
    ap.add_argument("--timeout", type=float, default=60)
    a = ap.parse_args()
    why = missing()
    if why:
        print("kubelet_double: " + why, file=sys.stderr)
        return 77
    # TERM ends it like ^C: the sockets are closed on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    k = Kubelet(a.dir, a.pod_resources)
    k.serve()
    try:
        reg = k.wait_register(1, a.timeout)
        if reg is None:
            print("kubelet_double: no registration", file=sys.stderr)
            return 1
        print(json.dumps({"registered": reg.resource_name,
                          "endpoint": reg.endpoint}), flush=True)
        p = k.plugin(reg.endpoint)
        first = p.watch().get(timeout=a.timeout)
        print(json.dumps({"devices": first}), flush=True)
        if a.allocate:
            ids = list(p.preferred(sorted(first), [], a.allocate)
                       .container_responses[0].deviceIDs)
            r = p.allocate(ids).container_responses[0]
            ns, pod, ctr = a.pod.split("/")
            with k.cond:
                k.pods.append((ns, pod, ctr, reg.resource_name, ids))
            print(json.dumps({"allocated": ids, "response":
                              response_json(r)}), flush=True)
        # Serve until stopped (a signal), for the plugin's later polls.
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        k.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
