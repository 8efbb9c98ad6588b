"""A consumer's sink transactions with psycopg 3, one COMMIT per page
(docs/consumer.md; the hash is docs/reference.md's "Hash definitions").

A worker that already holds page k+1 while it applies page k notes page
k+1's read boundary inside page k's sink transaction, after page k's apply,
in the same call (sog.apply_batch_page: apply_batch, note_read and, for a
paged provider, commit_page, with one write): a crash after that COMMIT
leaves page k+1 provable, a crash before it rolls both back and leaves page
k's boundary in force.  Sink.apply() notes a page alone (committed) only
when no earlier transaction did: the first page after claim or verify_gap,
after a sink transaction that failed, or when page k+1 had not come yet.  on_error() maps each SQLSTATE to what the worker does.
"""
import hashlib

import psycopg


def buffer_hash(records):
    """records: [(position text, payload bytes)] in increasing position order."""
    h = hashlib.sha256(b"sog:buffer:v1").digest()
    for pos, payload in records:
        p = pos.encode("ascii")
        h = hashlib.sha256(h + len(p).to_bytes(2, "big") + p
                           + hashlib.sha256(payload).digest()).digest()
    return h.hex()


def key(pos):
    """A position's order, as sog.position orders it: its components as
    integers, compared left to right ("7" < "10", "1700" < "1700-0")."""
    return tuple(int(c) for c in str(pos).split("-"))


class Sink:
    """One worker's pages of [(position text, bytes)], positions increasing;
    applied: the last applied position (its text; None: nothing yet)."""

    def __init__(self, conn, cp, gen, applied):
        self.conn, self.cp, self.gen, self.applied = conn, cp, gen, applied
        self.noted = None           # the cursor a committed note_read recorded

    @staticmethod
    def rest(page, above):
        """The records of page above `above` (None: all of them)."""
        return [r for r in page if above is None or key(r[0]) > key(above)]

    def apply(self, page, next_page=None, token_before=None, token_after=None):
        """Write page; next_page: the page fetched after it, if the worker holds
        it.  Acknowledge page to the source once this returns, next_page only
        after its own apply.  Returns the applied position."""
        if self.noted != page[-1][0]:   # no earlier transaction noted this page
            rest = self.rest(page, self.applied)
            if rest:                    # none: a page delivered again, skip the note
                with self.conn.transaction():
                    self.conn.execute("SELECT sog.note_read(%s, %s, %s, %s, %s)",
                                      (self.cp, self.gen, rest[-1][0], buffer_hash(rest), len(rest)))
        last = max(page[-1][0], self.applied or page[-1][0], key=key)
        # page k+1's boundary: its records above what page k leaves applied
        nxt = self.rest(next_page, last) if next_page else []
        self.noted = None               # until the sink transaction commits
        with self.conn.transaction():   # one call: apply page k, note page k+1,
            fresh = self.conn.execute(  # move the token (paged providers)
                "SELECT sog.apply_batch_page(%s, %s, %s::sog.position[], %s::bytea[],"
                " %s, %s, %s, %s, %s)",
                (self.cp, self.gen, [p for p, _ in page],
                 [hashlib.sha256(b).digest() for _, b in page],
                 nxt[-1][0] if nxt else None, buffer_hash(nxt) if nxt else None,
                 len(nxt) if nxt else None,  # tokens: both None leave it as it is
                 token_before if token_after is not None else None, token_after)).fetchone()[0]
            new = [(p, b) for (p, b), f in zip(page, fresh) if f]
            if new:
                self.conn.cursor().executemany(
                    "INSERT INTO orders (pos, body) VALUES (%s, %s)", new)
        self.applied, self.noted = last, (nxt[-1][0] if nxt else None)
        return last

ACTIONS = {
    "SG001": "stop",           # fenced: another worker claimed; never retry
    "SG003": "stop",           # the source changed an applied event: audit
    "SG004": "verify_or_wait",  # a gap is pending: verify_gap, or wait for an operator
    "SG005": "stop",           # out of order: a client bug; resume from resume_from
    "SG006": "reclaim",        # the token moved under us: re-read and re-claim
    "SG007": "stop",           # skip refused on a critical checkpoint
    "55P03": "retry",          # claim_timeout: the old owner's transaction is open
    "40001": "retry",          # serialization failure / deadlock: retry the transaction
    "40P01": "retry",
    "25006": "reconnect",      # a standby or read-only transaction: use the primary
}


def on_error(e):
    """What to do after psycopg.Error e (connection errors: see the guide)."""
    if isinstance(e, psycopg.OperationalError) and e.sqlstate is None:
        return "reconnect_then_owner_check"   # the COMMIT may or may not have happened
    return ACTIONS.get(e.sqlstate, "stop")     # 22023, 22P02, 42501, ...: fix the caller
