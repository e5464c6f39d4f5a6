#!/usr/bin/env python3
"""Overwrites every byte of one tensor of a safetensors file with BYTE (hex).

For tests that need a malformed value (a wrapped GPTQ zero point) in an
otherwise valid checkpoint. Standard library only.
"""
import json
import struct
import sys


def main():
    path, name, byte = sys.argv[1], sys.argv[2], int(sys.argv[3], 16)
    with open(path, "r+b") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
        begin, end = header[name]["data_offsets"]
        f.seek(8 + size + begin)
        f.write(bytes([byte]) * (end - begin))


if __name__ == "__main__":
    main()
