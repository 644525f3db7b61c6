/*
 * The gate's VSHARE_* settings, read once at gate_init: whether it gates
 * at all and how waiters spin. The scheduler client reads its own
 * (client_conf.c). A bad value is logged and the default used
 * (shim_env.c); docs/gate.md lists them all.
 */
#include <string.h>

#include "gate_int.h"
#include "log.h"
#include "shim_env.h"
#include "shim_node.h"

#define GATE_SPIN_US_DEFAULT  200u
#define GATE_SPIN_MIN_CPUS    4

void gate_conf_read(struct gate_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->disabled = shim_env_bool("VSHARE_DISABLE", 0);
	/* Where the admin configured the node (shim_node.h), sharing is
	 * theirs to decide: a user's variable must not turn it off. */
	if (c->disabled && shim_node.loaded) {
		log_warn("VSHARE_DISABLE is ignored: %s configures this node",
			 VSHARE_CLIENT_CONF);
		c->disabled = 0;
	}
	/* Spinning pays only where the spinners leave CPUs to those they
	 * wait for (the waiter spins, the client thread polls, the scheduler
	 * answers): by default it is off below GATE_SPIN_MIN_CPUS usable CPUs
	 * (and, gate_spin_ok, while the CPUs are busy). A VSHARE_SPIN_US given
	 * explicitly applies as it is. */
	c->spin_ns = shim_env_u64("VSHARE_SPIN_US", GATE_SPIN_US_DEFAULT, 0,
				  10000u) * 1000u;
	c->spin_forced = shim_env_str("VSHARE_SPIN_US", NULL) != NULL;
	c->cpus = shim_usable_cpus();
	if (!c->spin_forced && c->cpus < GATE_SPIN_MIN_CPUS)
		c->spin_ns = 0;
}
