#!/usr/bin/python3
"""Every relative link of the given Markdown pages resolves: the file exists, and an anchor
(#...) names a heading of the page it points to, as GitHub spells heading anchors. Links inside
code blocks and links to other sites are not checked. Prints `page:line: what is wrong` for
each broken one and exits 1 when there is any.

usage: check_links.py PAGE.md...
"""
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    found, seen, fence = set(), {}, False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
            elif not fence and (m := re.match(r"#{1,6} (.*)", line)):
                base = slug(m.group(1))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
    return found


def check(page):
    problems, fence = [], False
    with open(page, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.startswith("```"):
                fence = not fence
                continue
            if fence:
                continue
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue  # another site, or mailto:
                path, _, anchor = target.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path \
                    else page
                if not os.path.exists(resolved):
                    problems.append(f"{page}:{number}: {target}: no file {resolved}")
                elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                    problems.append(f"{page}:{number}: {target}: no heading #{anchor} in {resolved}")
    return problems


def main(pages):
    problems = [p for page in pages for p in check(page)]
    for p in problems:
        print(p)
    print(f"{len(pages)} pages, {len(problems)} broken links")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
