// Names of the element types (include/actorgraph/dtype.hpp).
#include "actorgraph/dtype.hpp"

#include <array>
#include <utility>

#include "actorgraph/error.hpp"
#include "graph/printable.hpp"

namespace ag {

namespace {

// Every name parse_dtype() takes: to_string()'s first, then NumPy's and PyTorch's others.
constexpr std::array<std::pair<const char*, dtype>, 10> names{{
  {"float32", dtype::float32},
  {"float16", dtype::float16},
  {"bfloat16", dtype::bfloat16},
  {"int32", dtype::int32},
  {"int64", dtype::int64},
  {"uint8", dtype::uint8},
  {"float", dtype::float32},
  {"half", dtype::float16},
  {"int", dtype::int32},
  {"long", dtype::int64},
}};

} // namespace

const char* to_string(dtype t) noexcept {
  for (const auto& [name, value] : names)
    if (value == t)
      return name;
  return "dtype?";
}

dtype parse_dtype(const std::string& name) {
  for (const auto& [text, value] : names)
    if (name == text)
      return value;
  std::string known;
  for (const auto& n : names)
    known += (known.empty() ? "" : ", ") + std::string{n.first};
  throw error("unknown dtype " + printable(name) + ": expected one of " + known);
}

} // namespace ag
