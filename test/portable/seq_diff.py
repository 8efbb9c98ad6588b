#!/usr/bin/python3
"""
test/portable/seq_diff.py: a stateful differential test of two editions of
stream_offset_guard (docs/portable.md).

It connects to two databases (A and B) that both have the extension in
schema sog, sets up the same fixture in both, and sends the same random
call sequences to both, session by session, step by step.  After every
call it compares the answer (rows, or the error's SQLSTATE, message, detail
and hint, and the NOTICEs/WARNINGs the call raised); after every step the
state of the sequence's checkpoints; at the end of each sequence a
canonical dump of every table of schema sog (and of the sink the fake
consumer writes its effects to).  Volatile values are masked: timestamps,
OIDs, cluster identifiers, backend pids, prepared-transaction names; ids
drawn from sequences are compared modulo a consistent renumbering (B's
sequences are pushed ahead at the start so that the renumbering is always
exercised).

The generator plays correct and wrong clients: several workers on the same
checkpoint (zombies with stale generations), claims, note_read with right
and wrong hashes, whole pages in one call (apply_run_page, apply_batch_page:
the apply, the next page's note and the token's swap, right and wrong),
short applies, applies past the cursor, replays, positions
going backwards, savepoints and transactions rolled back, halts, verify /
skip / report / resolve gaps in right and wrong states, commit_page tokens,
expired-token recoveries, reconfigure, prune, retention, the receipt ring
(rotate_receipts and CALL prune_due between the other calls), roles
without a grant, scoped to another consumer, operators; bad arguments.  Sessions never
wait for each other: a call that would wait on another session's lock runs
with a short sog.claim_timeout / lock_timeout, so the wait is an error
(55P03) in both.

    seq_diff.py --a CONNINFO --b CONNINFO [--seed N] [--sequences K]
                [--calls M] [--report FILE] [--require-coverage]
                [--skip CATEGORY,...] [--selftest] [--verbose]

Exit status 0: no difference (and, with --require-coverage, every verdict
and SQLSTATE of the coverage list reached); 1: a difference (printed with
the seed, sequence, step, call and both answers), or missing coverage;
2: usage or setup error.  --selftest plants a difference in B only
(--plant trigger: a BEFORE UPDATE trigger on sog.gap that appends to the
note of a gap resolved as accepted_loss; --plant grant: B's scoped role
is granted the other consumer) and passes only if the comparison reports
a difference that shows it.  See seq_README.md.
"""

import argparse
import concurrent.futures
import datetime
import decimal
import json
import random
import re
import sys
import time
import uuid

import psycopg
from psycopg import pq

# ---------------------------------------------------------------------------
# the coverage list: every verdict string and SQLSTATE of the stateful calls
# (CONTRACT.md sections 4 to 11, README's SQLSTATE table)

REQUIRED = (
    ['verdict:' + v for v in ('aligned', 'gap_replay_required', 'fail_closed',
                              'unrecoverable_divergence')]
    + ['halt:' + v for v in ('aligned', 'gap_replay_required', 'fail_closed',
                             'unrecoverable_divergence')]
    + ['state:' + s for s in ('running', 'replaying', 'failed_closed')]
    + ['apply:true', 'apply:false', 'verify_gap:true', 'verify_gap:false']
    + ['recovery_event:' + s for s in ('verified', 'apply', 'duplicate', 'mismatch',
                                       'unverifiable', 'coverage_gap')]
    + ['promote:' + s for s in ('promoted', 'already_promoted', 'lost', 'unresolved',
                                'page_incomplete', 'empty_page_not_barrier')]
    + ['begin_recovery:open'] + ['begin_recovery:failed:' + s for s in (
        'scope_changed', 'retention', 'receipts_pruned', 'coverage_unproven', 'no_finality')]
    + ['gap_reason:' + r for r in (
        'no_buffer_hash', 'hash_mismatch', 'divergence', 'identity_changed', 'retention',
        'scope_changed', 'coverage_unproven', 'no_finality', 'receipts_pruned', 'mismatch',
        'unverifiable', 'coverage_gap')]
    + ['resolution:' + r for r in ('replayed', 'accepted_loss', 'skipped_telemetry')]
    + ['sqlstate:' + s for s in ('SG001', 'SG002', 'SG003', 'SG004', 'SG005', 'SG006', 'SG007',
                                 '22P02', '22023', '42501', '55000', '55P03', '40001', '25006', '23514')]
    # the receipt ring (1.2): what sog.rotate_receipts() did
    + ['ring:' + s for s in ('placed', 'turned', 'emptied', 'moved_out')]
)

TS_RE = re.compile(r'\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d(:?\d\d)?)?')
ID_RES = [
    ('cp', re.compile(r'(sog\.checkpoint has id|[Cc]heckpoint|receipt_ring = 0 WHERE id =) (\d+)')),
    ('gap', re.compile(r'(sog\.gap has id|[Gg]ap) (\d+)')),
    ('rec', re.compile(r'(sog\.recovery has id|[Rr]ecovery attempt) (\d+)')),
]
BOGUS_IDS = (0, -1, -9223372036854775808, 9223372036854775807, 987654321012)


class Difference(Exception):
    pass


class SetupError(Exception):
    pass


class Sym:
    """A symbolic id: the n-th id of a kind (cp, gap, rec) the run saw; each
    side resolves it to its own value."""
    __slots__ = ('kind', 'n')

    def __init__(self, kind, n):
        self.kind, self.n = kind, n

    def __repr__(self):
        return '%s#%d' % (self.kind, self.n)

    def __eq__(self, o):
        return isinstance(o, Sym) and (o.kind, o.n) == (self.kind, self.n)

    def __hash__(self):
        return hash((self.kind, self.n))


class Op:
    def __init__(self, sess, sql, params=(), ids=None, tag=None):
        self.sess, self.sql, self.params = sess, sql, tuple(params)
        self.ids = ids or {}        # result column -> id kind
        self.tag = tag              # coverage: how to read the answer

    def show(self):
        ps = ', '.join(repr(p) if not isinstance(p, (bytes, bytearray)) else '\\x' + p.hex()
                       for p in self.params)
        return '[%s] %s  -- (%s)' % (self.sess, self.sql, ps)


class Res:
    """A's answer, normalized (ids as symbols)."""
    def __init__(self, ok, rows=None, cols=None, err=None):
        self.ok, self.rows, self.cols, self.err = ok, rows or [], cols or [], err

    @property
    def state(self):
        return None if self.ok else self.err[0]

    def one(self):
        return self.rows[0][0] if self.ok and self.rows else None

    def row(self):
        return dict(zip(self.cols, self.rows[0])) if self.ok and self.rows else None


# ---------------------------------------------------------------------------
# one side: a database with its sessions

ROLES = {'w1': 'seq_cons', 'w2': 'seq_cons', 'w3': 'seq_cons', 'ws': 'seq_scoped',
         'wo': 'seq_oper', 'wn': 'seq_none', 'su': None}


class Side:
    def __init__(self, name, conninfo, tag):
        self.name, self.conninfo, self.tag = name, conninfo, tag
        self.conns = {}
        self.notices = []
        self.notifies = []
        self.v2s = {'cp': {}, 'gap': {}, 'rec': {}}      # value -> sym number
        self.s2v = {'cp': {}, 'gap': {}, 'rec': {}}
        self.obs = None

    def connect(self, superuser):
        self.superuser = superuser
        self.obs = psycopg.connect(self.conninfo, autocommit=True)
        self.obs.add_notify_handler(lambda n: self.notifies.append(n.payload))
        self.obs.execute('LISTEN sog_gap')
        for s, role in ROLES.items():
            c = psycopg.connect(self.conninfo, user=role or superuser, autocommit=True,
                                application_name='seq_' + s)
            c.add_notice_handler(self._notice)
            c.execute("SET lock_timeout = '3s'")
            c.execute("SET search_path = public")
            self.conns[s] = c

    def _notice(self, d):
        self.notices.append((d.severity_nonlocalized, d.sqlstate, d.message_primary,
                             d.message_detail, d.message_hint))

    def close(self):
        for c in list(self.conns.values()) + [self.obs]:
            try:
                c.close()
            except Exception:
                pass

    # ids
    def symtxt(self, kind, v):
        n = self.v2s[kind].get(v)
        return '%s#%d' % (kind, n) if n is not None else '%s#?%d' % (kind, v)

    def resolve(self, p):
        if isinstance(p, Sym):
            return self.s2v[p.kind].get(p.n)
        if isinstance(p, list):
            return [self.resolve(x) for x in p]
        return p

    def mask(self, s):
        if s is None:
            return None
        s = TS_RE.sub('T', s)
        s = re.sub(r'backend \d+', 'backend PID', s)
        s = re.sub(r'\(pid \d+\)', '(pid PID)', s)   # rotate_receipts: an older snapshot's session
        s = re.sub(r'pg_terminate_backend\(\d+\)', 'pg_terminate_backend(PID)', s)
        s = re.sub(r'seq_[ab]_[0-9a-f]{8}_(\d+)', r'seq_X_\1', s)
        for kind, rx in ID_RES:
            s = rx.sub(lambda m: m.group(1) + ' ' + self.symtxt(kind, int(m.group(2))), s)
        return s


def norm_value(v):
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, (bytes, bytearray, memoryview)):
        return '\\x' + bytes(v).hex()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time, datetime.timedelta)):
        return 'T'
    if isinstance(v, uuid.UUID):
        return 'UUID'
    if isinstance(v, (list, tuple)):
        return [norm_value(x) for x in v]
    return str(v)


# ---------------------------------------------------------------------------
# the runner: executes each op on both sides and compares

class Runner:
    def __init__(self, a, b, args):
        self.a, self.b, self.args = a, b, args
        self.seq = 0
        self.step = 0
        self.ncalls = 0
        self.cov = {}
        self.log = []           # the current sequence's calls, for the report
        self.gid_n = 0
        self.bugs = []
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    def hit(self, key, n=1):
        self.cov[key] = self.cov.get(key, 0) + n

    def _exec(self, side, op):
        c = side.conns[op.sess]
        side.notices.clear()
        sql = op.sql.replace('{gid}', 'seq_%s_%s_%d' % (side.tag, RUN_ID, self.gid_n))
        params = tuple(side.resolve(p) for p in op.params)
        try:
            cur = c.execute(sql, params)
            cols, rows = [], []
            if cur.description:
                cols = [d.name for d in cur.description]
                rows = [list(r) for r in cur.fetchall()]
            out = ('ok', cols, rows)
        except psycopg.Error as e:
            d = e.diag
            if d.sqlstate is None:
                raise SetupError('%s: connection error on %s: %s' % (side.name, op.show(), e))
            out = ('err', d.sqlstate, side.mask(d.message_primary), side.mask(d.message_detail),
                   side.mask(d.message_hint))
        notices = [tuple(side.mask(x) if isinstance(x, str) else x for x in n)
                   for n in side.notices]
        return out, notices

    def run(self, op):
        self.ncalls += 1
        # both sides at once (each side's sessions are its own; nothing is shared)
        fa = self.pool.submit(self._exec, self.a, op)
        rb, nb = self._exec(self.b, op)
        ra, na = fa.result()
        self.log.append(op.show())
        if ra[0] != rb[0]:
            why = self.accepted_ok(ra, rb) if self.args.portable_b else None
            if not why:
                self.differ(op, ra, rb, na, nb)
            self.hit('accepted:' + why)
            rb, nb = ra, na
        if ra[0] == 'err':
            if ra != rb and self.pair_unknown(ra, rb):
                ra, na = self._exec_again(self.a, op, ra, na)
                rb, nb = self._exec_again(self.b, op, rb, nb)
            if ra != rb and self.args.portable_b:
                why = self.accepted(ra, rb)
                if why:
                    self.hit('accepted:' + why)
                    ra = rb
            if ra != rb:
                self.differ(op, ra, rb, na, nb)
            res = Res(False, err=ra[1:])
            self.hit('sqlstate:' + ra[1])
            self.check_error(op, ra)
            if op.tag:
                self.hit('call:%s:error' % op.tag)
        else:
            cols = ra[1]
            if cols != rb[1] or len(ra[2]) != len(rb[2]):
                self.differ(op, ra, rb, na, nb)
            rows = []
            for xa, xb in zip(ra[2], rb[2]):
                row = []
                for col, va, vb in zip(cols, xa, xb):
                    kind = op.ids.get(col)
                    if kind and va is not None and vb is not None:
                        sa, sb = self.a.v2s[kind].get(va), self.b.v2s[kind].get(vb)
                        if sa is None and sb is None:
                            n = len(self.a.s2v[kind]) + 1
                            while n in self.a.s2v[kind] or n in self.b.s2v[kind]:
                                n += 1
                            self.pair(kind, va, vb, n)
                            sa = sb = n
                        if sa != sb:
                            self.differ(op, ra, rb, na, nb, why='%s ids %s (A) and %s (B) are not the same object' % (kind, va, vb))
                        row.append(Sym(kind, sa))
                    else:
                        xa = self.a.mask(va) if isinstance(va, str) else norm_value(va)
                        xb = self.b.mask(vb) if isinstance(vb, str) else norm_value(vb)
                        if xa != xb:
                            self.differ(op, ra, rb, na, nb, why='column %s' % col)
                        row.append(xa)
                rows.append(row)
            res = Res(True, rows, cols)
            if op.tag:
                self.hit('call:%s:ok' % op.tag)
                self.cover(op.tag, res)
        if na != nb:
            self.differ(op, ra, rb, na, nb, why='notices')
        res.notices = na
        if self.args.trace:
            print('%d.%d %s\n      -> %s' % (self.seq, self.step, op.show(),
                  ('%s %s | %s' % res.err[:3]) if not res.ok else res.rows[:3]))
        return res

    # The portable edition's documented differences (docs/portable.md,
    # test/portable/expected/README.md), the only ones accepted, and only
    # with --portable-b.  At REPEATABLE READ and SERIALIZABLE the C edition
    # locks the newest version of a checkpoint's row and answers from it
    # (SG001, SG003), refusing a write of a version newer than the snapshot
    # with 40001 whose detail names that version's generation and applied
    # position; PL/pgSQL locks through SELECT ... FOR NO KEY UPDATE, which
    # refuses such a row at once (40001, without the newer version's
    # values, which its snapshot cannot read).  Either way nothing is
    # written and the transaction is aborted.
    RR_DETAIL = re.compile(r' \(generation \d+, applied through [^)]*\)')

    def accepted(self, ra, rb):
        if ra[0] == rb[0] == 'err' and rb[1] == '40001' and \
                rb[2].startswith('could not serialize access to checkpoint '):
            if ra[1] in ('SG001', 'SG003'):
                return 'rr_newest_version_answer'
            if ra[1] == '40001' and (ra[2], self.RR_DETAIL.sub('', ra[3] or ''), ra[4]) == tuple(rb[2:5]):
                return 'rr_detail_without_newest_version'
        return None

    def accepted_ok(self, ra, rb):
        """The same difference when the C edition's answer from the newest
        version writes nothing: an apply whose every event is a duplicate or
        at or below the (newer) prune horizon answers false there and
        commits; here the lock refuses the row at once (40001), and the
        transaction, which wrote nothing either, rolls back."""
        if ra[0] == 'ok' and rb[0] == 'err' and rb[1] == '40001' and \
                rb[2].startswith('could not serialize access to checkpoint ') and \
                ra[1] and ra[1][0] in ('apply', 'apply_batch', 'apply_batch_int8') and \
                len(ra[2]) == 1 and len(ra[2][0]) == 1 and \
                boolflags(ra[2][0][0]) and not any(boolflags(ra[2][0][0])):
            return 'rr_newest_version_nothing_written'
        return None

    UNKNOWN = re.compile(r'(cp|gap|rec)#\?(-?\d+)')

    def pair_unknown(self, ra, rb):
        """An error names ids neither side has seen (an existing checkpoint
        of another run, say): pair them when the texts are otherwise equal."""
        ta, tb = repr(ra), repr(rb)
        ua, ub = self.UNKNOWN.findall(ta), self.UNKNOWN.findall(tb)
        if not ua or len(ua) != len(ub) or self.UNKNOWN.sub('?', ta) != self.UNKNOWN.sub('?', tb):
            return False
        for (ka, va), (kb, vb) in zip(ua, ub):
            if ka != kb:
                return False
            va, vb = int(va), int(vb)
            if va in self.a.v2s[ka] or vb in self.b.v2s[kb]:
                continue
            n = len(self.a.s2v[ka]) + 1
            while n in self.a.s2v[ka] or n in self.b.s2v[ka]:
                n += 1
            self.pair(ka, va, vb, n)
        return True

    def _exec_again(self, side, op, r, notices):
        """Re-mask an answer after new ids were paired."""
        def re_mask(t):
            return self.UNKNOWN.sub(lambda m: side.symtxt(m.group(1), int(m.group(2))), t) if isinstance(t, str) else t
        return tuple(re_mask(x) for x in r), [tuple(re_mask(x) for x in n) for n in notices]

    def pair(self, kind, va, vb, n):
        self.a.v2s[kind][va] = n
        self.a.s2v[kind][n] = va
        self.b.v2s[kind][vb] = n
        self.b.s2v[kind][n] = vb

    def cover(self, tag, res):
        r = res.row()
        if tag == 'claim' and r:
            self.hit('verdict:%s' % r['verdict'])
        elif tag == 'halt' and r:
            self.hit('halt:%s' % r['verdict'])
        elif tag in ('apply', 'verify_gap') and r:
            self.hit('%s:%s' % (tag, str(res.one()).lower()))
        elif tag in ('apply_batch', 'apply_batch_int8', 'apply_batch_page') and r and res.one() is not None:
            for x in boolflags(res.one()):
                self.hit('apply:%s' % ('true' if x else 'false'))
        elif tag == 'recovery_event' and r:
            self.hit('recovery_event:%s' % res.one())
        elif tag == 'promote' and r:
            self.hit('promote:%s' % r['reason'])
        elif tag == 'begin_recovery' and r:
            self.hit('begin_recovery:%s%s' % (r['state'], ':' + r['failure'] if r['failure'] else ''))
        elif tag == 'rotate_receipts' and r:
            self.ring_cover(res.one())

    RING_DID = (('emptied sog.receipt_', 'emptied'), ('is in use', 'busy'), ('held sog.receipt_', 'moved_out'),
                ('waits for a transaction older', 'older_snapshot'), ('is not emptied', 'blind'),
                ('receipts now go to', 'turned'), ('checkpoints moved to their partition', 'placed'))

    def ring_cover(self, did):
        """What sog.rotate_receipts() said it did (NULL: nothing)."""
        if did is None:
            self.hit('ring:nothing')
            return
        for part in did.split('; '):
            for text, key in self.RING_DID:
                if text in part:
                    self.hit('ring:' + key)

    def differ(self, op, ra, rb, na, nb, why=''):
        msg = ['DIFFERENCE%s' % (': ' + why if why else ''),
               '  seed %s, sequence %d, step %d, call %d' % (self.args.seed, self.seq, self.step, len(self.log)),
               '  call: %s' % op.show(),
               '  A: %r' % (ra,), '  B: %r' % (rb,)]
        if na != nb:
            msg += ['  A notices: %r' % (na,), '  B notices: %r' % (nb,)]
        raise Difference('\n'.join(msg))

    # --- state, after every step ---------------------------------------------------------

    STATE_SQL = """
        SELECT json_build_object(
          'cp', (SELECT json_agg(c ORDER BY c.id) FROM sog.checkpoint c WHERE c.id = ANY(%(ids)s)),
          'gap', (SELECT json_agg(g ORDER BY g.id) FROM sog.gap g WHERE g.checkpoint_id = ANY(%(ids)s)),
          'rec', (SELECT json_agg(r ORDER BY r.id) FROM sog.recovery r WHERE r.checkpoint_id = ANY(%(ids)s)),
          'sink', (SELECT json_agg(s ORDER BY s.cp, s.pos, s.n) FROM seq.sink s WHERE s.cp = ANY(%(ids)s)),
          'prepared', (SELECT json_agg(gid) FROM pg_prepared_xacts WHERE gid LIKE %(gids)s))
    """

    def read_state(self, side):
        ids = [side.s2v['cp'][n] for n in self.cur_cps if n in side.s2v['cp']]
        st = side.obs.execute(self.STATE_SQL, {'ids': ids, 'gids': 'seq\\_%s\\_%s\\_%%' % (side.tag, RUN_ID)}).fetchone()[0]
        return {k: v or [] for k, v in st.items()}

    def sync(self):
        """After a step: pair the gap and attempt ids new on both sides (in id
        order), compare the checkpoints; return A's state for the generator."""
        fa = self.pool.submit(self.read_state, self.a)
        sb = self.read_state(self.b)
        sa = fa.result()
        for kind in ('gap', 'rec'):
            na = [r['id'] for r in sa[kind] if r['id'] not in self.a.v2s[kind]]
            nb = [r['id'] for r in sb[kind] if r['id'] not in self.b.v2s[kind]]
            for va, vb in zip(na, nb):
                n = len(self.a.s2v[kind]) + 1
                while n in self.a.s2v[kind] or n in self.b.s2v[kind]:
                    n += 1
                self.pair(kind, va, vb, n)
            if kind == 'gap':
                for r in sa['gap']:
                    if ('gap', r['id']) not in self.seen_res:
                        self.seen_res.add(('gap', r['id']))
                        self.hit('gap_reason:' + r['reason'])
        for r in sa['cp']:
            self.hit('state:' + r['state'])
        for r in sa['gap']:
            if r['resolution'] and ('res', r['id']) not in self.seen_res:
                self.seen_res.add(('res', r['id']))
                self.hit('resolution:' + r['resolution'])
        ca = self.canon_state(self.a, sa)
        cb = self.canon_state(self.b, sb)
        if ca != cb:
            for k in ca:
                if ca[k] != cb[k]:
                    ja = [json.dumps(x, sort_keys=True) for x in ca[k]]
                    jb = [json.dumps(x, sort_keys=True) for x in cb[k]]
                    raise Difference('\n'.join([
                        'DIFFERENCE in the state after the step (sog.%s)' % k,
                        '  seed %s, sequence %d, step %d' % (self.args.seed, self.seq, self.step),
                        '  the step\'s calls:'] + ['    ' + x for x in self.step_log()] + [
                        '  rows only in A:'] + ['    ' + x for x in ja if x not in jb][:5] + [
                        '  rows only in B:'] + ['    ' + x for x in jb if x not in ja][:5]))
        self.check_invariants(sa)
        return sa

    def compare_notifies(self):
        """NOTIFY sog_gap, compared once per sequence: a notification reaches
        the listener asynchronously, so which step's sync sees it is timing;
        the listeners are pumped until quiet first.  (NOTIFY is database-wide:
        one run per pair of databases at a time.)"""
        for _ in range(3):
            time.sleep(0.05)
            for side in (self.a, self.b):
                side.obs.execute('SELECT 1')
        pa = sorted(self.a.mask(x) for x in self.a.notifies)
        pb = sorted(self.b.mask(x) for x in self.b.notifies)
        self.a.notifies.clear()
        self.b.notifies.clear()
        if pa != pb:
            raise Difference('DIFFERENCE in NOTIFY sog_gap payloads over the sequence\n  seed %s, sequence %d\n  A (%d): %r\n  B (%d): %r'
                             % (self.args.seed, self.seq, len(pa), pa[:10], len(pb), pb[:10]))
        self.hit('notify:sog_gap', len(pa))

    def step_log(self):
        return self.log[self.step_start:]

    def canon_state(self, side, st):
        def idv(kind, v):
            return None if v is None else side.symtxt(kind, v) if v != 0 else 0
        cps = []
        for r in st['cp']:
            r = dict(r)
            r['id'] = idv('cp', r['id'])
            r['read_gap_floor'] = idv('gap', r.get('read_gap_floor'))
            for k in ('updated_at', 'created_at', 'claimed_at', 'applied_at'):
                r[k] = r.get(k) is not None
            cps.append(r)
        gaps = []
        for r in st['gap']:
            r = dict(r)
            r['id'] = idv('gap', r['id'])
            r['checkpoint_id'] = idv('cp', r['checkpoint_id'])
            r['detail'] = side.mask(r['detail'])
            for k in ('detected_at', 'resolved_at'):
                r[k] = r.get(k) is not None
            gaps.append(r)
        recs = []
        for r in st['rec']:
            r = dict(r)
            r['id'] = idv('rec', r['id'])
            r['checkpoint_id'] = idv('cp', r['checkpoint_id'])
            r['gap_id'] = idv('gap', r['gap_id'])
            for k in ('created_at', 'concluded_at'):
                r[k] = r.get(k) is not None
            recs.append(r)
        sink = [[idv('cp', s['cp']), s['pos'], s['payload'], s['via']] for s in st['sink']]
        return {'checkpoint': cps, 'gap': gaps, 'recovery': recs, 'sink': sink,
                'prepared': sorted(re.sub(r'seq_[ab]_', 'seq_X_', g) for g in st['prepared'])}

    def check_invariants(self, st):
        """What must hold whatever the calls (A's state): an effect is never
        written twice; applied_position never moves backward."""
        seen = set()
        for s in st['sink']:
            k = (s['cp'], s['pos'])
            if k in seen:
                self.bug('the effect of position %s of checkpoint %s was written twice (two apply/recovery answers said "new")' % (s['pos'], self.a.symtxt('cp', s['cp'])))
            seen.add(k)
        for r in st['cp']:
            sc, ap = r['source_cursor'], r['applied_position']
            if sc is not None and (ap is None or poskey(sc) > poskey(ap)):
                self.noted.setdefault(r['id'], set()).add((r['read_base'] if r['read_base'] is not None else ap, sc))
            prev = self.last_applied.get(r['id'])
            cur = r['applied_position']
            if prev is not None and (cur is None or poskey(cur) < poskey(prev)):
                self.bug('applied_position of checkpoint %s moved back from %s to %s' % (self.a.symtxt('cp', r['id']), prev, cur))
            self.last_applied[r['id']] = cur

    def check_end(self, cps):
        """At the end of a sequence (A's state): every receipt above the prune
        horizon has its effect in the sink exactly once and every effect its
        receipt; every record a worker noted (and committed) that now lies at
        or below the applied position was applied, or lies on a gap row."""
        st = self.read_state(self.a)
        for r in st['cp']:
            v = r['id']
            ph = r['prune_horizon']
            rec = [p for (p,) in self.a.obs.execute('SELECT "position"::text FROM sog.receipts(%s::bigint)', (v,)).fetchall()]
            sink = [x['pos'] for x in st['sink'] if x['cp'] == v and (ph is None or poskey(x['pos']) > poskey(ph))]
            if sorted(rec, key=poskey) != sorted(sink, key=poskey):
                only_r = sorted(set(rec) - set(sink), key=poskey)[:5]
                only_s = sorted(set(sink) - set(rec), key=poskey)[:5]
                self.bug('checkpoint %s: receipts without an effect %s, effects without a receipt %s' % (self.a.symtxt('cp', v), only_r, only_s))
            cp = cps.get(self.a.v2s['cp'].get(v))
            ap = r['applied_position']
            if cp is None or ap is None:
                continue
            gaps = [g for g in st['gap'] if g['checkpoint_id'] == v]
            done = set(x['pos'] for x in st['sink'] if x['cp'] == v)
            for base, cur in sorted(self.noted.get(v, ()), key=lambda x: (poskey(x[0]) if x[0] else (), poskey(x[1]))):
                lo = cp.idx_after(base)
                hi = min(cp.idx_at_or_below(cur), cp.idx_at_or_below(ap), lo + 1000)
                for i in range(lo, hi + 1):
                    p = cp.pos(i)
                    if p in done or (ph is not None and poskey(p) <= poskey(ph)):
                        continue
                    if any((g['from_position'] is None or poskey(g['from_position']) < poskey(p)) and
                           (g['to_position'] is None or poskey(p) <= poskey(g['to_position'])) for g in gaps):
                        continue
                    self.bug('checkpoint %s: position %s was noted (boundary (%s, %s]), lies at or below the applied position %s, was never applied and lies on no gap row' % (
                        self.a.symtxt('cp', v), p, base, cur, ap))
                    break

    PG_OWN = re.compile(r'^(permission denied for (function|procedure|table|view|schema|sequence)|current transaction is aborted|'
                        r'bigint out of range|division by zero|could not serialize|cannot execute .* in a read-only transaction|'
                        r'invalid input syntax for type (bigint|integer|numeric|bytea)|value ".*" is out of range)')

    def check_error(self, op, ra):
        """README: every error the extension raises carries a SQLSTATE, a
        message, a detail with the values and a hint with the next step
        (PostgreSQL's own refusals excepted)."""
        state, msg, detail, hint = ra[1:]
        if not op.tag and not re.match(r'(COMMIT\s*$|END\s*$|PREPARE TRANSACTION|RELEASE)', op.sql):
            return          # a statement of the test's own (ROLLBACK PREPARED ...)
        if state in ('40001', '25006', '25P02', '22012', '22003') or self.PG_OWN.match(msg or ''):
            return
        if not detail or not hint:
            self.bug('error without %s: %s %s (call %s)' % (
                'detail and hint' if not detail and not hint else 'detail' if not detail else 'hint', state, msg, op.show()))

    def bug(self, what):
        key = re.sub(r'\(call .*', '', re.sub(r'\d+', 'N', what))
        if key not in self.bugs_seen:
            self.bugs_seen.add(key)
            self.bugs.append('seed %s, sequence %d, step %d: %s\n    the step\'s calls:\n%s' % (
                self.args.seed, self.seq, self.step, what,
                '\n'.join('      ' + x for x in self.step_log())))

    # --- the dump, at the end of each sequence ---------------------------------------------

    DUMP = [
        # table, order by, {column: id kind | 'mask' | 'rank'}
        ('checkpoint', 'consumer, stream, partition', {'id': 'cp', 'read_gap_floor': 'gap'}),
        ('gap', 'checkpoint_id, id', {'id': 'gap', 'checkpoint_id': 'cp'}),
        ('manifest_log', 'checkpoint_id, id', {'id': 'rank', 'checkpoint_id': 'cp', 'gap_id': 'gap'}),
        ('recovery', 'checkpoint_id, id', {'id': 'rec', 'checkpoint_id': 'cp', 'gap_id': 'gap'}),
        ('reconfiguration', 'checkpoint_id, id', {'id': 'rank', 'checkpoint_id': 'cp'}),
        ('retention', 'checkpoint_id, consumer, id', {'id': 'rank', 'checkpoint_id': 'cp'}),
        ('receipt', 'checkpoint_id, last_position', {'checkpoint_id': 'cp'}),
        ('provider', 'name', {}),
        ('role_grant', 'role, kind, consumer', {'role_oid': 'mask', 'bound_in': 'mask'}),
    ]

    def dump(self, side):
        ids = [side.s2v['cp'][n] for n in sorted(self.run_cps)]
        out = {}
        for table, order, spec in self.DUMP:
            where = ''
            if table in ('checkpoint',):
                where = 'WHERE id = ANY(%(ids)s)'
            elif table == 'provider':
                where = "WHERE name LIKE 'seq%%'"
            elif table == 'role_grant':
                where = "WHERE role LIKE 'seq%%'"
            elif table == 'retention':
                where = 'WHERE checkpoint_id = ANY(%(ids)s) OR consumer LIKE \'seq%%\''
            else:
                where = 'WHERE checkpoint_id = ANY(%(ids)s)'
            cur = side.obs.execute('SELECT * FROM sog.%s %s' % (table, where), {'ids': ids})
            cols = [d.name for d in cur.description]
            rows = []
            for r in cur.fetchall():
                row = {}
                for col, v in zip(cols, r):
                    kind = spec.get(col)
                    if col in VOLATILE_COLS or '%s.%s' % (table, col) in VOLATILE_COLS:
                        v = '*'
                    elif kind == 'mask':
                        v = v is not None
                    elif kind == 'rank':
                        v = ('rank', v)
                    elif kind and v is not None and v != 0:
                        v = side.symtxt(kind, v)
                    elif isinstance(v, str):
                        v = side.mask(v)
                    else:
                        v = norm_value(v)
                    row[col] = v
                rows.append(row)
            # sort canonically (symbols replace ids), then ranks
            rank_cols = [c for c, k in spec.items() if k == 'rank']
            for rc in rank_cols:
                order_v = sorted(r[rc][1] for r in rows)
                pos = {v: i + 1 for i, v in enumerate(order_v)}
                for r in rows:
                    r[rc] = pos[r[rc][1]]
            rows.sort(key=lambda r: json.dumps(r, sort_keys=True, default=str))
            out[table] = rows
        # the receipts as sog.receipts() reads them (whatever the storage)
        rec = []
        for n in sorted(self.run_cps):
            v = side.s2v['cp'][n]
            cur = side.obs.execute('SELECT "position"::text, payload_digest FROM sog.receipts(%s::bigint)', (v,))
            rec.append([n, [[p, norm_value(d)] for p, d in cur.fetchall()]])
        out['sog.receipts()'] = rec
        cur = side.obs.execute('SELECT * FROM sog.status WHERE checkpoint_id = ANY(%(ids)s)', {'ids': ids})
        cols = [d.name for d in cur.description]
        st = []
        for r in cur.fetchall():
            d = {c: norm_value(v) for c, v in zip(cols, r)}
            d['checkpoint_id'] = side.symtxt('cp', d['checkpoint_id'])
            st.append(d)
        st.sort(key=lambda r: json.dumps(r, sort_keys=True, default=str))
        out['status'] = st
        return out

    def compare_dumps(self):
        da, db = self.dump(self.a), self.dump(self.b)
        for k in da:
            if da[k] != db[k]:
                ja = [json.dumps(r, sort_keys=True, default=str) for r in da[k]]
                jb = [json.dumps(r, sort_keys=True, default=str) for r in db[k]]
                only_a = [x for x in ja if x not in jb][:5]
                only_b = [x for x in jb if x not in ja][:5]
                raise Difference('\n'.join(
                    ['DIFFERENCE in the dump of sog.%s at the end of the sequence' % k,
                     '  seed %s, sequence %d (after step %d)' % (self.args.seed, self.seq, self.step),
                     '  rows only in A:'] + ['    ' + x for x in only_a] +
                    ['  rows only in B:'] + ['    ' + x for x in only_b]))
        return sum(len(v) for v in da.values())


def boolflags(v):
    """A boolean[] answer as a list of bools (psycopg gives a list; text
    '{t,f}' if the type was not known)."""
    if isinstance(v, bool):
        return [v]
    if isinstance(v, list):
        return [bool(x) for x in v]
    return [x == 't' for x in re.findall(r'[tf]', str(v))]


TAGS = {'resolve': 'resolve_gap', 'event': 'recovery_event', 'report': 'report_gap', 'note': 'note_read',
        'commit': 'commit_page', 'begin': 'begin_recovery'}


def span(lo, hi):
    """range(lo, hi) as a list, at most 12 long: a checkpoint whose applied
    position jumped to an exotic position (a 129-digit one, say) is not
    walked index by index."""
    return list(range(lo, min(hi, lo + 12)))


def poskey(p):
    return tuple(int(x) for x in p.split('-'))


# ---------------------------------------------------------------------------
# the fixture

FIXTURE_SQL = r"""
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'seq_cons') THEN CREATE ROLE seq_cons LOGIN; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'seq_scoped') THEN CREATE ROLE seq_scoped LOGIN; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'seq_oper') THEN CREATE ROLE seq_oper LOGIN; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'seq_none') THEN CREATE ROLE seq_none LOGIN; END IF;
END $$;
CREATE SCHEMA IF NOT EXISTS seq;
GRANT USAGE ON SCHEMA seq TO PUBLIC;
CREATE TABLE IF NOT EXISTS seq.sink (n bigserial, cp bigint NOT NULL, pos text NOT NULL,
                                     payload text NOT NULL, via text NOT NULL);
CREATE INDEX IF NOT EXISTS sink_cp ON seq.sink (cp);
GRANT SELECT, INSERT ON seq.sink TO PUBLIC;
GRANT USAGE ON SEQUENCE seq.sink_n_seq TO PUBLIC;
-- the consumer's side of a sink transaction: the effect is written only for
-- what the guard answers is new
CREATE OR REPLACE FUNCTION seq.d(payload text) RETURNS bytea
LANGUAGE sql AS $f$ SELECT sog.payload_digest(convert_to(payload, 'UTF8')) $f$;
CREATE OR REPLACE FUNCTION seq.ds(payloads text[]) RETURNS bytea[]
LANGUAGE sql AS $f$ SELECT ARRAY(SELECT sog.payload_digest(convert_to(p, 'UTF8'))
                                   FROM unnest(payloads) WITH ORDINALITY u(p, i) ORDER BY i) $f$;
CREATE OR REPLACE FUNCTION seq.h(positions text[], payloads text[]) RETURNS text
LANGUAGE sql AS $f$ SELECT sog.buffer_hash(positions::sog.position[], seq.ds(payloads)) $f$;
CREATE OR REPLACE FUNCTION seq.hagg(positions text[], payloads text[]) RETURNS text
LANGUAGE sql AS $f$ SELECT sog.buffer_hash(p::sog.position, sog.payload_digest(convert_to(x, 'UTF8')) ORDER BY i)
                      FROM unnest(positions, payloads) WITH ORDINALITY u(p, x, i) $f$;
CREATE OR REPLACE FUNCTION seq.apply(cp bigint, gen bigint, pos text, payload text) RETURNS boolean
LANGUAGE plpgsql AS $f$
DECLARE ok boolean;
BEGIN
  ok := sog.apply(cp, gen, pos::sog.position, seq.d(payload));
  IF ok THEN INSERT INTO seq.sink (cp, pos, payload, via) VALUES (cp, pos::sog.position::text, payload, 'apply'); END IF;
  RETURN ok;
END $f$;
CREATE OR REPLACE FUNCTION seq.apply_batch(cp bigint, gen bigint, positions text[], payloads text[]) RETURNS boolean[]
LANGUAGE plpgsql AS $f$
DECLARE ok boolean[];
BEGIN
  ok := sog.apply_batch(cp, gen, positions::sog.position[], seq.ds(payloads));
  INSERT INTO seq.sink (cp, pos, payload, via)
  SELECT cp, p::sog.position::text, x, 'batch' FROM unnest(positions, payloads) WITH ORDINALITY u(p, x, i) WHERE ok[i];
  RETURN ok;
END $f$;
CREATE OR REPLACE FUNCTION seq.apply_run(cp bigint, gen bigint, first bigint, payloads text[]) RETURNS integer
LANGUAGE plpgsql AS $f$
DECLARE skip integer;
BEGIN
  skip := sog.apply_run(cp, gen, first,
            (SELECT coalesce(string_agg(d, ''::bytea ORDER BY i), ''::bytea) FROM unnest(seq.ds(payloads)) WITH ORDINALITY u(d, i)));
  INSERT INTO seq.sink (cp, pos, payload, via)
  SELECT cp, (first + i - 1)::text, x, 'run' FROM unnest(payloads) WITH ORDINALITY u(x, i) WHERE i > skip;
  RETURN skip;
END $f$;
-- a whole page in one call: the apply, the next page's note, the token's swap
CREATE OR REPLACE FUNCTION seq.apply_run_page(cp bigint, gen bigint, first bigint, payloads text[],
    next_cursor text, next_hash text, next_count bigint, expected text, successor text) RETURNS integer
LANGUAGE plpgsql AS $f$
DECLARE skip integer;
BEGIN
  skip := sog.apply_run_page(cp, gen, first,
            (SELECT coalesce(string_agg(d, ''::bytea ORDER BY i), ''::bytea) FROM unnest(seq.ds(payloads)) WITH ORDINALITY u(d, i)),
            next_cursor::sog.position, next_hash, next_count, expected, successor);
  INSERT INTO seq.sink (cp, pos, payload, via)
  SELECT cp, (first + i - 1)::text, x, 'run_page' FROM unnest(payloads) WITH ORDINALITY u(x, i) WHERE i > skip;
  RETURN skip;
END $f$;
CREATE OR REPLACE FUNCTION seq.apply_batch_page(cp bigint, gen bigint, positions text[], payloads text[],
    next_cursor text, next_hash text, next_count bigint, expected text, successor text) RETURNS boolean[]
LANGUAGE plpgsql AS $f$
DECLARE ok boolean[];
BEGIN
  ok := sog.apply_batch_page(cp, gen, positions::sog.position[], seq.ds(payloads),
            next_cursor::sog.position, next_hash, next_count, expected, successor);
  INSERT INTO seq.sink (cp, pos, payload, via)
  SELECT cp, p::sog.position::text, x, 'batch_page' FROM unnest(positions, payloads) WITH ORDINALITY u(p, x, i) WHERE ok[i];
  RETURN ok;
END $f$;
CREATE OR REPLACE FUNCTION seq.ev(rid bigint, cp bigint, pos text, payload text) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE outcome text;
BEGIN
  outcome := sog.recovery_event(rid, pos::sog.position, seq.d(payload));
  IF outcome = 'apply' THEN
    INSERT INTO seq.sink (cp, pos, payload, via) VALUES (cp, pos::sog.position::text, payload, 'recovery');
  END IF;
  RETURN outcome;
END $f$;
"""

FIXTURE_PER_DB = r"""
INSERT INTO sog.provider (name, seek_inclusive, no_late_arrivals, empty_page_is_barrier, may_backfill)
VALUES ('seq_barrier', true, false, true, true), ('seq_exclusive', false, true, false, false)
ON CONFLICT (name) DO NOTHING;
SELECT sog.grant_consumer('seq_cons');
SELECT sog.grant_consumer('seq_scoped', 'ca');
SELECT sog.grant_operator('seq_oper');
"""


def setup(a, b, args, selftest):
    for side in (a, b):
        c = psycopg.connect(side.conninfo, autocommit=True)
        r = c.execute("SELECT rolsuper, current_user, "
                      "(SELECT extversion FROM pg_extension WHERE extname = 'stream_offset_guard'), "
                      "current_setting('max_prepared_transactions')::int, "
                      "(SELECT system_identifier FROM pg_control_system()), current_database() FROM pg_roles WHERE rolname = current_user").fetchone()
        if not r[0]:
            raise SetupError('%s: connect as a superuser (%s is not)' % (side.name, r[1]))
        if r[2] is None and not c.execute("SELECT to_regprocedure('sog.claim(bigint,text,text)') IS NOT NULL").fetchone()[0]:
            raise SetupError('%s: stream_offset_guard is not installed (schema sog)' % side.name)
        side.superuser = r[1]
        side.max_prepared = r[3]
        side.sysid = (r[4], r[5])
        c.close()
    same_db = a.sysid == b.sysid
    if same_db:
        raise SetupError('--a and --b are the same database')
    for side in (a, b):
        c = psycopg.connect(side.conninfo, autocommit=True)
        c.execute(FIXTURE_SQL)
        c.execute(FIXTURE_PER_DB)
        # the renumbering is always exercised: B's sequences run ahead
        if side is b:
            for (s,) in c.execute("SELECT format('%I.%I', schemaname, sequencename) FROM pg_sequences WHERE schemaname = 'sog'").fetchall():
                c.execute("SELECT setval(%s::regclass, coalesce((SELECT last_value FROM pg_sequences WHERE format('%%I.%%I', schemaname, sequencename) = %s), 0) + 1000 + (hashtext(%s) & 255))", (s, s, s))
        if selftest and side is b:
            plant(c)
        c.close()
    for side in (a, b):
        side.connect(side.superuser)
    return a.max_prepared > 0 and b.max_prepared > 0


PLANTS = {
    # a BEFORE trigger on one of the guard's tables that changes a value B
    # then answers with (sog.gaps() shows the note of a resolved gap)
    'trigger': r"""
CREATE OR REPLACE FUNCTION seq.plant() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  IF NEW.resolution = 'accepted_loss' THEN NEW.note := NEW.note || ' (planted)'; END IF;
  RETURN NEW;
END $f$;
DROP TRIGGER IF EXISTS seq_plant ON sog.gap;
CREATE TRIGGER seq_plant BEFORE UPDATE ON sog.gap FOR EACH ROW EXECUTE FUNCTION seq.plant();
""",
    # the operator loses its grant in B
    'grant': "SELECT sog.revoke_consumer('seq_scoped', 'ca'); SELECT sog.grant_consumer('seq_scoped', 'cb');",
}


def plant(c):
    c.execute(PLANTS[PLANT])


PLANT = 'trigger'
# columns that hold random values by design in some edition (the portable
# edition's per-grant key, docs/portable.md) or OIDs: compared as '*'
VOLATILE_COLS = {'key', 'role_grant.role_oid'}
RUN_ID = '%08x' % random.SystemRandom().getrandbits(32)   # partitions of this run (both sides)


# ---------------------------------------------------------------------------
# the generator

class CP:
    """A checkpoint of the sequence, as the generator sees it."""

    def __init__(self, name, consumer, stream, crit, provider, scope, ident, kind, base=0):
        self.name, self.consumer, self.stream = name, consumer, stream
        self.crit, self.provider, self.scope, self.ident = crit, provider, scope, ident
        self.kind, self.base = kind, base
        self.sym = None
        self.wgen = {}          # session -> generation it was given
        self.noted = None       # (lo, hi) indices a worker noted and holds
        self.mutated = set()    # indices whose payload the source now returns otherwise

    def pos(self, i):
        if self.kind == 'tuple':
            return '%d-%d' % (1700000000000 + (i - 1) // 3, (i - 1) % 3)
        return str(self.base + i)

    def payload(self, i, bad=False):
        p = '%s:%d' % (self.name, i)
        return p + ':other' if bad or i in self.mutated else p

    def idx_after(self, p):
        """The smallest index whose position is above p (1 for None)."""
        if p is None:
            return 1
        k = poskey(p)
        lo, hi = 1, 1 << 40
        while lo < hi:
            m = (lo + hi) // 2
            if poskey(self.pos(m)) > k:
                hi = m
            else:
                lo = m + 1
        return lo

    def idx_at_or_below(self, p):
        return self.idx_after(p) - 1


class Gen:
    def __init__(self, runner, rnd, prepared_ok, skip):
        self.r, self.rnd, self.prepared_ok, self.skip = runner, rnd, prepared_ok, skip
        self.st = None

    def pick(self, *xs):
        return self.rnd.choice(xs)

    def chance(self, p):
        return self.rnd.random() < p

    def run(self, sess, sql, params=(), ids=None, tag=None):
        return self.r.run(Op(sess, sql, params, ids, tag))

    # --- state of A -------------------------------------------------------------------

    def cprow(self, cp):
        v = self.r.a.s2v['cp'].get(cp.sym.n)
        for r in self.st['cp']:
            if r['id'] == v:
                return r
        return None

    def open_gaps(self, cp):
        v = self.r.a.s2v['cp'].get(cp.sym.n)
        return [g for g in self.st['gap'] if g['checkpoint_id'] == v and g['resolved_at'] is None]

    def all_gaps(self, cp):
        v = self.r.a.s2v['cp'].get(cp.sym.n)
        return [g for g in self.st['gap'] if g['checkpoint_id'] == v]

    def recs(self, cp, state=None):
        v = self.r.a.s2v['cp'].get(cp.sym.n)
        return [x for x in self.st['rec'] if x['checkpoint_id'] == v and (state is None or x['state'] == state)]

    def gsym(self, g):
        return Sym('gap', self.r.a.v2s['gap'][g['id']])

    def rsym(self, x):
        return Sym('rec', self.r.a.v2s['rec'][x['id']])

    # --- the sequence ------------------------------------------------------------------

    def register_all(self, seqno):
        part = '%s-s%d' % (RUN_ID, seqno)
        self.cps = [
            CP('K%d' % seqno, 'ca', 'orders', 'critical', 'kafka', 'topic=orders', 'cluster-1', 'int'),
            CP('T%d' % seqno, 'ca', 'metrics', 'telemetry', 'seq_barrier', 'metrics', None, 'int'),
            CP('R%d' % seqno, 'cb', 'events', 'critical', 'redis_streams', 'events', None, 'tuple'),
            CP('B%d' % seqno, 'cb', 'audit', 'critical', 'seq_exclusive', 'audit', None, 'int',
               base=9223372036854775790),
        ]
        for cp in self.cps:
            cp.partition = part
            sess = 'ws' if cp.consumer == 'ca' and self.chance(0.5) else 'w1'
            res = self.run(sess, 'SELECT * FROM sog.register(%s, %s, %s, %s, %s, %s, %s)',
                           (cp.consumer, cp.stream, part, cp.crit, cp.provider, cp.scope, cp.ident),
                           ids={'id': 'cp', 'read_gap_floor': 'gap'}, tag='register')
            cp.sym = res.row()['id']
            self.r.cur_cps.add(cp.sym.n)
            self.r.run_cps.add(cp.sym.n)

    def step(self):
        cp = self.rnd.choice(self.cps)
        actions = [
            (30, self.a_page), (8, self.a_bad_apply), (5, self.a_savepoint), (4, self.a_rollback),
            (5, self.a_zombie), (7, self.a_claim), (4, self.a_halt), (6, self.a_verify),
            (3, self.a_skip), (4, self.a_report), (7, self.a_resolve), (3, self.a_commit_page),
            (3, self.a_receipts), (9, self.a_recovery), (3, self.a_reconfigure), (2, self.a_register),
            (4, self.a_access), (5, self.a_badargs), (2, self.a_isolation), (2, self.a_lock),
            (2, self.a_watch), (2, self.a_pure), (1, self.a_retention), (3, self.a_crash_note),
            (3, self.a_recovery_race), (4, self.a_recovery_refusal), (5, self.a_ring),
        ]
        tot = sum(w for w, _ in actions)
        x = self.rnd.uniform(0, tot)
        for w, f in actions:
            x -= w
            if x <= 0:
                break
        f(cp)

    # --- helpers for calls --------------------------------------------------------------

    def owner(self, cp):
        """The session holding the current generation (claims one if none)."""
        row = self.cprow(cp)
        gen = row['generation']
        for s, g in cp.wgen.items():
            if g == gen and row['owner'] is not None:
                return s, g
        s = self.worker(cp)
        res = self.claim(cp, s)
        if not res.ok:
            return s, gen
        return s, res.row()['generation']

    def worker(self, cp):
        if cp.consumer == 'ca' and self.chance(0.3):
            return 'ws'
        return self.pick('w1', 'w2', 'w3')

    def claim(self, cp, s, ident='same'):
        if ident == 'same':
            ident = cp.ident if self.chance(0.8) else None
        res = self.run(s, 'SELECT * FROM sog.claim(%s::bigint, %s, %s)', (cp.sym, 'owner-' + s, ident),
                       ids={'checkpoint_id': 'cp', 'gap_id': 'gap'}, tag='claim')
        if res.ok:
            cp.wgen[s] = res.row()['generation']
        return res

    def page_range(self, cp, k=None):
        row = self.cprow(cp)
        i0 = cp.idx_after(row['applied_position'])
        k = k or self.rnd.randint(1, 6)
        return span(i0, i0 + k)

    def note(self, s, g, cp, idx, hashmode='good', count='good', cursor=None, fn='hagg'):
        poss = [cp.pos(i) for i in idx]
        pls = [cp.payload(i) for i in idx]
        cur = cursor if cursor is not None else (poss[-1] if poss else None)
        cnt = len(idx) if count == 'good' else count
        if hashmode == 'good':
            return self.run(s, 'SELECT sog.note_read(%%s::bigint, %%s::bigint, %%s::sog.position, seq.%s(%%s::text[], %%s::text[]), %%s::bigint)' % fn,
                            (cp.sym, g, cur, poss, pls, cnt), tag='note_read')
        if hashmode == 'upper_good':
            return self.run(s, 'SELECT sog.note_read(%s::bigint, %s::bigint, %s::sog.position, upper(seq.h(%s::text[], %s::text[])), %s::bigint)',
                            (cp.sym, g, cur, poss, pls, cnt), tag='note_read')
        if hashmode == 'perturb':
            j = self.rnd.randrange(len(pls)) if pls else 0
            if pls:
                pls[j] += '!'
            return self.run(s, 'SELECT sog.note_read(%s::bigint, %s::bigint, %s::sog.position, seq.h(%s::text[], %s::text[]), %s::bigint)',
                            (cp.sym, g, cur, poss, pls, cnt), tag='note_read')
        h = self.badhash(hashmode)
        return self.run(s, 'SELECT sog.note_read(%s::bigint, %s::bigint, %s::sog.position, %s, %s::bigint)',
                        (cp.sym, g, cur, h, cnt), tag='note_read')

    def badhash(self, mode):
        return {'null': None, 'empty': '', 'short': 'ab' * 31 + 'a', 'nonhex': 'g' * 64,
                'random': '%064x' % self.rnd.getrandbits(256), 'upper': ('%064x' % self.rnd.getrandbits(256)).upper(),
                'long': 'a' * 65}[mode]

    def apply(self, s, g, cp, idx, how=None, bad=()):
        poss = [cp.pos(i) for i in idx]
        pls = [cp.payload(i, i in bad) for i in idx]
        how = how or self.pick('batch', 'batch', 'one', 'run', 'int8')
        if how == 'int8' and cp.kind == 'int' and all(int(p) < 2 ** 63 for p in poss):
            r = self.run(s, 'SELECT sog.apply_batch_int8(%s::bigint, %s::bigint, %s::bigint[], seq.ds(%s::text[]))',
                         (cp.sym, g, [int(p) for p in poss], pls), tag='apply_batch_int8')
            if r.ok and r.one() is not None:
                # the sink rows of what was new
                new = [(p, x) for p, x, f in zip(poss, pls, boolflags(r.one())) if f]
                if new:
                    self.run(s, "INSERT INTO seq.sink (cp, pos, payload, via) SELECT %s::bigint, p, x, 'int8' FROM unnest(%s::text[], %s::text[]) u(p, x)",
                             (cp.sym, [p for p, _ in new], [x for _, x in new]))
            return [r]
        if how == 'int8':
            how = 'batch'
        if how == 'run' and cp.kind == 'int' and poss and all(idx[j] + 1 == idx[j + 1] for j in range(len(idx) - 1)):
            return [self.run(s, 'SELECT seq.apply_run(%s::bigint, %s::bigint, %s::bigint, %s::text[])',
                             (cp.sym, g, int(poss[0]), pls), tag='apply_run')]
        if how in ('batch', 'run'):
            return [self.run(s, 'SELECT seq.apply_batch(%s::bigint, %s::bigint, %s::text[], %s::text[])',
                             (cp.sym, g, poss, pls), tag='apply_batch')]
        out = []
        for p, x in zip(poss, pls):
            r = self.run(s, 'SELECT seq.apply(%s::bigint, %s::bigint, %s, %s)', (cp.sym, g, p, x), tag='apply')
            out.append(r)
            if not r.ok:
                break
        return out

    def page(self, s, g, cp, idx, tok=None, nxt=None, bad=(), how=None, hashmode='good', count='good',
             cursor='last'):
        """A whole page in one call (sog.apply_run_page, or apply_batch_page):
        the events idx, then (nxt: the indices of the next page read) that
        page's note, as note() makes it, then (tok: (expected, successor))
        the token's swap.  nxt None with hashmode or count given passes them
        without a cursor; cursor overrides the next page's cursor."""
        poss = [cp.pos(i) for i in idx]
        pls = [cp.payload(i, i in bad) for i in idx]
        nposs = [cp.pos(i) for i in nxt or ()]
        npls = [cp.payload(i) for i in nxt or ()]
        ncur = (nposs[-1] if nposs else None) if cursor == 'last' else cursor
        if nxt is None and cursor == 'last':
            hashmode = hashmode if hashmode != 'good' else 'null'
            count = count if count != 'good' else None
        ncnt = len(nposs) if count == 'good' else count
        hsql, hpar = '%s', (None,)
        if hashmode in ('good', 'perturb', 'upper_good'):
            if hashmode == 'perturb' and npls:
                npls[self.rnd.randrange(len(npls))] += '!'
            hsql = 'upper(seq.h(%s::text[], %s::text[]))' if hashmode == 'upper_good' else 'seq.h(%s::text[], %s::text[])'
            hpar = (nposs, npls)
        else:
            hpar = (self.badhash(hashmode),)
        exp, succ = tok if tok else (None, None)
        how = how or self.pick('run', 'batch')
        rest = ', %s::text, ' + hsql + ', %s::bigint, %s::text, %s::text)'
        if how == 'run' and cp.kind == 'int' and poss and all(int(p) < 2 ** 63 for p in poss) and \
                all(idx[j] + 1 == idx[j + 1] for j in range(len(idx) - 1)):
            return self.run(s, 'SELECT seq.apply_run_page(%s::bigint, %s::bigint, %s::bigint, %s::text[]' + rest,
                            (cp.sym, g, int(poss[0]), pls, ncur) + hpar + (ncnt, exp, succ), tag='apply_run_page')
        return self.run(s, 'SELECT seq.apply_batch_page(%s::bigint, %s::bigint, %s::text[], %s::text[]' + rest,
                        (cp.sym, g, poss, pls, ncur) + hpar + (ncnt, exp, succ), tag='apply_batch_page')

    def begin(self, s, iso=None):
        self.run(s, 'BEGIN' + (' ISOLATION LEVEL ' + iso if iso else ''))

    def end(self, s, commit=True):
        return self.run(s, 'COMMIT' if commit else 'ROLLBACK')

    def cur_boundary(self, cp):
        """(lo, hi) indices of the noted, unapplied boundary, or None."""
        row = self.cprow(cp)
        if row['source_cursor'] is None:
            return None
        a = row['applied_position']
        if a is not None and poskey(row['source_cursor']) <= poskey(a):
            return None
        lo = cp.idx_after(row['read_base'] if row['read_base'] is not None else a)
        hi = cp.idx_at_or_below(row['source_cursor'])
        return (lo, hi)

    # --- actions ------------------------------------------------------------------------

    def a_page(self, cp):
        """A correct client's page (mostly): claim if needed, verify a replay,
        note and apply whole, one commit or two, commit_page, pipelined note."""
        row = self.cprow(cp)
        if row['state'] == 'replaying':
            return self.a_verify(cp, good=True)
        if row['state'] == 'failed_closed':
            return self.pick(self.a_resolve, self.a_resolve, self.a_resolve, self.a_skip, self.a_report, self.a_recovery)(cp)
        s, g = self.owner(cp)
        row = self.cprow(cp)
        b = self.cur_boundary(cp)
        if b and b[0] <= b[1]:
            idx = span(cp.idx_after(row['applied_position']), b[1] + 1)
            if not idx:
                idx = self.page_range(cp)
        else:
            idx = self.page_range(cp)
            if self.chance(0.7):
                self.note(s, g, cp, idx, fn=self.pick('h', 'hagg'))
        if self.chance(0.15) and idx[0] > 1:
            # the source delivers part of the last page again
            idx = span(max(1, idx[0] - self.rnd.randint(1, 3)), idx[0]) + idx
        self.begin(s)
        if self.chance(0.35):
            # the same in one call: apply, the next page's note, the token
            tok = (row['provider_token'], 'tok-%d' % self.rnd.randint(1, 10 ** 6)) if self.chance(0.5) else None
            nxt = span(idx[-1] + 1, idx[-1] + 1 + self.rnd.randint(1, 5)) if self.chance(0.5) else None
            self.page(s, g, cp, idx, tok=tok, nxt=nxt,
                      hashmode=self.pick('good', 'good', 'good', 'null'), count=self.pick('good', 'good', None))
        else:
            res = self.apply(s, g, cp, idx)
            if all(r.ok for r in res):
                if self.chance(0.4):
                    tok = row['provider_token']
                    self.run(s, 'SELECT sog.commit_page(%s::bigint, %s::bigint, %s, %s)',
                             (cp.sym, g, tok, 'tok-%d' % self.rnd.randint(1, 10 ** 6)), tag='commit_page')
                if self.chance(0.4):
                    nxt = span(idx[-1] + 1, idx[-1] + 1 + self.rnd.randint(1, 5))
                    self.note(s, g, cp, nxt)
        ok = self.end(s, commit=self.chance(0.95)).ok
        if ok and self.chance(0.1):
            # graceful shutdown with nothing held
            self.run(s, 'SELECT * FROM sog.halt(%s::bigint, %s::bigint, NULL, NULL, NULL)', (cp.sym, g), tag='halt')

    def a_bad_apply(self, cp):
        s, g = self.owner(cp)
        row = self.cprow(cp)
        i0 = cp.idx_after(row['applied_position'])
        v = self.pick('short', 'past', 'replay', 'backwards', 'conflict', 'skip', 'dup_in_batch', 'bad_digest', 'mixed',
                      'between', 'note_behind', 'note_badhash', 'page_short', 'page_token', 'page_behind', 'page_badnote')
        b = self.cur_boundary(cp)
        if not b and self.chance(0.7):
            idx = self.page_range(cp, self.rnd.randint(2, 6))
            self.note(s, g, cp, idx, hashmode=self.pick('good', 'good', 'perturb'))
            b = (idx[0], idx[-1])
        hi = b[1] if b else i0 + 3
        self.begin(s)
        if v == 'short':
            self.apply(s, g, cp, span(i0, max(i0, hi - 1 - self.rnd.randint(0, 2)) + 0) or [i0])
        elif v == 'past':
            self.apply(s, g, cp, span(i0, hi + 1 + self.rnd.randint(1, 3)))
        elif v == 'replay':
            lo = max(1, i0 - self.rnd.randint(1, 5))
            self.apply(s, g, cp, span(lo, i0) or [max(1, i0 - 1)])
        elif v == 'backwards':
            idx = span(i0, hi + 1)[::-1]
            if len(idx) < 2:
                idx = [i0 + 1, i0]
            self.apply(s, g, cp, idx, how=self.pick('batch', 'one'))
        elif v == 'conflict':
            lo = max(1, i0 - self.rnd.randint(1, 4))
            self.apply(s, g, cp, span(lo, i0 + 1), bad={lo})
        elif v == 'skip':
            self.apply(s, g, cp, [i0 + 1 + self.rnd.randint(0, 3)] + [hi + 2])
        elif v == 'between':
            # below applied, where no receipt can be: out of order
            self.run(s, 'SELECT seq.apply(%s::bigint, %s::bigint, %s, %s)',
                     (cp.sym, g, cp.pos(max(1, i0 - 2)) + '-7', 'between'), tag='apply')
        elif v == 'note_badhash':
            self.note(s, g, cp, self.page_range(cp), hashmode=self.pick('upper_good', 'random', 'upper', 'short', 'nonhex', 'long', 'empty'))
        elif v == 'note_behind':
            lo = max(1, i0 - self.rnd.randint(1, 3))
            self.note(s, g, cp, span(lo, lo + 2))
        elif v == 'page_short':
            # short of the noted cursor, and the next page noted over it
            idx = span(i0, max(i0, hi - 1 - self.rnd.randint(0, 2)) + 0) or [i0]
            self.page(s, g, cp, idx, nxt=span(hi + 1, hi + 3), tok=self.pick(None, (row['provider_token'], 'tok-short')))
        elif v == 'page_token':
            self.page(s, g, cp, span(i0, hi + 1), nxt=self.pick(None, span(hi + 1, hi + 3)),
                      tok=(self.pick('tok-wrong', None, row['provider_token'] and row['provider_token'] + 'x'), 'tok-new'))
        elif v == 'page_behind':
            # the next page's cursor behind what the page applies
            idx = span(i0, hi + 1)
            self.page(s, g, cp, idx, nxt=[], cursor=cp.pos(self.rnd.choice(idx)), count=self.pick(None, 1),
                      tok=self.pick(None, (row['provider_token'], 'tok-behind')))
        elif v == 'page_badnote':
            self.page(s, g, cp, span(i0, hi + 1), nxt=span(hi + 1, hi + 3),
                      hashmode=self.pick('perturb', 'upper_good', 'random', 'short', 'nonhex', 'long', 'empty'),
                      count=self.pick('good', -1, 10 ** 12, 0))
        elif v == 'dup_in_batch':
            self.apply(s, g, cp, [i0, i0, i0 + 1], how='batch')
        elif v == 'bad_digest':
            self.run(s, 'SELECT sog.apply(%s::bigint, %s::bigint, %s::sog.position, %s::bytea)',
                     (cp.sym, g, cp.pos(i0), self.pick(b'', b'\x00' * 31, b'\x01' * 33, None)), tag='apply')
        else:
            self.apply(s, g, cp, span(i0, hi + 1), bad={self.rnd.randint(i0, hi)})
        self.end(s, commit=self.chance(0.85))

    def a_savepoint(self, cp):
        s, g = self.owner(cp)
        idx = self.page_range(cp)
        b = self.cur_boundary(cp)
        if not b and self.chance(0.6):
            self.note(s, g, cp, idx)
        elif b:
            idx = span(cp.idx_after(self.cprow(cp)['applied_position']), b[1] + 1) or idx
        self.begin(s)
        self.run(s, 'SAVEPOINT sp1')
        self.apply(s, g, cp, idx)
        self.run(s, self.pick('ROLLBACK TO SAVEPOINT sp1', 'RELEASE SAVEPOINT sp1', 'ROLLBACK TO SAVEPOINT sp1'))
        if self.chance(0.5):
            self.apply(s, g, cp, idx[:self.rnd.randint(1, len(idx))])
        if self.chance(0.3) and self.prepared_ok:
            self.r.gid_n += 1
            self.run(s, "PREPARE TRANSACTION '{gid}'")
            self.run('su', self.pick("COMMIT PREPARED '{gid}'", "ROLLBACK PREPARED '{gid}'"))
        else:
            self.end(s, commit=self.chance(0.8))

    def a_rollback(self, cp):
        s, g = self.owner(cp)
        idx = self.page_range(cp)
        self.begin(s)
        if self.chance(0.5):
            self.note(s, g, cp, idx)
        self.apply(s, g, cp, idx)
        if self.chance(0.5):
            self.run(s, 'SELECT sog.commit_page(%s::bigint, %s::bigint, %s, %s)',
                     (cp.sym, g, self.cprow(cp)['provider_token'], 'rolled-back'), tag='commit_page')
        if self.chance(0.3):
            self.run(s, 'SELECT 1/0')
        self.end(s, commit=False)

    def a_zombie(self, cp):
        row = self.cprow(cp)
        stale = [(s, g) for s, g in cp.wgen.items() if g < row['generation']]
        if stale and self.chance(0.8):
            s, g = self.rnd.choice(stale)
        else:
            s, g = self.worker(cp), row['generation'] + self.rnd.randint(1, 3)
        idx = self.page_range(cp)
        f = self.pick('apply', 'note', 'halt', 'commit_page', 'verify', 'report', 'skip', 'owner_check', 'begin_recovery',
                      'page')
        if f == 'apply':
            self.apply(s, g, cp, idx)
        elif f == 'page':
            self.page(s, g, cp, idx, nxt=span(idx[-1] + 1, idx[-1] + 3), tok=(row['provider_token'], 'z'))
        elif f == 'note':
            self.note(s, g, cp, idx)
        elif f == 'halt':
            self.run(s, 'SELECT * FROM sog.halt(%s::bigint, %s::bigint, NULL, NULL, NULL)', (cp.sym, g), tag='halt')
        elif f == 'commit_page':
            self.run(s, 'SELECT sog.commit_page(%s::bigint, %s::bigint, %s, %s)', (cp.sym, g, row['provider_token'], 'z'), tag='commit_page')
        elif f == 'verify':
            self.run(s, 'SELECT sog.verify_gap(%s::bigint, %s::bigint, %s)', (cp.sym, g, 'a' * 64), tag='verify_gap')
        elif f == 'report':
            self.run(s, 'SELECT sog.report_gap(%s::bigint, %s::bigint, %s::sog.position, %s)', (cp.sym, g, cp.pos(idx[-1]), 'retention'), tag='report_gap')
        elif f == 'skip':
            self.run(s, 'SELECT sog.skip_gap(%s::bigint, %s::bigint, %s)', (cp.sym, g, 'zombie'), tag='skip_gap')
        elif f == 'owner_check':
            self.run(s, 'SELECT sog.owner_check(%s::bigint, %s::bigint)', (cp.sym, g), tag='owner_check')
        else:
            self.run(s, 'SELECT * FROM sog.begin_recovery(%s::bigint, %s::bigint, %s, %s, %s::sog.position, %s)',
                     (cp.sym, g, row['provider_token'], cp.scope, row['applied_position'], False),
                     ids={'id': 'rec', 'checkpoint_id': 'cp', 'gap_id': 'gap'}, tag='begin_recovery')

    def a_claim(self, cp):
        s = self.worker(cp)
        ident = 'other' if self.chance(0.1) else 'same'
        self.claim(cp, s, ident if ident == 'same' else 'cluster-%d' % self.rnd.randint(2, 3))

    def a_crash_note(self, cp):
        """A worker notes a page (with or without hash) and dies; a successor
        claims: gap_replay_required / fail_closed."""
        s, g = self.owner(cp)
        idx = self.page_range(cp)
        self.note(s, g, cp, idx, hashmode=self.pick('good', 'good', 'null', 'perturb'))
        if self.chance(0.3):
            self.apply(s, g, cp, idx[:max(1, len(idx) - 1)])
        if self.chance(0.7):
            self.claim(cp, self.worker(cp))

    def a_halt(self, cp):
        s, g = self.owner(cp)
        row = self.cprow(cp)
        idx = self.page_range(cp)
        v = self.pick('nothing', 'hash', 'nohash', 'behind', 'badhash', 'count')
        if v == 'nothing':
            self.run(s, 'SELECT * FROM sog.halt(%s::bigint, %s::bigint, NULL, NULL, NULL)', (cp.sym, g), tag='halt')
        elif v in ('hash', 'count'):
            poss = [cp.pos(i) for i in idx]
            self.run(s, 'SELECT * FROM sog.halt(%s::bigint, %s::bigint, %s::sog.position, seq.h(%s::text[], %s::text[]), %s::bigint)',
                     (cp.sym, g, poss[-1], poss, [cp.payload(i) for i in idx], len(idx) if v == 'hash' else len(idx) + 1000), tag='halt')
        elif v == 'nohash':
            self.run(s, 'SELECT * FROM sog.halt(%s::bigint, %s::bigint, %s::sog.position, NULL, %s::bigint)',
                     (cp.sym, g, cp.pos(idx[-1]), self.pick(None, len(idx))), tag='halt')
        elif v == 'behind':
            p = row['applied_position'] or cp.pos(1)
            self.run(s, 'SELECT * FROM sog.halt(%s::bigint, %s::bigint, %s::sog.position, NULL, NULL)',
                     (cp.sym, g, cp.pos(max(1, cp.idx_at_or_below(p) - 1))), tag='halt')
        else:
            self.run(s, 'SELECT * FROM sog.halt(%s::bigint, %s::bigint, %s::sog.position, %s, 1)',
                     (cp.sym, g, cp.pos(idx[-1]), self.badhash(self.pick('short', 'nonhex', 'empty'))), tag='halt')

    def a_verify(self, cp, good=None):
        row = self.cprow(cp)
        s, g = self.owner(cp)
        row = self.cprow(cp)
        if good is None:
            good = self.chance(0.6)
        if row['state'] == 'replaying' and row['source_cursor'] is not None:
            lo = cp.idx_after(row['read_base'])
            hi = cp.idx_at_or_below(row['source_cursor'])
            idx = span(lo, hi + 1)
            pls = [cp.payload(i) for i in idx]
            if not good and pls:
                v = self.pick('perturb', 'prefix', 'random', 'badformat')
                if v == 'perturb':
                    pls[-1] += '!'
                elif v == 'prefix':
                    idx, pls = idx[:-1], pls[:-1]
                elif v == 'random':
                    return self.run(s, 'SELECT sog.verify_gap(%s::bigint, %s::bigint, %s)', (cp.sym, g, self.badhash('random')), tag='verify_gap')
                else:
                    return self.run(s, 'SELECT sog.verify_gap(%s::bigint, %s::bigint, %s)', (cp.sym, g, self.badhash(self.pick('short', 'null', 'nonhex'))), tag='verify_gap')
            res = self.run(s, 'SELECT sog.verify_gap(%s::bigint, %s::bigint, seq.h(%s::text[], %s::text[]))',
                           (cp.sym, g, [cp.pos(i) for i in idx], pls), tag='verify_gap')
            if res.ok and res.one() and self.chance(0.8):
                self.begin(s)
                self.apply(s, g, cp, span(lo, hi + 1))
                self.end(s)
        else:
            self.run(s, 'SELECT sog.verify_gap(%s::bigint, %s::bigint, %s)', (cp.sym, g, '%064x' % 7), tag='verify_gap')

    def a_skip(self, cp):
        s, g = self.owner(cp)
        self.run(s, 'SELECT sog.skip_gap(%s::bigint, %s::bigint, %s)', (cp.sym, g, self.pick('too old', '', None)), tag='skip_gap')

    def a_report(self, cp):
        s, g = self.owner(cp)
        row = self.cprow(cp)
        i0 = cp.idx_after(row['applied_position'])
        v = self.pick('good', 'good', 'again', 'below', 'reason', 'unverified', 'other_reason')
        if v in ('good', 'again'):
            gs = self.open_gaps(cp)
            if v == 'again' and gs and gs[-1]['to_position']:
                to = gs[-1]['to_position']
            else:
                to = cp.pos(i0 + self.rnd.randint(0, 4))
            reason = 'retention'
        elif v == 'below':
            to, reason = cp.pos(max(1, i0 - 1)), 'retention'
        elif v == 'reason':
            to, reason = cp.pos(i0 + 1), self.pick('bogus', None, '')
        elif v == 'unverified':
            to, reason = cp.pos(i0 + 1), 'unverified'
        else:
            to, reason = cp.pos(i0 + 2), self.pick('divergence', 'coverage_gap', 'mismatch')
        self.run(s, 'SELECT sog.report_gap(%s::bigint, %s::bigint, %s::sog.position, %s, %s)',
                 (cp.sym, g, to, reason, self.pick(None, 'broker trimmed')), ids={'report_gap': 'gap'}, tag='report_gap')

    def a_resolve(self, cp):
        gs = self.open_gaps(cp)
        alls = self.all_gaps(cp)
        proper = self.chance(0.75)
        who = self.pick('wo', 'wo', 'su') if proper else self.pick('wo', 'su', 'w1', 'wn', 'ws')
        if gs and (proper or self.chance(0.6)):
            gid = self.gsym(self.rnd.choice(gs))
        elif alls and self.chance(0.7):
            gid = self.gsym(self.rnd.choice(alls))
        else:
            gid = self.pick(*BOGUS_IDS)
        if proper:
            res, note = self.pick(('accepted_loss', 'trimmed by the broker'), ('replayed', None), ('replayed', 'did it'))
        else:
            res, note = self.pick(('accepted_loss', ' '), ('accepted_loss', None), ('skipped_telemetry', 'x'), ('bogus', 'x'),
                                  ('accepted_loss', 'ok'), ('replayed', None))
        self.run(who, 'SELECT sog.resolve_gap(%s::bigint, %s, %s)', (gid, res, note), tag='resolve_gap')

    def a_commit_page(self, cp):
        s, g = self.owner(cp)
        row = self.cprow(cp)
        exp = self.pick(row['provider_token'], row['provider_token'], None, 'tok-wrong')
        self.run(s, 'SELECT sog.commit_page(%s::bigint, %s::bigint, %s, %s)',
                 (cp.sym, g, exp, self.pick('tok-%d' % self.rnd.randint(1, 999), None)), tag='commit_page')

    def a_receipts(self, cp):
        row = self.cprow(cp)
        who = self.pick('wo', 'su', 'w1', 'ws', 'wn')
        ap = row['applied_position']
        v = self.pick('receipts', 'prune', 'prune', 'prune_above', 'prune_due')
        if v == 'receipts':
            lo = cp.pos(self.rnd.randint(1, 5))
            self.run(who, 'SELECT "position"::text, payload_digest FROM sog.receipts(%s::bigint, %s::sog.position, %s::sog.position)',
                     (cp.sym, self.pick(None, lo), self.pick(None, ap)), tag='receipts')
        elif v == 'prune':
            i = cp.idx_at_or_below(ap) if ap else 1
            self.run(who, 'SELECT sog.prune_receipts(%s::bigint, %s::sog.position)',
                     (cp.sym, cp.pos(max(1, i - self.rnd.randint(0, 3)))), tag='prune')
        elif v == 'prune_above':
            self.run(who, 'SELECT sog.prune_receipts(%s::bigint, %s::sog.position)',
                     (cp.sym, cp.pos(cp.idx_after(ap) + self.rnd.randint(0, 3))), tag='prune')
        else:
            self.run(who, 'SELECT sog.prune_due(%s::bigint, %s::bigint)', (cp.sym, self.pick(None, 1, 0, 5)), tag='prune_due')

    def a_retention(self, cp):
        who = self.pick('wo', 'su', 'w1')
        v = self.pick('set', 'horizon', 'bad')
        if v == 'set':
            self.run(who, 'SELECT sog.set_retention(NULL, %s::bigint, %s::numeric, NULL)', (cp.sym, self.pick(0, 2, 5, None)), tag='retention')
        elif v == 'horizon':
            self.run(who, 'SELECT sog.retention_horizon(%s::bigint)::text', (cp.sym,), tag='retention')
        else:
            self.run(who, 'SELECT sog.set_retention(%s, %s::bigint, %s::numeric, NULL)', (self.pick('ca', None), cp.sym, self.pick(-1, 1.5)), tag='retention')

    # The receipt ring (1.2): sog.rotate_receipts() and CALL sog.prune_due()
    # (which prunes every checkpoint due, then turns the ring) between the
    # other calls, with retention policies set and removed, so that
    # checkpoints move into the ring and out of it, ring partitions keep
    # rows at or below their checkpoints' prune horizons until they are
    # emptied, and every read must answer at the horizon.
    RING_BIG = """SELECT pg_relation_size(format('sog.receipt_%s', x.c)::regclass)
                         >= 2 * pg_relation_size(format('sog.receipt_%s', x.c % 4 + 1)::regclass),
                         sog.receipt_holders(x.c % 4 + 1)
                    FROM (SELECT coalesce((SELECT g.current FROM sog.receipt_ring g), 1) AS c) x"""

    def ring_sizes_agree(self):
        """rotate_receipts moves the checkpoints that hold the ring's next
        partition out of the ring once the current partition has grown to
        twice the next one's size: pg_relation_size, whose pages differ
        between any two databases with the same rows (which transaction
        extended a page first, which read pruned the dead rows of a rolled
        back one, autovacuum), and between the editions (a position is the
        C type's encoding in A, text in B).  So with the same rows the two
        may decide otherwise.  True when they cannot: no checkpoint holds
        the next partition (CALL sog.prune_due() prunes before it turns,
        which only raises horizons: no holder after it that was not one
        before), or both compare the sizes alike.  Else (counted) an
        operator prunes the holders through their applied positions, as
        one would for checkpoints that stopped (those of earlier sequences
        keep receipts above their policies' horizons for good), and the
        turn is left out unless that freed the partition."""
        big_a, held_a = self.r.a.obs.execute(self.RING_BIG).fetchone()
        big_b, held_b = self.r.b.obs.execute(self.RING_BIG).fetchone()
        if not (held_a and held_b and big_a != big_b):
            return True
        self.r.hit('skipped:ring_sizes_differ')
        for v, ap in self.r.a.obs.execute('SELECT c.id, c.applied_position::text FROM sog.checkpoint c '
                                          'WHERE c.id = ANY (%s::bigint[]) ORDER BY c.id', (held_a,)).fetchall():
            n = self.r.a.v2s['cp'].get(v)
            if n is None or ap is None:
                continue
            res = self.run('wo', 'SELECT sog.prune_receipts(%s::bigint, %s::sog.position)', (Sym('cp', n), ap), tag='prune')
            if res.state == '55000' and n not in self.r.cur_cps and 'recovery attempt' in res.err[1]:
                # an earlier sequence's attempt left open: a new worker's
                # claim concludes it as lost, then the prune goes through
                self.run('w1', 'SELECT * FROM sog.claim(%s::bigint, %s, NULL)', (Sym('cp', n), 'owner-cleanup'),
                         ids={'checkpoint_id': 'cp', 'gap_id': 'gap'}, tag='claim')
                self.run('wo', 'SELECT sog.prune_receipts(%s::bigint, %s::sog.position)', (Sym('cp', n), ap), tag='prune')
        big_a, held_a = self.r.a.obs.execute(self.RING_BIG).fetchone()
        big_b, held_b = self.r.b.obs.execute(self.RING_BIG).fetchone()
        if held_a and held_b and big_a != big_b:
            self.r.hit('skipped:ring_turn_left_out')
            return False
        return True

    def rotate(self, who):
        if self.ring_sizes_agree():
            self.run(who, 'SELECT sog.rotate_receipts()', tag='rotate_receipts')

    def prune_all(self, who):
        if self.ring_sizes_agree():
            res = self.run(who, 'CALL sog.prune_due()', tag='prune_due_all')
            for n in getattr(res, 'notices', ()):
                if n[2] and n[2].startswith('receipt ring: '):
                    self.r.ring_cover(n[2][len('receipt ring: '):])

    def a_ring(self, cp):
        v = self.pick('policy', 'policy', 'rotate', 'rotate', 'rotate', 'call', 'call', 'busy', 'tamper', 'read')
        if v == 'policy':
            # into the ring (a policy of its own) or out of it (none)
            self.run('wo', 'SELECT sog.set_retention(NULL, %s::bigint, %s::numeric, NULL)',
                     (cp.sym, self.pick(0, 0, 2, 5, None)), tag='retention')
            if self.chance(0.6):
                self.rotate(self.pick('wo', 'su'))
        elif v == 'rotate':
            self.rotate(self.pick('wo', 'wo', 'su', 'w1', 'wn'))
        elif v == 'call':
            self.prune_all(self.pick('wo', 'wo', 'su', 'w1'))
        elif v == 'busy':
            # a sink transaction that read receipts holds every partition
            # until it ends: the ring waits for it at most 100 ms a partition
            self.begin('w1')
            self.run('w1', 'SELECT count(*) FROM sog.receipts(%s::bigint)', (cp.sym,), tag='receipts')
            self.rotate('wo')
            self.end('w1', commit=False)
        elif v == 'tamper':
            # receipt_ring outside 0-4 (an owner's UPDATE): the store refuses
            # it (23514) when it has receipts to write, and nothing is written
            ring = self.cprow(cp)['receipt_ring']
            self.run('su', 'UPDATE sog.checkpoint SET receipt_ring = %s WHERE id = %s::bigint',
                     (self.pick(5, -1, 9), cp.sym))
            s, g = self.owner(cp)
            self.apply(s, g, cp, self.page_range(cp))
            self.run('su', 'UPDATE sog.checkpoint SET receipt_ring = %s WHERE id = %s::bigint', (ring, cp.sym))
        else:
            who = self.pick('wo', 'wo', 'su', 'w1')
            self.run(who, 'SELECT ring, "partition"::text, role, cardinality(writers) AS writers, '
                     'cardinality(holders) AS holders, current_since IS NOT NULL AS since '
                     'FROM sog.receipt_storage ORDER BY ring', tag='receipt_storage')
            self.run(who, 'SELECT receipts FROM sog.checkpoint_metrics WHERE checkpoint_id = %s::bigint',
                     (cp.sym,), tag='checkpoint_metrics')

    def a_recovery(self, cp):
        row = self.cprow(cp)
        opens = self.recs(cp, 'open')
        if opens and self.chance(0.65):
            return self.recovery_page(cp, self.rnd.choice(opens))
        concluded = [x for x in self.recs(cp) if x['state'] != 'open']
        if concluded and self.chance(0.15):
            x = self.rnd.choice(concluded)
            tok = self.pick(x['successor_token'], 'other-token')
            return self.run(self.worker(cp), 'SELECT * FROM sog.promote(%s::bigint, %s, %s::sog.position)',
                            (self.rsym(x), tok, x['last_position']), tag='promote')
        s, g = self.owner(cp)
        row = self.cprow(cp)
        ap = row['applied_position']
        ia = cp.idx_at_or_below(ap) if ap else 0
        tok = row['provider_token'] if self.chance(0.85) else 'expired-other'
        scope = cp.scope if self.chance(0.85) else self.pick('other-scope', None)
        v = self.pick('incl', 'excl', 'incl', 'excl_at', 'above', 'pruned', 'retained', 'none')
        incl = v in ('incl', 'pruned', 'retained')
        if v == 'incl':
            anchor = cp.pos(max(1, ia - self.rnd.randint(0, 3))) if ia else cp.pos(1)
        elif v in ('excl', 'excl_at'):
            anchor = cp.pos(max(1, ia - (0 if v == 'excl_at' else self.rnd.randint(0, 3)))) if ia else None
        elif v == 'above':
            anchor = cp.pos(ia + 2)
        elif v == 'pruned':
            ph = row['prune_horizon']
            anchor = ph if ph else cp.pos(max(1, ia))
        elif v == 'retained':
            anchor = cp.pos(max(1, ia - 1))
        else:
            anchor = None
        retained = None
        if v == 'retained' or self.chance(0.15):
            retained = cp.pos(max(1, ia + self.rnd.randint(-1, 2)))
        fin = self.pick(None, ap, cp.pos(ia + 5), cp.pos(max(1, ia - 2)))
        res = self.run(s, 'SELECT * FROM sog.begin_recovery(%s::bigint, %s::bigint, %s, %s, %s::sog.position, %s, %s::sog.position, %s::sog.position)',
                       (cp.sym, g, tok, scope, anchor, incl, retained, fin),
                       ids={'id': 'rec', 'checkpoint_id': 'cp', 'gap_id': 'gap'}, tag='begin_recovery')
        if res.ok and res.row()['state'] == 'open' and self.chance(0.7):
            x = res.row()
            self.recovery_page(cp, None, rid=x['id'], anchor=x['anchor'], incl=x['anchor_inclusive'])

    def a_recovery_race(self, cp):
        """Two attempts from the same token (recovery.sql 3b): the second
        finds the first's receipts (duplicate), promotes; the first is lost."""
        row = self.cprow(cp)
        if row['state'] != 'running' or self.open_gaps(cp):
            return self.a_resolve(cp)
        s, g = self.owner(cp)
        row = self.cprow(cp)
        ap = row['applied_position']
        ia = cp.idx_at_or_below(ap) if ap else 0
        prov = cp.provider
        incl = prov in ('kafka', 'redis_streams', 'seq_barrier') and self.chance(0.5)
        anchor = cp.pos(ia) if ia else (cp.pos(1) if incl else None)
        if incl and not ia:
            anchor = cp.pos(1)
        fin = cp.pos(ia + 10)
        ids = {'id': 'rec', 'checkpoint_id': 'cp', 'gap_id': 'gap'}
        sql = 'SELECT * FROM sog.begin_recovery(%s::bigint, %s::bigint, %s, %s, %s::sog.position, %s, NULL, %s::sog.position)'
        r1 = self.run(s, sql, (cp.sym, g, row['provider_token'], cp.scope, anchor, incl, fin), ids=ids, tag='begin_recovery')
        if not r1.ok or r1.row()['state'] != 'open':
            return
        ra = r1.row()['id']
        if self.chance(0.25):
            # an empty page: promotes only where the provider says an empty
            # page is a barrier
            r = self.run(s, 'SELECT * FROM sog.promote(%s::bigint, %s, NULL)', (ra, 'empty-tok'), tag='promote')
            if r.ok and r.row()['promoted']:
                cp.wgen = {s: r.row()['generation']}
            return
        first = ia if incl and ia else ia + 1
        if first < 1:
            first = 1
        self.begin(s)
        for j in range(first, ia + 3):
            self.run(s, 'SELECT seq.ev(%s::bigint, %s::bigint, %s, %s)', (ra, cp.sym, cp.pos(j), cp.payload(j)), tag='recovery_event')
        self.end(s)
        r2 = self.run(s, sql, (cp.sym, g, row['provider_token'], cp.scope, anchor, incl, fin), ids=ids, tag='begin_recovery')
        if not r2.ok or r2.row()['state'] != 'open':
            return
        rb = r2.row()['id']
        self.begin(s)
        for j in range(first, ia + 4):
            self.run(s, 'SELECT seq.ev(%s::bigint, %s::bigint, %s, %s)', (rb, cp.sym, cp.pos(j), cp.payload(j)), tag='recovery_event')
        self.end(s)
        order = [(rb, cp.pos(ia + 3)), (ra, cp.pos(ia + 2))]
        if self.chance(0.3):
            order.reverse()
        for rid, last in order:
            r = self.run(s, 'SELECT * FROM sog.promote(%s::bigint, %s, %s::sog.position)', (rid, 'race-tok', last), tag='promote')
            if r.ok and r.row()['promoted']:
                cp.wgen = {s: r.row()['generation']}
                # a retry after an unknown commit outcome converges
                self.run(s, 'SELECT * FROM sog.promote(%s::bigint, %s, %s::sog.position)', (rid, self.pick('race-tok', 'race-tok', 'other-tok'), last), tag='promote')
        self.run(s, 'SELECT seq.ev(%s::bigint, %s::bigint, %s, %s)', (ra, cp.sym, cp.pos(ia + 4), cp.payload(ia + 4)), tag='recovery_event')
        self.run(s, 'SELECT * FROM sog.promote(%s::bigint, %s, %s::sog.position)', (ra, 'race-tok', cp.pos(ia + 2)), tag='promote')

    def a_recovery_refusal(self, cp):
        """Each refusal of begin_recovery, in the contract's order, crafted on a
        healthy checkpoint; an operator then resolves the gap."""
        row = self.cprow(cp)
        if row['state'] != 'running' or self.open_gaps(cp):
            return self.a_resolve(cp)
        s, g = self.owner(cp)
        row = self.cprow(cp)
        ap = row['applied_position']
        if ap is None:
            return self.a_page(cp)
        ia = cp.idx_at_or_below(ap)
        v = self.pick('scope', 'retention', 'pruned', 'coverage', 'finality', 'excl_at', 'stop', 'stop', 'stop')
        scope, anchor, incl, retained, fin = cp.scope, ap, False, None, ap
        if v == 'stop':
            return self.recovery_stop(cp, s, g, row, ia)
        if v == 'scope':
            scope = cp.scope + '-elsewhere'
        elif v == 'retention':
            retained = cp.pos(ia + 2)
        elif v == 'pruned':
            if ia < 2:
                return self.a_page(cp)
            self.run('wo', 'SELECT sog.prune_receipts(%s::bigint, %s::sog.position)', (cp.sym, cp.pos(ia - 1)), tag='prune')
            anchor = cp.pos(ia - 1 - self.rnd.randint(0, 1)) if ia > 2 else cp.pos(1)
        elif v == 'coverage':
            anchor = cp.pos(ia + 1)
        elif v == 'finality':
            fin = self.pick(None, cp.pos(max(1, ia - 1)))
        res = self.run(s, 'SELECT * FROM sog.begin_recovery(%s::bigint, %s::bigint, %s, %s, %s::sog.position, %s, %s::sog.position, %s::sog.position)',
                       (cp.sym, g, row['provider_token'], scope, anchor, incl, retained, fin),
                       ids={'id': 'rec', 'checkpoint_id': 'cp', 'gap_id': 'gap'}, tag='begin_recovery')
        if res.ok and res.row()['gap_id'] is not None and self.chance(0.7):
            self.run(self.pick('wo', 'su'), 'SELECT sog.resolve_gap(%s::bigint, %s, %s)',
                     (res.row()['gap_id'], 'accepted_loss', 'nothing was lost: a refused attempt'), tag='resolve_gap')

    def recovery_stop(self, cp, s, g, row, ia):
        """An open attempt below the applied position that the re-read stops:
        mismatch, unverifiable, coverage_gap."""
        if ia < 3 or self.prune_blocks(row, ia):
            return
        k = ia - 2
        res = self.run(s, 'SELECT * FROM sog.begin_recovery(%s::bigint, %s::bigint, %s, %s, %s::sog.position, false, NULL, %s::sog.position)',
                       (cp.sym, g, row['provider_token'], cp.scope, cp.pos(k), row['applied_position']),
                       ids={'id': 'rec', 'checkpoint_id': 'cp', 'gap_id': 'gap'}, tag='begin_recovery')
        if not res.ok or res.row()['state'] != 'open':
            return
        rid = res.row()['id']
        v = self.pick('mismatch', 'unverifiable', 'coverage_gap')
        ev = {'mismatch': [(cp.pos(k + 1), cp.payload(k + 1, True))],
              'unverifiable': [(cp.pos(k) + '-5', 'between')],
              'coverage_gap': [(cp.pos(k + 1), cp.payload(k + 1)), (cp.pos(k + 1), cp.payload(k + 1))]}[v]
        self.begin(s)
        for p, x in ev:
            self.run(s, 'SELECT seq.ev(%s::bigint, %s::bigint, %s, %s)', (rid, cp.sym, p, x), tag='recovery_event')
        self.end(s)

    def prune_blocks(self, row, ia):
        return row['prune_horizon'] is not None and poskey(row['prune_horizon']) >= poskey(row['applied_position']) and False

    def recovery_page(self, cp, x, rid=None, anchor=None, incl=None):
        if x is not None:
            rid, anchor, incl = self.rsym(x), x['anchor'], x['anchor_inclusive']
            last = x['last_position']
        else:
            last = None
        row = self.cprow(cp)
        s = self.worker(cp)
        if last is not None:
            i = cp.idx_after(last)
        elif anchor is None:
            i = 1
        else:
            i = cp.idx_at_or_below(anchor) if incl else cp.idx_after(anchor)
        v = self.pick('good', 'good', 'good', 'mismatch', 'skipfirst', 'backwards', 'unverifiable', 'rollback', 'empty')
        k = self.rnd.randint(1, 5)
        if row['applied_position']:
            # sometimes reach exactly to applied, sometimes beyond
            ia = cp.idx_at_or_below(row['applied_position'])
            if self.chance(0.4) and ia >= i:
                k = ia - i + 1
        idx = span(i, i + k)
        bad = set()
        if v == 'mismatch':
            below = [j for j in idx if row['applied_position'] and j <= cp.idx_at_or_below(row['applied_position'])]
            bad = {self.rnd.choice(below or idx)}
        elif v == 'skipfirst':
            idx = idx[1:] or [i + 1]
        elif v == 'backwards':
            idx = idx + [idx[0]]
        elif v == 'unverifiable':
            # a position below applied that has no receipt (a tuple/int between receipts)
            if row['applied_position'] and cp.kind == 'int':
                idx = []
                self.begin(s)
                ia = cp.idx_at_or_below(row['applied_position'])
                self.run(s, 'SELECT seq.ev(%s::bigint, %s::bigint, %s, %s)', (rid, cp.sym, cp.pos(max(1, ia - 1)) + '-5', 'x'), tag='recovery_event')
                self.end(s)
                return
        last_ok = None
        if v != 'empty':
            self.begin(s)
            for j in idx:
                r = self.run(s, 'SELECT seq.ev(%s::bigint, %s::bigint, %s, %s)', (rid, cp.sym, cp.pos(j), cp.payload(j, j in bad)), tag='recovery_event')
                if not r.ok or r.one() not in ('verified', 'apply', 'duplicate'):
                    break
                last_ok = cp.pos(j)
            self.end(s, commit=(v != 'rollback'))
        if self.chance(0.75):
            pl = self.pick(last_ok, last_ok, last_ok, None, cp.pos(i))
            tok = 'succ-%d' % self.rnd.randint(1, 3)
            r = self.run(s, 'SELECT * FROM sog.promote(%s::bigint, %s, %s::sog.position)', (rid, tok, pl), tag='promote')
            if r.ok and r.row()['promoted'] and self.chance(0.5):
                self.run(s, 'SELECT * FROM sog.promote(%s::bigint, %s, %s::sog.position)', (rid, self.pick(tok, 'succ-9'), pl), tag='promote')
                g = r.row()['generation']
                cp.wgen = {s: g}
        if self.chance(0.15):
            # a second attempt from the same token races the first
            row = self.cprow(cp)
            s2, g2 = self.owner(cp)
            self.run(s2, 'SELECT * FROM sog.begin_recovery(%s::bigint, %s::bigint, %s, %s, %s::sog.position, %s, NULL, %s::sog.position)',
                     (cp.sym, g2, row['provider_token'], cp.scope, anchor, incl, row['applied_position']),
                     ids={'id': 'rec', 'checkpoint_id': 'cp', 'gap_id': 'gap'}, tag='begin_recovery')

    def a_reconfigure(self, cp):
        who = self.pick('wo', 'su', 'wo', 'w1', 'wn')
        v = self.pick('crit', 'provider', 'scope', 'ident', 'badprov', 'badcrit', 'nothing')
        args = {'crit': (self.pick('critical', 'telemetry'), None, None, None),
                'provider': (None, self.pick('kafka', 'seq_barrier', 'seq_exclusive', 'http_paged', 'redis_streams'), None, None),
                'scope': (None, None, self.pick(cp.scope, cp.scope + '-v2'), None),
                'ident': (None, None, None, self.pick('cluster-1', 'cluster-2')),
                'badprov': (None, 'no_such_provider', None, None),
                'badcrit': ('important', None, None, None),
                'nothing': (None, None, None, None)}[v]
        res = self.run(who, 'SELECT * FROM sog.reconfigure(%s::bigint, %s, %s, %s, %s, %s)', (cp.sym,) + args + ('seq note',),
                       ids={'id': 'cp', 'read_gap_floor': 'gap'}, tag='reconfigure')
        if res.ok:
            r = res.row()
            cp.crit, cp.provider, cp.scope, cp.ident = r['criticality'], r['provider'], r['query_scope'], r['source_identity']

    def a_register(self, cp):
        who = self.pick('w1', 'ws', 'wn', 'wo')
        v = self.pick('same', 'conflict', 'new', 'badprov', 'blank', 'long')
        args = [cp.consumer, cp.stream, cp.partition, cp.crit, cp.provider, cp.scope, cp.ident]
        if v == 'conflict':
            args[self.rnd.choice([3, 4, 5, 6])] = self.pick('telemetry', 'kinesis', 'other', 'cluster-9')
        elif v == 'new':
            args[1] = cp.stream + '-new'
            args[3:] = ['critical', None, None, None]
        elif v == 'badprov':
            args[1] = cp.stream + '-x'
            args[4] = 'nope'
        elif v == 'blank':
            args[0] = self.pick('', None)
        elif v == 'long':
            args[1] = 'x' * 801
        res = self.run(who, 'SELECT * FROM sog.register(%s, %s, %s, %s, %s, %s, %s)', args,
                       ids={'id': 'cp', 'read_gap_floor': 'gap'}, tag='register')
        if res.ok:
            self.r.cur_cps.add(res.row()['id'].n)
            self.r.run_cps.add(res.row()['id'].n)

    def a_access(self, cp):
        row = self.cprow(cp)
        who = self.pick('wn', 'wo', 'ws')
        g = row['generation']
        f = self.pick('claim', 'apply', 'note', 'halt', 'gaps', 'status', 'receipts', 'owner_check', 'begin_recovery', 'prune', 'report',
                      'page')
        idx = self.page_range(cp, 2)
        if f == 'claim':
            self.claim(cp, who)
        elif f == 'page':
            self.page(who, g, cp, idx, nxt=self.pick(None, span(idx[-1] + 1, idx[-1] + 3)))
        elif f == 'apply':
            self.apply(who, g, cp, idx)
        elif f == 'note':
            self.note(who, g, cp, idx)
        elif f == 'halt':
            self.run(who, 'SELECT * FROM sog.halt(%s::bigint, %s::bigint, NULL, NULL, NULL)', (cp.sym, g), tag='halt')
        elif f == 'gaps':
            self.run(who, 'SELECT gap_id, from_position::text, to_position::text, reason, resolution, note FROM sog.gaps(%s::bigint)', (cp.sym,), ids={'gap_id': 'gap'}, tag='gaps')
        elif f == 'status':
            self.run(who, 'SELECT checkpoint_id, state, owner, generation, applied_position::text, source_cursor::text, lag, buffered_count, open_gaps, open_recoveries FROM sog.status WHERE "partition" LIKE %s ORDER BY consumer, stream, "partition"', (RUN_ID + '-%',), ids={'checkpoint_id': 'cp'}, tag='status')
        elif f == 'receipts':
            self.run(who, 'SELECT "position"::text, payload_digest FROM sog.receipts(%s::bigint)', (cp.sym,), tag='receipts')
        elif f == 'owner_check':
            self.run(who, 'SELECT sog.owner_check(%s::bigint, %s::bigint)', (cp.sym, g), tag='owner_check')
        elif f == 'begin_recovery':
            self.run(who, 'SELECT * FROM sog.begin_recovery(%s::bigint, %s::bigint, %s, %s, %s::sog.position, false)',
                     (cp.sym, g, row['provider_token'], cp.scope, row['applied_position']),
                     ids={'id': 'rec', 'checkpoint_id': 'cp', 'gap_id': 'gap'}, tag='begin_recovery')
        elif f == 'prune':
            self.run(who, 'SELECT sog.prune_receipts(%s::bigint, %s::sog.position)', (cp.sym, row['applied_position']), tag='prune')
        else:
            self.run(who, 'SELECT sog.report_gap(%s::bigint, %s::bigint, %s::sog.position, %s)', (cp.sym, g, cp.pos(idx[-1]), 'retention'), ids={'report_gap': 'gap'}, tag='report_gap')

    def a_badargs(self, cp):
        s, g = self.owner(cp)
        row = self.cprow(cp)
        i0 = cp.idx_after(row['applied_position'])
        bogus = self.pick(*BOGUS_IDS)
        bad_pos = ['1-2-3', '-1', '', ' ', '1--2', '1-', '9' * 129, '9' * 161, '1-2-3-4-5-6-7-8-9', 'x1', '٣',
                   '1' + '0' * 159 + '-1']
        if 'noncanonical' not in self.skip:
            # accepted and canonicalized by the C edition, refused (22P02)
            # by the portable one's domain (docs/portable.md): --skip noncanonical
            bad_pos += ['0' + cp.pos(i0), '00' + cp.pos(i0).replace('-', '-0'), ' %s ' % cp.pos(i0)]
        f = self.pick('apply_pos', 'apply_pos', 'note_pos', 'ids', 'nulls', 'huge_gen', 'batch_shape', 'run_args', 'count', 'claim_owner',
                      'page_args')
        if f == 'apply_pos':
            p = self.rnd.choice(bad_pos)
            self.run(s, 'SELECT seq.apply(%s::bigint, %s::bigint, %s, %s)', (cp.sym, g, p, 'p'), tag='apply')
        elif f == 'note_pos':
            p = self.rnd.choice(bad_pos)
            self.run(s, 'SELECT sog.note_read(%s::bigint, %s::bigint, %s::sog.position, NULL, NULL)', (cp.sym, g, p), tag='note_read')
        elif f == 'ids':
            fn = self.pick('claim', 'apply', 'gaps', 'resolve', 'event', 'promote', 'receipts', 'report')
            sql = {'claim': ('SELECT * FROM sog.claim(%s::bigint, %s)', (bogus, 'x')),
                   'apply': ('SELECT sog.apply(%s::bigint, 1, %s::sog.position, seq.d(%s))', (bogus, '1', 'x')),
                   'gaps': ('SELECT count(*) FROM sog.gaps(%s::bigint)', (bogus,)),
                   'resolve': ('SELECT sog.resolve_gap(%s::bigint, %s, %s)', (bogus, 'replayed', None)),
                   'event': ('SELECT sog.recovery_event(%s::bigint, %s::sog.position, seq.d(%s))', (bogus, '1', 'x')),
                   'promote': ('SELECT * FROM sog.promote(%s::bigint, %s, NULL)', (bogus, 't')),
                   'receipts': ('SELECT count(*) FROM sog.receipts(%s::bigint)', (bogus,)),
                   'report': ('SELECT sog.report_gap(%s::bigint, 1, %s::sog.position, %s)', (bogus, '5', 'retention'))}[fn]
            self.run(self.pick(s, 'wo', 'ws', 'su'), sql[0], sql[1], tag=TAGS.get(fn, fn))
        elif f == 'nulls':
            fn = self.pick('claim', 'apply', 'note', 'halt', 'commit', 'report', 'begin')
            sql = {'claim': ('SELECT * FROM sog.claim(%s::bigint, %s)', (cp.sym, None)),
                   'apply': ('SELECT sog.apply(%s::bigint, %s::bigint, NULL, seq.d(%s))', (cp.sym, self.pick(g, None), 'x')),
                   'note': ('SELECT sog.note_read(%s::bigint, NULL, %s::sog.position, NULL, NULL)', (cp.sym, cp.pos(i0))),
                   'halt': ('SELECT * FROM sog.halt(NULL, %s::bigint, NULL, NULL, NULL)', (g,)),
                   'commit': ('SELECT sog.commit_page(%s::bigint, NULL, NULL, NULL)', (cp.sym,)),
                   'report': ('SELECT sog.report_gap(%s::bigint, %s::bigint, NULL, %s)', (cp.sym, g, 'retention')),
                   'begin': ('SELECT * FROM sog.begin_recovery(%s::bigint, %s::bigint, NULL, NULL, NULL, true)', (cp.sym, g))}[fn]
            self.run(s, sql[0], sql[1], ids={'id': 'rec', 'checkpoint_id': 'cp', 'gap_id': 'gap'}, tag=TAGS.get(fn, fn))
        elif f == 'huge_gen':
            self.run(s, 'SELECT seq.apply(%s::bigint, %s::bigint, %s, %s)',
                     (cp.sym, self.pick(-1, 9223372036854775807, 2 ** 63), cp.pos(i0), 'x'), tag='apply')
        elif f == 'batch_shape':
            v = self.pick('len', 'null_el', 'null_dig', 'empty', '2d')
            if v == 'len':
                self.run(s, 'SELECT sog.apply_batch(%s::bigint, %s::bigint, %s::text[]::sog.position[], seq.ds(%s::text[]))',
                         (cp.sym, g, [cp.pos(i0), cp.pos(i0 + 1)], ['a']), tag='apply_batch')
            elif v == 'null_el':
                self.run(s, 'SELECT sog.apply_batch(%s::bigint, %s::bigint, ARRAY[%s, NULL]::sog.position[], seq.ds(%s::text[]))',
                         (cp.sym, g, cp.pos(i0), ['a', 'b']), tag='apply_batch')
            elif v == 'null_dig':
                self.run(s, 'SELECT sog.apply_batch(%s::bigint, %s::bigint, ARRAY[%s]::sog.position[], ARRAY[NULL]::bytea[])',
                         (cp.sym, g, cp.pos(i0)), tag='apply_batch')
            elif v == 'empty':
                self.run(s, "SELECT sog.apply_batch(%s::bigint, %s::bigint, '{}'::sog.position[], '{}'::bytea[])",
                         (cp.sym, g), tag='apply_batch')
            else:
                self.run(s, "SELECT sog.apply_batch(%s::bigint, %s::bigint, ARRAY[[%s]]::sog.position[], ARRAY[[seq.d('a')]])",
                         (cp.sym, g, cp.pos(i0)), tag='apply_batch')
        elif f == 'run_args':
            v = self.pick('neg', 'odd', 'past', 'empty')
            first = {'neg': -5, 'odd': 1, 'past': 9223372036854775806, 'empty': 1}[v]
            dig = {'neg': b'\x00' * 32, 'odd': b'\x00' * 33, 'past': b'\x00' * 96, 'empty': b''}[v]
            self.run(s, 'SELECT sog.apply_run(%s::bigint, %s::bigint, %s::bigint, %s::bytea)', (cp.sym, g, first, dig), tag='apply_run')
        elif f == 'count':
            idx = self.page_range(cp, 3)
            self.note(s, g, cp, idx, count=self.pick(-1, 0, 10 ** 12, None, 2))
        elif f == 'page_args':
            idx = self.page_range(cp, 2)
            v = self.pick('hash_alone', 'count_alone', 'both_alone', 'badhash', 'null_gen', 'bad_cursor')
            if v == 'hash_alone':
                self.page(s, g, cp, idx, hashmode=self.pick('random', 'nonhex'))
            elif v == 'count_alone':
                self.page(s, g, cp, idx, count=self.pick(2, -1))
            elif v == 'both_alone':
                self.page(s, g, cp, idx, hashmode='random', count=2)
            elif v == 'badhash':
                self.page(s, g, cp, idx, nxt=span(idx[-1] + 1, idx[-1] + 3), hashmode=self.pick('short', 'nonhex', 'long', 'empty'))
            elif v == 'null_gen':
                self.page(s, None, cp, idx, nxt=self.pick(None, span(idx[-1] + 1, idx[-1] + 3)))
            else:
                self.page(s, g, cp, idx, nxt=[], cursor=self.rnd.choice(bad_pos))
        else:
            self.run(s, 'SELECT * FROM sog.claim(%s::bigint, %s, %s)', (cp.sym, self.pick('', 'o' * 1000, ' '), cp.ident),
                     ids={'checkpoint_id': 'cp', 'gap_id': 'gap'}, tag='claim')

    def healthy(self, cp):
        row = self.cprow(cp)
        return row['state'] == 'running' and not self.open_gaps(cp) and self.cur_boundary(cp) is None

    def a_isolation(self, cp):
        if not self.healthy(cp):
            return self.a_page(cp)
        s, g = self.owner(cp)
        idx = self.page_range(cp, 2)
        v = self.pick('rr', 'ser', 'ro')
        if v == 'ro':
            self.run(s, 'BEGIN READ ONLY')
            self.apply(s, g, cp, idx, how='batch')
            self.end(s, commit=False)
            return
        # the snapshot is taken, another session of the same worker changes
        # the checkpoint and commits, then this one writes it: 40001
        self.begin(s, 'REPEATABLE READ' if v == 'rr' else 'SERIALIZABLE')
        self.run(s, 'SELECT count(*) FROM seq.sink')
        other = self.pick(*[x for x in ('w1', 'w2', 'w3') if x != s])
        f = self.pick('apply', 'prune')
        if f == 'apply':
            self.apply(other, g, cp, idx[:1], how='batch')
        else:
            self.run('wo', 'SELECT sog.prune_receipts(%s::bigint, %s::sog.position)', (cp.sym, self.cprow(cp)['applied_position']), tag='prune')
        self.apply(s, g, cp, idx, how='batch')
        self.end(s, commit=True)

    def a_lock(self, cp):
        """An open (or prepared) sink transaction holds the checkpoint; a
        successor's claim with a short sog.claim_timeout gets 55P03."""
        if not self.healthy(cp) and self.chance(0.7):
            return self.a_page(cp)
        s, g = self.owner(cp)
        idx = self.page_range(cp, 2)
        self.begin(s)
        res = self.apply(s, g, cp, idx, how='batch')
        prepared = False
        if all(r.ok for r in res) and self.prepared_ok and self.chance(0.4):
            self.r.gid_n += 1
            self.run(s, "PREPARE TRANSACTION '{gid}'")
            prepared = True
        other = self.pick(*[x for x in ('w1', 'w2', 'w3') if x != s])
        if self.chance(0.7):
            self.run(other, "SET sog.claim_timeout = '60ms'")
            self.claim(cp, other)
            self.run(other, 'RESET sog.claim_timeout')
        else:
            self.run(other, "SET lock_timeout = '60ms'")
            self.apply(other, g, cp, idx, how='batch')
            self.run(other, "SET lock_timeout = '3s'")
        if prepared:
            self.run('su', self.pick("COMMIT PREPARED '{gid}'", "ROLLBACK PREPARED '{gid}'"))
        else:
            self.end(s, commit=self.chance(0.5))

    def a_watch(self, cp):
        who = self.pick('wo', 'w1', 'ws', 'su')
        f = self.pick('status', 'unresolved', 'gaps', 'owner_check')
        if f == 'status':
            self.run(who, 'SELECT checkpoint_id, state, owner, generation, applied_position::text, source_cursor::text, lag, buffered_count, open_gaps, open_recoveries FROM sog.status WHERE checkpoint_id = %s::bigint',
                     (cp.sym,), ids={'checkpoint_id': 'cp'}, tag='status')
        elif f == 'unresolved':
            self.run(who, 'SELECT gap_id, checkpoint_id, consumer, stream, "partition", criticality, from_position::text, to_position::text, reason FROM sog.unresolved_gaps WHERE checkpoint_id = %s::bigint ORDER BY gap_id',
                     (cp.sym,), ids={'checkpoint_id': 'cp', 'gap_id': 'gap'}, tag='unresolved_gaps')
        elif f == 'gaps':
            self.run(who, 'SELECT gap_id, from_position::text, to_position::text, reason, resolution, note FROM sog.gaps(%s::bigint)',
                     (cp.sym,), ids={'gap_id': 'gap'}, tag='gaps')
        else:
            row = self.cprow(cp)
            self.run(who, 'SELECT sog.owner_check(%s::bigint, %s::bigint)', (cp.sym, row['generation'] - self.rnd.randint(0, 1)), tag='owner_check')

    def a_pure(self, cp):
        c = self.pick(('5', '3'), ('3', '3'), ('3', '5'), (None, '3'), ('7', None), ('1-2', '1-1'))
        k = 'key' if self.chance(0.7) else self.pick('', ' \t', None)
        h = self.pick(None, '', 'abc')
        res = self.run('wn', 'SELECT * FROM sog.evaluate_halt(%s::sog.position, %s::sog.position, %s, %s)', (c[0], c[1], h, k), tag='evaluate_halt')
        if res.ok:
            r = res.row()
            self.run('wn', 'SELECT * FROM sog.verify_resume(ROW(%s::sog.verdict, %s::sog.position, %s::numeric, %s)::sog.manifest, %s::sog.position)',
                     (r['verdict'], r['resume_from'], r['gap_size'], r['manifest_digest'], self.pick('1', '9', None)), tag='verify_resume')


# ---------------------------------------------------------------------------

def cleanup_step(r, g):
    """No transaction stays open past a step."""
    for s in ROLES:
        ca = r.a.conns[s].info.transaction_status
        cb = r.b.conns[s].info.transaction_status
        if ca != pq.TransactionStatus.IDLE or cb != pq.TransactionStatus.IDLE:
            r.run(Op(s, 'ROLLBACK'))
    for side in (r.a, r.b):
        for (gid,) in side.obs.execute("SELECT gid FROM pg_prepared_xacts WHERE gid LIKE %s", ('seq\\_%s\\_%s\\_%%' % (side.tag, RUN_ID),)).fetchall():
            side.obs.execute("ROLLBACK PREPARED '%s'" % gid)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--a', required=True, help='conninfo of database A (a superuser)')
    ap.add_argument('--b', required=True, help='conninfo of database B (a superuser)')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--sequences', type=int, default=14)
    ap.add_argument('--calls', type=int, default=300, help='steps per sequence (a step is one or more calls)')
    ap.add_argument('--report', help='write the coverage table and the outcome here too')
    ap.add_argument('--require-coverage', action='store_true')
    ap.add_argument('--skip', default='', help='categories of input to leave out (noncanonical: positions with leading zeros or white space, which the portable edition refuses by design)')
    ap.add_argument('--selftest', action='store_true', help='plant a difference in B and pass only if it is reported')
    ap.add_argument('--plant', default='trigger', choices=sorted(PLANTS), help='what --selftest plants')
    ap.add_argument('--mask-column', action='append', default=[], metavar='[TABLE.]COLUMN',
                    help='another column of schema sog to leave out of the dump comparison (random by design)')
    ap.add_argument('--portable-b', action='store_true',
                    help='B holds the portable edition: accept the differences docs/portable.md lists for it (counted as accepted:...)')
    ap.add_argument('--verbose', action='store_true')
    ap.add_argument('--trace', action='store_true', help='print every call and A\'s answer')
    args = ap.parse_args()
    global PLANT
    PLANT = args.plant
    skip = set(x for x in args.skip.split(',') if x)
    VOLATILE_COLS.update(args.mask_column)

    a = Side('A', args.a, 'a')
    b = Side('B', args.b, 'b')
    t0 = time.time()
    out = []

    def say(s=''):
        print(s)
        out.append(s)

    try:
        prepared_ok = setup(a, b, args, args.selftest)
    except (SetupError, psycopg.Error) as e:
        print('seq_diff: setup failed: %s' % e, file=sys.stderr)
        return 2
    r = Runner(a, b, args)
    r.seen_res = set()
    r.cur_cps = set()
    r.run_cps = set()
    r.last_applied = {}
    r.noted = {}
    r.bugs_seen = set()
    rnd = random.Random(args.seed)
    g = Gen(r, rnd, prepared_ok, skip)
    failed = None
    rows_compared = 0
    try:
        for seqno in range(1, args.sequences + 1):
            r.seq, r.step, r.log, r.step_start = seqno, 0, [], 0
            r.cur_cps = set()
            g.st = r.sync()
            g.register_all(seqno)
            g.st = r.sync()
            for stepno in range(1, args.calls + 1):
                r.step = stepno
                r.step_start = len(r.log)
                g.step()
                cleanup_step(r, g)
                g.st = r.sync()
            g.st = r.sync()
            r.check_end({cp.sym.n: cp for cp in g.cps})
            r.compare_notifies()
            rows_compared += r.compare_dumps()
            if args.verbose:
                print('sequence %d: %d calls so far, %.1f s' % (seqno, r.ncalls, time.time() - t0))
    except Difference as d:
        failed = str(d)
    except SetupError as e:
        failed = 'ERROR: %s' % e
    dt = time.time() - t0

    say('coverage (seed %s, %d sequences x %d steps, %d calls, %.1f s):' % (args.seed, args.sequences, args.calls, r.ncalls, dt))
    keys = list(REQUIRED) + sorted(k for k in r.cov if k not in REQUIRED and not k.startswith('call:'))
    calls = sorted(set(k.split(':')[1] for k in r.cov if k.startswith('call:')))
    missing = [k for k in REQUIRED if not r.cov.get(k)]
    for k in keys:
        say('  %-44s %7d%s' % (k, r.cov.get(k, 0), '   <-- never reached' if k in REQUIRED and not r.cov.get(k) else ''))
    say('calls (answered / raised):')
    for c in calls:
        say('  %-44s %7d / %d' % (c, r.cov.get('call:%s:ok' % c, 0), r.cov.get('call:%s:error' % c, 0)))
    say('reached %d of %d required' % (len(REQUIRED) - len(missing), len(REQUIRED)))
    if r.bugs:
        say('')
        say('C-edition (A) invariant violations:')
        for x in r.bugs:
            say('  ' + x)
    rc = 0
    if args.selftest:
        expect = {'trigger': '(planted)', 'grant': '42501'}[args.plant]
        if failed and 'DIFFERENCE' in failed and expect in failed:
            say('')
            say(failed)
            say('')
            say('seq_diff selftest: passed (the difference planted in B (%s) was reported)' % args.plant)
        else:
            say('seq_diff selftest: FAILED (the difference planted in B (%s) was not reported as one showing %r%s)' % (args.plant, expect, ':\n' + failed if failed else ''))
            rc = 1
    else:
        if failed:
            say('')
            say(failed)
            rc = 1
        if args.require_coverage and missing:
            say('missing coverage: %s' % ', '.join(missing))
            rc = 1
        if rc == 0:
            say('seq_diff: no difference (seed %s, %d sequences, %d calls, %d dumped rows, %.1f s)' % (
                args.seed, args.sequences, r.ncalls, rows_compared, dt))
    if args.report:
        with open(args.report, 'w') as f:
            f.write('\n'.join(out) + '\n')
    a.close()
    b.close()
    return rc


if __name__ == '__main__':
    sys.exit(main())
