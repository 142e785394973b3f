#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Reference decoder for Dust v2 (SPEC.md), written apart from libdust.

Reads the golden vector file and decodes it from the spec alone: opens the
invitation text (Argon2id + XChaCha20-Poly1305), accepts the intro as a server
would (tag unmasking, tag index match, X25519, key schedule, confirmation),
opens the chained data and the server's reply (header protection with its
own ChaCha20, ChaCha20-Poly1305-IETF). Exits non-zero on any mismatch.
Uses only PyNaCl's bindings and hashlib.
"""
import hashlib
import struct
import sys

import nacl.bindings as nb
import nacl.pwhash

EPOCH_S = 120


def rotl(v, n):
    return ((v << n) & 0xffffffff) | (v >> (32 - n))


def chacha20_block(key, counter, nonce):
    """RFC 8439 §2.3 block function."""
    c = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]
    s = c + list(struct.unpack('<8I', key)) + [counter] + list(struct.unpack('<3I', nonce))
    w = s[:]
    for _ in range(10):
        for a, b, cc, d in ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
                            (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14)):
            w[a] = (w[a] + w[b]) & 0xffffffff; w[d] = rotl(w[d] ^ w[a], 16)
            w[cc] = (w[cc] + w[d]) & 0xffffffff; w[b] = rotl(w[b] ^ w[cc], 12)
            w[a] = (w[a] + w[b]) & 0xffffffff; w[d] = rotl(w[d] ^ w[a], 8)
            w[cc] = (w[cc] + w[d]) & 0xffffffff; w[b] = rotl(w[b] ^ w[cc], 7)
    return struct.pack('<16I', *[(x + y) & 0xffffffff for x, y in zip(w, s)])


def kdf(master, subkey_id, ctx, n=32):
    """crypto_kdf_derive_from_key, from its definition over BLAKE2b."""
    salt = struct.pack('<Q', subkey_id) + bytes(8)
    person = ctx.encode() + bytes(8)
    return hashlib.blake2b(b'', digest_size=n, key=master, salt=salt, person=person).digest()


def b2(data, key, n):
    return hashlib.blake2b(data, digest_size=n, key=key).digest()


class Fail(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Fail(what)
    print('ok  ', what)


def open_invite_text(text, password):
    pad = '=' * (-len(text) % 4)
    raw = __import__('base64').urlsafe_b64decode(text + pad)
    expect(len(raw) == 16 + 24 + 128 + 16, 'invitation is 184 sealed bytes')
    salt, nonce, ct = raw[:16], raw[16:40], raw[40:]
    key = nacl.pwhash.argon2id.kdf(32, password.encode(), salt,
                                   opslimit=nacl.pwhash.argon2id.OPSLIMIT_INTERACTIVE,
                                   memlimit=nacl.pwhash.argon2id.MEMLIMIT_INTERACTIVE)
    return nb.crypto_aead_xchacha20poly1305_ietf_decrypt(ct, salt, nonce, key)


def parse_invite(pt):
    expect(len(pt) == 128 and pt[0] == 2 and pt[1] == 0, 'invitation version 2, suite 0')
    return {
        'port': pt[4] << 8 | pt[5],
        'server_pk': pt[40:72], 'id': pt[72:88], 'secret': pt[88:120],
        'expiry': struct.unpack('<Q', pt[120:128])[0],
    }


def accept_intro(dg, inv, server_sk, now_ms):
    server_pk = nb.crypto_scalarmult_base(server_sk)
    nonce = dg[16:40]
    mask = b2(nonce, server_pk, 16)
    tag = bytes(a ^ b for a, b in zip(dg[:16], mask))
    k_tag = kdf(inv['secret'], 1, 'dustINVT')
    k_intro = kdf(inv['secret'], 2, 'dustINVT')
    epoch = now_ms // 1000 // EPOCH_S
    expect(tag == b2(struct.pack('<Q', epoch), k_tag, 16), 'intro tag matches the epoch')
    pt = nb.crypto_aead_xchacha20poly1305_ietf_decrypt(dg[40:132], dg[:16], nonce, k_intro)
    client_pk, eph_pk = pt[:32], pt[32:64]
    ts_ms, pad_len, flags = struct.unpack('<QHH', pt[64:76])
    expect(abs(ts_ms - now_ms) <= 60000 and flags == 0, 'intro timestamp and flags')
    dh_es = nb.crypto_scalarmult(server_sk, eph_pk)
    dh_cs = nb.crypto_scalarmult(server_sk, client_pk)
    prk = b2(b'dust v2 session' + dh_es + dh_cs + server_pk + dg[:132], inv['secret'], 32)
    keys = {name: kdf(prk, i, 'dustSESS') for i, name in
            enumerate(['c2s', 's2c', 'c2s_hp', 's2c_hp', 'confirm'], start=1)}
    end = 132 + pad_len
    expect(b2(dg[:end], keys['confirm'], 16) == dg[end:end + 16], 'intro confirmation MAC')
    return keys, end + 16


def open_data(pkt, key, hp):
    sample = pkt[10:26]
    ks = chacha20_block(hp, struct.unpack('<I', sample[:4])[0], sample[4:16])[:10]
    hdr = bytes(a ^ b for a, b in zip(pkt[:10], ks))
    counter, ptlen = struct.unpack('<QH', hdr)
    nonce = bytes(4) + struct.pack('<Q', counter)
    body = pkt[10:10 + ptlen + 16]
    pt = nb.crypto_aead_chacha20poly1305_ietf_decrypt(body, hdr, nonce, key)
    ts, dlen = struct.unpack('<IH', pt[:6])
    expect(dlen <= ptlen - 6 and not any(pt[6 + dlen:]), 'data lengths and zero padding')
    return counter, ts, pt[6:6 + dlen], 10 + ptlen + 16


def main(path):
    v = {}
    for line in open(path):
        if line.startswith('#') or ':' not in line:
            continue
        k, _, val = line.rstrip('\n').partition(': ')
        v[k] = val
    now_ms = int(v['now_ms'])
    inv_pt = bytes.fromhex(v['invite_pt'])
    expect(open_invite_text(v['invite_text'], v['password']) == inv_pt,
           'invitation text opens to the plaintext')
    inv = parse_invite(inv_pt)
    server_sk = bytes.fromhex(v['server_sk'])
    expect(nb.crypto_scalarmult_base(server_sk) == inv['server_pk'], 'server key matches')
    dg = bytes.fromhex(v['intro_datagram'])
    keys, off = accept_intro(dg, inv, server_sk, now_ms)
    got = []
    want_counter = 0
    while off < len(dg):
        counter, ts, data, used = open_data(dg[off:], keys['c2s'], keys['c2s_hp'])
        expect(counter == want_counter and ts == now_ms // 1000, 'data counter %d' % counter)
        want_counter += 1
        got.append(data.decode())
        off += used
    expect('|'.join(got) == v['expect_data'], 'chained data decodes to ' + v['expect_data'])
    reply = bytes.fromhex(v['reply'])
    counter, ts, data, used = open_data(reply, keys['s2c'], keys['s2c_hp'])
    expect(used == len(reply) and data.decode() == v['expect_reply'], 'server reply decodes')
    print('1 passed, 0 failed')


if __name__ == '__main__':
    try:
        main(sys.argv[1])
    except Exception as e:  # any mismatch or decrypt failure fails the test
        print('FAIL', type(e).__name__, e)
        print('0 passed, 1 failed')
        sys.exit(1)
