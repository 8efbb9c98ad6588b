"""Runs examples/python/sink.py against a live server (make test, suite
"python-example"), the pipelined loop end to end over 80 records in pages
of 10: the hash agrees with sog.buffer_hash; one COMMIT per page (plus the
first page's note_read), each leaving the next page's read boundary durable;
a worker that crashes inside a sink transaction (its connection closed
without COMMIT, right after it noted the next page) leaves the page's own
boundary in force, and one that crashes after a COMMIT leaves the next
page's: each successor claims, is told gap_replay_required for exactly that
page, re-fetches it, verify_gap answers true, and it goes on; a page
delivered again writes nothing; a zombie gets SG001 and on_error says
"stop"; at the end every record is in the sink exactly once, with its bytes.

    PGHOST=... PGPORT=... python3 examples/python/check_sink.py
"""
import os
import sys

import psycopg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sink  # noqa: E402

DB = os.environ.get("PGDATABASE", "postgres")
PAGE, N = 10, 80
SOURCE = [(str(i), f"order {i}".encode()) for i in range(1, N + 1)]


def fetch(after, n=PAGE):
    """The source: the records after position `after`, at most n."""
    return SOURCE[after:after + n]


def token(k):
    """The provider's token after page k (page k covers (10(k-1), 10k])."""
    return f"t{k}" if k > 0 else None


class Worker:
    """A worker's connection as Sink sees it: counts the transactions, and
    crashes (closes the connection, no COMMIT) right after the statement
    for which crash_after(sql, in_transaction) is true."""

    def __init__(self, crash_after=None):
        self.conn = psycopg.connect(dbname=DB, autocommit=True)
        self.transactions = 0
        self.crash_after = crash_after

    def transaction(self):
        self.transactions += 1
        return self.conn.transaction()

    def execute(self, sql, args=None):
        cur = self.conn.execute(sql, args)
        in_txn = self.conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        if self.crash_after and self.crash_after(sql, in_txn):
            self.conn.close()
        return cur

    def cursor(self):
        return self.conn.cursor()


def status():
    return admin.execute("SELECT applied_position::text, source_cursor::text, state"
                         " FROM sog.status WHERE checkpoint_id = %s", (cp,)).fetchone()


def claim(owner):
    return admin.execute(
        "SELECT generation, verdict::text, resume_from::text, verify_from::text,"
        " verify_to::text, expected_count, provider_token FROM sog.claim(%s, %s)",
        (cp, owner)).fetchone()


def run(s, first, last, page, idle_after=False):
    """The pipelined loop over pages first..last, from page `first` (held):
    page k is applied with page k+1, fetched while k was held; with
    idle_after the last page alone (the source had nothing more yet).
    Returns the page held after it."""
    for k in range(first, last + 1):
        nxt = None if idle_after and k == last else fetch(k * PAGE)
        assert s.apply(page, nxt, token(k - 1), token(k)) == str(k * PAGE)
        cursor = (k + 1) * PAGE if nxt else k * PAGE    # page k+1's boundary is durable
        assert status() == (str(k * PAGE), str(cursor), "running"), (k, status())
        page = nxt
    return page


def replayed(owner, verify_from, verify_to, tok):
    """A successor: claim, re-fetch (verify_from, verify_to], verify_gap."""
    gen, verdict, resume, vfrom, vto, count, ptok = claim(owner)
    assert (verdict, resume, vfrom, vto, count, ptok) == (
        "gap_replay_required", str(verify_from), str(verify_from), str(verify_to),
        verify_to - verify_from, tok), (owner, verdict, resume, vfrom, vto, count, ptok)
    again = fetch(verify_from, verify_to - verify_from)
    ok = admin.execute("SELECT sog.verify_gap(%s, %s, %s)",
                       (cp, gen, sink.buffer_hash(again))).fetchone()[0]
    assert ok is True, ok
    return gen, again


admin = psycopg.connect(dbname=DB, autocommit=True)
admin.execute("DROP TABLE IF EXISTS orders")
admin.execute("CREATE TABLE orders (pos sog.position PRIMARY KEY, body bytea NOT NULL)")

# the client-side hash is the server's
server = admin.execute(
    "SELECT sog.buffer_hash(%s::sog.position[], ARRAY(SELECT sog.payload_digest(b) FROM unnest(%s::bytea[]) b))",
    ([p for p, _ in SOURCE], [b for _, b in SOURCE])).fetchone()[0]
assert sink.buffer_hash(SOURCE) == server, (sink.buffer_hash(SOURCE), server)

# the client's order of positions is the server's (one component, and
# tuples such as Redis IDs, whose first components are equal)
some = ["10", "9", "1700-0", "1700", "1700-1", "1699-12", "1700000000000-3", "2-0-1"]
server = admin.execute("SELECT array_agg(p::text ORDER BY p) FROM unnest(%s::sog.position[]) p",
                       (some,)).fetchone()[0]
assert sorted(some, key=sink.key) == server, (sorted(some, key=sink.key), server)
assert sink.Sink.rest([("1700-0", b""), ("1700-1", b"")], "1700-0") == [("1700-1", b"")]
cp = admin.execute("SELECT id FROM sog.register('python-example', 'orders', '0')").fetchone()[0]

# worker 1: pages 1-3, one transaction each and one for page 1's note_read;
# then it crashes inside page 4's sink transaction, right after the page call
# that applied page 4 and noted page 5
gen, verdict, resume = claim("python-1")[:3]
assert (verdict, resume) == ("aligned", None), (verdict, resume)
w1 = Worker()
s1 = sink.Sink(w1, cp, gen, None)
page = run(s1, 1, 3, fetch(0))
assert w1.transactions == 3 + 1, w1.transactions
w1.crash_after = lambda sql, in_txn: in_txn and "apply_batch_page" in sql
try:
    s1.apply(page, fetch(4 * PAGE), token(3), token(4))
    raise AssertionError("worker 1 did not crash")
except psycopg.Error as e:
    assert sink.on_error(e) == "reconnect_then_owner_check", (e.sqlstate, e)
assert admin.execute("SELECT count(*) FROM orders").fetchone()[0] == 30

# worker 2: page 4 is to verify (page 5's note rolled back with page 4); the
# source delivers page 3 again first (wholly applied: nothing written, the
# token stays); it crashes right after page 5's COMMIT, which noted page 6
gen2, page4 = replayed("python-2", 30, 40, token(3))
w2 = Worker()
s2 = sink.Sink(w2, cp, gen2, "30")
assert s2.apply(fetch(20), page4, token(3), token(3)) == "30"
assert status() == ("30", "40", "running"), status()
run(s2, 4, 5, page4)
# three sink transactions and no note alone: page 3's, delivered again,
# noted page 4 (nothing of page 3 to note: no transaction for it)
assert w2.transactions == 3, w2.transactions
w2.conn.close()

# worker 3: page 6 is to verify; then pages 6-8, the last alone
gen3, page6 = replayed("python-3", 50, 60, token(5))
w3 = Worker()
run(sink.Sink(w3, cp, gen3, "50"), 6, 8, page6, idle_after=True)
assert w3.transactions == 3 + 1, w3.transactions

# worker 2 again, as a zombie on a new connection: fenced
try:
    sink.Sink(Worker(), cp, gen2, "50").apply(fetch(50), fetch(60))
    raise AssertionError("the zombie wrote")
except psycopg.Error as e:
    assert e.sqlstate == "SG001" and sink.on_error(e) == "stop", (e.sqlstate, e)

rows = admin.execute("SELECT o.pos::text, o.body FROM orders o ORDER BY o.pos").fetchall()
assert [(p, bytes(b)) for p, b in rows] == SOURCE, rows
assert status() == (str(N), str(N), "running"), status()
admin.execute("DROP TABLE orders")
print(f"python example: ok (hash agrees; {N} records in pages of {PAGE}, one COMMIT per page;"
      " a crash inside a sink transaction and one after a COMMIT, each successor verified"
      " exactly the page left to prove; a page delivered again wrote nothing;"
      f" zombie SG001 -> stop; the sink holds each of the {N} records once)")
