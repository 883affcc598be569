#include "protocol/best_model.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/fs.h"

namespace saturn {

namespace fs = std::filesystem;
using nlohmann::json;

std::optional<BestMetric> ParseBestMetric(const std::string& text) {
  size_t colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  std::string metric = text.substr(0, colon), mode = text.substr(colon + 1);
  if (metric != "eval_loss" && metric != "eval_accuracy") return std::nullopt;
  if (mode != "min" && mode != "max") return std::nullopt;
  return BestMetric{metric, mode == "max"};
}

json BestEvalToJson(const BestEval& e) {
  return {{"step", e.step},
          {"metric", e.by.metric},
          {"mode", e.by.maximize ? "max" : "min"},
          {"value", e.value}};
}

std::optional<BestEval> ReadBestEval(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir + "/best.json", ec)) return std::nullopt;
  try {
    json j = json::parse(ReadFile(dir + "/best.json"));
    BestEval e;
    e.step = j.at("step").get<long>();
    e.by.metric = j.at("metric").get<std::string>();
    e.by.maximize = j.at("mode").get<std::string>() == "max";
    e.value = j.at("value").get<double>();
    return e;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

BestModelKeeper::BestModelKeeper(std::string dir, BestMetric by)
    : dir_(std::move(dir)), by_(std::move(by)) {
  // Killed in Replace: a best.partial/ with its best.json (written last) is
  // complete and better than the kept one, so it goes in; without one, the
  // kept one stays, or the one set aside comes back.
  std::error_code ec;
  std::string partial = dir_ + ".partial", old = dir_ + ".old";
  if (fs::exists(partial + "/best.json", ec)) {
    if (fs::exists(dir_, ec)) {
      fs::remove_all(old, ec);
      fs::rename(dir_, old, ec);
    }
    fs::rename(partial, dir_, ec);
  } else if (!fs::exists(dir_, ec) && fs::exists(old + "/best.json", ec)) {
    fs::rename(old, dir_, ec);
  }
  fs::remove_all(partial, ec);
  if (fs::exists(dir_ + "/best.json", ec)) fs::remove_all(old, ec);
  best_ = ReadBestEval(dir_);
  if (best_ && (best_->by.metric != by_.metric || best_->by.maximize != by_.maximize))
    best_.reset();
}

bool BestModelKeeper::Improves(double value) const {
  if (std::isnan(value)) return false;
  if (!best_) return true;
  return by_.maximize ? value > best_->value : value < best_->value;
}

void BestModelKeeper::Replace(long step, double value,
                              const std::function<void(const std::string&)>& fill) {
  std::string partial = dir_ + ".partial", old = dir_ + ".old";
  std::error_code ec;
  fs::remove_all(partial, ec);
  fs::create_directories(partial);
  fill(partial);
  BestEval e{step, by_, value};
  WriteFileAtomic(partial + "/best.json", BestEvalToJson(e).dump(2) + "\n");
  // Killed between the renames: best.old holds the last best (the next
  // keeper puts it back).
  fs::remove_all(old, ec);
  if (fs::exists(dir_, ec)) fs::rename(dir_, old);
  fs::rename(partial, dir_);
  fs::remove_all(old, ec);
  best_ = e;
}

}  // namespace saturn
