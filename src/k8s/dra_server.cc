/*
 * The kubelet's side of the driver: the plugin registration service on a
 * socket in the kubelet's plugin registry (the kubelet finds it there by
 * inotify, asks GetInfo, and says with NotifyRegistrationStatus whether it
 * took us), and the DRA service (v1, the version kubelets serve from
 * Kubernetes 1.34) on the socket that GetInfo names. A kubelet that
 * restarts finds the registration socket again by itself: nothing to
 * redo here, unlike a device plugin.
 */
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <grpcpp/grpcpp.h>

#include "dra.h"
#include "dra/v1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace dra = k8s::io::kubelet::pkg::apis::dra::v1;
namespace reg = pluginregistration;
using grpc::ServerContext;
using grpc::Status;

namespace {

std::string dra_sock(const dra_conf &c)
{
	return c.plugin_dir + "/dra.sock";
}

std::string reg_sock(const dra_conf &c)
{
	return c.registry + "/" + c.driver + "-reg.sock";
}

class registration final : public reg::Registration::Service {
public:
	explicit registration(const dra_conf &c) : conf(c) {}

	Status GetInfo(ServerContext *, const reg::InfoRequest *,
		       reg::PluginInfo *out) override
	{
		out->set_type("DRAPlugin");
		out->set_name(conf.driver);
		out->set_endpoint(dra_sock(conf));
		out->add_supported_versions("v1.DRAPlugin");
		return Status::OK;
	}

	Status NotifyRegistrationStatus(ServerContext *,
					const reg::RegistrationStatus *st,
					reg::RegistrationStatusResponse *) override
	{
		if (st->plugin_registered())
			log_info("registered with the kubelet as %s",
				 conf.driver.c_str());
		else
			log_error("the kubelet refused the registration: %s",
				  st->error().c_str());
		return Status::OK;
	}

private:
	const dra_conf &conf;
};

class plugin final : public dra::DRAPlugin::Service {
public:
	plugin(const dra_conf &c, const dra_fetch_fn &f) : conf(c), fetch(f) {}

	Status NodePrepareResources(ServerContext *,
				    const dra::NodePrepareResourcesRequest *req,
				    dra::NodePrepareResourcesResponse *out) override
	{
		for (const auto &cl : req->claims()) {
			dra::NodePrepareResourceResponse r;
			dra_prepared p;
			std::string why = dra_prepare(conf, fetch, cl.namespace_(),
						      cl.uid(), cl.name(), p);

			if (!why.empty()) {
				log_warn("claim %s/%s not prepared: %s",
					 cl.namespace_().c_str(), cl.name().c_str(),
					 why.c_str());
				r.set_error(why);
			}
			for (const dra_device &d : p.devices) {
				auto *x = r.add_devices();
				for (auto &n : d.requests)
					x->add_request_names(n);
				x->set_pool_name(d.pool);
				x->set_device_name(d.device);
				if (!d.share_id.empty())
					x->set_share_id(d.share_id);
				for (auto &id : d.cdi_ids)
					x->add_cdi_device_ids(id);
			}
			(*out->mutable_claims())[cl.uid()] = r;
		}
		return Status::OK;
	}

	Status NodeUnprepareResources(ServerContext *,
				      const dra::NodeUnprepareResourcesRequest *req,
				      dra::NodeUnprepareResourcesResponse *out) override
	{
		for (const auto &cl : req->claims()) {
			dra::NodeUnprepareResourceResponse r;
			std::string why = dra_unprepare(conf, cl.uid());

			if (!why.empty()) {
				log_warn("claim %s/%s not unprepared: %s",
					 cl.namespace_().c_str(), cl.name().c_str(),
					 why.c_str());
				r.set_error(why);
			}
			(*out->mutable_claims())[cl.uid()] = r;
		}
		return Status::OK;
	}

private:
	const dra_conf &conf;
	dra_fetch_fn fetch;
};

std::unique_ptr<registration> reg_service;
std::unique_ptr<plugin> dra_service;
std::unique_ptr<grpc::Server> server;

} // namespace

int dra_server_start(const dra_conf &c, const dra_fetch_fn &fetch)
{
	grpc::ServerBuilder b;

	if (mkdir(c.plugin_dir.c_str(), 0750) != 0 && errno != EEXIST) {
		log_error("cannot make %s: %s", c.plugin_dir.c_str(), strerror(errno));
		return -1;
	}
	/* Ours from an earlier run. */
	unlink(dra_sock(c).c_str());
	unlink(reg_sock(c).c_str());
	reg_service = std::make_unique<registration>(c);
	dra_service = std::make_unique<plugin>(c, fetch);
	b.AddListeningPort("unix:" + dra_sock(c), grpc::InsecureServerCredentials());
	b.AddListeningPort("unix:" + reg_sock(c), grpc::InsecureServerCredentials());
	b.RegisterService(dra_service.get());
	b.RegisterService(reg_service.get());
	server = b.BuildAndStart();
	if (server == nullptr) {
		log_error("cannot serve on %s and %s", dra_sock(c).c_str(),
			  reg_sock(c).c_str());
		return -1;
	}
	log_info("serving the DRA service on %s, registration on %s",
		 dra_sock(c).c_str(), reg_sock(c).c_str());
	return 0;
}

void dra_server_stop(const dra_conf &c)
{
	if (server == nullptr)
		return;
	/* The registration socket first: its removal tells the kubelet that
	 * the driver is gone. */
	unlink(reg_sock(c).c_str());
	server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
	server->Wait();
	unlink(dra_sock(c).c_str());
	server.reset();
	dra_service.reset();
	reg_service.reset();
}
