/*
 * The metrics of named clients: for each label that an admin named
 * (VS_MSG_SET_NAME, the Kubernetes device plugin's pods), how many
 * clients carry it and how many of them hold a GPU now. Only named
 * labels have series, so their number is bounded by NAMES_MAX whatever
 * the clients call themselves.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

struct named {
	const char *label, *name;
	uint64_t clients, holding;
};

static int by_label(const void *a, const void *b)
{
	return strcmp(((const struct named *)a)->label,
		      ((const struct named *)b)->label);
}

/* One entry per named client, then merged by label; the count, or -1
 * when out of memory. */
static long collect(const struct sched *s, const struct names *names,
		    struct named **out)
{
	size_t n = 0, m = 0;
	struct named *v = malloc((sched_client_count(s) + 1) * sizeof(*v));
	const struct sched_client *c;

	if (v == NULL)
		return -1;
	for (c = sched_client_first(s); c; c = sched_client_next(s, c)) {
		struct sched_client_info ci;
		struct sched_member_info mi;
		const char *name;
		uint64_t holds = 0;

		sched_client_info(c, &ci);
		if ((name = names_find(names, ci.label)) == NULL)
			continue;
		for (size_t i = 0; sched_client_gpu(s, c, i, &mi) == 0; i++)
			holds |= mi.state == SCHED_ST_HOLDING;
		v[n++] = (struct named){ ci.label, name, 1, holds };
	}
	qsort(v, n, sizeof(*v), by_label);
	for (size_t i = 0; i < n; i++) {
		if (m > 0 && strcmp(v[m - 1].label, v[i].label) == 0) {
			v[m - 1].clients++;
			v[m - 1].holding += v[i].holding;
		} else {
			v[m++] = v[i];
		}
	}
	*out = v;
	return (long)m;
}

/* A label value as the format wants it: backslash, double quote and
 * line feed escaped. (Its own copy of metrics.c's: this file is called
 * by metrics.c and calls nothing back, so no circle joins them.) */
static void label_value(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

static void series(FILE *f, const char *family, const struct named *e,
		   uint64_t value)
{
	fprintf(f, "%s{name=\"", family);
	label_value(f, e->name);
	fputs("\",label=\"", f);
	label_value(f, e->label);
	fprintf(f, "\"} %llu\n", (unsigned long long)value);
}

char *metrics_names(const struct sched *s, const struct names *names,
		    size_t *len)
{
	struct named *v = NULL;
	long n = names ? collect(s, names, &v) : 0;
	char *text = NULL;
	FILE *f;

	if (n < 0 || (f = open_memstream(&text, len)) == NULL) {
		free(v);
		return NULL;
	}
	fputs("# HELP vshare_named_clients Clients whose label an admin named "
	      "(vsharectl name; a pod's namespace/pod/container under "
	      "Kubernetes), by name and label.\n"
	      "# TYPE vshare_named_clients gauge\n", f);
	for (long i = 0; i < n; i++)
		series(f, "vshare_named_clients", &v[i], v[i].clients);
	fputs("# HELP vshare_named_holding Of those, the clients that hold a "
	      "GPU now.\n# TYPE vshare_named_holding gauge\n", f);
	for (long i = 0; i < n; i++)
		series(f, "vshare_named_holding", &v[i], v[i].holding);
	free(v);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
