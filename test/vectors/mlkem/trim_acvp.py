#!/usr/bin/env python3
"""Trim NIST ACVP ML-KEM JSON (prompt.json + expectedResults.json of
ML-KEM-keyGen-FIPS203 and ML-KEM-encapDecap-FIPS203) to the ML-KEM-768
cases, as 'name = hex' lines, one blank line between cases (see README.md).

usage: trim_acvp.py KEYGEN_DIR ENCAPDECAP_DIR > acvp-768.txt
"""
import json
import sys


def merged(d):
    prompt = json.load(open(d + '/prompt.json'))
    results = json.load(open(d + '/expectedResults.json'))
    out = {t['tcId']: dict(t) for g in results['testGroups'] for t in g['tests']}
    for g in prompt['testGroups']:
        if g['parameterSet'] != 'ML-KEM-768':
            continue
        for t in g['tests']:
            case = dict(out[t['tcId']])
            case.update(t)
            for k in ('dk',):  # decapsulation groups carry dk once per group
                if k in g:
                    case[k] = g[k]
            yield g.get('function', 'keyGen'), case


def main():
    order = {'keyGen': ('d', 'z', 'ek', 'dk'),
             'encapsulation': ('ek', 'm', 'c', 'k'),
             'decapsulation': ('dk', 'c', 'k')}
    for d in sys.argv[1:]:
        for fn, case in merged(d):
            print('op = %s' % fn)
            print('tcId = %d' % case['tcId'])
            for k in order[fn]:
                print('%s = %s' % (k, case[k].lower()))
            print()


main()
