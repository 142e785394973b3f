# SPDX-License-Identifier: BSD-3-Clause
"""What the reference decoders (refdecode.py, refquic.py) share: the vector
file reader, the checks that print what they verified, and the runner that
turns any mismatch or decrypt failure into a failed test."""
import sys

EPOCH_S = 120  # SPEC.md: the intro tag's time epoch


class Fail(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Fail(what)
    print('ok  ', what)


def read_vectors(path):
    """The vector file's 'name: value' lines ('#' starts a comment)."""
    v = {}
    for line in open(path):
        if line.startswith('#') or ':' not in line:
            continue
        k, _, val = line.rstrip('\n').partition(': ')
        v[k] = val
    return v


def run(main):
    """main(argv[1]); any exception fails the test, reported as one failed."""
    try:
        main(sys.argv[1])
    except Exception as e:  # any mismatch or decrypt failure fails the test
        print('FAIL', type(e).__name__, e)
        print('0 passed, 1 failed')
        sys.exit(1)
