/*
 * Facts across an upgrade to scoped parts, as a Promela model.
 *
 * Tenant A's business fact F may be recorded under two IDs: unscoped
 * (fact#kind#key, by an event stored before scopes: impl:
 * inbox.Event.PartScope) and in A's scope (fact#@stripe#acct_a#kind#key).
 * Tenant B's fact with the same kind and key is B's own. On a table that
 * may hold unscoped facts every commit checks each fact's twin in the
 * other layout (impl: inboxstore.Store.twinsOf, inboxstore.Store.check), in
 * the same transaction — or, for the facts whose checks do not fit in
 * its 100 items, by a consistent read just before it (impl:
 * inboxstore.Store.recorded). An unscoped fact counts for a scoped event
 * only when an event of the same source and account recorded it.
 *
 * Events, each committing F once and possibly again (a forced re-run):
 *   Old:  A's event stored before the upgrade (unscoped), which may have
 *         committed before it too (the initial state);
 *   New:  A's event stored after it (scoped);
 *   Other: B's event stored before it, whose unscoped fact is B's;
 *   NewB: B's event stored after it.
 * Each commit is one atomic step, as DynamoDB's transaction is (impl:
 * inboxstore.Store.Complete). With -DREAD the New event's check is the
 * read before its transaction (a plan of more facts than fit). With
 * -DNOTWINS there are no twin checks: the properties must then fail.
 *
 * Properties: A's fact is recorded at most once in all (unscoped by A, or
 * in A's scope), B's likewise; and B's events are never refused for A's
 * fact: when all is done, B's fact is recorded.
 */

#define NOBODY 0
#define A      1
#define B      2

#ifdef NOTWINS
#define TWINS 0
#else
#define TWINS 1
#endif
#ifdef READ
#define READS 1
#else
#define READS 0
#endif

byte unscoped = NOBODY;   /* who recorded fact#kind#key: the one unscoped item */
bool scopedA = false;     /* fact#@…#acct_a#kind#key */
bool scopedB = false;     /* fact#@…#acct_b#kind#key */
byte done = 0;

/* impl: inboxstore.Store.Complete */
inline commitUnscoped(who) {
	atomic {
		/* its own Put IF absent, and (twins) its scoped twin's check */
		if
		:: unscoped == NOBODY && (!TWINS || !((who == A && scopedA) || (who == B && scopedB))) -> unscoped = who
		:: else -> skip   /* refused: the fact exists */
		fi
	}
}

/* A's scoped event: the twin counts only if A recorded it. With READS,
 * the check is a read made before the transaction. */
inline commitScopedA(seen) {
	/* impl: inboxstore.Store.recorded */
	seen = (unscoped == A);
	atomic {
		if
		:: !scopedA && (!TWINS || (READS && !seen) || (!READS && unscoped != A)) -> scopedA = true
		:: else -> skip
		fi
	}
}

inline commitScopedB() {
	atomic {
		if
		:: !scopedB && (!TWINS || unscoped != B) -> scopedB = true
		:: else -> skip
		fi
	}
}

proctype Old() {
	commitUnscoped(A);
	commitUnscoped(A);   /* a forced re-run */
	done++
}

proctype New() {
	bool seen;
	commitScopedA(seen);
	commitScopedA(seen); /* a forced re-run */
	done++
}

proctype Other() {
	commitUnscoped(B);
	done++
}

proctype NewB() {
	commitScopedB();
	done++
}

init {
	/* Before the upgrade: A's old event committed already, or not yet. */
	if
	:: unscoped = A
	:: skip
	fi;
	atomic {
		run Old(); run New(); run Other(); run NewB()
	}
	(done == 4);
	/* A's fact once, B's fact once: never twice, never lost to A's. */
	assert((unscoped == A) + scopedA == 1);
	assert((unscoped == B) + scopedB == 1)
}
