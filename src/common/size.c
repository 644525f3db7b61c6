#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "size.h"

int vs_parse_size(const char *s, unsigned flags, uint64_t *out)
{
	char *end;
	double v, mult = 1;
	size_t digits = strspn(s, "0123456789.");

	/* strtod would also take "0x10", "1e3", "inf" and "nan". */
	if (*s < '0' || *s > '9' || (s[digits] && strchr("xXeEpP", s[digits])))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'K': case 'k': mult = 1024.0; end++; break;
	case 'M': case 'm': mult = 1024.0 * 1024; end++; break;
	case 'G': case 'g': mult = 1024.0 * 1024 * 1024; end++; break;
	case 'T': case 't': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
	default: break;
	}
	if (mult > 1 && *end == 'i')
		end++;
	if (*end == 'B' || (*end == 'b' && (flags & VS_SIZE_LOWER_B)))
		end++;
	if (*end != '\0')
		return -1;
	v *= mult;
	if (!(v >= 0) || v >= 18446744073709551616.0)
		return -1;
	if ((flags & VS_SIZE_NEED_UNIT) && *(end - 1) >= '0' &&
	    *(end - 1) <= '9' && v > 0 && v < VS_SIZE_MIN_PLAIN)
		return -2;
	/* A fraction of a byte is no size ("1.5B", "1048576.5"). */
	if (mult == 1 && memchr(s, '.', digits) != NULL)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

char *vs_size_error(char *out, size_t n, const char *text, int rc)
{
	if (rc == -2 && strchr(text, '.') != NULL)
		snprintf(out, n, "'%.64s': a size needs a unit (K, M, G, T); a "
			 "bare number below 1 MiB is refused, write %.64sG",
			 text, text);
	else if (rc == -2)
		snprintf(out, n, "'%.64s': a size needs a unit (K, M, G, T); a "
			 "bare number below 1 MiB is refused, write %.64sG or "
			 "%.64sB", text, text, text);
	else
		snprintf(out, n, "'%.64s': not a size (like 8G, 512M or 1.5T; "
			 "bytes like 4096B)", text);
	return out;
}
