// Optimizers (engine/optimizer.h) in one process: PyTorch's formulas, and
// each of their forms (the fused host loop, the tensor-op form, a shard,
// many parameters in one call) stepping a parameter alike.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/optimizer.h"

namespace saturn::engine {
namespace {

TEST(Optimizers, FollowPyTorchFormulas) {
  at::Tensor grad = at::full({1}, 0.5);
  // Adam, two steps from p = 1 with g = 0.5: PyTorch gives 0.99 then 0.98.
  OptimizerSpec adam{"adam", 0.01};
  at::Tensor p = at::ones({1});
  std::unique_ptr<Optimizer> opt = MakeOptimizer(adam);
  std::vector<at::Tensor> state = opt->NewState(p);
  opt->Update(p, grad, state, 1);
  EXPECT_NEAR(p.item<double>(), 0.99, 1e-6);
  opt->Update(p, grad, state, 2);
  EXPECT_NEAR(p.item<double>(), 0.98, 1e-6);
  EXPECT_EQ(opt->Slots(), (std::vector<std::string>{"exp_avg", "exp_avg_sq"}));

  // AdamW decays first: p = 1 * (1 - 0.01 * 0.1) - 0.01.
  OptimizerSpec adamw{"adamw", 0.01};
  adamw.weight_decay = 0.1;
  p = at::ones({1});
  opt = MakeOptimizer(adamw);
  state = opt->NewState(p);
  opt->Update(p, grad, state, 1);
  EXPECT_NEAR(p.item<double>(), 0.999 - 0.01, 1e-6);

  // SGD with momentum 0.9: buffers 0.5 then 0.95.
  OptimizerSpec sgd{"sgd", 0.1};
  sgd.momentum = 0.9;
  p = at::ones({1});
  opt = MakeOptimizer(sgd);
  state = opt->NewState(p);
  opt->Update(p, grad, state, 1);
  opt->Update(p, grad, state, 2);
  EXPECT_NEAR(p.item<double>(), 1 - 0.05 - 0.095, 1e-6);
  EXPECT_TRUE(MakeOptimizer(OptimizerSpec{"sgd", 0.1})->Slots().empty());
}

TEST(Optimizers, ShardedUpdateEqualsWholeUpdate) {
  std::unique_ptr<Optimizer> opt = MakeOptimizer(OptimizerSpec{"adam", 0.01});
  at::Tensor whole = at::randn({10}), grad = at::randn({10});
  at::Tensor parts = whole.clone();
  std::vector<at::Tensor> state = opt->NewState(whole);
  opt->Update(whole, grad, state, 1);
  for (int64_t begin : {0, 4}) {
    at::Tensor part = parts.narrow(0, begin, begin == 0 ? 4 : 6);
    std::vector<at::Tensor> part_state = opt->NewState(part);
    opt->Update(part, grad.narrow(0, begin, part.numel()), part_state, 1);
  }
  EXPECT_TRUE(at::allclose(whole, parts, 1e-6, 1e-7));
}

// The fused loops (contiguous fp32 on CPU) and the tensor-op form (any other
// layout, CUDA, bf16) are the same formula: a transposed view takes the
// tensor-op path.
TEST(Optimizers, FusedUpdateEqualsTensorOpUpdate) {
  for (const std::string type : {"sgd", "adam", "adamw"}) {
    OptimizerSpec spec{type, 0.01};
    spec.momentum = 0.9;
    spec.weight_decay = 0.1;
    std::unique_ptr<Optimizer> opt = MakeOptimizer(spec);
    at::Tensor fused = at::randn({40, 70});
    at::Tensor plain = fused.t().contiguous().t();  // same values, not contiguous
    ASSERT_FALSE(plain.is_contiguous());
    std::vector<at::Tensor> fused_state = opt->NewState(fused);
    std::vector<at::Tensor> plain_state;
    for (size_t i = 0; i < fused_state.size(); ++i)
      plain_state.push_back(at::zeros_like(plain));
    for (int step = 1; step <= 3; ++step) {
      at::Tensor grad = at::randn({40, 70});
      opt->Update(fused, grad, fused_state, step);
      opt->Update(plain, grad.t().contiguous().t(), plain_state, step);
    }
    EXPECT_TRUE(at::allclose(fused, plain, 1e-5, 1e-6)) << type;
    for (size_t i = 0; i < fused_state.size(); ++i)
      EXPECT_TRUE(at::allclose(fused_state[i], plain_state[i], 1e-5, 1e-7)) << type;
  }
}

// UpdateMany (one call per optimizer, multi-tensor ops where the tensors
// are not plain float32 on the host) steps each parameter exactly as
// Update on it alone: here a contiguous float32 tensor (the fused host
// loop), a transposed one and a double one (the multi-tensor form), over
// three steps. On this CPU build the multi-tensor ops run tensor by
// tensor; on CUDA, Update's tensor-op form is the same multi-tensor ops on
// a one-tensor list (optimizer.cc, Adam::Step), so the two agree there by
// construction.
TEST(Optimizers, UpdateManyEqualsUpdateOnEach) {
  for (const std::string type : {"sgd", "adam", "adamw"}) {
    OptimizerSpec spec{type, 0.01};
    spec.momentum = 0.9;
    spec.weight_decay = 0.1;
    std::unique_ptr<Optimizer> opt = MakeOptimizer(spec);
    std::vector<at::Tensor> many = {at::randn({30, 20}), at::randn({20, 30}).t(),
                                    at::randn({7}, at::kDouble)};
    std::vector<at::Tensor> each, start;
    std::vector<std::vector<at::Tensor>> many_state, each_state;
    for (const at::Tensor& t : many) {
      each.push_back(t.clone());
      start.push_back(t.clone());
      many_state.push_back(opt->NewState(t));
      each_state.push_back(opt->NewState(t));
    }
    std::vector<std::vector<at::Tensor>*> states;
    for (auto& state : many_state)
      states.push_back(&state);
    for (int step = 1; step <= 3; ++step) {
      std::vector<at::Tensor> grads;
      for (const at::Tensor& t : many)
        grads.push_back(at::randn_like(t));
      opt->UpdateMany(many, grads, states, step);
      for (size_t i = 0; i < each.size(); ++i)
        opt->Update(each[i], grads[i], each_state[i], step);
    }
    for (size_t i = 0; i < many.size(); ++i) {
      EXPECT_FALSE(at::equal(many[i], start[i])) << type << ", tensor " << i << " did not move";
      EXPECT_TRUE(at::equal(many[i], each[i])) << type << ", tensor " << i;
      for (size_t k = 0; k < many_state[i].size(); ++k)
        EXPECT_TRUE(at::equal(many_state[i][k], each_state[i][k])) << type << ", slot " << k;
    }
  }
}

}  // namespace
}  // namespace saturn::engine
