/*
 * The shim's settings table as built (util/shim_settings.def), as JSON on
 * standard output: one object per setting, in the table's order. The
 * docs are checked against it (tests/ops/check_doc_settings.py); the
 * shim itself exports nothing of the table.
 */
#include <stdio.h>

#include "shim_env.h"

static const char *const type_names[] = {
	[SHIM_T_BOOL] = "bool", [SHIM_T_INT] = "int",
	[SHIM_T_MS] = "duration (ms)", [SHIM_T_US] = "duration (µs)",
	[SHIM_T_SIZE] = "size", [SHIM_T_MEM] = "size",
	[SHIM_T_STRING] = "string", [SHIM_T_ENUM] = "enum",
};

/* A JSON string; the table's text is ASCII but for the micro sign. */
static void str(const char *key, const char *s, const char *sep)
{
	printf("\"%s\": ", key);
	if (s == NULL) {
		printf("null%s", sep);
		return;
	}
	putchar('"');
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
	printf("\"%s", sep);
}

static void one(const struct shim_setting *s, int last)
{
	char dflt[128];
	int ranged = s->type == SHIM_T_INT || s->type == SHIM_T_MS ||
		     s->type == SHIM_T_US;

	shim_setting_default(s, dflt, sizeof(dflt));
	printf("  {");
	str("name", s->name, ", ");
	str("type", type_names[s->type], ", ");
	str("default", dflt, ", ");
	if (ranged)
		printf("\"range\": [%llu, %llu], ", (unsigned long long)s->lo,
		       (unsigned long long)s->hi);
	else
		printf("\"range\": null, ");
	printf("\"max_len\": %llu, \"need_unit\": %s, ",
	       s->type == SHIM_T_STRING ? (unsigned long long)s->hi : 0ull,
	       s->type == SHIM_T_MEM ? "true" : "false");
	str("choices", s->choices, ", ");
	str("conf", s->conf, ", ");
	printf("\"policy\": %s, ", s->policy ? "true" : "false");
	str("doc", s->doc, "");
	printf("}%s\n", last ? "" : ",");
}

int main(void)
{
	printf("[\n");
	for (int i = 0; i < SET_COUNT; i++)
		one(&shim_settings[i], i == SET_COUNT - 1);
	printf("]\n");
	return 0;
}
