#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"
#include "shim_env.h"
#include "size.h"

static uint64_t env_size(const char *name, uint64_t dflt, unsigned flags)
{
	const char *s = secure_getenv(name);
	uint64_t v;
	int rc;

	if (s == NULL || *s == '\0')
		return dflt;
	rc = vs_parse_size(s, VS_SIZE_LOWER_B | flags, &v);
	if (rc == -2) {
		log_warn("%s=\"%s\" has no unit and is below 1 MiB: add one "
			 "(like %sG or %sM; bytes as %sB); using the default",
			 name, s, s, s, s);
		return dflt;
	}
	if (rc != 0) {
		log_warn("%s=\"%s\" is not a size (like 8G or 512M); using the default",
			 name, s);
		return dflt;
	}
	return v;
}

uint64_t shim_env_size(const char *name, uint64_t dflt)
{
	return env_size(name, dflt, 0);
}

uint64_t shim_env_mem(const char *name, uint64_t dflt)
{
	return env_size(name, dflt, VS_SIZE_NEED_UNIT);
}

uint64_t shim_env_u64(const char *name, uint64_t dflt, uint64_t min, uint64_t max)
{
	const char *s = secure_getenv(name);
	char *end;
	unsigned long long v;

	if (s == NULL || *s == '\0')
		return dflt;
	errno = 0;
	v = strtoull(s, &end, 10);
	/* Digits only: strtoull alone would take leading white space and a
	 * sign but refuse trailing white space. */
	if (end == s || *end != '\0' || errno != 0 || s[0] < '0' || s[0] > '9' ||
	    v < min || v > max) {
		log_warn("%s=\"%s\" is not a number in %llu..%llu; using %llu",
			 name, s, (unsigned long long)min,
			 (unsigned long long)max, (unsigned long long)dflt);
		return dflt;
	}
	return v;
}

int shim_env_bool(const char *name, int dflt)
{
	const char *s = secure_getenv(name);

	if (s == NULL || *s == '\0')
		return dflt;
	if (!strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") ||
	    !strcasecmp(s, "on"))
		return 1;
	if (!strcmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no") ||
	    !strcasecmp(s, "off"))
		return 0;
	log_warn("%s=\"%s\" is not a boolean (1/0, true/false); using %d",
		 name, s, dflt);
	return dflt;
}

const char *shim_env_str(const char *name, const char *dflt)
{
	const char *s = secure_getenv(name);

	return (s == NULL || *s == '\0') ? dflt : s;
}

int shim_usable_cpus(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return (int)sysconf(_SC_NPROCESSORS_ONLN);
	n = CPU_COUNT(&set);
	return n > 0 ? n : 1;
}
