#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""What the etcd cluster alone does with a first use's commit: its floor.

dustgw commits a first use as one txn on etcd's JSON gateway (SPEC 7.5):
compares that b/ID and r/ID were never created, puts b/ID and t/ID with
sealed values (about 150 and 120 bytes of base64), and up to 32 first uses
in one txn when they queue on a request lane. This sends the same txns
with no gateway in the way, on the same cluster, to tell the gateway's
cost from the cluster's:

  one at a time: ONE txns of one binding each, back to back on one kept-alive
      connection, to each member in turn (the leader commits a txn itself, a
      follower forwards it: dustgw talks to whichever member answered last):
      p50/p99/max latency in ms;
  at once: LANES threads, each with its own connection (as dustgw's lanes),
      each sending txns of BATCH bindings until MANY are committed: bindings/s.
      The threads take the members in turn, where dustgw's lanes all talk to
      the member that answered last: the floor's load is spread over the
      three, the gateway's is not.

Keys go under PREFIX/floor-PID/ (removed after). Plain HTTP only (the
etcd:// URL that etcd-cluster.sh's `url` prints). Not in CI.

usage: etcd-floor.py ETCD_URL [ONE [MANY [LANES [BATCH]]]]
       defaults 500 20000 8 32
"""
import base64
import http.client
import json
import os
import sys
import threading
import time


def b64(s):
    return base64.b64encode(s.encode()).decode()


def endpoints_of(url):
    if not url.startswith("etcd://"):
        sys.exit("etcd-floor: an etcd:// URL (plain HTTP), not %r" % url)
    hosts, _, prefix = url[len("etcd://"):].partition("/")
    prefix = prefix.partition("?")[0] or "dust"
    eps = []
    for hp in hosts.split(","):
        h, _, p = hp.rpartition(":")
        eps.append((h, int(p)))
    return eps, prefix


class Conn:
    """One kept-alive connection to one member, as a dustgw lane keeps."""

    def __init__(self, ep):
        self.c = http.client.HTTPConnection(ep[0], ep[1], timeout=10)

    def post(self, path, body):
        self.c.request("POST", path, body=json.dumps(body),
                       headers={"Content-Type": "application/json"})
        r = self.c.getresponse()
        data = r.read()
        if r.status != 200:
            raise RuntimeError("etcd %s: HTTP %d %s" % (path, r.status, data[:200]))
        return json.loads(data)


def binding_txn(base, ids):
    """The txn dustgw sends for first uses ids: compares, puts, reads on failure."""
    val = "x" * 150
    tval = "y" * 120
    cmp, put, fail = [], [], []
    for i in ids:
        b, r, t = "%s/b/%d" % (base, i), "%s/r/%d" % (base, i), "%s/t/%d" % (base, i)
        for k in (b, r):
            cmp.append({"key": b64(k), "target": "CREATE", "create_revision": "0"})
            fail.append({"request_range": {"key": b64(k)}})
        put.append({"request_put": {"key": b64(b), "value": b64(val)}})
        put.append({"request_put": {"key": b64(t), "value": b64(tval)}})
    return {"compare": cmp, "success": put, "failure": fail}


def commit(conn, base, ids):
    r = conn.post("/v3/kv/txn", binding_txn(base, ids))
    if not r.get("succeeded"):
        raise RuntimeError("etcd-floor: a txn's compares failed (keys not fresh?)")


def pct(sorted_ms, p):
    return sorted_ms[min(len(sorted_ms) - 1, int(len(sorted_ms) * p / 100))]


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) > 1 else 2)
    eps, prefix = endpoints_of(sys.argv[1])
    one, many, lanes, batch = (list(map(int, sys.argv[2:6])) + [500, 20000, 8, 32][len(sys.argv) - 2:])[:4]
    if not (one > 0 and many > 0 and 1 <= lanes <= 64 and 1 <= batch <= 64):
        sys.exit("etcd-floor: ONE, MANY > 0; LANES 1..64; BATCH 1..64 (etcd's 128 ops)")
    base = "%s/floor-%d" % (prefix, os.getpid())

    for k, ep in enumerate(eps):
        conn = Conn(ep)
        st = conn.post("/v3/maintenance/status", {})
        role = "leader" if st.get("leader") == st["header"].get("member_id") else "follower"
        lat = []
        for i in range(one):
            t0 = time.perf_counter()
            commit(conn, "%s/one%d" % (base, k), [i])
            lat.append((time.perf_counter() - t0) * 1000)
        lat.sort()
        print("etcd alone, one binding txn at a time (%d) to %s:%d (%s): p50 %.1f ms, "
              "p99 %.1f ms, max %.1f ms" % (one, ep[0], ep[1], role, pct(lat, 50), pct(lat, 99),
                                           lat[-1]))

    nxt = [0]
    lock = threading.Lock()
    errors = []

    def lane(k):
        c = Conn(eps[k % len(eps)])
        try:
            while True:
                with lock:
                    first = nxt[0]
                    if first >= many:
                        return
                    nxt[0] = min(many, first + batch)
                    ids = range(first, nxt[0])
                commit(c, base + "/many", ids)
        except Exception as e:  # noqa: BLE001 - reported below, the run fails
            errors.append(str(e))

    t0 = time.perf_counter()
    ths = [threading.Thread(target=lane, args=(k,)) for k in range(lanes)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    dt = time.perf_counter() - t0
    if errors:
        sys.exit("etcd-floor: %s" % errors[0])
    print("etcd alone, %d lanes x txns of %d bindings: %d bindings in %.2f s: %d/s"
          % (lanes, batch, many, dt, many / dt))

    end = base[:-1] + chr(ord(base[-1]) + 1)
    Conn(eps[0]).post("/v3/kv/deleterange", {"key": b64(base), "range_end": b64(end)})


if __name__ == "__main__":
    main()
