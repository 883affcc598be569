// TorchScript models: a user's PyTorch model, saved from Python with
// torch.jit.script(model).save(path) (or torch.jit.trace), trained by the
// engine like a zoo model.
//
//   model: {type: torchscript, path: model.pt, loss: cross_entropy | mse}
//
// Blocks. A module is a sequence of blocks when its compiled forward does
// nothing but call children one after another: forward(x) takes one tensor,
// calls child_1(x), child_2 on that result, ... and returns the last result
// (constants aside, nothing else). That is what torch.jit.script makes of an
// nn.Sequential, and of any module whose forward is `x = self.a(x); x =
// self.b(x); return x` (scripted or traced). The check reads the graph, so it
// is exact: running the children in call order is forward. Each child with
// parameters starts a block; children without (ReLU, Dropout) join the block
// before them (the first ones, the block after), so that no block is empty.
// Any other module (a residual connection at the top, a loop, two inputs)
// is one block: single and ddp train it; techniques that split a model
// (pipeline, fsdp, spill) report it infeasible (Model::WhyNotSplittable).
//
// Parameters. A block clones its children (initial values: the file's, the
// same on every rank), keeps their parameters as float32 tensors it owns and
// registers those as its slots; Forward first points the children's
// parameter attributes at the slots, so that techniques that repoint slots
// (device copies, gathered shards) train the right tensors. Buffers
// (BatchNorm running statistics) stay in each block's clone: they are
// neither synchronised across ranks nor checkpointed, so prefer models
// without them (LayerNorm). The module runs in the mode it was saved in
// (train or eval); dropout makes techniques differ by their random numbers.
//
// Trained models. model.pt holds the trained parameters under the module's
// own names (its state_dict, without buffers); trained.pt is the module
// itself with those weights, for torch.jit.load (SaveTrained).
//
// FLOPs are estimated as 2 x parameters per sample (one multiply-add per
// parameter): right for linear layers on vectors, low by the sequence length
// for token models and by the spatial size for convolutions.
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/serialization/import.h>

#include <ATen/core/grad_mode.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "common/error.h"
#include "engine/device.h"
#include "engine/model.h"

namespace saturn::engine {
namespace {

using torch::jit::Module;

// Children in call order when forward is a sequence; otherwise why not.
struct Sequence {
  std::vector<std::string> children;
  std::string why_not;
};

Sequence ReadSequence(const Module& module) {
  auto fail = [](std::string why) { return Sequence{{}, std::move(why)}; };
  auto forward = module.find_method("forward");
  if (!forward) return fail("it has no forward method");
  std::shared_ptr<torch::jit::Graph> graph = forward->graph();
  if (graph->inputs().size() != 2) {
    return fail("forward takes " + std::to_string(graph->inputs().size() - 1) +
                " arguments, not one tensor");
  }
  torch::jit::Value* self = graph->inputs()[0];
  torch::jit::Value* current = graph->inputs()[1];
  std::map<const torch::jit::Value*, std::string> children;  // values holding a child
  Sequence sequence;
  std::set<std::string> called;
  for (torch::jit::Node* node : graph->nodes()) {
    if (node->kind() == c10::prim::Constant) continue;
    if (node->kind() == c10::prim::GetAttr && node->inputs()[0] == self) {
      c10::ClassTypePtr type = node->output()->type()->cast<c10::ClassType>();
      if (type && type->is_module()) {
        children[node->output()] = node->s(c10::attr::name);
        continue;
      }
      return fail("forward reads attribute '" + node->s(c10::attr::name) +
                  "' of the module itself, not only its children");
    }
    if (node->kind() == c10::prim::CallMethod) {
      auto child = children.find(node->inputs()[0]);
      if (child == children.end() || node->s(c10::attr::name) != "forward" ||
          node->inputs().size() != 2 || node->outputs().size() != 1) {
        return fail("forward calls method '" + node->s(c10::attr::name) +
                    "' with other arguments than one tensor");
      }
      if (node->inputs()[1] != current) {
        return fail("child '" + child->second +
                    "' is not called on the previous child's output (or forward's input)");
      }
      if (!called.insert(child->second).second) {
        return fail("child '" + child->second + "' is called more than once");
      }
      sequence.children.push_back(child->second);
      current = node->output();
      continue;
    }
    return fail("forward computes " + std::string(node->kind().toQualString()) +
                " outside its children");
  }
  if (graph->outputs().size() != 1 || graph->outputs()[0] != current) {
    return fail("forward does not return the last child's output");
  }
  if (sequence.children.empty()) return fail("forward calls no children");
  return sequence;
}

// The module holding a parameter ("a.b.weight": a.b) and its attribute name.
std::pair<Module, std::string> OwnerOf(Module module, const std::string& path) {
  size_t begin = 0;
  for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', begin)) {
    module = module.attr(path.substr(begin, dot - begin)).toModule();
    begin = dot + 1;
  }
  return {module, path.substr(begin)};
}

// Consecutive modules run in order; their parameters are the block's slots,
// named "<child>.<parameter>" ("<parameter>" for a whole module).
class ScriptBlock final : public Block {
 public:
  ScriptBlock(const std::vector<std::pair<std::string, Module>>& parts, bool materialize)
      : materialized_(materialize) {
    std::vector<std::string> names;
    for (const auto& [prefix, part] : parts) {
      Module module = materialize ? part.clone() : part;
      for (const torch::jit::NameTensor& p : module.named_parameters(/*recurse=*/true)) {
        names.push_back(prefix.empty() ? p.name : prefix + "." + p.name);
        if (materialize) {
          values_.push_back(p.value.detach().to(at::kFloat));
          owners_.push_back(OwnerOf(module, p.name));
        } else {
          values_.push_back(
              at::empty(p.value.sizes(), at::TensorOptions().dtype(at::kFloat).device(at::kMeta)));
        }
      }
      if (materialize) {
        for (const torch::jit::NameTensor& b : module.named_buffers(/*recurse=*/true))
          buffers_.push_back(OwnerOf(module, b.name));
      }
      modules_.push_back(module);
    }
    // values_ no longer grows: slot pointers stay valid.
    for (size_t i = 0; i < values_.size(); ++i)
      Register(names[i], &values_[i]);
  }

  at::Tensor Forward(const at::Tensor& input) override {
    if (!materialized_) throw std::logic_error("Forward on a shape-only torchscript block");
    // Buffers follow the parameters' device (new tensors: Module::to would
    // move the slot tensors in place).
    at::Device device = values_.empty() ? input.device() : values_[0].device();
    if (device != buffers_device_) {
      for (auto& [owner, name] : buffers_)
        owner.setattr(name, owner.attr(name).toTensor().to(device));
      buffers_device_ = device;
    }
    for (size_t i = 0; i < values_.size(); ++i)
      owners_[i].first.setattr(owners_[i].second, values_[i]);
    at::Tensor x = input;
    for (Module& module : modules_) {
      c10::IValue out = module.forward({x});
      if (!out.isTensor()) {
        throw InputError("", 0, "model.path",
                         "a torchscript block returned " + out.tagKind() + ", not a tensor");
      }
      x = out.toTensor();
    }
    return x;
  }

 private:
  bool materialized_;
  std::vector<Module> modules_;
  std::vector<std::pair<Module, std::string>> buffers_;
  at::Device buffers_device_ = at::kCPU;
  std::vector<at::Tensor> values_;
  std::vector<std::pair<Module, std::string>> owners_;
};

class ScriptModel final : public Model {
 public:
  ScriptModel(Module module, LossKind loss, std::string path)
      : module_(std::move(module)), loss_(loss), path_(std::move(path)) {
    Sequence sequence = ReadSequence(module_);
    why_not_ = sequence.why_not;
    if (!why_not_.empty()) {
      blocks_.push_back({});  // the whole module
      return;
    }
    // A block starts at each child with parameters (except the first).
    bool has_params = false;
    for (const std::string& name : sequence.children) {
      bool params = module_.attr(name).toModule().parameters(/*recurse=*/true).size() > 0;
      if (blocks_.empty() || (params && has_params)) blocks_.push_back({}), has_params = false;
      blocks_.back().push_back(name);
      has_params = has_params || params;
    }
  }

  int NumBlocks() const override { return static_cast<int>(blocks_.size()); }

  // Initial values are the module's own; the factory only says whether to
  // materialise them.
  uint64_t Seed() const override { return 0; }
  std::unique_ptr<Block> MakeBlock(int index, ParamFactory& factory) const override {
    bool materialize = factory.Materializes();
    HostMemoryScope host;
    std::vector<std::pair<std::string, Module>> parts;
    for (const std::string& name : blocks_.at(index))
      parts.emplace_back(name, module_.attr(name).toModule());
    if (parts.empty()) parts.emplace_back("", module_);
    return std::make_unique<ScriptBlock>(parts, materialize);
  }

  InputShape Input() const override {
    InputShape input;
    input.kind = InputShape::Kind::kAny;
    return input;
  }

  double ForwardFlopsPerSample() const override {
    double params = 0;
    for (const at::Tensor& p : module_.parameters(/*recurse=*/true))
      params += static_cast<double>(p.numel());
    return 2.0 * params;
  }

  LossKind Loss() const override { return loss_; }

  // The module's own parameter names: model.pt is its state_dict's
  // parameters.
  std::string ExportName(int, const std::string& name) const override { return name; }

  // trained.pt: the user's module (a copy), its parameters replaced by the
  // trained ones in their original dtype, saved as TorchScript; buffers
  // are the file's (they are not trained, see above).
  bool HasTrainedForm() const override { return true; }
  bool SaveTrained(const std::vector<std::pair<std::string, at::Tensor>>& params,
                   const std::string& path) const override {
    HostMemoryScope host;
    Module trained = module_.clone();
    for (const auto& [name, value] : params) {
      auto [owner, attr] = OwnerOf(trained, name);
      at::Tensor original = owner.attr(attr).toTensor();
      at::Tensor copy = value.detach().to(at::kCPU, original.scalar_type()).clone();
      copy.set_requires_grad(original.requires_grad());
      owner.setattr(attr, copy);
    }
    std::string partial = path + ".partial";
    trained.save(partial);
    std::filesystem::rename(partial, path);
    return true;
  }

  std::string WhyNotSplittable() const override {
    if (why_not_.empty()) return "";
    return "torchscript module is not a sequence of blocks: " + why_not_ + " (" + path_ +
           "); only techniques that keep the whole model (single, ddp) can train it";
  }

  void CheckData(const at::Tensor& inputs, const at::Tensor& targets,
                 const std::string& where) const override {
    HostMemoryScope host;
    at::NoGradGuard no_grad;
    std::string problem;
    try {
      Module module = module_;
      c10::IValue out = module.forward({inputs});
      if (!out.isTensor()) {
        problem = "its forward returns " + out.tagKind() + ", not one tensor";
      } else {
        LossSum(out.toTensor(), targets);
      }
    } catch (const InputError& e) {
      problem = e.what();
    } catch (const std::exception& e) {
      problem = ErrorText(e);
    }
    if (!problem.empty()) {
      throw InputError(
          where, 0, "",
          "samples do not fit the torchscript model " + path_ + ": " + FirstLine(problem));
    }
  }

 private:
  static std::string FirstLine(const std::string& text) {
    std::string line = text.substr(0, text.find('\n'));
    return line.size() > 400 ? line.substr(0, 400) + "..." : line;
  }

  Module module_;
  LossKind loss_;
  std::string path_;
  std::string why_not_;
  std::vector<std::vector<std::string>> blocks_;  // child names per block; {} = whole module
};

class TorchScriptFamily final : public ModelFamily {
 public:
  std::string_view Name() const override { return "torchscript"; }
  std::unique_ptr<Model> Build(const TaskSpec& task) const override {
    JsonFields fields(task.model, task.source, "model");
    if (fields.Has("init")) {
      fields.Fail("init", "a torchscript model starts from its own file's weights (model.path)");
    }
    if (task.lora.Enabled()) {
      throw InputError(
          task.source, 0, "finetune.lora",
          "LoRA adapts the zoo's transformer models (gpt, gpt2, vit), not torchscript");
    }
    std::string path = fields.String("path");
    std::string loss = fields.String("loss");
    if (loss != "cross_entropy" && loss != "mse") {
      fields.Fail("loss", "expected cross_entropy or mse, got " + Quote(loss));
    }
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) fields.Fail("path", path + ": no such file");
    HostMemoryScope host;
    Module module;
    try {
      module = torch::jit::load(path);
    } catch (const std::exception& e) {
      std::string text = ErrorText(e);
      fields.Fail("path", path +
                              " is not a TorchScript module torch::jit::load can read (save one "
                              "with torch.jit.script(model).save(path)): " +
                              text.substr(0, text.find('\n')));
    }
    for (const at::Tensor& p : module.parameters(/*recurse=*/true)) {
      if (!at::isFloatingType(p.scalar_type())) {
        fields.Fail("path", path + " has a parameter of type " +
                                std::string(c10::toString(p.scalar_type())) +
                                "; only floating-point parameters can be trained");
      }
    }
    return std::make_unique<ScriptModel>(
        std::move(module), loss == "mse" ? LossKind::kMse : LossKind::kCrossEntropy, path);
  }
};

}  // namespace

std::unique_ptr<ModelFamily> MakeTorchScriptFamily() {
  return std::make_unique<TorchScriptFamily>();
}

}  // namespace saturn::engine
