/*
 * One event under the operator's and the sweep's acts, as a Promela model:
 * the paths inbox.pml does not take. The event fails once (a transient
 * failure: its backoff starts), is swept when its message is gone, is
 * committed with an entity update that adds (Add) and one outbox row, is
 * delivered by passes that settle its outbox, and is re-run once by an
 * operator (force) after it settled.
 *
 * Time is abstract: RetryClock makes a failed event's backoff end
 * (retryDue), SweepClock makes an unfinished event overdue for the sweep
 * (sweepDue), in any order. A message is received until its event is
 * claimed, or refused while the backoff lasts (impl:
 * processor.Processor.notNow) until its receives run out and it is
 * acknowledged.
 *
 * Three mutations restore the bugs issue 28 found; `make model` checks
 * that each one fails, and that the model passes without them:
 *   -DSHARED_CLOCK  the sweep's reschedule also moves the claim's "not
 *                   before" (one due_ms for both): finding 1;
 *   -DSAME_GEN      a forced re-run leaves the outbox generation as it
 *                   is: finding 2;
 *   -DUNGUARDED     the update is neither ordered nor tied to a fact (a
 *                   transition alone): finding 4.
 *
 * Properties: the update applies at most once (assert); the outbox is
 * never settled while a row is pending (assert at the settle); the event
 * ends processed with its outbox settled (LTL, under weak fairness).
 */

#define MAXRC 2   /* receives of one message */

#define RECEIVED   1
#define PROCESSING 2
#define PROCESSED  3
#define FAILED     4

byte status = RECEIVED;
bool retryDue = true;    /* the claim's "not before" has passed (retry_ms) */
bool sweepDue = false;   /* the sweep's clock says overdue (due_ms) */
byte msgs = 1;           /* the event's messages in the queue */
byte rc = 0;             /* receives of the message at the head */
bool failedOnce = false;
byte gen = 0;            /* the outbox generation */
bool reran = false;
byte rows = 0;           /* outbox rows pending delivery */
bool pending = false;    /* the event's outbox is not settled */
byte adds = 0;           /* times the entity's Add applied */
bool ordered = false;    /* the entity holds this event's order */

ltl finished { <> [] (status == PROCESSED && !pending) }

/* Delivery passes: a commit asks for one, with the generation its claim
 * read (impl: inbox.Event.OutboxGen), the sweep for one more when an
 * outbox stays unsettled, with the generation then. A pass delivers the
 * rows and settles — and the SDK may retry its settle, its answer lost,
 * any time later, even after a re-run. Two workers run them, so a slow
 * pass of the first run and the re-run's pass overlap. */
chan jobs = [2] of { byte };

inline settle() {
	atomic {
		if
		:: status == PROCESSED && pending && gen == read ->
			assert(rows == 0);   /* never settled with a row pending */
			pending = false
		:: else -> skip
		fi
	}
}

active [2] proctype Pass() {
	byte read;
end:
	do
	:: jobs ? read;
		/* impl: outbox.Deliverer.Deliver */
		atomic { if :: rows > 0 -> rows = 0 :: else -> skip fi }
		/* impl: inboxstore.Store.SettleOutbox */
		settle();
		if
		:: settle()   /* the SDK's retry of it, later */
		:: skip
		fi
	od
}

active proctype Consumer() {
end:
	do
	:: atomic {
		msgs > 0 ->
		if
		/* impl: inboxstore.Store.Claim */
		:: status == RECEIVED || (status == FAILED && retryDue) ->
			status = PROCESSING;
			if
			:: !failedOnce ->
				/* impl: processor.Processor.failed */
				failedOnce = true;
				status = FAILED; retryDue = false; sweepDue = false;
				rc++;
				if :: rc >= MAXRC -> msgs--; rc = 0 :: else -> skip fi
			:: else ->
				/* impl: inboxstore.Store.Complete */
#ifdef UNGUARDED
				adds++;
#else
				if :: !ordered -> adds++; ordered = true :: else -> skip fi;
#endif
				assert(adds <= 1);
				status = PROCESSED; rows++; pending = true;
				msgs--; rc = 0;
				jobs ! gen
			fi
		:: status == FAILED && !retryDue ->
			/* impl: processor.Processor.notNow */
			rc++;
			if :: rc >= MAXRC -> msgs--; rc = 0 :: else -> skip fi
		:: status == PROCESSED ->
			msgs--; rc = 0   /* already processed: acknowledged */
		fi
	   }
	od
}

/* Time: a failed event's backoff ends; an unfinished event becomes
 * overdue. Two processes, so that weak fairness lets neither wait for
 * ever. */
active proctype RetryClock() {
end:
	do
	:: atomic { status == FAILED && !retryDue -> retryDue = true }
	od
}

active proctype SweepClock() {
end:
	do
	:: atomic { (status == RECEIVED || status == FAILED) && !sweepDue -> sweepDue = true }
	od
}

/* impl: replay.run.sweep, inboxstore.Store.Reschedule */
active proctype Sweep() {
end:
	do
	:: atomic {
		(status == RECEIVED || status == FAILED) && sweepDue && msgs == 0 ->
		sweepDue = false;
#ifdef SHARED_CLOCK
		retryDue = false;
#endif
		msgs++; rc = 0
	   }
	:: atomic {
		/* an unsettled outbox: a pass for it (the sweep's message) */
		status == PROCESSED && pending && empty(jobs) && msgs == 0 -> jobs ! gen
	   }
	od
}

/* impl: inboxstore.Store.Requeue */
active proctype Operator() {
end:
	atomic {
		status == PROCESSED && !pending && !reran ->
		reran = true;
		status = FAILED; retryDue = true; sweepDue = false;
#ifndef SAME_GEN
		gen++;
#endif
		msgs++; rc = 0
	}
}
