#include "engine/comm.h"

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <utility>

#include "common/error.h"
#include "engine/errors.h"
#include "engine/phases.h"

// Each backend is compiled in only where its headers are: Debian's LibTorch
// has Gloo (libgloo-dev) and no NCCL; a PyTorch wheel has NCCL (nccl.h in
// the nvidia-nccl wheel) but ships no Gloo headers. CMake defines
// USE_C10D_GLOO / USE_C10D_NCCL when it found them (src/engine/CMakeLists.txt);
// __has_include keeps a build whose include path lost one compiling.
#if defined(USE_C10D_GLOO) && __has_include(<gloo/algorithm.h>)
#define SATURN_HAVE_GLOO 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#else
#define SATURN_HAVE_GLOO 0
#endif
#if defined(USE_C10D_NCCL) && __has_include(<nccl.h>)
#define SATURN_HAVE_NCCL 1
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#else
#define SATURN_HAVE_NCCL 0
#endif

namespace saturn::engine {
namespace {

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

}  // namespace

Work::Work(c10::intrusive_ptr<c10d::Work> work, std::string what, double timeout_s,
           std::vector<at::Tensor> keep_alive)
    : work_(std::move(work)),
      what_(std::move(what)),
      timeout_s_(timeout_s),
      keep_alive_(std::move(keep_alive)) {}
Work::Work() = default;
Work::Work(Work&&) noexcept = default;
Work& Work::operator=(Work&&) noexcept = default;
Work::~Work() = default;

void Work::Then(std::function<void()> then) {
  if (!then_) {
    then_ = std::move(then);
    return;
  }
  then_ = [first = std::move(then_), second = std::move(then)] {
    first();
    second();
  };
}

void Work::Wait() {
  PhaseScope phase(Phase::kCommunication);
  if (work_) {
    c10::intrusive_ptr<c10d::Work> work = std::move(work_);
    try {
      work->wait(Millis(timeout_s_));
    } catch (const std::exception& e) {
      throw PeerFailure(what_ + " failed (a peer rank died or did not answer within " +
                        std::to_string(static_cast<int64_t>(timeout_s_)) + " s): " + ErrorText(e));
    }
    keep_alive_.clear();
  }
  if (then_) std::exchange(then_, nullptr)();
}

double Communicator::SumOf(double value) {
  return SumsOf({value}).front();
}

std::vector<double> Communicator::SumsOf(const std::vector<double>& values) {
  if (values.empty()) return {};
  at::Tensor t = at::tensor(values, at::kDouble).to(ScalarOptions().dtype(at::kDouble));
  AllReduceSum(t);
  at::Tensor host = t.to(at::kCPU).contiguous();
  return std::vector<double>(host.data_ptr<double>(), host.data_ptr<double>() + host.numel());
}

double Communicator::MaxOf(double value) {
  at::Tensor t = at::full({1}, value, ScalarOptions().dtype(at::kDouble));
  AllReduceMax(t);
  return t.item<double>();
}

namespace {

void CheckSubgroup(const std::vector<int>& ranks, int rank, int size) {
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  bool ok = !ranks.empty() && std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end() &&
            sorted.front() >= 0 && sorted.back() < size &&
            std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
  if (!ok) {
    throw std::invalid_argument("Subgroup: expected distinct ranks below " + std::to_string(size) +
                                " including this rank " + std::to_string(rank));
  }
}

}  // namespace

std::vector<int64_t> Communicator::Gather(int64_t value) {
  at::Tensor mine = at::full({1}, value, ScalarOptions().dtype(at::kLong));
  at::Tensor all = at::empty({Size()}, ScalarOptions().dtype(at::kLong));
  AllGather(mine, all).Wait();
  all = all.cpu();
  return std::vector<int64_t>(all.data_ptr<int64_t>(), all.data_ptr<int64_t>() + Size());
}

namespace {

class SoloCommunicator final : public Communicator {
 public:
  int Rank() const override { return 0; }
  int Size() const override { return 1; }
  Work AllReduceSumAsync(at::Tensor&) override { return Work(); }
  void AllReduceMax(at::Tensor&) override {}
  Work AllGather(const at::Tensor& shard, const at::Tensor& full) override {
    full.copy_(shard.reshape_as(full));
    return Work();
  }
  Work ReduceScatter(at::Tensor& full, const at::Tensor& shard) override {
    shard.copy_(full.reshape_as(shard));
    return Work();
  }
  void Broadcast(at::Tensor&, int) override {}
  Work Send(const at::Tensor&, int, int) override {
    throw std::logic_error("send in a group of one");
  }
  void Recv(at::Tensor&, int, int) override { throw std::logic_error("recv in a group of one"); }
  void Barrier() override {}
  std::unique_ptr<Communicator> Subgroup(const std::vector<int>& ranks) override {
    CheckSubgroup(ranks, 0, 1);
    return std::make_unique<SoloCommunicator>();
  }
};

// What a group's ranks meet over and run on; subgroups share the store
// under a prefix of their own.
struct GroupSpec {
  c10::intrusive_ptr<c10d::Store> store;
  double timeout_s = 0;
  bool cuda = false;
  at::Device device = at::Device(at::kCPU);
};

// Joins `size` ranks over spec.store (the rendezvous); throws PeerFailure.
std::unique_ptr<Communicator> MakeGroup(const GroupSpec& spec, int rank, int size);

// Gloo or NCCL; both expose the same collective calls.
template <typename Group>
class C10dCommunicator final : public Communicator {
 public:
  C10dCommunicator(c10::intrusive_ptr<Group> group, int rank, int size, GroupSpec spec,
                   bool native_reduce_scatter)
      : group_(std::move(group)),
        rank_(rank),
        size_(size),
        timeout_s_(spec.timeout_s),
        device_(spec.device),
        spec_(std::move(spec)),
        native_reduce_scatter_(native_reduce_scatter) {}

  at::TensorOptions ScalarOptions() const override { return at::TensorOptions().device(device_); }

  int Rank() const override { return rank_; }
  int Size() const override { return size_; }

  Work AllReduceSumAsync(at::Tensor& tensor) override {
    std::vector<at::Tensor> tensors{tensor};
    return Guard("allreduce", [&] { return group_->allreduce(tensors); }, {tensor});
  }

  void AllReduceMax(at::Tensor& tensor) override {
    std::vector<at::Tensor> tensors{tensor};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::MAX;
    Guard("allreduce(max)", [&] { return group_->allreduce(tensors, options); }, {tensor}).Wait();
  }

  Work AllGather(const at::Tensor& shard, const at::Tensor& full) override {
    // Writing through .data() keeps autograd's view of `full` (fsdp's
    // parameters) from counting the gather as an in-place modification.
    std::vector<at::Tensor> inputs{shard};
    std::vector<std::vector<at::Tensor>> outputs{full.data().reshape({-1}).chunk(size_)};
    return Guard("allgather", [&] { return group_->allgather(outputs, inputs); }, {shard, full});
  }

  Work ReduceScatter(at::Tensor& full, const at::Tensor& shard) override {
    if (native_reduce_scatter_) {
      std::vector<at::Tensor> outputs{shard};
      std::vector<std::vector<at::Tensor>> inputs{full.reshape({-1}).chunk(size_)};
      return Guard("reduce_scatter", [&] { return group_->reduce_scatter(outputs, inputs); },
                   {full, shard});
    }
    // Gloo has no reduce_scatter: the sum of the whole buffer, then our slice
    // once it has arrived.
    std::vector<at::Tensor> tensors{full};
    at::Tensor slice = full.reshape({-1}).chunk(size_)[rank_];
    Work work = Guard("allreduce (for reduce_scatter)", [&] { return group_->allreduce(tensors); },
                      {full, shard});
    work.Then([slice, shard]() mutable { shard.copy_(slice); });
    return work;
  }

  void Broadcast(at::Tensor& tensor, int root) override {
    std::vector<at::Tensor> tensors{tensor};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    Guard("broadcast", [&] { return group_->broadcast(tensors, options); }, {tensor}).Wait();
  }

  Work Send(const at::Tensor& tensor, int to, int tag) override {
    std::vector<at::Tensor> tensors{tensor};
    return Guard("send to rank " + std::to_string(to),
                 [&] { return group_->send(tensors, to, tag); }, {tensor});
  }

  void Recv(at::Tensor& tensor, int from, int tag) override {
    std::vector<at::Tensor> tensors{tensor};
    Guard("recv from rank " + std::to_string(from),
          [&] { return group_->recv(tensors, from, tag); }, {tensor})
        .Wait();
  }

  void Barrier() override {
    Guard("barrier", [&] { return group_->barrier(); }, {}).Wait();
  }

  std::unique_ptr<Communicator> Subgroup(const std::vector<int>& ranks) override {
    CheckSubgroup(ranks, rank_, size_);
    // Numbered in call order (the same on every rank) and named by members,
    // so each group's rendezvous keys are its own.
    std::string name = "subgroup" + std::to_string(subgroups_++);
    for (int r : ranks)
      name += ":" + std::to_string(r);
    if (ranks.size() == 1) return Solo();
    GroupSpec spec = spec_;
    spec.store = c10::make_intrusive<c10d::PrefixStore>(name, spec_.store);
    int rank = static_cast<int>(std::find(ranks.begin(), ranks.end(), rank_) - ranks.begin());
    return MakeGroup(spec, rank, static_cast<int>(ranks.size()));
  }

 private:
  Work Guard(const std::string& what, const std::function<c10::intrusive_ptr<c10d::Work>()>& start,
             std::vector<at::Tensor> keep_alive) {
    try {
      return Work(start(), what, timeout_s_, std::move(keep_alive));
    } catch (const std::exception& e) {
      throw PeerFailure(what + " failed: " + ErrorText(e));
    }
  }

  c10::intrusive_ptr<Group> group_;
  int rank_, size_;
  double timeout_s_;
  at::Device device_;
  GroupSpec spec_;
  bool native_reduce_scatter_;
  int subgroups_ = 0;
};

std::unique_ptr<Communicator> MakeGroup(const GroupSpec& spec, int rank, int size) {
  try {
#if SATURN_HAVE_NCCL
    if (spec.cuda) {
      auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
      nccl_options->timeout = Millis(spec.timeout_s);
      auto group =
          c10::make_intrusive<c10d::ProcessGroupNCCL>(spec.store, rank, size, nccl_options);
      return std::make_unique<C10dCommunicator<c10d::ProcessGroupNCCL>>(
          group, rank, size, spec, /*native_reduce_scatter=*/true);
    }
#endif
#if SATURN_HAVE_GLOO
    if (!spec.cuda) {
      auto gloo_options = c10d::ProcessGroupGloo::Options::create(Millis(spec.timeout_s));
      gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      auto group =
          c10::make_intrusive<c10d::ProcessGroupGloo>(spec.store, rank, size, gloo_options);
      return std::make_unique<C10dCommunicator<c10d::ProcessGroupGloo>>(
          group, rank, size, spec, /*native_reduce_scatter=*/false);
    }
#endif
    throw std::logic_error(std::string("no collective backend for ") +
                           (spec.cuda ? "cuda" : "cpu") + " devices");
  } catch (const PeerFailure&) {
    throw;
  } catch (const std::logic_error&) {
    throw;
  } catch (const std::exception& e) {
    throw PeerFailure("rendezvous of " + std::to_string(size) + " ranks failed (a rank did not " +
                      "arrive within " + std::to_string(static_cast<int64_t>(spec.timeout_s)) +
                      " s): " + ErrorText(e));
  }
}

}  // namespace

std::string MissingBackend(DeviceKind kind) {
  if (kind == DeviceKind::kCuda && !SATURN_HAVE_NCCL) {
    return "this saturn-worker was built without NCCL (no nccl.h found when it was compiled), "
           "so ranks on cuda devices cannot communicate: techniques on 2 or more GPUs are "
           "unavailable (docs/gpus.md, \"NCCL\")";
  }
  if (kind == DeviceKind::kCpu && !SATURN_HAVE_GLOO) {
    return "this saturn-worker was built without Gloo (its LibTorch ships no gloo headers), so "
           "ranks on cpu devices cannot communicate: techniques on 2 or more cpu devices are "
           "unavailable (docs/gpus.md, \"Gloo\")";
  }
  return "";
}

std::unique_ptr<Communicator> Communicator::Solo() {
  return std::make_unique<SoloCommunicator>();
}

std::unique_ptr<Communicator> Communicator::Create(const CommOptions& options,
                                                   const Device& device) {
  if (options.size == 1) return Solo();
  if (std::string missing = MissingBackend(device.Spec().kind); !missing.empty()) {
    throw InputError("", 0, "--device-kind", missing);
  }
  GroupSpec spec;
  spec.timeout_s = options.timeout_s;
  spec.cuda = device.IsCuda();
  spec.device = device.IsCuda() ? device.TorchDevice() : at::Device(at::kCPU);
  try {
    auto store =
        c10::make_intrusive<c10d::FileStore>(options.rendezvous_dir + "/store", options.size);
    store->setTimeout(Millis(options.timeout_s));
    spec.store = store;
  } catch (const std::exception& e) {
    throw PeerFailure("rendezvous in " + options.rendezvous_dir + " failed: " + ErrorText(e));
  }
  try {
    return MakeGroup(spec, options.rank, options.size);
  } catch (const PeerFailure& e) {
    throw PeerFailure(std::string(e.what()) + " (rendezvous directory " + options.rendezvous_dir +
                      ")");
  }
}

}  // namespace saturn::engine
