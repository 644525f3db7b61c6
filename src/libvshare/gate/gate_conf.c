/*
 * The gate's VSHARE_* settings, read once at gate_init: whether it gates
 * at all and how waiters spin. The scheduler client reads its own
 * (client_conf.c). The table of every setting, its default and range is
 * util/shim_settings.def; a bad value is logged there and the default
 * used.
 */
#include <string.h>

#include "gate_int.h"
#include "log.h"
#include "shim_env.h"
#include "shim_node.h"

void gate_conf_read(struct gate_conf *c)
{
	struct shim_set_val spin = shim_setting(SET_SPIN_US);

	memset(c, 0, sizeof(*c));
	c->disabled = (int)shim_set_u64(SET_DISABLE);
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
	c->spin_ns = spin.u * 1000u;
	c->spin_forced = spin.given;
	c->cpus = shim_usable_cpus();
	c->pace_ns = shim_set_u64(SET_PACE_US) * 1000u;
	c->prio_pace_ns = shim_set_u64(SET_PRIO_PACE_US) * 1000u;
	/* The shorter bound wins: one asked for below the default of the
	 * other applies beside active interactive work too. */
	if (c->pace_ns != 0 && c->pace_ns < c->prio_pace_ns)
		c->prio_pace_ns = c->pace_ns;
	if (!c->spin_forced && c->cpus < GATE_SPIN_MIN_CPUS)
		c->spin_ns = 0;
}
