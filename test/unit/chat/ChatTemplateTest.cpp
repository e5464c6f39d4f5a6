//===- ChatTemplateTest.cpp - sol::ChatTemplate on real chat templates ----===//
//
// Renders requests with the real Qwen3 and Llama 3.1 tokenizer_config.json
// files that scripts/setup fetches and with the usual Qwen2.5 and Mistral
// (v0.3, with tools) templates. Expected texts are what the templates say
// for these inputs under Transformers' Jinja settings.
//
//===----------------------------------------------------------------------===//

#include "runtime/chat/ChatTemplate.h"
#include "runtime/chat/TokenizerConfigFile.h"
#include "runtime/support/Error.h"
#include "test/unit/TestTokenizers.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace {

std::string tokenizerConfig(const std::string &family) {
  return (sol::test::testTokenizerDir(family) / "tokenizer_config.json")
      .string();
}

nlohmann::ordered_json request(const char *text) {
  return nlohmann::ordered_json::parse(text);
}

std::string renderError(const sol::ChatTemplate &chat, const char *text) {
  try {
    chat.render(request(text));
  } catch (const sol::Error &e) {
    return e.what();
  }
  return "<no error>";
}

const char *kWeatherTool =
    R"({"type": "function", "function": {"name": "get_weather",
  "description": "Get the weather.", "parameters": {"type": "object",
  "properties": {"city": {"type": "string"}}, "required": ["city"]}}})";

const char *kWeatherToolJson =
    R"({"type": "function", "function": {"name": "get_weather", "description": )"
    R"("Get the weather.", "parameters": {"type": "object", "properties": )"
    R"({"city": {"type": "string"}}, "required": ["city"]}}})";

const char *kQwen25Template = R"JINJA({%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
)JINJA";

const char *kMistralV03Template =
    R"JINJA({%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}

{#- This block checks for alternating user/assistant messages, skipping tool calling messages #}
{%- set ns = namespace() %}
{%- set ns.index = 0 %}
{%- for message in loop_messages %}
    {%- if not (message.role == "tool" or message.role == "tool_results" or (message.tool_calls is defined and message.tool_calls is not none)) %}
        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}
            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}
        {%- endif %}
        {%- set ns.index = ns.index + 1 %}
    {%- endif %}
{%- endfor %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if tools is not none and (message == user_messages[-1]) %}
            {{- "[AVAILABLE_TOOLS] [" }}
            {%- for tool in tools %}
                {%- set tool = tool.function %}
                {{- '{"type": "function", "function": {' }}
                {%- for key, val in tool.items() if key != "return" %}
                    {%- if val is string %}
                        {{- '"' + key + '": "' + val + '"' }}
                    {%- else %}
                        {{- '"' + key + '": ' + val|tojson }}
                    {%- endif %}
                    {%- if not loop.last %}
                        {{- ", " }}
                    {%- endif %}
                {%- endfor %}
                {{- "}}" }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- else %}
                    {{- "]" }}
                {%- endif %}
            {%- endfor %}
            {{- "[/AVAILABLE_TOOLS]" }}
            {%- endif %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST] " + system_message + "\n\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST] " + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message.tool_calls is defined and message.tool_calls is not none %}
        {{- "[TOOL_CALLS] [" }}
        {%- for tool_call in message.tool_calls %}
            {%- set out = tool_call.function|tojson %}
            {{- out[:-1] }}
            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}
                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
            {%- endif %}
            {{- ', "id": "' + tool_call.id + '"}' }}
            {%- if not loop.last %}
                {{- ", " }}
            {%- else %}
                {{- "]" + eos_token }}
            {%- endif %}
        {%- endfor %}
    {%- elif message["role"] == "assistant" %}
        {{- " " + message["content"]|trim + eos_token}}
    {%- elif message["role"] == "tool_results" or message["role"] == "tool" %}
        {%- if message.content is defined and message.content.content is defined %}
            {%- set content = message.content.content %}
        {%- else %}
            {%- set content = message.content %}
        {%- endif %}
        {{- '[TOOL_RESULTS] {"content": ' + content|string + ", " }}
        {%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}
            {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
        {%- endif %}
        {{- '"call_id": "' + message.tool_call_id + '"}[/TOOL_RESULTS]' }}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}
)JINJA";

const char *kLlama31ToolTemplate = R"JINJA({{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message + builtin tools #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{%- if builtin_tools is defined %}
    {{- "Tools: " + builtin_tools | reject('equalto', 'code_interpreter') | join(", ") + "\n\n"}}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- "<|python_tag|>" + tool_call.name + ".call(" }}
            {%- for arg_name, arg_val in tool_call.arguments | items %}
                {{- arg_name + '="' + arg_val + '"' }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- endif %}
                {%- endfor %}
            {{- ")" }}
        {%- else  %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- '{"name": "' + tool_call.name + '", ' }}
            {{- '"parameters": ' }}
            {{- tool_call.arguments | tojson }}
            {{- "}" }}
        {%- endif %}
        {%- if builtin_tools is defined %}
            {#- This means we're in ipython mode #}
            {{- "<|eom_id|>" }}
        {%- else %}
            {{- "<|eot_id|>" }}
        {%- endif %}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
)JINJA";

class Qwen3Template : public ::testing::Test {
protected:
  sol::ChatTemplate chat =
      sol::ChatTemplate::fromTokenizerConfigFile(tokenizerConfig("qwen3"));
};

TEST_F(Qwen3Template, SystemAndUserWithGenerationPrompt) {
  EXPECT_EQ(chat.render(request(R"({"messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hi"}],
                "add_generation_prompt": true})")),
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST_F(Qwen3Template, EnableThinkingFalseAddsEmptyThinkBlock) {
  EXPECT_EQ(
      chat.render(request(R"({"messages": [{"role": "user", "content": "Hi"}],
                "add_generation_prompt": true, "enable_thinking": false})")),
      "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
      "<think>\n\n</think>\n\n");
  // Only `false` counts; true or absent adds nothing.
  EXPECT_EQ(
      chat.render(request(R"({"messages": [{"role": "user", "content": "Hi"}],
                "add_generation_prompt": true, "enable_thinking": true})")),
      "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST_F(Qwen3Template, ToolsGoInTheSystemTurnAsJson) {
  std::string req =
      std::string(R"({"messages": [{"role": "user", "content": "Weather?"}],
      "tools": [)") +
      kWeatherTool + R"(], "add_generation_prompt": false})";
  EXPECT_EQ(
      chat.render(nlohmann::ordered_json::parse(req)),
      std::string("<|im_start|>system\n# Tools\n\nYou may call one or more "
                  "functions to assist with the user query.\n\nYou are "
                  "provided with function signatures within <tools></tools> "
                  "XML tags:\n<tools>\n") +
          kWeatherToolJson +
          "\n</tools>\n\nFor each function call, return a json object with "
          "function name and arguments within <tool_call></tool_call> XML "
          "tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
          "<args-json-object>}\n</tool_call><|im_end|>\n"
          "<|im_start|>user\nWeather?<|im_end|>\n");
}

TEST_F(Qwen3Template, ToolCallArgumentsAsObjectOrStringRenderAlike) {
  const char *asObject =
      R"({"messages": [{"role": "user", "content": "Weather in Oslo?"},
      {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}}]},
      {"role": "tool", "content": "5C"}, {"role": "tool", "content": "6C"}],
      "add_generation_prompt": true})";
  const char *asString =
      R"({"messages": [{"role": "user", "content": "Weather in Oslo?"},
      {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\", \"days\": 2}"}}]},
      {"role": "tool", "content": "5C"}, {"role": "tool", "content": "6C"}],
      "add_generation_prompt": true})";
  std::string expected =
      "<|im_start|>user\nWeather in Oslo?<|im_end|>\n"
      "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", "
      "\"arguments\": {\"city\": \"Oslo\", \"days\": "
      "2}}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\n5C\n</tool_response>\n"
      "<tool_response>\n6C\n</"
      "tool_response><|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(chat.render(request(asObject)), expected);
  EXPECT_EQ(chat.render(request(asString)), expected);
}

TEST_F(Qwen3Template, ReasoningContentOnlyAfterTheLastUserQuery) {
  EXPECT_EQ(
      chat.render(request(R"({"messages": [
                {"role": "user", "content": "7*8?"},
                {"role": "assistant", "content": "56", "reasoning_content": "7 eights."},
                {"role": "user", "content": "9*9?"},
                {"role": "assistant", "content": "81", "reasoning_content": "9 nines."}]})")),
      "<|im_start|>user\n7*8?<|im_end|>\n<|im_start|>assistant\n56<|im_end|>\n"
      "<|im_start|>user\n9*9?<|im_end|>\n<|im_start|>assistant\n<think>\n"
      "9 nines.\n</think>\n\n81<|im_end|>\n");
  // Inline <think> in content is split out the same way.
  EXPECT_EQ(
      chat.render(request(R"({"messages": [{"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "<think>\nGreet.\n</think>\n\nHello!"}]})")),
      "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nGreet.\n"
      "</think>\n\nHello!<|im_end|>\n");
}

TEST_F(Qwen3Template, NullAssistantContentFailsAsInTransformers) {
  // The template evaluates '</think>' in None: a TypeError in Python.
  std::string error =
      renderError(chat, R"({"messages": [{"role": "user", "content": "x"},
      {"role": "assistant", "content": null, "tool_calls": []}]})");
  EXPECT_NE(error.find("tokenizer_config.json"), std::string::npos) << error;
  EXPECT_NE(error.find("NoneType"), std::string::npos) << error;
}

TEST_F(Qwen3Template, ContinueFinalMessageCutsAfterItsContent) {
  EXPECT_EQ(
      chat.render(request(R"({"messages": [{"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello, I am"}],
                "continue_final_message": true})")),
      "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n"
      "</think>\n\nHello, I am");
  EXPECT_NE(
      renderError(chat, R"({"messages": [{"role": "user", "content": "Hi"}],
                "continue_final_message": true, "add_generation_prompt": true})"),
      "<no error>");
}

TEST(Llama31Template, HeadersBosAndTrim) {
  auto chat =
      sol::ChatTemplate::fromTokenizerConfigFile(tokenizerConfig("llama3.1"));
  EXPECT_EQ(chat.specialTokens().at("bos_token"), "<|begin_of_text|>");
  EXPECT_EQ(chat.render(request(R"({"messages": [
                {"role": "system", "content": "  Be brief.\n"},
                {"role": "user", "content": "Hi \u00a0"},
                {"role": "assistant", "content": null},
                {"role": "user"}],
                "add_generation_prompt": true})")),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
            "Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
            "Hi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nNone"
            "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, Qwen25ToolCallsAndDefaultSystemPrompt) {
  sol::ChatTemplate chat(kQwen25Template);
  EXPECT_EQ(
      chat.render(request(R"({"messages": [{"role": "user", "content": "Hi"}],
                "add_generation_prompt": true})")),
      "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a "
      "helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
      "<|im_start|>assistant\n");
  std::string req =
      std::string(R"({"messages": [{"role": "user", "content": "Oslo?"},
      {"role": "assistant", "content": "Checking.", "tool_calls": [{"function":
        {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
      {"role": "tool", "content": "5C"}], "tools": [)") +
      kWeatherTool + "]}";
  EXPECT_EQ(
      chat.render(nlohmann::ordered_json::parse(req)),
      std::string(
          "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. "
          "You are a helpful assistant.\n\n# Tools\n\nYou may call one "
          "or more functions to assist with the user query.\n\nYou are "
          "provided with function signatures within <tools></tools> XML "
          "tags:\n<tools>\n") +
          kWeatherToolJson +
          "\n</tools>\n\nFor each function call, return a json object with "
          "function name and arguments within <tool_call></tool_call> XML "
          "tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
          "<args-json-object>}\n</tool_call><|im_end|>\n"
          "<|im_start|>user\nOslo?<|im_end|>\n<|im_start|>assistant\nChecking."
          "\n"
          "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
          "\"Oslo\"}}\n</"
          "tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n"
          "5C\n</tool_response><|im_end|>\n");
}

TEST(ChatTemplate, MistralV03ToolsAndRoleAlternation) {
  sol::ChatTemplate chat(kMistralV03Template,
                         {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
  std::string req = std::string(R"({"messages": [
      {"role": "system", "content": "Sys"},
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "tool_calls": [{"id": "abcdefghi", "function":
        {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
      {"role": "tool", "tool_call_id": "abcdefghi", "content": "5C"},
      {"role": "assistant", "content": " It is 5C. "},
      {"role": "user", "content": "Thanks"}], "tools": [)") +
                    kWeatherTool + "]}";
  EXPECT_EQ(
      chat.render(nlohmann::ordered_json::parse(req)),
      "<s>[INST] Weather?[/INST][TOOL_CALLS] [{\"name\": \"get_weather\", "
      "\"arguments\": {\"city\": \"Oslo\"}, \"id\": \"abcdefghi\"}]</s>"
      "[TOOL_RESULTS] {\"content\": 5C, \"call_id\": \"abcdefghi\"}"
      "[/TOOL_RESULTS] It is 5C.</s>[AVAILABLE_TOOLS] [{\"type\": "
      "\"function\", \"function\": {\"name\": \"get_weather\", "
      "\"description\": \"Get the weather.\", \"parameters\": {\"type\": "
      "\"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, "
      "\"required\": [\"city\"]}}}][/AVAILABLE_TOOLS][INST] Sys\n\nThanks"
      "[/INST]");
  std::string error = renderError(chat, R"({"messages": [
      {"role": "user", "content": "a"}, {"role": "user", "content": "b"}]})");
  EXPECT_NE(error.find("conversation roles must alternate"), std::string::npos)
      << error;
}

TEST(ChatTemplate, Llama31OfficialToolTemplate) {
  // The tool-capable Llama 3.1 template of Meta's Hugging Face repository:
  // it reassigns `messages`, uses `'tool_calls' in message`, tojson(indent=4)
  // and prints a string tool result with tojson (a string `is iterable`).
  sol::ChatTemplate chat(kLlama31ToolTemplate,
                         {{"bos_token", "<|begin_of_text|>"}});
  std::string req = std::string(R"({"messages": [
      {"role": "system", "content": "Sys"},
      {"role": "user", "content": "Weather in Oslo?"},
      {"role": "assistant", "tool_calls": [{"function": {"name": "get_weather",
        "arguments": {"city": "Oslo"}}}]},
      {"role": "tool", "content": "5C"}], "tools": [)") +
                    kWeatherTool + R"(], "add_generation_prompt": true})";
  EXPECT_EQ(
      chat.render(nlohmann::ordered_json::parse(req)),
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
      "Environment: ipython\nCutting Knowledge Date: December 2023\nToday "
      "Date: 26 Jul "
      "2024\n\nSys<|eot_id|><|start_header_id|>user<|end_header_id|>"
      "\n\nGiven the following functions, please respond with a JSON for a "
      "function call with its proper arguments that best answers the given "
      "prompt.\n\nRespond in the format {\"name\": function name, "
      "\"parameters\": dictionary of argument name and its value}.Do not use "
      "variables.\n\n{\n    \"type\": \"function\",\n    \"function\": {\n"
      "        \"name\": \"get_weather\",\n        \"description\": \"Get the "
      "weather.\",\n        \"parameters\": {\n            \"type\": "
      "\"object\",\n            \"properties\": {\n                \"city\": "
      "{\n                    \"type\": \"string\"\n                }\n"
      "            },\n            \"required\": [\n                \"city\"\n"
      "            ]\n        }\n    }\n}\n\nWeather in Oslo?<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": "
      "\"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}<|eot_id|>"
      "<|start_header_id|>ipython<|end_header_id|>\n\n\"5C\"<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\n");
  // Two tool calls in one message: the template raises.
  std::string twoCalls = R"({"messages": [{"role": "user", "content": "x"},
      {"role": "assistant", "tool_calls": [{"function": {"name": "a", "arguments": {}}},
                                           {"function": {"name": "b", "arguments": {}}}]}],
      "tools": []})";
  EXPECT_NE(renderError(chat, twoCalls.c_str()).find("single tool-calls"),
            std::string::npos);
}

TEST(ChatTemplate, TokenizerConfigVariants) {
  // Special tokens may be AddedToken objects; named templates pick
  // "tool_use" when tools are given.
  auto chat = sol::ChatTemplate::fromTokenizerConfig(R"({
      "bos_token": {"content": "<B>", "lstrip": false},
      "eos_token": "<E>", "unk_token": null,
      "chat_template": [
        {"name": "default", "template": "{{ bos_token }}default{{ eos_token }}{{ unk_token is defined }}"},
        {"name": "tool_use", "template": "tools:{{ tools|length }}"}]})");
  EXPECT_EQ(chat.render(
                request(R"({"messages": [{"role": "user", "content": "x"}]})")),
            "<B>default<E>False");
  EXPECT_EQ(
      chat.render(request(R"({"messages": [{"role": "user", "content": "x"}],
                "tools": [{}, {}]})")),
      "tools:2");
  // Request keys override special tokens, like Transformers' kwargs.
  EXPECT_EQ(
      chat.render(request(R"({"messages": [{"role": "user", "content": "x"}],
                "bos_token": "[bos]"})")),
      "[bos]default<E>False");
}

TEST(ChatTemplate, KeyOrderOfOrderedJsonIsKept) {
  sol::ChatTemplate chat("{{ messages[0].content|tojson }}");
  EXPECT_EQ(
      chat.render(request(
          R"({"messages": [{"role": "user", "content": {"z": 1, "a": 2}}]})")),
      R"({"z": 1, "a": 2})");
  // nlohmann::json sorts keys; the overload still renders (sorted).
  EXPECT_EQ(
      chat.render(nlohmann::json::parse(
          R"({"messages": [{"role": "user", "content": {"z": 1, "a": 2}}]})")),
      R"({"a": 2, "z": 1})");
}

TEST(ChatTemplate, BadInputsAreClearErrors) {
  EXPECT_THROW(sol::ChatTemplate::fromTokenizerConfig("{not json"), sol::Error);
  EXPECT_THROW(sol::ChatTemplate::fromTokenizerConfig(R"({"eos_token": "x"})"),
               sol::Error);
  EXPECT_THROW(
      sol::ChatTemplate::fromTokenizerConfigFile("/nonexistent/x.json"),
      sol::Error);
  sol::ChatTemplate chat("{{ messages|length }}");
  EXPECT_NE(renderError(chat, R"({"no_messages": []})").find("\"messages\""),
            std::string::npos);
  EXPECT_NE(renderError(chat, R"({"messages": []})"), "<no error>");
  try {
    sol::ChatTemplate bad("ok\n{% if x %}", {}, "my_template.jinja");
    FAIL() << "expected a parse error";
  } catch (const sol::Error &e) {
    EXPECT_NE(std::string(e.what()).find("my_template.jinja"),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos);
  }
}

// A model directory's chat template files, as Transformers reads them: they
// take priority over tokenizer_config.json's "chat_template".
TEST(TokenizerConfigFile, ChatTemplateFilesTakePriority) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("sol-tokenizer-config-" +
       std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto write = [&](const std::filesystem::path &p, const std::string &text) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
  };
  auto render = [&](const std::string &config, const char *tools) {
    const std::string text =
        std::string(R"({"messages": [{"role": "user", "content": "x"}])") +
        tools + "}";
    return sol::ChatTemplate::fromTokenizerConfig(config).render(
        request(text.c_str()));
  };
  // Neither file: nothing.
  EXPECT_FALSE(sol::readTokenizerConfig(dir).has_value());
  // The config alone comes back byte for byte.
  const std::string config =
      R"({"eos_token": "<E>", "chat_template": "config {{ eos_token }}"})";
  write(dir / "tokenizer_config.json", config);
  EXPECT_EQ(sol::readTokenizerConfig(dir), config);
  // chat_template.jinja replaces the config's template; the rest stays.
  write(dir / "chat_template.jinja",
        "jinja {{ messages[0].content }}{{ eos_token }}");
  EXPECT_EQ(render(*sol::readTokenizerConfig(dir), ""), "jinja x<E>");
  // Named templates beside it: a list, the file as "default"; tools pick
  // "tool_use".
  write(dir / "additional_chat_templates" / "tool_use.jinja",
        "tools {{ tools|length }}");
  const std::string both = *sol::readTokenizerConfig(dir);
  EXPECT_EQ(render(both, ""), "jinja x<E>");
  EXPECT_EQ(render(both, R"(, "tools": [{"type": "function"}])"), "tools 1");
  // Template files without a config.
  std::filesystem::remove(dir / "tokenizer_config.json");
  std::filesystem::remove_all(dir / "additional_chat_templates");
  EXPECT_EQ(render(*sol::readTokenizerConfig(dir), ""), "jinja x");
  // A config that is not a JSON object is named.
  write(dir / "tokenizer_config.json", "[1]");
  try {
    sol::readTokenizerConfig(dir);
    FAIL() << "expected an error";
  } catch (const sol::Error &e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json"),
              std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

} // namespace
