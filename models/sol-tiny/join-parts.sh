#!/usr/bin/env bash
# Reassembles the files that train.py --split-output DIR cut into parts:
# DIR/NAME.part-00, NAME.part-01, ... -> DIR/NAME, checked against DIR/NAME.sha256, then the
# parts and the checksum file are removed.
#
#   models/sol-tiny/join-parts.sh DIR
set -euo pipefail
DIR="${1:?usage: join-parts.sh DIR}"
shopt -s nullglob
found=0
for sum in "$DIR"/*.sha256; do
  name="$(basename "$sum" .sha256)"
  parts=("$DIR/$name".part-*)
  if [[ ${#parts[@]} -eq 0 ]]; then
    echo "join-parts: $sum has no $name.part-* beside it" >&2
    exit 1
  fi
  # part-00, part-01, ... sort in order as long as there are fewer than 100 parts
  cat "${parts[@]}" > "$DIR/$name.joining"
  want="$(cut -d' ' -f1 "$sum")"
  got="$(sha256sum "$DIR/$name.joining" | cut -d' ' -f1)"
  if [[ "$want" != "$got" ]]; then
    rm -f "$DIR/$name.joining"
    echo "join-parts: $name: sha256 $got, expected $want" >&2
    exit 1
  fi
  mv "$DIR/$name.joining" "$DIR/$name"
  rm -f "${parts[@]}" "$sum"
  echo "join-parts: $DIR/$name (${#parts[@]} parts, sha256 ok)"
  found=1
done
[[ $found -eq 1 ]] || echo "join-parts: nothing to join in $DIR"
