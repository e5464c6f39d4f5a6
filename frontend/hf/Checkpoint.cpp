//===- Checkpoint.cpp - The safetensors weights of a model directory ------===//

#include "frontend/hf/Safetensors.h"

#include "runtime/support/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <system_error>

namespace sol::hf {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

bool isFile(const fs::path &path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

/// Explains what else the directory holds when it has no safetensors
/// weights, so the user knows whether to convert or to pick another folder.
std::string describeOtherWeights(const fs::path &dir) {
  std::vector<std::string> safetensors;
  bool pickle = false, consolidated = false;
  std::error_code ec;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name == "consolidated.safetensors")
      consolidated = true;
    else if (entry.path().extension() == ".safetensors")
      safetensors.push_back(name);
    else if (entry.path().extension() == ".bin" ||
             entry.path().extension() == ".pt" ||
             entry.path().extension() == ".pth")
      pickle = true;
  }
  std::sort(safetensors.begin(), safetensors.end());
  std::string hints;
  if (!safetensors.empty()) {
    hints += "; found ";
    for (size_t i = 0; i < safetensors.size() && i < 3; ++i)
      hints += (i ? ", " : "") + safetensors[i];
    if (safetensors.size() > 3)
      hints += cat(" and ", safetensors.size() - 3, " more");
    hints += cat(" but no ", Checkpoint::kIndexFileName,
                 " saying which tensor is in which file");
  }
  if (consolidated)
    hints += "; found consolidated.safetensors, Mistral's native layout, "
             "which Sol does not read: use the Hugging Face-format weights";
  if (pickle)
    hints += "; found PyTorch .bin/.pt files, which Sol does not read: "
             "convert them to safetensors (transformers: "
             "save_pretrained(dir, safe_serialization=True))";
  return hints;
}

/// A shard name from the index, which must stay inside the model directory.
fs::path shardPath(const fs::path &dir, const std::string &shard,
                   const std::string &index, const std::string &tensor) {
  fs::path relative(shard);
  bool escapes = shard.empty() || relative.has_root_path();
  for (const fs::path &part : relative)
    escapes = escapes || part == "..";
  if (escapes)
    fail(index, ": weight_map maps tensor '", tensor, "' to '", shard,
         "', which is not a file name inside the model directory");
  return dir / relative;
}

} // namespace

Checkpoint Checkpoint::open(const fs::path &dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec))
    fail("model directory '", dir.string(), "' does not exist");
  if (!fs::is_directory(dir, ec))
    fail("'", dir.string(),
         "' is not a directory; pass the Hugging Face model directory that "
         "holds config.json and the weights");

  Checkpoint checkpoint;
  checkpoint.dir_ = dir;
  fs::path single = dir / kSingleFileName;
  fs::path indexPath = dir / kIndexFileName;
  if (isFile(single)) {
    checkpoint.files_.push_back(SafetensorsFile::open(single));
    checkpoint.indexTensors();
    return checkpoint;
  }
  if (!isFile(indexPath))
    fail("no weights found in '", dir.string(), "': looked for ",
         kSingleFileName, " and ", kIndexFileName, describeOtherWeights(dir));

  const std::string index = indexPath.string();
  MappedFile indexFile = MappedFile::open(indexPath);
  std::string_view text(
      reinterpret_cast<const char *>(indexFile.bytes().data()),
      indexFile.size());
  Json json;
  try {
    json = Json::parse(text.begin(), text.end());
  } catch (const Json::exception &e) {
    fail(index, ": not valid JSON (", e.what(), ")");
  }
  if (!json.is_object())
    fail(index, ": must be a JSON object with a \"weight_map\"");
  auto weightMap = json.find("weight_map");
  if (weightMap == json.end() || !weightMap->is_object())
    fail(index, ": has no \"weight_map\" object (tensor name -> shard file)");
  if (weightMap->empty())
    fail(index, ": \"weight_map\" is empty");

  // Shard file name -> one tensor the index puts there (for messages).
  std::map<std::string, std::string> shards;
  for (auto &[tensor, shard] : weightMap->items()) {
    if (!shard.is_string())
      fail(index, ": weight_map entry for tensor '", tensor,
           "' must be a file name string, found ", shard.type_name());
    shards.emplace(shard.get<std::string>(), tensor);
  }
  std::map<std::string, size_t> fileOfShard;
  for (const auto &[shard, tensor] : shards) {
    fs::path path = shardPath(dir, shard, index, tensor);
    if (!isFile(path))
      fail(index, ": shard '", shard, "' (holding tensor '", tensor,
           "' and possibly others) is missing from '", dir.string(),
           "'; the download is incomplete");
    fileOfShard[shard] = checkpoint.files_.size();
    checkpoint.files_.push_back(SafetensorsFile::open(path));
  }
  for (auto &[tensor, shard] : weightMap->items()) {
    const SafetensorsFile &file =
        checkpoint.files_[fileOfShard.at(shard.get<std::string>())];
    if (!file.find(tensor))
      fail(index, ": tensor '", tensor, "' is listed in shard '",
           shard.get<std::string>(), "' but that file does not contain it");
  }
  checkpoint.indexTensors();
  return checkpoint;
}

Checkpoint Checkpoint::withoutWeights(const fs::path &dir,
                                      std::vector<TensorView> tensors) {
  Checkpoint checkpoint;
  checkpoint.dir_ = dir;
  uint64_t largest = 0;
  for (const TensorView &t : tensors) {
    const std::optional<uint64_t> bytes = dtypeStorageBytes(
        t.dtype, static_cast<uint64_t>(std::max<int64_t>(t.numElements(), 0)));
    if (!bytes)
      fail("tensor '", t.name, "' of '", dir.string(), "' is too large");
    largest = std::max(largest, *bytes);
  }
  checkpoint.zeros_ = std::make_shared<const MappedFile>(
      MappedFile::zeros(static_cast<size_t>(largest), dir / "(no weights)"));
  checkpoint.synthetic_ = std::move(tensors);
  for (TensorView &t : checkpoint.synthetic_) {
    t.bytes = checkpoint.zeros_->bytes().first(static_cast<size_t>(
        *dtypeStorageBytes(t.dtype, static_cast<uint64_t>(t.numElements()))));
    if (!checkpoint.byName_.emplace(t.name, &t).second)
      fail("tensor '", t.name, "' is listed twice");
  }
  return checkpoint;
}

void Checkpoint::indexTensors() {
  for (size_t i = 0; i < files_.size(); ++i) {
    for (const TensorView &tensor : files_[i].tensors()) {
      auto [it, inserted] = byName_.emplace(tensor.name, &tensor);
      if (!inserted) {
        const SafetensorsFile *other = nullptr;
        for (const SafetensorsFile &file : files_)
          if (file.find(tensor.name) == it->second)
            other = &file;
        fail("tensor '", tensor.name, "' occurs in two shards of '",
             dir_.string(), "': '",
             other ? other->path().filename().string() : "?", "' and '",
             files_[i].path().filename().string(), "'");
      }
    }
  }
}

const TensorView *Checkpoint::find(std::string_view name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : it->second;
}

const TensorView &Checkpoint::get(std::string_view name) const {
  if (const TensorView *tensor = find(name))
    return *tensor;
  fail("tensor '", name, "' is not in the checkpoint '", dir_.string(), "'");
}

std::vector<const TensorView *> Checkpoint::tensors() const {
  std::vector<const TensorView *> all;
  all.reserve(byName_.size());
  for (const auto &[name, tensor] : byName_)
    all.push_back(tensor);
  return all;
}

std::vector<std::string> Checkpoint::tensorNames() const {
  std::vector<std::string> names;
  names.reserve(byName_.size());
  for (const auto &[name, tensor] : byName_)
    names.push_back(name);
  return names;
}

} // namespace sol::hf
