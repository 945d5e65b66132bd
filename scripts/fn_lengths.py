#!/usr/bin/env python3
"""Lengths of the Rust functions under some folders, longest first.

A function's length is the number of lines from the line of its `fn` keyword to the line of
the brace closing its body, both included (so a nested function counts within its parent too).
Comments, string literals (raw ones included) and character literals are skipped when braces
are matched; declarations without a body (`fn f();` in a trait) are ignored.

    python3 scripts/fn_lengths.py codegen            # the 15 longest
    python3 scripts/fn_lengths.py codegen --top 40
    python3 scripts/fn_lengths.py codegen --over 150 # exit status 1 if one is longer
"""

import argparse
import pathlib
import re
import sys


def code_chars(text):
    """(index, char) for every character outside comments and string/char literals."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            continue
        m = re.compile(r'b?r(#*)"').match(text, i)
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find('"' + m.group(1), m.end())
            i = n if end < 0 else end + 1 + len(m.group(1))
            continue
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            continue
        if c == "'":
            # A character literal ('x', '\n', '\u{0}', '{') or a lifetime ('a).
            m = re.compile(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'").match(text, i)
            if m:
                i = m.end()
                continue
        yield i, c
        i += 1


def functions(path):
    text = path.read_text()
    line_of = [0] * (len(text) + 1)
    line = 1
    for k, ch in enumerate(text):
        line_of[k] = line
        if ch == "\n":
            line += 1
    chars = list(code_chars(text))
    code = "".join(c for _, c in chars)
    pos = [i for i, _ in chars]
    out = []
    for m in re.finditer(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)", code):
        # The body starts at the first `{` at bracket depth 0 after the signature; a `;` there
        # first means a declaration without a body.
        depth, k = 0, m.end()
        while k < len(code):
            ch = code[k]
            if ch in "(<[":
                depth += 1
            elif ch in ")>]" and not (ch == ">" and code[k - 1] == "-"):
                depth -= 1
            elif depth <= 0 and ch in "{;":
                break
            k += 1
        if k >= len(code) or code[k] == ";":
            continue
        braces, j = 0, k
        while j < len(code):
            if code[j] == "{":
                braces += 1
            elif code[j] == "}":
                braces -= 1
                if braces == 0:
                    break
            j += 1
        first, last = line_of[pos[m.start()]], line_of[pos[min(j, len(pos) - 1)]]
        out.append((last - first + 1, f"{path}:{first}", m.group(1)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--over", type=int, help="exit with status 1 if a function has more lines than this")
    a = ap.parse_args()
    fns = []
    for d in a.dirs:
        for p in sorted(pathlib.Path(d).rglob("*.rs")):
            if "target" not in p.parts:
                fns.extend(functions(p))
    fns.sort(key=lambda f: (-f[0], f[1]))
    for n, where, name in fns[: a.top]:
        print(f"{n:5}  {name:32} {where}")
    print(f"{len(fns)} functions")
    if a.over is not None and fns and fns[0][0] > a.over:
        sys.exit(1)


if __name__ == "__main__":
    main()
