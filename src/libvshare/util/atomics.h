/*
 * The shim's atomic accessors, one definition for every layer. Plain
 * A_LOAD/A_STORE are sequentially consistent: the gate's entry and its
 * drain rely on that order (gate/gate.c, gate/gate_release.c). A_LOAD_RLX
 * is for flags and counters whose readers need no order with anything
 * else.
 */
#ifndef VSHARE_ATOMICS_H
#define VSHARE_ATOMICS_H

#define A_LOAD(p)      __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define A_LOAD_RLX(p)  __atomic_load_n((p), __ATOMIC_RELAXED)
#define A_STORE(p, v)  __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define A_XCHG(p, v)   __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)

#endif
