#!/usr/bin/env python3
"""A Jupyter kernel under vshare, end to end with the real jupyter_client
and ipykernel: install a kernelspec wrapping python3, start it with a
KernelManager, and check from inside the kernel that libvshare.so is
loaded and that the kernel registered with a running vshare-scheduler
once it touched CUDA (the test driver when there is no GPU)."""

import json
import os
import pwd
import subprocess
import sys
import tempfile
import time
import unittest

from opsutil import (SHIM, TESTDRIVER_DIR, VSHARE_RUN, VSHARECTL, Scheduler,
                     base_env, main, need, pids_in, run)

# Runs inside the kernel. Allocates and sets device memory through the
# driver API: the memset is a gated submission, so the shim must connect,
# register and take the GPU lock before it returns.
KERNEL_CODE = r'''
import ctypes, json, os, subprocess
maps = open("/proc/self/maps").read()
cu = ctypes.CDLL("libcuda.so.1")
steps = []
def call(name, *args):
    rc = getattr(cu, name)(*args)
    steps.append((name, rc))
    return rc
dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
call("cuInit", 0)
call("cuDeviceGet", ctypes.byref(dev), 0)
call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
call("cuCtxSetCurrent", ctx)
call("cuMemAlloc_v2", ctypes.byref(ptr), ctypes.c_size_t(1 << 20))
call("cuMemsetD8_v2", ptr, ctypes.c_ubyte(7), ctypes.c_size_t(1 << 20))
call("cuCtxSynchronize")
env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
st = subprocess.run([os.environ["VS_TEST_CTL"], "--socket",
                     os.environ["VSHARE_SOCKET"], "--json", "status"],
                    env=env, capture_output=True, text=True)
print("RESULT " + json.dumps({
    "pid": os.getpid(),
    "shim_mapped": sorted({l.split()[-1] for l in maps.splitlines()
                           if l.endswith("/libvshare.so")}),
    "socket": os.environ.get("VSHARE_SOCKET"),
    "label": os.environ.get("VSHARE_LABEL"),
    "steps": steps,
    "status_rc": st.returncode,
    "status": st.stdout,
}))
'''

# A program that keeps the GPU busy for HOLD_S seconds: memsets back to
# back, never idle, so that it holds until it ends (mode on, fcfs).
HOLD_S = 5
HOLDER_CODE = r'''
import ctypes, time
cu = ctypes.CDLL("libcuda.so.1")
dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
cu.cuInit(0)
cu.cuDeviceGet(ctypes.byref(dev), 0)
cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
cu.cuCtxSetCurrent(ctx)
cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(1 << 16))
end = time.monotonic() + %d
while time.monotonic() < end:
    cu.cuMemsetD8_v2(ptr, ctypes.c_ubyte(1), ctypes.c_size_t(1 << 16))
    cu.cuCtxSynchronize()
    time.sleep(0.01)
''' % HOLD_S


class KernelCase(unittest.TestCase):
    """A scheduler (config: its settings) and a kernelspec under vshare."""
    config = None

    def setUp(self):
        need("sched", "ctl", "shim", "driver")
        self.tmp = tempfile.TemporaryDirectory()
        t = self.tmp.name
        self.prefix = os.path.join(t, "prefix")
        if self.config is not None:
            path = os.path.join(t, "scheduler.json")
            with open(path, "w") as f:
                json.dump(self.config, f)
            self.sched = Scheduler(t, config=path)
        else:
            self.sched = Scheduler(t)
        self.addCleanup(self.sched.stop)
        # The kernel inherits this environment from the KernelManager.
        self.env = base_env(
            JUPYTER_PATH=os.path.join(self.prefix, "share", "jupyter"),
            JUPYTER_DATA_DIR=os.path.join(t, "data"),
            JUPYTER_CONFIG_DIR=os.path.join(t, "config"),
            JUPYTER_RUNTIME_DIR=os.path.join(t, "runtime"),
            IPYTHONDIR=os.path.join(t, "ipython"),
            LD_LIBRARY_PATH=TESTDRIVER_DIR,
            VS_TEST_CTL=VSHARECTL)

    def tearDown(self):
        self.tmp.cleanup()

    def install_kernel(self, *opts):
        env = dict(self.env)
        env.pop("LD_PRELOAD", None)
        r = run([VSHARE_RUN, "--socket", self.sched.sock] + list(opts) +
                ["--install-kernel", "--prefix", self.prefix, "--name",
                 "vs-e2e"], env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def run_in_kernel(self, code, before=None):
        # As the Jupyter server starts kernels: the connection file is
        # kernel-ID.json, which the kernel's label comes from.
        from jupyter_client.multikernelmanager import MultiKernelManager
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(self.env)
        try:
            mkm = MultiKernelManager()
            self.kernel_id = mkm.start_kernel(kernel_name="vs-e2e")
            km = mkm.get_kernel(self.kernel_id)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        kc = km.client()
        out, errors = [], []

        self.stderr = []

        def hook(msg):
            c = msg["content"]
            if msg["msg_type"] == "stream" and c["name"] == "stderr":
                self.stderr.append(c["text"])
            elif msg["msg_type"] == "stream":
                out.append(c["text"])
            elif msg["msg_type"] == "error":
                errors.append("\n".join(c["traceback"]))

        try:
            kc.start_channels()
            kc.wait_for_ready(timeout=60)
            if before is not None:
                before()
            reply = kc.execute_interactive(code, output_hook=hook, timeout=60)
            self.assertEqual(reply["content"]["status"], "ok", errors)
            # Outside the kernel, while it is alive: the scheduler knows it.
            status = self.sched.status()
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
        text = "".join(out)
        lines = [l for l in text.splitlines() if l.startswith("RESULT ")]
        self.assertEqual(len(lines), 1, text)
        return json.loads(lines[0][len("RESULT "):]), status



class JupyterKernel(KernelCase):
    def test_kernel_runs_under_vshare(self):
        self.install_kernel()
        res, status = self.run_in_kernel(KERNEL_CODE)
        self.assertEqual(res["shim_mapped"], [os.path.realpath(SHIM)])
        self.assertEqual(res["socket"], self.sched.sock)
        # jupyter:ID:NAME, ID the start of this kernel's id.
        self.assertEqual(res["label"], "jupyter:%s:vs-e2e" % self.kernel_id[:8])
        for name, rc in res["steps"]:
            self.assertEqual(rc, 0, "%s returned %d" % (name, rc))
        self.assertEqual(res["status_rc"], 0, res["status"])
        inside = json.loads(res["status"])
        self.assertIn(res["pid"], pids_in(inside),
                      "kernel pid %d not in status seen from the kernel: %s"
                      % (res["pid"], res["status"]))
        self.assertIn(res["pid"], pids_in(status),
                      "kernel pid %d not in status: %s" % (res["pid"], status))


class JupyterWait(KernelCase):
    """A cell that waits for the GPU says so in the notebook."""
    config = {"mode": "on", "tq_s": 30, "policy": "fcfs"}

    def start_holder(self):
        env = dict(self.env, VSHARE_SOCKET=self.sched.sock,
                   VSHARE_LABEL="holder-job")
        env["LD_PRELOAD"] = ":".join(
            p for p in (env.get("LD_PRELOAD", ""), SHIM) if p)
        self.holder = subprocess.Popen([sys.executable, "-c", HOLDER_CODE],
                                       env=env)
        self.addCleanup(self.holder.wait)
        self.addCleanup(self.holder.kill)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            holders = [h for g in self.sched.status()["gpus"]
                       for h in g["holders"]]
            if holders:
                return
            time.sleep(0.05)
        self.fail("the holder did not get the GPU")

    def test_wait_shows_in_the_notebook(self):
        # Batch: an interactive kernel (the default) would take the GPU
        # from the holder at once, with no wait to tell.
        self.install_kernel("--class", "batch")
        res, _ = self.run_in_kernel(KERNEL_CODE, before=self.start_holder)
        for name, rc in res["steps"]:
            self.assertEqual(rc, 0, "%s returned %d" % (name, rc))
        err = "".join(self.stderr)
        user = pwd.getpwuid(os.getuid()).pw_name
        self.assertRegex(err, r'vshare\[%d\]: GPU 0 \(GPU-[0-9a-f]{8}\) is '
                         r'busy, held by "holder-job" \(user %s\) for '
                         r'[0-9.]+ s: GPU work waits \([0-9.]+ s so far\), '
                         r'place 1 of 1 in the queue' % (res["pid"], user))
        self.assertRegex(err, r'vshare\[%d\]: GPU 0 \(GPU-[0-9a-f]{8}\): got '
                         r'the GPU after [0-9.]+ s' % res["pid"])


if __name__ == "__main__":
    main()
