package handlers

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// Names of the parts the GitHub handler declares.
const (
	// PushCommitKind is the fact kind of a pushed commit, keyed by
	// "<repository full_name>@<sha>".
	PushCommitKind = "push_commit"
	// BranchEntity is a ref's head, keyed by "<repository
	// full_name>:<ref>" with the full ref ("refs/heads/main"). Tags are
	// refs that pushes move too, and are kept the same way
	// ("refs/tags/v1").
	BranchEntity = "branch"
)

// maxPushCommits is how many commit facts one push declares: the plan's
// parts less the branch update.
const maxPushCommits = effects.MaxParts - 1

// maxUnixSeconds is 9999-12-31T23:59:59Z, the last second RFC 3339 can
// write; later push times are garbage, and their milliseconds could
// overflow an int64.
const maxUnixSeconds = 253402300799

// GitHubPush handles push. It declares:
//
//   - a PushCommitKind fact for each entry of commits, keyed by the
//     repository's full name and the sha, with repository, sha, ref (of
//     the push that recorded it first), author (the GitHub username, when
//     the payload has one) and timestamp (the commit's, as sent). Commit
//     messages, names and email addresses are not copied: the fact keeps
//     what identifies the commit and no more. Entries with "distinct":
//     false were recorded by the push that introduced them; declaring
//     them again is harmless, since a fact is written once, and records
//     them when that push was never seen;
//   - an update of the pushed ref's BranchEntity setting head (the after
//     sha; "" when the push deletes the ref), repository, ref and deleted,
//     ordered by the push's time (see pushMillis), ties by the after sha,
//     so that a late delivery of an older push is stale.
//
// The commits array is not capped at 20 for webhook deliveries (GitHub's
// documented 20 applies to timeline events), so a large push can carry
// more commits than fit one transaction: the facts declared are then the
// first maxPushCommits in the payload's order, distinct ones first, and
// the rest are not recorded — no later event carries them. The branch
// head is right regardless.
//
// The payload is the JSON body, or, for hooks whose content type is
// application/x-www-form-urlencoded, a form whose payload field is the
// JSON: the inbox keeps bodies as received.
func GitHubPush(_ context.Context, ev inbox.Event) (effects.Plan, error) {
	const what = "github push"
	var push githubPush
	if err := decode(what, githubJSON(ev.Payload), &push); err != nil {
		return effects.Plan{}, err
	}
	repo := push.Repository.FullName
	switch {
	case repo == "":
		return effects.Plan{}, permanentf("%s: no repository.full_name", what)
	case push.Ref == "":
		return effects.Plan{}, permanentf("%s: no ref", what)
	case push.After == "":
		return effects.Plan{}, permanentf("%s: no after sha", what)
	}
	at, err := pushMillis(push, ev.Created)
	if err != nil {
		return effects.Plan{}, permanentf("%s: %w", what, err)
	}

	commits, err := pushCommits(push.Commits)
	if err != nil {
		return effects.Plan{}, permanentf("%s: %w", what, err)
	}
	var plan effects.Plan
	for _, c := range commits {
		attrs := map[string]any{"repository": repo, "sha": c.ID, "ref": push.Ref}
		if c.Author.Username != "" {
			attrs["author"] = c.Author.Username
		}
		if c.Timestamp != "" {
			attrs["timestamp"] = c.Timestamp
		}
		plan.Facts = append(plan.Facts, effects.Fact{Kind: PushCommitKind, Key: repo + "@" + c.ID, Attributes: attrs})
	}

	// A deleted ref's after is the null sha: 40 zeros (64 in a SHA-256
	// repository).
	deleted := push.Deleted || strings.Trim(push.After, "0") == ""
	head := push.After
	if deleted {
		head = ""
	}
	plan.Updates = append(plan.Updates, effects.Update{
		Entity: BranchEntity,
		Key:    repo + ":" + push.Ref,
		// deleted is set on every push, so that a ref created again after
		// its deletion is no longer marked deleted.
		Set:   map[string]any{"head": head, "repository": repo, "ref": push.Ref, "deleted": deleted},
		Order: &effects.Order{Seq: at, Tie: push.After},
	})
	return validated(what, plan)
}

// githubPush is the part of a push payload the handler reads.
type githubPush struct {
	Ref        string `json:"ref"`
	After      string `json:"after"`
	Deleted    bool   `json:"deleted"`
	Repository struct {
		FullName string `json:"full_name"`
		// PushedAt is epoch seconds in push payloads, an RFC 3339
		// string in other events' repository objects.
		PushedAt json.RawMessage `json:"pushed_at"`
	} `json:"repository"`
	HeadCommit *struct {
		Timestamp string `json:"timestamp"`
	} `json:"head_commit"`
	Commits []githubCommit `json:"commits"`
}

type githubCommit struct {
	ID string `json:"id"`
	// Distinct is false for a commit already pushed to the repository
	// (to another ref); absent counts as true.
	Distinct  *bool  `json:"distinct"`
	Timestamp string `json:"timestamp"`
	Author    struct {
		Username string `json:"username"`
	} `json:"author"`
}

// pushedBefore is 1 for a commit that is not distinct, 0 otherwise: the
// sort key that puts distinct commits first.
func (c githubCommit) pushedBefore() int {
	if c.Distinct != nil && !*c.Distinct {
		return 1
	}
	return 0
}

// pushCommits returns the commits to record: each sha once (a fact
// declared twice would not validate), in the payload's order, at most
// maxPushCommits — distinct ones first when there are more, since the
// others were recorded with the push that introduced them. An entry
// without an id is malformed.
func pushCommits(all []githubCommit) ([]githubCommit, error) {
	seen := make(map[string]bool, len(all))
	var out []githubCommit
	for i, c := range all {
		if c.ID == "" {
			return nil, fmt.Errorf("commits[%d] has no id", i)
		}
		if !seen[c.ID] {
			seen[c.ID] = true
			out = append(out, c)
		}
	}
	if len(out) > maxPushCommits {
		slices.SortStableFunc(out, func(a, b githubCommit) int {
			return cmp.Compare(a.pushedBefore(), b.pushedBefore())
		})
		out = out[:maxPushCommits]
	}
	return out, nil
}

// pushMillis is the push's time in milliseconds, the order of its branch
// update: repository.pushed_at, the repository's last push, which in a
// push payload is this push; else head_commit.timestamp, the commit's own time (a weaker order: a
// rebased or old commit can carry any time); else the event's creation
// time, when the source gives one. Pushes to one ref within the same
// second are ordered by their after sha, arbitrarily. A push with none of
// them, or one that does not parse, is an error.
func pushMillis(p githubPush, created time.Time) (int64, error) {
	if raw := bytes.TrimSpace(p.Repository.PushedAt); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if raw[0] == '"' {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return 0, fmt.Errorf("repository.pushed_at: %w", err)
			}
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return 0, fmt.Errorf("repository.pushed_at %s is not RFC 3339", quote(s))
			}
			return millis("repository.pushed_at", t)
		}
		var sec int64
		if err := json.Unmarshal(raw, &sec); err != nil {
			return 0, errors.New("repository.pushed_at is neither epoch seconds nor an RFC 3339 string")
		}
		return millis("repository.pushed_at", time.Unix(sec, 0))
	}
	if hc := p.HeadCommit; hc != nil && hc.Timestamp != "" {
		t, err := time.Parse(time.RFC3339, hc.Timestamp)
		if err != nil {
			return 0, fmt.Errorf("head_commit.timestamp %s is not RFC 3339", quote(hc.Timestamp))
		}
		return millis("head_commit.timestamp", t)
	}
	if !created.IsZero() {
		return millis("the event's creation time", created)
	}
	return 0, errors.New("no push time: no repository.pushed_at, head_commit.timestamp or event creation time")
}

// millis is t in epoch milliseconds, if t is after 1970 and before the
// year 10000.
func millis(what string, t time.Time) (int64, error) {
	if s := t.Unix(); s <= 0 || s > maxUnixSeconds {
		return 0, fmt.Errorf("%s %d: out of range", what, s)
	}
	return t.UnixMilli(), nil
}

// githubJSON is the JSON of a GitHub delivery: the body itself, or the
// payload field of a form-encoded one. Anything else is returned as is,
// for the JSON decoder to refuse.
func githubJSON(payload []byte) []byte {
	if trimmed := bytes.TrimSpace(payload); len(trimmed) == 0 || trimmed[0] == '{' {
		return payload
	}
	form, err := url.ParseQuery(string(payload))
	if err != nil || len(form["payload"]) != 1 {
		return payload
	}
	return []byte(form["payload"][0])
}
