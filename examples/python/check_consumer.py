"""The checker of the python-consumer suite: shares no code with consumer.py
and trusts nothing the workers said.  It reads what the producer logged
(every ID and payload Redis acknowledged, written before any trim), what
Redis still holds, the sink table and the guard's gap rows (sog.gaps), and
proves, per stream:

  - Redis holds nothing the producer did not log (same IDs, same bytes);
  - every sink row is a produced event with its bytes (nothing unknown), and
    no event is in the sink twice (no duplicate);
  - every produced event is either in the sink, or inside exactly one gap
    row's range (from, to], never both (a gap covers only events that were
    not applied) and never neither (lost).  A gap without an end (a
    divergence: the stream was replaced) covers the events of the source
    identities the checkpoint no longer has;
  - along the positions of a stream the writers' generations never go back
    (a fenced worker's row above a newer generation's would);
  - no gap is left open, every checkpoint is released (halted).

Then it shows that it can fail: in a transaction rolled back afterwards it
deletes a sink row, doubles one and makes one up, and must count 1 lost,
1 duplicated, 1 unknown.  Prints one line, "python-consumer: N produced,
..." with the driver's fault counts (stats.json), and exits 1 on any
anomaly.

    python3 check_consumer.py --redis URL --out DIR
"""
import argparse
import json
import os
import sys

import psycopg
import redis


def key(pos):
    return tuple(int(c) for c in pos.split("-"))


def check(db, r, out, consumer):
    """The invariants; returns (figures, anomalies)."""
    bad = []

    produced = {}                       # (stream, id) -> (identity, body)
    for line in open(os.path.join(out, "produced.jsonl")):
        e = json.loads(line)
        k = (e["stream"], e["id"])
        if k in produced:
            bad.append(f"the producer log holds {k} twice")
        produced[k] = (e["identity"], bytes.fromhex(e["body"]))
    streams = sorted({s for s, _ in produced})

    for s in streams:                   # what Redis holds now was produced
        for i, f in r.xrange(s):
            k = (s, i.decode())
            if k not in produced or produced[k][1] != f[b"body"]:
                bad.append(f"Redis holds {k}, which the producer did not log")

    sink = {}
    dups = unknown = 0
    gens = {}
    for s, pos, gen, body in db.execute(
            "SELECT e.stream, e.pos::text, e.gen, e.body FROM redis_events e"
            " ORDER BY e.stream, e.pos, e.gen"):
        k = (s, pos)
        if k in sink:
            dups += 1
            bad.append(f"duplicate: {k} is in the sink twice")
        sink[k] = bytes(body)
        if k not in produced or produced[k][1] != bytes(body):
            unknown += 1
            bad.append(f"unknown: sink row {k} is no produced event (or other bytes)")
        if gen < gens.get(s, 0):
            bad.append(f"generations go back at {k}: {gen} after {gens[s]}")
        gens[s] = max(gens.get(s, 0), gen)

    cps = {s: (cp, ident, owner) for cp, s, ident, owner in db.execute(
        "SELECT c.id, c.stream, c.source_identity, c.owner FROM sog.checkpoint c"
        " WHERE c.consumer = %s", (consumer,))}
    gaps = {}
    n_open = 0
    for s in streams:
        if s not in cps:
            bad.append(f"stream {s} has no checkpoint")
            continue
        cp, ident, owner = cps[s]
        if owner is not None:
            bad.append(f"checkpoint of {s} still owned by {owner} (not halted)")
        gaps[s] = db.execute(
            "SELECT gap_id, from_position::text, to_position::text, reason, resolution"
            " FROM sog.gaps(%s)", (cp,)).fetchall()
        n_open += sum(1 for g in gaps[s] if g[4] is None)

    def covering(s, pos, identity):
        cur = cps[s][1] if s in cps else None
        out = []
        for gid, frm, to, reason, _ in gaps.get(s, []):
            if frm is not None and key(pos) <= key(frm):
                continue
            if to is None:              # no end: the sources replaced since
                if cur is not None and cur.endswith("@" + identity):
                    continue
            elif key(pos) > key(to):
                continue
            out.append(gid)
        return out

    lost = in_gaps = both = 0
    for (s, pos), (identity, body) in sorted(produced.items()):
        g = covering(s, pos, identity)
        applied = (s, pos) in sink
        if applied and g:
            both += 1
            bad.append(f"applied inside gap {g}: {(s, pos)}")
        elif not applied and not g:
            lost += 1
            bad.append(f"lost: {(s, pos)} is neither in the sink nor in a gap row")
        elif len(g) > 1:
            bad.append(f"{(s, pos)} is inside {len(g)} gap rows {g}")
        elif g:
            in_gaps += 1
    if n_open:
        bad.append(f"{n_open} gap rows left open")

    n_gaps = sum(len(v) for v in gaps.values())
    ret = sum(1 for v in gaps.values() for g in v if g[3] == "retention")
    return dict(produced=len(produced), sink=len(sink), in_gaps=in_gaps, gaps=n_gaps,
                retention=ret, lost=lost, dups=dups, unknown=unknown), bad


def selftest(db, r, out, consumer):
    """The checker must see a sink row deleted, one doubled and one made up
    (in a transaction rolled back afterwards)."""
    with db.transaction(force_rollback=True):
        db.execute("DELETE FROM redis_events WHERE ctid = (SELECT ctid FROM redis_events"
                   " ORDER BY stream, pos LIMIT 1 OFFSET 10)")
        db.execute("INSERT INTO redis_events SELECT * FROM redis_events"
                   " ORDER BY stream, pos LIMIT 1 OFFSET 20")
        db.execute("INSERT INTO redis_events VALUES ('s0', '1-1', 1, 'made up')")
        c, _ = check(db, r, out, consumer)
    return (c["lost"], c["dups"], c["unknown"]) == (1, 1, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--redis", required=True)
    ap.add_argument("--pg", default="")
    ap.add_argument("--out", required=True)
    ap.add_argument("--consumer", default="redis-sink")
    a = ap.parse_args()
    r = redis.Redis.from_url(a.redis)
    db = psycopg.connect(a.pg, autocommit=True)
    c, bad = check(db, r, a.out, a.consumer)
    if not selftest(db, r, a.out, a.consumer):
        bad.append("self-test: a sink row deleted, one doubled and one made up were not"
                   " all seen (1 lost, 1 duplicated, 1 unknown)")
    st = json.load(open(os.path.join(a.out, "stats.json")))
    print(f"python-consumer: {c['produced']} produced, {c['sink']} in sink,"
          f" {c['in_gaps']} inside {c['gaps']} gap rows, {c['lost']} lost,"
          f" {c['dups']} duplicated, {c['unknown']} unknown,"
          f" {st['kills']} kills, {st['zombies_fenced']} zombies fenced,"
          f" {st['recoveries']} recoveries, {c['retention']} gaps (retention) reported;"
          f" claims {st.get('claim_aligned', 0)} aligned,"
          f" {st.get('claim_gap_replay_required', 0)} gap_replay_required"
          f" (verify_gap {st['verify_true']} true, {st['verify_false']} false),"
          f" {st.get('claim_fail_closed', 0)} fail_closed,"
          f" {st.get('claim_unrecoverable_divergence', 0)} unrecoverable_divergence;"
          f" {st['reconnects']} reconnects (owner_check), {st['redelivered']} pages"
          f" delivered again (nothing written), {st['halts']} halts,"
          f" {st['expired']} tokens expired, {st['trims_lossy']}+{st['trims_kept']} trims")
    need = {"kills": st["kills"], "zombies fenced": st["zombies_fenced"],
            "recoveries": st["recoveries"], "retention gaps": c["retention"],
            "aligned": st.get("claim_aligned", 0),
            "gap_replay_required": st.get("claim_gap_replay_required", 0),
            "verify_gap true": st["verify_true"], "verify_gap false": st["verify_false"],
            "fail_closed": st.get("claim_fail_closed", 0),
            "unrecoverable_divergence": st.get("claim_unrecoverable_divergence", 0),
            "reconnects": st["reconnects"], "halts": st["halts"],
            "a page delivered again": st["redelivered"]}
    for what, n in need.items():
        if n == 0:
            bad.append(f"not exercised: {what}")
    for b in bad[:40]:
        print("check_consumer: " + b)
    if len(bad) > 40:
        print(f"check_consumer: ... and {len(bad) - 40} more")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
