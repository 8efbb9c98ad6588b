--
-- writes: how the extension writes its tables (issue 9)
--
-- Every insert and update of sog.checkpoint and sog.receipt goes through
-- the executor (src/store/writer.c): the table owner's triggers fire, constraints
-- and defaults apply, indexes of any kind are maintained.  An update writes
-- only the columns that changed, so a long provider token is neither
-- rewritten nor logged again, and the checkpoint's row update is HOT.
-- Consumers here are named writes-*.
--
\i test/regress_common.sql

-- wal(sql): the WAL bytes the transaction running sql wrote, full-page
-- images left out (a checkpoint may land in either run; pg_walinspect reads
-- the records of that transaction alone, so other sessions and autovacuum
-- do not count either).
CREATE EXTENSION IF NOT EXISTS pg_walinspect;
CREATE PROCEDURE pg_temp.wal(sql text, INOUT bytes bigint DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
	l0 pg_lsn := pg_current_wal_insert_lsn();
	x xid;
BEGIN
	EXECUTE sql;
	x := xid(pg_current_xact_id());
	COMMIT;
	SELECT sum(record_length - fpi_length) INTO bytes
	  FROM pg_get_wal_records_info(l0, pg_current_wal_flush_lsn()) r
	 WHERE r.xid = x;
END
$$;

--
-- 1. WAL per apply does not grow with the provider token: 100 kB of
-- incompressible token against none (within 2x; before issue 9 a
-- single-event apply with such a token wrote about 110 kB).
--
SELECT id AS plain FROM sog.register('writes-plain', 'orders', '0') \gset
SELECT id AS long FROM sog.register('writes-long-token', 'orders', '0') \gset
SELECT generation AS gp FROM sog.claim(:plain, 'w') \gset
SELECT generation AS gl FROM sog.claim(:long, 'w') \gset
SELECT sog.commit_page(:long, :gl, NULL,
       (SELECT string_agg(md5(i::text || 'token'), '') FROM generate_series(1, 3200) i));
SELECT octet_length(provider_token) AS token_bytes FROM sog.checkpoint WHERE id = :long;
-- warm up both rows' pages, so that no full-page image lands in one run only
SELECT sog.apply(:plain, :gp, '1', pg_temp.d('1')), sog.apply(:long, :gl, '1', pg_temp.d('1'));
CALL pg_temp.wal(format($$SELECT sog.apply(%s, %s, g::sog.position, pg_temp.d(g::text))
                          FROM generate_series(2, 21) g$$, :plain, :gp)) \gset plain_
CALL pg_temp.wal(format($$SELECT sog.apply(%s, %s, g::sog.position, pg_temp.d(g::text))
                          FROM generate_series(2, 21) g$$, :long, :gl)) \gset long_
SELECT :long_bytes <= 2 * :plain_bytes AS within_2x, :long_bytes / 20 < 2000 AS per_apply_under_2kb;
-- the token is intact
SELECT md5(provider_token) = md5((SELECT string_agg(md5(i::text || 'token'), '') FROM generate_series(1, 3200) i))
       AS token_intact
  FROM sog.checkpoint WHERE id = :long;

--
-- 2. The checkpoint's updates are HOT: no index entry per apply.  In one
-- transaction block: outside one the backend flushes its pending counters
-- to the shared statistics whenever it is idle a second after the last
-- flush, and pg_stat_xact_* then starts again from zero (a slow server,
-- valgrind).
--
BEGIN;
SELECT n_tup_hot_upd AS hot0, n_tup_upd AS upd0
  FROM pg_stat_xact_user_tables WHERE relid = 'sog.checkpoint'::regclass \gset
SELECT count(*) FROM (SELECT sog.apply(:plain, :gp, g::sog.position, pg_temp.d(g::text))
                        FROM generate_series(22, 31) g) s;
SELECT n_tup_upd - :upd0 AS updates, n_tup_hot_upd - :hot0 AS hot_updates
  FROM pg_stat_xact_user_tables WHERE relid = 'sog.checkpoint'::regclass;
COMMIT;

--
-- 3. Writes go through the executor: the owner's row trigger fires for
-- every receipt row and every checkpoint update, an owner's column with a
-- default gets it, and an owner's CHECK is enforced.
--
CREATE TABLE public.writes_audit (tab text, op text, n int);
CREATE FUNCTION public.writes_audit_receipt() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.writes_audit VALUES (TG_TABLE_NAME, TG_OP, NEW.n);
	RETURN NEW;
END $$;
CREATE FUNCTION public.writes_audit_checkpoint() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.writes_audit VALUES (TG_TABLE_NAME, TG_OP, NULL);
	RETURN NEW;
END $$;
CREATE TRIGGER writes_audit AFTER INSERT ON sog.receipt
	FOR EACH ROW EXECUTE FUNCTION public.writes_audit_receipt();
CREATE TRIGGER writes_audit AFTER UPDATE ON sog.checkpoint
	FOR EACH ROW EXECUTE FUNCTION public.writes_audit_checkpoint();
ALTER TABLE sog.receipt ADD COLUMN written_at timestamptz NOT NULL DEFAULT now();
SELECT count(*) FROM (SELECT sog.apply_batch(:plain, :gp, ARRAY(SELECT g::sog.position FROM generate_series(32, 331) g),
                                             ARRAY(SELECT pg_temp.d(g::text) FROM generate_series(32, 331) g))) s;
SELECT tab, op, count(*) AS rows, sum(n) AS receipts FROM public.writes_audit GROUP BY tab, op ORDER BY tab, op;
SELECT count(*) AS rows, bool_and(written_at > now() - interval '1 minute') AS defaulted
  FROM sog.receipt WHERE checkpoint_id = :plain AND last_position > '31';
SELECT string_agg("position"::text, ' ') FILTER (WHERE "position" IN ('32', '331')) AS ends, count(*) AS receipts
  FROM sog.receipts(:plain, '32', '331');
-- an owner's CHECK the next row violates: the apply fails with the
-- executor's error, and nothing is stored
ALTER TABLE sog.receipt ADD CONSTRAINT writes_small_runs CHECK (n <= 100);
SELECT state, message FROM pg_temp.err(format($$SELECT sog.apply_batch(%s, %s, ARRAY(SELECT g::sog.position FROM generate_series(332, 531) g),
                                             ARRAY(SELECT pg_temp.d(g::text) FROM generate_series(332, 531) g))$$, :plain, :gp));
SELECT applied_position FROM sog.checkpoint WHERE id = :plain;
ALTER TABLE sog.receipt DROP CONSTRAINT writes_small_runs;
-- a trigger that refuses is honoured too
CREATE FUNCTION public.writes_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'checkpoint % is frozen by its owner', NEW.id USING ERRCODE = 'P0001';
END $$;
CREATE TRIGGER writes_refuse BEFORE UPDATE ON sog.checkpoint
	FOR EACH ROW WHEN (NEW.id = OLD.id AND OLD.consumer = 'writes-long-token')
	EXECUTE FUNCTION public.writes_refuse();
SELECT state, message FROM pg_temp.err(format($$SELECT sog.apply(%s, %s, '500', pg_temp.d('500'))$$, :long, :gl));
SELECT sog.apply(:plain, :gp, '600', pg_temp.d('600')) AS other_checkpoint_applies;
DROP TRIGGER writes_refuse ON sog.checkpoint;
DROP TRIGGER writes_audit ON sog.receipt;
DROP TRIGGER writes_audit ON sog.checkpoint;
ALTER TABLE sog.receipt DROP COLUMN written_at;
DROP FUNCTION public.writes_audit_receipt(), public.writes_audit_checkpoint(), public.writes_refuse();
DROP TABLE public.writes_audit;

--
-- 4. A CHECK constraint calls what its functions say now.  The owner's
-- constraint on sog.checkpoint calls a SQL function; a claim passes it;
-- the function is replaced by one that refuses every generation; the next
-- claim in the same session is refused as a plain UPDATE is.  1.1 kept the
-- constraint planned across calls (the function inlined) and claimed.
--
CREATE FUNCTION public.writes_generation_ok(g bigint) RETURNS boolean
	LANGUAGE sql IMMUTABLE AS $$ SELECT g >= 0 $$;
ALTER TABLE sog.checkpoint ADD CONSTRAINT writes_generation_ok
	CHECK (public.writes_generation_ok(generation));
SELECT generation AS g4 FROM sog.claim(:plain, 'writes-4a') \gset
CREATE OR REPLACE FUNCTION public.writes_generation_ok(g bigint) RETURNS boolean
	LANGUAGE sql IMMUTABLE AS $$ SELECT g < 0 $$;
SELECT state, message FROM pg_temp.err(format($$SELECT sog.claim(%s, 'writes-4b')$$, :plain));
SELECT state, message FROM pg_temp.err(format($$UPDATE sog.checkpoint SET generation = generation + 1 WHERE id = %s$$, :plain));
SELECT generation = :g4 AS unchanged, owner FROM sog.checkpoint WHERE id = :plain;
ALTER TABLE sog.checkpoint DROP CONSTRAINT writes_generation_ok;
DROP FUNCTION public.writes_generation_ok(bigint);
