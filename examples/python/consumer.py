"""A complete consumer of a Redis stream into PostgreSQL with stream_offset_guard
(psycopg 3 and redis-py; Debian: python3-psycopg, python3-redis).  Copy it.

One process consumes one stream (one checkpoint; several streams are several
processes, one per partition) into the table `redis_events`, and neither loses
nor doubles an event, through kills, zombies, lost connections, expired tokens
and a broker that trims.  What it shows, top to bottom:

  Pages        Redis as a paged provider: a page token names the last ID read
               and an epoch; a token of an older epoch is "expired" (what a
               Kinesis iterator or an HTTP cursor does; Redis itself has no
               tokens, so the facade models them and `<stream>:epoch` expires
               them).  Positions are Redis IDs, `1700000000000-3`: sog.position
               text as it is (two components, ordered as Redis orders them).
  claim()      sog.register, sog.claim at every start and the four verdicts:
               aligned; gap_replay_required (re-fetch (verify_from, verify_to]
               with XRANGE, hash, sog.verify_gap: true, that page is applied
               whole next; false, stop); fail_closed and
               unrecoverable_divergence (stop, wait until an operator resolved
               the gap, claim again).
  consume()    the hot path, one COMMIT per page: the page fetched next is noted
               inside this page's sink transaction (sog.apply_batch_page), a
               first page alone (sog.note_read); rows inserted only where the
               guard answered true; the token moves only with the COMMIT.
  retention    after every fetch: the stream's first retained entry (XINFO
               STREAM) against what is unapplied; trimmed records never
               applied -> sog.report_gap(..., 'retention', ...), then stop.
  recover()    an expired token: sog.begin_recovery from the applied position,
               sog.recovery_event per re-read event in the sink transaction,
               sog.promote with the new token.
  resume()     a lost connection: sog.owner_check, then applied_position and
               source_cursor from sog.status, and go on (never claim blindly);
               a page delivered again is answered false: nothing doubles.
  fencing      SG001 anywhere: another worker claimed; stop at once (exit 3).
  SIGTERM      sog.halt(id, gen, NULL, NULL, NULL) after applying what it holds.

    PGHOST=... python3 consumer.py --redis unix:///path/redis.sock --stream s0

Exit status: 0 halted on SIGTERM, 2 a bug or a bad argument, 3 fenced (or no
longer the owner), 5 gave up retrying.  One log line per event on stdout.
"""
import argparse
import hashlib
import os
import signal
import socket
import sys
import time

import psycopg
import redis

SINK = "INSERT INTO redis_events (stream, pos, gen, body) VALUES (%s, %s, %s, %s)"


def key(pos):
    """A Redis ID (or any sog.position text) as a tuple that sorts as sog.position."""
    return tuple(int(c) for c in pos.split("-"))


def buffer_hash(records):
    """records: [(position text, payload bytes)] in increasing position order."""
    h = hashlib.sha256(b"sog:buffer:v1").digest()
    for pos, payload in records:
        p = pos.encode("ascii")
        h = hashlib.sha256(h + len(p).to_bytes(2, "big") + p
                           + hashlib.sha256(payload).digest()).digest()
    return h.hex()


class Expired(Exception):
    """The provider rejected the page token."""


class Fenced(Exception):
    """SG001, or owner_check false: another worker owns the checkpoint."""


class GapStop(Exception):
    """A gap blocks the checkpoint: wait for an operator, then claim again."""


class Reclaim(Exception):
    """Our plan is stale (SG005, SG006, 55000): claim again."""


class Page:
    """Records [(id, payload)] read with a token; `token` continues after them."""

    def __init__(self, records, token):
        self.records, self.token = records, token

    def last(self):
        return self.records[-1][0] if self.records else None


class Pages:
    """A Redis stream behind a paged API.  A token is "<epoch>:(<id>" (after id)
    or "<epoch>:[<id>" (from id on); one whose epoch is not the stream's
    current one (`<stream>:epoch`, which an operator or a test INCRs) is
    expired.  Only a recovery may seek to get a fresh token."""

    def __init__(self, r, stream):
        self.r, self.stream = r, stream

    def epoch(self):
        return int(self.r.get(self.stream + ":epoch") or 0)

    def seek(self, pos, inclusive=False):
        """A fresh token at pos (None: the stream's beginning)."""
        return f"{self.epoch()}:{'[' if inclusive else '('}{pos or '0-0'}"

    def fetch(self, token, count, through="+"):
        """The records after the token (at most count, none beyond `through`)
        and the token after them."""
        epoch, start = (token or f"{self.epoch()}:(0-0").split(":", 1)
        if int(epoch) != self.epoch():
            raise Expired(token)
        start = start[1:] if start[0] == "[" else start
        got = self.r.xrange(self.stream, start, through, count=count)
        records = [(i.decode(), f[b"body"]) for i, f in got]
        return Page(records, f"{epoch}:({records[-1][0]}" if records else token)

    def xrange(self, after, through):
        """(after, through] by ID, no token: the re-fetch for verify_gap."""
        got = self.r.xrange(self.stream, "(" + after if after else "-", through)
        return [(i.decode(), f[b"body"]) for i, f in got]

    def first_retained(self):
        """(ID of the first retained entry or None, entries ever added, length)."""
        try:
            info = self.r.xinfo_stream(self.stream)
        except redis.ResponseError:
            return None, 0, 0
        first = info["first-entry"][0].decode() if info.get("first-entry") else None
        return first, info["entries-added"], info["length"]


class Worker:
    def __init__(self, args):
        self.args, self.stream = args, args.stream
        self.owner = args.owner or f"{socket.gethostname()}:{os.getpid()}"
        self.r = redis.Redis.from_url(args.redis)
        self.pages = Pages(self.r, self.stream)
        self.stopping = False
        self.conn = self.cp = None
        self.gen = self.applied = self.token = self.noted = None
        self.floor = None               # applied, or the end of a loss accepted above it
        self.inflight = None            # the page of the last sink transaction
        self.phase = "claim"

    def register(self):
        """The checkpoint of this stream, with the stream's identity: claim
        compares it at every start (a stream created anew is another source)."""
        identity = None
        while identity is None:         # the producer names each stream it creates
            identity = self.r.get(self.stream + ":identity")
            time.sleep(0 if identity else 0.1)
        self.identity = f"redis:{self.stream}@{identity.decode()}"
        try:
            self.cp = self.one("SELECT id FROM sog.register(%s, %s, '0', 'critical',"
                               " 'redis_streams', NULL, %s)",
                               (self.args.consumer, self.stream, self.identity))
        except psycopg.errors.InvalidParameterValue:   # registered with another one
            self.cp = self.one("SELECT id FROM sog.register(%s, %s, '0')",
                               (self.args.consumer, self.stream))

    def log(self, event, **kv):
        print(time.strftime("%H:%M:%S"), self.stream, event,
              " ".join(f"{k}={v}" for k, v in kv.items()), flush=True)

    def connect(self):
        self.conn = psycopg.connect(self.args.pg, autocommit=True,
                                    application_name=f"sog-py-{self.stream}-{os.getpid()}")
        self.conn.execute("SET sog.claim_timeout = '2s'")

    def one(self, sql, args=None):
        return self.conn.execute(sql, args).fetchone()[0]

    # ---- claim and its verdicts ---------------------------------------------

    def claim(self):
        """Claim until the plan says where to go on; returns the page to apply
        first (a verified replay) or None."""
        self.phase = "claim"
        if self.conn is None or self.conn.closed:
            self.reconnect()
        if self.cp is None:
            self.register()
        while True:
            p = self.conn.execute(
                "SELECT generation, verdict::text, resume_from::text, verify_from::text,"
                " verify_to::text, provider_token, gap_id FROM sog.claim(%s, %s, %s)",
                (self.cp, self.owner, self.identity)).fetchone()
            self.gen, verdict, self.applied, vfrom, vto, self.token, gap = p
            self.noted = self.inflight = None
            self.log("CLAIM", generation=self.gen, verdict=verdict, resume_from=self.applied,
                     verify=f"({vfrom},{vto}]" if vto else "-", gap_id=gap or "-")
            if verdict in ("fail_closed", "unrecoverable_divergence"):
                self.wait_resolved()
                continue
            self.floor = self.loss_floor()
            if verdict == "aligned":
                return None
            return self.replay(vto)     # gap_replay_required

    def replay(self, vto):
        """Re-fetch exactly (applied, verify_to], hash it, sog.verify_gap."""
        try:                            # through the token, which names `applied`
            page = self.pages.fetch(self.token, 10**6, through=vto)
        except Expired:                 # verify first, recover after
            page = Page(self.pages.xrange(self.applied, vto), self.token)
        self.check_retention()
        page.records = self.above_floor(page.records)
        if page.last() != vto:          # the record at verify_to is gone
            self.report_loss(vto, "records of the predecessor's noted page are gone")
        ok = self.one("SELECT sog.verify_gap(%s, %s, %s)",
                      (self.cp, self.gen, buffer_hash(page.records)))
        self.log("VERIFY", range=f"({self.applied},{vto}]", ok=ok)
        if not ok:                      # hash_mismatch: a gap row; an operator decides
            raise GapStop("hash_mismatch")
        self.noted = vto                # noted by the predecessor: apply it whole
        return page

    def wait_resolved(self):
        """Stop advancing until no gap of ours is open (an operator resolves it)."""
        self.log("WAIT_GAP", open=self.open_gaps())
        while True:
            if not self.one("SELECT sog.owner_check(%s, %s)", (self.cp, self.gen)):
                raise Fenced("another worker claimed while this one waited")
            if self.open_gaps() == 0:
                return
            if self.stopping:           # nothing held: release the checkpoint
                self.halt()
                sys.exit(0)
            time.sleep(0.2)             # or LISTEN sog_gap / watch sog.unresolved_gaps

    def open_gaps(self):
        return self.one("SELECT count(*) FROM sog.gaps(%s) WHERE resolution IS NULL", (self.cp,))

    def loss_floor(self):
        """The applied position, moved past the losses an operator accepted above
        it: what lies at or below is never read again nor reported again."""
        floor, moved = self.applied, True
        gaps = self.conn.execute(
            "SELECT from_position::text, to_position::text FROM sog.gaps(%s)"
            " WHERE resolution = 'accepted_loss' AND to_position IS NOT NULL",
            (self.cp,)).fetchall()
        while moved:                    # losses that join up from the applied position
            moved = False
            for frm, to in gaps:
                if (frm is None or (floor is not None and key(frm) <= key(floor))) \
                        and (floor is None or key(to) > key(floor)):
                    floor, moved = to, True
        return floor

    def above_floor(self, records):
        """Drop what lies inside an accepted loss, (applied, floor]."""
        if self.floor is None or self.floor == self.applied:
            return records
        return [r for r in records if key(r[0]) > key(self.floor)
                or (self.applied is not None and key(r[0]) <= key(self.applied))]

    # ---- retention ------------------------------------------------------------

    def check_retention(self):
        """After every fetch: did the broker trim records we never applied?
        Redis IDs are sparse: whatever lay between the floor and the first
        entry retained may have been trimmed, unless nothing ever was."""
        first, added, length = self.pages.first_retained()
        if first is None or added == length:    # no entry ever left the stream
            return
        if self.floor is not None and key(first) <= key(self.floor):
            return                      # everything above the floor is still there
        lost = self.one("SELECT sog.position_predecessor(%s)::text", (first,))
        if self.floor is None or key(lost) > key(self.floor):
            self.report_loss(lost, f"trimmed: the first entry retained is {first}")

    def report_loss(self, last_lost, why):
        detail = f"redis stream {self.stream}: {why}; ({self.floor}, {last_lost}] never applied"
        gap = self.one("SELECT sog.report_gap(%s, %s, %s, 'retention', %s)",
                       (self.cp, self.gen, last_lost, detail))
        self.log("GAP_REPORTED", gap_id=gap, range=f"({self.floor},{last_lost}]",
                 reason="retention")
        raise GapStop("retention")

    # ---- the hot path -----------------------------------------------------------

    def consume(self, page):
        """The core loop.  Holding page k (a verified replay, or None), fetch
        page k+1, then write page k in one sink transaction that also notes
        page k+1; the token moves with that COMMIT, never before it."""
        self.phase = "run"
        while not self.stopping:
            try:
                nxt = self.fetch(page.token if page else self.token)
            except Expired:             # apply what we hold, then recover
                if page:
                    self.write(page, None)
                raise
            if page is None:            # nothing held: nxt is a first page
                page = nxt if nxt.records else None
                if page is None:
                    time.sleep(0.02)    # an idle stream
                continue
            self.write(page, nxt if nxt.records else None)
            # page k is committed: a consumer group would XACK its IDs here
            page = nxt if nxt.records else None
        if page:                        # SIGTERM: apply what we hold, then halt
            self.write(page, None)

    def write(self, page, nxt):
        """Page k: its read boundary unless a transaction noted it, then its sink transaction."""
        if self.noted != page.last():   # no earlier transaction noted page k:
            self.note_read(page)        # its read boundary alone, COMMIT
        self.apply(page, nxt)
        self.log("APPLIED", applied=self.applied, n=len(page.records),
                 noted=self.noted or "-")

    def apply(self, page, nxt):
        """Page k's sink transaction; it notes page k+1 (nxt) when held, and
        moves the token from the one committed to the one after page k."""
        n = nxt.records if nxt else []
        self.inflight = page            # if the connection drops: did it commit?
        with self.conn.transaction():
            fresh = self.one(
                "SELECT sog.apply_batch_page(%s, %s, %s::sog.position[], %s::bytea[],"
                " %s, %s, %s, %s, %s)",
                (self.cp, self.gen, [p for p, _ in page.records],
                 [hashlib.sha256(b).digest() for _, b in page.records],
                 n[-1][0] if n else None, buffer_hash(n) if n else None, len(n) if n else None,
                 self.token, page.token))
            new = [(self.stream, p, self.gen, b) for (p, b), f in zip(page.records, fresh) if f]
            if new:
                self.conn.cursor().executemany(SINK, new)
        self.applied, self.floor, self.token = page.last(), page.last(), page.token
        self.noted = n[-1][0] if n else None
        return len(new)

    def note_read(self, page):
        """A first page's read boundary, committed on its own."""
        self.one("SELECT sog.note_read(%s, %s, %s, %s, %s)::text", (self.cp, self.gen, page.last(),
                 buffer_hash(page.records), len(page.records)))
        self.noted = page.last()

    def fetch(self, token):
        """The next page after token, and the retention check."""
        while True:
            page = self.pages.fetch(token, self.args.page)
            self.check_retention()
            kept = self.above_floor(page.records)
            if kept or not page.records:
                return Page(kept, page.token)
            token = page.token          # all inside a loss accepted: page on

    # ---- expired-token recovery ------------------------------------------------

    def recover(self):
        """Re-read from the applied position (inclusive while Redis still holds
        it), check every event against the receipts, promote the new token."""
        self.phase = "recover"
        first, _, _ = self.pages.first_retained()
        self.check_retention()          # a loss not yet accounted for: report_gap
        inclusive = first is not None and key(first) <= key(self.applied)
        # Losses accepted above the applied position (the floor) account for
        # what lies below `first`: begin_recovery lifts its retention refusal
        # when accepted gaps cover (applied, first), one or a chain of them.
        a, state = self.conn.execute(
            "SELECT id, state::text FROM sog.begin_recovery(%s, %s, %s, NULL, %s, %s, %s)",
            (self.cp, self.gen, self.token, self.applied, inclusive, first)).fetchone()
        self.log("RECOVERY_BEGIN", attempt=a, state=state, anchor=self.applied,
                 inclusive=inclusive, retained_from=first, expired=self.token)
        if state != "open":             # refused: a gap row, the checkpoint failed closed
            raise GapStop("recovery refused")
        page = self.fetch(self.pages.seek(self.applied, inclusive))
        above = [r for r in page.records if key(r[0]) > key(self.applied)]
        if above:                       # the re-read records above applied: noted first
            self.note_read(Page(above, None))
        stopped = None
        with self.conn.transaction():   # stop at the first answer that is not
            for pos, body in page.records:  # verified, apply or duplicate
                v = self.one("SELECT sog.recovery_event(%s, %s, %s)",
                             (a, pos, hashlib.sha256(body).digest()))
                if v == "apply":
                    self.conn.execute(SINK, (self.stream, pos, self.gen, body))
                elif v not in ("verified", "duplicate"):
                    stopped = v         # the attempt failed with a gap row: commit it
                    break
        if stopped:
            self.log("RECOVERY_STOPPED", attempt=a, answer=stopped)
            raise GapStop(stopped)
        while True:                     # a retry after a lost connection converges
            try:
                promoted, gen, applied, reason = self.conn.execute(
                    "SELECT promoted, generation, applied_position::text, reason"
                    " FROM sog.promote(%s, %s, %s)", (a, page.token, page.last())).fetchone()
                break
            except psycopg.OperationalError:
                self.reconnect()
        self.log("PROMOTE", attempt=a, promoted=promoted, reason=reason, generation=gen,
                 applied=applied)
        if reason == "lost":
            raise Fenced("another worker moved the checkpoint first")
        if not promoted:
            raise Reclaim(reason)
        self.gen, self.applied, self.floor, self.token = gen, applied, applied, page.token
        self.noted = self.inflight = None

    # ---- a lost connection ------------------------------------------------------

    def reconnect(self):
        for attempt in range(50):
            try:
                self.connect()
                return
            except psycopg.OperationalError:
                time.sleep(0.1 * min(attempt + 1, 10))
        sys.exit(5)

    def resume(self):
        """After a reconnect: still the owner?  Then go on from what committed,
        never from what we held (an in-flight COMMIT happened or did not)."""
        self.phase = "resume"
        ok = self.one("SELECT sog.owner_check(%s, %s)", (self.cp, self.gen))
        self.log("RECONNECTED", owner_check=ok)
        if not ok:                      # another worker took over: claiming would fence it
            raise Fenced("owner_check false")
        self.applied, cursor = self.conn.execute(
            "SELECT applied_position::text, source_cursor::text FROM sog.status"
            " WHERE checkpoint_id = %s", (self.cp,)).fetchone()
        self.floor = self.loss_floor()
        if self.inflight and self.applied == self.inflight.last():
            self.token = self.inflight.token    # the last page committed: a source
            written = self.apply(self.inflight, None)   # may deliver it again, and
            self.log("REDELIVERED", applied=self.applied, written=written)  # nothing doubles
        self.noted = cursor if cursor != self.applied else None
        if not self.noted:
            return None
        page = Page(self.above_floor(self.pages.xrange(self.applied, cursor)), self.token)
        self.check_retention()
        if page.last() != cursor:       # the noted page is not whole any more
            self.report_loss(cursor, "records of the page noted are gone")
        try:                            # a noted page: re-read it whole, apply it next
            page.token = self.pages.fetch(self.token, 10**6, through=cursor).token
        except Expired:
            pass                        # applied with the old token, then recovered
        return page

    def halt(self):
        self.one("SELECT sog.halt(%s, %s, NULL, NULL, NULL)::text", (self.cp, self.gen))
        self.log("HALT", generation=self.gen, applied=self.applied)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stream", required=True)
    ap.add_argument("--redis", default="redis://127.0.0.1:6379")
    ap.add_argument("--pg", default="", help="libpq conninfo (default: the PG* environment)")
    ap.add_argument("--consumer", default="redis-sink")
    ap.add_argument("--owner")
    ap.add_argument("--page", type=int, default=50)
    w = Worker(ap.parse_args())
    signal.signal(signal.SIGTERM, lambda *_: setattr(w, "stopping", True))
    step = w.claim                      # each step returns the page to apply first
    while True:
        try:
            w.consume(step())           # returns on SIGTERM
            w.halt()
            return 0
        except Expired:
            w.log("EXPIRED", token=w.token, applied=w.applied)
            step = w.recover
        except GapStop as e:
            w.log("STOP_GAP", why=e)
            step = w.claim              # fail_closed: it waits for the operator
        except (Reclaim, Fenced, psycopg.Error) as e:
            step = on_error(w, e)


def on_error(w, e):
    """What each error makes the worker do (docs/consumer.md's SQLSTATE table);
    returns the next step."""
    state = getattr(e, "sqlstate", None)
    why = str(e).splitlines()[0] if str(e) else type(e).__name__
    if isinstance(e, Fenced) or state == "SG001":
        w.log("FENCED", generation=w.gen, why=why)
        sys.exit(3)                     # never retry with this generation
    if w.conn is None or w.conn.closed or (isinstance(e, psycopg.OperationalError)
                         and (state is None or state.startswith(("08", "57P")))):
        w.log("CONNECTION_LOST", why=why)
        w.reconnect()                   # the COMMIT may or may not have happened
        if w.phase == "claim":
            return w.claim              # its outcome is unknown: claim again
        return w.resume                 # owner_check, then go on from sog.status
    if isinstance(e, Reclaim) or state in ("SG005", "SG006", "55000", "55P03", "40001", "40P01"):
        w.log("RECLAIM", sqlstate=state, why=why)  # a fresh plan: always safe
        time.sleep(0.1)
        return w.claim
    if state in ("SG003", "SG004"):    # the source changed, or a gap is pending
        w.log("STOP_GAP", sqlstate=state, why=why)
        return w.claim
    w.log("BUG", sqlstate=state, error=why)
    sys.exit(2)                         # 22023, 22P02, 42501, ...: fix the caller


if __name__ == "__main__":
    sys.exit(main())
