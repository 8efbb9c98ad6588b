/*
 * jetstream.c: the NATS JetStream side of the consumer.
 *
 * Positions are stream sequences (1, 2, ...; dense in a stream that nothing
 * deletes from).  The continuation handle is an *ephemeral pull consumer*:
 * created with DeliverByStartSequence at the position we need, AckPolicy
 * none (the guard, not the broker, remembers what was applied) and an
 * InactiveThreshold, so the server deletes it once nobody pulls from it for
 * that long.  Its name is what the checkpoint stores as provider_token.
 *
 * What the server tells us, and what we make of it:
 *
 *   - a pull that returns nothing (NATS_TIMEOUT) or fails proves nothing by
 *     itself: an idle stream and a deleted consumer look the same;
 *   - so after every such pull we ask for the consumer's info: the JetStream
 *     API answers a deleted or expired consumer with error code 10014,
 *     JSConsumerNotFoundErr ("consumer not found", status.h of the NATS C
 *     client).  That, and only that, is "the token expired" (recovery);
 *   - any other failure (timeout, no responders, connection lost) is
 *     transient: the caller backs off and asks again;
 *   - JetStream consumers skip what is no longer in the stream: a message
 *     whose sequence is above the one we expect is a jump.  The caller
 *     asks the stream's first sequence (retention moved it past the
 *     expected one) and for the expected message itself (error 10037,
 *     JSNoMessageFoundErr: deleted); either is a loss to report, anything
 *     else only means the consumer must be positioned again.
 */
#include "consumer.h"

#include <stdio.h>
#include <string.h>

/* Connect to NATS; the client library reconnects by itself afterwards. */
bool
js_connect(Worker *w)
{
	natsOptions *opts = NULL;
	jsOptions	jo;
	natsStatus	s;

	s = natsOptions_Create(&opts);
	if (s == NATS_OK)
		s = natsOptions_SetURL(opts, w->cfg.nats_url);
	if (s == NATS_OK)
		s = natsOptions_SetName(opts, w->cfg.owner);
	if (s == NATS_OK)
		s = natsOptions_SetTimeout(opts, 2000);
	if (s == NATS_OK)
		s = natsOptions_SetMaxReconnect(opts, -1);	/* forever */
	if (s == NATS_OK)
		s = natsOptions_SetReconnectWait(opts, 250);
	if (s == NATS_OK)
		s = natsConnection_Connect(&w->nc, opts);
	natsOptions_Destroy(opts);
	if (s != NATS_OK)
	{
		logf_event(w, "NATS_ERROR", "step=connect status=\"%s\"",
				   natsStatus_GetText(s));
		return false;
	}
	jsOptions_Init(&jo);
	jo.Wait = 2000;				/* ms for each JetStream API request */
	s = natsConnection_JetStream(&w->js, w->nc, &jo);
	return s == NATS_OK;
}

/*
 * The stream's identity (name @ creation time, in nanoseconds since the
 * epoch) and its subject.  A stream deleted and created again under the
 * same name has another identity, and claim() then answers
 * unrecoverable_divergence instead of letting us apply a different stream.
 */
bool
js_stream_identity(Worker *w)
{
	jsStreamInfo *si = NULL;
	jsErrCode	jerr = 0;
	natsStatus	s;

	s = js_GetStreamInfo(&si, w->js, w->cfg.stream, NULL, &jerr);
	if (s != NATS_OK)
	{
		logf_event(w, "NATS_ERROR", "step=stream_info status=\"%s\" code=%d",
				   natsStatus_GetText(s), (int) jerr);
		return false;
	}
	snprintf(w->identity, sizeof(w->identity), "%s@%lld",
			 w->cfg.stream, (long long) si->Created);
	snprintf(w->subject, sizeof(w->subject), "%s",
			 si->Config->SubjectsLen > 0 ? si->Config->Subjects[0] : ">");
	jsStreamInfo_Destroy(si);
	return true;
}

/* The oldest and newest sequence the stream still holds. */
bool
js_first_seq(Worker *w, uint64_t *first, uint64_t *last)
{
	jsStreamInfo *si = NULL;
	jsErrCode	jerr = 0;
	natsStatus	s;

	s = js_GetStreamInfo(&si, w->js, w->cfg.stream, NULL, &jerr);
	if (s != NATS_OK)
	{
		logf_event(w, "NATS_ERROR", "step=stream_info status=\"%s\" code=%d",
				   natsStatus_GetText(s), (int) jerr);
		return false;
	}
	*first = si->State.FirstSeq;
	*last = si->State.LastSeq;
	jsStreamInfo_Destroy(si);
	return true;
}

/*
 * Create an ephemeral pull consumer that delivers from start_seq on, and
 * bind a pull subscription to it.  The server names it; the name goes into
 * w->cons (and into the checkpoint at the next commit_page or promote).
 */
bool
js_open_consumer(Worker *w, uint64_t start_seq)
{
	jsConsumerConfig cc;
	jsConsumerInfo *ci = NULL;
	jsSubOptions so;
	jsErrCode	jerr = 0;
	natsStatus	s;

	js_close_consumer(w, false);
	jsConsumerConfig_Init(&cc);
	cc.DeliverPolicy = js_DeliverByStartSequence;
	cc.OptStartSeq = start_seq < 1 ? 1 : start_seq;
	cc.AckPolicy = js_AckNone;
	cc.InactiveThreshold = (int64_t) w->cfg.inactive_ms * 1000000;
	cc.Description = w->cfg.owner;
	s = js_AddConsumer(&ci, w->js, w->cfg.stream, &cc, NULL, &jerr);
	if (s != NATS_OK)
	{
		logf_event(w, "NATS_ERROR", "step=add_consumer status=\"%s\" code=%d",
				   natsStatus_GetText(s), (int) jerr);
		return false;
	}
	snprintf(w->cons, sizeof(w->cons), "%s", ci->Name);
	jsConsumerInfo_Destroy(ci);

	jsSubOptions_Init(&so);
	so.Stream = w->cfg.stream;
	so.Consumer = w->cons;
	s = js_PullSubscribe(&w->sub, w->js, w->subject, NULL, NULL, &so, &jerr);
	if (s != NATS_OK)
	{
		logf_event(w, "NATS_ERROR", "step=pull_subscribe status=\"%s\" code=%d",
				   natsStatus_GetText(s), (int) jerr);
		w->sub = NULL;
		return false;
	}
	w->next = cc.OptStartSeq;
	logf_event(w, "CONSUMER", "name=%s start=%llu inactive_ms=%d", w->cons,
			   (unsigned long long) cc.OptStartSeq, w->cfg.inactive_ms);
	return true;
}

/* Drop our subscription; delete the server's consumer only when asked. */
void
js_close_consumer(Worker *w, bool delete_it)
{
	if (w->sub != NULL)
		natsSubscription_Destroy(w->sub);	/* 3.4: does not delete it */
	w->sub = NULL;
	if (delete_it && w->cons[0] != '\0')
		(void) js_DeleteConsumer(w->js, w->cfg.stream, w->cons, NULL, NULL);
}

/*
 * Pull up to max records.  Keeps the contiguous run that starts at w->next
 * (advancing w->next), skips anything below it (a redelivery), and stops at
 * a jump past it.
 */
FetchResult
js_fetch(Worker *w, int max, Page *p)
{
	jsFetchRequest fr;
	natsMsgList list = {0};
	natsStatus	s;
	bool		jumped = false;
	int			i;

	page_clear(p);
	if (w->sub == NULL)
		return FETCH_ERROR;
	jsFetchRequest_Init(&fr);
	fr.Batch = max;
	fr.Expires = (int64_t) w->cfg.fetch_wait_ms * 1000000;
	s = natsSubscription_FetchRequest(&list, w->sub, &fr);
	for (i = 0; i < list.Count && !jumped; i++)
	{
		jsMsgMetaData *md = NULL;

		if (natsMsg_GetMetaData(&md, list.Msgs[i]) != NATS_OK)
			continue;
		if (md->Sequence.Stream == w->next)
		{
			page_add(p, w->next, natsMsg_GetData(list.Msgs[i]),
					 natsMsg_GetDataLength(list.Msgs[i]));
			w->next++;
		}
		else if (md->Sequence.Stream > w->next)
		{
			logf_event(w, "JUMP", "expected=%llu got=%llu",
					   (unsigned long long) w->next,
					   (unsigned long long) md->Sequence.Stream);
			w->jump_to = md->Sequence.Stream;
			jumped = true;
		}
		jsMsgMetaData_Destroy(md);
	}
	natsMsgList_Destroy(&list);
	if (jumped)
		return FETCH_JUMP;
	if (p->n > 0)
		return FETCH_OK;
	return s == NATS_OK || s == NATS_TIMEOUT ? FETCH_EMPTY : FETCH_ERROR;
}

/* Does our pull consumer still exist?  Only 10014 means "no". */
ConsumerState
js_consumer_state(Worker *w)
{
	jsConsumerInfo *ci = NULL;
	jsErrCode	jerr = 0;
	natsStatus	s;

	s = js_GetConsumerInfo(&ci, w->js, w->cfg.stream, w->cons, NULL, &jerr);
	if (s == NATS_OK)
	{
		jsConsumerInfo_Destroy(ci);
		return CONSUMER_ALIVE;
	}
	if (jerr == JSConsumerNotFoundErr)
		return CONSUMER_NOT_FOUND;
	logf_event(w, "NATS_ERROR", "step=consumer_info status=\"%s\" code=%d",
			   natsStatus_GetText(s), (int) jerr);
	return CONSUMER_UNKNOWN;
}

/* Is the message at seq still in the stream?  10037 means it is not. */
MsgState
js_msg_state(Worker *w, uint64_t seq)
{
	natsMsg    *msg = NULL;
	jsErrCode	jerr = 0;
	natsStatus	s;

	s = js_GetMsg(&msg, w->js, w->cfg.stream, seq, NULL, &jerr);
	if (s == NATS_OK)
	{
		natsMsg_Destroy(msg);
		return MSG_THERE;
	}
	if (jerr == JSNoMessageFoundErr)
		return MSG_GONE;
	logf_event(w, "NATS_ERROR", "step=get_msg status=\"%s\" code=%d",
			   natsStatus_GetText(s), (int) jerr);
	return MSG_UNKNOWN;
}
