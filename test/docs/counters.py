#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""docs/counters.md against the code: every event counter and drop reason
(as counter-names prints them from the gateway's own name tables) and every
Prometheus metric family prom.c writes must have a row, under its
Prometheus name; a row for a name the code no longer has fails too.

usage: counters.py COUNTER_NAMES_EXE COUNTERS_MD PROM_C
"""
import re
import subprocess
import sys


def code_names(exe):
    ctrs, drops = [], []
    out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        kind, name = line.split()
        (ctrs if kind == "ctr" else drops).append(name)
    return ctrs, drops


def prom_families(path):
    """Metric names prom.c writes as string literals ("dustgw_x" alone)."""
    text = open(path, encoding="utf-8").read()
    return sorted(set(re.findall(r'"(dustgw_[a-z0-9_]+)"', text)))


def doc_rows(path):
    """First-column `name` of every table row -> the whole row."""
    rows = {}
    for line in open(path, encoding="utf-8"):
        m = re.match(r"\|\s*`([a-z0-9_]+)`\s*\|", line)
        if m:
            rows.setdefault(m.group(1), []).append(line)
    return rows


def main():
    exe, md, prom_c = sys.argv[1:4]
    ctrs, drops = code_names(exe)
    fams = prom_families(prom_c)
    if len(ctrs) < 10 or len(drops) < 40 or len(fams) < 20:
        sys.exit(f"FAIL: too few names from the code ({len(ctrs)} counters, "
                 f"{len(drops)} drops, {len(fams)} metric families): extraction broken")
    rows = doc_rows(md)
    want = {}  # name -> the Prometheus name its row must carry
    for c in ctrs:
        want[c] = f"dustgw_{c}_total"
    for d in drops:
        want[d] = f'reason="{d}"'
    for f in fams:
        want[f] = f
    errors = []
    for name, prom in sorted(want.items()):
        if name not in rows:
            errors.append(f"{name}: in the code, not documented in {md}")
        elif not any(prom in r for r in rows[name]):
            errors.append(f"{name}: its row does not name {prom}")
    for name in sorted(rows):
        if name not in want:
            errors.append(f"{name}: documented, but the code has no such counter, "
                          "drop reason or metric")
    for e in errors:
        print("FAIL:", e)
    if errors:
        sys.exit(1)
    print(f"PASS: {len(ctrs)} counters, {len(drops)} drop reasons, "
          f"{len(fams)} metric families documented")


main()
