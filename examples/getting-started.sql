-- Five minutes in psql: a replay refused, a zombie fenced.
CREATE EXTENSION stream_offset_guard;
CREATE TABLE orders (pos bigint PRIMARY KEY, body text NOT NULL);

-- A consumer of partition 0 of stream "orders" registers its checkpoint and
-- claims it: generation 1, nothing applied yet.
SELECT id FROM sog.register('orders-sink', 'orders', '0');
SELECT generation, verdict, resume_from FROM sog.claim(1, 'worker-a');

-- Its sink transaction: the rows, their receipts and the applied position
-- commit together.  sog.apply answers true for a new event.
BEGIN;
INSERT INTO orders
SELECT pos, body FROM (VALUES (1, 'first'), (2, 'second')) AS e(pos, body)
 WHERE sog.apply(1, 1, pos, sog.payload_digest(convert_to(body, 'UTF8')));
COMMIT;

-- The broker delivers event 2 again (a restart, a rebalance): false, and
-- nothing is written twice.
SELECT sog.apply(1, 1, 2, sog.payload_digest(convert_to('second', 'UTF8')));

-- worker-b takes the partition over and resumes after what was applied ...
SELECT generation, verdict, resume_from FROM sog.claim(1, 'worker-b');

-- ... and worker-a, paused, not dead, writes again: fenced.
SELECT sog.apply(1, 1, 3, sog.payload_digest(convert_to('third', 'UTF8')));

SELECT applied_position, generation, owner FROM sog.status;
