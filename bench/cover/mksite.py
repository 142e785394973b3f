#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write a static site of N pages for the cover captures: each page has a
style sheet, a script and images of varied sizes, so a page load is a few
dozen requests of mixed sizes, as a small real site's is. Deterministic
(seeded), so two runs serve the same bytes.

usage: mksite.py DIR [N]"""
import os
import random
import sys


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    rnd = random.Random(156)
    os.makedirs(out, exist_ok=True)
    assets = []
    for k in range(40):
        kind = rnd.choice(["png", "png", "jpg", "css", "js"])
        size = int(rnd.lognormvariate(8.5, 1.3)) + 200
        name = "a%d.%s" % (k, kind)
        with open(os.path.join(out, name), "wb") as f:
            if kind in ("css", "js"):
                body = ("/* asset %d */\n" % k).encode()
                while len(body) < size:
                    body += ("x%d{margin:%dpx}\n" % (rnd.randrange(1 << 20), rnd.randrange(99))).encode()
                f.write(body[:size])
            else:
                f.write(rnd.randbytes(size))
        assets.append(name)
    for p in range(1, n + 1):
        mine = rnd.sample(assets, rnd.randrange(4, 12))
        words = " ".join("w%d" % rnd.randrange(10000) for _ in range(rnd.randrange(100, 1500)))
        parts = ["<!doctype html><title>page %d</title>" % p]
        for a in mine:
            if a.endswith(".css"):
                parts.append('<link rel="stylesheet" href="%s">' % a)
            elif a.endswith(".js"):
                parts.append('<script src="%s"></script>' % a)
            else:
                parts.append('<img src="%s">' % a)
        parts.append("<p>page %d of %d. %s</p>" % (p, n, words))
        with open(os.path.join(out, "p%d.html" % p), "w") as f:
            f.write("\n".join(parts) + "\n")
    with open(os.path.join(out, "index.html"), "w") as f:
        f.write("<!doctype html><title>index</title><p>page 0 of %d.\n" % n)


if __name__ == "__main__":
    main()
