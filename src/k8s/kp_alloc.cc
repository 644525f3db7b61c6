/*
 * Shares and what a container gets for them. A share's id is "G-S" (GPU
 * G's share S); the kubelet hands a container any set of them, and the
 * answer names the GPUs behind the set: their CDI devices, or (--mode
 * env) what the CDI spec would have put in the container, read from the
 * spec itself so that both modes give the same container. The admin's
 * policy rides along in the environment: VSHARE_MEM_LIMIT (the sum of
 * the shares' memory, as the Slurm plugin does), VSHARE_CLASS, and VSHARE_LABEL,
 * the token that lets the scheduler name the pod.
 */
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include <cjson/cJSON.h>

#include "kp.h"

extern "C" {
#include "size.h"
}

std::string kp_share_id(unsigned gpu, unsigned share)
{
	return std::to_string(gpu) + "-" + std::to_string(share);
}

static bool digits(const std::string &s, size_t from, size_t to, unsigned &out)
{
	if (from >= to || to - from > 4 || (s[from] == '0' && to - from > 1))
		return false;
	out = 0;
	for (size_t i = from; i < to; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		out = out * 10 + (unsigned)(s[i] - '0');
	}
	return true;
}

bool kp_share_parse(const std::string &id, kp_share &out)
{
	size_t dash = id.find('-');

	return dash != std::string::npos &&
	       digits(id, 0, dash, out.gpu) &&
	       digits(id, dash + 1, id.size(), out.share);
}

static bool share_less(const kp_share &a, const kp_share &b)
{
	return a.gpu != b.gpu ? a.gpu < b.gpu : a.share < b.share;
}

std::string kp_token_label(const std::vector<std::string> &ids)
{
	bool any = false;
	kp_share low{ 0, 0 }, s;

	for (const std::string &id : ids)
		if (kp_share_parse(id, s) && (!any || share_less(s, low))) {
			low = s;
			any = true;
		}
	return any ? "k8s:" + kp_share_id(low.gpu, low.share) : "";
}

std::vector<std::string> kp_prefer(const std::vector<std::string> &avail,
				   const std::vector<std::string> &must,
				   size_t size)
{
	std::map<unsigned, std::vector<kp_share>> free;
	std::vector<std::string> out(must.begin(), must.end());
	std::set<std::string> taken(must.begin(), must.end());
	std::vector<unsigned> order;
	kp_share s;

	for (const std::string &id : avail)
		if (!taken.count(id) && kp_share_parse(id, s))
			free[s.gpu].push_back(s);
	/* The GPUs of `must` first (a container's shares stay on one GPU
	 * where they can), then the one with the most free shares: new
	 * pods spread over the node's GPUs. */
	for (const std::string &id : must)
		if (kp_share_parse(id, s) &&
		    std::find(order.begin(), order.end(), s.gpu) == order.end())
			order.push_back(s.gpu);
	std::vector<std::pair<size_t, unsigned>> rest;
	for (auto &f : free)
		if (std::find(order.begin(), order.end(), f.first) == order.end())
			rest.push_back({ f.second.size(), f.first });
	std::sort(rest.begin(), rest.end(), [](auto &a, auto &b) {
		return a.first != b.first ? a.first > b.first : a.second < b.second;
	});
	for (auto &r : rest)
		order.push_back(r.second);
	for (unsigned gpu : order) {
		auto &v = free[gpu];
		std::sort(v.begin(), v.end(), share_less);
		for (const kp_share &x : v) {
			if (out.size() >= size)
				return out;
			out.push_back(kp_share_id(x.gpu, x.share));
		}
	}
	return out;
}

/* --- the CDI spec, for --mode env and for the GPU list --- */

namespace {

struct spec_text {
	cJSON *root = nullptr;
	~spec_text() { cJSON_Delete(root); }
};

std::string load(const std::string &path, spec_text &t)
{
	std::ifstream f(path);
	std::stringstream ss;

	if (!f)
		return "cannot read the CDI spec " + path +
		       " (write it with vsharectl cdi generate -o " + path + ")";
	ss << f.rdbuf();
	t.root = cJSON_Parse(ss.str().c_str());
	if (!cJSON_IsObject(t.root))
		return "the CDI spec " + path + " is not a JSON object";
	return "";
}

const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : nullptr;
}

const cJSON *device(const cJSON *root, const std::string &name)
{
	const cJSON *d;

	cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(root, "devices")) {
		const char *n = str(d, "name");
		if (n != nullptr && name == n)
			return d;
	}
	return nullptr;
}

/* One containerEdits object into g: nodes, mounts and environment. */
void edits(const cJSON *ed, kp_grant &g)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(ed, "deviceNodes")) {
		const char *p = str(it, "path"), *h = str(it, "hostPath");
		if (p != nullptr)
			g.devices.push_back({ h ? h : p, p, "rw" });
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(ed, "mounts")) {
		const char *h = str(it, "hostPath"), *c = str(it, "containerPath");
		const cJSON *o;
		bool ro = false;

		cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(it, "options"))
			ro = ro || (cJSON_IsString(o) &&
				    std::string(o->valuestring) == "ro");
		if (h != nullptr && c != nullptr)
			g.mounts.push_back({ h, c, ro });
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(ed, "env")) {
		std::string e = cJSON_IsString(it) ? it->valuestring : "";
		size_t eq = e.find('=');
		if (eq != std::string::npos && eq > 0)
			g.envs[e.substr(0, eq)] = e.substr(eq + 1);
	}
}

std::string from_spec(const kp_conf &c, const std::set<unsigned> &gpus,
		      kp_grant &g)
{
	spec_text t;
	std::string why = load(c.cdi_spec, t);

	if (!why.empty())
		return why;
	for (unsigned gpu : gpus) {
		const cJSON *d = device(t.root, std::to_string(gpu));
		if (d == nullptr)
			return "the CDI spec " + c.cdi_spec + " has no device " +
			       std::to_string(gpu) + ": generate it again";
		edits(cJSON_GetObjectItemCaseSensitive(d, "containerEdits"), g);
	}
	edits(cJSON_GetObjectItemCaseSensitive(t.root, "containerEdits"), g);
	return "";
}

} // namespace

std::string kp_spec_gpus(const std::string &path, std::vector<unsigned> &out)
{
	spec_text t;
	std::string why = load(path, t);
	const cJSON *d;
	kp_share s;

	if (!why.empty())
		return why;
	cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(t.root, "devices")) {
		const char *n = str(d, "name");
		if (n != nullptr && kp_share_parse(std::string(n) + "-0", s))
			out.push_back(s.gpu);
	}
	std::sort(out.begin(), out.end());
	return out.empty() ? "the CDI spec " + path + " names no GPU" : "";
}

/* The GPU of share s among `gpus`, or null when s is not one of its
 * shares. */
static const kp_gpu *gpu_of(const std::vector<kp_gpu> &gpus, const kp_share &s)
{
	for (const kp_gpu &g : gpus)
		if (g.index == s.gpu)
			return s.share < g.shares ? &g : nullptr;
	return nullptr;
}

std::string kp_allocate(const kp_conf &c, const std::vector<kp_gpu> &gpus,
			const std::vector<std::string> &ids, kp_grant &g)
{
	std::set<unsigned> used;
	std::set<std::string> seen;
	uint64_t limit = 0;
	bool limited = true;
	kp_share s;

	if (ids.empty())
		return "no share asked for";
	/* Every id must be a share this plugin listed, once: the kubelet
	 * never sends another, so anything else is a caller's mistake that
	 * would name a CDI device no spec has, or multiply the limit. */
	for (const std::string &id : ids) {
		const kp_gpu *gpu;

		if (!kp_share_parse(id, s) || (gpu = gpu_of(gpus, s)) == nullptr)
			return "not a share of this plugin: " + id;
		if (!seen.insert(id).second)
			return "share " + id + " asked for twice";
		used.insert(s.gpu);
		if (gpu->shard_mem == 0)
			limited = false;
		else if (limit > UINT64_MAX - gpu->shard_mem)
			return "the shares' memory does not fit in 64 bits";
		else
			limit += gpu->shard_mem;
	}
	if (c.cdi) {
		for (unsigned gpu : used)
			g.cdi_devices.push_back(c.cdi_kind + "=" +
						std::to_string(gpu));
	} else {
		std::string why = from_spec(c, used, g);
		if (!why.empty())
			return why;
	}
	/* The admin's policy after the spec's environment: it wins. A
	 * share of a GPU without a limit leaves the container without one. */
	if (limited)
		g.envs["VSHARE_MEM_LIMIT"] = std::to_string(limit);
	if (!c.cls.empty())
		g.envs["VSHARE_CLASS"] = c.cls;
	g.envs["VSHARE_LABEL"] = kp_token_label(ids);
	return "";
}

std::string kp_mem_arg(const char *opt, const char *arg, uint64_t *out)
{
	char why[VS_SIZE_ERR_LEN];
	int rc = vs_parse_size(arg, VS_SIZE_NEED_UNIT, out);

	if (rc != 0)
		return std::string(opt) + " " +
		       vs_size_error(why, sizeof(why), arg, rc);
	if (*out == 0)
		return std::string(opt) + " takes a size above 0: " + arg;
	return "";
}
