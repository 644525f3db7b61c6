/*
 * Configuration parsing: defaults, every key, sizes, and bad values whose
 * error names the key.
 */
#include <grp.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <math.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>

#include "conf.h"
#include "size.h"
#include "log.h"

static void test_defaults(void **state)
{
	struct conf c;
	struct sched_cfg sc;
	(void)state;

	conf_defaults(&c);
	assert_int_equal(c.tq_s, 30);
	assert_int_equal(c.mode, VS_MODE_AUTO);
	assert_true(c.capacity == 0);
	assert_int_equal(c.grace_ms, 5000);
	assert_true(c.skip_unresponsive);
	assert_int_equal(c.socket_mode, 0660);
	assert_string_equal(c.socket_group, CONF_GROUP_AUTO);
	assert_int_equal(c.log_level, LOG_LVL_INFO);
	conf_sched_cfg(&c, &sc);
	assert_int_equal(sc.tq_ms, 30000);
	conf_free(&c);
}

static void test_every_key(void **state)
{
	struct conf c;
	char err[256] = "";
	const char *text =
		"{\"tq_s\": 10, \"mode\": \"on\", \"capacity\": \"1.5G\","
		" \"grace_ms\": 0, \"skip_unresponsive\": false,"
		" \"socket\": \"/tmp/s.sock\", \"socket_group\": \"\","
		" \"socket_mode\": \"0600\", \"admin_group\": \"wheel\","
		" \"status_public\": false, \"log_level\": \"debug\","
		" \"max_clients\": 5,"
		" \"gpus\": {\"GPU-00000000-0000-0000-0000-0000000000aa\":"
		"   {\"tq_s\": 2, \"mode\": \"off\", \"capacity\": 4194304}}}";
	(void)state;

	conf_defaults(&c);
	assert_int_equal(conf_parse(&c, text, err, sizeof(err)), 0);
	assert_int_equal(c.tq_s, 10);
	assert_int_equal(c.mode, VS_MODE_ON);
	assert_true(c.capacity == 3ull << 29);
	assert_int_equal(c.grace_ms, 0);
	assert_false(c.skip_unresponsive);
	assert_string_equal(c.socket, "/tmp/s.sock");
	assert_string_equal(c.socket_group, "");
	assert_int_equal(c.socket_mode, 0600);
	assert_string_equal(c.admin_group, "wheel");
	assert_false(c.status_public);
	assert_int_equal(c.log_level, LOG_LVL_DEBUG);
	assert_int_equal(c.max_clients, 5);
	assert_int_equal(c.n_gpus, 1);
	assert_int_equal(c.gpus[0].uuid[15], 0xaa);
	assert_int_equal(c.gpus[0].set,
			 SCHED_GCFG_TQ | SCHED_GCFG_MODE | SCHED_GCFG_CAP);
	assert_int_equal(c.gpus[0].tq_ms, 2000);
	assert_int_equal(conf_parse(&c, "{\"admin_group\": null}", err,
				    sizeof(err)), 0);
	assert_string_equal(c.admin_group, CONF_GROUP_AUTO);
	assert_int_equal(c.gpus[0].mode, VS_MODE_OFF);
	assert_true(c.gpus[0].capacity == 4194304);
	conf_free(&c);
}

static void bad(const char *text, const char *key)
{
	struct conf c;
	char err[256] = "";

	conf_defaults(&c);
	assert_int_equal(conf_parse(&c, text, err, sizeof(err)), -1);
	if (strstr(err, key) == NULL)
		fail_msg("error for %s does not name %s: %s", text, key, err);
	conf_free(&c);
}

/* GPU memory with its unit, or bytes said so or of 1 MiB and more. */
static void test_mem_units(void **state)
{
	static const struct { const char *text; uint64_t bytes; } ok[] = {
		{ "{\"capacity\": \"40B\"}", 40 },
		{ "{\"capacity\": \"40G\"}", 40ull << 30 },
		{ "{\"capacity\": 1048576}", 1048576 },
		{ "{\"capacity\": \"1048576\"}", 1048576 },
		{ "{\"capacity\": 0}", 0 },
		{ "{\"capacity\": \"0\"}", 0 },
	};
	char err[256];
	struct conf c;
	(void)state;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		conf_defaults(&c);
		assert_int_equal(conf_parse(&c, ok[i].text, err, sizeof(err)), 0);
		assert_true(c.capacity == ok[i].bytes);
		conf_free(&c);
	}
	/* The queue's byte counts are not GPU memory: no unit needed. */
	conf_defaults(&c);
	assert_int_equal(conf_parse(&c, "{\"outq_pause\": \"16384\"}", err,
				    sizeof(err)), 0);
	assert_int_equal(c.outq_pause, 16384);
	conf_free(&c);
}

static void test_bad_values(void **state)
{
	(void)state;
	bad("{\"tq_s\": 0}", "tq_s");
	bad("{\"tq_s\": 86401}", "tq_s");
	bad("{\"tq_s\": 2.5}", "tq_s");
	bad("{\"tq_s\": \"30\"}", "tq_s");
	bad("{\"mode\": \"sometimes\"}", "mode");
	bad("{\"mode\": 1}", "mode");
	bad("{\"capacity\": -1}", "capacity");
	bad("{\"capacity\": \"8 G\"}", "capacity");
	bad("{\"capacity\": \"G\"}", "capacity");
	bad("{\"capacity\": true}", "capacity");
	bad("{\"grace_ms\": 3600001}", "grace_ms");
	bad("{\"skip_unresponsive\": \"yes\"}", "skip_unresponsive");
	bad("{\"status_public\": 0}", "status_public");
	bad("{\"socket\": \"run/s.sock\"}", "socket");
	bad("{\"socket\": \"/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock\"}", "socket");
	bad("{\"socket_mode\": 660}", "socket_mode");
	bad("{\"socket_mode\": \"0400\"}", "socket_mode");
	bad("{\"socket_mode\": \"01660\"}", "socket_mode");
	bad("{\"log_level\": \"verbose\"}", "log_level");
	bad("{\"max_clients\": 0}", "max_clients");
	bad("{\"max_clients\": 1000000}", "max_clients");
	bad("{\"gpus\": []}", "gpus");
	bad("{\"gpus\": {\"nope\": {}}}", "gpus");
	bad("{\"gpus\": {\"GPU-00000000-0000-0000-0000-0000000000aa\": "
	    "{\"mode\": \"x\"}}}", "gpus.GPU-00000000-0000-0000-0000-0000000000aa.mode");
	bad("{\"gpus\": {\"GPU-00000000-0000-0000-0000-0000000000aa\": "
	    "{\"colour\": 1}}}", "colour");
	bad("{\"quantum\": 5}", "quantum");
	bad("[1, 2]", "object");
	bad("{\"tq_s\": ", "JSON");
	/* Where a syntax error is, and what was given twice. */
	bad("{\"tq_s\": ", "at the end (line 1)");
	bad("{\n  \"tq_s\": 5,\n  \"mode\" \"on\"\n}", "at line 3, column 10");
	bad("{\"tq_s\": 5, \"mode\": \"on\", \"tq_s\": 10}", "tq_s: given twice");
	bad("{\"gpus\": {\"GPU-00000000-0000-0000-0000-0000000000aa\": "
	    "{\"tq_s\": 5, \"tq_s\": 6}}}", "tq_s: given twice");
	bad("{\"capacity\": \"0x10\"}", "capacity");
	bad("{\"capacity\": \"1e3\"}", "capacity");
	/* GPU memory in the shim's grammar: no unit below 1 MiB is a unit
	 * left out, as a number or a string, globally or per GPU. */
	bad("{\"capacity\": \"40\"}", "capacity: '40': a size needs a unit "
	    "(K, M, G, T); a bare number below 1 MiB is refused, write 40G or "
	    "40B");
	bad("{\"capacity\": 40}", "capacity: '40': a size needs a unit");
	bad("{\"capacity\": 1048575}", "capacity: '1048575': a size needs a "
	    "unit");
	bad("{\"gpus\": {\"GPU-00000000-0000-0000-0000-0000000000aa\": "
	    "{\"capacity\": \"12\"}}}", "capacity: '12': a size needs a unit");
	bad("{\"capacity\": \"40X\"}", "capacity: '40X': not a size (like 8G, "
	    "512M or 1.5T; bytes like 4096B)");
	bad("{\"capacity\": \"1.5B\"}", "capacity: '1.5B': not a size");
	/* The metrics' listen address: numbers and a port, nothing else. */
	bad("{\"metrics_listen\": \"localhost:9464\"}", "metrics_listen: ");
	bad("{\"metrics_listen\": \"127.0.0.1\"}", "not ADDRESS:PORT");
	bad("{\"metrics_listen\": \"127.0.0.1:0\"}", "port must be 1 to 65535");
	bad("{\"metrics_listen\": \"127.0.0.1:65536\"}", "metrics_listen");
	bad("{\"metrics_listen\": \"127.0.0.1:94x\"}", "metrics_listen");
	bad("{\"metrics_listen\": \"127.0.0.1:-1\"}", "metrics_listen");
	bad("{\"metrics_listen\": \"::1:9464\"}", "is not a numeric IPv4");
	bad("{\"metrics_gpus\": 1025}", "metrics_gpus");
	bad("{\"metrics_gpus\": -1}", "metrics_gpus");
	bad("{\"metrics_listen\": \"[::g]:9464\"}", "is not an IPv6 address");
	bad("{\"metrics_listen\": \":9464\"}", "metrics_listen");
	bad("{\"metrics_listen\": 9464}", "metrics_listen: must be a string");
	/* The fair share. */
	bad("{\"policy\": \"lottery\"}", "policy: must be \"fair\" or \"fcfs\"");
	bad("{\"min_slice_ms\": 5}", "min_slice_ms");
	bad("{\"halflife_s\": 0}", "halflife_s");
	bad("{\"preempt_pct\": 101}", "preempt_pct");
	bad("{\"preempt_budget_pct\": 0}", "preempt_budget_pct");
	bad("{\"weights\": []}", "weights: must be an object");
	bad("{\"weights\": {\"people\": {}}}", "weights.people: unknown key");
	bad("{\"weights\": {\"users\": {\"0\": 0}}}",
	    "weights.users.0: must be a whole number from 1 to 1000");
	bad("{\"weights\": {\"users\": {\"0\": 2.5}}}", "weights.users.0");
	bad("{\"weights\": {\"users\": {\"0\": \"2\"}}}", "weights.users.0");
	bad("{\"weights\": {\"users\": {\"no-such-user-vshare\": 2}}}",
	    "weights.users: no user \"no-such-user-vshare\"");
	bad("{\"weights\": {\"groups\": {\"no-such-group-vshare\": 2}}}",
	    "weights.groups: no group \"no-such-group-vshare\"");
	bad("{\"weights\": {\"users\": {\"0\": 2, \"root\": 3}}}",
	    "weights.users.root: the same user as \"0\"");
	bad("{\"weights\": {\"users\": {\"0\": 2, \"0\": 3}}}",
	    "weights.users.0: given twice");
}

/* Only white space may follow the object: a file that two edits left
 * with two objects, or a stray word, is refused, not half loaded. */
static void test_trailing_data(void **state)
{
	struct conf c;
	char err[256];
	(void)state;

	conf_defaults(&c);
	assert_int_equal(conf_parse(&c, "{\"tq_s\": 5} \n\t\r\n", err,
				    sizeof(err)), 0);
	assert_int_equal(c.tq_s, 5);
	bad("{\"tq_s\": 6} {\"tq_s\": 7}", "data after the JSON object");
	bad("{\"tq_s\": 6}\nx", "line 2, column 1");
	bad("{} // comment", "data after");
	conf_free(&c);
}

static void test_sizes(void **state)
{
	char err[VS_SIZE_ERR_LEN];
	uint64_t v;
	(void)state;

	assert_int_equal(vs_parse_size("4096", 0, &v), 0);
	assert_true(v == 4096);
	assert_int_equal(vs_parse_size("8G", 0, &v), 0);
	assert_true(v == 8ull << 30);
	assert_int_equal(vs_parse_size("8GiB", 0, &v), 0);
	assert_true(v == 8ull << 30);
	assert_int_equal(vs_parse_size("512MB", 0, &v), 0);
	assert_true(v == 512ull << 20);
	assert_int_equal(vs_parse_size("1.5T", 0, &v), 0);
	assert_true(v == 3ull << 39);
	assert_int_equal(vs_parse_size("64k", 0, &v), 0);
	assert_true(v == 65536);
	assert_int_equal(vs_parse_size("-1", 0, &v), -1);
	assert_int_equal(vs_parse_size("8X", 0, &v), -1);
	assert_int_equal(vs_parse_size("0x10", 0, &v), -1);
	assert_int_equal(vs_parse_size("1e3G", 0, &v), -1);
	assert_int_equal(vs_parse_size("nan", 0, &v), -1);
	assert_int_equal(vs_parse_size("", 0, &v), -1);
	assert_int_equal(vs_parse_size("99999999999T", 0, &v), -1);
	/* A fraction of a byte, with a unit of bytes or none. */
	assert_int_equal(vs_parse_size("1.5B", 0, &v), -1);
	assert_int_equal(vs_parse_size("1048576.5", 0, &v), -1);
	assert_int_equal(vs_parse_size("0.5", VS_SIZE_NEED_UNIT, &v), -2);
	/* Whose advice names no fraction of a byte either. */
	assert_string_equal(vs_size_error(err, sizeof(err), "0.5", -2),
			    "'0.5': a size needs a unit (K, M, G, T); a bare "
			    "number below 1 MiB is refused, write 0.5G");
}

static void test_file_and_print(void **state)
{
	struct conf c;
	char err[256], path[] = "/tmp/vshare-conf-XXXXXX";
	const char *text = "{\"tq_s\": 12, \"mode\": \"off\"}";
	int fd = mkstemp(path);
	char *json;
	cJSON *root;
	(void)state;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	conf_defaults(&c);
	assert_int_equal(conf_load(&c, path, 1, err, sizeof(err)), 0);
	assert_int_equal(c.tq_s, 12);
	json = conf_to_json(&c, "/run/x.sock");
	root = cJSON_Parse(json);
	assert_non_null(root);
	assert_int_equal(cJSON_GetObjectItem(root, "tq_s")->valueint, 12);
	assert_string_equal(cJSON_GetObjectItem(root, "mode")->valuestring, "off");
	assert_string_equal(cJSON_GetObjectItem(root, "socket")->valuestring,
			    "/run/x.sock");
	assert_string_equal(cJSON_GetObjectItem(root, "socket_mode")->valuestring,
			    "0660");
	cJSON_Delete(root);
	free(json);
	unlink(path);
	/* Missing: fine for the default file, an error for a named one. */
	assert_int_equal(conf_load(&c, path, 0, err, sizeof(err)), 1);
	assert_int_equal(conf_load(&c, path, 1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, path));
	/* A directory (fopen opens one for reading) is named as such. */
	assert_int_equal(conf_load(&c, "/tmp", 1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/tmp: is a directory"));
	assert_int_equal(conf_load(&c, "/tmp", 0, err, sizeof(err)), -1);
	conf_free(&c);
}

static void test_groups(void **state)
{
	gid_t gid = 12345;
	char err[256] = "";
	(void)state;

	assert_int_equal(conf_group("", "root", &gid, "k", err, sizeof(err)), 1);
	assert_int_equal(conf_group("root", "x", &gid, "k", err, sizeof(err)), 0);
	assert_int_equal(gid, 0);
	assert_int_equal(conf_group(CONF_GROUP_AUTO, "no-such-group-q", &gid,
				    "k", err, sizeof(err)), 1);
	assert_int_equal(conf_group("no-such-group-q", "root", &gid,
				    "admin_group", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "admin_group"));
}

#define UUID_AA "GPU-00000000-0000-0000-0000-0000000000aa"

/* metrics_listen's addresses, as the HTTP server binds them. */
static void test_listen_addr(void **state)
{
	struct sockaddr_storage ss;
	const struct sockaddr_in *v4 = (const void *)&ss;
	const struct sockaddr_in6 *v6 = (const void *)&ss;
	unsigned len = 0;
	char err[128], text[64];
	struct conf c;
	(void)state;

	assert_int_equal(conf_listen_parse("127.0.0.1:9464", &ss, &len, err,
					   sizeof(err)), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(len, sizeof(struct sockaddr_in));
	assert_int_equal(ntohs(v4->sin_port), 9464);
	assert_int_equal(ntohl(v4->sin_addr.s_addr), 0x7f000001u);
	assert_int_equal(conf_listen_parse("[::1]:65535", &ss, &len, err,
					   sizeof(err)), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(len, sizeof(struct sockaddr_in6));
	assert_int_equal(ntohs(v6->sin6_port), 65535);
	assert_true(IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr));
	assert_int_equal(conf_listen_parse("0.0.0.0:1", &ss, &len, err,
					   sizeof(err)), 0);
	/* Off by default, and "" turns it off again. */
	conf_defaults(&c);
	assert_string_equal(c.metrics_listen, "");
	snprintf(text, sizeof(text), "{\"metrics_listen\": \"10.0.0.1:80\"}");
	assert_int_equal(conf_parse(&c, text, err, sizeof(err)), 0);
	assert_string_equal(c.metrics_listen, "10.0.0.1:80");
	assert_int_equal(conf_parse(&c, "{\"metrics_listen\": \"\"}", err,
				    sizeof(err)), 0);
	assert_string_equal(c.metrics_listen, "");
	conf_free(&c);
}

/* Each field of the table has the width its type reads and writes. */
static void test_table_fields(void **state)
{
	size_t n;
	const struct conf_key *k = conf_keys(&n);
	(void)state;

	assert_true(n > 0);
	for (size_t i = 0; i < n; i++, k++) {
		size_t w = k->type == CONF_T_SIZE || k->type == CONF_T_MEM ? 8 :
			   k->type == CONF_T_BOOL || k->type == CONF_T_LEVEL ?
			   sizeof(int) : 4;

		if (k->type == CONF_T_PATH || k->type == CONF_T_GROUP ||
		    k->type == CONF_T_ADDR)
			continue;
		if (k->size != w)
			fail_msg("%s: field of %zu bytes, type of %zu", k->name,
				 k->size, w);
		if (k->gpu_bit && k->gpu_size != k->size)
			fail_msg("%s: per-GPU field of %zu bytes", k->name,
				 k->gpu_size);
		assert_true(k->lo <= k->hi);
	}
}

/* A value for key k other than its default, as JSON text. */
static void other_value(const struct conf_key *k, char *out, size_t n)
{
	switch (k->type) {
	case CONF_T_UINT:
	case CONF_T_SIZE:
	case CONF_T_MEM:
		snprintf(out, n, "%llu", (unsigned long long)
			 (k->dnum == k->hi ? k->lo : k->hi));
		break;
	case CONF_T_OCTAL:
		snprintf(out, n, "\"%04llo\"", (unsigned long long)
			 (k->dnum == k->hi ? k->lo : k->hi));
		break;
	case CONF_T_BOOL:
		snprintf(out, n, "%s", k->dnum ? "false" : "true");
		break;
	case CONF_T_MODE:
		snprintf(out, n, "\"%s\"", k->dnum == VS_MODE_ON ? "off" : "on");
		break;
	case CONF_T_POLICY:
		snprintf(out, n, "\"%s\"", k->dnum == SCHED_POLICY_FCFS ? "fair" :
			 "fcfs");
		break;
	case CONF_T_LEVEL:
		snprintf(out, n, "\"%s\"", k->dnum == LOG_LVL_DEBUG ? "error" :
			 "debug");
		break;
	case CONF_T_PATH:
		snprintf(out, n, "\"/tmp/vshare-rt.sock\"");
		break;
	case CONF_T_ADDR:
		snprintf(out, n, "\"[::1]:9464\"");
		break;
	default:
		snprintf(out, n, "\"root\"");
	}
}

/* Every key set to a value other than its default, and a GPU entry with
 * every per-GPU key: --print-config's output parses back to the same. */
static void test_table_round_trip(void **state)
{
	size_t n, len = 0;
	const struct conf_key *k = conf_keys(&n);
	char text[4096], gtext[1024], v[64], err[256] = "";
	size_t glen = 0;
	struct conf a, b;
	char *json;
	cJSON *root;
	(void)state;

	for (size_t i = 0; i < n; i++) {
		other_value(&k[i], v, sizeof(v));
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"%s\"%s\": %s", len ? ", " : "{",
					k[i].name, v);
		if (k[i].gpu_bit)
			glen += (size_t)snprintf(gtext + glen,
				sizeof(gtext) - glen, "%s\"%s\": %s",
				glen ? ", " : "", k[i].name, v);
	}
	snprintf(text + len, sizeof(text) - len,
		 ", \"gpus\": {\"" UUID_AA "\": {%s}}, \"weights\": {\"users\": "
		 "{\"0\": 3}, \"groups\": {\"root\": 2}}}", gtext);
	conf_defaults(&a);
	if (conf_parse(&a, text, err, sizeof(err)) != 0)
		fail_msg("%s: %s", text, err);
	for (size_t i = 0; i < n; i++) {
		conf_defaults(&b);
		if (memcmp((char *)&a + k[i].off, (char *)&b + k[i].off,
			   k[i].size) == 0)
			fail_msg("%s: still its default", k[i].name);
		conf_free(&b);
	}
	json = conf_to_json(&a, a.socket);
	assert_non_null(json);
	root = cJSON_Parse(json);
	/* The table's keys, "gpus", "weights", "policy_users" and
	 * "policy_groups". */
	assert_int_equal(cJSON_GetArraySize(root), (int)n + 4);
	for (size_t i = 0; i < n; i++)
		if (!cJSON_HasObjectItem(root, k[i].name))
			fail_msg("--print-config has no %s", k[i].name);
	cJSON_Delete(root);
	conf_defaults(&b);
	if (conf_parse(&b, json, err, sizeof(err)) != 0)
		fail_msg("%s: %s", json, err);
	for (size_t i = 0; i < n; i++)
		if (memcmp((char *)&a + k[i].off, (char *)&b + k[i].off,
			   k[i].size) != 0)
			fail_msg("%s: not the same after a round trip",
				 k[i].name);
	assert_int_equal(b.n_gpus, 1);
	assert_memory_equal(a.gpus, b.gpus, sizeof(*a.gpus));
	assert_int_equal(a.gpus[0].set, SCHED_GCFG_TQ | SCHED_GCFG_MODE |
			 SCHED_GCFG_CAP | SCHED_GCFG_SLICE | SCHED_GCFG_TOTAL);
	/* The weights come back too, and give each peer its weight: the
	 * user's own, else its groups' (by uid), else 1. */
	assert_int_equal(b.n_weights, 2);
	assert_int_equal(conf_weight_of(&b, 0), 3);
	assert_int_equal(conf_weight_of(&b, 4242), SCHED_WEIGHT_DEFAULT);
	free(json);
	conf_free(&a);
	conf_free(&b);
}

/* A value as JSON for a key of a ranged type. */
static void ranged(const struct conf_key *k, double v, char *out, size_t n)
{
	if (k->type == CONF_T_OCTAL)
		snprintf(out, n, "\"%04llo\"", (unsigned long long)v);
	else
		snprintf(out, n, "%.17g", v);
}

/* One value of key k, top-level and in a GPU entry where it may be:
 * accepted or refused with an error that names the key. */
static void try_value(const struct conf_key *k, const char *v, int ok)
{
	char text[512], name[160], err[256] = "";
	struct conf c;

	for (int gpu = 0; gpu <= (k->gpu_bit != 0); gpu++) {
		if (gpu) {
			snprintf(text, sizeof(text), "{\"gpus\": {\"" UUID_AA
				 "\": {\"%s\": %s}}}", k->name, v);
			snprintf(name, sizeof(name), "gpus." UUID_AA ".%s",
				 k->name);
		} else {
			snprintf(text, sizeof(text), "{\"%s\": %s}", k->name, v);
			snprintf(name, sizeof(name), "%s", k->name);
		}
		conf_defaults(&c);
		if ((conf_parse(&c, text, err, sizeof(err)) == 0) != ok)
			fail_msg("%s: %s", text, ok ? err : "accepted");
		if (!ok && strncmp(err, name, strlen(name)) != 0)
			fail_msg("%s: error does not name %s: %s", text, name,
				 err);
		conf_free(&c);
	}
}

/* Each range: its ends accepted, a value just outside refused. */
static void test_table_ranges(void **state)
{
	size_t n;
	const struct conf_key *k = conf_keys(&n);
	char v[64];
	(void)state;

	for (size_t i = 0; i < n; i++, k++) {
		if (k->type != CONF_T_UINT && k->type != CONF_T_SIZE &&
		    k->type != CONF_T_MEM && k->type != CONF_T_OCTAL)
			continue;
		ranged(k, (double)k->lo, v, sizeof(v));
		try_value(k, v, 1);
		ranged(k, (double)k->hi, v, sizeof(v));
		try_value(k, v, 1);
		ranged(k, nextafter((double)k->hi, INFINITY), v, sizeof(v));
		if (k->type == CONF_T_OCTAL)
			ranged(k, (double)k->hi + 1, v, sizeof(v));
		try_value(k, v, 0);
		ranged(k, (double)k->lo - 1, v, sizeof(v));
		try_value(k, v, 0);
	}
}

/* A reload keeps the running values of the keys bound to the socket and
 * names those that changed. */
static void test_keep_restart(void **state)
{
	struct conf old, nc;
	char changed[128], err[256];
	(void)state;

	conf_defaults(&old);
	conf_defaults(&nc);
	assert_int_equal(conf_keep_restart(&old, &nc, changed,
					   sizeof(changed)), 0);
	assert_int_equal(conf_parse(&nc, "{\"socket_mode\": \"0600\", "
				    "\"socket\": \"/x.sock\", \"tq_s\": 5}",
				    err, sizeof(err)), 0);
	assert_int_equal(conf_keep_restart(&old, &nc, changed,
					   sizeof(changed)), 2);
	assert_string_equal(changed, "socket, socket_mode");
	assert_int_equal(nc.socket_mode, 0660);
	assert_string_equal(nc.socket, "");
	assert_int_equal(nc.tq_s, 5);
}

/* The admin's policy: bad entries are refused with the key named. */
static void test_policy_bad(void **state)
{
	(void)state;
	bad("{\"policy_users\": []}", "policy_users: must be an object");
	bad("{\"policy_users\": {\"0\": 3}}", "policy_users.0: must be an object");
	bad("{\"policy_users\": {\"0\": {\"limit\": 3}}}",
	    "policy_users.0.limit: unknown key");
	bad("{\"policy_users\": {\"0\": {\"mem_limit\": \"8X\"}}}",
	    "policy_users.0.mem_limit: '8X': not a size (like 8G, 512M or "
	    "1.5T; bytes like 4096B)");
	bad("{\"policy_users\": {\"0\": {\"mem_limit\": \"9P\"}}}",
	    "policy_users.0.mem_limit: '9P': not a size");
	bad("{\"policy_users\": {\"0\": {\"mem_limit\": \"9000T\"}}}",
	    "policy_users.0.mem_limit: \"9000T\" is past the largest limit, "
	    "9007199254740992 bytes");
	bad("{\"policy_users\": {\"0\": {\"mem_limit\": -1}}}",
	    "policy_users.0.mem_limit: must be bytes");
	bad("{\"policy_users\": {\"0\": {\"mem_limit\": 1.5}}}",
	    "policy_users.0.mem_limit");
	bad("{\"policy_users\": {\"0\": {\"mem_limit\": \"8\"}}}",
	    "policy_users.0.mem_limit: '8': a size needs a unit (K, M, G, T); "
	    "a bare number below 1 MiB is refused, write 8G or 8B");
	bad("{\"policy_users\": {\"0\": {\"mem_limit\": 8}}}",
	    "policy_users.0.mem_limit: '8': a size needs a unit (K, M, G, T); "
	    "a bare number below 1 MiB is refused, write 8G or 8B");
	bad("{\"policy_users\": {\"0\": {\"require\": 1}}}",
	    "policy_users.0.require: must be true or false");
	bad("{\"policy_users\": {\"0\": {\"weight\": 0}}}",
	    "policy_users.0.weight: must be a whole number from 1 to 1000");
	bad("{\"policy_users\": {\"0\": {\"weight\": 2, \"weight\": 3}}}",
	    "policy_users.0.weight: given twice");
	bad("{\"policy_users\": {\"0\": {}, \"root\": {}}}",
	    "policy_users.root: the same user as \"0\"");
	bad("{\"policy_users\": {\"no-such-user-vshare\": {}}}",
	    "policy_users: no user \"no-such-user-vshare\"");
	bad("{\"policy_groups\": {\"no-such-group-vshare\": {}}}",
	    "policy_groups: no group \"no-such-group-vshare\"");
}

/* Precedence: a user's entry wins for what it sets; among its groups the
 * lowest limit, require if any requires, the largest weight; a weight
 * set nowhere in the policy comes from "weights". */
static void test_policy_of(void **state)
{
	static const char text[] =
		"{\"weights\": {\"users\": {\"5003\": 7}},"
		" \"policy_groups\": {"
		"  \"4242\": {\"mem_limit\": \"8G\", \"weight\": 3},"
		"  \"4343\": {\"mem_limit\": \"4G\", \"require\": true},"
		"  \"4444\": {\"mem_limit\": 0, \"weight\": 2}},"
		" \"policy_users\": {"
		"  \"5001\": {\"mem_limit\": 0},"
		"  \"5002\": {\"require\": false, \"weight\": 9}}}";
	uint32_t both[] = { 5000, 5001, 5002, 5003 };
	struct conf c;
	struct conf_policy p;
	char err[256] = "", *json;

	(void)state;
	conf_defaults(&c);
	if (conf_parse(&c, text, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(c.n_pols, 5);
	/* Groups 4242 and 4343 list users 5000 to 5003 as members (the
	 * gids have no entry here, so the test sets the lists). */
	for (size_t i = 0; i < c.n_pols; i++) {
		struct conf_who *w = &c.pols[i].who;

		if (!w->group || w->id == 4444)
			continue;
		w->members = malloc(sizeof(both));
		assert_non_null(w->members);
		memcpy(w->members, both, sizeof(both));
		w->n_members = 4;
	}
	/* Nobody's: no limit, not required, weight 1. */
	conf_policy_of(&c, 6000, &p);
	assert_int_equal(p.mem_limit, 0);
	assert_int_equal(p.require, 0);
	assert_int_equal(p.weight, 1);
	/* Both groups as a member: the lowest limit, require from 4343,
	 * the largest weight. */
	conf_policy_of(&c, 5000, &p);
	assert_int_equal(p.mem_limit, 4ull << 30);
	assert_int_equal(p.require, 1);
	assert_int_equal(p.weight, 3);
	/* A user's own mem_limit 0 lifts the groups' limits; the rest
	 * still comes from the groups. */
	conf_policy_of(&c, 5001, &p);
	assert_int_equal(p.mem_limit, 0);
	assert_int_equal(p.require, 1);
	assert_int_equal(p.weight, 3);
	/* A user's require false and weight win over the groups'. */
	conf_policy_of(&c, 5002, &p);
	assert_int_equal(p.mem_limit, 4ull << 30);
	assert_int_equal(p.require, 0);
	assert_int_equal(p.weight, 9);
	/* A weight the policy sets for a group wins over "weights". */
	conf_policy_of(&c, 5003, &p);
	assert_int_equal(p.weight, 3);
	/* --print-config writes what each entry sets, and reads back. */
	json = conf_to_json(&c, "/run/x.sock");
	assert_non_null(json);
	assert_non_null(strstr(json, "\"mem_limit\":\t4294967296"));
	conf_free(&c);
	conf_defaults(&c);
	if (conf_parse(&c, json, err, sizeof(err)) != 0)
		fail_msg("%s: %s", json, err);
	assert_int_equal(c.n_pols, 5);
	for (size_t i = 0; i < c.n_pols; i++) {
		if (!c.pols[i].who.group || c.pols[i].who.id != 4343)
			continue;
		assert_int_equal(c.pols[i].mem_limit, 4ull << 30);
		assert_int_equal(c.pols[i].require, 1);
	}
	free(json);
	conf_free(&c);
}

/* Group membership comes from the system's databases, by uid: the
 * members /etc/group lists and the users whose primary group it is in
 * /etc/passwd (Debian's "daemon" and "nogroup" list no one; their users
 * have them as primary group). The peer's gid never counts: sg(1) or
 * newgrp(1) would let a user step out of a limited group, or into one. */
static void test_group_members_by_uid(void **state)
{
	struct conf_who w;
	struct passwd *pw;
	char err[256];

	(void)state;
	pw = getpwnam("nobody");
	if (pw == NULL || getgrgid(pw->pw_gid) == NULL)
		skip();
	assert_int_equal(conf_who_set(&w, getgrgid(pw->pw_gid)->gr_name, 1,
				      "policy_groups", err, sizeof(err)), 0);
	assert_int_equal(w.id, pw->pw_gid);
	assert_true(conf_who_match(&w, (uint32_t)pw->pw_uid));
	assert_false(conf_who_match(&w, 4242));
	conf_who_free(&w);
	/* The same by id, and a gid that no group names: its users by
	 * primary group alone. */
	snprintf(err, sizeof(err), "%u", (unsigned)pw->pw_gid);
	assert_int_equal(conf_who_set(&w, err, 1, "k", err, sizeof(err)), 0);
	assert_true(conf_who_match(&w, (uint32_t)pw->pw_uid));
	conf_who_free(&w);
	assert_int_equal(conf_who_set(&w, "4000000000", 1, "k", err,
				      sizeof(err)), 0);
	assert_false(conf_who_match(&w, 4000000000u));
	assert_false(conf_who_match(&w, (uint32_t)pw->pw_uid));
	conf_who_free(&w);
}

/* A peer whose effective gid is a limited group's, but who is not a
 * member by uid, gets nothing from it; a member gets it whatever gid it
 * runs with (conf_policy_of takes no gid). */
static void test_policy_gid_ignored(void **state)
{
	struct passwd *pw = getpwnam("nobody");
	struct conf c;
	struct conf_policy p;
	char text[256], err[256];

	(void)state;
	if (pw == NULL)
		skip();
	snprintf(text, sizeof(text), "{\"policy_groups\": {\"%u\": "
		 "{\"mem_limit\": \"1G\", \"require\": true}}}",
		 (unsigned)pw->pw_gid);
	conf_defaults(&c);
	if (conf_parse(&c, text, err, sizeof(err)) != 0)
		fail_msg("%s: %s", text, err);
	conf_policy_of(&c, (uint32_t)pw->pw_uid, &p);
	assert_int_equal(p.mem_limit, 1ull << 30);
	assert_int_equal(p.require, 1);
	conf_policy_of(&c, 4242, &p);
	assert_int_equal(p.mem_limit, 0);
	assert_int_equal(p.require, 0);
	conf_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_every_key),
		cmocka_unit_test(test_mem_units),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_trailing_data),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_file_and_print),
		cmocka_unit_test(test_groups),
		cmocka_unit_test(test_listen_addr),
		cmocka_unit_test(test_table_fields),
		cmocka_unit_test(test_table_round_trip),
		cmocka_unit_test(test_table_ranges),
		cmocka_unit_test(test_keep_restart),
		cmocka_unit_test(test_policy_bad),
		cmocka_unit_test(test_policy_of),
		cmocka_unit_test(test_group_members_by_uid),
		cmocka_unit_test(test_policy_gid_ignored),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
