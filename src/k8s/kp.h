/*
 * vshare-device-plugin: the kubelet's device plugin for vshare. It
 * advertises each GPU as a number of shares of one resource
 * (vshare.dev/gpu), answers the kubelet's Allocate with the CDI device of
 * the shares' GPU (or the same content as plain mounts, device nodes and
 * environment) plus the admin's memory limit and class, and names the
 * pods that hold shares to the scheduler.
 *
 * The parts: kp_conf (options), kp_gpus (the GPUs and their health),
 * kp_alloc (share ids, the preferred allocation, the Allocate answer),
 * kp_server (the DevicePlugin service, its socket, registration),
 * kp_pods (the kubelet's PodResources, the names handed to the
 * scheduler), kp_main (the loop that watches the kubelet's directory).
 */
#ifndef VSHARE_KP_H
#define VSHARE_KP_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

extern "C" {
#include "log.h"
}

struct kp_conf {
	std::string plugin_dir = "/var/lib/kubelet/device-plugins";
	std::string kubelet_sock = "kubelet.sock";  /* in plugin_dir */
	std::string endpoint = "vshare.sock";       /* ours, in plugin_dir */
	std::string resource = "vshare.dev/gpu";
	unsigned shares = 0;                        /* per GPU; 0: kp_gpu_shares */
	uint64_t shard_mem = 0;                     /* per share; 0: kp_gpu_shares */
	std::string cls;                            /* VSHARE_CLASS, or empty */
	bool cdi = true;                            /* --mode cdi, or env */
	std::string cdi_kind = "vshare.dev/gpu";
	std::string cdi_spec = "/var/run/cdi/vshare.json";
	std::string gpus;                           /* "0,1": no NVML */
	std::string pod_resources = "/var/lib/kubelet/pod-resources/kubelet.sock";
	std::string sched_socket;                   /* the scheduler's */
	std::string vsharectl;
	unsigned health_ms = 5000;
	unsigned pods_ms = 10000;
	bool names = true;                          /* name pods to the scheduler */
	std::string host_root = "/";                /* where /sys is found */
	std::string feature_file =                  /* NFD's local features */
		"/etc/kubernetes/node-feature-discovery/features.d/vshare";
};

/* 0 and c filled; 1 after --help or --version (exit 0); 2 on bad usage,
 * said on stderr. */
int kp_conf_parse(int argc, char **argv, kp_conf &c);

/* --- GPUs --- */
struct kp_gpu {
	unsigned index;     /* N of /dev/nvidiaN: the CDI device's name */
	unsigned nvml;      /* NVML's index, for its health */
	bool healthy;
	uint64_t memory = 0;        /* bytes, from NVML; 0: not known */
	std::string model;          /* NVML's name, or empty */
	std::string uuid;           /* NVML's, or empty */
	int numa = -1;              /* its PCI device's NUMA node, or -1 */
	unsigned shares = 0;        /* kp_gpu_shares */
	uint64_t shard_mem = 0;     /* bytes per share; 0: no limit */
};

/* The node's GPUs: from NVML when it loads (health: NVML answers for the
 * GPU; memory, model and NUMA node), else --gpus, else the CDI spec's
 * devices (always healthy, nothing more known). Each with its shares
 * (kp_gpu_shares). 0, or -1 with the reason logged. */
int kp_gpus_open(const kp_conf &c, std::vector<kp_gpu> &out);
/* A GPU's shares and memory per share, from the options and its memory:
 * both options given, as given; --shard-mem alone, as many shares as fit
 * in the GPU's memory; --shares alone, the memory split among them (in
 * whole MiB); neither, a share per GiB. 1 to 1000 shares; a GPU whose
 * memory is not known gets --shares (else 10) and --shard-mem (else no
 * limit). */
void kp_gpu_shares(const kp_conf &c, kp_gpu &g);
/* The NUMA node of PCI device `bus_id` (NVML's form, "00000000:3B:00.0")
 * from ROOT/sys/bus/pci/devices/<bus>/numa_node; -1 when it has none. */
int kp_numa_node(const std::string &root, const std::string &bus_id);
/* Write the node's labels as a Node Feature Discovery local feature file
 * (c.feature_file; written whole through a temporary file and a rename).
 * 0, or -1 logged. */
int kp_features_write(const kp_conf &c, const std::vector<kp_gpu> &gpus);
/* The NVIDIA driver's version as NVML says it ("550.54.15"), or empty. */
std::string kp_gpus_driver();
/* Health again; true when any GPU changed. */
bool kp_gpus_refresh(std::vector<kp_gpu> &gpus);
void kp_gpus_close();

/* --- shares and allocation --- */
struct kp_share {
	unsigned gpu, share;
};

std::string kp_share_id(unsigned gpu, unsigned share);
/* A share id as kp_share_id writes it; false for anything else. */
bool kp_share_parse(const std::string &id, kp_share &out);
/* The label of a container's clients: "k8s:" and its lowest share. */
std::string kp_token_label(const std::vector<std::string> &ids);

/* Up to `size` ids from `avail`, `must` first, then from as few GPUs as
 * possible: the GPU of `must`, then the one with the most free shares. */
std::vector<std::string> kp_prefer(const std::vector<std::string> &avail,
				   const std::vector<std::string> &must,
				   size_t size);

struct kp_mount {
	std::string host, ctr;
	bool ro;
};
struct kp_devnode {
	std::string host, ctr, perms;
};
/* What one container gets. */
struct kp_grant {
	std::map<std::string, std::string> envs;
	std::vector<kp_mount> mounts;
	std::vector<kp_devnode> devices;
	std::vector<std::string> cdi_devices;
};

/* The answer for one container's share ids, each one a share of one of
 * `gpus` and none twice: "" and g filled, or why not. */
std::string kp_allocate(const kp_conf &c, const std::vector<kp_gpu> &gpus,
			const std::vector<std::string> &ids, kp_grant &g);

/* The numeric device names of the CDI spec (its GPUs), or why not. */
std::string kp_spec_gpus(const std::string &path, std::vector<unsigned> &out);

/* An option's GPU memory in the shim's grammar (src/common/size.h),
 * above 0: "" and out set, or the refusal, naming the option, the value
 * and why (both plugins' options). */
std::string kp_mem_arg(const char *opt, const char *arg, uint64_t *out);

/* --- the gRPC side --- */
/* Start serving on plugin_dir/endpoint; 0, or -1 logged. */
int kp_server_start(const kp_conf &c);
void kp_server_stop();
/* Register with the kubelet, waiting up to a few seconds for it to
 * listen: 0; -1 when it did not answer (logged, try again); -2 when it
 * answered with a refusal (logged: the API says the plugin then ends). */
int kp_register(const kp_conf &c);
/* The GPUs' health changed: ListAndWatch streams send the new list. */
void kp_server_update(const std::vector<kp_gpu> &gpus);

/* --- pods --- */
/* Read PodResources and hand the scheduler the names that changed (or
 * all of them again, every `republish` polls, for a scheduler that
 * restarted). */
void kp_pods_poll(const kp_conf &c);

#endif
