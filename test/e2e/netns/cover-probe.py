#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A prober's view of a QUIC port, for the cover test (netns-cover.sh).

  cover-probe.py make KIND FILE   write a probe to FILE; KIND: vn (a 1200-byte
      long header of version 0x1a2a3a4a), random (1200 random bytes), short
      (a short header with a random 8-byte DCID)
  cover-probe.py udp HOST PORT FILE   send FILE's bytes from a fresh port,
      print what came back within 2 s: "N TYPES SIZES DELAY" (TYPES: vn, initial,
      handshake, 0rtt, retry, short; comma-separated in arrival order; DELAY:
      the first answer's, in ms after the send, or "-")
  cover-probe.py initial PCAP PORT SRC OUT   the first QUIC Initial that SRC
      sent to PORT in a tcpdump capture (Ethernet, IPv4), its UDP payload to OUT
  cover-probe.py flood HOST PORT N [fresh]   N 1200-byte v1 Initials of random
      bytes (not Dust), about 5000/s, from one port (fresh: each from a new
      port, a new flow each); prints N
  cover-probe.py flights PCAP SRC DST   the first flights SRC:443 sent to DST in
      a capture, one a destination port: "FLIGHTS ACKS ANSWERS TAILMIN TAILMAX"
      (FLIGHTS: ports that got an answer, their first Initial datagram of 1200
      bytes or more; ANSWERS: its sizes, distinct, comma-separated; ACKS: of
      them, those that began with an Initial under 1200 bytes; the tail: the
      Handshake packet that begins the first datagram after the answer to
      begin with one, its own size; "-" where none), then the small 1-RTT
      after the tail: "WITH SIZES LARGEST_WITH SMALLEST_WITHOUT COALESCED"
      (flights with one, its sizes, the largest tail it followed, the
      smallest tail without one, the flights that had it behind the tail)
  cover-probe.py hellos PCAP SRC N OUT  the first N hellos SRC sent to port 443
      (a hello: the first two Initials from one source port) to OUT-I-1.bin and
      OUT-I-2.bin, I = 1..N
  cover-probe.py ask HOST PORT FILE...  send the files' bytes from one fresh
      port, 100 ms apart, and read the answer for 2 s: "ACK ANSWER TAIL" as
      flights reads them (ACK: 1 if an Initial under 1200 bytes came first)
  cover-probe.py hellos-any PCAP N OUT  the first N hellos of any source (its
      first two Initials of 1200 bytes or more) to OUT-I-1.bin and OUT-I-2.bin
  cover-probe.py resends HOST PORT FILE1 FILE2  send a hello's two Initials from
      one fresh port, 100 ms apart, confirm nothing, and print the server's
      datagrams for 2.4 s as "KIND@MS ..." after its first Initial+Handshake (X;
      I: an Initial alone, H: a Handshake flight alone, T: a tail)
"""
import os
import socket
import struct
import sys
import time


def kind_of(b):
    if not b:
        return "empty"
    if not b[0] & 0x80:
        return "short"
    if len(b) >= 5 and b[1:5] == b"\0\0\0\0":
        return "vn"
    return ("initial", "0rtt", "handshake", "retry")[(b[0] >> 4) & 3]


def probe_bytes(kind):
    if kind == "vn":
        dcid = os.urandom(8)
        head = bytes([0xC0]) + struct.pack(">I", 0x1A2A3A4A) + bytes([8]) + dcid + bytes([0])
        return head + os.urandom(1200 - len(head))
    if kind == "random":
        return os.urandom(1200)
    if kind == "short":
        return bytes([0x40 | (os.urandom(1)[0] & 0x3F)]) + os.urandom(8 + 50)
    sys.exit("unknown probe kind " + kind)


def make(kind, path):
    open(path, "wb").write(probe_bytes(kind))


def exchange(host, port, paths, delays=None, gap=0.005, secs=2.0):
    """Send each file's bytes (gap seconds apart) from one new port; what came back
    in secs. delays, a list, gets each answer's arrival in ms after the last send."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", 0))
    for i, p in enumerate(paths):
        if i:
            time.sleep(gap)
        s.sendto(open(p, "rb").read(), (host, int(port)))
    got = []
    sent = time.monotonic()
    end = sent + secs
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        s.settimeout(left)
        try:
            got.append(s.recvfrom(65536)[0])
        except socket.timeout:
            break
        if delays is not None:
            delays.append((time.monotonic() - sent) * 1000)
    return got


def udp(host, port, path):
    delays = []
    got = exchange(host, port, [path], delays)
    print(len(got), ",".join(kind_of(b) for b in got) or "-",
          ",".join(str(len(b)) for b in got) or "-",
          "%.0fms" % delays[0] if delays else "-")


def udp_frames(pcap):
    """(src, dst, sport, dport, payload) of each Ethernet/IPv4/UDP frame in a pcap."""
    data = open(pcap, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack(end + "I", data[off + 8:off + 12])[0]
        frame = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
            continue
        ihl = (frame[14] & 15) * 4
        u = frame[14 + ihl:14 + ihl + 8]
        sport, dport, ulen = struct.unpack(">HHH", u[:6])
        yield (socket.inet_ntoa(frame[26:30]), socket.inet_ntoa(frame[30:34]), sport, dport,
               frame[14 + ihl + 8:14 + ihl + ulen])


def initial(pcap, port, src, out):
    for s, _, _, dport, payload in udp_frames(pcap):
        if s == src and dport == int(port) and payload and payload[0] & 0x80 \
                and kind_of(payload) == "initial":
            open(out, "wb").write(payload)
            return
    sys.exit("no Initial from %s to port %s in %s" % (src, port, pcap))


def varint(b, i):
    n = 1 << (b[i] >> 6)
    v = b[i] & 0x3F
    for k in range(1, n):
        v = v << 8 | b[i + k]
    return v, i + n


def handshake_len(b):
    """The size of the Handshake packet that starts b (RFC 9000 §17.2: its
    Length field), or len(b) where the header does not parse."""
    try:
        i = 5
        i += 1 + b[i]  # DCID
        i += 1 + b[i]  # SCID
        n, i = varint(b, i)
        return min(i + n, len(b))
    except IndexError:
        return len(b)


def flight_of(dgs):
    """(ack, answer, tail, short, coalesced) of one flow's datagrams from the
    server; None: no answer. tail: the size of the tail's Handshake packet; short: the size of a
    small 1-RTT packet (under 41 bytes: no Dust packet) coalesced behind it (as
    quic-go sends its longer tails; then coalesced is 1) or in the datagram right
    after it, else 0."""
    kinds = [kind_of(b) for b in dgs]
    a = next((i for i, b in enumerate(dgs) if kinds[i] == "initial" and len(b) >= 1200), None)
    if a is None:
        return None
    ack = int(a > 0 and kinds[0] == "initial" and len(dgs[0]) < 1200)
    t = next((i for i in range(a + 1, len(dgs)) if kinds[i] == "handshake"), None)
    if t is None:
        return ack, len(dgs[a]), None, 0, 0
    hs = handshake_len(dgs[t])
    rest = dgs[t][hs:]
    short, coalesced = 0, 0
    if rest and kind_of(rest) == "short" and len(rest) < 41:
        short, coalesced = len(rest), 1
    elif t + 1 < len(dgs) and kinds[t + 1] == "short" and len(dgs[t + 1]) < 41:
        short = len(dgs[t + 1])
    return ack, len(dgs[a]), hs, short, coalesced


def flights(pcap, src, dst):
    flows = {}
    for s_, d_, sport, dport, pl in udp_frames(pcap):
        if s_ == src and d_ == dst and sport == 443:
            flows.setdefault(dport, []).append(pl)
    got = [f for f in (flight_of(d) for d in flows.values()) if f]
    answers = sorted(set(f[1] for f in got))
    tails = [f[2] for f in got if f[2] is not None]
    shorts = sorted(set(f[3] for f in got if f[3]))
    with_ = [f[2] for f in got if f[2] is not None and f[3]]
    without = [f[2] for f in got if f[2] is not None and not f[3]]
    # FLIGHTS ACKS ANSWERS TAIL_MIN TAIL_MAX, then the 1-RTT after the tail: flights
    # with one, its sizes, the largest tail with one, the smallest tail without, and
    # how many of them had it coalesced behind the tail
    print(len(got), sum(f[0] for f in got), ",".join(str(x) for x in answers) or "-",
          min(tails) if tails else "-", max(tails) if tails else "-",
          len(with_), ",".join(str(x) for x in shorts) or "-",
          max(with_) if with_ else "-", min(without) if without else "-",
          sum(f[4] for f in got))


def hellos(pcap, src, n, out):
    """The first n hellos SRC sent to port 443 (or any source's Initials of
    1200 bytes or more, to any port, where src is None): each source port's
    first two Initials, to OUT-I-1.bin and OUT-I-2.bin."""
    flows, order = {}, []
    for s_, _, sport, dport, pl in udp_frames(pcap):
        if src is None:
            ok = pl and pl[0] & 0x80 and kind_of(pl) == "initial" and len(pl) >= 1200
        else:
            ok = s_ == src and dport == 443 and kind_of(pl) == "initial"
        if ok:
            if (s_, sport) not in flows:
                order.append((s_, sport))
            flows.setdefault((s_, sport), []).append(pl)
    done = 0
    for key in order:
        if len(flows[key]) < 2 or done == int(n):
            continue
        done += 1
        for k in (0, 1):
            open("%s-%d-%d.bin" % (out, done, k + 1), "wb").write(flows[key][k])
    if done < int(n):
        sys.exit("%d hellos from %s in %s, not %s" % (done, src or "any source", pcap, n))


def ask(host, port, *paths):
    # 100 ms apart: caddy 2.6.2 (quic-go) drops an Initial that comes while it
    # still sets up the connection of the one before (on a loaded CI machine it
    # acknowledged a hello's first 23 ms late, and the second, sent 5 ms after
    # the first, was lost: an ACK-only Initial and nothing more)
    f = flight_of(exchange(host, port, paths, gap=0.1))
    print(*(("-", "-", "-") if not f else (f[0], f[1], "-" if f[2] is None else f[2])))


def resend_kind(b):
    """A server datagram of a first flight or its resends, by its headers: X an
    Initial with the Handshake packet behind it, I an Initial alone (1200 bytes or
    more), H a Handshake packet alone of 1000 bytes or more (the flight), T a
    smaller one (the tail, a 1-RTT behind it or not); None for the rest (an
    ACK-only Initial, a short header), which coalescing and ACKs vary."""
    k = kind_of(b)
    if k == "initial" and len(b) >= 1200:
        try:  # the Initial's own length: its token comes before the Length field
            i = 5
            i += 1 + b[i]
            i += 1 + b[i]
            t, i = varint(b, i)
            n, i = varint(b, i + t)
            return "I" if i + n >= len(b) else "X"
        except IndexError:
            return None
    if k == "handshake":
        return "H" if handshake_len(b) == len(b) and len(b) >= 1000 else "T"
    return None


def resends(host, port, *paths):
    """Send a hello (its files, 100 ms apart) and confirm nothing: the server's
    datagrams for 2.4 s as "KIND@MS ...", MS after the first X (resend_kind)."""
    delays = []
    got = exchange(host, port, paths, delays, gap=0.1, secs=2.4)
    out, t0 = [], None
    for b, t in zip(got, delays):
        k = resend_kind(b)
        if k == "X" and t0 is None:
            t0 = t
        if k and t0 is not None:
            out.append("%s@%d" % (k, t - t0))
    print(" ".join(out) if out else "-")


def flood(host, port, n, ports="one"):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", 0))
    head = bytes([0xC0, 0, 0, 0, 1, 8])
    sent = 0
    for i in range(int(n)):
        if i % 50 == 49:
            time.sleep(0.01)  # about 5000/s: over the limit, not over af_packet's ring
        if ports == "fresh" and i:  # every Initial a new flow, tried as Dust first
            s.close()
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("0.0.0.0", 0))
        try:
            s.sendto(head + os.urandom(1194), (host, int(port)))
            sent += 1
        except OSError:
            time.sleep(0.001)
    print(sent)


# each command: its function and how many arguments it takes (a negative
# count: at least that many)
COMMANDS = {
    "make": (make, 2),
    "udp": (udp, 3),
    "initial": (initial, 4),
    "flood": (flood, -3),
    "flights": (flights, 3),
    "hellos": (hellos, 4),
    "ask": (ask, -3),
    "hellos-any": (lambda pcap, n, out: hellos(pcap, None, n, out), 3),
    "resends": (resends, 4),
}


if __name__ == "__main__":
    fn, argc = COMMANDS.get(sys.argv[1] if len(sys.argv) > 1 else "", (None, 0))
    args = sys.argv[2:]
    if fn is None or not (len(args) == argc or 0 > argc >= -len(args)):
        sys.exit(__doc__)
    fn(*args)
