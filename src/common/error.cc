#include "common/error.h"

namespace saturn {
namespace {

std::string Compose(std::string_view file, int line, std::string_view field,
                    std::string_view message) {
  std::string out(file);
  if (line > 0) out += ":" + std::to_string(line);
  if (!out.empty()) out += ": ";
  if (!field.empty()) {
    out += field;
    out += ": ";
  }
  out += message;
  return out;
}

}  // namespace

InputError::InputError(std::string_view file, int line, std::string_view field,
                       std::string_view message)
    : std::runtime_error(Compose(file, line, field, message)),
      file_(file),
      field_(field),
      message_(message),
      line_(line),
      parts_(true) {}

InputError InputError::AtLine(int line) const {
  return parts_ ? InputError(file_, line, field_, message_) : *this;
}

std::string Quote(std::string_view value) {
  constexpr size_t kMax = 60;
  std::string out = "'";
  if (value.size() > kMax) {
    // Cut before a character, not inside one: the message may be sent as JSON.
    size_t cut = kMax;
    while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80)
      --cut;
    out += value.substr(0, cut);
    out += "...";
  } else {
    out += value;
  }
  out += "'";
  return out;
}

}  // namespace saturn
