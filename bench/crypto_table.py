#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The AEAD backend table (bench/results/crypto.md) from one dust_bench JSON run.

Reads BM_{bare,codec}_{seal,open}/backend:B/suite:S/size:N (crypto_bench.cpp):
the codec's burst seal/open on each backend beside each library's bare
primitive, all from the same run. Mops/s is the median over repetitions of
packets per CPU-second; ratios are taken between rows of this one run.
usage: crypto_table.py dust_bench.json > crypto.md
"""
import json
import re
import statistics
import sys

NAME = re.compile(r'BM_(bare|codec)_(seal|open)/backend:(\d)/suite:(\d)/size:(\d+)$')
SUITES = {0: 'ChaCha20-Poly1305', 1: 'AES-256-GCM'}


def load(path):
    runs = {}
    for b in json.load(open(path))['benchmarks']:
        if b.get('run_type') == 'aggregate' or 'pps' not in b or b.get('error_occurred'):
            continue
        m = NAME.match(b.get('run_name', b['name']))
        if m:
            kind, op, lib, suite, size = m.groups()
            runs.setdefault((kind, op, int(lib), int(suite), int(size)), []).append(b['pps'] / 1e6)
    return {k: statistics.median(v) for k, v in runs.items()}


def fmt(x):
    return '-' if x is None else '%.2f' % x


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def main(path):
    r = load(path)
    print('| suite | size B | op | bare libsodium | bare libipsec-mb | codec, libsodium '
          '| codec, libipsec-mb | codec / bare, libsodium | codec / bare, libipsec-mb '
          '| codec libipsec-mb / codec libsodium |')
    print('|---|---|---|---|---|---|---|---|---|---|')
    for suite in (0, 1):
        for size in (64, 1400):
            for op in ('seal', 'open'):
                bs, bi = r.get(('bare', op, 0, suite, size)), r.get(('bare', op, 1, suite, size))
                cs, ci = r.get(('codec', op, 0, suite, size)), r.get(('codec', op, 1, suite, size))
                print('| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |' % (
                    SUITES[suite], size, op, fmt(bs), fmt(bi), fmt(cs), fmt(ci),
                    fmt(ratio(cs, bs)), fmt(ratio(ci, bi)), fmt(ratio(ci, cs))))
    print()
    print('Mops/s (million packets per CPU-second), bursts of 32, 16 bytes of AD; '
          '"open" copies each datagram in first (as a NIC would have written it) '
          'and decrypts out of place with a constant-time tag compare.')


if __name__ == '__main__':
    main(sys.argv[1])
