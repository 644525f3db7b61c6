/*
 * The metrics of named clients: for each label that an admin named
 * (VS_MSG_SET_NAME, the Kubernetes device plugin's pods), how many
 * clients carry it, how many of them hold a GPU now, and what they use
 * (summed over their GPUs: device memory and SM utilisation as NVML
 * reports them per process, managed footprint, and the busy and idle
 * time they held, as their shims reported it). Only named
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
	uint64_t mem, managed, sm, busy, idle;
	int nvml, sm_seen;
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
		v[n] = (struct named){ ci.label, name, 1, 0, 0, 0, 0, 0, 0, 0, 0 };
		for (size_t i = 0; sched_client_gpu(s, c, i, &mi) == 0; i++) {
			holds |= mi.state == SCHED_ST_HOLDING;
			v[n].managed += mi.managed;
			v[n].busy += mi.busy_ms;
			v[n].idle += mi.idle_ms;
			v[n].nvml |= mi.use_known;
			v[n].mem += mi.use_known ? mi.dev_mem : 0;
			if (mi.use_known && mi.sm_pct >= 0) {
				v[n].sm += (uint64_t)mi.sm_pct;
				v[n].sm_seen = 1;
			}
		}
		v[n++].holding = holds;
	}
	qsort(v, n, sizeof(*v), by_label);
	for (size_t i = 0; i < n; i++) {
		if (m > 0 && strcmp(v[m - 1].label, v[i].label) == 0) {
			struct named *e = &v[m - 1];

			e->clients++;
			e->holding += v[i].holding;
			e->mem += v[i].mem;
			e->managed += v[i].managed;
			e->sm += v[i].sm;
			e->busy += v[i].busy;
			e->idle += v[i].idle;
			e->nvml |= v[i].nvml;
			e->sm_seen |= v[i].sm_seen;
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

/* A sample of value / per (1, 100 or 1000), written exactly. */
static void series_of(FILE *f, const char *family, const struct named *e,
		      uint64_t value, uint64_t per)
{
	fprintf(f, "%s{name=\"", family);
	label_value(f, e->name);
	fputs("\",label=\"", f);
	label_value(f, e->label);
	if (per == 1)
		fprintf(f, "\"} %llu\n", (unsigned long long)value);
	else
		fprintf(f, "\"} %llu.%0*llu\n", (unsigned long long)(value / per),
			per == 100 ? 2 : 3, (unsigned long long)(value % per));
}

static void series(FILE *f, const char *family, const struct named *e,
		   uint64_t value)
{
	series_of(f, family, e, value, 1);
}

/* What the named clients use (the header comment above). */
static void use_series(FILE *f, const struct named *v, long n)
{
	fputs("# HELP vshare_named_gpu_memory_bytes Device memory the named "
	      "clients use, as NVML reports it per process, summed over "
	      "their GPUs.\n# TYPE vshare_named_gpu_memory_bytes gauge\n", f);
	for (long i = 0; i < n; i++)
		if (v[i].nvml)
			series(f, "vshare_named_gpu_memory_bytes", &v[i],
			       v[i].mem);
	fputs("# HELP vshare_named_managed_bytes Managed memory of the named "
	      "clients (their reported footprints), summed over their "
	      "GPUs.\n# TYPE vshare_named_managed_bytes gauge\n", f);
	for (long i = 0; i < n; i++)
		series(f, "vshare_named_managed_bytes", &v[i], v[i].managed);
	fputs("# HELP vshare_named_sm_utilization_ratio SM utilisation of the "
	      "named clients from NVML's per-process samples, summed over "
	      "their processes and GPUs (1: one whole GPU).\n"
	      "# TYPE vshare_named_sm_utilization_ratio gauge\n", f);
	for (long i = 0; i < n; i++)
		if (v[i].sm_seen)
			series_of(f, "vshare_named_sm_utilization_ratio", &v[i],
				  v[i].sm, 100);
	fputs("# HELP vshare_named_busy_seconds GPU time the named clients now "
	      "connected held busy, as their shims reported it (it falls when "
	      "a client leaves).\n# TYPE vshare_named_busy_seconds gauge\n", f);
	for (long i = 0; i < n; i++)
		series_of(f, "vshare_named_busy_seconds", &v[i], v[i].busy, 1000);
	fputs("# HELP vshare_named_idle_held_seconds GPU time the named clients "
	      "now connected held idle, as their shims reported it.\n"
	      "# TYPE vshare_named_idle_held_seconds gauge\n", f);
	for (long i = 0; i < n; i++)
		series_of(f, "vshare_named_idle_held_seconds", &v[i], v[i].idle,
			  1000);
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
	use_series(f, v, n);
	free(v);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
