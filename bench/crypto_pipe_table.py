#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The issue 10 table from one `bench/run --crypto --pipe` run: the codec beside
bare libipsec-mb (crypto.json), the dustgw pipeline per suite and backend, two
worker lcores against one, and the shadowsocks-libev peer (crypto-pipeline.jsonl,
peer.jsonl); the targets with their numbers; crypto-throughput.png (gnuplot).
usage: crypto_pipe_table.py RESULTS_DIR > crypto-pipeline.md
"""
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crypto_table  # noqa: E402

SUITE = {"chacha20-poly1305": "ChaCha20-Poly1305", "aes-256-gcm": "AES-256-GCM"}


def lines(path):
    if not os.path.exists(path):
        return []
    return [json.loads(x) for x in open(path) if x.startswith("{")]


def failed(r):
    """An error, or no measured window (the watcher thread, starved on a loaded
    machine, saw the 10% and 90% marks in one look: no rate)."""
    return bool(r.get("error")) or not r.get("mpps_per_lcore")


def backend(r):
    return "ipsec-mb" if r["backend"].startswith("libipsec-mb") else "sodium"


def med(rows, key):
    v = [r[key] for r in rows if not failed(r)]
    return statistics.median(v) if v else None


def fmt(x, nd=2):
    return "-" if x is None else f"{x:.{nd}f}"


def ratio(a, b):
    return None if a is None or not b else a / b


class Table:
    def __init__(self, d):
        self.pipe = lines(os.path.join(d, "crypto-pipeline.jsonl"))
        self.peer = {r["size"]: r for r in lines(os.path.join(d, "peer.jsonl"))}
        cj = os.path.join(d, "crypto.json")
        self.codec = crypto_table.load(cj) if os.path.exists(cj) else {}
        self.d = d

    def rows(self, suite, be, direction, size, workers=1):
        return [r for r in self.pipe if r["suite"] == suite and backend(r) == be and
                r["dir"] == direction and r["size"] == size and r["workers"] == workers]

    def mpps(self, *k):
        """Per worker lcore, per CPU-second; the median over the runs."""
        return med(self.rows(*k), "mpps_per_lcore")

    def pipeline(self):
        print("| dir | size B | suite | backend | Mpps/lcore (runs) | ns/packet "
              "| x libsodium ChaCha | 2 lcores: total Mpps, CPU / wall ratio to 1 | CPU share 2 lcores |")
        print("|---|---|---|---|---|---|---|---|---|")
        for direction in ("decode", "encode"):
            for size in (64, 1400):
                base = self.mpps("chacha20-poly1305", "sodium", direction, size)
                for suite in SUITE:
                    for be in ("sodium", "ipsec-mb"):
                        rs = self.rows(suite, be, direction, size)
                        m = self.mpps(suite, be, direction, size)
                        two = self.rows(suite, be, direction, size, 2)
                        one_tot, two_tot = med(rs, "mpps_total"), med(two, "mpps_total")
                        wall = lambda rr: statistics.median(
                            [sum(r["pps_wall_per_lcore"]) for r in rr if not failed(r)] or [0])
                        sc = "-"
                        if two:
                            sc = (f"{fmt(two_tot, 3)}, {fmt(ratio(two_tot, one_tot))}x / "
                                  f"{fmt(ratio(wall(two), wall(rs)))}x")
                        share = "; ".join("/".join(f"{x:.2f}" for x in r["cpu_share"])
                                          for r in two if not failed(r)) or "-"
                        runs = ", ".join("failed" if failed(r) else
                                         f"{r['mpps_per_lcore']:.2f}" for r in rs)
                        print(f"| {direction} | {size} | {SUITE[suite]} | {be} | {fmt(m, 3)} "
                              f"({runs}) | {fmt(1e3 / m if m else None, 0)} "
                              f"| {fmt(ratio(m, base))} | {sc} | {share} |")
        print()

    def peer_rows(self):
        print("| payload B | ss-server ns/pkt | ss util | dustgw decode ns/pkt, ChaCha, "
              "libipsec-mb | ratio | same, AES-256-GCM | ratio |")
        print("|---|---|---|---|---|---|---|")
        for size in (64, 1400):
            p = self.peer.get(size)
            if not p:
                continue
            c = self.mpps("chacha20-poly1305", "ipsec-mb", "decode", size)
            g = self.mpps("aes-256-gcm", "ipsec-mb", "decode", size)
            cn, gn = (1e3 / c if c else None), (1e3 / g if g else None)
            print(f"| {size} | {p['ss_ns_per_pkt']:.0f} | {p['ss_util']:.2f} | {fmt(cn, 0)} "
                  f"| {fmt(ratio(p['ss_ns_per_pkt'], cn), 1)}x | {fmt(gn, 0)} "
                  f"| {fmt(ratio(p['ss_ns_per_pkt'], gn), 1)}x |")
        print()

    def targets(self):
        c = self.codec
        out = []

        def t(what, goal, val, ok):
            out.append(f"| {what} | {goal} | {val} | "
                       f"{'-' if ok is None else ('met' if ok else 'not met')} |")

        for suite, sname in ((0, "ChaCha20-Poly1305"), (1, "AES-256-GCM")):
            for size, goal in ((64, 0.85), (1400, 0.95)):
                for op in ("seal", "open"):
                    r = ratio(c.get(("codec", op, 1, suite, size)), c.get(("bare", op, 1, suite, size)))
                    t(f"codec {op} / bare libipsec-mb, {sname}, {size} B", f">= {goal:.2f}",
                      fmt(r), None if r is None else r >= goal)
        for direction in ("decode", "encode"):
            for size, goal in ((64, 1.5), (1400, 2.0)):
                b = self.mpps("chacha20-poly1305", "sodium", direction, size)
                r = ratio(self.mpps("chacha20-poly1305", "ipsec-mb", direction, size), b)
                t(f"pipeline {direction} ChaCha libipsec-mb / libsodium, {size} B", f">= {goal}x",
                  fmt(r), None if r is None else r >= goal)
            b = self.mpps("chacha20-poly1305", "sodium", direction, 1400)
            g = self.mpps("aes-256-gcm", "ipsec-mb", direction, 1400)
            r = ratio(g, b)
            t(f"pipeline {direction} GCM libipsec-mb / libsodium ChaCha, 1400 B", ">= 4x",
              fmt(r), None if r is None else r >= 4)
            op = "open" if direction == "decode" else "seal"
            bare = c.get(("bare", op, 1, 1, 1400))
            r = ratio(g, bare)
            t(f"pipeline {direction} GCM / bare libipsec-mb GCM {op}, 1400 B", ">= 0.60",
              fmt(r), None if r is None else r >= 0.6)
        for suite in SUITE:
            for direction in ("decode", "encode"):
                for size in (64, 1400):
                    one = med(self.rows(suite, "ipsec-mb", direction, size), "mpps_total")
                    two = med(self.rows(suite, "ipsec-mb", direction, size, 2), "mpps_total")
                    r = ratio(two, one)
                    if r is not None:
                        t(f"2 lcores / 1, {direction} {SUITE[suite]} libipsec-mb, {size} B",
                          ">= 1.8x", fmt(r), r >= 1.8)
        print("| target | goal | measured | |")
        print("|---|---|---|---|")
        print("\n".join(out))
        print()

    def plot(self):
        dat = os.path.join(self.d, "crypto-throughput.dat")
        png = os.path.join(self.d, "crypto-throughput.png")
        gb = lambda pps, s: "NaN" if not pps else f"{pps * s * 8 / 1e9:.4f}"
        with open(dat, "w") as f:
            f.write("# size, payload Gbps per core: bare ipsec-mb open ChaCha, GCM; codec open "
                    "ChaCha, GCM; pipeline decode ipsec-mb ChaCha, GCM; pipeline decode "
                    "libsodium ChaCha; ss-server\n")
            for s in (64, 1400):
                p = self.peer.get(s)
                vals = [self.codec.get(("bare", "open", 1, 0, s)), self.codec.get(("bare", "open", 1, 1, s)),
                        self.codec.get(("codec", "open", 1, 0, s)), self.codec.get(("codec", "open", 1, 1, s)),
                        self.mpps("chacha20-poly1305", "ipsec-mb", "decode", s),
                        self.mpps("aes-256-gcm", "ipsec-mb", "decode", s),
                        self.mpps("chacha20-poly1305", "sodium", "decode", s),
                        p and p["ss_pps_per_core"] / 1e6]
                f.write(f"{s} " + " ".join(gb(v and v * 1e6, s) for v in vals) + "\n")
        curves = [("lw 2", "bare libipsec-mb ChaCha20-Poly1305 open"),
                  ("lw 2", "bare libipsec-mb AES-256-GCM open"),
                  ("dt 2", "codec open, ChaCha, libipsec-mb"),
                  ("dt 2", "codec open, GCM, libipsec-mb"),
                  ("lw 3", "dustgw pipeline decode, ChaCha, libipsec-mb"),
                  ("lw 3", "dustgw pipeline decode, GCM, libipsec-mb"),
                  ("lw 1", "dustgw pipeline decode, ChaCha, libsodium"),
                  ("lw 2", "shadowsocks-libev UDP relay")]
        plot = ", ".join(f"'{dat}' u 1:{i + 2} w lp {style} t '{title}'"
                         for i, (style, title) in enumerate(curves))
        script = "\n".join([
            "set terminal pngcairo size 1000,640", f"set output '{png}'",
            "set title 'Decode throughput per core vs payload size (payload Gbps; one run)'",
            "set xlabel 'payload bytes'", "set ylabel 'Gbit/s of payload, one core'",
            "set logscale xy", "set key bottom right opaque box", "set grid",
            "set xtics (64, 1400)", "plot " + plot]) + "\n"
        try:
            subprocess.run(["gnuplot"], input=script, text=True, check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"crypto_pipe_table.py: gnuplot failed: {e}", file=sys.stderr)


def main():
    t = Table(sys.argv[1])
    print("#### Pipeline per suite and backend (dgw_pipe, median of the runs)\n")
    t.pipeline()
    print("#### Peer: shadowsocks-libev, CPU ns per delivered packet over dustgw's\n")
    t.peer_rows()
    print("#### Targets (issue 10)\n")
    t.targets()
    t.plot()


if __name__ == "__main__":
    main()
