#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Reference decoder for Dust v2 (SPEC.md), written apart from libdust.

Reads the golden vector file and decodes it from the spec alone: opens the
invitation text (Argon2id + XChaCha20-Poly1305), accepts the intro as a server
would (tag unmasking, tag index match, X25519, key schedule, confirmation),
opens the chained data, the server's answer (its share, then the session
keys that take it, SPEC.md §5.1) and reply (header protection with its
own SipHash-2-4-128, ChaCha20-Poly1305-IETF, or for suite 1 AES-256-GCM from
python3-cryptography), and packets of later key epochs (SPEC.md §8.1) when the
file has them. Exits non-zero on any mismatch. Uses PyNaCl's bindings,
hashlib and (suite 1 only) cryptography's AESGCM.
"""
import hashlib
import struct

import nacl.bindings as nb
import nacl.exceptions
import nacl.pwhash

from refcommon import EPOCH_S, expect, read_vectors, run

KEY_EPOCH_LOG = 22  # SPEC.md §8.1: a new data key every 2^22 packets


M64 = (1 << 64) - 1


def siphash_2_4_128(key, msg):
    """SipHash-2-4 with 128-bit output, from the SipHash paper's definition."""
    def rotl64(x, b):
        return ((x << b) | (x >> (64 - b))) & M64

    def rnd(v):
        v[0] = (v[0] + v[1]) & M64; v[1] = rotl64(v[1], 13) ^ v[0]; v[0] = rotl64(v[0], 32)
        v[2] = (v[2] + v[3]) & M64; v[3] = rotl64(v[3], 16) ^ v[2]
        v[0] = (v[0] + v[3]) & M64; v[3] = rotl64(v[3], 21) ^ v[0]
        v[2] = (v[2] + v[1]) & M64; v[1] = rotl64(v[1], 17) ^ v[2]; v[2] = rotl64(v[2], 32)

    k0, k1 = struct.unpack('<QQ', key)
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d ^ 0xee,
         k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]
    tail = len(msg) % 8
    for i in range(0, len(msg) - tail, 8):
        m = struct.unpack('<Q', msg[i:i + 8])[0]
        v[3] ^= m; rnd(v); rnd(v); v[0] ^= m
    b = (len(msg) << 56) & M64 | int.from_bytes(msg[len(msg) - tail:], 'little')
    v[3] ^= b; rnd(v); rnd(v); v[0] ^= b
    v[2] ^= 0xee
    for _ in range(4):
        rnd(v)
    out1 = v[0] ^ v[1] ^ v[2] ^ v[3]
    v[1] ^= 0xdd
    for _ in range(4):
        rnd(v)
    return struct.pack('<QQ', out1, v[0] ^ v[1] ^ v[2] ^ v[3])


def kdf(master, subkey_id, ctx, n=32):
    """crypto_kdf_derive_from_key, from its definition over BLAKE2b."""
    salt = struct.pack('<Q', subkey_id) + bytes(8)
    person = ctx.encode() + bytes(8)
    return hashlib.blake2b(b'', digest_size=n, key=master, salt=salt, person=person).digest()


def b2(data, key, n):
    return hashlib.blake2b(data, digest_size=n, key=key).digest()


def open_invite_text(text, password):
    pad = '=' * (-len(text) % 4)
    raw = __import__('base64').urlsafe_b64decode(text + pad)
    expect(len(raw) == 16 + 24 + 128 + 16, 'invitation is 184 sealed bytes')
    salt, nonce, ct = raw[:16], raw[16:40], raw[40:]
    # Argon2id at 64 MiB: t = 3 seals (SPEC §2); texts sealed before with t = 2 still open
    for ops in (3, 2):
        key = nacl.pwhash.argon2id.kdf(32, password.encode(), salt, opslimit=ops,
                                       memlimit=nacl.pwhash.argon2id.MEMLIMIT_INTERACTIVE)
        try:
            return nb.crypto_aead_xchacha20poly1305_ietf_decrypt(ct, salt, nonce, key)
        except nacl.exceptions.CryptoError:
            if ops == 2:
                raise


def parse_invite(pt):
    expect(len(pt) == 128 and pt[0] == 2 and pt[1] in (0, 1),
           'invitation version 2, suite %d' % pt[1])
    return {
        'suite': pt[1],
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
    expect(abs(ts_ms - now_ms) <= 60000 and flags == 1, 'intro timestamp and flags (share)')
    dh_es = nb.crypto_scalarmult(server_sk, eph_pk)
    dh_cs = nb.crypto_scalarmult(server_sk, client_pk)
    prk = b2(b'dust v2 session' + dh_es + dh_cs + server_pk + dg[:132], inv['secret'], 32)
    keys = split(prk)
    end = 132 + pad_len
    expect(b2(dg[:end], keys['confirm'], 16) == dg[end:end + 16], 'intro confirmation MAC')
    return prk, eph_pk, keys, end + 16


def split(prk):
    return {name: kdf(prk, i, 'dustSESS', n) for i, (name, n) in
            enumerate([('c2s', 32), ('s2c', 32), ('c2s_hp', 16), ('s2c_hp', 16),
                       ('confirm', 32), ('c2s_upd', 32), ('s2c_upd', 32)], start=1)}


def open_answer(answer, prk, eph_pk, k0, share_sk):
    """SPEC.md §5.1: E_s sealed under K_ans; the session keys take DH(e_s, E)."""
    k_ans = kdf(prk, 8, 'dustSESS')
    nonce, ct = answer[:24], answer[24:72]
    share = nb.crypto_aead_xchacha20poly1305_ietf_decrypt(ct, b'', nonce, k_ans)
    expect(share == nb.crypto_scalarmult_base(share_sk), 'answer carries the server share')
    expect(nonce == b2(share, k_ans, 24), 'answer nonce is BLAKE2b(K_ans, E_s)')
    dh_ee = nb.crypto_scalarmult(share_sk, eph_pk)
    k2 = split(b2(b'dust v2 answer' + dh_ee + share, prk, 32))
    # client to server: epoch 0 and header protection stay the intro's (0-RTT)
    k2['c2s'], k2['c2s_hp'] = k0['c2s'], k0['c2s_hp']
    return k2, 72


def epoch_key(key, upd, counter):
    """SPEC.md §8.1: epoch 0 uses the §4 key, epoch n the KDF of K_upd."""
    epoch = counter >> KEY_EPOCH_LOG
    if epoch == 0:
        return key
    return kdf(upd, epoch, 'dustKUPD')


def aead_open(suite, body, hdr, nonce, key):
    if suite == 1:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        return AESGCM(key).decrypt(nonce, body, hdr)
    return nb.crypto_aead_chacha20poly1305_ietf_decrypt(body, hdr, nonce, key)


def open_data(pkt, key, hp, suite=0, upd=None):
    sample = pkt[16:32]
    ks = siphash_2_4_128(hp, sample)
    hdr = bytes(a ^ b for a, b in zip(pkt[:16], ks))
    counter, ctlen, ts, dlen = struct.unpack('<QHIH', hdr)
    nonce = bytes(4) + struct.pack('<Q', counter)
    body = pkt[16:16 + ctlen + 16]
    pt = aead_open(suite, body, hdr, nonce, epoch_key(key, upd, counter))
    expect(dlen <= ctlen and not any(pt[dlen:]), 'data lengths and zero padding')
    return counter, ts, pt[:dlen], 16 + ctlen + 16


def main(path):
    v = read_vectors(path)
    now_ms = int(v['now_ms'])
    inv_pt = bytes.fromhex(v['invite_pt'])
    expect(open_invite_text(v['invite_text'], v['password']) == inv_pt,
           'invitation text opens to the plaintext')
    inv = parse_invite(inv_pt)
    server_sk = bytes.fromhex(v['server_sk'])
    expect(nb.crypto_scalarmult_base(server_sk) == inv['server_pk'], 'server key matches')
    dg = bytes.fromhex(v['intro_datagram'])
    prk, eph_pk, keys, off = accept_intro(dg, inv, server_sk, now_ms)
    got = []
    want_counter = 0
    while off < len(dg):
        counter, ts, data, used = open_data(dg[off:], keys['c2s'], keys['c2s_hp'], inv['suite'], keys['c2s_upd'])
        expect(counter == want_counter and ts == now_ms // 1000, 'data counter %d' % counter)
        want_counter += 1
        got.append(data.decode())
        off += used
    expect('|'.join(got) == v['expect_data'], 'chained data decodes to ' + v['expect_data'])
    answer = bytes.fromhex(v['answer'])
    keys, off = open_answer(answer, prk, eph_pk, keys, bytes.fromhex(v['server_eph_sk']))
    counter, ts, data, used = open_data(answer[off:], keys['s2c'], keys['s2c_hp'], inv['suite'], keys['s2c_upd'])
    expect(counter == 0 and off + used == len(answer) and data == b'', 'answer keepalive decodes')
    reply = bytes.fromhex(v['reply'])
    counter, ts, data, used = open_data(reply, keys['s2c'], keys['s2c_hp'], inv['suite'], keys['s2c_upd'])
    expect(counter == 1 and used == len(reply) and data.decode() == v['expect_reply'],
           'server reply decodes')
    for d in ('c2s', 's2c'):
        if 'epoch1_' + d not in v:
            continue
        pkt = bytes.fromhex(v['epoch1_' + d])
        counter, ts, data, used = open_data(pkt, keys[d], keys[d + '_hp'], inv['suite'], keys[d + '_upd'])
        expect(counter >> KEY_EPOCH_LOG == 1 and used == len(pkt) and
               data.decode() == v['expect_epoch1_' + d], '%s packet of key epoch 1 decodes' % d)
    print('1 passed, 0 failed')


if __name__ == '__main__':
    run(main)
