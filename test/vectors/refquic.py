#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Reference decoder for Dust's quic cover profile (SPEC.md §12), apart from libdust.

Reads test/vectors/dust-quic.txt and decodes it as an observer and then as the
server would: removes the client Initial's protection with the public QUIC v1
salt (RFC 9001 §5), reassembles the CRYPTO frames of the hello's two Initials,
checks the ClientHello's shape (X25519MLKEM768 before x25519, the ek's
coefficients below q), recovers the intro from random, the DCID, the key share
and the GREASE ECH payload with the server's key, verifies the confirmation,
opens the server's answer (Initial with a ServerHello, Handshake packet
holding the masked ML-KEM-768 ciphertext, which the client's dk decapsulates
with refmlkem.py), the tail's keepalive under the hybrid keys, and the 1-RTT
short-header data packets both ways.
Uses python3-cryptography (AES), PyNaCl and hashlib; v2 data packets are
opened by refdecode.py's open_data.
"""
import hashlib
import hmac
import os
import struct
import sys

import nacl.bindings as nb
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from refcommon import EPOCH_S, Fail, expect, read_vectors, run  # noqa: E402
from refdecode import b2, kdf, open_data  # noqa: E402
import refmlkem  # noqa: E402  (FIPS 203, written apart from lib/dust/mlkem.c)

WINDOW_MS = 60000
V1_SALT = bytes.fromhex('38762cf7f55934b34d179ae6a4c80cadccbb7f0a')
# Chromium 156's QUIC ClientHello extensions (any order): server_name,
# supported_groups, signature_algorithms, ALPN, compress_certificate,
# supported_versions, psk_key_exchange_modes, key_share,
# quic_transport_parameters, ALPS, encrypted_client_hello, 51764.
CHROME_EXTS = {0, 10, 13, 16, 27, 43, 45, 51, 57, 17613, 65037, 51764}
EXT_SNI, EXT_ALPN, EXT_VERSIONS, EXT_KEY_SHARE, EXT_TP, EXT_ECH = 0, 16, 43, 51, 57, 65037
X25519 = 0x001d
X25519MLKEM768 = 0x11ec  # draft-ietf-tls-ecdhe-mlkem: ML-KEM-768 ek (1184) | x25519 (32)
Q = 3329
ECH_CT = 58        # XChaCha20-Poly1305 of C(32) | ts_ms(8) | flags(2)
CONFIRM = 16


# ---- QUIC v1 (RFC 9000 §16-17, RFC 9001 §5) ---------------------------------

def hkdf_label(secret, label, n):
    full = b'tls13 ' + label
    info = struct.pack('>HB', n, len(full)) + full + b'\x00'
    return hmac.new(secret, info + b'\x01', hashlib.sha256).digest()[:n]


def initial_keys(dcid, server):
    initial = hmac.new(V1_SALT, dcid, hashlib.sha256).digest()
    side = hkdf_label(initial, b'server in' if server else b'client in', 32)
    return (hkdf_label(side, b'quic key', 16), hkdf_label(side, b'quic iv', 12),
            hkdf_label(side, b'quic hp', 16))


def varint(b, i):
    n = 1 << (b[i] >> 6)
    if i + n > len(b):
        raise Fail('varint runs past the end')
    v = b[i] & 0x3f
    for k in range(1, n):
        v = v << 8 | b[i + k]
    return v, i + n


def long_header(dg):
    """Parse a long header up to the packet number; returns a dict."""
    expect(dg[0] & 0xc0 == 0xc0, 'long header with the fixed bit')
    h = {'type': (dg[0] >> 4) & 3, 'version': struct.unpack('>I', dg[1:5])[0]}
    i = 5
    n = dg[i]
    h['dcid'] = dg[i + 1:i + 1 + n]
    i += 1 + n
    n = dg[i]
    h['scid'] = dg[i + 1:i + 1 + n]
    i += 1 + n
    if h['type'] == 0:
        tlen, i = varint(dg, i)
        i += tlen
    h['length'], h['pn_off'] = varint(dg, i)
    expect(h['pn_off'] + h['length'] <= len(dg), 'Length field within the datagram')
    return h


def unprotect(dg, h, keys):
    """Remove header protection and decrypt; returns (pn, frames)."""
    key, iv, hp = keys
    b = bytearray(dg[:h['pn_off'] + h['length']])
    pn_off = h['pn_off']
    sample = bytes(b[pn_off + 4:pn_off + 20])
    mask = Cipher(algorithms.AES(hp), modes.ECB()).encryptor().update(sample)
    b[0] ^= mask[0] & 0x0f
    expect(b[0] & 0x0c == 0, 'reserved bits zero after header protection')
    pn_len = (b[0] & 3) + 1
    for k in range(pn_len):
        b[pn_off + k] ^= mask[1 + k]
    pn = int.from_bytes(b[pn_off:pn_off + pn_len], 'big')
    nonce = bytes(x ^ y for x, y in zip(iv, pn.to_bytes(12, 'big')))
    pt = AESGCM(key).decrypt(nonce, bytes(b[pn_off + pn_len:]), bytes(b[:pn_off + pn_len]))
    return pn, pt


def walk_frames(pt, stream=None):
    """Frames an Initial may carry; returns (reassembled CRYPTO stream, kinds seen)."""
    partial = stream is not None  # one Initial of several: holes are the others'
    stream = {} if stream is None else stream
    kinds, i = [], 0
    while i < len(pt):
        t = pt[i]
        if t == 0x00:
            i += 1
        elif t == 0x01:
            kinds.append('PING')
            i += 1
        elif t in (0x02, 0x03):
            largest, i = varint(pt, i + 1)
            _, i = varint(pt, i)
            ranges, i = varint(pt, i)
            _, i = varint(pt, i)
            for _ in range(2 * ranges + (3 if t == 0x03 else 0)):
                _, i = varint(pt, i)
            kinds.append(('ACK', largest))
        elif t == 0x06:
            off, i = varint(pt, i + 1)
            n, i = varint(pt, i)
            for k in range(n):
                if stream.setdefault(off + k, pt[i + k]) != pt[i + k]:
                    raise Fail('CRYPTO frames disagree at offset %d' % (off + k))
            i += n
            kinds.append('CRYPTO')
        else:
            raise Fail('frame type 0x%x in an Initial' % t)
    if partial:
        return None, kinds
    data = bytes(stream[k] for k in range(len(stream)) if k in stream)
    expect(len(data) == len(stream), 'CRYPTO stream has no holes (%d bytes)' % len(data))
    return data, kinds


# ---- TLS 1.3 (RFC 8446 §4.1-§4.2) ----------------------------------------------

def handshake_msg(stream, want_type):
    expect(len(stream) >= 4 and stream[0] == want_type, 'TLS handshake type %d' % want_type)
    n = int.from_bytes(stream[1:4], 'big')
    expect(len(stream) == 4 + n, 'TLS message fills the CRYPTO stream')
    return stream[4:]


def extensions(body, i):
    n = struct.unpack('>H', body[i:i + 2])[0]
    expect(i + 2 + n == len(body), 'extensions fill the hello')
    exts, i = [], i + 2
    while i < len(body):
        t, ln = struct.unpack('>HH', body[i:i + 4])
        if i + 4 + ln > len(body):
            raise Fail('extension %d runs past the hello' % t)
        exts.append((t, body[i + 4:i + 4 + ln], i + 4))
        i += 4 + ln
    return exts


def parse_client_hello(body):
    expect(body[:2] == b'\x03\x03', 'legacy_version 0x0303')
    ch = {'random': body[2:34]}
    sid = body[34]
    expect(sid == 0, 'empty legacy_session_id (RFC 9001 §8.4)')
    i = 35
    n = struct.unpack('>H', body[i:i + 2])[0]
    suites = [struct.unpack('>H', body[i + 2 + k:i + 4 + k])[0] for k in range(0, n, 2)]
    expect(suites == [0x1301, 0x1302, 0x1303], 'TLS 1.3 cipher suites as Chromium')
    i += 2 + n
    expect(body[i:i + 2] == b'\x01\x00', 'null compression only')
    exts = extensions(body, i + 2)
    types = [t for t, _, _ in exts]
    expect(len(types) == len(set(types)), 'no repeated extension')
    expect(set(types) == CHROME_EXTS, 'extension set of Chromium 156 (%d)' % len(types))
    ch['ext'] = {t: (v, off) for t, v, off in exts}
    return ch


def check_hello_shape(ch, cover):
    sni = ch['ext'][EXT_SNI][0]
    n = struct.unpack('>H', sni[3:5])[0]
    expect(sni[2] == 0 and struct.unpack('>H', sni[:2])[0] == len(sni) - 2
           and sni[5:5 + n].decode() == cover and 5 + n == len(sni), 'SNI = ' + cover)
    expect(ch['ext'][EXT_ALPN][0] == b'\x00\x03\x02h3', 'ALPN h3')
    sv = ch['ext'][EXT_VERSIONS][0]
    expect(sv[0] == len(sv) - 1 and b'\x03\x04' in [sv[k:k + 2] for k in range(1, len(sv), 2)],
           'supported_versions has TLS 1.3')
    groups = ch['ext'][10][0]
    expect(groups == b'\x00\x08\x11\xec\x00\x1d\x00\x17\x00\x18',
           'supported_groups 4588, 29, 23, 24 (Chromium 156)')
    ks = ch['ext'][EXT_KEY_SHARE][0]
    expect(len(ks) == 2 + 4 + 1216 + 4 + 32 and
           struct.unpack('>HHH', ks[:6]) == (len(ks) - 2, X25519MLKEM768, 1216) and
           struct.unpack('>HH', ks[6 + 1216:10 + 1216]) == (X25519, 32),
           'key_share: X25519MLKEM768 (1216 bytes), then x25519')
    ek = ks[6:6 + 1184]
    for k in range(0, 1152, 3):  # FIPS 203 §7.2 modulus check of ByteEncode12(t)
        expect(ek[k] | (ek[k + 1] & 15) << 8 < Q and ek[k + 1] >> 4 | ek[k + 2] << 4 < Q,
               'ML-KEM-768 ek coefficients below q')
    ch['ek'] = ek
    ch['E'] = ks[10 + 1216:]
    tp, i, ids = ch['ext'][EXT_TP][0], 0, []
    while i < len(tp):
        pid, i = varint(tp, i)
        ln, i = varint(tp, i)
        i += ln
        ids.append(pid)
    expect(i == len(tp) and {1, 3, 4, 5, 6, 7, 8, 9, 0x0f, 0x11}.issubset(ids),
           'quic_transport_parameters parse (%d parameters)' % len(ids))
    ech, off = ch['ext'][EXT_ECH]
    expect(ech[0] == 0 and ech[1:5] == b'\x00\x01\x00\x01' and ech[6:8] == b'\x00\x20',
           'GREASE ECH: outer, HKDF-SHA256/AES-128-GCM, 32-byte enc')
    plen = struct.unpack('>H', ech[40:42])[0]
    expect(plen == len(ech) - 42 and plen in (144, 176, 208, 240), 'ECH payload of %d bytes' % plen)
    ch['ech_payload'], ch['ech_payload_off'] = ech[42:], off + 42


# ---- the intro (SPEC.md §12.2-§12.4) -------------------------------------------

def recover_intro(ch, hello, dcid, inv, server_sk, now_ms):
    server_pk = nb.crypto_scalarmult_base(server_sk)
    rnd, E, ech = ch['random'], ch['E'], ch['ech_payload']
    nonce = rnd[16:32] + dcid[:8]
    masked = rnd[:16]
    tag = bytes(a ^ b for a, b in zip(masked, b2(nonce, server_pk, 16)))
    k_tag = kdf(inv['secret'], 1, 'dustINVT')
    k_intro = kdf(inv['secret'], 2, 'dustINVT')
    expect(tag == b2(struct.pack('<Q', now_ms // 1000 // EPOCH_S), k_tag, 16),
           'unmasked tag matches the epoch')
    ct = ech[:ECH_CT]
    pt = nb.crypto_aead_xchacha20poly1305_ietf_decrypt(ct, masked + E, nonce, k_intro)
    client_pk = pt[:32]
    ts_ms, flags = struct.unpack('<QH', pt[32:42])
    expect(abs(ts_ms - now_ms) <= WINDOW_MS and flags == 0, 'intro timestamp and flags')
    es = nb.crypto_scalarmult(server_sk, E)
    cs = nb.crypto_scalarmult(server_sk, client_pk)
    prk = b2(b'dust quic intro' + es + cs + server_pk + dcid[:8] + rnd + E + ct, inv['secret'], 32)
    k_conf = kdf(prk, 5, 'dustSESS')
    at = 4 + ch['ech_payload_off'] + ECH_CT  # in the handshake message, header included
    zeroed = hello[:at] + bytes(CONFIRM) + hello[at + CONFIRM:]
    expect(b2(dcid[:8] + zeroed, k_conf, CONFIRM) == hello[at:at + CONFIRM],
           'intro confirmation over DCID | ClientHello')
    return client_pk, prk


def session_keys(prk, ee, server_eph_pk, ss, flight):
    """SPEC 12.3's hybrid schedule: X25519 (es, cs in prk; ee) and ML-KEM-768 (ss)."""
    prk2 = b2(b'dust quic session' + ee + server_eph_pk + ss + flight, prk, 32)
    return {name: kdf(prk2, i, 'dustSESS', n) for i, (name, n) in
            enumerate([('c2s', 32), ('s2c', 32), ('c2s_hp', 16), ('s2c_hp', 16)], start=1)}


def unmask_ct(prk, masked):
    """The ciphertext's mask: BLAKE2b-512 blocks keyed by K_pq = KDF(prk, 9), over le32(i)."""
    kp = kdf(prk, 9, 'dustSESS')
    mask = b''.join(b2(struct.pack('<I', i), kp, 64) for i in range(17))
    return bytes(a ^ b for a, b in zip(masked, mask))


def parse_server_hello(body):
    expect(body[:2] == b'\x03\x03' and body[34] == 0, 'ServerHello legacy fields')
    expect(body[35:38] == b'\x13\x01\x00', 'ServerHello: TLS_AES_128_GCM_SHA256, no compression')
    exts = {t: v for t, v, _ in extensions(body, 38)}
    expect([t for t, _, _ in extensions(body, 38)] == [EXT_VERSIONS, EXT_KEY_SHARE],
           'ServerHello extensions 43, 51 (the cover server quic-go\'s order)')
    expect(exts.get(EXT_VERSIONS) == b'\x03\x04', 'ServerHello selects TLS 1.3')
    ks = exts[EXT_KEY_SHARE]
    expect(len(ks) == 36 and struct.unpack('>HH', ks[:4]) == (X25519, 32),
           'ServerHello key_share x25519')
    return ks[4:]


# ---- the vector file --------------------------------------------------------------

def parse_invite(pt):
    expect(len(pt) == 192 and pt[0] == 2 and pt[1] == 0, 'invitation v2 with a cover block')
    expect(pt[7] == 1, 'invitation profile byte = quic')
    n = pt[128]
    expect(1 <= n <= 62 and not any(pt[129 + n:191]) and pt[191] == 0,
           'cover block: name, zero fill, ALPN h3')
    return {'port': pt[4] << 8 | pt[5], 'server_pk': pt[40:72], 'secret': pt[88:120],
            'cover': pt[129:129 + n].decode()}


def open_short(pkt, dcid, key, hp, want_counter, now_ms):
    expect(pkt[0] & 0xc0 == 0x40, 'short header: form 0, fixed bit')
    expect(pkt[1:1 + len(dcid)] == dcid, 'short header DCID (%d bytes)' % len(dcid))
    counter, ts, data, used = open_data(pkt[1 + len(dcid):], key, hp)
    expect(counter == want_counter and ts == now_ms // 1000 and
           1 + len(dcid) + used == len(pkt), 'data packet fills the datagram')
    return data


def main(path):
    v = read_vectors(path)
    now_ms = int(v['now_ms'])
    inv = parse_invite(bytes.fromhex(v['invite_pt']))
    expect(inv['cover'] == v['cover_sni'] and inv['port'] == 443, 'cover name and port')
    server_sk = bytes.fromhex(v['server_sk'])
    expect(nb.crypto_scalarmult_base(server_sk) == inv['server_pk'], 'server key matches')
    client_pk_want = nb.crypto_scalarmult_base(bytes.fromhex(v['client_sk']))

    # what any observer sees: the hello's two Initials, decrypted with the public salt
    both = bytes.fromhex(v['client_initial'])
    expect(len(both) == 2500, 'the hello: two datagrams of 1250 bytes')
    stream, pns, dcid = {}, [], None
    for dg in (both[:1250], both[1250:]):
        h = long_header(dg)
        expect(h['type'] == 0 and h['version'] == 1, 'QUIC v1 Initial')
        expect(len(h['dcid']) == 8 and h['pn_off'] + h['length'] == len(dg),
               'DCID of %d bytes, one packet fills the datagram' % len(h['dcid']))
        expect(dcid in (None, h['dcid']), 'one DCID for both Initials')
        dcid = h['dcid']
        pn, frames = unprotect(dg, h, initial_keys(h['dcid'], False))
        _, kinds = walk_frames(frames, stream)
        expect(h['length'] == 1232 and pn == len(pns) + 1 and not h['scid'] and
               2 <= kinds.count('PING') <= 9 and 1 <= kinds.count('CRYPTO') <= 16,
               'Initial: Length 1232, packet number %d, empty SCID, %d CRYPTO and %d PING'
               % (pn, kinds.count('CRYPTO'), kinds.count('PING')))
        if not pns:
            expect(all(k in stream for k in range(38)),
                   'the first Initial holds the ClientHello through random (the tag)')
        pns.append(pn)
    expect(all(k in stream for k in range(len(stream))), 'CRYPTO stream has no holes')
    stream = bytes(stream[k] for k in range(len(stream)))
    h['dcid'], pn = dcid, max(pns)
    hello = stream
    ch = parse_client_hello(handshake_msg(stream, 1))
    check_hello_shape(ch, inv['cover'])

    # what the server's key adds
    client_pk, prk = recover_intro(ch, hello, h['dcid'], inv, server_sk, now_ms)
    expect(client_pk == client_pk_want, 'intro carries the client key C')

    # the server's answer: Initial (server keys from the client's DCID), then Handshake
    ans = bytes.fromhex(v['server_answer'])
    expect(len(ans) == 1252 <= 3 * len(both),
           'answer of %d bytes: the cover server\'s 1252, within 3x' % len(ans))
    a = long_header(ans)
    expect(a['type'] == 0 and a['version'] == 1 and a['dcid'] == b'' and
           4 <= len(a['scid']) <= 20, 'server Initial: empty DCID, SCID of %d' % len(a['scid']))
    spn, sframes = unprotect(ans, a, initial_keys(h['dcid'], True))
    expect(spn == 1, 'server Initial is packet 1 (the ACK-only Initial before it took 0)')
    sstream, skinds = walk_frames(sframes)
    expect(('ACK', pn) in skinds, 'server Initial acknowledges packets up to %d' % pn)
    eph_pk = parse_server_hello(handshake_msg(sstream, 2))
    eph_sk = bytes.fromhex(v['server_eph_sk'])
    expect(nb.crypto_scalarmult_base(eph_sk) == eph_pk, 'ServerHello key share = server eph')
    rest = ans[a['pn_off'] + a['length']:]
    hs = long_header(rest)
    expect(hs['type'] == 2 and hs['version'] == 1 and hs['dcid'] == b'' and
           hs['scid'] == a['scid'] and hs['pn_off'] + hs['length'] == len(rest),
           'coalesced Handshake packet fills the datagram')
    flight = rest[hs['pn_off']:]
    expect(1088 <= len(flight) <= 1120, 'Handshake payload: the masked ciphertext and filler')
    # its sends told apart (SPEC 12.3): low bits = j ^ mask of the payload's first 16 bytes
    krs = kdf(prk, 10, 'dustSESS')
    send = (rest[0] ^ b2(b'M' + flight[:16], krs, 16)[0]) & 0x0f
    expect(send == 0, 'the answer\'s Handshake packet is its first send (j = 0)')
    # what the client's ML-KEM key adds: the ciphertext it decapsulates
    dk = bytes.fromhex(v['client_mlkem_dk'])
    expect(dk[1152:1152 + 1184] == ch['ek'], 'the hello\'s ek is the one in the client\'s dk')
    ct = unmask_ct(prk, flight[:1088])
    ss = refmlkem.decaps(dk, ct)
    expect(ss is not None, 'ML-KEM-768 decapsulation (dk checks of FIPS 203 7.3)')
    keys = session_keys(prk, nb.crypto_scalarmult(eph_sk, ch['E']), eph_pk, ss, flight)
    tail = bytes.fromhex(v['server_answer_tail'])
    tl = long_header(tail)
    expect(tl['type'] == 2 and tl['dcid'] == b'' and tl['scid'] == a['scid'] and
           tl['pn_off'] + tl['length'] == len(tail) and 105 <= len(tail) <= 120,
           'flight tail: a Handshake packet of 105..120 bytes from the server CID')
    counter, _, data, used = open_data(tail[tl['pn_off']:], keys['s2c'], keys['s2c_hp'])
    expect(counter == 0 and data == b'' and used == tl['length'],
           'the tail holds a Dust keepalive under the hybrid keys')
    # and without the ML-KEM secret (an observer who broke X25519 later): other keys
    x_only = b2(b'dust quic session' + nb.crypto_scalarmult(eph_sk, ch['E']) + eph_pk,
                prk, 32)
    expect(kdf(x_only, 2, 'dustSESS') != keys['s2c'], 'X25519 secrets alone give other keys')

    # 1-RTT: client->server with the server's CID, server->client with the empty one
    got = open_short(bytes.fromhex(v['c2s_short']), a['scid'], keys['c2s'], keys['c2s_hp'],
                     0, now_ms)
    expect(got.decode() == v['expect_c2s'], 'c2s data decodes to ' + v['expect_c2s'])
    got = open_short(bytes.fromhex(v['s2c_short']), b'', keys['s2c'], keys['s2c_hp'], 1, now_ms)
    expect(got.decode() == v['expect_s2c'], 's2c data decodes to ' + v['expect_s2c'])
    print('1 passed, 0 failed')


if __name__ == '__main__':
    run(main)
