-- portable/store.sql: the checkpoint row in PL/pgSQL (the C edition:
-- src/checkpoint/checkpoint.c, the parts of src/checkpoint/boundary.c every call needs, and the
-- commit check of a partly applied read boundary).
--
-- A checkpoint is held in a variable of the table's row type,
-- sog.checkpoint, as sog.cp_lock read it (its provider token left out: it
-- may be long; sog.cp_token reads it when asked).  A call changes the
-- variable and hands it to sog.cp_write with the version it read, which
-- writes only the columns that changed, as the C edition's writer does, so
-- that the guard trigger, the constraints and the indexes act as for any
-- other writer and an update of unindexed columns stays HOT.
--
-- Locking is the C edition's: every state change starts with
-- sog.cp_lock, a FOR NO KEY UPDATE lock on the newest version of the row,
-- held to the end of the transaction.  What differs: at REPEATABLE READ and
-- SERIALIZABLE the C edition locks the newest version whatever the
-- snapshot and answers a stale worker SG001 (a write of a version newer
-- than the snapshot is then 40001); PL/pgSQL can only lock through SELECT
-- ... FOR NO KEY UPDATE, which at those levels raises PostgreSQL's own
-- 40001 for a row changed since the snapshot.  Either way nothing is
-- written on a stale view; the retry in a new transaction gets the C
-- edition's answer.
--
-- The commit check: a write that leaves the applied position strictly
-- inside the read boundary makes the transaction's COMMIT (and PREPARE
-- TRANSACTION) refuse with SG004 unless a later call of the same
-- transaction reaches the cursor.  The C edition registers a transaction
-- callback; here it is a deferred constraint trigger on sog.checkpoint
-- whose WHEN clause queues an event only for such a write, and which reads
-- the row again at commit.  (SET CONSTRAINTS ... IMMEDIATE makes it check
-- at the end of the statement instead: a refusal, earlier, never a miss.)
--
-- @after stream_offset_guard--1.0--1.1.sql

-- -1, 0 or 1 as a is below, equal to or above b; NULL below every
-- position (sog_position_cmp_nullable).
CREATE FUNCTION sog.pos_cmp(a sog.position, b sog.position) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
	SELECT CASE
		WHEN a IS NULL AND b IS NULL THEN 0
		WHEN a IS NULL THEN -1
		WHEN b IS NULL THEN 1
		WHEN a::text COLLATE sog.position_order < b::text THEN -1
		WHEN a::text = b::text THEN 0
		ELSE 1
	END
$$;
REVOKE ALL ON FUNCTION sog.pos_cmp(sog.position, sog.position) FROM PUBLIC;

-- A position in a message: its text, or "(none)" (sog_position_label).
CREATE FUNCTION sog.pos_str(p sog.position) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT coalesce(p::text, '(none)') $$;
REVOKE ALL ON FUNCTION sog.pos_str(sog.position) FROM PUBLIC;

-- 22023 for a NULL argument that must not be (sog_require_arg).
CREATE FUNCTION sog.require_arg(arg_is_null boolean, n integer, arg_name text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	IF arg_is_null THEN
		RAISE EXCEPTION '% must not be NULL', arg_name
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('Argument %s (%s) is NULL.', n, arg_name),
				  HINT = format('Pass a value for %s.', arg_name);
	END IF;
END
$$;
REVOKE ALL ON FUNCTION sog.require_arg(boolean, integer, text) FROM PUBLIC;

-- No checkpoint has this id: 22023, or the 42501 a role whose grants do not
-- cover every checkpoint gets for one it may not act on.
CREATE FUNCTION sog.report_unknown_checkpoint(id bigint, kinds integer) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM sog.check_access_missing('checkpoint ' || id, kinds);
	RAISE EXCEPTION 'checkpoint % does not exist', id
		USING ERRCODE = 'invalid_parameter_value',
			  DETAIL = format('No row of sog.checkpoint has id %s.', id),
			  HINT = 'Create it with sog.register(consumer, stream, partition) and use the id it returns.';
END
$$;
REVOKE ALL ON FUNCTION sog.report_unknown_checkpoint(bigint, integer) FROM PUBLIC;

-- Find checkpoint id, check that the acting role may act on it with a grant
-- of kinds (42501), lock its newest row version (waiting for whichever
-- transaction holds it: for a claim at most sog.claim_timeout milliseconds,
-- and never longer than lock_timeout) and read it, its provider token left
-- out.  22023 for an unknown id, 25006 on a standby or in a read-only
-- transaction.
CREATE FUNCTION sog.cp_lock(id bigint, kinds integer, claim boolean) RETURNS sog.checkpoint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	cp sog.checkpoint;
	consumer text;
	claim_ms integer;
	lock_ms integer;
	saved text;
BEGIN
	IF pg_is_in_recovery() THEN
		RAISE EXCEPTION 'cannot change checkpoint % during recovery', id
			USING ERRCODE = 'read_only_sql_transaction',
				  DETAIL = 'This server is a standby: checkpoints, receipts and gaps change only on the primary.',
				  HINT = 'Connect the consumer to the primary.';
	END IF;
	IF current_setting('transaction_read_only')::boolean THEN
		RAISE EXCEPTION 'cannot change checkpoint % in a read-only transaction', id
			USING ERRCODE = 'read_only_sql_transaction',
				  DETAIL = 'Claims, applies, halts and gap changes write the checkpoint''s row.',
				  HINT = 'Run the sink transaction as READ WRITE.';
	END IF;
	SELECT c.consumer INTO consumer FROM sog.checkpoint c WHERE c.id = cp_lock.id;
	IF NOT FOUND THEN
		PERFORM sog.report_unknown_checkpoint(id, kinds);
	END IF;
	-- may the caller act on it at all?  (the consumer never changes; one
	-- that passes every check needs no look at the grants)
	IF NOT sog.access_privileged(sog.acting_role()) THEN
		PERFORM sog.check_access(id, consumer, kinds);
	END IF;

	IF claim THEN
		claim_ms := sog.claim_timeout_ms();
		IF claim_ms > 0 THEN
			lock_ms := sog.lock_timeout_ms();
		END IF;
	END IF;
	IF claim AND claim_ms > 0 AND (lock_ms = 0 OR claim_ms < lock_ms) THEN
		saved := current_setting('lock_timeout');
		PERFORM set_config('lock_timeout', claim_ms || 'ms', true);
		BEGIN
			cp := sog.cp_lock_row(id);
		EXCEPTION
			WHEN lock_not_available THEN
				PERFORM set_config('lock_timeout', saved, true);
				PERFORM sog.report_lock_timeout(id, true, claim_ms);
			WHEN serialization_failure THEN
				PERFORM sog.report_serialization_failure(id);
		END;
		PERFORM set_config('lock_timeout', saved, true);
	ELSIF current_setting('lock_timeout') <> '0'
		  OR current_setting('transaction_isolation') <> 'read committed' THEN
		-- a lock_timeout of the session's: its 55P03 names the holder, as
		-- in C; at REPEATABLE READ and SERIALIZABLE a row changed since the
		-- snapshot is 40001 naming the checkpoint (a subtransaction only
		-- then)
		BEGIN
			cp := sog.cp_lock_row(id);
		EXCEPTION
			WHEN lock_not_available THEN
				PERFORM sog.report_lock_timeout(id, false, sog.lock_timeout_ms());
			WHEN serialization_failure THEN
				PERFORM sog.report_serialization_failure(id);
		END;
	ELSE
		cp := sog.cp_lock_row(id);
	END IF;
	IF cp.id IS NULL THEN		-- deleted while we waited
		PERFORM sog.report_unknown_checkpoint(id, kinds);
	END IF;
	RETURN cp;
END
$$;
REVOKE ALL ON FUNCTION sog.cp_lock(bigint, integer, boolean) FROM PUBLIC;

-- The row of checkpoint id changed since the snapshot of a REPEATABLE READ
-- or SERIALIZABLE transaction: 40001 naming it, as the C edition's write
-- refuses (which also names the newest version's generation and applied
-- position; the snapshot here cannot read them).
CREATE FUNCTION sog.report_serialization_failure(id bigint) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RAISE EXCEPTION 'could not serialize access to checkpoint % due to concurrent update', id
		USING ERRCODE = 'serialization_failure',
			  DETAIL = format('This transaction runs at %s; checkpoint %s was changed by a transaction that committed after this one''s snapshot.',
							  upper(current_setting('transaction_isolation')), id),
			  HINT = 'Retry the whole sink transaction, as after any serialization failure.';
END
$$;
REVOKE ALL ON FUNCTION sog.report_serialization_failure(bigint) FROM PUBLIC;

-- The newest version of checkpoint id's row, locked FOR NO KEY UPDATE (its
-- token left out); a row of NULLs if there is none.
CREATE FUNCTION sog.cp_lock_row(id bigint) RETURNS sog.checkpoint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	cp sog.checkpoint;
BEGIN
	SELECT c.id, c.consumer, c.stream, c."partition", c.criticality, c.provider, c.query_scope,
		   c.source_identity, c.generation, c.owner, NULL, c.source_cursor, c.read_base,
		   c.read_hash, c.read_count, c.applied_position, c.prune_horizon, c.receipts_through,
		   c.state, c.updated_at, c.created_at, c.claimed_at, c.applied_at, c.read_gap_floor,
		   c.receipt_ring
	  INTO cp
	  FROM sog.checkpoint c WHERE c.id = cp_lock_row.id FOR NO KEY UPDATE;
	RETURN cp;
END
$$;
REVOKE ALL ON FUNCTION sog.cp_lock_row(bigint) FROM PUBLIC;

-- sog.claim_timeout in milliseconds (0: none).  The C edition defines the
-- setting (an integer in ms, units accepted, checked at SET); here it is a
-- custom setting PostgreSQL keeps as text, read with the same units and
-- range, and refused (22023, as SET refuses it in C) when it is used.
CREATE FUNCTION sog.claim_timeout_ms() RETURNS integer
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v text := coalesce(nullif(btrim(current_setting('sog.claim_timeout', true)), ''), '0');
	m text[] := regexp_match(v, '^([0-9]+)\s*(ms|s|min|h|d)?$');
	ms numeric;
BEGIN
	IF m IS NOT NULL THEN
		ms := m[1]::numeric * CASE coalesce(m[2], 'ms') WHEN 'ms' THEN 1 WHEN 's' THEN 1000
								WHEN 'min' THEN 60000 WHEN 'h' THEN 3600000 ELSE 86400000 END;
		IF ms <= 2147483647 THEN
			RETURN ms::integer;
		END IF;
	END IF;
	RAISE EXCEPTION 'invalid value for parameter "sog.claim_timeout": "%"', sog.cut(v)
		USING ERRCODE = 'invalid_parameter_value',
			  HINT = 'Valid units for this parameter are "ms", "s", "min", "h", and "d"; the value is 0 to 2147483647 ms.';
END
$$;
REVOKE ALL ON FUNCTION sog.claim_timeout_ms() FROM PUBLIC;

-- lock_timeout in milliseconds (0: none).
CREATE FUNCTION sog.lock_timeout_ms() RETURNS integer
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT (CASE unit WHEN 'ms' THEN setting::numeric WHEN 's' THEN setting::numeric * 1000
			WHEN 'min' THEN setting::numeric * 60000 ELSE setting::numeric END)::integer
	  FROM pg_settings WHERE name = 'lock_timeout'
$$;
REVOKE ALL ON FUNCTION sog.lock_timeout_ms() FROM PUBLIC;

-- The backend (NULL for a prepared transaction) and virtual transaction
-- that hold transaction id x's own lock; NULLs if none does.
CREATE FUNCTION sog.xid_lock_holder(x xid, OUT pid integer, OUT vxid text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT l.pid, l.virtualtransaction
	  FROM pg_locks l
	 WHERE l.locktype = 'transactionid' AND l.transactionid = x
	   AND l.mode = 'ExclusiveLock' AND l.granted
	 LIMIT 1
$$;
REVOKE ALL ON FUNCTION sog.xid_lock_holder(xid) FROM PUBLIC;

-- Is the transaction with 32-bit id x in progress?  (Its 64-bit id: the
-- one nearest to this snapshot's xmax; false for one too old to tell.)
CREATE FUNCTION sog.xid_in_progress(x xid) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RETURN (SELECT pg_xact_status((n + CASE WHEN d >= 2147483648 THEN d - 4294967296 ELSE d END)::text::xid8)
				   = 'in progress'
			  FROM (SELECT n, ((x::text::numeric - n % 4294967296) % 4294967296 + 4294967296) % 4294967296 AS d
					  FROM (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::numeric AS n) s0) s);
EXCEPTION WHEN OTHERS THEN		-- older than the commit log keeps
	RETURN false;
END
$$;
REVOKE ALL ON FUNCTION sog.xid_in_progress(xid) FROM PUBLIC;

-- A lock wait on checkpoint id that timed out (55P03): which checkpoint,
-- who holds it and since when, and what to do (the C edition's holder.c:
-- sog_find_holder and sog_lock_timeout_error).  claim: the wait was
-- sog.claim_timeout's (ms).
--
-- What differs: the C edition reads the row version it is about to wait
-- for, its xmax and infomask, before the wait; here the holder is looked
-- up after the timeout, from the xmax of the row version this transaction
-- sees: its backend from pg_locks (the lock every transaction and
-- subtransaction holds on its own xid; a prepared transaction's shows no
-- pid, and its top-level xid is among the xids its virtual transaction
-- locks, matched in pg_prepared_xacts), a multixact's updater from
-- pg_get_multixact_members (an xmax that no transaction holds a lock on
-- is taken for one; a multixact of lockers only is "an open
-- transaction", as in C).  A prepared transaction's subtransaction holds
-- no lock on its xid (C finds its top-level xid in pg_subtrans): an xid
-- in progress that no backend locks is taken for one, and the prepared
-- transaction is named when it is the only one whose xid precedes it
-- ("an open transaction" otherwise).  A holder that ended, or was replaced by
-- another, between the timeout and the look-up is named as it is then
-- (the C edition names the one it waited for).  pg_stat_activity shows
-- xact_start and state of another role's backend only to a role with
-- pg_read_all_stats (the functions run as the extension's owner): without
-- it the detail says "an unknown time" and "state unknown", as C says
-- when it cannot learn them.
CREATE FUNCTION sog.report_lock_timeout(id bigint, claim boolean, ms integer) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	gen bigint;
	owner text;
	claimed timestamptz;
	claimed_txt text;
	locker xid;
	known boolean := false;
	a_known boolean := false;
	a_pid integer;
	a_vxid text;
	updater xid;
	b_known boolean := false;
	b_pid integer;
	b_vxid text;
	holder_pid integer;
	vxid text;
	since text;
	state text;
	gid text;
	gid_owner text;
	prepared text;
	saved text;
	detail text;
BEGIN
	SELECT c.generation, c.owner, coalesce(c.claimed_at, c.updated_at), c.xmax
	  INTO gen, owner, claimed, locker
	  FROM sog.checkpoint c WHERE c.id = report_lock_timeout.id;
	IF claimed IS NOT NULL THEN		-- timestamptz_to_str: ISO whatever DateStyle says
		saved := current_setting('datestyle');
		PERFORM set_config('datestyle', 'ISO', true);
		claimed_txt := claimed::text;
		PERFORM set_config('datestyle', saved, true);
	END IF;

	IF locker IS NOT NULL AND locker::text <> '0' THEN
		-- SQL cannot see whether xmax is a transaction id or a multixact
		-- (holder.c reads the tuple's infomask): both readings are tried,
		-- and the holder is named only when one of them names it, or both
		-- the same transaction.
		-- (a) a transaction id: the transaction that locks it, or, for one
		-- in progress with no lock of its own, its top-level transaction:
		-- a released subtransaction (RELEASE SAVEPOINT drops its xid lock;
		-- waiters wait for its parent) or one of a prepared transaction
		-- (PREPARE releases those locks).  The top-level transaction got its
		-- xid first and still runs, so it is among the transactions whose
		-- own xid lock (pg_locks, visible to every role) precedes the
		-- holder's: named when those are all one virtual transaction's and
		-- the holder still runs after that read (else its parent may have
		-- ended in between, leaving an unrelated transaction alone there).
		SELECT h.pid, h.vxid INTO a_pid, a_vxid FROM sog.xid_lock_holder(locker) h;
		a_known := a_vxid IS NOT NULL;
		IF NOT a_known AND sog.xid_in_progress(locker) THEN
			SELECT min(l.pid), min(l.virtualtransaction), count(DISTINCT l.virtualtransaction) = 1
			  INTO a_pid, a_vxid, a_known
			  FROM pg_locks l
			 WHERE l.locktype = 'transactionid' AND l.mode = 'ExclusiveLock' AND l.granted
			   AND l.pid IS DISTINCT FROM pg_backend_pid()
			   AND ((locker::text::bigint - l.transactionid::text::bigint) % 4294967296 + 4294967296)
				   % 4294967296 BETWEEN 1 AND 2147483647;
			a_known := a_known AND sog.xid_in_progress(locker);
		END IF;
		-- (b) a multixact: the updater among its members, the one a claim
		-- waits for, while it runs (none: only share lockers)
		BEGIN
			SELECT (array_agg(m.xid) FILTER (WHERE m.mode IN ('nokeyupd', 'upd')))[1]
			  INTO updater
			  FROM pg_get_multixact_members(locker) m;
		EXCEPTION WHEN OTHERS THEN		-- not a multixact id now
			updater := NULL;
		END;
		IF updater IS NOT NULL THEN
			SELECT h.pid, h.vxid INTO b_pid, b_vxid FROM sog.xid_lock_holder(updater) h;
			b_known := b_vxid IS NOT NULL;
		END IF;
		IF a_known AND (NOT b_known OR a_vxid = b_vxid) THEN
			known := true;
			holder_pid := a_pid;
			vxid := a_vxid;
		ELSIF b_known AND NOT a_known THEN
			known := true;
			holder_pid := b_pid;
			vxid := b_vxid;
		END IF;
	END IF;
	IF known AND holder_pid IS NOT NULL THEN
		SELECT a.xact_start::text, a.state INTO since, state
		  FROM pg_stat_activity a WHERE a.pid = holder_pid;
	ELSIF known AND gid IS NULL THEN
		-- no backend runs it: a prepared transaction (PREPARE TRANSACTION)
		-- (its top-level xid: among the xids its virtual transaction locks)
		SELECT p.gid, p.owner::text, p.prepared::text INTO gid, gid_owner, prepared
		  FROM pg_prepared_xacts p
		 WHERE p.transaction IN (SELECT l.transactionid FROM pg_locks l
								  WHERE l.locktype = 'transactionid' AND l.pid IS NULL
									AND l.virtualtransaction = vxid)
		 LIMIT 1;
	END IF;

	detail := format('Generation %s (%s%s%s, since %s) holds the checkpoint',
					 coalesce(gen, 0),
					 CASE WHEN owner IS NOT NULL THEN 'owner ' ELSE 'released by its owner' END,
					 CASE WHEN owner IS NOT NULL THEN sog.cut(owner) ELSE '' END, '',
					 coalesce(claimed_txt, 'its registration'));
	IF known AND holder_pid IS NOT NULL THEN
		detail := detail || format('; its row is locked by the open transaction of backend %s, in progress since %s (%s).',
								   holder_pid, coalesce(since, 'an unknown time'), coalesce(state, 'state unknown'));
	ELSIF known AND gid IS NOT NULL THEN
		detail := detail || format('; its row is locked by prepared transaction "%s" (owner %s, prepared at %s), which no backend runs.',
								   sog.cut(gid), sog.cut(gid_owner), prepared);
	ELSE
		detail := detail || '; its row is locked by an open transaction.';
	END IF;

	RAISE EXCEPTION '%', CASE WHEN claim THEN format('could not claim checkpoint %s within %s ms', id, ms)
							  ELSE format('could not lock checkpoint %s within lock_timeout (%s ms)', id, ms) END
		USING ERRCODE = 'lock_not_available',
			  DETAIL = detail,
			  HINT = CASE WHEN known AND holder_pid IS NOT NULL
						  THEN format('Retry later, or end that transaction with SELECT pg_terminate_backend(%s).', holder_pid)
						  WHEN known AND gid IS NOT NULL
						  THEN format('Finish that prepared transaction: COMMIT PREPARED %s keeps its sink rows, ROLLBACK PREPARED %s discards them.',
									  quote_literal(sog.cut(gid)), quote_literal(sog.cut(gid)))
						  ELSE 'Retry later, or end the transaction that holds the checkpoint (see pg_locks and pg_stat_activity).' END;
END
$$;
REVOKE ALL ON FUNCTION sog.report_lock_timeout(bigint, boolean, integer) FROM PUBLIC;

-- The provider token of checkpoint id as this transaction sees it.
CREATE FUNCTION sog.cp_token(id bigint) RETURNS text
LANGUAGE plpgsql STABLE
AS $$ BEGIN RETURN (SELECT c.provider_token FROM sog.checkpoint c WHERE c.id = cp_token.id); END $$;
REVOKE ALL ON FUNCTION sog.cp_token(bigint) FROM PUBLIC;

-- Write back the columns of cp that differ from orig (the version read or
-- last written; the row must be locked): claimed writes claimed_at,
-- boundary_recorded the gap floor, token_changed the provider token
-- (token).  Returns the row as written (its token left out); nothing is
-- written when nothing changed.
CREATE FUNCTION sog.cp_write(cp sog.checkpoint, orig sog.checkpoint, claimed boolean,
							 boundary_recorded boolean, token_changed boolean, token text)
	RETURNS sog.checkpoint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	c_gen boolean := cp.generation IS DISTINCT FROM orig.generation;
	c_owner boolean := cp.owner IS DISTINCT FROM orig.owner;
	c_identity boolean := cp.source_identity IS DISTINCT FROM orig.source_identity;
	c_cursor boolean := cp.source_cursor::text IS DISTINCT FROM orig.source_cursor::text;
	c_base boolean := cp.read_base::text IS DISTINCT FROM orig.read_base::text;
	c_hash boolean := cp.read_hash IS DISTINCT FROM orig.read_hash;
	c_count boolean := cp.read_count IS DISTINCT FROM orig.read_count;
	c_applied boolean := cp.applied_position::text IS DISTINCT FROM orig.applied_position::text;
	c_horizon boolean := cp.prune_horizon::text IS DISTINCT FROM orig.prune_horizon::text;
	c_through boolean := cp.receipts_through::text IS DISTINCT FROM orig.receipts_through::text;
	c_state boolean := cp.state IS DISTINCT FROM orig.state;
	floor bigint;
	w sog.checkpoint;
BEGIN
	IF NOT (c_gen OR c_owner OR c_identity OR c_cursor OR c_base OR c_hash OR c_count OR c_applied
			OR c_horizon OR c_through OR c_state OR token_changed OR claimed OR boundary_recorded) THEN
		RETURN cp;
	END IF;
	IF boundary_recorded THEN
		-- gaps recorded later, under this row's lock, have higher ids
		floor := coalesce((SELECT max(g.id) FROM sog.gap g WHERE g.checkpoint_id = cp.id), 0);
	END IF;
	UPDATE sog.checkpoint c SET
		generation = CASE WHEN c_gen THEN cp.generation ELSE c.generation END,
		owner = CASE WHEN c_owner THEN cp.owner ELSE c.owner END,
		source_identity = CASE WHEN c_identity THEN cp.source_identity ELSE c.source_identity END,
		source_cursor = CASE WHEN c_cursor THEN cp.source_cursor ELSE c.source_cursor END,
		read_base = CASE WHEN c_base THEN cp.read_base ELSE c.read_base END,
		read_hash = CASE WHEN c_hash THEN cp.read_hash ELSE c.read_hash END,
		read_count = CASE WHEN c_count THEN cp.read_count ELSE c.read_count END,
		applied_position = CASE WHEN c_applied THEN cp.applied_position ELSE c.applied_position END,
		applied_at = CASE WHEN c_applied THEN transaction_timestamp() ELSE c.applied_at END,
		prune_horizon = CASE WHEN c_horizon THEN cp.prune_horizon ELSE c.prune_horizon END,
		receipts_through = CASE WHEN c_through THEN cp.receipts_through ELSE c.receipts_through END,
		state = CASE WHEN c_state THEN cp.state ELSE c.state END,
		provider_token = CASE WHEN token_changed THEN token ELSE c.provider_token END,
		claimed_at = CASE WHEN claimed THEN transaction_timestamp() ELSE c.claimed_at END,
		read_gap_floor = CASE WHEN boundary_recorded THEN floor ELSE c.read_gap_floor END,
		updated_at = transaction_timestamp()
	 WHERE c.id = cp.id
	RETURNING c.id, c.consumer, c.stream, c."partition", c.criticality, c.provider, c.query_scope,
			  c.source_identity, c.generation, c.owner, NULL, c.source_cursor, c.read_base,
			  c.read_hash, c.read_count, c.applied_position, c.prune_horizon, c.receipts_through,
			  c.state, c.updated_at, c.created_at, c.claimed_at, c.applied_at, c.read_gap_floor,
			  c.receipt_ring
	  INTO w;
	RETURN w;
END
$$;
REVOKE ALL ON FUNCTION sog.cp_write(sog.checkpoint, sog.checkpoint, boolean, boolean, boolean, text) FROM PUBLIC;

-- SG001 unless generation is the checkpoint's current one.
CREATE FUNCTION sog.check_generation(cp sog.checkpoint, generation bigint, action text) RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
	IF generation < cp.generation THEN
		RAISE EXCEPTION 'checkpoint % is fenced', cp.id
			USING ERRCODE = 'SG001',
				  DETAIL = format('The %s carries generation %s, but generation %s %s%s%s took the checkpoint over at %s.',
								  action, generation, cp.generation,
								  CASE WHEN cp.owner IS NOT NULL THEN '(owner ' ELSE '(since released by its owner' END,
								  CASE WHEN cp.owner IS NOT NULL THEN sog.cut(cp.owner) ELSE '' END, ')',
								  coalesce(cp.claimed_at, cp.updated_at)),
				  HINT = format('Stop this worker; the new owner resumes from %s.',
								coalesce(cp.applied_position::text, 'the start of the stream'));
	ELSIF generation > cp.generation THEN
		RAISE EXCEPTION 'checkpoint % is fenced', cp.id
			USING ERRCODE = 'SG001',
				  DETAIL = format('The %s carries generation %s, which was never claimed; the current generation is %s.',
								  action, generation, cp.generation),
				  HINT = 'Use the generation returned by sog.claim().';
	END IF;
END
$$;
REVOKE ALL ON FUNCTION sog.check_generation(sog.checkpoint, bigint, text) FROM PUBLIC;

-- 22003 rather than let a generation wrap around.
CREATE FUNCTION sog.check_generation_room(cp sog.checkpoint) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF cp.generation = 9223372036854775807 THEN
		RAISE EXCEPTION 'generation of checkpoint % cannot grow further', cp.id
			USING ERRCODE = 'numeric_value_out_of_range',
				  DETAIL = format('The generation is %s, the largest bigint.', cp.generation),
				  HINT = 'Register the stream under a new consumer name; an UPDATE must have set this generation.';
	END IF;
END
$$;
REVOKE ALL ON FUNCTION sog.check_generation_room(sog.checkpoint) FROM PUBLIC;

-- SG004 for a position above the applied position of a checkpoint that is
-- replaying (an unverified gap) or failed_closed (an open gap).
CREATE FUNCTION sog.report_gap_pending(cp sog.checkpoint, pos sog.position) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	base text := coalesce(cp.read_base::text, 'start');
BEGIN
	IF cp.state = 'replaying' THEN
		RAISE EXCEPTION 'position % is beyond an unverified gap of checkpoint %', sog.pos_str(pos), cp.id
			USING ERRCODE = 'SG004',
				  DETAIL = format('The predecessor read through %s but applied only through %s; the records in (%s, %s] have not been verified.',
								  sog.pos_str(cp.source_cursor), sog.pos_str(cp.applied_position),
								  base, sog.pos_str(cp.source_cursor)),
				  HINT = format('Re-fetch (%s, %s], hash it and call sog.verify_gap() before applying or recovering newer events.',
								base, sog.pos_str(cp.source_cursor));
	END IF;
	RAISE EXCEPTION 'position % is beyond an unresolved gap of checkpoint %', sog.pos_str(pos), cp.id
		USING ERRCODE = 'SG004',
			  DETAIL = format('The checkpoint failed closed at applied position %s; records after it cannot be proven.',
							  sog.pos_str(cp.applied_position)),
			  HINT = 'An operator must resolve the gap (see sog.unresolved_gaps and sog.resolve_gap()).';
END
$$;
REVOKE ALL ON FUNCTION sog.report_gap_pending(sog.checkpoint, sog.position) FROM PUBLIC;

-- The read boundary (boundary.c): open, entered, its base, as text.
CREATE FUNCTION sog.boundary_open(cp sog.checkpoint) RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$ SELECT sog.pos_cmp(cp.source_cursor, cp.applied_position) > 0 $$;
REVOKE ALL ON FUNCTION sog.boundary_open(sog.checkpoint) FROM PUBLIC;

CREATE FUNCTION sog.boundary_entered(cp sog.checkpoint) RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$ SELECT sog.boundary_open(cp) AND sog.pos_cmp(cp.read_base, cp.applied_position) < 0 $$;
REVOKE ALL ON FUNCTION sog.boundary_entered(sog.checkpoint) FROM PUBLIC;

CREATE FUNCTION sog.boundary_base(cp sog.checkpoint) RETURNS sog.position
LANGUAGE sql IMMUTABLE
AS $$ SELECT CASE WHEN sog.boundary_entered(cp) THEN cp.read_base ELSE cp.applied_position END $$;
REVOKE ALL ON FUNCTION sog.boundary_base(sog.checkpoint) FROM PUBLIC;

CREATE FUNCTION sog.boundary_checkable(cp sog.checkpoint) RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$ SELECT (cp.read_hash IS NOT NULL OR cp.read_count IS NOT NULL) AND sog.boundary_open(cp) $$;
REVOKE ALL ON FUNCTION sog.boundary_checkable(sog.checkpoint) FROM PUBLIC;

CREATE FUNCTION sog.boundary_str(cp sog.checkpoint) RETURNS text
LANGUAGE sql IMMUTABLE
AS $$ SELECT format('(%s, %s]', coalesce(cp.read_base::text, 'start'), sog.pos_str(cp.source_cursor)) $$;
REVOKE ALL ON FUNCTION sog.boundary_str(sog.checkpoint) FROM PUBLIC;

-- The commit check (header): the row as the transaction left it, read
-- again; SG004 if its applied position is strictly inside its boundary.
-- SECURITY DEFINER: at COMMIT it runs as whoever commits, a consumer role
-- that may not read sog.checkpoint.
CREATE FUNCTION sog.checkpoint_left_applied() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cp sog.checkpoint;
BEGIN
	SELECT * INTO cp FROM sog.checkpoint c WHERE c.id = NEW.id;
	IF cp.id IS NULL OR NOT sog.boundary_entered(cp) THEN
		RETURN NULL;
	END IF;
	RAISE EXCEPTION 'read boundary % of checkpoint %/%/% is applied only through %',
		sog.boundary_str(cp), sog.cut(cp.consumer), sog.cut(cp.stream), sog.cut(cp."partition"),
		sog.pos_str(cp.applied_position)
		USING ERRCODE = 'SG004',
			  DETAIL = format('The transaction applied records of the read boundary noted %s but did not reach its cursor %s; a noted record missing below %s would never be checked against the boundary.',
							  CASE WHEN cp.read_hash IS NOT NULL THEN 'with a buffer hash'
								   WHEN cp.read_count IS NOT NULL THEN format('as %s records', cp.read_count)
								   ELSE 'without a hash or a count' END,
							  sog.pos_str(cp.source_cursor), sog.pos_str(cp.applied_position)),
			  HINT = format('Apply every record noted through %s in this transaction, or roll it back; a worker that no longer holds them rolls back and stops: its successor verifies %s and replays it.',
							sog.pos_str(cp.source_cursor), sog.boundary_str(cp));
END
$$;
COMMENT ON FUNCTION sog.checkpoint_left_applied() IS
	'portable edition: at commit, refuses (SG004) a transaction that left a read boundary partly applied';
REVOKE ALL ON FUNCTION sog.checkpoint_left_applied() FROM PUBLIC;
CREATE CONSTRAINT TRIGGER checkpoint_left_applied AFTER UPDATE ON sog.checkpoint
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
	WHEN (NEW.source_cursor IS NOT NULL
		  AND NEW.read_base IS DISTINCT FROM NEW.applied_position
		  AND NEW.applied_position IS DISTINCT FROM NEW.source_cursor)
	EXECUTE FUNCTION sog.checkpoint_left_applied();
-- it fires with session_replication_role = replica too, as the C edition's
-- check does (a transaction callback, which no setting turns off)
ALTER TABLE sog.checkpoint ENABLE ALWAYS TRIGGER checkpoint_left_applied;
