#!/usr/bin/env python3
"""A one-node Slurm cluster of the test's own (munge, slurmctld, slurmd from
Debian, everything under a temporary directory, on localhost) with vshare's
SPANK plugin in plugstack.conf and GPU shards on a device node the test
makes. Two jobs with different shard counts run a CUDA example on the test
driver at once, under the real scheduler in mode on; vsharectl status must
show both with their job labels, each job's environment its limit (status
does not show limits), and the kernel log no overlap. Then short steps
check the plugin's other rules and its srun options (--vshare-mem,
--vshare-class).

usage: test_slurm.py SPANK_PLUGIN   (exit 77: not root or Slurm missing)"""
import collections
import os
import re
import socket
import sys

from cluster_lib import (BIN, SHIM, TESTDRIVER, Session, check, clean_env,
                         clients_labelled, execlog, fail, free_port, log,
                         need_root_and, start_scheduler, status, wait_for)

PLUGIN = sys.argv[1]
SHARD_MEM = 256 << 20
SHARDS = {"a": 2, "b": 3}
# A library every program can take: the user's own preload, to be kept.
USER_PRELOAD = "libm.so.6"


def munge(sess):
    key = sess.path("munge", "munge.key")
    os.makedirs(os.path.dirname(key), mode=0o700)
    with open(key, "wb") as f:
        f.write(os.urandom(1024))
    os.chmod(key, 0o400)
    sock = sess.path("munge", "munge.sock")
    sess.start("munged", [
        "munged", "--foreground", "--force", "--socket=" + sock,
        "--key-file=" + key, "--pid-file=" + sess.path("munge", "munged.pid"),
        "--log-file=" + sess.path("munge", "munged.log"),
        "--seed-file=" + sess.path("munge", "munged.seed")])
    wait_for(lambda: os.path.exists(sock), 10, "munged's socket")
    return sock


def write_conf(sess, host, munge_sock, sched_sock):
    for d in ("state", "spool", "dev"):
        os.makedirs(sess.path(d))
    # The stand-in for /dev/nvidia0 (the NVIDIA major number); the CUDA
    # side is the test driver, which no device node reaches.
    dev = sess.path("dev", "nvidia0")
    os.mknod(dev, 0o600 | 0o020000, os.makedev(195, 0))
    conf = sess.path("slurm.conf")
    with open(conf, "w") as f:
        f.write("""ClusterName=vsharetest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={cport}
SlurmdPort={dport}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
SlurmdDebug=debug
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu,shard
PlugStackConfig={d}/plugstack.conf
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MailProg=/bin/true
NodeName={host} NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 Gres=gpu:1,shard:8 State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP
""".format(host=host, cport=free_port(), dport=free_port(), munge=munge_sock,
           d=sess.dir))
    with open(sess.path("gres.conf"), "w") as f:
        # Slurm shares a GPU as shards only when it knows the GPU.
        f.write("NodeName=%s Name=gpu File=%s\n" % (host, dev))
        f.write("NodeName=%s Name=shard Count=8 File=%s\n" % (host, dev))
    with open(sess.path("plugstack.conf"), "w") as f:
        f.write("required %s shim=%s socket=%s shard_mem=%d\n"
                % (PLUGIN, SHIM, sched_sock, SHARD_MEM))
    return conf


def start_slurm(sess, conf, host, env):
    sess.start("slurmctld", ["slurmctld", "-D", "-c", "-f", conf], env=env)
    sess.start("slurmd", ["slurmd", "-D", "-f", conf, "-N", host], env=env)

    def idle():
        for p in sess.procs:
            if p.name.startswith("slurm") and p.poll() is not None:
                sess.dump("slurmctld.log", "slurmd.log")
                fail("%s exited %d" % (p.name, p.returncode))
        r = sess.run(["sinfo", "-h", "-N", "-o", "%t"], env=env,
                     check_rc=False)
        return r.returncode == 0 and r.stdout.strip() == "idle"
    wait_for(idle, 60, "the node to be idle", step=0.5)


def job(sess, name, env):
    """srun with name's shards; the job prints what the plugin set, then
    runs the example. Job a brings its own LD_PRELOAD, job b its own
    label: the plugin must keep both."""
    env = dict(env)
    if name == "a":
        env["LD_PRELOAD"] = USER_PRELOAD
    else:
        env["VSHARE_LABEL"] = "mine"
    script = ('echo "job=$SLURM_JOB_ID shards=$SLURM_SHARDS_ON_NODE '
              'limit=$VSHARE_MEM_LIMIT label=$VSHARE_LABEL '
              'socket=$VSHARE_SOCKET preload=$LD_PRELOAD '
              'torch=$PYTORCH_CUDA_ALLOC_CONF"; '
              'exec "$0" --iters 40 --kernel-ms 50 --progress-ms 0')
    return sess.start("job-" + name, [
        "srun", "--gres=shard:%d" % SHARDS[name], "-n1", "-c1", "-J",
        "vshare-" + name, "sh", "-c", script, os.path.join(BIN, "vs-compute")],
        env=env)


def job_report(sess, p):
    out = sess.output(p)
    m = re.search(r"job=(\d+) shards=(\S*) limit=(\S*) label=(\S*) "
                  r"socket=(\S*) preload=(\S*) torch=(\S*)", out)
    if p.returncode != 0 or m is None:
        sess.dump("slurmd.log")
        fail("%s exited %s:\n%s" % (p.name, p.returncode, out))
    if "managed: yes" not in out or "PASS" not in out:
        fail("%s: no managed memory or no PASS:\n%s" % (p.name, out))
    return dict(zip(("job", "shards", "limit", "label", "socket", "preload",
                     "torch"), m.groups()))


def main():
    need_root_and(["munged", "slurmctld", "slurmd", "srun", "sinfo"],
                  ["munge", "slurmctld", "slurmd", "slurm-client"])
    if not os.path.exists(PLUGIN):
        fail("the SPANK plugin %s was not built" % PLUGIN)
    host = socket.gethostname().split(".")[0]
    with Session("vshare-slurm-") as sess:
        sched_sock = start_scheduler(sess, sess.path("vshare"), mode="on",
                                     tq_s=1)
        conf = write_conf(sess, host, munge(sess), sched_sock)
        env = clean_env(SLURM_CONF=conf)
        start_slurm(sess, conf, host, env)
        log("one-node Slurm is up")

        kernel_log = sess.path("exec.log")
        jenv = clean_env(SLURM_CONF=conf, LD_LIBRARY_PATH=TESTDRIVER,
                         VSHARE_TD_LOG=kernel_log)
        sess.at_close(lambda: sess.run(["scancel", "--full", "-u", "root"],
                                       env=env, check_rc=False))
        a, b = job(sess, "a", jenv), job(sess, "b", jenv)
        seen = clients_labelled(sched_sock, "slurm:", 2)
        for p in (a, b):
            p.wait(120)
        ra, rb = job_report(sess, a), job_report(sess, b)
        log("jobs: %s / %s" % (ra, rb))

        labels = sorted(c["label"] for c in seen)
        want = sorted(["slurm:%s.0:root" % ra["job"],
                       "slurm:%s.0:root:mine" % rb["job"]])
        check(labels == want, "vsharectl status showed both jobs as %s "
              "(saw %s)" % (want, labels))
        for r, n in ((ra, SHARDS["a"]), (rb, SHARDS["b"])):
            check(r["shards"] == str(n) and r["limit"] == str(n * SHARD_MEM),
                  "job %s: %d shards, VSHARE_MEM_LIMIT=%s" % (r["job"], n,
                                                             r["limit"]))
            check(r["socket"] == sched_sock and
                  r["torch"] == "expandable_segments:False",
                  "job %s: socket and framework defaults set" % r["job"])
        check(ra["preload"] == USER_PRELOAD + ":" + SHIM and
              rb["preload"] == SHIM,
              "LD_PRELOAD: the user's entry kept, the shim after it")
        ops = execlog.select(execlog.load(kernel_log))
        per_pid = collections.Counter(o.pid for o in ops
                                      if o.name == "vs_sleep_ts")
        check(sorted(per_pid.values()) == [40, 40],
              "both jobs ran their 40 kernels on the test driver (%s)"
              % dict(per_pid))
        check(execlog.is_serialized(ops),
              "mode on: no two jobs' kernels overlap")
        more_steps(sess, env, jenv)
        srun_options(sess, jenv, sched_sock)


def step_env(sess, env, *srun_args):
    r = sess.run(["srun", "-n1"] + list(srun_args) + [
        "sh", "-c", 'echo "limit=${VSHARE_MEM_LIMIT-unset} '
        'preload=${LD_PRELOAD-unset}"'], env=env, timeout=60,
        check_rc=False)
    return r.returncode, r.stdout


def more_steps(sess, env, jenv):
    """The rules beyond two plain jobs, one short step each."""
    rc, out = step_env(sess, dict(jenv, VSHARE_MEM_LIMIT="64M"),
                       "--gres=shard:4")
    check(rc == 0 and "limit=64M " in out,
          "a lower limit of the user's own is kept (%s)" % out.strip())
    rc, out = step_env(sess, jenv)
    check(rc == 0 and "limit=unset preload=unset" in out,
          "a step without GPU or shard is left alone (%s)" % out.strip())
    rc, out = step_env(sess, jenv, "--gres=gpu:1")
    check(rc == 0 and "limit=unset preload=unset" in out,
          "a step with a whole GPU, no shard, is left alone by default (%s)"
          % out.strip())
    # slurmstepd reads plugstack.conf for every step.
    with open(sess.path("plugstack.conf")) as f:
        good = f.read()
    with open(sess.path("plugstack.conf"), "w") as f:
        f.write(good.strip() + " steps=gpus\n")
    rc, out = step_env(sess, jenv, "--gres=gpu:1")
    check(rc == 0 and "limit=unset preload=%s" % SHIM in out,
          "steps=gpus: a whole GPU's step is taken, without a limit (%s)"
          % out.strip())
    with open(sess.path("plugstack.conf"), "w") as f:
        f.write(good.strip() + " shard_mem=lots\n")
    rc, out = step_env(sess, jenv, "--gres=shard:1")
    with open(sess.path("slurmd.log")) as f:
        logged = ("shard_mem 'lots': not a size (like 8G, 512M or 1.5T; "
                  "bytes like 4096B)") in f.read()
    check("limit=" not in out and logged,
          "a bad plugstack.conf option stops a required plugin's step, "
          "logged by slurmd (srun exit %d: %s)" % (rc, out.strip()))
    with open(sess.path("plugstack.conf"), "w") as f:
        f.write(good)



def labelled_client(sess, p, sock, suffix):
    """The client whose label ends with suffix, once it attached a GPU,
    while p (its job) runs."""
    def seen():
        cs = [c for c in status(sock)["clients"]
              if c["label"].endswith(suffix) and c["gpus"]]
        if not cs and p.poll() is not None:
            fail("%s exited %d before it attached:\n%s"
                 % (p.name, p.returncode, sess.output(p)))
        return cs[0] if cs else None
    return wait_for(seen, 60, "a client labelled *%s in vsharectl status"
                    % suffix)


def srun_options(sess, jenv, sched_sock):
    """--vshare-mem and --vshare-class: what the job sees, what the
    scheduler shows, what the shim enforces, and the refusals."""
    # 2 shards allow 512 MiB; the option asks for less than that, and
    # replaces the user's own (higher) VSHARE_MEM_LIMIT.
    script = ('echo "limit=$VSHARE_MEM_LIMIT class=$VSHARE_CLASS '
              'label=$VSHARE_LABEL"; exec "$0" --iters 30 --kernel-ms 50 '
              '--progress-ms 0 --mem 64M')
    p = sess.start("job-opts", [
        "srun", "--gres=shard:2", "--vshare-mem=300M",
        "--vshare-class=batch", "-n1", "-J", "vshare-opts", "sh", "-c",
        script, os.path.join(BIN, "vs-compute")],
        env=dict(jenv, VSHARE_MEM_LIMIT="400M", VSHARE_LABEL="opts"))
    client = labelled_client(sess, p, sched_sock, ":root:opts")
    p.wait(120)
    out = sess.output(p)
    check(p.returncode == 0 and "PASS" in out and
          "limit=%d class=batch label=slurm:" % (300 << 20) in out,
          "srun --vshare-mem=300M --vshare-class=batch: the job's "
          "VSHARE_MEM_LIMIT and VSHARE_CLASS (exit %s: %s)"
          % (p.returncode, out.strip()))
    check(re.fullmatch(r"slurm:\d+\.0:root:opts", client["label"]) and
          client.get("class", "batch") == "batch",
          "vsharectl status shows the job's label (and class) (%s)" % client)

    # The limit is the shim's own: a working set above it is refused.
    rc, out = step_run(sess, jenv, "--gres=shard:2", "--vshare-mem=32M",
                       os.path.join(BIN, "vs-compute"), "--iters", "2",
                       "--mem", "64M")
    check(rc != 0 and "PASS" not in out,
          "--vshare-mem=32M: a 64 MiB working set is refused (exit %d: %s)"
          % (rc, out.strip()[-300:]))

    # Refused by srun itself, before the job is submitted.
    for opt, said in (("--vshare-mem=8", "--vshare-mem '8': a size needs "
                       "a unit (K, M, G, T); a bare number below 1 MiB is "
                       "refused, write 8G or 8B"),
                      ("--vshare-mem=lots", "--vshare-mem 'lots': not a size "
                       "(like 8G, 512M or 1.5T; bytes like 4096B)"),
                      ("--vshare-class=urgent", "--vshare-class 'urgent' "
                       "is not a class (want interactive or batch)")):
        rc, out = step_env(sess, jenv, "--gres=shard:1", opt)
        check(rc != 0 and said in out and "limit=" not in out,
              "srun %s refused with a message (exit %d: %s)"
              % (opt, rc, out.strip()))

    # Refused where the shards are known: above what 2 shards allow.
    rc, out = step_env(sess, jenv, "--gres=shard:2", "--vshare-mem=1G")
    with open(sess.path("slurmd.log")) as f:
        logged = ("--vshare-mem 1G is above the 512M that this step's GPU "
                  "shards allow") in f.read()
    check("limit=" not in out and logged,
          "--vshare-mem above shards x shard_mem stops the step, logged "
          "(exit %d: %s)" % (rc, out.strip()))


def step_run(sess, env, *args):
    """srun -n1 with args (options, then the program); rc and output."""
    r = sess.run(["srun", "-n1"] + list(args), env=env, timeout=60,
                 check_rc=False)
    return r.returncode, r.stdout


if __name__ == "__main__":
    main()
