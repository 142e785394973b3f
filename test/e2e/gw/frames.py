# Internet checksums and pcap files for the frames the gw tests make by hand
# in Python (broken checksums, ICMPv6, IGMP); C code uses lib/common.
import struct


def fold(s):
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


def sum16(b):
    if len(b) % 2:
        b += b"\0"
    return sum(struct.unpack("!%dH" % (len(b) // 2), b))


def pcap_write(path, frames):
    """An Ethernet capture, frame n stamped 1 s + n us."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for n, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1, n, len(fr), len(fr)) + fr)
