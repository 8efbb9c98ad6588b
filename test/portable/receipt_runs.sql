-- test/portable/receipt_runs.sql: the runs of receipts both editions store
-- (test/portable/receipts_c.sql, receipts_portable.sql), each a strictly
-- increasing list of positions: dense and sparse, below and beyond 2^64,
-- tuples, long components (two-byte length prefixes), runs split into
-- rows of 3,900 bytes.
CREATE TEMP TABLE runs (k int PRIMARY KEY, positions text[]);
INSERT INTO runs VALUES
	(1, ARRAY(SELECT g::text FROM generate_series(1, 10) g)),
	(2, ARRAY(SELECT (18446744073709551600::numeric + g)::text FROM generate_series(0, 15) g)),
	(3, ARRAY(SELECT (18446744073709551610::numeric + g)::text FROM generate_series(0, 9) g)),
	(4, ARRAY['100', '102', '105']),
	(5, ARRAY['5-1', '5-2', '6-0', '7']),
	(6, ARRAY(SELECT (1000 + 2 * g)::text FROM generate_series(0, 299) g)),
	(7, ARRAY(SELECT repeat('7', 160) || '-' || g || '-' || repeat('3', 159) FROM generate_series(1, 3) g)),
	(8, ARRAY(SELECT array_to_string(array_fill(repeat('9', 159) || g, ARRAY[8]), '-') FROM generate_series(1, 9) g)),
	(9, ARRAY['9-9']),
	(10, ARRAY['0']),
	(11, ARRAY(SELECT g::text FROM generate_series(0, 249) g)),
	(12, ARRAY['0', '1', '3']);
