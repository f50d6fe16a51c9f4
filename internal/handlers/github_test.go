package handlers

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// githubEvent is the event ingest stores for a push: GitHub's delivery
// GUID as the id (not in the corpus files: made up here), no creation
// time (GitHub's headers give none).
func githubEvent(payload []byte) inbox.Event {
	return inbox.Event{
		Key:     inbox.Key{Source: "github", EventID: "3f2a6c80-7c1e-11ef-8a1e-1b2c3d4e5f60"},
		Kind:    "github",
		Type:    "push",
		Payload: payload,
	}
}

const (
	corpusRepo = "Codertocat/Hello-World"
	corpusSHA  = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"
	nullSHA    = "0000000000000000000000000000000000000000"
	// corpusPushed is the corpus's repository.pushed_at, in milliseconds.
	corpusPushed = int64(1557933657) * 1000
)

func TestGitHubPushCorpus(t *testing.T) {
	// The tag deletions: no commits, the ref's head cleared.
	tagDeleted := effects.Plan{Updates: []effects.Update{{
		Entity: BranchEntity,
		Key:    corpusRepo + ":refs/tags/simple-tag",
		Set:    map[string]any{"head": "", "repository": corpusRepo, "ref": "refs/tags/simple-tag", "deleted": true},
		Order:  &effects.Order{Seq: corpusPushed, Tie: nullSHA},
	}}}
	// The new branch: its one commit, and its head.
	newBranch := effects.Plan{
		Facts: []effects.Fact{{
			Kind: PushCommitKind,
			Key:  corpusRepo + "@" + corpusSHA,
			Attributes: map[string]any{
				"repository": corpusRepo,
				"sha":        corpusSHA,
				"ref":        "refs/heads/master",
				"author":     "Codertocat",
				"timestamp":  "2019-05-15T15:19:25Z",
			},
		}},
		Updates: []effects.Update{{
			Entity: BranchEntity,
			Key:    corpusRepo + ":refs/heads/master",
			Set:    map[string]any{"head": corpusSHA, "repository": corpusRepo, "ref": "refs/heads/master", "deleted": false},
			Order:  &effects.Order{Seq: corpusPushed, Tie: corpusSHA},
		}},
	}
	tests := []struct {
		file string
		want effects.Plan
	}{
		{"payload.json", tagDeleted},
		{"1.payload.json", tagDeleted},
		{"with-installation.payload.json", tagDeleted},
		{"with-organization.payload.json", tagDeleted},
		{"with-new-branch.payload.json", newBranch},
		// The author's username is what is kept; the committer's absence
		// changes nothing.
		{"with-no-username-committer.payload.json", newBranch},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			samePlan(t, mustPlan(t, GitHubPush, githubEvent(corpus(t, "github", "push", tt.file))), tt.want)
		})
	}
}

// Commit facts keep no message, name or email address: only the
// attributes listed, none holding the payload's personal data.
func TestGitHubPushPrivacy(t *testing.T) {
	payload := corpus(t, "github", "push", "with-new-branch.payload.json")
	plan := mustPlan(t, GitHubPush, githubEvent(payload))
	allowed := []string{"repository", "sha", "ref", "author", "timestamp"}
	for _, f := range plan.Facts {
		for name, v := range f.Attributes {
			if !slices.Contains(allowed, name) {
				t.Errorf("fact %s: got attribute %q, want only %q", f.ID(), name, allowed)
			}
			if s, _ := v.(string); strings.Contains(s, "@") || strings.Contains(s, "Initial commit") {
				t.Errorf("fact %s: got %s = %q, want no email address or message", f.ID(), name, s)
			}
		}
	}
	if len(plan.Facts) == 0 {
		t.Fatal("got no commit facts, want one")
	}
}

// pushPayload is a push of the given commits (JSON array members) to ref,
// pushed at pushedAt (a JSON value; "" for absent).
func pushPayload(ref, after, pushedAt, commits string) string {
	repo := `{"full_name":"o/r"`
	if pushedAt != "" {
		repo += `,"pushed_at":` + pushedAt
	}
	repo += `}`
	return fmt.Sprintf(`{"ref":%q,"after":%q,"repository":%s,"commits":[%s]}`, ref, after, repo, commits)
}

func commitJSON(sha string, distinct bool) string {
	return fmt.Sprintf(`{"id":%q,"distinct":%t,"message":"secret plans","timestamp":"2024-05-01T10:00:00Z","author":{"name":"A","email":"a@example.com","username":"a"}}`, sha, distinct)
}

// A commit pushed again — to another branch, or twice in one payload — is
// one fact: the same identity, written once.
func TestGitHubPushRepeatedCommit(t *testing.T) {
	first := mustPlan(t, GitHubPush, githubEvent([]byte(pushPayload("refs/heads/feature", "aaa", "1700000000", commitJSON("aaa", true)))))
	again := mustPlan(t, GitHubPush, githubEvent([]byte(pushPayload("refs/heads/main", "aaa", "1700000100", commitJSON("aaa", false)))))
	if len(first.Facts) != 1 || len(again.Facts) != 1 {
		t.Fatalf("got %d and %d facts, want 1 and 1", len(first.Facts), len(again.Facts))
	}
	if got, want := again.Facts[0].ID(), first.Facts[0].ID(); got != want {
		t.Errorf("got fact %q, want %q", got, want)
	}
	if got, want := first.Facts[0].ID(), "fact#push_commit#o/r@aaa"; got != want {
		t.Errorf("got fact %q, want %q", got, want)
	}
	if first.Updates[0].ID() == again.Updates[0].ID() {
		t.Errorf("got one branch %q for two refs, want two", first.Updates[0].ID())
	}

	twice := mustPlan(t, GitHubPush, githubEvent([]byte(pushPayload("refs/heads/main", "bbb", "1700000000",
		commitJSON("aaa", true)+","+commitJSON("bbb", true)+","+commitJSON("aaa", false)))))
	var got []string
	for _, f := range twice.Facts {
		got = append(got, f.Key)
	}
	if want := []string{"o/r@aaa", "o/r@bbb"}; !slices.Equal(got, want) {
		t.Errorf("got facts %q, want %q", got, want)
	}
}

func TestGitHubPushDeleted(t *testing.T) {
	tests := []struct {
		name    string
		payload string
	}{
		{"deleted flag", `{"ref":"refs/heads/feature","after":"` + nullSHA + `","deleted":true,"head_commit":null,"repository":{"full_name":"o/r","pushed_at":1700000000},"commits":[]}`},
		{"null sha without the flag", `{"ref":"refs/heads/feature","after":"` + nullSHA + `","repository":{"full_name":"o/r","pushed_at":1700000000}}`},
		{"SHA-256 null sha", `{"ref":"refs/heads/feature","after":"` + strings.Repeat("0", 64) + `","deleted":true,"repository":{"full_name":"o/r","pushed_at":1700000000}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := mustPlan(t, GitHubPush, githubEvent([]byte(tt.payload)))
			if len(plan.Facts) != 0 || len(plan.Updates) != 1 {
				t.Fatalf("got\n%s\nwant one branch update", describe(plan))
			}
			u := plan.Updates[0]
			if u.ID() != "entity#branch#o/r:refs/heads/feature" || u.Set["head"] != "" || u.Set["deleted"] != true {
				t.Errorf("got\n%s\nwant o/r:refs/heads/feature with head \"\" and deleted", describe(plan))
			}
			if u.Order == nil || u.Order.Seq != 1700000000000 {
				t.Errorf("got order %+v, want the deletion ordered by its push time", u.Order)
			}
		})
	}
}

func TestGitHubPushTime(t *testing.T) {
	created := time.Date(2024, 5, 1, 12, 0, 0, 500e6, time.UTC)
	tests := []struct {
		name     string
		pushedAt string // JSON value; "" for absent
		head     string // head_commit.timestamp; "" for no head_commit
		created  time.Time
		want     int64
	}{
		{"pushed_at seconds", "1700000000", "2020-01-01T00:00:00Z", created, 1700000000000},
		{"pushed_at string", `"2023-11-14T22:13:20Z"`, "2020-01-01T00:00:00Z", created, 1700000000000},
		{"pushed_at string with offset", `"2023-11-14T23:13:20.250+01:00"`, "", time.Time{}, 1700000000250},
		{"head commit timestamp", "", "2024-05-01T10:00:00-02:00", created, time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC).UnixMilli()},
		{"null pushed_at", "null", "2024-05-01T10:00:00Z", created, time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC).UnixMilli()},
		{"event creation time", "", "", created, created.UnixMilli()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body map[string]any
			if err := json.Unmarshal([]byte(pushPayload("refs/heads/main", "ccc", tt.pushedAt, "")), &body); err != nil {
				t.Fatal(err)
			}
			if tt.head != "" {
				body["head_commit"] = map[string]any{"id": "ccc", "timestamp": tt.head, "message": "m"}
			}
			payload, _ := json.Marshal(body)
			ev := githubEvent(payload)
			ev.Created = tt.created
			plan := mustPlan(t, GitHubPush, ev)
			if got, want := *plan.Updates[0].Order, (effects.Order{Seq: tt.want, Tie: "ccc"}); got != want {
				t.Errorf("got order %+v, want %+v", got, want)
			}
		})
	}
}

// A later push orders after an earlier one, so a late delivery of the
// earlier is stale.
func TestGitHubPushOrder(t *testing.T) {
	older := mustPlan(t, GitHubPush, githubEvent([]byte(pushPayload("refs/heads/main", "fff", "1700000000", ""))))
	newer := mustPlan(t, GitHubPush, githubEvent([]byte(pushPayload("refs/heads/main", "111", "1700000001", ""))))
	if o, n := older.Updates[0].Order.Seq, newer.Updates[0].Order.Seq; o >= n {
		t.Errorf("got seqs %d (older) and %d (newer), want the older first whatever the shas", o, n)
	}
}

func TestGitHubPushTooManyCommits(t *testing.T) {
	var commits []string
	var distinct []string
	for i := range 150 {
		sha := fmt.Sprintf("%040x", i)
		// Every third commit was pushed before.
		commits = append(commits, commitJSON(sha, i%3 != 0))
		if i%3 != 0 {
			distinct = append(distinct, "o/r@"+sha)
		}
	}
	plan := mustPlan(t, GitHubPush, githubEvent([]byte(pushPayload("refs/heads/main", "abc", "1700000000", strings.Join(commits, ",")))))
	if got, want := plan.Len(), effects.MaxParts; got != want {
		t.Fatalf("got %d parts, want %d", got, want)
	}
	var got []string
	for _, f := range plan.Facts {
		got = append(got, f.Key)
	}
	// The 100 distinct commits do not all fit: the first 98 do.
	if want := distinct[:maxPushCommits]; !slices.Equal(got, want) {
		t.Errorf("got facts %q…, want the first %d distinct commits %q…", got[:3], maxPushCommits, want[:3])
	}
	if len(plan.Updates) != 1 || plan.Updates[0].Set["head"] != "abc" {
		t.Errorf("got updates %v, want the branch head abc", plan.Updates)
	}
}

// A hook configured with the form content type delivers the JSON in a
// payload field: the same push, the same plan.
func TestGitHubPushForm(t *testing.T) {
	body := corpus(t, "github", "push", "with-new-branch.payload.json")
	form := []byte("payload=" + url.QueryEscape(string(body)))
	samePlan(t, mustPlan(t, GitHubPush, githubEvent(form)), mustPlan(t, GitHubPush, githubEvent(body)))
}

func TestGitHubPushMalformed(t *testing.T) {
	tests := []struct {
		name    string
		payload string
	}{
		{"empty", ``},
		{"not json", `push`},
		{"null", `null`},
		{"array", `[]`},
		{"empty object", `{}`},
		{"truncated", `{"ref":"refs/heads/main","after":`},
		{"form without payload", `ref=refs%2Fheads%2Fmain`},
		{"form with two payloads", `payload=%7B%7D&payload=%7B%7D`},
		{"no repository", `{"ref":"refs/heads/main","after":"abc","head_commit":{"timestamp":"2024-01-01T00:00:00Z"}}`},
		{"no ref", pushPayload("", "abc", "1700000000", "")},
		{"no after", pushPayload("refs/heads/main", "", "1700000000", "")},
		{"no push time", pushPayload("refs/heads/main", "abc", "", "")},
		{"fractional pushed_at", pushPayload("refs/heads/main", "abc", "1700000000.5", "")},
		{"bool pushed_at", pushPayload("refs/heads/main", "abc", "true", "")},
		{"pushed_at not RFC 3339", pushPayload("refs/heads/main", "abc", `"yesterday"`, "")},
		{"zero pushed_at", pushPayload("refs/heads/main", "abc", "0", "")},
		{"negative pushed_at", pushPayload("refs/heads/main", "abc", "-5", "")},
		{"pushed_at past year 9999", pushPayload("refs/heads/main", "abc", "253402300800", "")},
		{"head_commit timestamp not RFC 3339", `{"ref":"refs/heads/main","after":"abc","repository":{"full_name":"o/r"},"head_commit":{"timestamp":"May 1"}}`},
		{"commit without id", pushPayload("refs/heads/main", "abc", "1700000000", `{"distinct":true}`)},
		{"commits not a list", `{"ref":"refs/heads/main","after":"abc","repository":{"full_name":"o/r","pushed_at":1700000000},"commits":{}}`},
		{"numeric sha", pushPayload("refs/heads/main", "abc", "1700000000", `{"id":5}`)},
		{"deleted not a bool", `{"ref":"refs/heads/main","after":"abc","deleted":"yes","repository":{"full_name":"o/r","pushed_at":1700000000}}`},
		{"key over the store's limit", pushPayload("refs/heads/"+strings.Repeat("x", effects.MaxIDBytes), "abc", "1700000000", "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustRefuse(t, GitHubPush, githubEvent([]byte(tt.payload)))
		})
	}
}
