-- portable/claim.sql: ownership of a checkpoint and its handoff in PL/pgSQL
-- (the C edition: src/functions/claim.c): claim, halt, owner_check.
--
-- The decision boundary (claim, halt) is sog.evaluate_boundary (halt.sql):
-- read cursor against applied position, with the recorded buffer hash;
-- gaps that cannot be proven become rows of sog.gap (announced with NOTIFY
-- sog_gap at commit: gaps.sql), never an error that would roll the record
-- back.
--
-- Locking is the C edition's: claim and halt lock the checkpoint's row
-- (sog.cp_lock) before reading it; a claim waits for the previous owner's
-- open sink transaction and then sees its outcome (sog.claim_timeout bounds
-- that wait).  owner_check takes no lock.
--
-- What differs: owner_check reads the checkpoint's row on the statement's
-- snapshot, where the C edition reads the newest committed row; the same at
-- READ COMMITTED, and at REPEATABLE READ or SERIALIZABLE the row as the
-- transaction's snapshot saw it (a worker asks it in a transaction of its
-- own).
--
-- @entry sog.claim(bigint, text, text)
-- @entry sog.halt(bigint, bigint, sog.position, text, bigint)
-- @entry sog.owner_check(bigint, bigint)

-- The manifest of a checkpoint that already failed closed: the verdict of
-- its newest open gap (whose id is gap_id, 0 if there is none), resume from
-- the applied position, the gap size of the recorded boundary, and the
-- digest that verdict has (none for fail_closed, DIVERGED for a
-- divergence) (manifest_for_open_gap).
CREATE FUNCTION sog.claim_open_gap_manifest(cp sog.checkpoint, OUT gap_id bigint, OUT m sog.manifest)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	g record;
BEGIN
	SELECT * INTO g FROM sog.gap_newest_open(cp.id);
	gap_id := g.gap_id;
	IF gap_id = 0 THEN
		RETURN;
	END IF;
	IF g.verdict = 'unrecoverable_divergence' THEN
		-- evaluating "source behind sink" yields the DIVERGED manifest
		m := sog.evaluate_boundary(NULL, coalesce(cp.applied_position, '0'), NULL);
	ELSE
		m := sog.evaluate_boundary(cp.source_cursor, cp.applied_position, NULL);
		m.manifest_digest := NULL;
	END IF;
	m.verdict := g.verdict;
	m.resume_from := cp.applied_position;
END
$$;
REVOKE ALL ON FUNCTION sog.claim_open_gap_manifest(sog.checkpoint) FROM PUBLIC;

-- sog.claim(checkpoint_id, owner, source_identity): take over a checkpoint
-- (a new generation), evaluate its predecessor's boundary, log the
-- manifest, conclude the open recovery attempts, return the resume plan.
CREATE FUNCTION sog.claim_entry(caller_key uuid, checkpoint_id bigint, owner text, source_identity text)
	RETURNS sog.resume_plan
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.claim(bigint, text, text)');
	cp sog.checkpoint;
	orig sog.checkpoint;
	cursor sog.position;
	identity text := source_identity;
	m sog.manifest;
	o record;
	gap_id bigint := 0;
	verify_from sog.position;
	verify_to sog.position;
	expected_hash text;
	expected_count bigint;
	plan sog.resume_plan;
BEGIN
	PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
	IF sog.is_blank(owner) THEN
		RAISE EXCEPTION 'owner must not be blank'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'The owner names the worker that claims the checkpoint.',
				  HINT = 'Pass a worker name, for example host and process id.';
	END IF;

	cp := sog.cp_lock(checkpoint_id, 1, true);
	orig := cp;
	PERFORM sog.check_generation_room(cp);

	cp.generation := cp.generation + 1;
	cp.owner := owner;
	cursor := cp.source_cursor;

	-- claim_evaluate: the predecessor's boundary
	IF identity IS NOT NULL AND cp.source_identity IS NOT NULL AND identity <> cp.source_identity THEN
		-- checked on every claim, whatever the state: a different source
		-- behind the same name, a divergence; its gap is recorded unless one
		-- is open (claim_identity_changed)
		gap_id := sog.gap_open_with_reason(cp.id, 'identity_changed');
		m := sog.evaluate_boundary(NULL, coalesce(cp.applied_position, '0'), NULL);
		m.resume_from := cp.applied_position;
		IF gap_id = 0 THEN
			gap_id := sog.gap_record(cp, 'identity_changed', m.verdict, sog.boundary_base(cp),
				CASE WHEN sog.pos_cmp(cp.source_cursor, cp.applied_position) > 0 THEN cp.source_cursor END,
				format('claimed with source identity "%s"; registered "%s"',
					   sog.cut(identity), sog.cut(cp.source_identity)));
		END IF;
		cp.state := 'failed_closed';
	ELSE
		IF cp.state = 'failed_closed' THEN
			o := sog.claim_open_gap_manifest(cp);
			gap_id := o.gap_id;
			m := o.m;
		END IF;
		IF gap_id = 0 THEN
			IF identity IS NOT NULL AND cp.source_identity IS NULL THEN
				cp.source_identity := identity;		-- first sighting
			END IF;
			m := sog.evaluate_boundary(cursor, cp.applied_position, cp.read_hash);
			IF m.verdict = 'aligned' THEN
				cp.state := 'running';
			ELSIF m.verdict = 'gap_replay_required' THEN
				cp.state := 'replaying';
				verify_from := cp.read_base;
				verify_to := cursor;
				expected_hash := cp.read_hash;
				expected_count := cp.read_count;
			ELSE				-- fail_closed, unrecoverable_divergence
				gap_id := sog.gap_record(cp,
					CASE WHEN m.verdict = 'fail_closed' THEN 'no_buffer_hash' ELSE 'divergence' END,
					m.verdict, sog.boundary_base(cp),
					CASE WHEN m.verdict = 'unrecoverable_divergence' THEN NULL ELSE cursor END, NULL);
				cp.state := 'failed_closed';
			END IF;
		END IF;
	END IF;

	PERFORM sog.manifest_record(cp, 'claim', cursor, cp.read_hash, cp.read_count, m, gap_id, NULL);
	cp := sog.cp_write(cp, orig, true, false, false, NULL);
	PERFORM sog.recovery_fence_open(cp, 0);	-- the new generation fences them

	plan := ROW(cp.id, cp.generation, m.verdict, m.resume_from, verify_from, verify_to,
				expected_hash, expected_count, m.gap_size, sog.cp_token(cp.id), m.manifest_digest,
				nullif(gap_id, 0))::sog.resume_plan;
	PERFORM sog.leave(outer_caller);
	RETURN plan;
END
$$;
GRANT EXECUTE ON FUNCTION sog.claim_entry(uuid, bigint, text, text) TO PUBLIC;

-- sog.halt(checkpoint_id, generation, source_cursor, buffer_hash,
-- buffered_count): a graceful handoff; records the read boundary,
-- evaluates it, logs the manifest and releases ownership.  A NULL
-- source_cursor means "nothing read beyond what is recorded".
CREATE FUNCTION sog.halt_entry(caller_key uuid, checkpoint_id bigint, generation bigint,
							   source_cursor sog.position, buffer_hash text, buffered_count bigint)
	RETURNS sog.manifest
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.halt(bigint, bigint, sog.position, text, bigint)');
	cp sog.checkpoint;
	orig sog.checkpoint;
	cursor sog.position;
	hash text := buffer_hash;
	count bigint := buffered_count;
	b record;
	o record;
	m sog.manifest;
	gap_id bigint := 0;
	open_gap bigint := 0;
BEGIN
	PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
	PERFORM sog.require_arg(generation IS NULL, 2, 'generation');
	PERFORM sog.check_buffer_hash('buffer_hash', hash);
	IF count < 0 THEN
		PERFORM sog.check_buffered_count(count, NULL, NULL);
	END IF;

	cp := sog.cp_lock(checkpoint_id, 1, false);
	orig := cp;
	PERFORM sog.check_generation(cp, generation, 'halt');

	cursor := source_cursor;
	IF cursor IS NOT NULL AND cp.state = 'running' AND count IS NOT NULL THEN
		PERFORM sog.check_buffered_count(count, cursor, cp.applied_position);
	END IF;

	-- The boundary handed over: the halt's own, or one still open as it was
	-- noted (a gap is pending, nothing new was read, or records noted
	-- earlier are not applied: boundary.sql).
	SELECT * INTO b FROM sog.boundary_halt(cp, cursor, hash, count);
	cp := b.cp_out;
	cursor := b.cursor_out;
	hash := b.hash_out;
	count := b.count_out;

	IF cp.state = 'failed_closed' THEN
		o := sog.claim_open_gap_manifest(cp);
		open_gap := o.gap_id;
		m := o.m;			-- hand over the open gap's verdict
	END IF;
	IF open_gap = 0 THEN
		m := sog.evaluate_boundary(cursor, cp.applied_position, hash);
	END IF;
	IF cp.state = 'running' AND m.verdict IN ('fail_closed', 'unrecoverable_divergence') THEN
		gap_id := sog.gap_record(cp,
			CASE WHEN m.verdict = 'fail_closed' THEN 'no_buffer_hash' ELSE 'divergence' END,
			m.verdict, sog.boundary_base(cp),
			CASE WHEN m.verdict = 'unrecoverable_divergence' THEN NULL ELSE cursor END, NULL);
		cp.state := 'failed_closed';
	END IF;
	PERFORM sog.manifest_record(cp, 'halt', cursor, hash, count, m, gap_id,
		CASE WHEN b.kept THEN format('the read boundary %s noted earlier is not applied: handed over as noted, not as the halt gave it',
									 sog.boundary_str(cp)) END);
	cp.owner := NULL;			-- released
	PERFORM sog.cp_write(cp, orig, false, b.recorded, false, NULL);
	PERFORM sog.leave(outer_caller);
	RETURN m;
END
$$;
GRANT EXECUTE ON FUNCTION sog.halt_entry(uuid, bigint, bigint, sog.position, text, bigint) TO PUBLIC;

-- sog.owner_check(checkpoint_id, generation): true when generation is the
-- checkpoint's current one and its owner has not halted.  Takes no lock,
-- never waits for a sink transaction, and works on a hot standby.
CREATE FUNCTION sog.owner_check_entry(caller_key uuid, checkpoint_id bigint, generation bigint)
	RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.owner_check(bigint, bigint)');
	consumer text;
	current bigint;
	owned boolean;
BEGIN
	PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
	PERFORM sog.require_arg(generation IS NULL, 2, 'generation');
	SELECT c.consumer, c.generation, c.owner IS NOT NULL INTO consumer, current, owned
	  FROM sog.checkpoint c WHERE c.id = owner_check_entry.checkpoint_id;
	IF NOT FOUND THEN
		PERFORM sog.report_unknown_checkpoint(owner_check_entry.checkpoint_id, 3);
	END IF;
	PERFORM sog.check_access(owner_check_entry.checkpoint_id, consumer, 3);
	PERFORM sog.leave(outer_caller);
	RETURN current = generation AND owned;
END
$$;
GRANT EXECUTE ON FUNCTION sog.owner_check_entry(uuid, bigint, bigint) TO PUBLIC;
