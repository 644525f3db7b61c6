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


def t_schema():
    schemas = k8s_validate.Schemas()
    for name, doc in objects().items():
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
