#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A censor's flow classifier, as a measurement (issue 22, SPEC §12.6).

Each flow (one client port of a capture) becomes features a censor who
decrypts nothing can compute: the signed sizes of its first N datagrams
(+ client to server, - back), with timing their inter-arrival gaps too,
and its byte totals each way over its first 1 s and 5 s. A RandomForest
and a GradientBoosting classifier (scikit-learn), 5-fold stratified
cross-validation, tell set A's flows from set B's; accuracy and ROC AUC are
printed for N = 10, 20, 50, on sizes alone, with timing, on the sizes
of short-header (1-RTT) datagrams alone, the handshake cut away: what the
size model of SPEC §12.4 shapes, and on the first N sizes with no byte
totals ("sizes only": what the datagrams' order and sizes tell apart from
how many bytes a flow moves). 0.5 is a coin; a control of two sets of
the same real loads can land under it (each page's flows are split between
the folds).

usage: classify.py A.pcap B.pcap [more pairs...] [--label NAME]...
       classify.py --bounds COVER.pcap TUNNEL.pcap
The second form checks the quic size rules exactly on a Dust capture: no
client datagram over 1250 bytes, no server one over 1252 before a probe of
quic-go's path MTU sequence (1352, 1402, 1427, 1439) and none over the
largest probe sent, and every 1-RTT
datagram one of the cover capture's sizes (or the bound); it exits 1 on
the first breach, naming it."""
import collections
import importlib.machinery
import os
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
SM = importlib.machinery.SourceFileLoader(
    "size_model", os.path.join(HERE, "size-model.py")).load_module()
BOUND = SM.BOUND


def flows(path):
    """{client port: [(time, signed size, first byte)]} in capture order."""
    out = collections.OrderedDict()
    for t, d, n, first, cport in SM.udp_payloads(path):
        out.setdefault(cport, []).append((t, n if d == "c2s" else -n, first))
    return out


def features(flow, n, timing, one_rtt=False, totals=True):
    if one_rtt:  # the handshake cut away: short-header datagrams only
        flow = [p for p in flow if p[2] & 0xC0 == 0x40] or [(flow[0][0], 0, 0)]
    t0 = flow[0][0]
    sizes = [s for _, s, _ in flow[:n]] + [0] * max(0, n - len(flow))
    f = list(sizes)
    if timing:
        gaps = [flow[i][0] - flow[i - 1][0] for i in range(1, min(n, len(flow)))]
        f += gaps + [0.0] * (n - 1 - len(gaps))
    for w in (1.0, 5.0) if totals else ():
        up = sum(s for t, s, _ in flow if s > 0 and t - t0 <= w)
        down = sum(-s for t, s, _ in flow if s < 0 and t - t0 <= w)
        f += [up, down]
    return f


def compare(a, b, label):
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.metrics import accuracy_score, roc_auc_score

    fa, fb = list(flows(a).values()), list(flows(b).values())
    folds = min(5, len(fa), len(fb))
    print("%s: %d flows vs %d flows, %d-fold cross-validation" % (label, len(fa), len(fb), folds))
    if folds < 2:
        print("  too few flows to classify")
        return
    y = [0] * len(fa) + [1] * len(fb)
    print("  %-4s %-14s %-17s %-8s %s" % ("N", "features", "classifier", "accuracy", "AUC"))
    for n in (10, 20, 50):
        for timing, one_rtt, totals, what in ((False, False, True, "sizes"),
                                              (True, False, True, "sizes+timing"),
                                              (False, True, True, "1-RTT sizes"),
                                              (False, False, False, "sizes only")):
            x = [features(f, n, timing, one_rtt, totals) for f in fa + fb]
            for name, clf in (("RandomForest", RandomForestClassifier(n_estimators=200,
                                                                      random_state=1)),
                              ("GradientBoosting", GradientBoostingClassifier(random_state=1))):
                cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=1)
                p = cross_val_predict(clf, x, y, cv=cv, method="predict_proba")[:, 1]
                acc = accuracy_score(y, [int(v >= 0.5) for v in p])
                auc = roc_auc_score(y, p)
                print("  %-4d %-14s %-17s %-8.2f %.2f" % (n, what, name, acc, auc))


def bounds(cover, tunnel):
    real = SM.model(cover)
    seen = collections.Counter()
    small = collections.Counter()
    one_rtt = collections.Counter()
    probed = {}  # client port -> the largest path MTU probe the server sent it
    for _, d, n, first, cport in SM.udp_payloads(tunnel):
        seen[d] += 1
        if n > BOUND[d]:
            raise SystemExit("FAIL: %s datagram of %d bytes (flow %d) over the %d bound" %
                             (d, n, cport, BOUND[d]))
        # the server: 1252 until a probe of quic-go's sequence, then the largest probe sent
        if d == "s2c" and n > max(SM.PRE_PMTU, probed.get(cport, 0)):
            if n not in SM.PROBES:
                raise SystemExit("FAIL: server datagram of %d bytes (flow %d) over its "
                                 "bound %d before a probe of that size" %
                                 (n, cport, max(SM.PRE_PMTU, probed.get(cport, 0))))
            probed[cport] = n
        if first & 0xC0 == 0x40 and n != BOUND[d] and n not in real[d]:
            raise SystemExit("FAIL: %s 1-RTT datagram of %d bytes (flow %d): not a size the "
                             "cover sends" % (d, n, cport))
        if first & 0xC0 == 0x40:
            one_rtt[d] += 1
            small[d] += n < 41
    if not seen["c2s"] or not seen["s2c"]:
        raise SystemExit("FAIL: %s holds no Dust traffic both ways" % tunnel)
    print("bounds: %d client datagrams <= %d B, %d server datagrams <= %d B (over %d only "
          "behind a probe of quic-go's: %d flows probed), every 1-RTT size one of the cover's" %
          (seen["c2s"], BOUND["c2s"], seen["s2c"], BOUND["s2c"], SM.PRE_PMTU, len(probed)))
    for d in ("c2s", "s2c"):
        rs = sum(k for s, k in real[d].items() if s < 41)
        print("  %s 1-RTT datagrams under 41 B: cover %.0f%%, tunnel %.0f%%" %
              (d, 100.0 * rs / sum(real[d].values()), 100.0 * small[d] / max(1, one_rtt[d])))


def main():
    args = sys.argv[1:]
    if len(args) == 3 and args[0] == "--bounds":
        bounds(args[1], args[2])
        return
    labels = []
    while "--label" in args:
        i = args.index("--label")
        labels.append(args[i + 1])
        del args[i:i + 2]
    if not args or len(args) % 2:
        raise SystemExit(__doc__)
    for k in range(0, len(args), 2):
        label = labels[k // 2] if k // 2 < len(labels) else "%s vs %s" % (args[k], args[k + 1])
        compare(args[k], args[k + 1], label)


if __name__ == "__main__":
    main()
