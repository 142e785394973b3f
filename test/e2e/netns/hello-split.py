#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Is each connection's hello split over its Initials as Chromium 156 splits it?

Reads tshark's fields of the client Initials (connection number, packet
number, CRYPTO offsets, CRYPTO lengths; tab-separated) on stdin. In every
captured Chromium 156 hello, packet 1 holds the ClientHello's head [0, a)
and its tail [b, end), packet 2 the middle [a, b), and each later Initial
with CRYPTO data (a PTO resend) holds exactly packet 1's spans or packet
2's (SPEC 12.2). Prints "CONNS BAD HEAD_MIN HEAD_MAX" (a's range) and, on
stderr, each connection that differs; exit 1 if any does.
"""
import sys


def spans_of(offs, lens):
    spans = []
    for a, b in sorted(zip(offs, [o + n for o, n in zip(offs, lens)])):
        if spans and spans[-1][1] == a:
            spans[-1][1] = b
        else:
            spans.append([a, b])
    return spans


conns = {}
for line in sys.stdin:
    f = line.rstrip("\n").split("\t")
    # coalesced packets (a client's later Initial+Handshake) carry no hello bytes
    if len(f) < 4 or not f[2] or "," in f[1]:
        continue
    spans = spans_of([int(x) for x in f[2].split(",")], [int(x) for x in f[3].split(",")])
    conns.setdefault(f[0].split(",")[0], []).append((int(f[1]), spans))

bad, heads = 0, []
for conn, pkts in sorted(conns.items()):
    by_pn = dict(pkts)
    p1, p2 = by_pn.get(1), by_pn.get(2)
    ok = (p1 is not None and p2 is not None and len(p1) == 2 and len(p2) == 1 and
          p1[0][0] == 0 and p2[0] == [p1[0][1], p1[1][0]] and
          all(s in (p1, p2) for _, s in pkts))
    if ok:
        heads.append(p1[0][1])
    else:
        bad += 1
        print("connection %s: hello not split as Chromium's: %s" % (conn, pkts), file=sys.stderr)
print(len(conns), bad, min(heads) if heads else "-", max(heads) if heads else "-")
sys.exit(1 if bad else 0)
