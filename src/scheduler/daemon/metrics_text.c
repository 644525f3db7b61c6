/*
 * The text of the metrics: a growing buffer that is a string at every
 * step, and the escapes of the Prometheus text format. Below every file
 * that renders metrics; it calls none of them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

int metrics_grow(struct metrics_buf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *p;

	if (b->oom)
		return -1;
	while (cap - b->len < more + 1)
		cap *= 2;
	if (cap == b->cap)
		return 0;
	p = realloc(b->p, cap);
	if (p == NULL) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void metrics_put(struct metrics_buf *b, const char *p, size_t n)
{
	if (metrics_grow(b, n) != 0)
		return;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0'; /* a string at every step, as vsnprintf leaves it */
}

void metrics_printf(struct metrics_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || metrics_grow(b, (size_t)n) != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void metrics_put_str(struct metrics_buf *b, const char *v)
{
	metrics_put(b, v, strlen(v));
}

/* Runs of plain characters are copied whole; only the few that the
 * format escapes are written one at a time. */
static void put_escaped(struct metrics_buf *b, const char *v, int quote)
{
	const char *special = quote ? "\\\n\"" : "\\\n";

	while (*v) {
		size_t n = strcspn(v, special);

		metrics_put(b, v, n);
		v += n;
		if (*v == '\\')
			metrics_put_str(b, "\\\\");
		else if (*v == '\n')
			metrics_put_str(b, "\\n");
		else if (*v == '"')
			metrics_put_str(b, "\\\"");
		else
			break;
		v++;
	}
}

void metrics_label_value(struct metrics_buf *b, const char *v)
{
	put_escaped(b, v, 1);
}

void metrics_help_text(struct metrics_buf *b, const char *v)
{
	put_escaped(b, v, 0);
}
