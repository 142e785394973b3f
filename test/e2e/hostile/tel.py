#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Read one DPDK telemetry command from a running dustgw and print its
# dictionary as "name value" lines (what dpdk-telemetry.py shows, scriptable).
# usage: tel.py SOCKET COMMAND
import json
import socket
import sys

s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
json.loads(s.recv(1 << 16))  # the greeting: version, pid, max_output_len
s.send(sys.argv[2].encode())
reply = json.loads(s.recv(1 << 20))
for k, v in reply[sys.argv[2].split(",")[0]].items():
    print(k, v)
