// The group of ranks that trains one task, over c10d: Gloo on CPU devices,
// NCCL on CUDA devices (where the LibTorch build has it).
//
// Every call fails with PeerFailure (never hangs) when a peer died or did not
// answer within the timeout, naming the operation. A group of size 1 needs no
// rendezvous and its collectives return at once, so single-device techniques
// use the same code.
//
// Gloo on CPU lacks reduce_scatter and _allgather_base: ReduceScatter is an
// all-reduce followed by a slice there, and AllGather uses the list form.
//
//   CommOptions o{.rank = r, .size = 4, .rendezvous_dir = dir, .timeout_s = 60};
//   std::unique_ptr<Communicator> comm = Communicator::Create(o, device);
//   comm->AllReduceSum(grads);
//   Work w = comm->AllGather(shard, full);  // ... compute ...  w.Wait();
//   std::unique_ptr<Communicator> pair = comm->Subgroup({0, 1});  // ranks 0 and 1
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/device.h"

namespace c10d {
class Work;
}

namespace saturn::engine {

struct CommOptions {
  int rank = 0;
  int size = 1;
  std::string rendezvous_dir;  // a fresh directory shared by the ranks (FileStore)
  double timeout_s = 300;
};

// An operation in flight; Wait() throws PeerFailure if it failed.
class Work {
 public:
  Work();
  Work(c10::intrusive_ptr<c10d::Work> work, std::string what, double timeout_s,
       std::vector<at::Tensor> keep_alive = {});
  Work(Work&&) noexcept;
  Work& operator=(Work&&) noexcept;
  ~Work();
  void Wait();
  // Runs `then` after the operation completes (and after earlier Thens),
  // inside Wait().
  void Then(std::function<void()> then);

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  std::string what_;
  double timeout_s_ = 0;
  std::vector<at::Tensor> keep_alive_;
  std::function<void()> then_;
};

// Why this build cannot join several ranks on devices of `kind` (its
// LibTorch, or the headers it was compiled with, lack Gloo for cpu devices or
// NCCL for cuda devices), or "" when it can. Checked before any rank starts,
// so a search reports the configuration infeasible with this reason.
std::string MissingBackend(DeviceKind kind);

class Communicator {
 public:
  virtual ~Communicator() = default;
  // Joins the group; PeerFailure if the others do not arrive in time.
  static std::unique_ptr<Communicator> Create(const CommOptions& options, const Device& device);
  // A group of one.
  static std::unique_ptr<Communicator> Solo();

  virtual int Rank() const = 0;
  virtual int Size() const = 0;
  // Where the small tensors of SumOf, MaxOf and Gather live.
  virtual at::TensorOptions ScalarOptions() const { return at::TensorOptions(); }

  virtual Work AllReduceSumAsync(at::Tensor& tensor) = 0;
  void AllReduceSum(at::Tensor& tensor) { AllReduceSumAsync(tensor).Wait(); }
  virtual void AllReduceMax(at::Tensor& tensor) = 0;
  // full (Size() * shard.numel() elements) = the shards of all ranks in order.
  virtual Work AllGather(const at::Tensor& shard, const at::Tensor& full) = 0;
  // shard = this rank's slice of the element-wise sum of `full` over ranks;
  // `full` may be overwritten.
  virtual Work ReduceScatter(at::Tensor& full, const at::Tensor& shard) = 0;
  virtual void Broadcast(at::Tensor& tensor, int root) = 0;
  virtual Work Send(const at::Tensor& tensor, int to, int tag) = 0;
  virtual void Recv(at::Tensor& tensor, int from, int tag) = 0;
  virtual void Barrier() = 0;

  // A group of some of this group's ranks (`ranks`: ranks of this group, in
  // the new group's rank order, this one among them), for techniques that
  // combine two kinds of parallelism (tp inside groups, data or pipeline
  // parallelism across them). Collective over the members; every rank of
  // this group calls Subgroup the same number of times in the same order
  // (each for the groups it belongs to), so that groups are told apart.
  // Throws std::invalid_argument for ranks that are not such a list.
  virtual std::unique_ptr<Communicator> Subgroup(const std::vector<int>& ranks) = 0;

  // Conveniences on small host values.
  double SumOf(double value);
  std::vector<double> SumsOf(const std::vector<double>& values);  // one collective for all
  double MaxOf(double value);
  std::vector<int64_t> Gather(int64_t value);  // every rank's value, in rank order
};

}  // namespace saturn::engine
