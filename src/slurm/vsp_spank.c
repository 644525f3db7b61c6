/*
 * vshare's SPANK plugin: puts the tasks of a Slurm job step under vshare.
 * In each task, before it runs the user's program, it sets LD_PRELOAD (the
 * shim added to the user's own), VSHARE_SOCKET, a label naming the job,
 * step and user, VSHARE_MEM_LIMIT from the step's GPU shards or the user's
 * --vshare-mem within them, VSHARE_CLASS from --vshare-class, and the
 * framework defaults, through the job's environment.
 *
 * plugstack.conf (one line):
 *   required /usr/lib/x86_64-linux-gnu/slurm-wlm/vshare_spank.so shard_mem=10G
 * The options are listed in vsp_conf.h; docs/cluster.md has the rest.
 */
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "vsp_conf.h"

SPANK_PLUGIN(vshare, 1);

_Static_assert(VSP_STEP_BATCH == SLURM_BATCH_SCRIPT &&
	       VSP_STEP_EXTERN == SLURM_EXTERN_CONT &&
	       VSP_STEP_INTERACTIVE == SLURM_INTERACTIVE_STEP,
	       "step ids as in slurm.h");

/* SPANK gives a plugin no handle of its own: the parsed options live here,
 * set once by slurm_spank_init in each slurmstepd. */
static struct vsp_conf conf;

/* The user's srun options, set by their callbacks: in srun, which refuses
 * a bad value before the job is submitted, and again in slurmstepd, where
 * the task's environment is made. */
static struct {
	int      cls;        /* enum vsp_class */
	int      mem_asked;
	uint64_t mem;
} req;

static int opt_class(int val, const char *arg, int remote)
{
	char err[160];
	int cls;

	(void)val;
	(void)remote;
	cls = vsp_class_parse(arg ? arg : "", err, sizeof(err));
	if (cls < 0) {
		slurm_error("vshare: %s", err);
		return -1;
	}
	req.cls = cls;
	return 0;
}

static int opt_mem(int val, const char *arg, int remote)
{
	char err[320];

	(void)val;
	(void)remote;
	if (vsp_mem_parse(arg ? arg : "", &req.mem, err, sizeof(err)) != 0) {
		slurm_error("vshare: %s", err);
		return -1;
	}
	req.mem_asked = 1;
	return 0;
}

/* Registered (slurm_spank_init) rather than exported as spank_options:
 * only registered options reach sbatch and salloc too. */
static struct spank_option options[] = {
	{ "vshare-class", "CLASS",
	  "vshare: the scheduling class of the tasks' GPU work, interactive "
	  "or batch (VSHARE_CLASS)", 1, 0, opt_class },
	{ "vshare-mem", "SIZE",
	  "vshare: GPU memory each task may use, like 8G, at most what the "
	  "step's shards allow (VSHARE_MEM_LIMIT)", 1, 0, opt_mem },
	SPANK_OPTIONS_TABLE_END
};

/* Variables whose presence says the step has a whole GPU. */
static const char *const gpu_vars[] = {
	"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES",
};

static const struct { const char *name, *value, *alias; } fw_defaults[] = {
#define VS_FW_DEFAULT(name, value, alias) { #name, value, alias },
#include "vshare/fw_defaults.def"
#undef VS_FW_DEFAULT
};

/* The value of a job variable into buf, or NULL when unset or empty. */
static const char *job_env(spank_t sp, const char *name, char *buf, int n)
{
	if (spank_getenv(sp, name, buf, n) != ESPANK_SUCCESS || buf[0] == '\0')
		return NULL;
	return buf;
}

static int set(spank_t sp, const char *name, const char *value)
{
	if (spank_setenv(sp, name, value, 1) == ESPANK_SUCCESS)
		return 0;
	slurm_error("vshare: cannot set %s in the job's environment", name);
	return -1;
}

/* Whether the plugin takes this step (the steps= option). */
static int wanted(spank_t sp)
{
	char buf[256];

	if (conf.steps == VSP_STEPS_ALL ||
	    job_env(sp, "SLURM_SHARDS_ON_NODE", buf, sizeof(buf)) != NULL)
		return 1;
	for (size_t i = 0; conf.steps == VSP_STEPS_GPUS &&
	     i < sizeof(gpu_vars) / sizeof(gpu_vars[0]); i++)
		if (job_env(sp, gpu_vars[i], buf, sizeof(buf)) != NULL)
			return 1;
	return 0;
}

static int set_label(spank_t sp)
{
	uint32_t job = 0, step = 0;
	uid_t uid = 0;
	char own[VSP_PATH_MAX], label[64], user[64], pwbuf[1024];
	struct passwd pw, *res = NULL;

	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_JOB_STEPID, &step);
	spank_get_item(sp, S_JOB_UID, &uid);
	if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res)
		snprintf(user, sizeof(user), "%s", pw.pw_name);
	else
		snprintf(user, sizeof(user), "%u", (unsigned)uid);
	vsp_label(label, sizeof(label), job, step, user,
		  job_env(sp, "VSHARE_LABEL", own, sizeof(own)));
	return set(sp, "VSHARE_LABEL", label);
}

/* The admin's cap, shards x shard_mem (0: none), into *cap. */
static int step_cap(spank_t sp, uint64_t *cap)
{
	char buf[64];
	uint64_t shards;

	*cap = 0;
	if (conf.shard_mem == 0 ||
	    job_env(sp, "SLURM_SHARDS_ON_NODE", buf, sizeof(buf)) == NULL)
		return 0;
	if (vsp_shards(buf, &shards) != 0 ||
	    vsp_limit(shards, conf.shard_mem, cap) != 0) {
		slurm_error("vshare: cannot derive a memory limit from "
			    "SLURM_SHARDS_ON_NODE=%s", buf);
		return -1;
	}
	return 0;
}

/* The cap, or the user's --vshare-mem within it (vsp_step_limit). */
static int set_limit(spank_t sp)
{
	char cur[64], lim[32], err[200];
	uint64_t cap, limit;

	if (step_cap(sp, &cap) != 0)
		return -1;
	switch (vsp_step_limit(cap, req.mem_asked, req.mem,
			       job_env(sp, "VSHARE_MEM_LIMIT", cur, sizeof(cur)),
			       &limit, err, sizeof(err))) {
	case VSP_LIMIT_KEEP:
		return 0;
	case VSP_LIMIT_REFUSE:
		slurm_error("vshare: %s", err);
		return -1;
	}
	snprintf(lim, sizeof(lim), "%llu", (unsigned long long)limit);
	return set(sp, "VSHARE_MEM_LIMIT", lim);
}

static int set_fw_defaults(spank_t sp)
{
	char buf[256];

	for (size_t i = 0; i < sizeof(fw_defaults) / sizeof(fw_defaults[0]); i++) {
		if (job_env(sp, fw_defaults[i].name, buf, sizeof(buf)) ||
		    (fw_defaults[i].alias[0] &&
		     job_env(sp, fw_defaults[i].alias, buf, sizeof(buf))))
			continue;
		if (set(sp, fw_defaults[i].name, fw_defaults[i].value) != 0)
			return -1;
	}
	return 0;
}

/* LD_PRELOAD last: nothing above needs it, and a failure before leaves the
 * task unshared rather than half configured. */
static int set_preload(spank_t sp)
{
	char cur[VSP_PRELOAD_MAX], out[VSP_PRELOAD_MAX];

	if (vsp_preload(job_env(sp, "LD_PRELOAD", cur, sizeof(cur)), conf.shim,
			out, sizeof(out)) != 0) {
		slurm_error("vshare: LD_PRELOAD too long to add %s", conf.shim);
		return -1;
	}
	return set(sp, "LD_PRELOAD", out);
}

static int register_options(spank_t sp)
{
	for (struct spank_option *o = options; o->name != NULL; o++)
		if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
			slurm_error("vshare: cannot register --%s", o->name);
			return -1;
		}
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	char err[256];
	enum spank_context ctx = spank_context();

	if ((ctx == S_CTX_LOCAL || ctx == S_CTX_REMOTE ||
	     ctx == S_CTX_ALLOCATOR) && register_options(sp) != 0)
		return -1;
	if (ctx != S_CTX_REMOTE)
		return 0;
	if (vsp_conf_parse(&conf, ac, av, err, sizeof(err)) != 0) {
		slurm_error("vshare: plugstack.conf: %s", err);
		return -1;
	}
	if (access(conf.shim, R_OK) != 0)
		slurm_error("vshare: %s is not readable: tasks will fail to "
			    "preload it", conf.shim);
	return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (!spank_remote(sp))
		return 0;
	if (!wanted(sp)) {
		if (req.cls != VSP_CLASS_NONE || req.mem_asked)
			slurm_info("vshare: --vshare-class and --vshare-mem "
				   "ignored: the plugin does not take this "
				   "step (steps=)");
		return 0;
	}
	if (set(sp, "VSHARE_SOCKET", conf.socket) != 0 || set_label(sp) != 0 ||
	    set_limit(sp) != 0 ||
	    (req.cls != VSP_CLASS_NONE &&
	     set(sp, "VSHARE_CLASS", vsp_class_name(req.cls)) != 0) ||
	    (conf.require_scheduler &&
	     set(sp, "VSHARE_REQUIRE_SCHEDULER", "1") != 0) ||
	    (conf.framework_defaults && set_fw_defaults(sp) != 0))
		return -1;
	return set_preload(sp);
}
