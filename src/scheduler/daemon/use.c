/*
 * The driver's view of what each client uses: device memory and SM
 * utilisation per process (nvml_procs), given to the policy by GPU
 * (sched_gpu_use), which matches processes to clients by the pid of
 * their socket's credentials. NVML is asked only when someone reads the
 * figures (a status or a metrics rendering), at most once per
 * USE_REFRESH_MS, and only about GPUs that NVML knows. The pids are the
 * daemon's view of its peers: NVML reports the host's, so the figures
 * match where the daemon runs in the host's pid namespace.
 */
#include "nvml.h"
#include "srv.h"

/* Processes of one GPU that are matched; more are left out. */
#define USE_PROCS_MAX 1024u

void use_refresh(struct srv *s)
{
	static struct sched_proc_use procs[USE_PROCS_MAX];
	uint64_t now = uv_now(s->loop);

	if (!s->nvml || (s->use_at != 0 && now >= s->use_at &&
			 now - s->use_at < USE_REFRESH_MS))
		return;
	s->use_at = now ? now : 1;
	for (size_t i = 0; i < sched_gpu_count(s->sched); i++) {
		struct sched_gpu_info gi;
		long n;

		sched_gpu_info(sched_gpu_at(s->sched, i), &gi);
		if (!gi.index_nvml)
			continue;
		n = nvml_procs(gi.uuid, procs, USE_PROCS_MAX);
		sched_gpu_use(s->sched, gi.uuid, n >= 0, procs,
			      n > 0 ? (size_t)n : 0);
	}
}
