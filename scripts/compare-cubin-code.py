#!/usr/bin/env python3
"""Compares the machine code of two folders of cubins, section by section.

A change to a kernel header that should not change code generation (a
refactor, a comment) is checked without a GPU: dump the cubins of the
affected check families before and after,

  SOL_CACHE_DIR=/tmp/kc-a build/bin/sol-kernel-check --compile-only \\
      --only attention,kv_fp8,fused_rope --dump-cubins /tmp/cubins-a
  (change the header; ninja -C build sol-kernel-check, which embeds the headers)
  SOL_CACHE_DIR=/tmp/kc-b build/bin/sol-kernel-check --compile-only \\
      --only attention,kv_fp8,fused_rope --dump-cubins /tmp/cubins-b
  scripts/compare-cubin-code.py /tmp/cubins-a /tmp/cubins-b

(fresh cache folders, so that both really compile). Whole cubins differ from
one compilation to the next; their code (.text.*), constant-bank layout
(.nv.constant0.*), kernel attributes (.nv.info.*) and shared-memory sizes
(.nv.shared.*) do not. Exit code 0 when every cubin's are equal.
"""
import os
import struct
import sys

KEPT = (".text", ".nv.constant0", ".nv.info.", ".nv.shared")


def sections(path):
    """The kept sections of a 64-bit little-endian ELF: name -> bytes (size for NOBITS)."""
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF":
        sys.exit(f"{path}: not an ELF file")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    entsize, count, strndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * entsize) for i in range(count)]
    names = headers[strndx][4]
    out = {}
    for name_off, kind, _, _, offset, size, *_ in headers:
        name = data[names + name_off:data.index(b"\0", names + name_off)].decode()
        if name.startswith(KEPT):
            out[name] = size if kind == 8 else data[offset:offset + size]
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: compare-cubin-code.py DIR_A DIR_B")
    a, b = sys.argv[1:]
    files_a, files_b = sorted(os.listdir(a)), sorted(os.listdir(b))
    if files_a != files_b:
        print(f"different cubins: {sorted(set(files_a) ^ set(files_b))}")
        return 1
    differing = 0
    for f in files_a:
        sa, sb = sections(os.path.join(a, f)), sections(os.path.join(b, f))
        if sa != sb:
            differing += 1
            names = sorted(k for k in set(sa) | set(sb) if sa.get(k) != sb.get(k))
            print(f"{f}: {', '.join(names[:4])}{' ...' if len(names) > 4 else ''}")
    print(f"{len(files_a)} cubins, {differing} with different code")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
