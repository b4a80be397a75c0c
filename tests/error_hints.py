#!/usr/bin/env python3
"""Every poslab::Error thrown in src/ carries a hint: `throw Error(WHAT, HINT)`, never `throw Error(WHAT)`.

The user reads "error: WHAT" and then "hint: HINT" (what to do); an error without the second line leaves them
guessing. Fails naming each throw with one argument. Usage: tests/error_hints.py [SOURCE_DIR]
"""
import pathlib
import sys


def arguments(text, start):
    """The number of top-level arguments of the call whose '(' is just before `start`, and where it ends."""
    depth, commas, i, quote = 1, 0, start, None
    while i < len(text) and depth > 0:
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 1:
            commas += 1
        i += 1
    return commas + 1, i


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
    missing, count = [], 0
    for path in sorted((root / "src").rglob("*.cpp")):
        text = path.read_text()
        at = text.find("throw Error(")
        while at >= 0:
            count += 1
            n, end = arguments(text, at + len("throw Error("))
            if n < 2:
                line = text.count("\n", 0, at) + 1
                missing.append(f"{path.relative_to(root)}:{line}: {' '.join(text[at:end].split())[:100]}")
            at = text.find("throw Error(", end)
    if count == 0:
        sys.exit(f"error: no 'throw Error(' found under {root / 'src'}\nhint: pass the source folder")
    for m in missing:
        print(m)
    if missing:
        sys.exit(f"error: {len(missing)} of {count} errors have no hint\n"
                 "hint: give each one a second argument that says what to do")
    print(f"error_hints: all {count} errors have a hint")


if __name__ == "__main__":
    main()
