/*
 * The gate's VSHARE_* settings, read once at gate_init. A bad value is
 * logged and the default used (shim_env.c); docs/gate.md lists them all.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gate_int.h"
#include "label.h"
#include "log.h"
#include "shim_env.h"

#define GATE_IDLE_MS_DEFAULT  100u
#define GATE_FP_STEP_DEFAULT  (64ull << 20)
#define GATE_SPIN_US_DEFAULT  200u
#define GATE_SPIN_MIN_CPUS    4

/* The program's name for the scheduler's status: its comm, which is what
 * ps shows and is set before any constructor runs. */
static void default_label(char *out, size_t n)
{
	FILE *f = fopen("/proc/self/comm", "re");
	size_t len = 0;

	out[0] = '\0';
	if (f != NULL) {
		if (fgets(out, (int)n, f) == NULL)
			out[0] = '\0';
		fclose(f);
	}
	len = strcspn(out, "\n");
	out[len] = '\0';
	if (len == 0)
		snprintf(out, n, "%s", program_invocation_short_name);
}

/* CPUs this process may run on (its affinity mask), at least 1. */
static int usable_cpus(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return (int)sysconf(_SC_NPROCESSORS_ONLN);
	n = CPU_COUNT(&set);
	return n > 0 ? n : 1;
}

void gate_conf_read(struct gate_conf *c)
{
	const char *sock = shim_env_str("VSHARE_SOCKET", VS_DEFAULT_SOCKET);
	const char *label = shim_env_str("VSHARE_LABEL", NULL);
	const char *swap = shim_env_str("VSHARE_SWAP_OUT", "lazy");

	memset(c, 0, sizeof(*c));
	if (strlen(sock) >= sizeof(c->socket_path)) {
		log_warn("VSHARE_SOCKET is longer than a Unix socket path may be; "
			 "using %s", VS_DEFAULT_SOCKET);
		sock = VS_DEFAULT_SOCKET;
	}
	snprintf(c->socket_path, sizeof(c->socket_path), "%s", sock);
	if (label != NULL)
		snprintf(c->label, VS_LABEL_MAX, "%s", label);
	else
		default_label(c->label, VS_LABEL_MAX);
	/* The wire label allows UTF-8 text without control characters; the
	 * cut above may have split a character. */
	vs_label_clean(c->label);
	c->idle_ms = shim_env_u64("VSHARE_IDLE_MS", GATE_IDLE_MS_DEFAULT, 0,
				  3600u * 1000u);
	if (strcmp(swap, "eager") == 0) {
		c->swap_eager = 1;
	} else if (strcmp(swap, "lazy") != 0) {
		log_warn("VSHARE_SWAP_OUT=\"%s\" is not lazy or eager; using lazy",
			 swap);
	}
	c->require_sched = shim_env_bool("VSHARE_REQUIRE_SCHEDULER", 0);
	c->disabled = shim_env_bool("VSHARE_DISABLE", 0);
	c->footprint_step = shim_env_size("VSHARE_FOOTPRINT_STEP",
					  GATE_FP_STEP_DEFAULT);
	/* Spinning pays only where the spinners leave CPUs to those they
	 * wait for (the waiter spins, the client thread polls, the scheduler
	 * answers): by default it is off below GATE_SPIN_MIN_CPUS usable CPUs
	 * (and, gate_spin_ok, while the CPUs are busy). A VSHARE_SPIN_US given
	 * explicitly applies as it is. */
	c->spin_ns = shim_env_u64("VSHARE_SPIN_US", GATE_SPIN_US_DEFAULT, 0,
				  10000u) * 1000u;
	c->spin_forced = shim_env_str("VSHARE_SPIN_US", NULL) != NULL;
	c->cpus = usable_cpus();
	if (!c->spin_forced && c->cpus < GATE_SPIN_MIN_CPUS)
		c->spin_ns = 0;
}
