/*
 * The shim's VSHARE_* settings: one table (shim_settings.def) of every
 * variable with its type, default, range and meaning, and one reader.
 * Each layer reads its own settings once, at its init, through
 * shim_setting. A bad value is reported and the default used: the shim
 * never stops the host program over its own configuration. The table
 * and these functions are hidden (the shim exports only CUDA's symbols).
 */
#ifndef VSHARE_SHIM_ENV_H
#define VSHARE_SHIM_ENV_H

#include <stddef.h>
#include <stdint.h>

#define SHIM_STR_(x) #x
#define SHIM_STR(x)  SHIM_STR_(x)

/* VSHARE_SWAP_OUT's values, in the order of its row's choices. */
enum { SHIM_SWAP_OUT_LAZY, SHIM_SWAP_OUT_EAGER };
/* VSHARE_SWAP_STREAMS: the default and the most; the memory layer sizes
 * its swap streams by the latter. */
#define SHIM_SWAP_STREAMS     4
#define SHIM_SWAP_STREAMS_MAX 8

enum shim_set_type {
	SHIM_T_BOOL, SHIM_T_INT, SHIM_T_MS, SHIM_T_US, SHIM_T_SIZE,
	SHIM_T_MEM, SHIM_T_STRING, SHIM_T_ENUM,
};

enum shim_set_id {
#define S(id, type, ...) SET_##id,
#include "shim_settings.def"
#undef S
	SET_COUNT
};

/* One row of the table; shim_settings.def explains the fields. */
struct shim_setting {
	const char        *name;
	enum shim_set_type type;
	uint64_t           dflt;
	const char        *dflt_s;
	const char        *dflt_doc;
	uint64_t           lo, hi;
	const char        *choices;
	int              (*match)(const char *s);
	const char        *conf;
	int                policy;
	const char        *doc;
};

extern const struct shim_setting shim_settings[SET_COUNT];

/* A setting's value: the variable's when it is set to a valid value
 * (given), else the default. u holds numbers, booleans, sizes and an
 * ENUM's index; s a STRING (the environment's own text, not a copy). */
struct shim_set_val {
	int         given;
	uint64_t    u;
	const char *s;
};

/* Read a setting from the environment (secure_getenv: a set-uid program
 * takes none from its caller). Unset or empty is the default; a value
 * that does not parse is logged, at warn level, with what was expected,
 * and the default used. */
struct shim_set_val shim_setting(enum shim_set_id id);
/* The same without the log line: for a read before logging is set up
 * (the log level itself, at load time). */
struct shim_set_val shim_setting_quiet(enum shim_set_id id);
static inline uint64_t shim_set_u64(enum shim_set_id id)
{
	return shim_setting(id).u;
}

/* Parse text as s's value into *out (given set): 0, or -1 when it is not
 * a value of s's type and range, -2 for a size below 1 MiB with no unit
 * (MEM). Nothing is read or logged. */
int shim_setting_parse(const struct shim_setting *s, const char *text,
		       struct shim_set_val *out);
/* The default as the docs write it: "1", "64M", "lazy", "none". */
void shim_setting_default(const struct shim_setting *s, char *buf, size_t n);

/* CPUs this process may run on (its affinity mask), at least 1. */
int shim_usable_cpus(void);

#endif
