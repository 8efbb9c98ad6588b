"""Runs examples/python/consumer.py against a real Redis under faults (make
test, suite "python-consumer"), acting as producer, fault injector and
operator; then examples/python/check_consumer.py checks the result.

Streams s0 and s1 (two partitions, one worker each) get a shuffled list of
episodes while the producer keeps adding events:
  kill       SIGKILL the worker at a random moment, start another
  kill_noted SIGKILL it while a page it noted is not applied (a burst first)
  terminate  pg_terminate_backend of its connection (reconnect, owner_check)
  expire     INCR <stream>:epoch: its page token is expired (recovery)
  zombie     SIGSTOP it while it holds no transaction, start a successor,
             SIGCONT: it must get SG001 and exit 3
  sigterm    graceful stop (sog.halt), start another
  trim       SIGKILL, XTRIM MAXLEN below what is unapplied (a loss the worker
             reports, sog.report_gap 'retention'), or keeping all of it
  xdel       SIGKILL until a noted page is pending, XDEL a record inside it:
             the successor's verify_gap answers false (hash_mismatch)
Stream s2 is replaced by another stream under the same key (a new identity):
the worker's claim answers unrecoverable_divergence.  As operator, the driver
resolves each gap as accepted_loss a second after it appeared (so that the
workers meet fail_closed), reconfiguring the source identity first for an
identity_changed gap.  At the end every worker drains its stream and is
stopped with SIGTERM.  No timing is asserted.

    python3 drive_consumer.py --redis unix:///tmp/r.sock --out DIR [--seed N]
"""
import argparse
import glob
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

import psycopg
import redis

HERE = os.path.dirname(os.path.abspath(__file__))
MAIN = ["s0", "s1"]
DIV = "s2"


def key(pos):
    return tuple(int(c) for c in pos.split("-"))


class Driver:
    def __init__(self, a):
        self.a = a
        self.r = redis.Redis.from_url(a.redis)
        self.db = psycopg.connect(a.pg, autocommit=True)
        self.rng = random.Random(a.seed)
        self.procs = {}                 # stream -> Popen of its current worker
        self.logs = {}                  # pid -> its log
        self.n_start = 0
        self.stats = dict(kills=0, terminated=0, expired=0, zombies=0, zombies_fenced=0,
                          sigterms=0, trims_lossy=0, trims_kept=0, xdels=0, resolved=0,
                          divergences=0)
        self.plog = open(os.path.join(a.out, "produced.jsonl"), "a")
        self.seq = {}
        self.lock = threading.Lock()    # the producer log, from two threads
        self.producing = True

    # ---- producer -----------------------------------------------------------

    def new_identity(self, stream):
        self.r.set(stream + ":identity", uuid.uuid4().hex)

    def produce(self, stream, n, rng=None):
        with self.lock:
            self.produce_locked(stream, n, rng or self.rng)

    def background(self):
        """A steady trickle into the main streams, so that kills meet pages in flight."""
        rng = random.Random(self.a.seed + 1)
        while self.producing:
            for s in MAIN:
                self.produce(s, rng.randint(1, 6), rng)
            time.sleep(0.03)

    def produce_locked(self, stream, n, rng):
        ident = self.r.get(stream + ":identity").decode()
        for _ in range(n):
            k = self.seq[stream] = self.seq.get(stream, 0) + 1
            body = f"{stream} event {k} {rng.getrandbits(64):016x}".encode()
            pos = self.r.xadd(stream, {"body": body}).decode()
            self.plog.write(json.dumps(dict(stream=stream, identity=ident, id=pos,
                                            body=body.hex())) + "\n")
        self.plog.flush()

    # ---- workers --------------------------------------------------------------

    def start(self, stream):
        self.n_start += 1
        log = open(os.path.join(self.a.out, f"worker-{stream}-{self.n_start:03d}.log"), "w")
        p = subprocess.Popen([sys.executable, os.path.join(HERE, "consumer.py"),
                              "--stream", stream, "--redis", self.a.redis, "--pg", self.a.pg,
                              "--page", str(self.a.page)], stdout=log, stderr=subprocess.STDOUT)
        self.procs[stream] = p
        self.logs[p.pid] = log.name
        return p

    def wait_exit(self, p, timeout=20):
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise SystemExit(f"drive: worker {p.pid} did not exit within {timeout} s")

    def kill(self, stream):
        p = self.procs[stream]
        p.send_signal(signal.SIGKILL)
        p.wait()
        self.procs[stream] = None       # down until start()
        self.stats["kills"] += 1

    def status(self, stream):
        """(checkpoint, generation, applied, cursor); zeros before the first register."""
        return self.db.execute(
            "SELECT checkpoint_id, generation, applied_position::text, source_cursor::text"
            " FROM sog.status WHERE consumer = 'redis-sink' AND stream = %s",
            (stream,)).fetchone() or (None, 0, None, None)

    def running(self, s, p, timeout=15):
        """Wait until worker p owns the checkpoint of s and is on its hot path
        (its last word: APPLIED), no gap open."""
        end = time.time() + timeout
        while time.time() < end:
            with open(self.logs[p.pid]) as f:
                lines = f.read().splitlines()
            if lines and " APPLIED " in lines[-1] and self.db.execute(
                    "SELECT 1 FROM sog.status WHERE consumer = 'redis-sink' AND stream = %s"
                    " AND owner = %s AND state = 'running' AND open_gaps = 0",
                    (s, f"{socket.gethostname()}:{p.pid}")).fetchone():
                return True
            self.nap(0.02, 0.05)
            if p.poll() is not None:
                return False
        return False

    def backend(self, s, p):
        return self.db.execute(
            "SELECT pid, state FROM pg_stat_activity WHERE application_name = %s",
            (f"sog-py-{s}-{p.pid}",)).fetchone()

    def nap(self, lo=0.05, hi=0.4):
        """Sleep a random while, doing the operator's work meanwhile."""
        end = time.time() + self.rng.uniform(lo, hi)
        while True:
            self.operator()
            self.restart_exited()
            if time.time() >= end:
                return
            time.sleep(min(0.05, max(0, end - time.time())))

    def restart_exited(self):
        for s, p in list(self.procs.items()):
            if p is not None and p.poll() is not None:
                if p.returncode not in (0, 3):
                    raise SystemExit(f"drive: worker of {s} exited {p.returncode}"
                                     " (see its log)")
                self.start(s)

    # ---- the operator -----------------------------------------------------------

    def operator(self):
        """Resolve each open gap a second after it appeared."""
        for gap, cp, reason, stream in self.db.execute(
                "SELECT gap_id, checkpoint_id, reason, stream FROM sog.unresolved_gaps"
                " WHERE detected_at < now() - interval '1 s'").fetchall():
            if reason == "identity_changed":
                ident = "redis:%s@%s" % (stream, self.r.get(stream + ":identity").decode())
                self.db.execute("SELECT sog.reconfigure(%s, source_identity => %s,"
                                " note => 'the stream was recreated: the new one is the source')",
                                (cp, ident))
            self.db.execute("SELECT sog.resolve_gap(%s, 'accepted_loss', %s)",
                            (gap, f"drive_consumer: {reason}, accepted as lost"))
            self.stats["resolved"] += 1

    # ---- episodes ------------------------------------------------------------------

    def ep_kill(self, s):
        self.nap(0.05, 0.6)
        self.kill(s)
        self.start(s)

    def ep_kill_noted(self, s):
        """SIGKILL while a page the worker noted is not applied yet."""
        self.produce(s, 100)
        for _ in range(600):
            _, _, applied, cursor = self.status(s)
            if cursor and cursor != applied:
                break
            self.nap(0.005, 0.01)
        self.kill(s)
        self.start(s)

    def ep_terminate(self, s):
        self.nap(0.1, 0.5)
        b = self.backend(s, self.procs[s])
        if b and self.db.execute("SELECT pg_terminate_backend(%s)", (b[0],)).fetchone()[0]:
            self.stats["terminated"] += 1

    def ep_expire(self, s):
        self.r.incr(s + ":epoch")
        self.stats["expired"] += 1
        self.nap(0.2, 0.5)

    def ep_sigterm(self, s):
        self.nap(0.1, 0.4)
        p = self.procs[s]
        if not self.running(s, p):
            return
        p.send_signal(signal.SIGTERM)
        if self.wait_exit(p) != 0:
            raise SystemExit(f"drive: worker of {s} did not halt cleanly")
        self.stats["sigterms"] += 1
        self.start(s)

    def ep_zombie(self, s):
        self.nap(0.3, 0.6)
        old = self.procs[s]
        if not self.running(s, old):
            return
        for _ in range(200):            # stop it outside a transaction
            old.send_signal(signal.SIGSTOP)
            time.sleep(0.02)
            b = self.backend(s, old)
            if b and b[1] == "idle":
                break
            old.send_signal(signal.SIGCONT)
            time.sleep(0.01 * self.rng.randint(1, 5))
        else:
            return
        gen = self.status(s)[1]
        new = self.start(s)             # the successor claims: old is fenced
        for _ in range(200):
            if self.status(s)[1] > gen:
                break
            time.sleep(0.05)
        self.stats["zombies"] += 1
        self.produce(s, 30)             # something for the zombie to write
        old.send_signal(signal.SIGCONT)
        rc = self.wait_exit(old)
        if rc != 3:
            raise SystemExit(f"drive: the zombie of {s} exited {rc}, not 3 (fenced)")
        self.stats["zombies_fenced"] += 1
        self.procs[s] = new

    def unapplied(self, s):
        applied = self.status(s)[2]
        return applied, self.r.xrange(s, "(" + applied if applied else "-", "+")

    def ep_trim(self, s):
        self.nap(0.1, 0.5)
        self.kill(s)
        self.produce(s, 60)             # while the worker is down
        applied, rest = self.unapplied(s)
        if applied and len(rest) >= 4:
            lossy = self.stats["trims_lossy"] <= self.stats["trims_kept"]
            keep = len(rest) // 2 if lossy else len(rest) + 1 + self.rng.randint(0, 5)
            self.r.xtrim(s, maxlen=keep, approximate=False)
            self.stats["trims_lossy" if lossy else "trims_kept"] += 1
        self.nap(0.05, 0.2)
        self.start(s)

    def ep_xdel(self, s):
        """Kill the worker while a page it noted is pending; delete a record of
        that page (not its last): the successor's hash cannot match."""
        for i in range(4000):
            if i % 100 == 0:
                self.produce(s, 100)    # full pages, read ahead
            if self.db.execute("SELECT buffered_count >= 2 FROM sog.status WHERE consumer ="
                               " 'redis-sink' AND stream = %s", (s,)).fetchone() != (True,):
                self.nap(0.005, 0.01)   # the operator works meanwhile
                continue
            self.kill(s)
            _, _, applied, cursor = self.status(s)
            inside = self.r.xrange(s, "(" + applied if applied else "-", cursor or applied)
            if cursor != applied and len(inside) >= 2 and inside[-1][0].decode() == cursor:
                self.r.xdel(s, inside[self.rng.randrange(len(inside) - 1)][0])
                self.stats["xdels"] += 1
                self.start(s)
                return
            self.start(s)
            self.nap(0.1, 0.3)

    def divergence(self):
        """s2 applied, then deleted and created again under its key."""
        self.wait_applied(DIV)
        self.procs[DIV].send_signal(signal.SIGTERM)
        self.wait_exit(self.procs[DIV])
        self.produce(DIV, 10)           # never applied: inside the divergence gap
        self.r.delete(DIV)
        time.sleep(0.01)                # the new stream's IDs: above the old ones
        self.new_identity(DIV)
        self.produce(DIV, 40)
        self.stats["divergences"] += 1
        self.start(DIV)

    def wait_applied(self, s, timeout=40):
        last = self.r.xrevrange(s, count=1)[0][0].decode()
        end = time.time() + timeout
        while time.time() < end:
            st = self.status(s)
            if st and st[2] and key(st[2]) >= key(last):
                return
            self.nap(0.05, 0.1)
        raise SystemExit(f"drive: {s} did not reach {last} within {timeout} s: {self.status(s)}")

    def run(self):
        self.db.execute("CREATE TABLE IF NOT EXISTS redis_events (stream text NOT NULL,"
                        " pos sog.position NOT NULL, gen bigint NOT NULL, body bytea NOT NULL)")
        for s in MAIN + [DIV]:
            self.new_identity(s)
            self.produce(s, 300 if s in MAIN else 60)
            self.start(s)
        bg = threading.Thread(target=self.background, daemon=True)
        bg.start()
        plan = {s: ["kill"] * 8 + ["kill_noted"] * 4 + ["terminate"] * 4 + ["expire"] * 4
                + ["zombie", "zombie", "sigterm", "trim", "trim", "xdel"] for s in MAIN}
        for s in MAIN:
            self.rng.shuffle(plan[s])
        turn = 0
        while any(plan.values()):
            s = MAIN[turn % 2]
            turn += 1
            if not plan[s]:
                continue
            ep = plan[s].pop()
            print(f"drive: {s} {ep}", flush=True)
            getattr(self, "ep_" + ep)(s)
            if turn == 8:
                self.divergence()
        self.producing = False
        bg.join()
        for s in MAIN + [DIV]:
            self.produce(s, 50)
        for s in MAIN + [DIV]:
            self.wait_applied(s)
        for s, p in self.procs.items():
            p.send_signal(signal.SIGTERM)
        for s, p in self.procs.items():
            if self.wait_exit(p) != 0:
                raise SystemExit(f"drive: the last worker of {s} did not halt cleanly")
        self.count_logs()
        json.dump(self.stats, open(os.path.join(self.a.out, "stats.json"), "w"))
        print("drive: " + ", ".join(f"{k} {v}" for k, v in self.stats.items()), flush=True)

    def count_logs(self):
        """What the workers said they did (the checker trusts none of it)."""
        text = ""
        for f in sorted(glob.glob(os.path.join(self.a.out, "worker-*.log"))):
            text += open(f).read()
        for m in re.findall(r" CLAIM .*verdict=(\w+)", text):
            self.stats["claim_" + m] = self.stats.get("claim_" + m, 0) + 1
        self.stats["verify_true"] = len(re.findall(r" VERIFY .*ok=True", text))
        self.stats["verify_false"] = len(re.findall(r" VERIFY .*ok=False", text))
        self.stats["recoveries"] = len(re.findall(r" PROMOTE .*promoted=True", text))
        self.stats["gaps_reported"] = len(re.findall(r" GAP_REPORTED ", text))
        self.stats["reconnects"] = len(re.findall(r" RECONNECTED owner_check=True", text))
        self.stats["redelivered"] = len(re.findall(r" REDELIVERED .*written=0", text))
        self.stats["redelivered_written"] = len(re.findall(r" REDELIVERED .*written=[1-9]", text))
        self.stats["fenced"] = len(re.findall(r" FENCED ", text))
        self.stats["halts"] = len(re.findall(r" HALT ", text))
        self.stats["bugs"] = len(re.findall(r" BUG ", text))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--redis", required=True)
    ap.add_argument("--pg", default="")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--page", type=int, default=20)
    a = ap.parse_args()
    print(f"drive: seed {a.seed}", flush=True)
    d = Driver(a)
    try:
        d.run()
    finally:
        for p in d.procs.values():
            if p is not None and p.poll() is None:
                p.kill()


if __name__ == "__main__":
    main()
