#!/usr/bin/env python3
"""Writes SRC (a Gemma3ForCausalLM checkpoint) as the text part of a
Gemma3ForConditionalGeneration checkpoint in DST: config.json with the text
model's settings under text_config, tensors renamed under PREFIX
(model.language_model. as transformers 5 saves them, or language_model.model.
as transformers 4 did), goldens copied. Standard library only.

  wrap-gemma3-multimodal.py SRC DST [PREFIX]"""
import json
import shutil
import struct
import sys
from pathlib import Path

src, dst = Path(sys.argv[1]), Path(sys.argv[2])
prefix = sys.argv[3] if len(sys.argv) > 3 else "model.language_model."
dst.mkdir(parents=True, exist_ok=True)
text = json.loads((src / "config.json").read_text())
top = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
       "text_config": {k: v for k, v in text.items() if k != "architectures"},
       "eos_token_id": text["eos_token_id"], "bos_token_id": text["bos_token_id"],
       "vision_config": {"model_type": "siglip_vision_model"}}
(dst / "config.json").write_text(json.dumps(top, indent=1))
data = (src / "model.safetensors").read_bytes()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
renamed = {(prefix + k[len("model."):] if k.startswith("model.") else k): v
           for k, v in header.items()}
blob = json.dumps(renamed).encode()
blob += b" " * (-len(blob) % 8)
(dst / "model.safetensors").write_bytes(struct.pack("<Q", len(blob)) + blob + data[8 + n:])
for name in ("golden.json", "golden_logits.safetensors", "generation_config.json"):
    shutil.copy(src / name, dst / name)
