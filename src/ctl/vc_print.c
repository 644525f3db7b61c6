/*
 * The daemon's status document, printed for people.
 */
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "vc.h"

static double num(const cJSON *o, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(it) ? it->valuedouble : 0;
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(it) ? it->valuestring : "?";
}

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

/* "3 train (pid 1234), 5 (pid 99)" for a list of client ids; a client
 * left out of a very long status shows as its id alone. */
static void print_ids(const char *title, const cJSON *ids, const cJSON *clients)
{
	const cJSON *id, *c, *found;
	int first = 1;

	printf("  %-8s", title);
	cJSON_ArrayForEach(id, ids) {
		found = NULL;
		cJSON_ArrayForEach(c, clients)
			if (num(c, "id") == id->valuedouble)
				found = c;
		printf("%s%.0f", first ? "" : ", ", id->valuedouble);
		if (found && str(found, "label")[0])
			printf(" %s", str(found, "label"));
		if (found)
			printf(" (pid %.0f)", num(found, "pid"));
		first = 0;
	}
	printf("%s\n", first ? "-" : "");
}

static void print_gpu(const cJSON *g, const cJSON *clients)
{
	char cap[32], fp[32], held[32];

	fmt_bytes(num(g, "capacity"), cap, sizeof(cap));
	fmt_bytes(num(g, "footprint"), fp, sizeof(fp));
	fmt_bytes(num(g, "held"), held, sizeof(held));
	printf("GPU %.0f  %s\n", num(g, "index"), str(g, "uuid"));
	printf("  mode %s, quantum %.0f s, capacity %s, footprint %s "
	       "(holders use %s)%s\n", str(g, "mode"), num(g, "tq_s"), cap, fp,
	       held, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g,
			"oversubscribed")) ? ", oversubscribed" : "");
	print_ids("holders", cJSON_GetObjectItemCaseSensitive(g, "holders"),
		  clients);
	print_ids("queue", cJSON_GetObjectItemCaseSensitive(g, "queue"),
		  clients);
}

static const char *gpu_index(const cJSON *gpus, const char *uuid, char *buf,
			     size_t n)
{
	const cJSON *g;

	cJSON_ArrayForEach(g, gpus)
		if (strcmp(str(g, "uuid"), uuid) == 0) {
			snprintf(buf, n, "%.0f", num(g, "index"));
			return buf;
		}
	return "?";
}

/* The user's name when this machine knows the uid, else the number;
 * at most 8 characters, as ps does. */
static void fmt_user(double uid, char *out, size_t n)
{
	const struct passwd *pw = getpwuid((uid_t)uid);

	if (pw != NULL && strlen(pw->pw_name) <= 8)
		snprintf(out, n, "%s", pw->pw_name);
	else
		snprintf(out, n, "%.0f", uid);
}

/* A label cut to the column shows that it was cut ("~" at the end). */
static void fmt_label(const char *label, char *out, size_t n)
{
	if (label[0] == '\0')
		snprintf(out, n, "-");
	else if (strlen(label) > 16) {
		int k = 15;

		/* Cut between characters, not inside a UTF-8 sequence. */
		while (k > 0 && ((unsigned char)label[k] & 0xc0) == 0x80)
			k--;
		snprintf(out, n, "%.*s~", k, label);
	} else
		snprintf(out, n, "%s", label);
}

static void print_client(const cJSON *c, const cJSON *gpus)
{
	const cJSON *m;
	char mg[32], pn[32], held[32], waited[32], idx[16], user[16], lb[20];

	fmt_user(num(c, "uid"), user, sizeof(user));
	fmt_label(str(c, "label"), lb, sizeof(lb));
	if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(c, "gpus")) == 0)
		printf("%5.0f %8.0f %-8s  %-16s %3s\n", num(c, "id"),
		       num(c, "pid"), user, lb, "-");
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(c, "gpus")) {
		fmt_bytes(num(m, "managed"), mg, sizeof(mg));
		fmt_bytes(num(m, "pinned"), pn, sizeof(pn));
		fmt_ms(num(m, "held_ms"), held, sizeof(held));
		fmt_ms(num(m, "waited_ms"), waited, sizeof(waited));
		printf("%5.0f %8.0f %-8s  %-16s %3s  %10s %10s  %-8s %9s %9s\n",
		       num(c, "id"), num(c, "pid"), user, lb,
		       gpu_index(gpus, str(m, "uuid"), idx, sizeof(idx)),
		       mg, pn, str(m, "state"),
		       strcmp(str(m, "state"), "holding") ? "-" : held,
		       strcmp(str(m, "state"), "waiting") ? "-" : waited);
	}
}

int vc_print_status(const char *json)
{
	cJSON *root = cJSON_Parse(json);
	const cJSON *gpus, *clients, *it;

	if (root == NULL) {
		fprintf(stderr, "vsharectl: the status is not valid JSON\n");
		return VC_EXIT_ERROR;
	}
	gpus = cJSON_GetObjectItemCaseSensitive(root, "gpus");
	clients = cJSON_GetObjectItemCaseSensitive(root, "clients");
	if (cJSON_GetArraySize(gpus) == 0)
		printf("no GPUs attached yet\n");
	cJSON_ArrayForEach(it, gpus)
		print_gpu(it, clients);
	printf("\n");
	if (cJSON_GetArraySize(clients) == 0) {
		printf("no clients\n");
	} else {
		printf("%5s %8s %-8s  %-16s %3s  %10s %10s  %-8s %9s %9s\n",
		       "ID", "PID", "USER", "LABEL", "GPU", "MANAGED", "PINNED",
		       "STATE", "HELD", "WAITED");
		cJSON_ArrayForEach(it, clients)
			print_client(it, gpus);
	}
	if (num(root, "clients_omitted") > 0)
		printf("... and %.0f more clients (the status is too long to "
		       "show them all)\n", num(root, "clients_omitted"));
	cJSON_Delete(root);
	return VC_EXIT_OK;
}
