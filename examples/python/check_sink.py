"""Runs examples/python/sink.py against a live server (make test, suite
"python-example"): the hash agrees with sog.buffer_hash, a page applies,
a replay writes nothing, a page delivered again after it was applied (wholly
below the applied position) writes nothing and does not stop, a zombie gets
SG001 and on_error says "stop".

    PGHOST=... PGPORT=... python3 examples/python/check_sink.py
"""
import os
import sys

import psycopg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sink  # noqa: E402

conn = psycopg.connect(dbname=os.environ.get("PGDATABASE", "postgres"), autocommit=True)
conn.execute("DROP TABLE IF EXISTS orders")
conn.execute("CREATE TABLE orders (pos sog.position PRIMARY KEY, body bytea NOT NULL)")
records = [(str(i), f"order {i}".encode()) for i in range(1, 11)]

# the client-side hash is the server's
server = conn.execute(
    "SELECT sog.buffer_hash(%s::sog.position[], ARRAY(SELECT sog.payload_digest(b) FROM unnest(%s::bytea[]) b))",
    ([p for p, _ in records], [b for _, b in records])).fetchone()[0]
assert sink.buffer_hash(records) == server, (sink.buffer_hash(records), server)

cp = conn.execute("SELECT id FROM sog.register('python-example', 'orders', '0')").fetchone()[0]
gen, resume = conn.execute("SELECT generation, resume_from::text FROM sog.claim(%s, 'python-1')",
                           (cp,)).fetchone()
assert resume is None, resume      # a new checkpoint: nothing applied yet
applied = sink.apply_page(conn, cp, gen, None, records, None, "page-2")
assert applied == 10
assert sink.apply_page(conn, cp, gen, applied, records[5:]) == 10             # a replay
assert sink.apply_page(conn, cp, gen, applied, records[:5]) == 10             # a page delivered again
assert conn.execute("SELECT count(*) FROM orders").fetchone()[0] == 10

conn.execute("SELECT sog.claim(%s, 'python-2')", (cp,))                        # a new owner
try:
    sink.apply_page(conn, cp, gen, applied, [("11", b"order 11")])
    raise AssertionError("the zombie wrote")
except psycopg.Error as e:
    assert e.sqlstate == "SG001" and sink.on_error(e) == "stop", (e.sqlstate, e)
assert conn.execute("SELECT count(*) FROM orders").fetchone()[0] == 10
conn.execute("DROP TABLE orders")
print("python example: ok (hash agrees, 10 applied, a replay and a page delivered again write nothing, zombie SG001 -> stop)")
