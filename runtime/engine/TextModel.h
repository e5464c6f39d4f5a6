//===- TextModel.h - A model's tokenizer and chat template ------*- C++ -*-===//
//
// What turns text and chat messages into ids and back: the tokenizer and the
// chat template, read from a plan (which embeds tokenizer.json and
// tokenizer_config.json) or from a Hugging Face model directory.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/ChatTemplate.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <filesystem>
#include <optional>

namespace sol {

struct TextModel {
  Tokenizer tokenizer;
  /// Absent when tokenizer_config.json has no chat_template.
  std::optional<ChatTemplate> chatTemplate;

  /// From a plan's embedded files. Throws sol::Error when the plan has no
  /// tokenizer (the checkpoint had no tokenizer.json).
  static TextModel fromPlan(const PlanFile &plan);
  /// From DIR/tokenizer.json and DIR/tokenizer_config.json.
  static TextModel fromDirectory(const std::filesystem::path &dir);
  /// A directory, or else a plan file.
  static TextModel load(const std::filesystem::path &path);
};

} // namespace sol
