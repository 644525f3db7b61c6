/*
 * The node's labels, for nodeSelector and affinity, as a local feature
 * file of Node Feature Discovery: NFD's worker reads every file of its
 * features.d directory, one NAME=VALUE a line, and its master puts them
 * on the node. The plugin needs no access to the API server for it.
 *
 * A node may hold GPUs of different sizes; a label has one value, so it
 * says what a pod can count on on any GPU of the node: the smallest
 * memory and the fewest shares, the model when all GPUs are of one
 * ("mixed" otherwise).
 */
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "kp.h"

namespace {

/* A label value: at most 63 characters, letters, digits, '-', '_' and
 * '.', beginning and ending with a letter or digit. NVML's names have
 * spaces ("NVIDIA H100 80GB HBM3"): each run of other characters
 * becomes one '-'. */
std::string label_value(const std::string &s)
{
	std::string out;

	for (char ch : s) {
		bool ok = isalnum((unsigned char)ch) || ch == '-' || ch == '_' ||
			  ch == '.';
		if (ok)
			out += ch;
		else if (!out.empty() && out.back() != '-')
			out += '-';
	}
	if (out.size() > 63)
		out.resize(63);
	while (!out.empty() && !isalnum((unsigned char)out.back()))
		out.pop_back();
	while (!out.empty() && !isalnum((unsigned char)out[0]))
		out.erase(0, 1);
	return out;
}

std::string features(const std::vector<kp_gpu> &gpus)
{
	std::string out = "# written by vshare-device-plugin; do not edit\n";
	uint64_t mem = UINT64_MAX;
	unsigned shares = UINT32_MAX;
	std::string model = gpus.empty() ? "" : gpus[0].model;

	for (const kp_gpu &g : gpus) {
		mem = std::min(mem, g.memory);
		shares = std::min(shares, g.shares);
		if (g.model != model)
			model = "mixed";
	}
	out += "vshare.dev/gpu.sharing=vshare\n";
	out += "vshare.dev/gpu.count=" + std::to_string(gpus.size()) + "\n";
	if (gpus.empty())
		return out;
	out += "vshare.dev/gpu.shares=" + std::to_string(shares) + "\n";
	/* In MiB, as the GPU's own tools and other labellers say it. */
	if (mem != 0)
		out += "vshare.dev/gpu.memory=" + std::to_string(mem >> 20) + "\n";
	model = label_value(model);
	if (!model.empty())
		out += "vshare.dev/gpu.model=" + model + "\n";
	return out;
}

} // namespace

int kp_features_write(const kp_conf &c, const std::vector<kp_gpu> &gpus)
{
	const std::string &path = c.feature_file;
	size_t slash = path.rfind('/');
	/* NFD skips names that begin with a dot: it never reads the file
	 * half written. */
	std::string tmp = path.substr(0, slash + 1) + "." +
			  path.substr(slash + 1) + ".tmp";
	std::string text = features(gpus);
	int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	bool ok;

	/* The default path on a node without NFD: nothing to label for. */
	if (fd < 0 && errno == ENOENT && path == kp_conf().feature_file) {
		log_info("no node labels: %s does not exist (Node Feature "
			 "Discovery is not installed)", path.substr(0, slash).c_str());
		return 0;
	}
	if (fd < 0) {
		log_warn("node labels not written: %s: %s (is Node Feature "
			 "Discovery's features.d there? --feature-file \"\" "
			 "turns the labels off)", tmp.c_str(), strerror(errno));
		return -1;
	}
	ok = write(fd, text.data(), text.size()) == (ssize_t)text.size();
	ok = fsync(fd) == 0 && ok;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
		log_warn("node labels not written: %s: %s", path.c_str(),
			 strerror(errno));
		unlink(tmp.c_str());
		return -1;
	}
	log_info("node labels written to %s", path.c_str());
	return 0;
}
