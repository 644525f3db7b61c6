/*
 * The status document's key tables, and their use with cJSON.
 */
#include <string.h>

#include "status_json.h"

#define ROW(name, type, unit, what) { #name, VS_ST_##type, unit, what },

static const struct vs_status_key doc_keys[] = { VS_STATUS_DOC_KEYS(ROW) };
static const struct vs_status_key gpu_keys[] = { VS_STATUS_GPU_KEYS(ROW) };
static const struct vs_status_key client_keys[] = {
	VS_STATUS_CLIENT_KEYS(ROW)
};
static const struct vs_status_key member_keys[] = {
	VS_STATUS_MEMBER_KEYS(ROW)
};

#define OBJ(t) { t, sizeof(t) / sizeof(t[0]) }
const struct vs_status_obj vs_status_doc = OBJ(doc_keys);
const struct vs_status_obj vs_status_gpu = OBJ(gpu_keys);
const struct vs_status_obj vs_status_client = OBJ(client_keys);
const struct vs_status_obj vs_status_member = OBJ(member_keys);

void vs_status_put(cJSON *o, const struct vs_status_obj *t,
		   const struct vs_st_val *v)
{
	for (size_t i = 0; i < t->n; i++) {
		const char *k = t->keys[i].name;

		switch (t->keys[i].type) {
		case VS_ST_OPTNUM:
			if (v[i].num == 0)
				break;
			/* fall through */
		case VS_ST_NUM:
			cJSON_AddNumberToObject(o, k, v[i].num);
			break;
		case VS_ST_STR:
			cJSON_AddStringToObject(o, k, v[i].str);
			break;
		case VS_ST_BOOL:
			cJSON_AddBoolToObject(o, k, v[i].bool_);
			break;
		case VS_ST_ARRAY:
			if (v[i].arr != NULL &&
			    !cJSON_AddItemToObject(o, k, v[i].arr))
				cJSON_Delete(v[i].arr);
			break;
		}
	}
}

static int get_one(const cJSON *it, int type, struct vs_st_val *v)
{
	memset(v, 0, sizeof(*v));
	v->str = "?";
	switch (type) {
	case VS_ST_OPTNUM:
		if (it == NULL)
			return 0;
		/* fall through */
	case VS_ST_NUM:
		if (!cJSON_IsNumber(it))
			return 1;
		v->num = it->valuedouble;
		return 0;
	case VS_ST_STR:
		if (!cJSON_IsString(it))
			return 1;
		v->str = it->valuestring;
		return 0;
	case VS_ST_BOOL:
		if (!cJSON_IsBool(it))
			return 1;
		v->bool_ = cJSON_IsTrue(it);
		return 0;
	case VS_ST_ARRAY:
		if (!cJSON_IsArray(it))
			return 1;
		v->arr = (cJSON *)it;
		return 0;
	}
	return 1;
}

int vs_status_get(const cJSON *o, const struct vs_status_obj *t,
		  struct vs_st_val *v)
{
	int bad = 0;

	for (size_t i = 0; i < t->n; i++)
		bad += get_one(cJSON_GetObjectItemCaseSensitive(o,
				t->keys[i].name), t->keys[i].type, &v[i]);
	return bad;
}
