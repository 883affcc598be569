#include "engine/formats/safetensors_write.h"

#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

namespace saturn::engine {

uint64_t SafetensorsEntry::Bytes() const {
  uint64_t n = static_cast<uint64_t>(DtypeBytes(dtype));
  for (int64_t d : shape)
    n *= static_cast<uint64_t>(d);
  return n;
}

std::string JsonName(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string SafetensorsHead(const std::vector<SafetensorsEntry>& tensors,
                            const std::map<std::string, std::string>& metadata) {
  // Written by hand in the order declared (nlohmann's objects sort their
  // keys), one entry per tensor.
  std::string json = "{";
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      json += (first ? "" : ",") + JsonName(key) + ":" + JsonName(value);
      first = false;
    }
    json += "}";
  }
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const SafetensorsEntry& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || !seen.insert(t.name).second) {
      throw std::invalid_argument("safetensors: a tensor named \"" + t.name +
                                  "\" (empty, reserved or repeated)");
    }
    std::string shape;
    for (int64_t d : t.shape) {
      if (d < 0)
        throw std::invalid_argument("safetensors: " + t.name + " has a negative dimension");
      shape += (shape.empty() ? "" : ",") + std::to_string(d);
    }
    uint64_t end = offset + t.Bytes();
    json += (json.size() > 1 ? "," : "") + JsonName(t.name) + ":{\"dtype\":\"" +
            DtypeName(t.dtype) + "\",\"shape\":[" + shape + "],\"data_offsets\":[" +
            std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  json += "}";
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string head(8, '\0');
  for (int i = 0; i < 8; ++i)
    head[static_cast<size_t>(i)] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  return head + json;
}

SafetensorsWriter::SafetensorsWriter(Sink sink, std::vector<SafetensorsEntry> tensors,
                                     const std::map<std::string, std::string>& metadata)
    : sink_(std::move(sink)) {
  std::string head = SafetensorsHead(tensors, metadata);
  for (const SafetensorsEntry& t : tensors)
    data_bytes_ += t.Bytes();
  sink_(head.data(), head.size());
  written_ = head.size();
}

void SafetensorsWriter::Write(const void* data, uint64_t bytes) {
  if (bytes > data_bytes_ - data_written_) {
    throw std::logic_error("safetensors: more bytes written than the tensors declared hold");
  }
  if (bytes == 0) return;
  sink_(data, bytes);
  data_written_ += bytes;
  written_ += bytes;
}

void SafetensorsWriter::Finish() {
  if (data_written_ != data_bytes_) {
    throw std::logic_error("safetensors: " + std::to_string(data_bytes_ - data_written_) +
                           " bytes of the declared tensors were not written");
  }
}

}  // namespace saturn::engine
