#!/usr/bin/env python3
"""An independent ML-KEM-768, written from FIPS 203 (August 2024) with
hashlib's SHA3 and SHAKE, in the standard's own terms: plain integers mod
q, no Montgomery form, the algorithms numbered as in the standard. Slow,
and meant to be obviously right rather than fast or constant-time.

usage:
  refmlkem.py --kat DIR          check the vectors in DIR (test/vectors/mlkem)
  refmlkem.py --c EXE [N]        compare with `EXE --print N` (the C, test_mlkem)
Exit status 0 when everything matched.
"""
import gzip
import hashlib
import subprocess
import sys

n, q, k, eta1, eta2, du, dv = 256, 3329, 3, 2, 2, 10, 4


# §4.1: the hash functions
def H(s):
    return hashlib.sha3_256(s).digest()


def G(s):
    h = hashlib.sha3_512(s).digest()
    return h[:32], h[32:]


def J(s):
    return hashlib.shake_256(s).digest(32)


def PRF(eta, s, b):
    return hashlib.shake_256(s + bytes([b])).digest(64 * eta)


# §4.2.1: bits, bytes, compression
def bits_of(b):
    return [(byte >> i) & 1 for byte in b for i in range(8)]


def compress(d, x):
    # round(2^d / q * x) mod 2^d, with exact integer rounding (q is odd: no ties)
    return ((x << d) * 2 + q) // (2 * q) % (1 << d)


def decompress(d, y):
    return (y * q * 2 + (1 << d)) // (2 << d)


def byte_encode(d, f):  # Algorithm 5
    bits = []
    for a in f:
        bits += [(a >> j) & 1 for j in range(d)]
    return bytes(sum(bits[8 * i + j] << j for j in range(8)) for i in range(len(bits) // 8))


def byte_decode(d, b):  # Algorithm 6
    bits = bits_of(b)
    m = q if d == 12 else 1 << d
    return [sum(bits[i * d + j] << j for j in range(d)) % m for i in range(n)]


# §4.2.2: sampling
def sample_ntt(seed):  # Algorithm 7: seed is rho || j || i
    xof = hashlib.shake_128(seed)
    stream, length = b'', 0
    a, pos = [], 0
    while len(a) < n:
        if pos + 3 > len(stream):
            length += 168 * 4
            stream = xof.digest(length)
        c0, c1, c2 = stream[pos], stream[pos + 1], stream[pos + 2]
        pos += 3
        d1 = c0 + 256 * (c1 % 16)
        d2 = c1 // 16 + 16 * c2
        if d1 < q:
            a.append(d1)
        if d2 < q and len(a) < n:
            a.append(d2)
    return a


def sample_cbd(eta, b):  # Algorithm 8
    bits = bits_of(b)
    f = []
    for i in range(n):
        x = sum(bits[2 * i * eta + j] for j in range(eta))
        y = sum(bits[2 * i * eta + eta + j] for j in range(eta))
        f.append((x - y) % q)
    return f


# §4.3: the NTT with zeta = 17
def bitrev7(i):
    return int('{:07b}'.format(i)[::-1], 2)


ZETA = [pow(17, bitrev7(i), q) for i in range(128)]
GAMMA = [pow(17, 2 * bitrev7(i) + 1, q) for i in range(128)]


def ntt(f):  # Algorithm 9
    f = list(f)
    i = 1
    length = 128
    while length >= 2:
        for start in range(0, n, 2 * length):
            z = ZETA[i]
            i += 1
            for j in range(start, start + length):
                t = z * f[j + length] % q
                f[j + length] = (f[j] - t) % q
                f[j] = (f[j] + t) % q
        length //= 2
    return f


def ntt_inv(f):  # Algorithm 10
    f = list(f)
    i = 127
    length = 2
    while length <= 128:
        for start in range(0, n, 2 * length):
            z = ZETA[i]
            i -= 1
            for j in range(start, start + length):
                t = f[j]
                f[j] = (t + f[j + length]) % q
                f[j + length] = z * (f[j + length] - t) % q
        length *= 2
    return [x * 3303 % q for x in f]  # 3303 = 128^-1 mod q


def multiply_ntts(f, g):  # Algorithms 11 and 12
    h = [0] * n
    for i in range(128):
        a0, a1, b0, b1 = f[2 * i], f[2 * i + 1], g[2 * i], g[2 * i + 1]
        h[2 * i] = (a0 * b0 + a1 * b1 * GAMMA[i]) % q
        h[2 * i + 1] = (a0 * b1 + a1 * b0) % q
    return h


def add(f, g):
    return [(a + b) % q for a, b in zip(f, g)]


def dot(u, v):  # sum of products in the NTT domain
    acc = [0] * n
    for a, b in zip(u, v):
        acc = add(acc, multiply_ntts(a, b))
    return acc


# §5: K-PKE
def matrix(rho):
    return [[sample_ntt(rho + bytes([j, i])) for j in range(k)] for i in range(k)]


def pke_keygen(d):  # Algorithm 13
    rho, sigma = G(d + bytes([k]))
    A = matrix(rho)
    N = 0
    s, e = [], []
    for _ in range(k):
        s.append(sample_cbd(eta1, PRF(eta1, sigma, N)))
        N += 1
    for _ in range(k):
        e.append(sample_cbd(eta1, PRF(eta1, sigma, N)))
        N += 1
    s_hat = [ntt(x) for x in s]
    e_hat = [ntt(x) for x in e]
    t_hat = [add(dot(A[i], s_hat), e_hat[i]) for i in range(k)]
    ek = b''.join(byte_encode(12, t) for t in t_hat) + rho
    dk = b''.join(byte_encode(12, x) for x in s_hat)
    return ek, dk


def pke_encrypt(ek, m, r):  # Algorithm 14
    t_hat = [byte_decode(12, ek[384 * i:384 * (i + 1)]) for i in range(k)]
    A = matrix(ek[384 * k:])
    N = 0
    y, e1 = [], []
    for _ in range(k):
        y.append(sample_cbd(eta1, PRF(eta1, r, N)))
        N += 1
    for _ in range(k):
        e1.append(sample_cbd(eta2, PRF(eta2, r, N)))
        N += 1
    e2 = sample_cbd(eta2, PRF(eta2, r, N))
    y_hat = [ntt(x) for x in y]
    AT = [[A[j][i] for j in range(k)] for i in range(k)]
    u = [add(ntt_inv(dot(AT[i], y_hat)), e1[i]) for i in range(k)]
    mu = [decompress(1, b) for b in byte_decode(1, m)]
    v = add(add(ntt_inv(dot(t_hat, y_hat)), e2), mu)
    c1 = b''.join(byte_encode(du, [compress(du, x) for x in ui]) for ui in u)
    c2 = byte_encode(dv, [compress(dv, x) for x in v])
    return c1 + c2


def pke_decrypt(dk, c):  # Algorithm 15
    c1, c2 = c[:32 * du * k], c[32 * du * k:]
    u = [[decompress(du, x) for x in byte_decode(du, c1[32 * du * i:32 * du * (i + 1)])]
         for i in range(k)]
    v = [decompress(dv, x) for x in byte_decode(dv, c2)]
    s_hat = [byte_decode(12, dk[384 * i:384 * (i + 1)]) for i in range(k)]
    w = [(a - b) % q for a, b in zip(v, ntt_inv(dot(s_hat, [ntt(x) for x in u])))]
    return byte_encode(1, [compress(1, x) for x in w])


# §6 and §7: ML-KEM
def keygen(d, z):  # Algorithm 16
    ek, dk_pke = pke_keygen(d)
    return ek, dk_pke + ek + H(ek) + z


def ek_ok(ek):  # §7.2 modulus check
    t = ek[:384 * k]
    return all(byte_encode(12, byte_decode(12, t[384 * i:384 * (i + 1)])) ==
               t[384 * i:384 * (i + 1)] for i in range(k))


def encaps(ek, m):  # Algorithm 17 (after the §7.2 check)
    if len(ek) != 384 * k + 32 or not ek_ok(ek):
        return None
    K, r = G(m + H(ek))
    return K, pke_encrypt(ek, m, r)


def decaps(dk, c):  # Algorithm 18 (after the §7.3 checks)
    dk_pke, ek = dk[:384 * k], dk[384 * k:768 * k + 32]
    h, z = dk[768 * k + 32:768 * k + 64], dk[768 * k + 64:]
    if len(dk) != 768 * k + 96 or H(ek) != h:
        return None
    m = pke_decrypt(dk_pke, c)
    K, r = G(m + h)
    return K if pke_encrypt(ek, m, r) == c else J(z + c)


# ---- the checks ----
def records(lines):
    rec = {}
    for line in lines:
        line = line.strip()
        if not line:
            if rec:
                yield rec
            rec = {}
            continue
        if line.startswith('#') or ' = ' not in line:
            continue
        name, val = line.split(' = ', 1)
        rec[name] = val if name in ('op', 'tcId') else bytes.fromhex(val)
    if rec:
        yield rec


def check_kat(d):
    bad = count = 0
    for r in records(open(d + '/acvp-768.txt')):
        op = r['op']
        if op == 'keyGen':
            ok = keygen(r['d'], r['z']) == (r['ek'], r['dk'])
        elif op == 'encapsulation':
            ok = encaps(r['ek'], r['m']) == (r['k'], r['c'])
        else:
            ok = decaps(r['dk'], r['c']) == r['k']
        count += 1
        if not ok:
            bad += 1
            print('FAIL acvp %s tcId %s' % (op, r['tcId']))
    for r in records(open(d + '/cctv-strcmp-768.txt')):
        count += 1
        if decaps(r['dk'], r['c']) != r['K']:
            bad += 1
            print('FAIL cctv strcmp')
    with gzip.open(d + '/cctv-modulus-768.txt.gz', 'rt') as f:
        eks = [bytes.fromhex(x) for x in f.read().split()]
    refused = sum(1 for ek in eks if not ek_ok(ek))
    if refused != len(eks) or len(eks) != 780:
        bad += 1
        print('FAIL cctv modulus: %d of %d refused' % (refused, len(eks)))
    print('%d vectors and %d bad encapsulation keys checked, %d failed' % (count, len(eks), bad))
    return bad == 0


def check_c(exe, cases):
    out = subprocess.run([exe, '--print', str(cases)], check=True, capture_output=True,
                         text=True).stdout
    bad = seen = 0
    for r in records(out.splitlines()):
        seen += 1
        ek, dk = keygen(r['d'], r['z'])
        K, c = encaps(ek, r['m'])
        fails = [name for name, mine in (('ek', ek), ('dk', dk), ('c', c), ('k', K),
                                         ('k_bad', decaps(dk, r['c_bad'])))
                 if mine != r[name]]
        if decaps(dk, c) != K or r['k_bad'] != J(dk[-32:] + r['c_bad']):
            fails.append('decaps')
        if fails:
            bad += 1
            print('FAIL case %d: %s differ' % (seen - 1, ' '.join(fails)))
    print('%d C outputs compared, %d differ' % (seen, bad))
    return bad == 0 and seen == cases


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == '--kat':
        ok = check_kat(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == '--c':
        ok = check_c(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 8)
    else:
        print(__doc__)
        return 2
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
