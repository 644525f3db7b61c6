#!/usr/bin/env python3
"""deploy/kubernetes/, offline: every object valid against the vendored
Kubernetes API schemas (strict: an unknown field fails), a misspelt field
caught, the references between the objects, the privilege the DaemonSet
takes (exactly what docs/cluster.md writes out), the kustomization, and
the ConfigMap's scheduler.json accepted by the real daemon.

usage: test_manifests.py SCHEDULER PLUGIN|- SCENARIO   (or --list)
  SCHEDULER: vshare-scheduler of this build; PLUGIN: vshare-device-plugin,
  or - where it is not built"""
import copy
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

import k8s_validate

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEPLOY = os.path.join(SOURCE, "deploy", "kubernetes")
# The objects `kubectl apply -k` creates, and the example applied apart.
APPLIED = ["namespace.yaml", "serviceaccount.yaml", "configmap.yaml",
           "daemonset.yaml"]
EXAMPLE = "example-pod.yaml"
# The DRA overlay (dra/): what it adds, and its example.
DRA = os.path.join(DEPLOY, "dra")
DRA_ADDED = ["deviceclass.yaml", "rbac.yaml"]
DRA_EXAMPLE = "example-claim.yaml"
# Every host path the DaemonSet mounts, and whether it is read-only in
# every container that mounts it (docs/cluster.md lists the same).
HOST_PATHS = {
    "/run/vshare": False,
    "/opt/vshare/lib": False,
    "/var/run/cdi": False,
    "/dev": True,
    "/var/lib/kubelet/device-plugins": False,
    "/var/lib/kubelet/pod-resources": True,
    "/etc/kubernetes/node-feature-discovery/features.d": False,
}


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)
    print("ok: " + what)


def load(name):
    docs = k8s_validate.documents(os.path.join(DEPLOY, name))
    return docs[0] if len(docs) == 1 else docs


def objects():
    return {n: load(n) for n in APPLIED + [EXAMPLE]}


def pod_spec(ds):
    return ds["spec"]["template"]["spec"]


def all_containers(spec):
    return spec.get("initContainers", []) + spec["containers"]


def dra_objects():
    """The overlay's own objects and its example, (file, object) each."""
    return [("dra/" + n, d) for n in DRA_ADDED + [DRA_EXAMPLE]
            for d in k8s_validate.documents(os.path.join(DRA, n))]


def t_schema():
    schemas = k8s_validate.Schemas()
    for name, doc in list(objects().items()) + dra_objects() + \
            [("dra/ DaemonSet", dra_daemonset())]:
        errs = k8s_validate.errors(doc, schemas)
        check(not errs, "%s: %s %s is valid (strict)%s"
              % (name, doc["kind"], doc["metadata"]["name"],
                 "".join("\n  " + e for e in errs)))


def mutate(doc, path, value=None, rename=None):
    """A copy of doc with the field at path (keys and indexes) set to
    value, or renamed to rename."""
    doc = copy.deepcopy(doc)
    node = doc
    for p in path[:-1]:
        node = node[p]
    if rename is not None:
        node[rename] = node.pop(path[-1])
    else:
        node[path[-1]] = value
    return doc


def t_typo():
    """Each misspelling, wrong type or unknown value fails and the error
    names it; the unchanged object passes, so it is the change that
    fails."""
    schemas = k8s_validate.Schemas()
    ds, cm, pod = load("daemonset.yaml"), load("configmap.yaml"), load(EXAMPLE)
    tpl = ["spec", "template", "spec"]
    cases = [
        (ds, tpl + ["containers", 0, "securityContext",
                    "readOnlyRootFilesystem"], "readOnlyRootFileSystem",
         None, "'readOnlyRootFileSystem' was unexpected"),
        (ds, tpl + ["initContainers", 0, "imagePullPolicy"],
         "imagePullPolicey", None, "'imagePullPolicey' was unexpected"),
        (ds, tpl + ["volumes", 1, "hostPath", "path"], "pth", None,
         "'pth' was unexpected"),
        (ds, ["spec", "selector"], "selectors", None,
         "'selectors' was unexpected"),
        (ds, tpl + ["nodeSelector"], "nodeselector", None,
         "'nodeselector' was unexpected"),
        (cm, ["data"], "date", None, "'date' was unexpected"),
        (pod, ["spec", "containers", 0, "resources", "limits"], "limit",
         None, "'limit' was unexpected"),
        (ds, tpl + ["volumes", 1, "hostPath", "type"], None,
         "DirectoryOrCreated", "'DirectoryOrCreated' is not one of"),
        (ds, tpl + ["containers", 0, "securityContext", "runAsUser"], None,
         "0", "'0' is not of type 'integer'"),
        (ds, tpl + ["containers", 0, "securityContext", "capabilities",
                    "drop"], None, "ALL", "'ALL' is not of type 'array'"),
    ]
    objs = {d["kind"]: d for _, d in dra_objects()}
    tpl = objs["ResourceClaimTemplate"]
    req = ["spec", "spec", "devices", "requests", 0, "exactly"]
    cases += [
        (tpl, req + ["capacity"], "capacities", None,
         "'capacities' was unexpected"),
        (tpl, req + ["deviceClassName"], "deviceClass", None,
         "'deviceClass' was unexpected"),
        (objs["DeviceClass"], ["spec", "selectors"], "selector", None,
         "'selector' was unexpected"),
    ]
    for doc, path, rename, value, want in cases:
        check(not k8s_validate.errors(doc, schemas),
              "%s %s passes unchanged" % (doc["kind"], doc["metadata"]["name"]))
        bad = mutate(doc, path, value=value, rename=rename)
        errs = k8s_validate.errors(bad, schemas)
        check(any(want in e for e in errs),
              "%s at %s fails: %s" % (rename or repr(value),
                                      k8s_validate.where(path),
                                      errs[0] if errs else "NO ERROR"))
    # A kind without a vendored schema is an error, not a pass.
    errs = k8s_validate.errors({"apiVersion": "v1", "kind": "Secrett",
                                "metadata": {"name": "x"}}, schemas)
    check(errs and "no schema" in errs[0], "an unknown kind fails")


def t_cli():
    """k8s_validate.py as a command: 0 on the manifests, 1 and the field on
    a misspelt copy."""
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "k8s_validate.py")
    files = [os.path.join(DEPLOY, n) for n in APPLIED + [EXAMPLE]]
    r = subprocess.run([sys.executable, tool] + files, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    check(r.returncode == 0, "k8s_validate.py passes the manifests: "
          + r.stdout)
    with open(os.path.join(DEPLOY, "daemonset.yaml")) as f:
        text = f.read()
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as bad:
        bad.write(text.replace("mountPath: /run/vshare",
                               "mountpath: /run/vshare"))
        bad.flush()
        r = subprocess.run([sys.executable, tool, bad.name], text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    check(r.returncode == 1 and "'mountpath' was unexpected" in r.stdout,
          "k8s_validate.py fails a misspelt copy (rc %d): %s"
          % (r.returncode, r.stdout.strip().splitlines()[:1]))


def t_references():
    """What the API server does not check but the pods need: mounts name
    declared volumes, the ConfigMap and the account exist under the names
    used, one image everywhere, the node label, the example's request."""
    o = objects()
    ds, cm, sa = o["daemonset.yaml"], o["configmap.yaml"], o["serviceaccount.yaml"]
    spec = pod_spec(ds)
    vols = {v["name"]: v for v in spec["volumes"]}
    for c in all_containers(spec):
        for m in c.get("volumeMounts", []):
            check(m["name"] in vols, "%s mounts the declared volume %s"
                  % (c["name"], m["name"]))
    used = {m["name"] for c in all_containers(spec)
            for m in c.get("volumeMounts", [])}
    check(used == set(vols), "every volume is mounted (%s)" % sorted(vols))
    check(vols["config"]["configMap"]["name"] == cm["metadata"]["name"],
          "the config volume is the ConfigMap %s" % cm["metadata"]["name"])
    check(spec["serviceAccountName"] == sa["metadata"]["name"],
          "the pods run as the ServiceAccount %s" % sa["metadata"]["name"])
    images = {c["image"] for c in all_containers(spec)}
    check(len(images) == 1, "one node image: %s" % images)
    sel = ds["spec"]["selector"]["matchLabels"]
    labels = ds["spec"]["template"]["metadata"]["labels"]
    check(all(labels.get(k) == v for k, v in sel.items()),
          "the selector matches the pods' labels")
    check(spec["nodeSelector"] == {"vshare.dev/gpu": "true"},
          "only nodes labelled vshare.dev/gpu=true")
    names = [c["name"] for c in all_containers(spec)]
    check(names == ["install-shim", "cdi-spec", "scheduler", "device-plugin"],
          "init containers install-shim, cdi-spec; containers scheduler, "
          "device-plugin")
    limits = o[EXAMPLE]["spec"]["containers"][0]["resources"]["limits"]
    check(limits == {"vshare.dev/gpu": 2}, "the example asks for "
          "vshare.dev/gpu: 2")
    cdi = next(c for c in spec["initContainers"] if c["name"] == "cdi-spec")
    args = dict(a[2:].split("=", 1) for a in cdi["args"])
    conf = json.loads(cm["data"]["scheduler.json"])
    check(args["socket"] == conf["socket"], "the CDI spec names the "
          "scheduler's socket %s" % conf["socket"])
    check(os.path.dirname(args["lib"]) == "/opt/vshare/lib" and
          spec["initContainers"][0]["command"][-1] == "/opt/vshare/lib",
          "the CDI spec names the shim where install-shim puts it")


def t_privilege():
    """The least privilege, as written in docs/cluster.md: no privileged
    container, no capability, no escalation, read-only root file systems,
    seccomp RuntimeDefault, no host namespaces, no API token, and exactly
    the host paths listed (read-only where the table says so)."""
    ds = load("daemonset.yaml")
    spec = pod_spec(ds)
    text = open(os.path.join(DEPLOY, "daemonset.yaml")).read()
    check("privileged: true" not in text, "nothing privileged")
    for k in ("hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace"):
        check(not spec.get(k), "no %s" % k)
    check(spec["securityContext"]["seccompProfile"]["type"] ==
          "RuntimeDefault", "seccomp: the runtime's default")
    check(spec["automountServiceAccountToken"] is False,
          "no API token in the pods")
    for c in all_containers(spec):
        sc = c["securityContext"]
        check(sc.get("privileged") in (None, False) and
              sc["allowPrivilegeEscalation"] is False and
              sc["readOnlyRootFilesystem"] is True and
              sc["capabilities"] == {"drop": ["ALL"]} and
              sc["runAsGroup"] == 990,
              "%s: all capabilities dropped, none added, no escalation, "
              "read-only root, group vshare (990)" % c["name"])
    vols = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]
            if "hostPath" in v}
    check(sorted(vols.values()) == sorted(HOST_PATHS),
          "the host paths are exactly %s" % sorted(HOST_PATHS))
    for c in all_containers(spec):
        for m in c.get("volumeMounts", []):
            if m["name"] in vols and HOST_PATHS[vols[m["name"]]]:
                check(m.get("readOnly") is True, "%s mounts %s read-only"
                      % (c["name"], vols[m["name"]]))
    # Only the containers that write a host path mount it writable.
    writers = {(c["name"], vols[m["name"]]) for c in all_containers(spec)
               for m in c.get("volumeMounts", [])
               if m["name"] in vols and not m.get("readOnly")}
    check(writers == {("install-shim", "/opt/vshare/lib"),
                      ("cdi-spec", "/var/run/cdi"),
                      ("scheduler", "/run/vshare"),
                      ("device-plugin", "/var/lib/kubelet/device-plugins"),
                      ("device-plugin",
                       "/etc/kubernetes/node-feature-discovery/features.d")},
          "each host path is writable in the one container that writes it")


def t_kustomization():
    k = load("kustomization.yaml")
    check(set(k) <= {"apiVersion", "kind", "namespace", "resources",
                     "images", "labels", "commonLabels", "patches"},
          "kustomization: known keys only (%s)" % sorted(k))
    check(k["apiVersion"] == "kustomize.config.k8s.io/v1beta1" and
          k["kind"] == "Kustomization", "kustomization: its apiVersion, kind")
    check(k["resources"] == APPLIED, "kustomization applies %s" % APPLIED)
    ns = load("namespace.yaml")
    check(k["namespace"] == ns["metadata"]["name"],
          "kustomization puts everything in the namespace it creates")
    yamls = sorted(n for n in os.listdir(DEPLOY)
                   if n.endswith((".yaml", ".yml")))
    check(yamls == sorted(APPLIED + [EXAMPLE, "kustomization.yaml",
                                     "prometheus.yml"]),
          "no file of YAML left out of the checks: %s" % yamls)


def json_patch(doc, ops):
    """doc with the JSON patch ops (add, remove; the ones the overlay
    uses) applied, as kustomize applies them."""
    doc = copy.deepcopy(doc)
    for op in ops:
        keys = [int(k) if k.isdigit() else k
                for k in op["path"].lstrip("/").split("/")]
        node = doc
        for k in keys[:-1]:
            node = node[k]
        last = keys[-1]
        if op["op"] == "remove":
            del node[last]
        elif op["op"] == "add" and last == "-":
            node.append(op["value"])
        elif op["op"] == "add":
            node.insert(last, op["value"]) if isinstance(node, list) \
                else node.__setitem__(last, op["value"])
        else:
            raise Fail("the test knows no JSON patch op %s" % op["op"])
    return doc


def dra_daemonset():
    """The base's DaemonSet with the overlay's patch applied."""
    k = k8s_validate.documents(os.path.join(DRA, "kustomization.yaml"))[0]
    (p,) = k["patches"]
    if p["target"] != {"kind": "DaemonSet", "name": "vshare-node"}:
        raise Fail("the overlay patches the DaemonSet vshare-node: %s"
                   % p["target"])
    return json_patch(load("daemonset.yaml"), yaml.safe_load(p["patch"]))


def t_dra_overlay():
    """deploy/kubernetes/dra: the base, the DeviceClass and the RBAC; the
    patched DaemonSet has no device plugin and none of its host paths, the
    dra-driver container with the kubelet's plugin directories, the CDI
    directory and the only API token, as tightly held as the others; every
    volume mounted and declared."""
    k = k8s_validate.documents(os.path.join(DRA, "kustomization.yaml"))[0]
    check(set(k) <= {"apiVersion", "kind", "resources", "patches"} and
          k["resources"] == [".."] + DRA_ADDED,
          "the overlay: the base and %s" % DRA_ADDED)
    yamls = sorted(n for n in os.listdir(DRA) if n.endswith((".yaml", ".yml")))
    check(yamls == sorted(DRA_ADDED + [DRA_EXAMPLE, "kustomization.yaml"]),
          "no file of YAML in dra/ left out of the checks: %s" % yamls)
    base = pod_spec(load("daemonset.yaml"))
    spec = pod_spec(dra_daemonset())
    gone = {v["name"] for v in base["volumes"]} - \
        {v["name"] for v in spec["volumes"]}
    check(gone == {"device-plugins", "pod-resources", "features"},
          "the device plugin's volumes removed, by index: %s" % sorted(gone))
    names = [c["name"] for c in all_containers(spec)]
    check(names == ["install-shim", "cdi-spec", "scheduler", "dra-driver"],
          "containers: %s" % names)
    vols = {v["name"]: v for v in spec["volumes"]}
    used = {m["name"] for c in all_containers(spec)
            for m in c.get("volumeMounts", [])}
    check(used == set(vols), "every volume is mounted and declared")
    d = spec["containers"][-1]
    sc = d["securityContext"]
    check(sc["allowPrivilegeEscalation"] is False and
          sc["readOnlyRootFilesystem"] is True and
          sc["capabilities"] == {"drop": ["ALL"]} and sc["runAsGroup"] == 990,
          "dra-driver: no capability, no escalation, read-only root")
    mounts = {m["mountPath"]: (vols[m["name"]], m.get("readOnly", False))
              for m in d["volumeMounts"]}
    host = {p: v["hostPath"]["path"] for p, (v, _) in mounts.items()
            if "hostPath" in v}
    check(host == {"/var/lib/kubelet/plugins_registry":
                   "/var/lib/kubelet/plugins_registry",
                   "/var/lib/kubelet/plugins/vshare.dev":
                   "/var/lib/kubelet/plugins/vshare.dev",
                   "/var/run/cdi": "/var/run/cdi"},
          "dra-driver's host paths: the registry, its plugin directory, "
          "the CDI specs (%s)" % host)
    token = [c["name"] for c in all_containers(spec)
             for m in c.get("volumeMounts", []) if m["name"] == "api-token"]
    check(token == ["dra-driver"] and spec["automountServiceAccountToken"]
          is False and mounts["/var/run/secrets/kubernetes.io/"
                              "serviceaccount"][1] is True,
          "the token in dra-driver alone, read-only")
    env = {e["name"]: e for e in d["env"]}
    check(env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] ==
          "spec.nodeName", "NODE_NAME from the downward API")


def t_dra_references():
    """The DeviceClass is the driver's, the example's claim asks it for
    8Gi and names the driver in its configuration, the pod uses the
    template; the RBAC binds the node's account, grants what the driver
    calls and no more, and the admission policy holds that account to
    its node's slices."""
    objs = {(d["kind"], d["metadata"]["name"]): d for _, d in dra_objects()}
    dc = objs[("DeviceClass", "vshare.dev")]
    check('device.driver == "vshare.dev"' in
          dc["spec"]["selectors"][0]["cel"]["expression"],
          "the DeviceClass selects the driver vshare.dev")
    tpl = objs[("ResourceClaimTemplate", "vshare-gpu-8gi")]["spec"]["spec"]
    req = tpl["devices"]["requests"][0]
    check(req["exactly"]["deviceClassName"] == "vshare.dev" and
          req["exactly"]["capacity"]["requests"] == {"memory": "8Gi"},
          "the example asks vshare.dev for memory: 8Gi")
    cfg = tpl["devices"]["config"][0]
    check(cfg["requests"] == [req["name"]] and
          cfg["opaque"]["driver"] == "vshare.dev" and
          set(cfg["opaque"]["parameters"]) == {"apiVersion", "kind", "class"},
          "its configuration: a class for the driver")
    pod = objs[("Pod", "vshare-dra-example")]["spec"]
    check(pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName":
                                     "vshare-gpu-8gi"}] and
          pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}],
          "the pod's container uses the template's claim")
    sa, ns = load("serviceaccount.yaml"), load("namespace.yaml")
    user = "system:serviceaccount:%s:%s" % (ns["metadata"]["name"],
                                            sa["metadata"]["name"])
    role = objs[("ClusterRole", "vshare-dra-driver")]
    check(role["rules"] == [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"],
         "verbs": ["get"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
         "verbs": ["get", "create", "update"]}],
        "the least RBAC: get claims; get, create, update slices")
    b = objs[("ClusterRoleBinding", "vshare-dra-driver")]
    check(b["roleRef"]["name"] == role["metadata"]["name"] and
          b["subjects"] == [{"kind": "ServiceAccount",
                             "name": sa["metadata"]["name"],
                             "namespace": ns["metadata"]["name"]}],
          "bound to the node's account")
    vap = objs[("ValidatingAdmissionPolicy", "vshare-dra-driver-own-node")]
    check(user in vap["spec"]["matchConditions"][0]["expression"] and
          "resourceslices" in
          vap["spec"]["matchConstraints"]["resourceRules"][0]["resources"],
          "the admission policy holds %s to its node's slices" % user)
    vb = objs[("ValidatingAdmissionPolicyBinding",
               "vshare-dra-driver-own-node")]
    check(vb["spec"]["policyName"] == vap["metadata"]["name"] and
          vb["spec"]["validationActions"] == ["Deny"], "and denies")


def t_scheduler_conf(scheduler, plugin):
    """The ConfigMap's scheduler.json is what the real daemon accepts (its
    unknown keys are errors): --print-config must succeed and keep the
    values; a misspelt key must fail the same way."""
    conf = json.loads(load("configmap.yaml")["data"]["scheduler.json"])
    # The group is the image's; this host may have none of that name.
    conf["socket_group"] = None

    def print_config(c):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(c, f)
            f.flush()
            return subprocess.run([scheduler, "--config", f.name,
                                   "--print-config"], text=True,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, timeout=30)
    r = print_config(conf)
    check(r.returncode == 0, "vshare-scheduler accepts the ConfigMap's "
          "scheduler.json: " + r.stderr.strip())
    eff = json.loads(r.stdout)
    check(all(eff[k] == v for k, v in conf.items() if k != "socket_group"),
          "the daemon keeps every value of it")
    bad = dict(conf)
    bad["metrics_lisen"] = bad.pop("metrics_listen")
    r = print_config(bad)
    check(r.returncode != 0 and "metrics_lisen" in r.stderr,
          "a misspelt key fails: " + r.stderr.strip())


def t_plugin_args(scheduler, plugin):
    """The device plugin knows every option the DaemonSet passes (its
    --help lists them)."""
    if plugin == "-":
        print("SKIP: vshare-device-plugin not built")
        return 77
    c = next(c for c in pod_spec(load("daemonset.yaml"))["containers"]
             if c["name"] == "device-plugin")
    r = subprocess.run([plugin, "--help"], text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    for a in c["args"]:
        opt = a.split("=", 1)[0]
        check(opt + " " in r.stdout, "vshare-device-plugin --help has %s"
              % opt)
    return 0


def promtool_check(conf):
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
        yaml.safe_dump(conf, f)
        f.flush()
        return subprocess.run(["promtool", "check", "config", f.name],
                              text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=60)


def t_scrape_config():
    """deploy/kubernetes/prometheus.yml: its pod discovery names the
    DaemonSet's namespace, label and port; promtool accepts the job (with
    a static target in place of the discovery: Debian's Prometheus is
    built without Kubernetes discovery) and refuses a misspelt copy."""
    with open(os.path.join(DEPLOY, "prometheus.yml")) as f:
        conf = yaml.safe_load(f)
    job = conf["scrape_configs"][0]
    sd = job["kubernetes_sd_configs"]
    ds = load("daemonset.yaml")
    port = next(p for c in pod_spec(ds)["containers"]
                for p in c.get("ports", []))
    keep = next(r for r in job["relabel_configs"] if r["action"] == "keep")
    check(sd == [{"role": "pod", "namespaces":
                  {"names": [load("kustomization.yaml")["namespace"]]}}],
          "the job discovers the pods of the DaemonSet's namespace")
    check(keep["regex"] == "%s;%s" % (
        ds["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"],
        port["name"]), "it keeps the DaemonSet's pods' port %s"
        % port["name"])
    listen = json.loads(load("configmap.yaml")["data"]["scheduler.json"])
    check(listen["metrics_listen"].endswith(":%d" % port["containerPort"]),
          "the port is the scheduler's metrics_listen")
    if shutil.which("promtool") is None:
        print("SKIP: no promtool (apt-get install prometheus)")
        return 77
    static = dict(job)
    del static["kubernetes_sd_configs"]
    static["static_configs"] = [{"targets": ["127.0.0.1:9464"]}]
    r = promtool_check({"scrape_configs": [static]})
    check(r.returncode == 0, "promtool check config passes the job: "
          + r.stdout.strip())
    bad = dict(static)
    bad["relabel_config"] = bad.pop("relabel_configs")
    r = promtool_check({"scrape_configs": [bad]})
    check(r.returncode != 0 and "relabel_config" in r.stdout,
          "promtool refuses a misspelt copy")
    return 0


def scenarios():
    return {n[2:]: f for n, f in globals().items()
            if n.startswith("t_") and callable(f)}


def main():
    sc = scenarios()
    if sys.argv[1:] == ["--list"]:
        print("\n".join(sc))
        return 0
    if len(sys.argv) != 4 or sys.argv[3] not in sc:
        print(__doc__)
        return 2
    fn = sc[sys.argv[3]]
    try:
        takes = inspect.signature(fn).parameters
        rc = fn(*sys.argv[1:3]) if takes else fn()
    except Fail as e:
        print("FAIL:", e)
        return 1
    return rc or 0


if __name__ == "__main__":
    sys.exit(main())
