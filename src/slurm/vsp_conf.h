/*
 * The Slurm plugin's decisions, apart from Slurm: its plugstack.conf
 * options, the memory limit of a step's shards, the label, and the merge of
 * the shim into a user's LD_PRELOAD. Plain functions of their arguments, so
 * the unit tests need no Slurm (tests/unit/test_vsp_conf.c).
 */
#ifndef VSHARE_VSP_CONF_H
#define VSHARE_VSP_CONF_H

#include <stddef.h>
#include <stdint.h>

#define VSP_PATH_MAX 1024
#define VSP_PRELOAD_MAX 4096
#define VSP_SHIM_NAME "libvshare.so"

/* The options as plugstack.conf takes them, KEY=VALUE after the plugin's
 * path: one list for parsing, defaults and the docs' table.
 * X(key, type, field, default, what) */
#define VSP_OPTIONS(X) \
	X(shim, VSP_T_PATH, shim, VSHARE_SHIM_PATH, \
	  "libvshare.so to preload") \
	X(socket, VSP_T_PATH, socket, VS_DEFAULT_SOCKET, \
	  "the scheduler's socket (VSHARE_SOCKET)") \
	X(shard_mem, VSP_T_SIZE, shard_mem, "0", \
	  "GPU memory per shard; a step's limit is shards x this (0: no limit)") \
	X(require_scheduler, VSP_T_BOOL, require_scheduler, "no", \
	  "yes: a step waits for the scheduler instead of running unshared") \
	X(framework_defaults, VSP_T_BOOL, framework_defaults, "yes", \
	  "set the JAX, PyTorch and TensorFlow defaults the user has not set") \
	X(steps, VSP_T_STEPS, steps, "shards", \
	  "which steps: shards (with a GPU shard), gpus (a shard or a GPU), all")

enum vsp_type { VSP_T_PATH, VSP_T_SIZE, VSP_T_BOOL, VSP_T_STEPS };

/* Which steps the plugin takes: a whole GPU is the job's alone (Slurm
 * gives no shard of an allocated GPU to another job), so by default only
 * steps with shards share. */
enum vsp_steps { VSP_STEPS_SHARDS, VSP_STEPS_GPUS, VSP_STEPS_ALL };

struct vsp_conf {
	char     shim[VSP_PATH_MAX];
	char     socket[VSP_PATH_MAX];
	uint64_t shard_mem;
	int      require_scheduler;
	int      framework_defaults;
	int      steps;               /* enum vsp_steps */
};

/* Defaults, then each "key=value" of argv. 0, or -1 with a message in
 * err. */
int vsp_conf_parse(struct vsp_conf *c, int argc, char **argv,
		   char *err, size_t errlen);

/* shards x shard_mem: 0 and *out set, or -1 when it does not fit in 64
 * bits. No shard memory configured gives 0 (no limit). */
int vsp_limit(uint64_t shards, uint64_t shard_mem, uint64_t *out);

/* The number of shards Slurm gave the step (SLURM_SHARDS_ON_NODE): 0 and
 * *out set, or -1 when the text is not a plain count. */
int vsp_shards(const char *text, uint64_t *out);

/* The limit to set when the user already has `cur` (may be NULL): the
 * lower of the two, since the environment may only lower what the admin
 * grants. 1 when `limit` must be written, 0 when cur stays. */
int vsp_limit_wins(const char *cur, uint64_t limit);

/* The srun options --vshare-class and --vshare-mem: the user's requests,
 * checked where srun parses them and again in slurmstepd, which alone
 * knows the step's shards and so the admin's limit. */
enum vsp_class { VSP_CLASS_NONE, VSP_CLASS_INTERACTIVE, VSP_CLASS_BATCH };

/* "interactive" or "batch": the class, or -1 with a message in err. */
int vsp_class_parse(const char *text, char *err, size_t errlen);

/* The value VSHARE_CLASS takes for a class other than VSP_CLASS_NONE. */
const char *vsp_class_name(int cls);

/* A size as vshare-run's --mem-limit takes it ("8G", "512mb", bytes from
 * 1 MiB, 0 for no limit): 0 and *out set, or -1 with a message in err
 * (a plain number below 1 MiB is refused: its unit was left out). */
int vsp_mem_parse(const char *text, uint64_t *out, char *err, size_t errlen);

/* What a step's VSHARE_MEM_LIMIT becomes. cap: the step's shards x
 * shard_mem, 0 when the admin sets no limit; asked: whether the user
 * gave --vshare-mem, whose value is `want`; cur: the user's own
 * VSHARE_MEM_LIMIT (NULL: unset). The option replaces cur, within the
 * cap; without it, the cap replaces a higher cur (vsp_limit_wins). */
enum { VSP_LIMIT_KEEP = 0, VSP_LIMIT_SET = 1, VSP_LIMIT_REFUSE = -1 };
int vsp_step_limit(uint64_t cap, int asked, uint64_t want, const char *cur,
		   uint64_t *out, char *err, size_t errlen);

/* Step ids with a name of their own in Slurm (slurm.h). */
#define VSP_STEP_INTERACTIVE 0xfffffffau
#define VSP_STEP_BATCH       0xfffffffbu
#define VSP_STEP_EXTERN      0xfffffffcu

#define VSP_LABEL_PREFIX "slurm:"

/* "slurm:JOB.STEP:USER", then ":" and the user's own label if there is
 * room and it is not one of ours, cut to fit a scheduler label (63
 * bytes). */
void vsp_label(char *out, size_t n, uint32_t job, uint32_t step,
	       const char *user, const char *own);

/* The user's LD_PRELOAD (NULL or empty: none) with the shim: entries keep
 * their order, the shim goes last (a sanitizer runtime or allocator the
 * user preloads must stay first), and any other libvshare.so is replaced
 * by the shim, never loaded twice. 0, or -1 when it does not fit in n. */
int vsp_preload(const char *cur, const char *shim, char *out, size_t n);

#endif
