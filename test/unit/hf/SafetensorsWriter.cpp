//===- SafetensorsWriter.cpp - Builds safetensors files for tests ---------===//

#include "test/unit/hf/SafetensorsWriter.h"

#include "runtime/support/DType.h"
#include "runtime/support/Error.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sol::hf::test {

std::string headerJson(const std::vector<HeaderEntry> &entries,
                       const std::map<std::string, std::string> &metadata) {
  std::ostringstream os;
  os << '{';
  bool first = true;
  if (!metadata.empty()) {
    os << "\"__metadata__\":{";
    for (auto it = metadata.begin(); it != metadata.end(); ++it)
      os << (it == metadata.begin() ? "" : ",") << '"' << it->first << "\":\""
         << it->second << '"';
    os << '}';
    first = false;
  }
  for (const HeaderEntry &entry : entries) {
    os << (first ? "" : ",") << '"' << entry.name << "\":{\"dtype\":\""
       << entry.dtype << "\",\"shape\":[";
    for (size_t i = 0; i < entry.shape.size(); ++i)
      os << (i ? "," : "") << entry.shape[i];
    os << "],\"data_offsets\":[" << entry.begin << ',' << entry.end << "]}";
    first = false;
  }
  os << '}';
  return os.str();
}

std::string safetensorsBytes(std::string_view header, std::string_view data,
                             uint64_t declaredHeaderSize) {
  std::string out;
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((declaredHeaderSize >> (8 * i)) & 0xFF));
  out.append(header);
  out.append(data);
  return out;
}

std::string safetensorsBytes(std::string_view header, std::string_view data) {
  return safetensorsBytes(header, data, header.size());
}

std::string
validSafetensors(const std::vector<TensorData> &tensors,
                 const std::map<std::string, std::string> &metadata) {
  std::vector<HeaderEntry> entries;
  std::string data;
  for (const TensorData &tensor : tensors) {
    entries.push_back({tensor.name, tensor.dtype, tensor.shape, data.size(),
                       data.size() + tensor.bytes.size()});
    data += tensor.bytes;
  }
  std::string header = headerJson(entries, metadata);
  // Pad with spaces to a multiple of 8, as the Hugging Face writer does.
  header.append((8 - header.size() % 8) % 8, ' ');
  return safetensorsBytes(header, data);
}

std::string bf16Sequence(int count) {
  std::string out;
  for (int i = 0; i < count; ++i) {
    uint16_t bits = floatToBf16(static_cast<float>(i));
    out.push_back(static_cast<char>(bits & 0xFF));
    out.push_back(static_cast<char>(bits >> 8));
  }
  return out;
}

void writeFile(const std::filesystem::path &path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out)
    fail("test helper could not write ", path.string());
}

TempDir::TempDir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "sol-hf-test-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    fail("test helper could not create a temp dir from ", pattern);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

} // namespace sol::hf::test
