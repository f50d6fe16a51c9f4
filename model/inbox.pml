/*
 * The webhook-inbox protocol, for one event, as a Promela model.
 *
 * Ingest stores the event (its body, then its status) and enqueues a
 * message; a worker's first receive of a message tries the event without
 * a claim, committing only if nobody touched it; otherwise workers claim
 * it with a lease, run its handler, commit the fact with the event's
 * status and an outbox row, deliver the row under its own lease, settle,
 * and ack. SQS
 * redelivers what is not acked and moves a message received MAXRC times
 * to the DLQ; the sweep re-enqueues unfinished events and unsettled
 * outboxes; replay revives a dead event from the DLQ. A worker may crash
 * at every step (its message comes back after the visibility timeout), a
 * lease may expire at any moment (a slow worker), and a call may fail.
 *
 * With AHEAD the row is a FORWARD route's that retries unknowns (its
 * consumers dedupe on the event key): its entry is put under the event's
 * lease, after the claim and before the commit, which writes the row
 * delivered if the put was accepted (and settles the outbox), pending for
 * the outbox's path if not; the first attempt, with no lease, declines
 * such an event, and the last receive leaves the row to the outbox's
 * path; a row whose outcome is unknown is put again, as the route
 * allows. Then a second send is allowed only after an attempt that
 * did not commit or a delivery cut short: sends <= 1 + crashes + expires
 * + faults + replays.
 *
 * Each step names the function that implements it ("impl:"), checked by
 * model/model_test.go so the model changes with the code. `make model`
 * checks the safety properties exhaustively and the liveness ones under
 * weak fairness; see model/README.md.
 */

#define MAXRC   2   /* the main queue's maxReceiveCount */
#define MAXATT  3   /* the event's claim budget (processor.Config.MaxAttempts) */
#define ROWATT  2   /* a row's attempt budget (outbox.Config.MaxAttempts) */
#define CRASHES 1   /* worker crashes in a run */
#define EXPIRES 1   /* leases that end under a working worker */
#define FAULTS  1   /* failed calls: handler errors, refused sends */

/* event status */
#define NONE       0
#define RECEIVED   1
#define PROCESSING 2
#define PROCESSED  3
#define FAILED     4
#define DEAD       5

/* outbox row state */
#define R_NONE       0
#define R_PENDING    1
#define R_DELIVERING 2
#define R_DELIVERED  3
#define R_FAILED     4
#define R_UNKNOWN    5
#define R_DEAD       6

byte status = NONE;
bool body = false;       /* the event's body item (payload, headers) is stored */
byte owner = 0;          /* the event's lease owner token, 0 for none */
bool lease = false;      /* the lease is live */
byte attempts = 0;
byte facts = 0;          /* facts written: must stay <= 1 */

byte row = R_NONE;
byte rowOwner = 0;
bool rowLease = false;
byte rowAttempts = 0;
bool pendingOutbox = false;  /* the event's outbox is not settled */
byte sends = 0;          /* requests that reached the receiver */
#ifdef AHEAD
/* Each send past the first must follow an attempt or a delivery that
 * ended without its record: a crash, a lease ended early, a failed or
 * unknown call, a replay of the dead event. */
#define SENDS_BOUND (sends <= 1 + crashes + expires + faults + replayed)
#else
#define SENDS_BOUND (sends <= 1)   /* no retry_unknown: never sent twice */
#endif

byte cur[2];             /* each worker's current owner token */
byte crashes = 0;
byte expires = 0;
byte faults = 0;
byte dlq = 0;            /* messages in the DLQ */
bool replayed = false;

/* The main queue: a message is its receive count. SQS has no bound; the
 * model's is never reached (giveBack asserts it). */
chan queue = [5] of { byte };

#define unfinished (status == RECEIVED || status == PROCESSING || status == FAILED)

/* A message comes back after its visibility timeout, or moves to the
 * DLQ when it has been received MAXRC times. */
inline giveBack(rc) {
	if
	:: rc >= MAXRC ->
		/* SQS's redrive: only a dead event's message, unless the worker
		 * holding it crashed on its last receive (then the event is
		 * unfinished and the sweep finishes it; drain-dlq drops the copy). */
		assert(status == DEAD || crashedLast);
		dlq++
	:: else -> assert(nfull(queue)); queue!rc
	fi
}

/* impl: ingest.Handler.store, inboxstore.Store.Insert, queue.Queue.Enqueue */
proctype Provider() {
	byte tries = 0;
	do
	:: tries < 2 ->
		tries++;
#ifndef STATUS_FIRST
		/* The body, then the status: a stop between them (on the first
		 * try: the second stores the event) leaves a body nothing points
		 * at, and no 2xx, so the provider sends the delivery again. */
		body = true;
		if
		:: tries == 1 -> goto again
		:: true -> skip
		fi;
		atomic { if :: status == NONE -> status = RECEIVED :: else -> skip fi };
#else
		/* Broken on purpose: the status first. */
		atomic { if :: status == NONE -> status = RECEIVED :: else -> skip fi };
		if
		:: tries == 1 -> goto again
		:: true -> skip
		fi;
		body = true;
#endif
		if
		:: unfinished && nfull(queue) -> queue!0   /* stored (or a duplicate still unfinished): enqueued */
		:: true -> skip                              /* the enqueue failed (503) or the event is finished */
		fi;
	again:	skip
	:: else -> break
	od
}

/* An owner token for worker me that no lease, row or other worker holds:
 * as unique as the real ones (request id + message id + index) for as long
 * as anything refers to them, and few enough to keep the model finite. */
inline newToken(me, t) {
	d_step {
		t = 1;
		do
		:: t == owner || t == rowOwner || t == cur[0] || t == cur[1] -> t++
		:: else -> break
		od;
		cur[me] = t
	}
}

/* A crash: the worker stops, and its message comes back after the
 * visibility timeout (or, on its last receive, goes to the DLQ). */
#define CRASH  (crashes < CRASHES)
/* The other branch at a crash point. Spin tries both at every point; the
 * liveness run (make model) builds with CRASH_FIRST, where a worker with
 * the crash unspent takes it at its first crash point: with crashes at
 * every point, the search for cycles does not fit in memory here, and
 * the safety run (assertions, and the timeout monitor for runs that
 * stop) covers every point. */
#ifdef CRASH_FIRST
#define NOCRASH :: else -> skip
#else
#define NOCRASH :: true -> skip
#endif
inline crash() {
	crashes++; crashedLast = (rc >= MAXRC); giveBack(rc); goto next
}

/* Each store or queue call is one atomic step, as DynamoDB and SQS make
 * it; between two steps anything else may happen, and before each one the
 * worker may crash. */

/* impl: processor.Processor.Handle */
proctype Worker(byte me) {
	byte rc, tok;
	bool crashedLast;
	bool accepted;   /* this attempt's put ahead was accepted (AHEAD) */
end:	do
	:: atomic { queue?rc -> rc++; newToken(me, tok) };

		/* A message's first receive tries the event without a claim, if
		 * nobody has tried it yet. impl: processor.Processor.first,
		 * inboxstore.Store.Peek */
		if
		:: rc == 1 ->
			atomic {
				if
				:: CRASH -> crash()
				NOCRASH
				fi;
				if
				:: status == RECEIVED && attempts == 0 -> assert(body)   /* the read finds its payload */
				:: else -> goto claim
				fi;
#if defined(AHEAD) && !defined(AHEAD_FIRST)
				/* A forwarding route that puts ahead: only under a lease. */
				goto claim
#endif
			}
#ifdef AHEAD_FIRST
			/* broken on purpose: the first attempt puts its entry too,
			 * with no lease, before its fenced commit */
			atomic { sends++; accepted = true; assert(SENDS_BOUND) }
#endif
			/* The handler, and its commit fenced by the event being as
			 * stored. impl: inboxstore.Store.CompleteFirst */
			atomic {
				if
				:: CRASH -> crash()
				NOCRASH
				fi;
				if
				:: faults < FAULTS -> faults++; goto claim   /* failed: the claim's path counts and records it */
#ifndef UNFENCED_FIRST
				:: status == RECEIVED && attempts == 0 ->
#else
				:: true ->   /* broken on purpose: no fence */
#endif
					facts++;
					assert(facts <= 1);
					status = PROCESSED; attempts = 1; lease = false; owner = 0;
#ifdef AHEAD_FIRST
					row = R_DELIVERED; pendingOutbox = false;
					goto next;
#endif
					row = R_PENDING; pendingOutbox = true;
					goto deliver
				:: else -> goto claim   /* claimed or processed meanwhile: the claim's path answers */
				fi
			}
		:: else -> skip
		fi;

	claim:
		/* impl: inboxstore.Store.Claim */
		atomic {
			if
			:: CRASH -> crash()
			NOCRASH
			fi;
			if
			:: status == RECEIVED || status == FAILED || (status == PROCESSING && !lease) ->
				assert(body);   /* the claim reads its payload */
				status = PROCESSING; owner = tok; lease = true; attempts++
			:: status == PROCESSED -> goto deliver   /* its outbox, if unsettled */
			:: status == DEAD -> goto next           /* final: acknowledged */
			:: status == PROCESSING && lease ->      /* held elsewhere: back later, or the holder's */
#ifndef REPORT_HELD
				if :: rc >= MAXRC -> goto next :: else -> giveBack(rc); goto next fi
#else
				giveBack(rc); goto next   /* broken on purpose: reported on its last receive too */
#endif
			fi
		}

#ifdef AHEAD
		/* The entry put under the lease, before the commit, bounded to
		 * end while the lease lasts. impl: processor.Processor.putAhead,
		 * outbox.Deliverer.Ahead */
		atomic {
			if
			:: CRASH -> crash()
			NOCRASH
			fi;
			if
			:: attempts > MAXATT -> goto dead
			:: rc >= MAXRC -> skip   /* the last receive: after the commit, as the row's path */
			:: !(status == PROCESSING && owner == tok && lease) -> skip   /* no time left in the lease: not put */
			:: else ->
				if
				:: faults < FAULTS -> faults++          /* refused, or not sent: the row goes pending */
				:: faults < FAULTS -> faults++; sends++   /* sent, its answer lost: pending, put again later */
				:: true -> sends++; accepted = true
				fi;
				assert(SENDS_BOUND)
			fi
		}
#endif

		/* The handler, and its commit. impl: processor.Processor.record */
		atomic {
			if
			:: CRASH -> crash()
			NOCRASH
			fi;
			if
			:: attempts > MAXATT -> goto dead
			:: faults < FAULTS -> faults++;     /* a transient failure */
				/* impl: processor.Processor.failed */
				if
				:: rc >= MAXRC -> goto dead
				:: else ->
					if :: status == PROCESSING && owner == tok -> status = FAILED; lease = false :: else -> skip fi;
					giveBack(rc); goto next
				fi
			:: true ->
				/* impl: inboxstore.Store.Complete */
				if
#ifndef UNFENCED_COMMIT
				:: status == PROCESSING && owner == tok ->
#else
				:: true ->   /* broken on purpose: no condition */
#endif
					facts++;   /* the fact IF absent: only this commit writes it */
					assert(facts <= 1);
					status = PROCESSED; lease = false; owner = 0;
#ifdef AHEAD
					/* impl: inboxstore.Store.CompleteDeliveredExpiring */
#ifndef AHEAD_BLIND
					if
					:: accepted -> row = R_DELIVERED; pendingOutbox = false   /* settled in the commit */
					:: else -> row = R_PENDING; pendingOutbox = true
					fi;
#else
					row = R_DELIVERED; pendingOutbox = false   /* broken on purpose: delivered, whatever the put's answer */
#endif
					assert(row != R_DELIVERED || sends > 0)
#else
					row = R_PENDING; pendingOutbox = true
#endif
				:: else -> goto next   /* lease lost: the new holder answers for it */
				fi
			fi
		}

	deliver:
		/* impl: outbox.Deliverer.Deliver, inboxstore.Store.ClaimRow */
		atomic {
			if
			:: CRASH -> crash()   /* after the commit, before the ack */
			NOCRASH
			fi;
			if
			:: !pendingOutbox -> goto next
			:: row == R_PENDING || row == R_FAILED ->
				row = R_DELIVERING; rowOwner = tok; rowLease = true; rowAttempts++;
				if :: rowAttempts > ROWATT -> row = R_DEAD; rowLease = false; goto settle :: else -> skip fi
			:: row == R_DELIVERING && !rowLease ->   /* its holder stopped: it may have been sent */
#if !defined(RESEND_STOPPED) && !defined(AHEAD)
				row = R_UNKNOWN; rowOwner = 0; goto settle
#else
				/* broken on purpose (AHEAD: the route retries unknowns): sent again */
				rowOwner = tok; rowLease = true; rowAttempts++;
				if :: rowAttempts > ROWATT -> row = R_DEAD; rowLease = false; goto settle :: else -> skip fi
#endif
			:: else -> goto settle                  /* final, or held by another worker */
			fi
		}

		/* impl: outbox.Deliverer.send */
		atomic {
			if
			:: CRASH -> crash()   /* before the request was written */
			:: faults < FAULTS -> faults++;   /* refused before it was written: not sent */
				/* impl: inboxstore.Store.FinishRow */
				if :: row == R_DELIVERING && rowOwner == tok -> row = R_FAILED; rowLease = false :: else -> skip fi;
				goto settle
			:: true ->
				sends++;
				assert(SENDS_BOUND)
			fi
		}

		/* impl: inboxstore.Store.FinishRow */
		atomic {
			if
			:: CRASH -> crash()   /* sent, not recorded */
			NOCRASH
			fi;
			if
			:: row == R_DELIVERING && rowOwner == tok -> row = R_DELIVERED; rowLease = false
#ifndef AHEAD
			:: row == R_DELIVERING && rowOwner == tok -> row = R_UNKNOWN; rowLease = false   /* sent, no answer */
#else
			/* sent, no answer: failed, put again (the route retries unknowns) */
			:: row == R_DELIVERING && rowOwner == tok && faults < FAULTS -> faults++; row = R_FAILED; rowLease = false
#endif
			:: else -> skip
			fi
		}

	settle:
		/* impl: inboxstore.Store.SettleOutbox */
		atomic {
			if
			:: row == R_DELIVERED || row == R_UNKNOWN || row == R_DEAD -> pendingOutbox = false
			:: else -> skip
			fi;
			if
			:: pendingOutbox && rc < MAXRC -> giveBack(rc)   /* back when the row is due */
			:: else -> skip                                    /* settled, or the sweep's */
			fi;
			goto next
		}

	dead:
		/* impl: processor.Processor.dead */
		atomic {
			if
			:: (status == PROCESSING && (owner == tok || !lease)) || status == RECEIVED || status == FAILED ->
				status = DEAD; lease = false; owner = 0; dlq++   /* and its copy to the DLQ */
			:: status == PROCESSED -> goto deliver
			:: else -> if :: rc < MAXRC -> giveBack(rc) :: else -> skip fi
			fi
		}
	next:
		skip;
		/* Nothing of this receive is kept: the worker's token is free. */
		d_step { rc = 0; tok = 0; crashedLast = false; accepted = false; cur[me] = 0 }
	od
}

/* A lease ends while its worker still works (slow, or past its deadline). */
proctype Clock() {
end:	do
	:: expires < EXPIRES && status == PROCESSING && lease -> expires++; lease = false
	:: expires < EXPIRES && row == R_DELIVERING && rowLease -> expires++; rowLease = false
	/* A lease whose holder has stopped (crashed) ends in its time. */
	:: status == PROCESSING && lease && owner != cur[0] && owner != cur[1] -> lease = false
	:: row == R_DELIVERING && rowLease && rowOwner != cur[0] && rowOwner != cur[1] -> rowLease = false
	od
}

/* impl: replay.run.sweep, inboxstore.Store.Overdue */
proctype Sweep() {
#ifndef NO_SWEEP
end:	do
	:: (unfinished || pendingOutbox) && empty(queue) && !(status == PROCESSING && lease) && !(row == R_DELIVERING && rowLease) ->
		queue!0
	od
#else
	skip   /* broken on purpose: no sweep */
#endif
}

/* impl: replay.run.drainOne, replay.run.replayOne, inboxstore.Store.Requeue */
proctype Replay() {
end:	atomic {
		dlq > 0 && status == DEAD && !replayed && nfull(queue) ->
		replayed = true; dlq--; status = FAILED; attempts = 0; queue!0
	}
}

/* When nothing can move any more (every worker waiting on an empty
 * queue), the event is finished. Spin checks the LTL property below over
 * infinite runs only; this covers the runs that stop. */
proctype Quiet() {
	timeout -> assert((status == PROCESSED && !pendingOutbox) || status == DEAD)
}

init {
	atomic {
		run Quiet();
		run Provider();
		run Worker(0);
		run Worker(1);
		run Clock();
		run Sweep();
		run Replay()
	}
}

/* Every stored event ends processed (its outbox settled) or dead. */
ltl finished { <> [] ((status == PROCESSED && !pendingOutbox) || status == DEAD) }
