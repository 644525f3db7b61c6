/*
 * Client labels: cleaning (UTF-8 and no control characters) and cutting
 * to a display width. The rule is written in label.h.
 */
#include <stdio.h>
#include <string.h>

#include "label.h"

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 if none. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	size_t len = p[0] < 0x80 ? 1 : p[0] < 0xc2 ? 0 : p[0] < 0xe0 ? 2 :
		     p[0] < 0xf0 ? 3 : p[0] < 0xf5 ? 4 : 0;

	if (len == 0 || len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	/* Overlong forms, UTF-16 surrogates, past U+10FFFF. */
	if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
	    (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
		return 0;
	return len;
}

void vs_label_clean(char *label)
{
	unsigned char *p = (unsigned char *)label;
	size_t n = strlen(label);

	while (n > 0) {
		size_t k = utf8_seq(p, n);

		if (k == 0 || p[0] < 0x20 || p[0] == 0x7f) {
			*p = '?';
			k = 1;
		}
		p += k;
		n -= k;
	}
}

/* A UTF-8 continuation byte: not the start of a character. */
static int cont(char c)
{
	return ((unsigned char)c & 0xc0) == 0x80;
}

size_t vs_label_cols(const char *label)
{
	size_t cols = 0;

	for (; *label; label++)
		cols += !cont(*label);
	return cols;
}

size_t vs_label_fit(const char *label, size_t cols, char *out, size_t n)
{
	size_t have = vs_label_cols(label), k = 0, c = 0;

	if (label[0] == '\0' || cols == 0) {
		snprintf(out, n, "%s", cols ? "-" : "");
		return cols ? 1 : 0;
	}
	if (have <= cols && strlen(label) < n) {
		snprintf(out, n, "%s", label);
		return have;
	}
	/* Keep cols - 1 characters that fit in out with "~" and the NUL. */
	while (label[k] && c < cols - 1) {
		size_t e = k + 1;

		while (cont(label[e]))
			e++;
		if (e + 2 > n)
			break;
		k = e;
		c++;
	}
	snprintf(out, n, "%.*s~", (int)k, label);
	return c + 1;
}
