#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Times a live store change on a running dustgw: runs a command (dust-invite
# create or revoke), then polls dustgw's telemetry socket every 5 ms until the
# gateway shows the effect, and prints the milliseconds from the command's
# return to that moment (and the return time, for the client-side view).
#
# usage: live-time.py PREFIX merge CMD...         /dustgw/store invitations grows
#        live-time.py PREFIX cut TUNNEL CMD...    sessions_revoked grows and the
#                                                 tunnel address has no live session
#        live-time.py PREFIX get PATH FIELD       one value, e.g. /dustgw/stats intro_ok
import json
import os
import socket
import subprocess
import sys
import time

WAIT_S = 10


class Telemetry:
    def __init__(self, prefix):
        path = os.path.join("/var/run/dpdk", prefix, "dpdk_telemetry.v2")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.connect(path)
        self.maxlen = json.loads(self.sock.recv(1024).decode())["max_output_len"]

    def get(self, cmd):
        self.sock.send(cmd.encode())
        return json.loads(self.sock.recv(self.maxlen).decode())[cmd.split(",")[0]]


def wait(cond):
    """Milliseconds from now until cond() holds, polled every 5 ms; None at WAIT_S."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < WAIT_S:
        if cond():
            return (time.monotonic() - t0) * 1000
        time.sleep(0.005)
    return None


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.time()


def main():
    tel = Telemetry(sys.argv[1])
    mode = sys.argv[2]
    if mode == "get":
        print(tel.get(sys.argv[3])[sys.argv[4]])
        return 0
    if mode == "merge":
        n0 = tel.get("/dustgw/store")["invitations"]
        t_ret = run(sys.argv[3:])
        ms = wait(lambda: tel.get("/dustgw/store")["invitations"] > n0)
    elif mode == "cut":
        tun = sys.argv[3]
        r0 = tel.get("/dustgw/stats")["sessions_revoked"]
        t_ret = run(sys.argv[4:])
        ms = wait(lambda: tel.get("/dustgw/stats")["sessions_revoked"] > r0 and
                  tel.get("/dustgw/sessions," + tun)["live"] == 0)
    else:
        sys.exit("live-time.py: unknown mode " + mode)
    if ms is None:
        print("timeout %.6f" % t_ret)
        return 1
    print("%.0f %.6f" % (ms, t_ret))
    return 0


sys.exit(main())
