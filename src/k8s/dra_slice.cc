/*
 * The node's ResourceSlice: one pool named after the node, one device per
 * GPU ("gpu-N", N of /dev/nvidiaN as the CDI spec names it) with its
 * attributes (uuid, index as nvidia-smi counts, minor, model, driver) and
 * its memory as a consumable capacity: allowMultipleAllocations lets
 * many claims share the device, and the kube-scheduler keeps the sum of
 * what they consume within the capacity. The request policy rounds a
 * request up to a multiple of --mem-step and gives a request that names
 * no memory --default-mem, so that no claim takes a GPU's whole memory
 * by forgetting to ask.
 */
#include <cinttypes>
#include <cmath>
#include <cstring>

#include <cjson/cJSON.h>

#include "dra.h"

bool dra_quantity(const std::string &s, uint64_t &out)
{
	static const struct { const char *suffix; long double mult; } units[] = {
		{ "Ki", 1024.0L }, { "Mi", 1048576.0L }, { "Gi", 1073741824.0L },
		{ "Ti", 1099511627776.0L }, { "Pi", 1125899906842624.0L },
		{ "Ei", 1152921504606846976.0L }, { "k", 1e3L }, { "M", 1e6L },
		{ "G", 1e9L }, { "T", 1e12L }, { "P", 1e15L }, { "E", 1e18L },
		{ "m", 1e-3L }, { "", 1.0L },
	};
	size_t i = 0, n = s.size();
	long double v;

	/* The number: digits with an optional fraction, no sign (memory is
	 * never negative). */
	bool digit = false;

	for (; i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.'); i++)
		if (s[i] != '.')
			digit = true;
	if (!digit || s.find('.') != s.rfind('.'))
		return false;
	v = std::strtold(s.substr(0, i).c_str(), nullptr);
	std::string rest = s.substr(i);
	if (!rest.empty() && (rest[0] == 'e' || rest[0] == 'E') && rest.size() > 1) {
		char *end;
		long e = strtol(rest.c_str() + 1, &end, 10);
		if (*end != '\0' || e < 0 || e > 18)
			return false;
		v *= powl(10.0L, (long double)e);
		rest.clear();
	}
	for (const auto &u : units)
		if (rest == u.suffix) {
			v = ceill(v * u.mult);
			if (v > 18446744073709551615.0L)
				return false;
			out = (uint64_t)v;
			return true;
		}
	return false;
}

std::string dra_quantity_str(uint64_t b)
{
	static const char *const suf[] = { "Ei", "Pi", "Ti", "Gi", "Mi", "Ki" };

	for (int i = 0; i < 6; i++) {
		uint64_t m = 1ull << (10 * (6 - i));
		if (b != 0 && b % m == 0)
			return std::to_string(b / m) + suf[i];
	}
	return std::to_string(b);
}

namespace {

cJSON *device(const dra_conf &c, const kp_gpu &g, const std::string &drv)
{
	cJSON *d = cJSON_CreateObject(), *attrs, *cap, *mem, *pol, *range;

	cJSON_AddStringToObject(d, "name", ("gpu-" + std::to_string(g.index)).c_str());
	attrs = cJSON_AddObjectToObject(d, "attributes");
	if (!g.uuid.empty())
		cJSON_AddStringToObject(cJSON_AddObjectToObject(attrs, "uuid"), "string",
					g.uuid.c_str());
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(attrs, "index"), "int", g.nvml);
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(attrs, "minor"), "int", g.index);
	if (!g.model.empty())
		cJSON_AddStringToObject(cJSON_AddObjectToObject(attrs, "model"), "string",
					g.model.c_str());
	/* A string, not a version: NVIDIA's numbers ("535.104.05") are not
	 * semantic versions. */
	if (!drv.empty())
		cJSON_AddStringToObject(cJSON_AddObjectToObject(attrs, "driver"), "string",
					drv.c_str());
	cJSON_AddBoolToObject(d, "allowMultipleAllocations", true);
	cap = cJSON_AddObjectToObject(d, "capacity");
	mem = cJSON_AddObjectToObject(cap, "memory");
	cJSON_AddStringToObject(mem, "value", dra_quantity_str(g.memory).c_str());
	pol = cJSON_AddObjectToObject(mem, "requestPolicy");
	cJSON_AddStringToObject(pol, "default",
				dra_quantity_str(c.default_mem).c_str());
	range = cJSON_AddObjectToObject(pol, "validRange");
	cJSON_AddStringToObject(range, "min", dra_quantity_str(c.mem_step).c_str());
	cJSON_AddStringToObject(range, "step", dra_quantity_str(c.mem_step).c_str());
	return d;
}

std::string slice_name(const dra_conf &c)
{
	return c.node + "-" + c.driver;
}

std::string why_not(const dra_http &r)
{
	if (r.status == 0)
		return r.error;
	cJSON *j = cJSON_Parse(r.body.c_str());
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
	std::string s = "HTTP " + std::to_string(r.status) +
			(cJSON_IsString(m) ? std::string(": ") + m->valuestring : "");
	cJSON_Delete(j);
	return s;
}

} // namespace

std::string dra_slice_json(const dra_conf &c, const std::vector<kp_gpu> &gpus,
			   const std::string &driver_version, int64_t gen)
{
	cJSON *s = cJSON_CreateObject(), *meta, *spec, *pool, *devs;

	cJSON_AddStringToObject(s, "apiVersion", "resource.k8s.io/v1");
	cJSON_AddStringToObject(s, "kind", "ResourceSlice");
	meta = cJSON_AddObjectToObject(s, "metadata");
	cJSON_AddStringToObject(meta, "name", slice_name(c).c_str());
	spec = cJSON_AddObjectToObject(s, "spec");
	cJSON_AddStringToObject(spec, "driver", c.driver.c_str());
	cJSON_AddStringToObject(spec, "nodeName", c.node.c_str());
	pool = cJSON_AddObjectToObject(spec, "pool");
	cJSON_AddStringToObject(pool, "name", c.node.c_str());
	cJSON_AddNumberToObject(pool, "generation", (double)gen);
	cJSON_AddNumberToObject(pool, "resourceSliceCount", 1);
	devs = cJSON_AddArrayToObject(spec, "devices");
	for (const kp_gpu &g : gpus)
		if (g.memory != 0)
			cJSON_AddItemToArray(devs, device(c, g, driver_version));
	char *txt = cJSON_PrintUnformatted(s);
	std::string out = txt;
	cJSON_free(txt);
	cJSON_Delete(s);
	return out;
}

std::string dra_slice_publish(const dra_conf &c, const std::vector<kp_gpu> &gpus,
			      const std::string &driver_version)
{
	const std::string coll = "/apis/resource.k8s.io/v1/resourceslices";
	dra_http r = dra_api_call(c, "GET", coll + "/" + slice_name(c), "");

	if (r.status == 404) {
		r = dra_api_call(c, "POST", coll,
				 dra_slice_json(c, gpus, driver_version, 1));
		if (r.status != 201 && r.status != 200)
			return "creating ResourceSlice " + slice_name(c) + ": " +
			       why_not(r);
		log_info("published ResourceSlice %s: %zu GPU(s)",
			 slice_name(c).c_str(), gpus.size());
		return "";
	}
	if (r.status != 200)
		return "reading ResourceSlice " + slice_name(c) + ": " + why_not(r);
	/* Ours from an earlier start: replaced, under the version read (a
	 * conflict means someone else wrote it meanwhile: the next try reads
	 * it again), with the pool's generation one higher so that the
	 * scheduler takes this one as the current. */
	cJSON *old = cJSON_Parse(r.body.c_str());
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(old, "metadata");
	const cJSON *rv = cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion");
	const cJSON *gen = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(old, "spec"), "pool"),
		"generation");
	std::string version = cJSON_IsString(rv) ? rv->valuestring : "";
	int64_t g = cJSON_IsNumber(gen) ? (int64_t)gen->valuedouble + 1 : 1;
	cJSON_Delete(old);
	cJSON *s = cJSON_Parse(dra_slice_json(c, gpus, driver_version, g).c_str());
	cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(s, "metadata"),
				"resourceVersion", version.c_str());
	char *txt = cJSON_PrintUnformatted(s);
	std::string body = txt;
	cJSON_free(txt);
	cJSON_Delete(s);
	r = dra_api_call(c, "PUT", coll + "/" + slice_name(c), body);
	if (r.status != 200)
		return "updating ResourceSlice " + slice_name(c) + ": " + why_not(r);
	log_info("published ResourceSlice %s: %zu GPU(s), generation %" PRId64,
		 slice_name(c).c_str(), gpus.size(), g);
	return "";
}
