/*
 * The daemon's status document, read through its key tables
 * (vshare/status.h) and printed for people.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "label.h"
#include "status_json.h"
#include "vc.h"

static void fmt_bytes(double b, char *out, size_t n)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int u = 0;

	while (b >= 1024 && u < 5) {
		b /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(out, n, "%.0f B", b);
	else
		snprintf(out, n, "%.1f %s", b, unit[u]);
}

static void fmt_ms(double ms, char *out, size_t n)
{
	if (ms < 1000)
		snprintf(out, n, "%.0f ms", ms);
	else if (ms < 60000)
		snprintf(out, n, "%.1f s", ms / 1000);
	else if (ms < 3600000)
		snprintf(out, n, "%dm%02ds", (int)(ms / 60000),
			 (int)(ms / 1000) % 60);
	else
		snprintf(out, n, "%dh%02dm", (int)(ms / 3600000),
			 (int)(ms / 60000) % 60);
}

/* A client of the document, read through its table. */
struct client {
	struct vs_st_val v[VS_SC__N];
};

/* The document, read through its tables, and the table's widths. */
struct doc {
	struct vs_st_val v[VS_SD__N];
	struct client   *clients;
	size_t           n_clients;
	int              wide;       /* whole labels and user names */
	size_t           label_cols; /* of the LABEL column */
	int              user_cols;  /* of the USER column */
};

/* What the tables call a client: the name an admin gave its label (a
 * pod's namespace/pod/container), else its label. A daemon without
 * names reads as "?" (the key missing). */
static const char *shown(const struct client *c)
{
	const char *name = c->v[VS_SC_name].str;

	return name[0] && strcmp(name, "?") != 0 ? name : c->v[VS_SC_label].str;
}

static const struct client *find_client(const struct doc *d, double id)
{
	for (size_t i = 0; i < d->n_clients; i++)
		if (d->clients[i].v[VS_SC_id].num == id)
			return &d->clients[i];
	return NULL;
}

/* "3 train (pid 1234), 5 (pid 99)" for a list of client ids; a client
 * left out of a very long status shows as its id alone. */
static void print_ids(const char *title, const cJSON *ids,
		      const struct doc *d)
{
	const cJSON *id;
	const struct client *c;
	int first = 1;

	printf("  %-8s", title);
	cJSON_ArrayForEach(id, ids) {
		c = find_client(d, id->valuedouble);
		printf("%s%.0f", first ? "" : ", ", id->valuedouble);
		if (c && shown(c)[0])
			printf(" %s", shown(c));
		if (c)
			printf(" (pid %.0f)", c->v[VS_SC_pid].num);
		first = 0;
	}
	printf("%s\n", first ? "-" : "");
}

/* The fair share's settings of a GPU ("?" from a daemon older than
 * document version 2, which has none). */
static void print_policy(const struct vs_st_val *g)
{
	char slice[32], min[32], swap[32], cost[32];

	if (strcmp(g[VS_SG_policy].str, "?") == 0)
		return;
	fmt_ms(g[VS_SG_slice_ms].num, slice, sizeof(slice));
	fmt_ms(g[VS_SG_min_slice_ms].num, min, sizeof(min));
	fmt_ms(g[VS_SG_swap_us].num / 1000, swap, sizeof(swap));
	fmt_ms(g[VS_SG_preempt_cost_ms].num, cost, sizeof(cost));
	printf("  policy %s, slice %s", g[VS_SG_policy].str, slice);
	if (g[VS_SG_slice_ms].num > g[VS_SG_min_slice_ms].num)
		printf(" (minimum %s; longer so that preemptions, %s each%s%s, "
		       "stay within their budget)", min, cost,
		       g[VS_SG_swap_us].num > 0 ? ", and swap-ins of " : "",
		       g[VS_SG_swap_us].num > 0 ? swap : "");
	else if (g[VS_SG_swap_us].num > 0)
		printf(" (swap-ins take %s)", swap);
	printf("\n");
	/* Document version 5 on, once the class has been here. */
	if (g[VS_SG_interactive_total_pct].num > 0 &&
	    (g[VS_SG_interactive_used_pct].num > 0 ||
	     g[VS_SG_interactive_over].bool_))
		printf("  interactive class %.1f%% of %.0f%%%s\n",
		       g[VS_SG_interactive_used_pct].num,
		       g[VS_SG_interactive_total_pct].num,
		       g[VS_SG_interactive_over].bool_ ?
		       " (used: its programs run as batch here)" : "");
}

static void print_gpu(const cJSON *o, const struct doc *d)
{
	struct vs_st_val g[VS_SG__N];
	char cap[32], fp[32], held[32];

	vs_status_get(o, &vs_status_gpu, g);
	/* 0: neither configured nor reported by NVML or a client yet. */
	if (g[VS_SG_capacity].num > 0)
		fmt_bytes(g[VS_SG_capacity].num, cap, sizeof(cap));
	else
		snprintf(cap, sizeof(cap), "unknown");
	fmt_bytes(g[VS_SG_footprint].num, fp, sizeof(fp));
	fmt_bytes(g[VS_SG_held].num, held, sizeof(held));
	/* A daemon before status version 3 numbers GPUs by attach order and
	 * does not say so: its documents lack index_from. */
	printf("GPU %.0f  %s  (index: %s)\n", g[VS_SG_index].num,
	       g[VS_SG_uuid].str, strcmp(g[VS_SG_index_from].str, "?") != 0 ?
	       g[VS_SG_index_from].str : VS_STATUS_INDEX_ATTACH);
	printf("  mode %s, quantum %.0f s, capacity %s, footprint %s "
	       "(holders use %s)%s\n", g[VS_SG_mode].str, g[VS_SG_tq_s].num,
	       cap, fp, held,
	       g[VS_SG_oversubscribed].bool_ ? ", oversubscribed" : "");
	print_policy(g);
	print_ids("holders", g[VS_SG_holders].arr, d);
	print_ids("queue", g[VS_SG_queue].arr, d);
}

/* The GPU of a member, read into g; NULL when the document lacks it. */
static const struct vs_st_val *find_gpu(const struct doc *d, const char *uuid,
					struct vs_st_val g[VS_SG__N])
{
	const cJSON *o;

	cJSON_ArrayForEach(o, d->v[VS_SD_gpus].arr) {
		vs_status_get(o, &vs_status_gpu, g);
		if (strcmp(g[VS_SG_uuid].str, uuid) == 0)
			return g;
	}
	return NULL;
}

static const char *gpu_index(const struct doc *d, const char *uuid, char *buf,
			     size_t n)
{
	struct vs_st_val g[VS_SG__N];

	if (find_gpu(d, uuid, g) == NULL)
		return "?";
	snprintf(buf, n, "%.0f", g[VS_SG_index].num);
	return buf;
}

/* Why a waiter waits, in words, from its wait_why and place in line. */
static void fmt_why(const struct vs_st_val *m, const char *policy, char *out,
		    size_t n)
{
	const char *why = m[VS_SM_wait_why].str;
	double ahead = m[VS_SM_position].num - 1;

	if (strcmp(why, "behind") == 0)
		snprintf(out, n, "behind %.0f waiter%s %s", ahead,
			 ahead == 1 ? "" : "s", strcmp(policy, "fair") == 0 ?
			 "with less recent GPU time" : "that came first");
	else if (strcmp(why, "slice") == 0)
		snprintf(out, n, "next, once the holder's slice ends");
	else if (strcmp(why, "quantum") == 0)
		snprintf(out, n, "next, when the holder is idle or its "
			 "quantum ends");
	else if (strcmp(why, "release") == 0)
		snprintf(out, n, "next, the holder was asked to release");
	else if (strcmp(why, "fit") == 0)
		snprintf(out, n, "does not fit beside the holders (they "
			 "release when idle or at the quantum)");
	else if (strcmp(why, "cap") == 0)
		snprintf(out, n, "its user used its cap of the GPU's time; "
			 "it waits for the window to move");
	else
		snprintf(out, n, "reason unknown");
}

/* Under a waiting member's row: how long it waited, its place, why, a
 * rough time to its grant, and its share of recent GPU time. */
static void print_wait(const struct vs_st_val *m, const struct doc *d)
{
	struct vs_st_val gb[VS_SG__N];
	const struct vs_st_val *g = find_gpu(d, m[VS_SM_uuid].str, gb);
	char waited[32], eta[32], rec[32], urec[32], why[128];

	/* A daemon older than document version 2 says none of this. */
	if (strcmp(m[VS_SM_wait_why].str, "?") == 0 ||
	    m[VS_SM_position].num < 1)
		return;
	fmt_ms(m[VS_SM_waited_ms].num, waited, sizeof(waited));
	fmt_why(m, g ? g[VS_SG_policy].str : "?", why, sizeof(why));
	if (m[VS_SM_eta_ms].num >= 0)
		fmt_ms(m[VS_SM_eta_ms].num, eta, sizeof(eta));
	fmt_ms(m[VS_SM_recent_ms].num, rec, sizeof(rec));
	fmt_ms(m[VS_SM_user_recent_ms].num, urec, sizeof(urec));
	/* Asked to release (a preemption, a mode change), a holder lets go
	 * as soon as its work in flight is done, usually in milliseconds:
	 * the eta is then the grace it has, a bound and no estimate. */
	if (m[VS_SM_eta_ms].num >= 0 &&
	    strcmp(m[VS_SM_wait_why].str, "release") == 0)
		printf("%24swaiting %s, #%.0f in line: %s; once its work in "
		       "flight is done, %s at the latest (its grace)\n", "",
		       waited, m[VS_SM_position].num, why, eta);
	else
		printf("%24swaiting %s, #%.0f in line: %s; %s%s\n", "", waited,
		       m[VS_SM_position].num, why, m[VS_SM_eta_ms].num >= 0 ?
		       "about " : "time to grant unknown",
		       m[VS_SM_eta_ms].num >= 0 ? eta : "");
	printf("%24srecent GPU time %s (its user %s, weight %.0f)\n", "", rec,
	       urec, m[VS_SM_weight].num);
}

/* The user's name when this machine knows the uid, else the number;
 * at most 8 characters, as ps does, unless the table is wide. */
static void fmt_user(double uid, int wide, char *out, size_t n)
{
	const struct passwd *pw = getpwuid((uid_t)uid);

	if (pw != NULL && (wide || strlen(pw->pw_name) <= 8))
		snprintf(out, n, "%s", pw->pw_name);
	else
		snprintf(out, n, "%.0f", uid);
}

#define LABEL_COLS 16
/* A label's bytes (VS_LABEL_MAX) and padding to the widest (as many). */
#define LABEL_BUF  (2 * VS_LABEL_MAX + 1)
#define USER_BUF   64

/* The label column: cut to its width, then padded by characters (printf
 * pads by bytes). A wide table's column fits its longest label. */
static void fmt_label(const char *label, size_t width, char *out, size_t n)
{
	size_t cols = vs_label_fit(label, width, out, n), len;

	len = strlen(out);
	while (cols++ < width && len + 1 < n)
		out[len++] = ' ';
	out[len] = '\0';
}

/* The columns' widths: fixed, or for --wide the longest label and user
 * name among the clients. */
static void fit_columns(struct doc *d)
{
	char user[USER_BUF];
	size_t cols;
	int len;

	d->label_cols = LABEL_COLS;
	d->user_cols = 8;
	for (size_t i = 0; d->wide && i < d->n_clients; i++) {
		cols = vs_label_cols(shown(&d->clients[i]));
		if (cols > d->label_cols)
			d->label_cols = cols;
		fmt_user(d->clients[i].v[VS_SC_uid].num, 1, user, sizeof(user));
		len = (int)strlen(user);
		if (len > d->user_cols)
			d->user_cols = len;
	}
}

/* Classes and caps, where they say something: an interactive program
 * (or one that asked and was not given the class), and a capped user. */
static void print_class(const struct client *c, const struct vs_st_val *m)
{
	const char *want = c->v[VS_SC_class].str, *got = m[VS_SM_class].str;

	/* A daemon older than document version 4 says none of this. */
	if (strcmp(got, "?") == 0 || strcmp(want, "?") == 0)
		return;
	if (strcmp(want, "interactive") == 0) {
		printf("%24sclass %s%s: interactive budget used %.1f%% of "
		       "%.0f%%", "", got, strcmp(got, want) ?
		       " (asked for interactive: not allowed, or past the "
		       "budget or the class's share)" : "",
		       m[VS_SM_budget_used_pct].num, m[VS_SM_budget_pct].num);
		/* Document version 5 on: the GPU's bound on the class. */
		if (m[VS_SM_total_pct].num > 0)
			printf("; the class %.1f%% of %.0f%%",
			       m[VS_SM_total_used_pct].num,
			       m[VS_SM_total_pct].num);
		printf("\n");
	}
	if (m[VS_SM_cap_pct].num > 0)
		printf("%24scap %.0f%% of the GPU's time: used %.1f%% of the "
		       "window\n", "", m[VS_SM_cap_pct].num,
		       m[VS_SM_cap_used_pct].num);
}

/* --wide: what a member used (status version 6: an older daemon's
 * document lacks the keys, which would read as 0, so every column of
 * it shows "-"). */
static void print_use(const struct vs_st_val *m, const struct doc *d)
{
	char mem[32] = "-", sm[16] = "-", busy[32], idle[32], in[32], out[32];

	if (d->v[VS_SD_version].num < 6) {
		printf("  %10s %4s %9s %9s %10s %10s", "-", "-", "-", "-", "-",
		       "-");
		return;
	}
	if (m[VS_SM_gpu_mem].num >= 0)
		fmt_bytes(m[VS_SM_gpu_mem].num, mem, sizeof(mem));
	if (m[VS_SM_sm_pct].num >= 0)
		snprintf(sm, sizeof(sm), "%.0f%%", m[VS_SM_sm_pct].num);
	fmt_ms(m[VS_SM_busy_ms].num, busy, sizeof(busy));
	fmt_ms(m[VS_SM_idle_ms].num, idle, sizeof(idle));
	fmt_bytes(m[VS_SM_swapin_bytes].num, in, sizeof(in));
	fmt_bytes(m[VS_SM_swapout_bytes].num, out, sizeof(out));
	printf("  %10s %4s %9s %9s %10s %10s", mem, sm, busy, idle, in, out);
}

/* Under a client: it ran unshared before it connected, as it told. */
static void print_unshared(const struct client *c)
{
	const char *why = c->v[VS_SC_unshared_why].str;
	char ms[32];

	if (why[0] == '\0' || strcmp(why, "?") == 0)
		return;
	fmt_ms(c->v[VS_SC_unshared_ms].num, ms, sizeof(ms));
	printf("%24sran unshared for %s before it connected (%s)\n", "", ms,
	       strcmp(why, "absent") == 0 ? "no scheduler could be reached" :
	       strcmp(why, "lost") == 0 ? "its connection to the scheduler "
	       "ended" : why);
}

static void print_member(const struct client *c, const char *user,
			 const char *lb, const cJSON *o, const struct doc *d)
{
	struct vs_st_val m[VS_SM__N];
	char mg[32], pn[32], held[32], waited[32], idx[16];
	const char *st;

	vs_status_get(o, &vs_status_member, m);
	/* A holder whose grant was taken back is idle to the policy, but
	 * the admin needs to see that it did not let go by itself. */
	st = m[VS_SM_revoked].bool_ ? "revoked" : m[VS_SM_state].str;
	fmt_bytes(m[VS_SM_managed].num, mg, sizeof(mg));
	fmt_bytes(m[VS_SM_pinned].num, pn, sizeof(pn));
	fmt_ms(m[VS_SM_held_ms].num, held, sizeof(held));
	fmt_ms(m[VS_SM_waited_ms].num, waited, sizeof(waited));
	printf("%5.0f %8.0f %-*s  %s %3s  %10s %10s  %-8s %9s %9s",
	       c->v[VS_SC_id].num, c->v[VS_SC_pid].num, d->user_cols, user, lb,
	       gpu_index(d, m[VS_SM_uuid].str, idx, sizeof(idx)), mg, pn, st,
	       strcmp(st, VS_STATUS_HOLDING) ? "-" : held,
	       strcmp(st, VS_STATUS_WAITING) ? "-" : waited);
	if (d->wide)
		print_use(m, d);
	printf("\n");
	if (strcmp(st, VS_STATUS_WAITING) == 0)
		print_wait(m, d);
	print_class(c, m);
}

static void print_client(const struct client *c, const struct doc *d)
{
	const cJSON *m, *gpus = c->v[VS_SC_gpus].arr;
	char user[USER_BUF], lb[LABEL_BUF];

	fmt_user(c->v[VS_SC_uid].num, d->wide, user, sizeof(user));
	fmt_label(shown(c), d->label_cols, lb, sizeof(lb));
	if (cJSON_GetArraySize(gpus) == 0)
		printf("%5.0f %8.0f %-*s  %s %3s\n", c->v[VS_SC_id].num,
		       c->v[VS_SC_pid].num, d->user_cols, user, lb, "-");
	cJSON_ArrayForEach(m, gpus)
		print_member(c, user, lb, m, d);
	print_unshared(c);
}

/* --wide: the members' use summed by user and GPU, then by name (a
 * pod's namespace/pod/container) over its GPUs. */
struct sum {
	const char *key;             /* the user's or the name's text */
	char gpu[16];
	double mem, managed, sm, busy, idle;
	int nvml, sm_seen;
};

static void sum_add(struct sum *v, size_t *n, const char *key,
		    const char *gpu, const struct vs_st_val *m)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (strcmp(v[i].key, key) == 0 && strcmp(v[i].gpu, gpu) == 0)
			break;
	if (i == *n) {
		memset(&v[i], 0, sizeof(v[i]));
		v[i].key = key;
		snprintf(v[i].gpu, sizeof(v[i].gpu), "%s", gpu);
		(*n)++;
	}
	v[i].managed += m[VS_SM_managed].num;
	v[i].busy += m[VS_SM_busy_ms].num;
	v[i].idle += m[VS_SM_idle_ms].num;
	if (m[VS_SM_gpu_mem].num >= 0) {
		v[i].mem += m[VS_SM_gpu_mem].num;
		v[i].nvml = 1;
	}
	if (m[VS_SM_sm_pct].num >= 0) {
		v[i].sm += m[VS_SM_sm_pct].num;
		v[i].sm_seen = 1;
	}
}

static void print_sum_rows(const char *title, const struct sum *v, size_t n)
{
	char mem[32], mg[32], busy[32], idle[32], sm[16];

	if (n == 0)
		return;
	printf("\n%-24s %3s  %10s %10s %5s %9s %9s\n", title, "GPU", "GPU-MEM",
	       "MANAGED", "SM", "BUSY", "IDLE");
	for (size_t i = 0; i < n; i++) {
		snprintf(mem, sizeof(mem), "-");
		snprintf(sm, sizeof(sm), "-");
		if (v[i].nvml)
			fmt_bytes(v[i].mem, mem, sizeof(mem));
		if (v[i].sm_seen)
			snprintf(sm, sizeof(sm), "%.0f%%", v[i].sm);
		fmt_bytes(v[i].managed, mg, sizeof(mg));
		fmt_ms(v[i].busy, busy, sizeof(busy));
		fmt_ms(v[i].idle, idle, sizeof(idle));
		printf("%-24s %3s  %10s %10s %5s %9s %9s\n", v[i].key, v[i].gpu,
		       mem, mg, sm, busy, idle);
	}
}

static void print_sums(const struct doc *d)
{
	size_t n_members = 0, nu = 0, nn = 0;
	struct sum *users, *names;
	char (*keys)[USER_BUF];
	size_t k = 0;

	for (size_t i = 0; i < d->n_clients; i++)
		n_members += (size_t)cJSON_GetArraySize(
			d->clients[i].v[VS_SC_gpus].arr);
	users = calloc(n_members + 1, sizeof(*users));
	names = calloc(n_members + 1, sizeof(*names));
	keys = calloc(n_members + 1, sizeof(*keys));
	if (users == NULL || names == NULL || keys == NULL)
		goto out;
	for (size_t i = 0; i < d->n_clients; i++) {
		const struct client *c = &d->clients[i];
		const char *name = c->v[VS_SC_name].str;
		const cJSON *o;

		cJSON_ArrayForEach(o, c->v[VS_SC_gpus].arr) {
			struct vs_st_val m[VS_SM__N];
			char idx[16];

			vs_status_get(o, &vs_status_member, m);
			gpu_index(d, m[VS_SM_uuid].str, idx, sizeof(idx));
			fmt_user(c->v[VS_SC_uid].num, 1, keys[k], USER_BUF);
			sum_add(users, &nu, keys[k++], idx, m);
			if (name[0] && strcmp(name, "?") != 0)
				sum_add(names, &nn, name, "all", m);
		}
	}
	print_sum_rows("BY USER", users, nu);
	print_sum_rows("BY NAME (over its GPUs)", names, nn);
out:
	free(users);
	free(names);
	free(keys);
}

static void print_doc(const struct doc *d)
{
	const cJSON *it;

	if (cJSON_GetArraySize(d->v[VS_SD_gpus].arr) == 0)
		printf("no GPUs attached yet\n");
	cJSON_ArrayForEach(it, d->v[VS_SD_gpus].arr)
		print_gpu(it, d);
	printf("\n");
	if (d->n_clients == 0) {
		printf("no clients\n");
	} else {
		printf("%5s %8s %-*s  %-*s %3s  %10s %10s  %-8s %9s %9s",
		       "ID", "PID", d->user_cols, "USER", (int)d->label_cols,
		       "LABEL", "GPU", "MANAGED", "PINNED",
		       "STATE", "HELD", "WAITED");
		if (d->wide)
			printf("  %10s %4s %9s %9s %10s %10s", "GPU-MEM", "SM",
			       "BUSY", "IDLE", "SWAP-IN", "SWAP-OUT");
		printf("\n");
		for (size_t i = 0; i < d->n_clients; i++)
			print_client(&d->clients[i], d);
		/* A daemon before document version 6 has no figures to sum. */
		if (d->wide && d->v[VS_SD_version].num >= 6)
			print_sums(d);
	}
	if (d->v[VS_SD_clients_omitted].num > 0)
		printf("... and %.0f more clients (the status is too long to "
		       "show them all)\n", d->v[VS_SD_clients_omitted].num);
}

int vc_print_status(const char *json, int wide)
{
	cJSON *root = cJSON_Parse(json);
	const cJSON *it;
	struct doc d;
	size_t n;

	if (root == NULL) {
		fprintf(stderr, "vsharectl: the status is not valid JSON\n");
		return VC_EXIT_ERROR;
	}
	memset(&d, 0, sizeof(d));
	d.wide = wide;
	vs_status_get(root, &vs_status_doc, d.v);
	n = (size_t)cJSON_GetArraySize(d.v[VS_SD_clients].arr);
	d.clients = n ? calloc(n, sizeof(*d.clients)) : NULL;
	if (n > 0 && d.clients == NULL) {
		fprintf(stderr, "vsharectl: out of memory\n");
		cJSON_Delete(root);
		return VC_EXIT_ERROR;
	}
	cJSON_ArrayForEach(it, d.v[VS_SD_clients].arr)
		vs_status_get(it, &vs_status_client, d.clients[d.n_clients++].v);
	fit_columns(&d);
	print_doc(&d);
	free(d.clients);
	cJSON_Delete(root);
	return VC_EXIT_OK;
}
