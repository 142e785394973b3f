# SPDX-License-Identifier: BSD-3-Clause
# ARP round trips to an address dustgw answers itself (poll-measure.sh):
# send a who-has on IFACE, time it to the reply's kernel receive timestamp.
# usage: arp-rtt.py IFACE MY_IP TARGET_IP GAP_S COUNT -> one summary line
import socket
import struct
import sys
import time

iface, me, target, gap, count = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
s.bind((iface, 0))
s.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_TIMESTAMPNS", 35), 1)  # 35: Linux
s.settimeout(1.0)
mac = s.getsockname()[4]
req = (b"\xff" * 6 + mac + b"\x08\x06" + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + mac
       + socket.inet_aton(me) + b"\0" * 6 + socket.inet_aton(target))
rtt = []
for _ in range(count):
    time.sleep(gap)
    t0 = time.clock_gettime_ns(time.CLOCK_REALTIME)
    s.send(req)
    while True:
        try:
            data, anc, _, _ = s.recvmsg(128, 64)
        except socket.timeout:
            break
        if len(data) < 42 or data[21] != 2 or data[28:32] != socket.inet_aton(target):
            continue
        sec, nsec = struct.unpack("qq", anc[0][2][:16])
        if sec * 10**9 + nsec >= t0:  # not a late answer to an earlier probe
            rtt.append((sec * 10**9 + nsec - t0) / 1000.0)
            break
rtt.sort()
q = lambda f: rtt[min(len(rtt) - 1, int(f * len(rtt)))]
print("%d/%d answered, us min %.0f median %.0f p90 %.0f max %.0f"
      % (len(rtt), count, rtt[0], q(0.5), q(0.9), rtt[-1]) if rtt else "no answer")
