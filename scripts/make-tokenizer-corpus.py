#!/usr/bin/env python3
"""Writes test/tokenizer/corpus.jsonl: the texts on which Sol's tokenizer is
compared with Hugging Face (see scripts/make-tokenizer-goldens.py).

One JSON string per line (ASCII-only JSON, so no line-separator character can
ever split a line). Deterministic: standard library only, fixed seed, so the
file can be regenerated and reviewed as a diff.

Usage: scripts/make-tokenizer-corpus.py [--out test/tokenizer/corpus.jsonl]
"""
import argparse
import json
import os
import random
import sys

PROSE = [
    "Hello world",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times, it was the age of wisdom.",
    "Transformers read every weight once per generated token, so decoding is bandwidth bound.",
    "She said: \"I don't know; maybe we'll see.\"",
    "Mr. O'Neil's car isn't here -- it's at Jane's.",
    "Rock 'n' roll never dies.",
    "They're sure you've seen what I'd done, and we'll tell them I'm fine.",
    "THEY'RE SURE YOU'VE SEEN WHAT I'D DONE, AND WE'LL TELL THEM I'M FINE.",
    "He'S gOt iT'S 'Re 'rE 'LL 'Ll 'D 'M 'T",
    "don't won't can't shouldn't y'all o'clock ma'am",
    "Curly quotes: \u2018single\u2019 and \u201cdouble\u201d, it\u2019s fine.",
    "A sentence with an ellipsis... and a dash \u2014 and an en dash \u2013 too.",
    "Email me at someone@example.com or visit https://example.org/path?q=1&r=2#frag.",
    "The price is $1,234.56 (about \u20ac1.100,00) as of 2024-03-15.",
    "Version 3.11.7 was released on 12/07/2023 at 10:45:00 UTC.",
    "In 1969, 600,000,000 people watched; 0.5% didn't.",
    "Question? Answer! Interrobang?! Many!!! ??? ... ,,,",
    "  leading spaces and trailing spaces  ",
    "Tabs\tbetween\twords\tand\t\ttwo tabs.",
    "Line one.\nLine two.\n\nParagraph two.\n\n\n\nFar paragraph.",
    "Windows\r\nline\r\nendings\r\n",
    "Old Mac\rline\rendings",
    "Mixed \r\n\r\n\n\r endings",
    "Hyphen-ated words and under_scored_words and camelCaseWords and PascalCase.",
    "Numbers: 1 22 333 4444 55555 666666 7777777 88888888 999999999 1234567890",
    "Pi is approximately 3.14159265358979323846264338327950288419716939937510.",
    "Phone: +1 (555) 010-9999, ext. 42.",
    "Dates: 2024-01-01, 01/02/2024, 3 March 2021, 15.08.1999, 1999/12/31 23:59:59.",
    "Scientific: 6.022e23, 1.6E-19, -273.15, +0.0, 1_000_000, 0xFF, 0b1010, 0o777.",
    "Ordinals: 1st 2nd 3rd 4th 21st 22nd 103rd 1000th.",
    "The year 2000 problem (Y2K) and the 2038 problem.",
    "Percentages 50% 99.9% 100%% and fractions \u00bd \u00bc \u00be \u2153.",
    "Superscripts x\u00b2 + y\u00b2 = z\u00b2 and subscripts H\u2082O, CO\u2082.",
    "Roman numerals \u2160 \u2161 \u2162 \u216b and circled \u2460\u2461\u2462.",
    "Math: \u2200x \u2208 \u211d, \u2203y: x\u00b2 \u2264 y \u2227 y \u2260 \u221e; \u2211\u1d62 a\u1d62 = \u222b f(x) dx.",
    "Greek: \u0391\u03bb\u03c6\u03b1 \u03b2\u03ae\u03c4\u03b1 \u03b3\u03ac\u03bc\u03bc\u03b1, \u03ba\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1 \u03ba\u03cc\u03c3\u03bc\u03b5.",
    "Russian: \u041f\u0440\u0438\u0432\u0435\u0442, \u043a\u0430\u043a \u0434\u0435\u043b\u0430? \u0412\u0441\u0451 \u0445\u043e\u0440\u043e\u0448\u043e.",
    "German: Stra\u00dfe, \u00dcbergr\u00f6\u00dfentr\u00e4ger, Fu\u00dfg\u00e4nger\u00fcberg\u00e4nge.",
    "French: \u00c0 bient\u00f4t, cha\u00eene, na\u00efve, \u0153uvre, gar\u00e7on, \u00e9l\u00e8ve.",
    "Spanish: \u00bfD\u00f3nde est\u00e1 la biblioteca? \u00a1Ma\u00f1ana!",
    "Polish: Za\u017c\u00f3\u0142\u0107 g\u0119\u015bl\u0105 ja\u017a\u0144.",
    "Turkish: \u0130stanbul, \u0131\u015f\u0131k, \u011fa\u011f.",
    "Vietnamese: Ti\u1ebfng Vi\u1ec7t c\u00f3 nhi\u1ec1u d\u1ea5u.",
    "Hindi: \u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e, \u0906\u092a \u0915\u0948\u0938\u0947 \u0939\u0948\u0902?",
    "Thai: \u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a \u0e22\u0e34\u0e19\u0e14\u0e35\u0e15\u0e49\u0e2d\u0e19\u0e23\u0e31\u0e1a",
    "Hebrew: \u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
]

CHINESE = [
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01",
    "\u4eca\u5929\u5929\u6c14\u5f88\u597d\uff0c\u6211\u4eec\u53bb\u516c\u56ed\u6563\u6b65\u5427\u3002",
    "\u673a\u5668\u5b66\u4e60\u662f\u4eba\u5de5\u667a\u80fd\u7684\u4e00\u4e2a\u5206\u652f\u3002",
    "\u300a\u4e09\u56fd\u6f14\u4e49\u300b\u662f\u4e2d\u56fd\u53e4\u5178\u56db\u5927\u540d\u8457\u4e4b\u4e00\u3002",
    "\u8bf7\u95ee\u5317\u4eac\u5230\u4e0a\u6d77\u7684\u9ad8\u94c1\u9700\u8981\u591a\u957f\u65f6\u95f4\uff1f\u5927\u7ea64.5\u5c0f\u65f6\u3002",
    "\u7e41\u9ad4\u4e2d\u6587\u8207\u7c21\u9ad4\u4e2d\u6587\u4e0d\u540c\u3002",
    "\u9f98\u9f96\u9f8d\u9a6b \U00020bb7\u91ce\u5bb6",
    "\u4e2d\u6587English\u6df7\u5408mixed\u6587\u672c123\u6570\u5b57",
]

JAPANESE = [
    "\u3053\u3093\u306b\u3061\u306f\u4e16\u754c",
    "\u79c1\u306f\u65e5\u672c\u8a9e\u3092\u52c9\u5f37\u3057\u3066\u3044\u307e\u3059\u3002",
    "\u30ab\u30bf\u30ab\u30ca\u3068\u3072\u3089\u304c\u306a\u3068\u6f22\u5b57\u3002\uff8a\uff9d\uff76\uff78\uff76\uff80\uff76\uff85",
    "\u6771\u4eac\u30bf\u30ef\u30fc\u306f333\u30e1\u30fc\u30c8\u30eb\u3067\u3059\u3002",
    "\u304c\u304e\u3050\u3052\u3054 \u304b\u3099\u304d\u3099\u304f\u3099",
]

KOREAN = [
    "\uc548\ub155\ud558\uc138\uc694, \uc138\uacc4!",
    "\ud55c\uad6d\uc5b4\ub294 \ud55c\uae00\ub85c \uc4f0\uc785\ub2c8\ub2e4.",
    "\u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af",
]

ARABIC = [
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u0627\u0644\u0644\u063a\u0629 \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u062c\u0645\u064a\u0644\u0629 \u062c\u062f\u0627\u064b.",
    "\u0627\u0644\u0639\u062f\u062f \u0661\u0662\u0663\u0664\u0665 \u0648 12345",
    "\u0628\u0650\u0633\u0652\u0645\u0650 \u0627\u0644\u0644\u0651\u064e\u0647\u0650",
]

EMOJI = [
    "\U0001f600",
    "\U0001f44d\U0001f3fd",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",
    "\U0001f3f3\ufe0f\u200d\U0001f308",
    "\U0001f1fa\U0001f1f8\U0001f1ef\U0001f1f5\U0001f1e9\U0001f1ea",
    "\u2764\ufe0f",
    "1\ufe0f\u20e3",
    "\U0001f469\U0001f3fe\u200d\U0001f4bb",
    "\U0001f9d1\u200d\U0001f91d\u200d\U0001f9d1",
    "I love \U0001f355 and \U0001f363!!! \U0001f602\U0001f602\U0001f602",
    "\U0001f44b\U0001f3fb\U0001f44b\U0001f3fc\U0001f44b\U0001f3fd\U0001f44b\U0001f3fe\U0001f44b\U0001f3ff",
    "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
    "\u263a \u2603 \u2600\ufe0f \u2728",
]

CODE = [
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "import os\nimport sys\n\n\nclass Foo(object):\n    \"\"\"Docstring.\"\"\"\n\n    def __init__(self, x: int = 0) -> None:\n        self._x = x  # comment\n",
    "for i in range(10):\n\tprint(f\"{i:>4d} {i**2!r}\")\n",
    "    return {'a': [1, 2, 3], \"b\": (4, 5), 'c': None}\n",
    "lambda x, *args, **kwargs: x if x else args[0]",
    "#include <vector>\n\nint main(int argc, char **argv) {\n  std::vector<int> v{1, 2, 3};\n  for (auto &x : v) x *= 2;\n  return 0;\n}\n",
    "template <typename T> struct Foo { T *ptr = nullptr; };\n",
    "if (a && b || !c) { x += y << 2; } else { x -= y >> 3; }",
    "auto it = std::find_if(v.begin(), v.end(), [&](const auto &e) { return e != 0; });",
    "#define MAX(a, b) ((a) > (b) ? (a) : (b))\n",
    "{\"name\": \"sol\", \"version\": \"0.1.0\", \"deps\": [\"pcre2\", \"utf8proc\"], \"ok\": true, \"n\": null, \"pi\": 3.14}",
    "{\n  \"key\": {\n    \"nested\": [\n      1,\n      2\n    ]\n  }\n}\n",
    "#!/bin/bash\nset -euo pipefail\nfor f in *.txt; do\n  echo \"$f\" | grep -v '^#' >> out.log 2>&1\ndone\n",
    "cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build -j2",
    "ls -la /usr/local/bin | awk '{print $9}' | sort -u | head -n 20",
    "SELECT id, name FROM users WHERE age >= 18 AND name LIKE '%son' ORDER BY id DESC;",
    "<html><head><title>Hi</title></head><body><p class=\"x\">Text &amp; more</p></body></html>",
    "fn main() { let v: Vec<u32> = (0..10).map(|x| x * x).collect(); println!(\"{:?}\", v); }",
    "const f = async (x) => { await fetch(`/api/${x}`); return x ?? 0; };",
    "x = a[1:2, ::3]; y = b[..., None]; z = c @ d.T",
    "        \n        \n    pass\n",
    "\t\t\tdeeply\n\t\t\t\tindented\n",
    "// comment\n/* block\n   comment */\n",
    "a==b!=c<=d>=e->f::g++h--i**j//k%%l^^m||n&&o",
    "x=1;y=2;z=x+y;print(z)",
    "@decorator\ndef f(): ...\n",
    "matrix = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]",
    "path = r\"C:\\Users\\name\\Documents\\file.txt\"",
    "regex = r'(?i:\\d+)\\s*[a-z]+$'",
    "key: value\nlist:\n  - item1\n  - item2\nnested:\n  a: 1\n",
]

SPECIAL = [
    "<|im_start|>",
    "<|im_end|>",
    "<|endoftext|>",
    "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n4<|im_end|>",
    "<think>Let me think step by step.</think>The answer is 42.",
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
    "<tool_response>sunny</tool_response>",
    "<|fim_prefix|>def f():<|fim_suffix|>\n    return 1<|fim_middle|>",
    "<|begin_of_text|>",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<|eom_id|><|python_tag|>",
    "<|reserved_special_token_0|><|reserved_special_token_247|>",
    "text<|eot_id|>text",
    "text <|eot_id|> text",
    "text  <|im_end|>  text",
    "<|im_start|><|im_start|><|im_end|><|im_end|>",
    "<|im_start",
    "im_start|>",
    "<|im_start|",
    "<|im_end| >",
    "< |im_end|>",
    "<|IM_START|>",
    "<|eot_id",
    "<|eot_id|",
    "<think",
    "</think",
    "<think >",
    "<thinking>",
    "<<think>>",
    "<|<|im_end|>|>",
    "<|im_end|><|eot_id|>",
    "a<|endoftext|>b<|end_of_text|>c",
    "\n<|im_end|>\n",
    " <|im_start|> ",
    "Hello<|im_end|>",
    "<|im_end|>Hello",
    "<|begin_of_text|>Hello world",
    "Hello world<|end_of_text|>",
    "\u4f60\u597d<|im_end|>\u4e16\u754c",
    "\U0001f600<|eot_id|>\U0001f600",
    "<|finetune_right_pad_id|>",
    "<|image_pad|><|video_pad|><|vision_start|><|vision_end|>",
    "<|object_ref_start|>the cat<|object_ref_end|><|box_start|>(10,20),(30,40)<|box_end|>",
    "<|repo_name|>sol<|file_sep|>main.cpp",
    "<|im_start|>user<|im_end|><|im_start|>user<|im_end|>",
    "The token <|im_start|> starts a message and <|im_end|> ends it.",
    "Use <think> and </think> tags.",
]

WHITESPACE = [
    "",
    " ",
    "  ",
    "   ",
    " " * 16,
    " " * 100,
    " " * 1000,
    "\t",
    "\t\t",
    "\n",
    "\n\n",
    "\n" * 10,
    "\n" * 100,
    "\r\n",
    "\r\n\r\n",
    "\r",
    " \n",
    "\n ",
    " \n ",
    "  \n  ",
    " \t \n \r\n ",
    "a ",
    "a  ",
    " a",
    "  a",
    "a  b",
    "a   b",
    "a \n b",
    "a\n\nb",
    "a \n\n b",
    "a\t\tb",
    "end with newline\n",
    "end with spaces   ",
    "end with tab\t",
    "\u00a0",
    "a\u00a0b",
    "a\u00a0\u00a0b",
    "\u3000\u3000\u5168\u89d2\u7a7a\u683c",
    "a\u2028b\u2029c",
    "a\u0085b",
    "a\u000bb\u000cc",
    "a\u2003b\u2009c\u202fd\u205fe",
    "a\u180eb",
    "a\u200bb\u200cc\u200dd\ufeffe",
    "a\u1680b",
    "x \u00a0 y",
    "    def f():\n        pass\n    ",
    "word\n\n\n\n\n\n\n\nword",
    "\n\n\n   \n\n\n   ",
    " \u00a0 \u00a0 ",
]

NORMALIZATION = [
    "caf\u00e9",
    "cafe\u0301",
    "e\u0301\u0301",
    "\u00c5ngstr\u00f6m \u212bngstro\u0308m A\u030angstrom",
    "\u1e9b\u0323",
    "\ufb01nance \ufb02ow",
    "\u2126 \u03a9",
    "n\u0303 \u00f1 N\u0303",
    "\u0041\u030a\u0301",
    "\u1100\u1161 \uac00",
    "\u304b\u3099 \u304c",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u036b\u0357\u0334\u0362\u0335\u031c\u0330\u0354L\u0368\u0367\u0369\u0358\u0320G\u0311\u0357\u030e\u0305\u035b\u0341\u0334\u033b\u0348\u034d\u0354\u0339O\u0342\u030c\u030c\u0358\u0328\u0335\u0339\u033b\u031d\u0333",
    "\u0915\u093c \u0958",
    "\u00bd \u2155",
    "\uff21\uff22\uff23\uff11\uff12\uff13",
    "\u01c4\u01c5\u01c6",
    "\u0130 i\u0307",
    "\u017f \u017fs 's 'S '\u017f",
    "\u212a Kelvin",
    "\u0345\u0399\u03b9",
]

PUNCT = [
    "!!!",
    "???",
    "...",
    "....................",
    "?!?!?!",
    "---",
    "===",
    "***",
    "###",
    "\"\"\"",
    "'''",
    "```",
    "```python\nprint('hi')\n```",
    "~~~",
    "<<>>",
    "(((())))",
    "[[[]]]",
    "{{{}}}",
    ":-) ;-) :-( :D",
    "@#$%^&*()_+-=[]{}|;':\",./<>?`~",
    "\u3002\uff0c\u3001\uff1f\uff01\u300c\u300d\u300e\u300f",
    "\u00bf\u00a1\u00ab\u00bb\u2039\u203a",
    "\u2022 \u00b7 \u2026 \u2030 \u2020 \u2021",
    "'",
    "''",
    "'s",
    "'S",
    "''s",
    " 's",
    "'ll've'd",
    "x's y't z're w've v'm u'll t'd",
    "A'S B'T C'RE D'VE E'M F'LL G'D",
    "'sa 'tx 'red 'very 'mm 'lll 'dd",
    "it\u2019s \u2018s",
    "\"quoted\" 'quoted' `quoted`",
    "-1 -2.5 --3 ---4",
    "a.b.c.d",
    "a,b,c,d",
    "1,2,3,4",
    "1.2.3.4",
    "192.168.0.1:8080",
    "$100 \u00a3200 \u00a5300 \u20ac400 \u20b9500",
    "#hashtag @mention",
    "___init___",
    "!\n!\n!\n",
    "?\r\n?\r\n",
    ".\n\n.",
    " !!\n\n",
    " .\r\n\r\n",
]

NUMBERS = [
    "0",
    "1",
    "12",
    "123",
    "1234",
    "12345",
    "123456",
    "1234567",
    "3.14",
    "0.001",
    "1e10",
    "1,000",
    "1 000 000",
    "2024-06-30T12:34:56Z",
    "12:00 PM",
    "1/2 3/4",
    "9" * 50,
    "1234567890" * 10,
    "0" * 64,
    "3.1415926535897932384626433832795028841971693993751058209749445923078164062862089986280348253421170679",
    "\u0661\u0662\u0663 \u0967\u0968\u0969 \uff11\uff12\uff13 \u2460\u2461 \u00b2\u00b3 \u2155",
    "v1.2.3-rc.4+build.5",
    "x1y22z333w4444",
    "A1B2C3",
    "100km 200kg 300ms 4GB 5GHz",
    "\u7b2c1\u7ae0 \u7b2c22\u8282",
    "$1.5M, $2.75B, 3.5x, 10^6, 2**32",
]

WORDS = [
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "with", "as", "was", "on",
    "compiler", "runtime", "tokenizer", "attention", "transformer", "gradient", "kernel",
    "bandwidth", "latency", "throughput", "inference", "quantization", "embedding",
    "Hello", "World", "Python", "CUDA", "GPU", "H200", "LLaMA", "Qwen", "HTTP", "JSON",
    "antidisestablishmentarianism", "pneumonoultramicroscopicsilicovolcanoconiosis",
    "supercalifragilisticexpialidocious", "floccinaucinihilipilification",
    "Donaudampfschifffahrtsgesellschaftskapit\u00e4n",
    "\u4f60\u597d", "\u4e16\u754c", "\u4eba\u5de5\u667a\u80fd", "\u3053\u3093\u306b\u3061\u306f",
    "\uc548\ub155", "\u043f\u0440\u0438\u0432\u0435\u0442", "\u0645\u0631\u062d\u0628\u0627",
    "na\u00efve", "r\u00e9sum\u00e9", "\u00fcber", "\U0001f600", "\U0001f44d\U0001f3fd", "42", "3.14",
    "2024", "don't", "it's", "I'm", "you're", "we've", "they'll", "he'd",
]

SEPARATORS = [" ", " ", " ", " ", "  ", "\n", "\n\n", "\t", ", ", ". ", "-", "_", "/", "", "\r\n", " \n", "   "]


def fixed_cases():
    cases = []
    for group in (PROSE, CHINESE, JAPANESE, KOREAN, ARABIC, EMOJI, CODE, SPECIAL,
                  WHITESPACE, NORMALIZATION, PUNCT, NUMBERS):
        cases.extend(group)
    # Single words, with and without a leading space, capitalised and upper.
    for w in WORDS:
        cases.extend([w, " " + w, w.capitalize(), w.upper()])
    # Every byte-level single character of ASCII, in a word context.
    for c in range(32, 127):
        cases.append("x" + chr(c) + "y")
    # Which characters the pre-tokenizer regex counts as \s: every Unicode
    # White_Space character and some near misses (U+180E, U+200B, U+FEFF),
    # placed where membership changes the split.
    for c in [0x9, 0xA, 0xB, 0xC, 0xD, 0x1C, 0x1F, 0x20, 0x85, 0xA0, 0x1680, 0x180E,
              0x2000, 0x2005, 0x200A, 0x200B, 0x2028, 0x2029, 0x202F, 0x205F,
              0x3000, 0xFEFF]:
        ch = chr(c)
        cases.extend(["a" + ch * 2 + "b", "a" + ch * 3 + "1", ch * 3, "x " + ch + " y",
                      "!" + ch + "!", ch + "\n" + ch])
    # Control characters.
    for c in list(range(0, 32)) + [127]:
        cases.append("a" + chr(c) + "b")
    # Very long words and runs (linear-time BPE and regex, word caching).
    cases.append("a" * 500)
    cases.append("ab" * 300)
    cases.append("abc" * 200 + " " + "xyz" * 200)
    cases.append("\u4f60" * 300)
    cases.append("\U0001f600" * 100)
    cases.append("!" * 300)
    cases.append("." * 1000)
    cases.append("1" * 1000)
    cases.append("12" * 500 + "x")
    cases.append("a " * 500)
    cases.append("\n " * 200)
    cases.append(" \t" * 200)
    cases.append("ha" * 200 + "!")
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    cases.append("".join(rng.choice(letters) for _ in range(2000)))
    cases.append("".join(rng.choice(letters + letters.upper() + "0123456789") for _ in range(1500)))
    cases.append("".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(800)))
    cases.append("".join(chr(rng.randrange(0xAC00, 0xD7A3)) for _ in range(500)))
    return cases


def random_text(rng, pools):
    parts = []
    for _ in range(rng.randrange(1, 12)):
        pool = rng.choice(pools)
        parts.append(rng.choice(pool))
        parts.append(rng.choice(SEPARATORS))
    text = "".join(parts)
    if rng.random() < 0.3:
        text = text.rstrip()
    if rng.random() < 0.1:
        text = " " + text
    return text


def random_unicode(rng, n):
    # Code points from many blocks; surrogates and noncharacters excluded so
    # the text is a valid Python str and valid UTF-8.
    blocks = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF),
              (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x2000, 0x206F),
              (0x2190, 0x22FF), (0x3040, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3),
              (0xFF00, 0xFFEF), (0x1F300, 0x1F6FF), (0x1F900, 0x1F9FF), (0x20000, 0x2A6DF),
              (0x300, 0x36F), (0xE000, 0xE0FF)]
    out = []
    for _ in range(n):
        lo, hi = rng.choice(blocks)
        out.append(chr(rng.randint(lo, hi)))
    return "".join(out)


def generated_cases(count):
    rng = random.Random(20240601)
    pools = [PROSE, CHINESE, JAPANESE, KOREAN, ARABIC, EMOJI, CODE, SPECIAL, WHITESPACE,
             NORMALIZATION, PUNCT, NUMBERS, WORDS, WORDS, WORDS]
    cases = []
    while len(cases) < count:
        r = rng.random()
        if r < 0.7:
            cases.append(random_text(rng, pools))
        elif r < 0.85:
            cases.append(random_unicode(rng, rng.randrange(1, 60)))
        else:
            # Random ASCII soup: exercises regex alternatives and contractions.
            alphabet = "aAsStTdDmM'\" \n\t\r.,!?0123456789-_<|>/\\{}"
            cases.append("".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 80))))
    return cases


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--out", default=os.path.join(root, "test", "tokenizer", "corpus.jsonl"))
    args = parser.parse_args()

    cases = fixed_cases()
    cases += generated_cases(1400 - len(cases) if len(cases) < 1000 else 800)
    # Deduplicate, keeping the first occurrence, so each case is counted once.
    seen = set()
    unique = []
    for c in cases:
        if c not in seen:
            seen.add(c)
            unique.append(c)
    for c in unique:
        c.encode("utf-8")  # raises on a lone surrogate
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="ascii", newline="\n") as f:
        for c in unique:
            f.write(json.dumps(c, ensure_ascii=True) + "\n")
    print(f"wrote {len(unique)} cases to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
