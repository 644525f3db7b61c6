/*
 * vshare-dra-driver: vshare's driver for Kubernetes' Dynamic Resource
 * Allocation (resource.k8s.io/v1). It publishes the node's GPUs in a
 * ResourceSlice, each a device whose memory is a consumable capacity
 * that many claims share (allowMultipleAllocations), so that the
 * kube-scheduler places pods by the memory they ask for; on the node it
 * is the kubelet's DRA plugin: it registers through the plugin
 * registration API and prepares each claim as a CDI spec of its own
 * (the claim's memory as VSHARE_MEM_LIMIT, its class as VSHARE_CLASS).
 *
 * The parts: dra_conf (options), dra_api (the API server over HTTPS,
 * libcurl), dra_slice (the ResourceSlice), dra_claims (prepare,
 * unprepare, the CDI specs, the checkpoint), dra_server (the kubelet's
 * gRPC services), dra_main (start, the loop). The GPUs come from
 * kp_gpus.cc, shared with the device plugin.
 */
#ifndef VSHARE_DRA_H
#define VSHARE_DRA_H

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kp.h"

struct dra_conf {
	std::string driver = "vshare.dev";
	std::string node;                           /* --node-name, NODE_NAME */
	std::string registry = "/var/lib/kubelet/plugins_registry";
	std::string plugin_dir;                     /* /var/lib/kubelet/plugins/DRIVER */
	std::string cdi_dir = "/var/run/cdi";
	std::string gpu_kind = "vshare.dev/gpu";    /* vsharectl cdi generate's */
	std::string checkpoint;                     /* PLUGIN_DIR/checkpoint.json */
	std::string api_server;                     /* "": in-cluster */
	std::string token_file =
		"/var/run/secrets/kubernetes.io/serviceaccount/token";
	std::string ca_file =
		"/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
	std::string gpus;                           /* as the device plugin's */
	std::string host_root = "/";
	std::string cdi_spec = "/var/run/cdi/vshare.json";
	uint64_t default_mem = 1ull << 30;          /* a request without memory */
	uint64_t mem_step = 256ull << 20;           /* what requests round up to */
};

/* 0 and c filled; 1 after --help or --version (exit 0); 2 on bad usage,
 * said on stderr. */
int dra_conf_parse(int argc, char **argv, dra_conf &c);

/* --- the API server --- */
struct dra_http {
	long status = 0;            /* HTTP status; 0: no answer */
	std::string body;
	std::string error;          /* why there was no answer */
};

/* Ready to call the API server (libcurl's global state, the URL from
 * --api-server or the in-cluster environment): "" or why not. */
std::string dra_api_init(const dra_conf &c);
/* One request: method, path ("/apis/..."), JSON body or "". The
 * service account's token is read again for each (it rotates). */
dra_http dra_api_call(const dra_conf &c, const char *method,
		      const std::string &path, const std::string &body);
void dra_api_close();

/* --- the ResourceSlice --- */
/* The node's ResourceSlice as JSON, for pool generation `gen`. */
std::string dra_slice_json(const dra_conf &c, const std::vector<kp_gpu> &gpus,
			   const std::string &driver_version, int64_t gen);
/* Create or update the node's ResourceSlice: "" or why not. */
std::string dra_slice_publish(const dra_conf &c, const std::vector<kp_gpu> &gpus,
			      const std::string &driver_version);
/* A Kubernetes quantity ("8Gi", "512M", "1.5Gi", "1e9") in bytes,
 * rounded up; false for anything else. */
bool dra_quantity(const std::string &s, uint64_t &out);
std::string dra_quantity_str(uint64_t bytes);

/* --- claims --- */
struct dra_device {
	std::vector<std::string> requests;  /* the claim's requests it serves */
	std::string pool, device, share_id;
	std::vector<std::string> cdi_ids;
};
struct dra_prepared {
	std::string ns, name;
	std::vector<dra_device> devices;
	std::map<std::string, std::string> env;     /* the claim's CDI device */
};

/* The claim as the API server has it (JSON), or why not. */
typedef std::function<std::string(const std::string &ns, const std::string &name,
				  std::string &json)> dra_fetch_fn;

/* The prepared claims, from the checkpoint file; their CDI specs written
 * again where they are missing. 0, or -1 logged (a checkpoint that cannot
 * be read is kept aside, not overwritten). */
int dra_claims_open(const dra_conf &c);
/* Prepare claim uid: its devices, or "" and why not. Prepared once: a
 * second call answers what the first did. */
std::string dra_prepare(const dra_conf &c, const dra_fetch_fn &fetch,
			const std::string &ns, const std::string &uid,
			const std::string &name, dra_prepared &out);
/* Unprepare: its CDI spec removed, forgotten; "" (also for a claim not
 * prepared here) or why not. */
std::string dra_unprepare(const dra_conf &c, const std::string &uid);

/* --- the kubelet's services --- */
/* Serve DRAPlugin on plugin_dir/dra.sock and Registration on
 * registry/DRIVER-reg.sock; 0, or -1 logged. */
int dra_server_start(const dra_conf &c, const dra_fetch_fn &fetch);
void dra_server_stop(const dra_conf &c);

#endif
