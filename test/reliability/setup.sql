-- test/reliability/setup.sql: the workload's database (run as the superuser
-- by run.sh, with psql variables parts, events and portable: on when run.sh
-- has installed the portable edition's plain script in it, off for CREATE
-- EXTENSION).
--
-- rel.source  the "provider": events by (part, pos), positions 1..events,
--             payloads with random bytes; retention marks rows trimmed
--             instead of deleting them, so the checker still knows them.
-- rel.sink    the consumers' sink: one row per applied event, with the
--             writer's generation and the tag of its transaction; no unique
--             index, so a duplicate is a second row and not an error.
-- rel.optag   one row per committed driver transaction: an operation whose
--             COMMIT outcome was unknown is resolved by its tag.
\set ON_ERROR_STOP 1
\if :portable
-- installed already, by its owner rel_owner (scenarios.sh, install_portable)
SELECT version FROM sog.portable_version;
\else
CREATE EXTENSION stream_offset_guard;
\endif
CREATE SCHEMA rel;
CREATE TABLE rel.source (
	part int NOT NULL,
	pos bigint NOT NULL,
	payload bytea NOT NULL,
	trimmed boolean NOT NULL DEFAULT false,
	PRIMARY KEY (part, pos)
);
CREATE TABLE rel.sink (
	part int NOT NULL,
	pos bigint NOT NULL,
	payload bytea NOT NULL,
	gen bigint NOT NULL,
	tag text NOT NULL
);
CREATE INDEX sink_part_pos ON rel.sink (part, pos);
CREATE TABLE rel.optag (
	tag text PRIMARY KEY,
	kind text NOT NULL,
	cp bigint,
	gen bigint
);
-- Partition 3 is sparse, like Kafka offsets after compaction or with
-- transaction markers: no position divisible by 3 (1, 2, 4, 5, 7, ...).
INSERT INTO rel.source (part, pos, payload)
SELECT p, g, convert_to(format('p%s:%s:', p, g), 'UTF8')
		 || decode(md5(p::text || ':' || g::text || ':' || random()::text), 'hex')
		 || decode(repeat(md5(random()::text), (g % 3)::int), 'hex')
  FROM generate_series(0, :parts - 1) p,
	   generate_series(1, CASE WHEN p = 3 THEN :events * 3 / 2 ELSE :events END) g
 WHERE p <> 3 OR g % 3 <> 0;
ANALYZE rel.source;

CREATE ROLE rel_consumer LOGIN;
CREATE ROLE rel_operator LOGIN;
SELECT sog.grant_consumer('rel_consumer');
SELECT sog.grant_operator('rel_operator');
GRANT USAGE ON SCHEMA rel TO rel_consumer, rel_operator;
GRANT SELECT ON rel.source TO rel_consumer, rel_operator;
GRANT UPDATE (trimmed) ON rel.source TO rel_operator;
GRANT INSERT ON rel.sink, rel.optag TO rel_consumer;
