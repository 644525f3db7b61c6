/*
 * The status document's tables (vshare/status.h) applied to cJSON: one
 * function writes an object's keys in table order, one reads them back.
 * Apart from vshare_common, which the shim links and which has no cJSON.
 */
#ifndef VSHARE_STATUS_JSON_H
#define VSHARE_STATUS_JSON_H

#include <cjson/cJSON.h>

#include "vshare/status.h"

/* One key's value; the member that the key's type names is used. */
struct vs_st_val {
	double      num;   /* VS_ST_NUM, VS_ST_OPTNUM */
	const char *str;   /* VS_ST_STR */
	int         bool_; /* VS_ST_BOOL */
	cJSON      *arr;   /* VS_ST_ARRAY */
};

/* Add every key of t to o from v[key], in table order. Arrays are taken
 * over by o; a NULL array (out of memory) is left out. */
void vs_status_put(cJSON *o, const struct vs_status_obj *t,
		   const struct vs_st_val *v);

/* Read every key of t from o into v[key]. A key that is missing or of
 * another type reads as 0, "?", false or NULL (an OPTNUM missing is 0 and
 * fine). Returns how many keys were missing or of another type. */
int vs_status_get(const cJSON *o, const struct vs_status_obj *t,
		  struct vs_st_val *v);

#endif
