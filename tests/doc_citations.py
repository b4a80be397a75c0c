#!/usr/bin/env python3
"""Every pointer into the docs leads somewhere: the README's and docs' links name files that exist, and every
citation of a section, `docs/NAME.md, "Heading"` (or “Heading”) in src/ (what pages and messages print) and in the
docs themselves, names a heading of that page (its start: "Seed agreement" for "Seed agreement: the same table up to
rotation?"). Fails naming each pointer that leads nowhere. Usage: tests/doc_citations.py [SOURCE_DIR]
"""
import pathlib
import re
import sys

CITATION = re.compile(r'docs/([a-z0-9_-]+\.md),?\s+\(?(?:section\s+)?(?:\\"|"|“)([^"”\\]+)(?:\\"|"|”)')
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def joined_literals(text):
    """C++ source with adjacent string literals and comment lines joined ("a "\n   "b" reads "a b"), so a
    citation split over two lines of source is found whole."""
    return re.sub(r"\s*\n\s*//\s*", " ", re.sub(r'"\s*\n\s*"', "", text))


def headings(page):
    """A page's sections: its headings, and the bold words that open a paragraph ("**A crash at any moment.**")."""
    out, fenced = [], False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif fenced:
            continue
        elif line.startswith("#"):
            out.append(re.sub(r"^#+\s*", "", line).strip())
        elif bold := re.match(r"\*\*([^*]+)\*\*", line):
            out.append(bold.group(1))
    return out


def names(heading, cited):
    """Whether `cited` names `heading`: the whole of it, or its start up to a stop ("Seed agreement" of "Seed
    agreement: the same table up to rotation?"), not any prefix ("What grows" of "What grows the circles")."""
    return heading == cited or (heading.startswith(cited) and heading[len(cited)] in ":.?,(")


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    faults, checked = [], 0
    pages = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    for page in pages:
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            checked += 1
            if not (page.parent / target).exists():
                faults.append(f"{page.relative_to(root)}: a link to {target}, which is not there")
    sources = [p for p in sorted((root / "src").rglob("*")) if p.suffix in (".cpp", ".h", ".html", ".js")]
    for path in sources + pages:
        text = path.read_text()
        text = joined_literals(text) if path.suffix in (".cpp", ".h") else text.replace("\n", " ")
        for name, heading in CITATION.findall(text):
            checked += 1
            doc = root / "docs" / name
            if not doc.exists():
                faults.append(f"{path.relative_to(root)}: cites docs/{name}, which is not there")
            elif not any(names(h, heading.strip()) for h in headings(doc)):
                faults.append(f'{path.relative_to(root)}: cites docs/{name}, "{heading}": no such heading there')
    for fault in faults:
        print(fault)
    print(f"doc_citations: {checked} links and citations checked, {len(faults)} leading nowhere")
    return 1 if faults or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
