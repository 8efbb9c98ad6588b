"""A consumer's two transactions per page, with psycopg 3 (README, "Consumer guide").

buffer_hash() is the contract's chained SHA-256 (section 3); apply_page()
records the read boundary, commits it, then writes the page in one sink
transaction; on_error() maps each SQLSTATE to what the worker does next.
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


def apply_page(conn, cp, gen, applied, records, token_before=None, token_after=None):
    """Write one fetched page of (position text, bytes), positions increasing;
    applied is the last applied position (an int, or None: nothing yet).  The
    read boundary covers only the records above it; a page delivered again
    (after a restart) may lie wholly at or below it: then there is no
    boundary to note, and apply_batch answers every record false.  Returns
    the new applied position."""
    positions = [p for p, _ in records]
    digests = [hashlib.sha256(b).digest() for _, b in records]
    unapplied = [r for r in records if applied is None or int(r[0]) > applied]
    if unapplied:                   # 1. the read boundary, committed first
        with conn.transaction():
            conn.execute("SELECT sog.note_read(%s, %s, %s, %s, %s)",
                         (cp, gen, unapplied[-1][0], buffer_hash(unapplied), len(unapplied)))
    with conn.transaction():        # 2. the sink transaction
        fresh = conn.execute(
            "SELECT sog.apply_batch(%s, %s, %s::sog.position[], %s::bytea[])",
            (cp, gen, positions, digests)).fetchone()[0]
        new = [(p, b) for (p, b), f in zip(records, fresh) if f]
        if new:
            conn.cursor().executemany(
                "INSERT INTO orders (pos, body) VALUES (%s, %s)", new)
        if token_after is not None:  # paged providers only
            conn.execute("SELECT sog.commit_page(%s, %s, %s, %s)",
                         (cp, gen, token_before, token_after))
    return max(int(positions[-1]), applied or 0)


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
