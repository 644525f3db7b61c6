/*
 * The status document (ctl_status_json): complete while it fits in a
 * frame, and past that the first clients plus "clients_omitted", with
 * every GPU and its queue still there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "policy_fixture.h"
#include "srv.h"
#include "status_json.h"


/* n clients with long labels on GPU A, mode on: one holds, n-1 wait. */
static struct sched *populate(int n)
{
	struct sched_cfg cfg;
	struct sched *s;
	char label[64];

	memset(&cfg, 0, sizeof(cfg));
	cfg.tq_ms = 1000;
	cfg.mode = VS_MODE_ON;
	cfg.grace_ms = 500;
	s = sched_new(&cfg, fake_clock, NULL);
	assert_non_null(s);
	for (int i = 0; i < n; i++) {
		struct sched_cred cred = { 1000 + i, 1000, 1000 };
		struct sched_client *c;

		snprintf(label, sizeof(label), "job-%04d-%s", i,
			 "with-a-label-as-long-as-the-protocol-allows-xx");
		c = sched_client_new(s, &cred, label, NULL);
		assert_non_null(c);
		assert_int_equal(sched_attach(s, c, GPU_A, 1ull << 34), 0);
		assert_int_equal(sched_request(s, c, GPU_A), 0);
	}
	sched_out_clear(s);
	return s;
}

static int array_len(const cJSON *o, const char *key)
{
	return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, key));
}

static void test_fits(void **state)
{
	struct sched *s = populate(20);
	size_t len = 0;
	char *text = ctl_status_json(s, NULL, 1 << 20, &len);
	cJSON *doc;

	(void)state;
	assert_non_null(text);
	assert_int_equal(len, strlen(text));
	doc = cJSON_Parse(text);
	assert_non_null(doc);
	assert_int_equal(array_len(doc, "clients"), 20);
	assert_null(cJSON_GetObjectItemCaseSensitive(doc, "clients_omitted"));
	cJSON_Delete(doc);
	free(text);
	sched_free(s);
}

static void test_too_many_clients(void **state)
{
	struct sched *s = populate(200);
	size_t len = 0, max = 16384;
	char *text = ctl_status_json(s, NULL, max, &len);
	const cJSON *gpu, *omitted;
	cJSON *doc;
	int shown;

	(void)state;
	assert_non_null(text);
	assert_true(len <= max);
	doc = cJSON_Parse(text);
	assert_non_null(doc);
	shown = array_len(doc, "clients");
	omitted = cJSON_GetObjectItemCaseSensitive(doc, "clients_omitted");
	assert_true(cJSON_IsNumber(omitted));
	assert_true(shown > 0);
	assert_int_equal(shown + omitted->valueint, 200);
	/* Not needlessly short either: most of the room is used. */
	assert_true(len > max / 2);
	gpu = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "gpus"), 0);
	assert_non_null(gpu);
	assert_int_equal(array_len(gpu, "holders"), 1);
	assert_int_equal(array_len(gpu, "queue"), 199);
	cJSON_Delete(doc);
	free(text);
	sched_free(s);
}

/* The document's exact text for a small state: the keys, their order
 * and their JSON types are what scripts read, and stay as they are. */
static void test_exact_text(void **state)
{
	static const char want[] =
	"{\"version\":6,\"gpus\":[{\"uuid\":\"GPU-0a000000-0000-0000-0000-"
	"000000000000\",\"index\":0,\"mode\":\"on\",\"tq_s\":1,\"capacity\":"
	"17179869184,\"total_mem\":17179869184,\"footprint\":0,\"held\":0,"
	"\"oversubscribed\":false,\"holders\":[1],\"queue\":[2],\"policy\":"
	"\"fair\",\"min_slice_ms\":0,\"slice_ms\":0,\"swap_us\":0,"
	"\"preempt_cost_ms\":0,\"index_from\":\"attach order\","
	"\"interactive_total_pct\":100,\"interactive_used_pct\":0,"
	"\"interactive_over\":false,\"slice_max_ms\":0,"
	"\"preempt_cost_class_ms\":0,\"use_from\":\"none\"}],"
	"\"clients\":"
	"[{\"id\":1,\"pid\":1000,\"uid\":1000,\"gid\":1000,\"label\":\"job-0000-"
	"with-a-label-as-long-as-the-protocol-allows-xx\",\"gpus\":[{\"uuid\":"
	"\"GPU-0a000000-0000-0000-0000-000000000000\",\"managed\":0,\"pinned\":"
	"0,\"state\":\"holding\",\"held_ms\":0,\"waited_ms\":0,\"revoked\":"
	"false,\"recent_ms\":0,\"user_recent_ms\":0,\"weight\":1,"
	"\"wait_why\":\"\",\"position\":0,\"eta_ms\":-1,\"class\":"
	"\"batch\",\"budget_pct\":0,\"budget_used_pct\":0,\"cap_pct\":0,"
	"\"cap_used_pct\":0,\"total_pct\":100,\"total_used_pct\":0,"
	"\"gpu_mem\":-1,\"sm_pct\":-1,\"held_total_ms\":0,"
	"\"busy_ms\":0,\"idle_ms\":0,\"swapin_bytes\":0,\"swapout_bytes\":0}],"
	"\"name\":\"\",\"class\":\"batch\",\"unshared_ms\":0,"
	"\"unshared_why\":\"\"},"
	"{\"id\":2,"
	"\"pid\":1001,\"uid\":1000,\"gid\":1000,\"label\":"
	"\"job-0001-with-a-label-as-long-as-the-protocol-allows-xx\",\"gpus\":"
	"[{\"uuid\":\"GPU-0a000000-0000-0000-0000-000000000000\",\"managed\":0,"
	"\"pinned\":0,\"state\":\"waiting\",\"held_ms\":0,\"waited_ms\":0,"
	"\"revoked\":false,\"recent_ms\":0,\"user_recent_ms\":0,\"weight\":1,"
	"\"wait_why\":\"quantum\",\"position\":1,\"eta_ms\":1000,"
	"\"class\":\"batch\",\"budget_pct\":0,\"budget_used_pct\":0,"
	"\"cap_pct\":0,\"cap_used_pct\":0,\"total_pct\":100,"
	"\"total_used_pct\":0,\"gpu_mem\":-1,\"sm_pct\":-1,"
	"\"held_total_ms\":0,\"busy_ms\":0,\"idle_ms\":0,\"swapin_bytes\":0,"
	"\"swapout_bytes\":0}],\"name\":\"\",\"class\":"
	"\"batch\",\"unshared_ms\":0,\"unshared_why\":\"\"}],"
	"\"protocol\":9}";
	struct sched *s = populate(2);
	size_t len = 0;
	char *text = ctl_status_json(s, NULL, 1 << 20, &len);

	(void)state;
	assert_non_null(text);
	assert_string_equal(text, want);
	free(text);
	sched_free(s);
}

/* Read one object through its table: every key there, of its type. */
static void get_all(const cJSON *o, const struct vs_status_obj *t,
		    struct vs_st_val *v)
{
	assert_true(cJSON_IsObject(o));
	assert_int_equal(vs_status_get(o, t, v), 0);
	for (size_t i = 0; i < t->n; i++)
		if (t->keys[i].type != VS_ST_OPTNUM &&
		    !cJSON_HasObjectItem(o, t->keys[i].name))
			fail_msg("no key %s", t->keys[i].name);
}

/* The document the scheduler writes, read with vsharectl's reader (the
 * same tables), gives the values the policy holds. */
static void test_read_back(void **state)
{
	struct sched *s = populate(30);
	struct vs_st_val d[VS_SD__N], g[VS_SG__N], c[VS_SC__N], m[VS_SM__N];
	struct sched_gpu_info gi;
	struct sched_client_info ci;
	const struct sched_client *sc = sched_client_first(s);
	char uuid[VS_UUID_STR_LEN];
	size_t len = 0;
	char *text = ctl_status_json(s, NULL, 4096, &len);
	cJSON *doc = cJSON_Parse(text);
	const cJSON *it;

	(void)state;
	get_all(doc, &vs_status_doc, d);
	assert_int_equal((int)d[VS_SD_version].num, VS_STATUS_VERSION);
	assert_true(d[VS_SD_clients_omitted].num > 0);
	assert_int_equal(cJSON_GetArraySize(d[VS_SD_gpus].arr), 1);
	get_all(cJSON_GetArrayItem(d[VS_SD_gpus].arr, 0), &vs_status_gpu, g);
	sched_gpu_info(sched_gpu_at(s, 0), &gi);
	vs_uuid_format(gi.uuid, uuid);
	assert_string_equal(g[VS_SG_uuid].str, uuid);
	assert_string_equal(g[VS_SG_mode].str, vs_mode_name(gi.mode));
	assert_true(g[VS_SG_tq_s].num == gi.tq_ms / 1000);
	assert_true(g[VS_SG_capacity].num == (double)gi.capacity);
	assert_true(g[VS_SG_total_mem].num == (double)gi.total_mem);
	assert_int_equal(cJSON_GetArraySize(g[VS_SG_queue].arr), 29);
	cJSON_ArrayForEach(it, d[VS_SD_clients].arr) {
		get_all(it, &vs_status_client, c);
		sched_client_info(sc, &ci);
		assert_true(c[VS_SC_id].num == ci.id);
		assert_true(c[VS_SC_pid].num == ci.cred.pid);
		assert_string_equal(c[VS_SC_label].str, ci.label);
		get_all(cJSON_GetArrayItem(c[VS_SC_gpus].arr, 0),
			&vs_status_member, m);
		assert_string_equal(m[VS_SM_uuid].str, uuid);
		assert_string_equal(m[VS_SM_state].str, sc ==
				    sched_client_first(s) ? VS_STATUS_HOLDING :
				    VS_STATUS_WAITING);
		sc = sched_client_next(s, sc);
	}
	cJSON_Delete(doc);
	free(text);
	sched_free(s);
}

/* Keys are unique in each object; a key missing or of another type is
 * counted by the reader and reads as nothing. */
static void test_tables(void **state)
{
	const struct vs_status_obj *objs[] = { &vs_status_doc, &vs_status_gpu,
		&vs_status_client, &vs_status_member };
	struct vs_st_val g[VS_SG__N];
	cJSON *o = cJSON_Parse("{\"uuid\": 5, \"index\": 2}");

	(void)state;
	for (size_t t = 0; t < 4; t++)
		for (size_t i = 0; i < objs[t]->n; i++)
			for (size_t j = 0; j < i; j++)
				assert_string_not_equal(objs[t]->keys[i].name,
							objs[t]->keys[j].name);
	assert_int_equal(vs_status_get(o, &vs_status_gpu, g),
			 VS_SG__N - 1);
	assert_string_equal(g[VS_SG_uuid].str, "?");
	assert_true(g[VS_SG_index].num == 2);
	assert_null(g[VS_SG_holders].arr);
	cJSON_Delete(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fits),
		cmocka_unit_test(test_too_many_clients),
		cmocka_unit_test(test_exact_text),
		cmocka_unit_test(test_read_back),
		cmocka_unit_test(test_tables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
