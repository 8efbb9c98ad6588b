-- corpus_oracle.sql: the fuzzer's corpus through the server's input function
-- of sog.position, judged by the contract's grammar written in PL/pgSQL,
-- independently of the C parser.  Run by test/run-tests.sh as
--   psql -v dir=<directory of corpus files> -f test/fuzz/corpus_oracle.sql
-- A corpus input that is valid UTF-8 without a NUL byte (what text can hold)
-- must either be accepted, with the canonical text the reference computes,
-- or be rejected with 22P02; any other error or a disagreement counts as
-- wrong.  Prints one line: accepted rejected skipped wrong.
CREATE EXTENSION stream_offset_guard;
SELECT set_config('sog_test.dir', :'dir', false) \gset
CREATE TEMP TABLE fuzz_result (accepted int, rejected int, skipped int, failed int);
DO $$
DECLARE
	dir text := current_setting('sog_test.dir');
	ws text := ' ' || chr(9) || chr(10) || chr(11) || chr(12) || chr(13);
	f text;
	raw bytea;
	txt text;
	trimmed text;
	ref_ok boolean;
	ref_canon text;
	canon text;
	n_acc int := 0;
	n_rej int := 0;
	n_skip int := 0;
	n_fail int := 0;
BEGIN
	FOR f IN SELECT d FROM pg_catalog.pg_ls_dir(dir) AS d ORDER BY d LOOP
		raw := pg_catalog.pg_read_binary_file(dir || '/' || f);
		IF position('\x00'::bytea IN raw) > 0 THEN
			n_skip := n_skip + 1;
			CONTINUE;
		END IF;
		BEGIN
			txt := pg_catalog.convert_from(raw, 'UTF8');
		EXCEPTION WHEN character_not_in_repertoire THEN
			n_skip := n_skip + 1;
			CONTINUE;
		END;

		-- the contract's grammar, independently of the C code
		trimmed := pg_catalog.btrim(txt, ws);
		ref_ok := trimmed ~ '^[0-9]+(-[0-9]+){0,7}$'
			AND NOT EXISTS (SELECT FROM pg_catalog.unnest(pg_catalog.string_to_array(trimmed, '-')) AS c
							WHERE pg_catalog.length(pg_catalog.ltrim(c, '0')) > 160);
		ref_canon := NULL;
		IF ref_ok THEN
			SELECT pg_catalog.string_agg(COALESCE(NULLIF(pg_catalog.ltrim(c, '0'), ''), '0'), '-' ORDER BY i)
			  INTO ref_canon
			  FROM pg_catalog.unnest(pg_catalog.string_to_array(trimmed, '-')) WITH ORDINALITY AS u(c, i);
		END IF;

		BEGIN
			canon := CAST(CAST(txt AS sog.position) AS text);
			n_acc := n_acc + 1;
			IF NOT ref_ok OR canon IS DISTINCT FROM ref_canon THEN
				n_fail := n_fail + 1;
				IF n_fail <= 20 THEN RAISE WARNING 'corpus input % (hex %) was accepted as "%", but the contract says %',
					f, pg_catalog.encode(raw, 'hex'), canon,
					CASE WHEN ref_ok THEN '"' || ref_canon || '"' ELSE 'it is invalid' END; END IF;
			ELSIF CAST(canon AS sog.position) OPERATOR(sog.<>) CAST(txt AS sog.position) THEN
				n_fail := n_fail + 1;
				IF n_fail <= 20 THEN RAISE WARNING 'corpus input % (hex %): its canonical text is a different position',
					f, pg_catalog.encode(raw, 'hex'); END IF;
			END IF;
		EXCEPTION
			WHEN invalid_text_representation THEN
				n_rej := n_rej + 1;
				IF ref_ok THEN
					n_fail := n_fail + 1;
					IF n_fail <= 20 THEN RAISE WARNING 'corpus input % (hex %) was rejected, but the contract accepts it as "%"',
						f, pg_catalog.encode(raw, 'hex'), ref_canon; END IF;
				END IF;
			WHEN OTHERS THEN
				n_fail := n_fail + 1;
				IF n_fail <= 20 THEN RAISE WARNING 'corpus input % (hex %): unexpected error %: %',
					f, pg_catalog.encode(raw, 'hex'), SQLSTATE, SQLERRM; END IF;
		END;
	END LOOP;
	INSERT INTO fuzz_result VALUES (n_acc, n_rej, n_skip, n_fail);
END
$$;
SELECT accepted, rejected, skipped, failed FROM fuzz_result;
