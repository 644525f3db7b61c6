/*
 * The status document: the JSON text of a VS_MSG_REPLY to VS_MSG_STATUS.
 * vshare-scheduler builds it and vsharectl reads it, both through the key
 * tables below, so a key's name is written once. Scripts read it too
 * (vsharectl --json status), so a key is never renamed or removed; new
 * keys go at the end of their object.
 *
 * Document version history ("version" key):
 *   1  first version.
 *   2  fair share: a GPU's policy, min_slice_ms, slice_ms, swap_us and
 *      preempt_cost_ms; a
 *      member's recent_ms, user_recent_ms, weight, and for a waiter its
 *      wait_why, position and eta_ms.
 *   3  a GPU's index is the driver's (nvidia-smi's) where NVML knows the
 *      GPU; index_from says where it comes from. The top-level
 *      protocol: the protocol version the scheduler speaks.
 *   4  a client's name (vsharectl name); classes and caps: a client's
 *      class (asked for); a member's class
 *      (in force), budget_pct, budget_used_pct, cap_pct and
 *      cap_used_pct; wait_why "cap".
 *   5  the interactive class as a whole: a GPU's interactive_total_pct,
 *      interactive_used_pct and interactive_over, and each member's
 *      total_pct and total_used_pct beside its user's budget; a GPU's
 *      slice_max_ms and preempt_cost_class_ms.
 *   6  use, not only holding: a GPU's use_from; a client's unshared_ms
 *      and unshared_why; a member's gpu_mem, sm_pct, held_total_ms,
 *      busy_ms, idle_ms, swapin_bytes and swapout_bytes.
 *
 * Each table row is X(name, type, unit, meaning); the JSON key is the
 * name as written. Keys appear in the document in table order.
 */
#ifndef VSHARE_STATUS_H
#define VSHARE_STATUS_H

#include <stddef.h>

#define VS_STATUS_VERSION 6

/* The top-level object. */
#define VS_STATUS_DOC_KEYS(X)                                                \
	X(version, NUM, "", "VS_STATUS_VERSION")                             \
	X(gpus, ARRAY, "", "GPU objects, in order of first attach")          \
	X(clients, ARRAY, "", "client objects, in order of arrival")         \
	X(clients_omitted, OPTNUM, "clients",                                \
	  "clients left out so that the document fits a frame; absent when none") \
	X(protocol, OPTNUM, "",                                              \
	  "protocol version the scheduler speaks; absent before version 3")

/* One GPU, in "gpus". */
#define VS_STATUS_GPU_KEYS(X)                                                \
	X(uuid, STR, "", "the GPU's UUID as the driver prints it")           \
	X(index, NUM, "", "nvidia-smi's index (NVML's), else the order of first attach; as vsharectl --gpu takes") \
	X(mode, STR, "", "\"auto\", \"on\" or \"off\"")                      \
	X(tq_s, NUM, "s", "time quantum")                                    \
	X(capacity, NUM, "bytes", "memory that co-runners may use together, 0 while not known") \
	X(total_mem, NUM, "bytes", "memory the driver reports")              \
	X(footprint, NUM, "bytes", "footprints of every client, summed")     \
	X(held, NUM, "bytes", "footprints of the holders, summed")           \
	X(oversubscribed, BOOL, "", "footprint is larger than capacity")     \
	X(holders, ARRAY, "client ids", "clients holding the GPU")           \
	X(queue, ARRAY, "client ids", "clients waiting, first in line first") \
	X(policy, STR, "", "queue order: \"fair\" or \"fcfs\"")            \
	X(min_slice_ms, NUM, "ms", "slice a holder keeps before a fair preemption") \
	X(slice_ms, NUM, "ms", "slice in force: min_slice_ms, or longer to keep preemptions within their budget") \
	X(swap_us, NUM, "us", "average swap-in of a grant, measured by the clients; 0: none") \
	X(preempt_cost_ms, NUM, "ms", "average time a fair preemption kept its holder off the GPU; 0: none yet") \
	X(index_from, STR, "", "where index comes from: \"nvml\" (the driver's, as nvidia-smi shows) or \"attach order\" (no NVML, or NVML does not know the GPU)") \
	X(interactive_total_pct, NUM, "%", "the share of the GPU the interactive class as a whole may hold while others wait (over the half-life)") \
	X(interactive_used_pct, NUM, "%", "what every user's interactive programs held of the GPU over that window") \
	X(interactive_over, BOOL, "", "the class used its share: every program on this GPU is batch until it falls below nine tenths of it") \
	X(slice_max_ms, NUM, "ms", "the most the slice may grow to (four times min_slice_ms)") \
	X(preempt_cost_class_ms, NUM, "ms", "average time a fair preemption kept its holder off the GPU when interactive turns were in it; counted apart, not in the slice; 0: none yet") \
	X(use_from, STR, "", "where the members' gpu_mem and sm_pct come from: \"nvml\" (the driver's per-process figures) or \"none\" (no NVML, or NVML has no process list for the GPU: both are -1)")

/* One client (one connection of the shim), in "clients". */
#define VS_STATUS_CLIENT_KEYS(X)                                             \
	X(id, NUM, "", "client id, as in holders and queue")                 \
	X(pid, NUM, "", "process id, from the socket's credentials")         \
	X(uid, NUM, "", "user id, from the socket's credentials")            \
	X(gid, NUM, "", "group id, from the socket's credentials")           \
	X(label, STR, "", "the client's label, cleaned (vs_label_clean)")    \
	X(gpus, ARRAY, "", "member objects, one per GPU the client attached") \
	X(name, STR, "", "the name an admin gave its label (vsharectl name), such as a pod's namespace/pod/container; \"\" if none") \
	X(class, STR, "", "the class the program asked for: \"batch\" or \"interactive\"") \
	X(unshared_ms, NUM, "ms", "how long the program ran unshared (no scheduler) before this connection, as it told; 0: it did not") \
	X(unshared_why, STR, "", "why it ran unshared: \"absent\" (no scheduler could be reached) or \"lost\" (its connection ended); \"\" if it did not")

/* One client's use of one GPU, in a client's "gpus". */
#define VS_STATUS_MEMBER_KEYS(X)                                             \
	X(uuid, STR, "", "the GPU's UUID")                                   \
	X(managed, NUM, "bytes", "managed memory on this GPU")               \
	X(pinned, NUM, "bytes", "memory that cannot be paged out")           \
	X(state, STR, "", "\"idle\", \"waiting\", \"holding\" or \"took\" (took the GPU through the lock page, not yet adopted)")            \
	X(held_ms, NUM, "ms", "time holding, since the grant")               \
	X(waited_ms, NUM, "ms", "time waiting, since the request")           \
	X(revoked, BOOL, "", "the grant was taken from an unresponsive holder") \
	X(recent_ms, NUM, "ms", "GPU time held recently (decayed)")        \
	X(user_recent_ms, NUM, "ms", "GPU time the client's user held recently (decayed)") \
	X(weight, NUM, "", "the user's weight in the fair share")           \
	X(wait_why, STR, "", "why it waits (waiting only): \"behind\", \"slice\", \"quantum\", \"release\", \"fit\" or \"cap\"; \"\" otherwise") \
	X(position, NUM, "", "place in the queue, 1 first; 0 unless waiting") \
	X(eta_ms, NUM, "ms", "rough bound on the wait left; -1 unknown or not waiting") \
	X(class, STR, "", "the class in force on this GPU: \"interactive\" when asked for, allowed and within the budget, else \"batch\"") \
	X(budget_pct, NUM, "%", "the user's interactive budget: the share of the GPU its interactive programs may hold while others wait (half-life)") \
	X(budget_used_pct, NUM, "%", "what the user's interactive programs held of it, decayed") \
	X(cap_pct, NUM, "%", "the user's cap (max_share_pct) of the GPU's wall time; 0: none") \
	X(cap_used_pct, NUM, "%", "what the user's programs held over the cap window; 0 without a cap") \
	X(total_pct, NUM, "%", "the GPU's interactive_total_pct: the class as a whole, beside the user's budget") \
	X(total_used_pct, NUM, "%", "what the whole interactive class held of the GPU over the budget's window") \
	X(gpu_mem, NUM, "bytes", "device memory the process uses on this GPU, as NVML reports it; -1: unknown (use_from \"none\")") \
	X(sm_pct, NUM, "%", "the process's SM utilisation on this GPU over NVML's samples since the previous look (about a second); -1: unknown") \
	X(held_total_ms, NUM, "ms", "GPU time held since it attached") \
	X(busy_ms, NUM, "ms", "of that, what the shim reported busy: calls in flight, or submissions less than its idle gap apart") \
	X(idle_ms, NUM, "ms", "of that, what the shim reported idle while held (it would have released to a waiter)") \
	X(swapin_bytes, NUM, "bytes", "managed memory it prefetched to the GPU at its oversubscribed grants") \
	X(swapout_bytes, NUM, "bytes", "managed memory it prefetched to the host at its releases (eager swap-out)")

/* Values of a GPU's "use_from". */
#define VS_STATUS_USE_NVML     "nvml"
#define VS_STATUS_USE_NONE     "none"

/* Values of a GPU's "index_from". */
#define VS_STATUS_INDEX_NVML   "nvml"
#define VS_STATUS_INDEX_ATTACH "attach order"

/* Values of a member's "state". */
#define VS_STATUS_IDLE    "idle"
#define VS_STATUS_WAITING "waiting"
#define VS_STATUS_HOLDING "holding"
/* Took the GPU through the lock page; not yet adopted as the holder (the
 * scheduler does at its next decision about the GPU, or at the TOOK). */
#define VS_STATUS_TOOK    "took"

/* Key indexes: VS_SD_version, VS_SG_tq_s, VS_SC_label, VS_SM_state... */
#define VS_SD_(name, type, unit, what) VS_SD_##name,
#define VS_SG_(name, type, unit, what) VS_SG_##name,
#define VS_SC_(name, type, unit, what) VS_SC_##name,
#define VS_SM_(name, type, unit, what) VS_SM_##name,
enum { VS_STATUS_DOC_KEYS(VS_SD_) VS_SD__N };
enum { VS_STATUS_GPU_KEYS(VS_SG_) VS_SG__N };
enum { VS_STATUS_CLIENT_KEYS(VS_SC_) VS_SC__N };
enum { VS_STATUS_MEMBER_KEYS(VS_SM_) VS_SM__N };
#undef VS_SD_
#undef VS_SG_
#undef VS_SC_
#undef VS_SM_

/* JSON types of the tables. OPTNUM: a number left out when it is 0. */
#define VS_ST_NUM    1
#define VS_ST_OPTNUM 2
#define VS_ST_STR    3
#define VS_ST_BOOL   4
#define VS_ST_ARRAY  5

struct vs_status_key {
	const char *name;
	int         type;   /* VS_ST_* */
	const char *unit;   /* "" where the value has none */
	const char *what;
};

/* The four objects' tables, each of n keys. */
struct vs_status_obj {
	const struct vs_status_key *keys;
	size_t                      n;
};
extern const struct vs_status_obj vs_status_doc, vs_status_gpu,
	vs_status_client, vs_status_member;

#endif /* VSHARE_STATUS_H */
