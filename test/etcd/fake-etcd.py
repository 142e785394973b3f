#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A hostile etcd on loopback for etcd-hostile.sh: answers /v3/kv/range as
the etcd JSON gateway would, but broken in the way the store's PREFIX names
(the first path element of the requested key):

  empty    a well-formed empty store (the control: the client must work)
  badkey   a full page whose keys are not base64, saying more follow
  endless  one key outside the range, saying more follow, for ever
  stuck    the same full page for ever, saying more follow
  split    that page, counting a million keys in the range (the load
           splits a range that large after its first page)
  nocount  that page without a count (not split: paged, and refused)
  huge     a 60 MB reply

Writes its port to PORTFILE, and after each request the number of requests
of each kind to DIR/KIND.count.
usage: fake-etcd.py PORTFILE DIR
       fake-etcd.py --rss COMMAND...   run it, then print "maxrss KIB" to stderr
"""
import base64
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HEADER = {"cluster_id": "1", "member_id": "1", "revision": "7", "raft_term": "2"}
PAGE = 1000
counts = {}


def b64(s):
    return base64.b64encode(s.encode()).decode()


def kv(key, value=""):
    return {"key": key, "create_revision": "5", "mod_revision": "5", "version": "1",
            "value": b64(value)}


def reply(kind):
    if kind == "badkey":
        kvs = [kv("%%not base64 %d%%" % i) for i in range(PAGE)]
        return {"header": HEADER, "kvs": kvs, "more": True, "count": str(2 * PAGE)}
    if kind == "endless":
        return {"header": HEADER, "kvs": [kv(b64("zzz/elsewhere"))], "more": True, "count": "2"}
    if kind == "stuck":
        kvs = [kv(b64("stuck/x/%04d" % i)) for i in range(PAGE)]
        return {"header": HEADER, "kvs": kvs, "more": True, "count": str(2 * PAGE)}
    if kind in ("split", "nocount"):
        kvs = [kv(b64("%s/x/%04d" % (kind, i))) for i in range(PAGE)]
        count = {"count": "1000000"} if kind == "split" else {}
        return {"header": HEADER, "kvs": kvs, "more": True, **count}
    return {"header": HEADER}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            key = base64.b64decode(json.loads(body)["key"]).decode(errors="replace")
        except (ValueError, KeyError):
            key = "?"
        kind = key.split("/", 1)[0]
        counts[kind] = counts.get(kind, 0) + 1
        with open(os.path.join(sys.argv[2], kind + ".count"), "w") as f:
            f.write("%d\n" % counts[kind])
        if kind == "huge":
            self.send_huge()
            return
        out = json.dumps(reply(kind)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def send_huge(self):
        head = b'{"header":{"revision":"7"},"pad":"'
        chunk = b"A" * (1 << 20)
        n = 60
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(head) + n * len(chunk) + 2))
        self.end_headers()
        try:
            self.wfile.write(head)
            for _ in range(n):
                self.wfile.write(chunk)
            self.wfile.write(b'"}')
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def rss(argv):
    pid = os.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    _, status, usage = os.wait4(pid, 0)
    sys.stderr.write("maxrss %d\n" % usage.ru_maxrss)
    return os.waitstatus_to_exitcode(status)


def main():
    if sys.argv[1] == "--rss":
        sys.exit(rss(sys.argv[2:]))
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
