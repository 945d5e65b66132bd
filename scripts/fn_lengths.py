#!/usr/bin/env python3
"""Lines of every Rust `fn` (from the line of `fn` to the line of its closing brace), largest first.

    scripts/fn_lengths.py [--top N] [--max LINES] PATH...

PATHs are `.rs` files or folders (searched recursively, `target/` skipped). Braces are matched
after removing comments, string literals (raw ones included) and character literals, so braces
in text do not count. A nested `fn` is reported on its own and also counts in the lines of the
function around it. With `--max`, the exit status is 1 when a function is longer.
"""

import argparse
import pathlib
import re
import sys


def strip(src: str) -> str:
    """`src` with comments and literals blanked out (newlines kept, so line numbers hold)."""
    out = []
    i, n = 0, len(src)

    def blank(text: str) -> str:
        return "".join("\n" if c == "\n" else " " for c in text)

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(src[i:j]))
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(src[i:j]))
            i = j
        elif (m := re.compile(r'b?r(#*)"').match(src, i)) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            end = '"' + m.group(1)
            j = src.find(end, m.end())
            j = n if j < 0 else j + len(end)
            out.append(blank(src[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append(blank(src[i : j + 1]))
            i = j + 1
        elif c == "'":
            # A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            m = re.compile(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'").match(src, i)
            if m:
                out.append(blank(m.group(0)))
                i = m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def functions(path: pathlib.Path):
    """(name, first line, lines) of each function with a body in `path`."""
    text = strip(path.read_text())
    for m in FN.finditer(text):
        # The body starts at the first `{` after the signature, unless a `;` comes first.
        j = m.end()
        while j < len(text) and text[j] not in "{;":
            j += 1
        if j >= len(text) or text[j] == ";":
            continue
        depth, k = 0, j
        while k < len(text):
            if text[k] == "{":
                depth += 1
            elif text[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        first = text.count("\n", 0, m.start()) + 1
        last = text.count("\n", 0, k) + 1
        yield m.group(1), first, last - first + 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", type=pathlib.Path)
    ap.add_argument("--top", type=int, default=10, help="how many to list (default 10)")
    ap.add_argument("--max", type=int, help="fail when a function has more lines than this")
    args = ap.parse_args()
    files = []
    for p in args.paths:
        if p.is_dir():
            files += sorted(f for f in p.rglob("*.rs") if "target" not in f.parts)
        else:
            files.append(p)
    found = [(lines, f"{f}:{line}", name) for f in files for name, line, lines in functions(f)]
    found.sort(key=lambda x: (-x[0], x[1]))
    for lines, at, name in found[: args.top]:
        print(f"{lines:>5}  {name}  {at}")
    if args.max is not None and found and found[0][0] > args.max:
        print(f"largest function has {found[0][0]} lines (> {args.max})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
