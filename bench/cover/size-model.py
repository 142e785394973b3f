#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The cover's datagram sizes and pacing, per direction, from a capture of
real HTTP/3 page loads (capture.sh): the size model and the pacer's gaps of
SPEC §12.4.

Only 1-RTT datagrams count (first byte 01xxxxxx: a short header first), so
the model is of the traffic after the handshake, which is what a Dust
session's data imitates. Sizes above the direction's bound (1250 client,
1452 server: quic-go's largest, reached by path MTU discovery from 1252,
as a quic server session's bound is since this release) count as the
bound; caddy's own stop at 1439, quic-go's last probe on a 1500-byte link.

The gaps are the inter-departure times within a burst: between two
consecutive datagrams of a flow going the same way, nothing between them
the other way, under BURST_US apart (longer waits are the application's or
the peer's, which a tunnel's own traffic brings with it). The capture
stamps microseconds, so a gap is a whole number of them.

usage: size-model.py CAPTURE.pcap            print lib/dust/quic_sizes.h
       size-model.py CAPTURE.pcap --gaps     print lib/dust/quic_gaps.h
       size-model.py CAPTURE.pcap --stats    datagrams, sizes and gaps per direction
       size-model.py CAPTURE.pcap --check H  fail unless H is what it prints
       size-model.py CAPTURE.pcap --hello    print lib/dust/quic_hello.h
       size-model.py CAPTURE.pcap --gaps --check H   the same for the gaps
                                             (--hello --check H: the hello's)

The hello's timing (--hello) is read from each flow's handshake: where the
server's ACK-only Initial came before Chromium's third 1250-byte Initial
and that Initial before the server's first 1252-byte datagram, the third is
Chromium's first PTO probe (its time after the flow's first datagram);
caddy's answer delay is the time from the last client Initial before its
1252 bytes (the probe, or the hello's second Initial) to them."""
import collections
import contextlib
import io
import struct
import sys

BOUND = {"c2s": 1250, "s2c": 1452}
# a server's bound before path MTU discovery, and quic-go's probes from it
# ((bound + 1452) / 2 until under 20 apart: libdust's dust_pmtu_probe)
PRE_PMTU = 1252
PROBES = (1352, 1402, 1427, 1439)
BURST_US = 50


def udp_payloads(path, port=443):
    """(time, direction, payload) of each UDP datagram to or from port."""
    with open(path, "rb") as f:
        hdr = f.read(24)
        magic = struct.unpack("<I", hdr[:4])[0]
        if magic not in (0xA1B2C3D4, 0xA1B23C4D):
            raise SystemExit("%s: not a little-endian pcap" % path)
        nano = magic == 0xA1B23C4D
        link = struct.unpack("<I", hdr[20:24])[0]
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            sec, frac, incl, orig = struct.unpack("<IIII", rec)
            data = f.read(incl)
            t = sec + frac / (1e9 if nano else 1e6)
            off = 14 if link == 1 else (16 if link == 113 else 0)
            if link == 1 and data[12:14] != b"\x08\x00":
                continue
            ip = data[off:]
            if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 17:
                continue
            ihl = (ip[0] & 15) * 4
            sport, dport, ulen = struct.unpack(">HHH", ip[ihl:ihl + 6])
            # the length comes from the UDP header: the capture may be cut short
            first = ip[ihl + 8] if len(ip) > ihl + 8 else 0
            if dport == port:
                yield t, "c2s", ulen - 8, first, sport
            elif sport == port:
                yield t, "s2c", ulen - 8, first, dport


def model(path):
    sizes = {"c2s": collections.Counter(), "s2c": collections.Counter()}
    for _, d, n, first, _ in udp_payloads(path):
        if first & 0xC0 != 0x40:
            continue
        sizes[d][min(n, BOUND[d])] += 1
    return sizes


def gaps(path):
    """Per direction, a Counter of the gaps (whole us) within bursts."""
    out = {"c2s": collections.Counter(), "s2c": collections.Counter()}
    last = {}  # client port -> (time, direction) of its flow's previous datagram
    for t, d, _, _, cport in udp_payloads(path):
        prev = last.get(cport)
        last[cport] = (t, d)
        if prev is None or prev[1] != d:
            continue
        us = round((t - prev[0]) * 1e6)
        if us < BURST_US:
            out[d][us] += 1
    return out


def hello_times(path):
    """Chromium's PTO probe times and caddy's answer delays, whole us (see --hello)."""
    flows = collections.OrderedDict()
    for t, d, n, _, cport in udp_payloads(path):
        flows.setdefault(cport, []).append((t, n if d == "c2s" else -n))
    probe, answer = [], []
    for f in flows.values():
        t0, head = f[0][0], f[:8]
        ack = next((t for t, s in head if s == -37), None)
        big = next((t for t, s in head if s == -PRE_PMTU), None)
        hello = [t for t, s in head if s == 1250 and (big is None or t < big)]
        if ack is None or big is None or not hello:
            continue
        if len(hello) >= 3 and ack < hello[2]:
            probe.append(round((hello[2] - t0) * 1e6))
        answer.append(round((big - hello[-1]) * 1e6))
    return sorted(probe), sorted(answer)


def hello_header(times):
    probe, answer = times
    print("/* SPDX-License-Identifier: BSD-3-Clause */")
    print("/*")
    print(" * The hello's timing (SPEC §12.2, §12.3), written by bench/cover/size-model.py")
    print(" * --hello from test/data/chromium156-caddy-loads.pcap (Debian's Chromium 156")
    print(" * loading pages from caddy 2.6.2 over HTTP/3), in whole microseconds, sorted:")
    print(" * quic_pto_probe_us, Chromium's first PTO probe after the server's ACK-only")
    print(" * Initial, from its first Initial (%d loads); quic_answer_us, caddy's answer" % len(probe))
    print(" * after the client Initial that let it answer (%d loads)." % len(answer))
    print(" */")
    print("#ifndef DUST_QUIC_HELLO_H\n#define DUST_QUIC_HELLO_H\n\n#include <stdint.h>\n")
    print("/* generated tables: one layout for every regeneration */\n/* clang-format off */")
    for name, vals in (("quic_pto_probe_us", probe), ("quic_answer_us", answer)):
        print("static const uint32_t %s[%d] = {" % (name, len(vals)))
        print(wrap(vals))
        print("};\n")
    print("/* clang-format on */\n#endif")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    sizes = model(sys.argv[1])
    pace = gaps(sys.argv[1])
    if "--stats" in sys.argv:
        for d in ("c2s", "s2c"):
            c, g = sizes[d], pace[d]
            n = sum(g.values())
            med = sorted(g.elements())[n // 2]
            print("%s: %d datagrams, %d sizes, min %d, max %d; %d gaps under %d us, "
                  "mean %.1f us, median %d us" %
                  (d, sum(c.values()), len(c), min(c), max(c), n, BURST_US,
                   sum(k * v for k, v in g.items()) / n, med))
        return
    write = (lambda: gap_header(pace)) if "--gaps" in sys.argv else (lambda: header(sizes))
    if "--hello" in sys.argv:
        write = lambda: hello_header(hello_times(sys.argv[1]))
    if "--check" in sys.argv:
        path = sys.argv[sys.argv.index("--check") + 1]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            write()
        if open(path).read() != out.getvalue():
            raise SystemExit("%s is not what %s gives: regenerate it" % (path, sys.argv[1]))
        print("%s matches %s" % (path, sys.argv[1]))
        return
    write()


def header(sizes):
    print("/* SPDX-License-Identifier: BSD-3-Clause */")
    print("/*")
    print(" * The cover's 1-RTT datagram sizes per direction (SPEC §12.4), written by")
    print(" * bench/cover/size-model.py from test/data/chromium156-caddy-loads.pcap")
    print(" * (Debian's Chromium 156 loading pages from caddy 2.6.2 over HTTP/3).")
    print(" * Each table is sorted by size; cum[i] is the count of sizes <= size[i].")
    print(" */")
    print("#ifndef DUST_QUIC_SIZES_H\n#define DUST_QUIC_SIZES_H\n\n#include <stdint.h>\n")
    print("/* generated tables: one layout for every regeneration */\n/* clang-format off */")
    tables(sizes, "quic_%s_size", "quic_%s_cum")


def gap_header(pace):
    print("/* SPDX-License-Identifier: BSD-3-Clause */")
    print("/*")
    print(" * The cover's inter-departure gaps within a burst, per direction (SPEC §12.4),")
    print(" * written by bench/cover/size-model.py --gaps from")
    print(" * test/data/chromium156-caddy-loads.pcap (Debian's Chromium 156 loading pages")
    print(" * from caddy 2.6.2 over HTTP/3): consecutive datagrams of a flow the same way,")
    print(" * under %d us apart, in whole microseconds (the capture's resolution)." % BURST_US)
    print(" * Each table is sorted by gap; cum[i] is the count of gaps <= us[i].")
    print(" */")
    print("#ifndef DUST_QUIC_GAPS_H\n#define DUST_QUIC_GAPS_H\n\n#include <stdint.h>\n")
    print("/* generated tables: one layout for every regeneration */\n/* clang-format off */")
    tables(pace, "quic_%s_gap_us", "quic_%s_gap_cum")


def tables(counts, vals_name, cum_name):
    """Per direction, the sorted values and their cumulative counts, then the header's end."""
    for d in ("c2s", "s2c"):
        items = sorted(counts[d].items())
        cum, acc = [], 0
        for _, k in items:
            acc += k
            cum.append(acc)
        print("static const uint16_t %s[%d] = {" % (vals_name % d, len(items)))
        print(wrap([v for v, _ in items]))
        print("};")
        print("static const uint32_t %s[%d] = {" % (cum_name % d, len(items)))
        print(wrap(cum))
        print("};\n")
    print("/* clang-format on */\n#endif")


def wrap(vals):
    out, line = [], "\t"
    for v in vals:
        s = "%d, " % v
        if len(line) + len(s) > 92:
            out.append(line.rstrip())
            line = "\t"
        line += s
    out.append(line.rstrip())
    return "\n".join(out)


if __name__ == "__main__":
    main()
