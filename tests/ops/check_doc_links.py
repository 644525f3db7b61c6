#!/usr/bin/env python3
"""Check the relative links of installed Markdown documentation.

Usage: check_doc_links.py DOCDIR

Every [text](target) link in DOCDIR's *.md files that is not a URL must
name a file that exists relative to the page (uncompressed: a reader
following the link does not look for target.gz), and an #anchor must name
a heading of that page (GitHub's way of making ids from headings).
Prints each broken link and exits 1 if there is any, 0 otherwise."""

import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def slug(heading):
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        return {slug(h) for h in HEADING.findall(f.read())}


def broken_links(docdir):
    bad, pages = [], 0
    for d, _, names in os.walk(docdir):
        for n in sorted(names):
            if not n.endswith(".md"):
                continue
            page = os.path.join(d, n)
            pages += 1
            with open(page, encoding="utf-8") as f:
                text = f.read()
            for target in LINK.findall(text):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, https:, mailto:, file:
                path, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(d, path)) if path else page
                where = os.path.relpath(page, docdir)
                if not os.path.isfile(dest):
                    bad.append("%s: %s: no such file" % (where, target))
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    bad.append("%s: %s: no such heading" % (where, target))
    return pages, bad


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    pages, bad = broken_links(sys.argv[1])
    for b in bad:
        print("broken link: " + b)
    if pages == 0:
        print("no Markdown pages in " + sys.argv[1])
        return 1
    print("%d pages, %d broken links" % (pages, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
