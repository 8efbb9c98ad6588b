#!/usr/bin/env python3
"""bench/proto/retention-wal.py MODE ROWS KEEP PRUNE_EVERY CKPT_EVERY: the SQL
script of one mode of the retention prototype (see README.md here), on
standard output, for psql -f -.  Rows are shaped as sog.receipt's: a run of
121 digests (3,872 bytes, STORAGE PLAIN), 9 to a transaction (about 1,000
receipts).  Modes:
  none    no retention (the baseline);
  delete  every PRUNE_EVERY rows, DELETE those more than KEEP rows old,
          then VACUUM (designs 1 and 2: today's prune, and a VACUUM after);
  rotate  four partitions in turn, KEEP / 2 rows each; the next one is
          TRUNCATEd when it is due (all its rows are more than KEEP rows
          old), then filled (design 3).
A CHECKPOINT every CKPT_EVERY rows, as a long run has them.  Ends with a row
"result|MODE|WAL bytes|rows|table bytes"."""
import sys

mode, rows, keep, prune_every, ckpt_every = sys.argv[1], *map(int, sys.argv[2:6])
part = keep // 2
out = sys.stdout.write
out("\\set ON_ERROR_STOP 1\nSET client_min_messages = warning;\n"
    "DROP TABLE IF EXISTS proto_plain, proto_ring, proto_d;\n"
    "CREATE TABLE proto_d AS SELECT string_agg(sha256(convert_to(i::text, 'UTF8')), ''::bytea ORDER BY i) AS d FROM generate_series(1, 121) i;\n")
if mode == "rotate":
    out("CREATE TABLE proto_ring (ring smallint NOT NULL, checkpoint_id bigint NOT NULL,"
        " last_position bigint NOT NULL, n integer NOT NULL, digests bytea NOT NULL,"
        " PRIMARY KEY (ring, checkpoint_id, last_position)) PARTITION BY LIST (ring);\n")
    for r in range(4):
        out(f"CREATE TABLE proto_ring_{r} PARTITION OF proto_ring FOR VALUES IN ({r})"
            " WITH (autovacuum_enabled = off);\n"
            f"ALTER TABLE proto_ring_{r} ALTER COLUMN digests SET STORAGE PLAIN;\n")
    table = "proto_ring"
else:
    out("CREATE TABLE proto_plain (checkpoint_id bigint NOT NULL, last_position bigint NOT NULL,"
        " n integer NOT NULL, digests bytea NOT NULL, PRIMARY KEY (checkpoint_id, last_position))"
        " WITH (autovacuum_enabled = off);\n"
        "ALTER TABLE proto_plain ALTER COLUMN digests SET STORAGE PLAIN;\n")
    table = "proto_plain"
out("CHECKPOINT;\nSELECT pg_current_wal_lsn() AS lsn0 \\gset\n")
i, cur = 0, 0
while i < rows:
    lo, hi = i + 1, min(i + 9, rows)
    if mode == "rotate":
        for j in range(lo, hi + 1):
            if j > 1 and (j - 1) % part == 0:
                cur = (cur + 1) % 4
                out(f"TRUNCATE proto_ring_{cur};\n")
                # rows up to j - 1 - keep are older than KEEP: the partition held
                # rows j - 1 - 4 * part + 1 .. j - 1 - 3 * part, all older
        out("BEGIN;\n")
        # rows of one transaction may straddle a partition switch: route each
        seg = lo
        while seg <= hi:
            pidx = ((seg - 1) // part) % 4
            end = min(hi, ((seg - 1) // part + 1) * part)
            out(f"INSERT INTO proto_ring SELECT {pidx}, 1, g * 121, 121, d FROM proto_d, generate_series({seg}, {end}) g;\n")
            seg = end + 1
        out("COMMIT;\n")
    else:
        out(f"INSERT INTO proto_plain SELECT 1, g * 121, 121, d FROM proto_d, generate_series({lo}, {hi}) g;\n")
    i = hi
    if mode == "delete" and i > keep and i % prune_every < 9:
        out(f"DELETE FROM proto_plain WHERE checkpoint_id = 1 AND last_position <= {(i - keep) * 121};\n"
            "VACUUM proto_plain;\n")
    if i % ckpt_every < 9:
        out("CHECKPOINT;\n")
out(f"SELECT 'result', '{mode}', pg_wal_lsn_diff(pg_current_wal_lsn(), :'lsn0')::bigint, {rows},"
    f" pg_total_relation_size('{table}') + coalesce((SELECT sum(pg_total_relation_size(c.oid))"
    f" FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
    f" WHERE i.inhparent = '{table}'::regclass), 0);\n")
out("DROP TABLE IF EXISTS proto_plain, proto_ring, proto_d;\n")
