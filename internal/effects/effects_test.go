package effects

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

func fact(kind, key string) Fact { return Fact{Kind: kind, Key: key} }

func TestIDs(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{fact("invoice_paid", "in_1#x").ID(), "fact#invoice_paid#in_1#x"},
		{Update{Entity: "membership", Key: "cus_1"}.ID(), "entity#membership#cus_1"},
		{Outbound{Key: "fact#invoice_paid#in_1/receipt"}.ID(), "outbox#fact#invoice_paid#in_1/receipt"},
		{KeyOf("fact#invoice_paid#in_1", "receipt"), "fact#invoice_paid#in_1/receipt"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestByCreated(t *testing.T) {
	ev := inbox.Event{Key: inbox.Key{Source: "stripe", EventID: "evt_1"}, Created: time.Unix(1700000000, 5e6)}
	if got, want := *ByCreated(ev), (Order{Seq: 1700000000005, Tie: "evt_1"}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestMachineInto(t *testing.T) {
	m := Machine{"pending": {"active", "canceled"}, "active": {"past_due", "canceled"}, "past_due": {"active", "canceled"}, "canceled": nil}
	tests := []struct {
		to   string
		want []string
	}{
		{"active", []string{"active", "past_due", "pending"}},
		{"canceled", []string{"active", "canceled", "past_due", "pending"}},
		{"pending", []string{"pending"}},
		{"unheard_of", []string{"unheard_of"}},
	}
	for _, tt := range tests {
		t.Run(tt.to, func(t *testing.T) {
			got := m.Into("status", tt.to)
			if got.Attr != "status" || got.To != tt.to || !slices.Equal(got.From, tt.want) {
				t.Errorf("got %+v, want from %v", got, tt.want)
			}
		})
	}
}

func TestPlanValidate(t *testing.T) {
	f := fact("invoice_paid", "in_1")
	// upd fills in an entity and, unless the case is about them, an
	// order: every update needs an Order or an After.
	upd := func(u Update) Update {
		if u.Entity == "" {
			u.Entity, u.Key = "membership", "cus_1"
		}
		if u.Order == nil && u.After == "" {
			u.Order = &Order{Seq: 1}
		}
		return u
	}
	row := func(o Outbound) Outbound {
		if o.Target == "" {
			o.Target = "receipt"
		}
		if o.Key == "" {
			o.Key = "k1"
		}
		if o.Body == nil {
			o.Body = json.RawMessage(`{"a":1}`)
		}
		return o
	}
	set := map[string]any{"paid_through": int64(1)}
	tests := []struct {
		name    string
		plan    Plan
		wantErr string
	}{
		{"empty plan", Plan{}, ""},
		{"one fact", Plan{Facts: []Fact{f}}, ""},
		{"same key, different kinds", Plan{Facts: []Fact{f, fact("invoice_refunded", "in_1")}}, ""},
		{"hash in key", Plan{Facts: []Fact{fact("k", "a#b")}}, ""},
		{"empty kind", Plan{Facts: []Fact{fact("", "in_1")}}, "empty kind or key"},
		{"empty key", Plan{Facts: []Fact{fact("invoice_paid", "")}}, "empty kind or key"},
		{"hash in kind", Plan{Facts: []Fact{fact("invoice#paid", "in_1")}}, "'#' in kind"},
		{"duplicate fact", Plan{Facts: []Fact{f, f}}, "declared twice"},
		{"reserved fact attribute pk", Plan{Facts: []Fact{{Kind: "k", Key: "1", Attributes: map[string]any{"pk": "x"}}}}, "store's own"},
		{"reserved fact attribute event_key", Plan{Facts: []Fact{{Kind: "k", Key: "1", Attributes: map[string]any{"event_key": "x"}}}}, "store's own"},
		{"ordinary attributes", Plan{Facts: []Fact{{Kind: "k", Key: "1", Attributes: map[string]any{"s": "x", "n": int64(1), "f": 1.5, "b": true, "i": 3}}}}, ""},
		{"attribute of a type the store cannot keep", Plan{Facts: []Fact{{Kind: "k", Key: "1", Attributes: map[string]any{"m": map[string]any{}}}}}, "want a string"},
		{"attribute not UTF-8", Plan{Facts: []Fact{{Kind: "k", Key: "1", Attributes: map[string]any{"s": "\xff"}}}}, "not UTF-8"},
		{"key not UTF-8", Plan{Facts: []Fact{fact("k", "\xff")}}, "not UTF-8"},
		{"key with a newline", Plan{Facts: []Fact{fact("k", "a\nb")}}, "control character"},
		{"a table attribute on a fact", Plan{Facts: []Fact{{Kind: "k", Key: "1", Attributes: map[string]any{"expires_at": 1}}}}, "store's own"},
		{"a table attribute on an entity", Plan{Updates: []Update{upd(Update{Set: map[string]any{"sweep_shard": "review"}})}}, "store's own"},
		{"an index attribute added to", Plan{Updates: []Update{upd(Update{Add: map[string]any{"due_ms": 1}})}}, "store's own"},
		{"a number over DynamoDB's range", Plan{Facts: []Fact{{Kind: "k", Key: "1", Attributes: map[string]any{"f": 1e130}}}}, "outside"},
		{"a number under DynamoDB's range", Plan{Facts: []Fact{{Kind: "k", Key: "1", Attributes: map[string]any{"f": 1e-140}}}}, "outside"},
		{"zero", Plan{Facts: []Fact{{Kind: "k", Key: "1", Attributes: map[string]any{"f": 0.0}}}}, ""},
		{"too many attributes in one update", Plan{Updates: []Update{upd(Update{Set: manyAttrs(MaxAttributes + 1)})}}, "over 100"},
		{"an outbound body not UTF-8", Plan{Outbound: []Outbound{row(Outbound{Body: json.RawMessage("\"\xff\"")})}}, "not UTF-8"},
		{"outbound keys over their budget", Plan{Outbound: longKeys(17)}, "together"},
		{"NaN", Plan{Facts: []Fact{{Kind: "k", Key: "1", Attributes: map[string]any{"f": math.NaN()}}}}, "NaN"},
		{"infinity", Plan{Updates: []Update{upd(Update{Add: map[string]any{"f": math.Inf(1)}})}}, "infinite"},
		{"order of an event with no creation time", Plan{Updates: []Update{upd(Update{Set: set, Order: ByCreated(inbox.Event{})})}}, "negative"},
		{"identity at the key limit", Plan{Facts: []Fact{fact("k", strings.Repeat("x", MaxIDBytes-len("fact#k#")))}}, ""},
		{"identity over the key limit", Plan{Facts: []Fact{fact("k", strings.Repeat("x", MaxIDBytes-len("fact#k#")+1))}}, "over 2048"},
		{"fact over the item limit", Plan{Facts: []Fact{{Kind: "k", Key: "1", Attributes: map[string]any{"s": strings.Repeat("x", MaxPartBytes)}}}}, "over"},
		{"plan over the transaction limit", Plan{Facts: bigFacts(12, 300<<10)}, "in one transaction"},
		{"99 parts", Plan{Facts: manyFacts(MaxParts)}, ""},
		{"100 facts", Plan{Facts: manyFacts(MaxParts + 1)}, "at most 99"},
		{"100 parts of three kinds", Plan{Facts: manyFacts(90), Updates: []Update{upd(Update{Set: set})}, Outbound: manyRows(9)}, "at most 99"},

		{"update that sets", Plan{Updates: []Update{upd(Update{Set: set})}}, ""},
		{"update that adds", Plan{Updates: []Update{upd(Update{Add: map[string]any{"invoices": 1}})}}, ""},
		{"update that transitions", Plan{Updates: []Update{upd(Update{Transition: &Transition{Attr: "status", To: "active", From: []string{"pending"}}})}}, ""},
		{"update with an order", Plan{Updates: []Update{upd(Update{Set: set, Order: &Order{Seq: 1, Tie: "evt_1"}})}}, ""},
		{"update that changes nothing", Plan{Updates: []Update{upd(Update{Order: &Order{Seq: 1}})}}, "nothing to change"},
		{"update of an empty entity kind", Plan{Updates: []Update{{Key: "cus_1", Set: set}}}, "empty kind or key"},
		{"two updates of one entity", Plan{Updates: []Update{upd(Update{Set: set}), upd(Update{Add: map[string]any{"n": 1}})}}, "declared twice"},
		{"add of a string", Plan{Updates: []Update{upd(Update{Add: map[string]any{"n": "1"}})}}, "not a number"},
		{"set and add one attribute", Plan{Updates: []Update{upd(Update{Set: set, Add: map[string]any{"paid_through": 1}})}}, "set twice"},
		{"set and transition one attribute", Plan{Updates: []Update{upd(Update{Set: map[string]any{"status": "x"}, Transition: &Transition{Attr: "status", To: "active"}})}}, "both set and transitioned"},
		{"reserved entity attribute seq", Plan{Updates: []Update{upd(Update{Set: map[string]any{"seq": int64(1)}})}}, "store's own"},
		{"reserved transition attribute", Plan{Updates: []Update{upd(Update{Transition: &Transition{Attr: "updated_by", To: "x"}})}}, "store's own"},
		{"transition to nothing", Plan{Updates: []Update{upd(Update{Transition: &Transition{Attr: "status"}})}}, "empty attribute or state"},
		{"update after a fact of the plan", Plan{Facts: []Fact{f}, Updates: []Update{upd(Update{Set: set, After: f.ID()})}}, ""},
		{"update after a fact not in the plan", Plan{Updates: []Update{upd(Update{Set: set, After: f.ID()})}}, "not a fact of this plan"},
		{"update after an update", Plan{Updates: []Update{upd(Update{Set: set}), {Entity: "other", Key: "1", Set: set, After: "entity#membership#cus_1"}}}, "not a fact of this plan"},
		// An update must apply once: ordered, or tied to a fact.
		{"update neither ordered nor after a fact", Plan{Updates: []Update{{Entity: "membership", Key: "cus_1", Set: set}}}, "neither ordered"},
		{"add with a self-loop transition alone", Plan{Updates: []Update{{Entity: "counter", Key: "c", Add: map[string]any{"activations": 1}, Transition: Machine{"active": nil}.Into("state", "active")}}}, "neither ordered"},
		{"add after a fact", Plan{Facts: []Fact{f}, Updates: []Update{{Entity: "ledger", Key: "cus_1", Add: map[string]any{"n": 1}, After: f.ID()}}}, ""},
		{"transition with an order", Plan{Updates: []Update{{Entity: "sub", Key: "s", Transition: Machine{"active": nil}.Into("status", "active"), Order: &Order{Seq: 2}}}}, ""},

		{"outbound row", Plan{Outbound: []Outbound{row(Outbound{})}}, ""},
		{"outbound row of http", Plan{Outbound: []Outbound{row(Outbound{Action: ActionHTTP})}}, ""},
		{"outbound row of an unknown action", Plan{Outbound: []Outbound{row(Outbound{Action: "email"})}}, "action"},
		{"outbound row of a fact", Plan{Facts: []Fact{f}, Outbound: []Outbound{row(Outbound{Of: f.ID()})}}, ""},
		{"outbound row of an update", Plan{Updates: []Update{upd(Update{Set: set})}, Outbound: []Outbound{row(Outbound{Of: "entity#membership#cus_1"})}}, ""},
		{"outbound row of a part not in the plan", Plan{Outbound: []Outbound{row(Outbound{Of: f.ID()})}}, "not a fact or update"},
		{"outbound row of a row", Plan{Outbound: []Outbound{row(Outbound{Key: "a"}), row(Outbound{Key: "b", Of: "outbox#a"})}}, "not a fact or update"},
		{"outbound row without target", Plan{Outbound: []Outbound{{Key: "k", Body: json.RawMessage("{}")}}}, "empty target or key"},
		{"outbound row without key", Plan{Outbound: []Outbound{{Target: "t", Body: json.RawMessage("{}")}}}, "empty target or key"},
		// An HTTP call naming a forwarding route's target (no URL) would
		// be delivered to the log.
		{"HTTP call to a forwarding target", Plan{Outbound: []Outbound{{Target: "eventbridge:stripe:default", Key: "k", Body: json.RawMessage("{}")}}}, `target "eventbridge:stripe:default" is not a target name`},
		{"HTTP call to a target no TARGETS entry could name", Plan{Outbound: []Outbound{{Action: ActionHTTP, Target: "Refund Notice", Key: "k", Body: json.RawMessage("{}")}}}, "is not a target name"},
		{"outbound row with a newline in its key", Plan{Outbound: []Outbound{row(Outbound{Key: "a\nb"})}}, "control character"},
		{"outbound row with a long key", Plan{Outbound: []Outbound{row(Outbound{Key: strings.Repeat("k", MaxKeyBytes+1)})}}, "over 1024"},
		{"outbound row that is not JSON", Plan{Outbound: []Outbound{row(Outbound{Body: json.RawMessage("{")})}}, "not JSON"},
		{"outbound row with no body", Plan{Outbound: []Outbound{{Target: "t", Key: "k"}}}, "not JSON"},
		{"two rows with one key", Plan{Outbound: []Outbound{row(Outbound{}), row(Outbound{})}}, "declared twice"},
		{"outbound row over the item limit", Plan{Outbound: []Outbound{row(Outbound{Body: json.RawMessage(`"` + strings.Repeat("x", MaxPartBytes) + `"`)})}}, "over"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.plan.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tt.wantErr != "" && err == nil:
				t.Errorf("got no error, want one saying %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("got %q, want it to say %q", err, tt.wantErr)
			}
		})
	}
}

func manyFacts(n int) []Fact {
	var out []Fact
	for i := range n {
		out = append(out, fact("k", fmt.Sprint(i)))
	}
	return out
}

func manyAttrs(n int) map[string]any {
	m := make(map[string]any, n)
	for i := range n {
		m[fmt.Sprint("a", i)] = i
	}
	return m
}

func longKeys(n int) []Outbound {
	var out []Outbound
	for i := range n {
		out = append(out, Outbound{Target: "t", Key: fmt.Sprintf("%04d", i) + strings.Repeat("k", 1020), Body: json.RawMessage("{}")})
	}
	return out
}

func manyRows(n int) []Outbound {
	var out []Outbound
	for i := range n {
		out = append(out, Outbound{Target: "t", Key: fmt.Sprint(i), Body: json.RawMessage("{}")})
	}
	return out
}

func bigFacts(n, size int) []Fact {
	out := manyFacts(n)
	for i := range out {
		out[i].Attributes = map[string]any{"s": strings.Repeat("x", size)}
	}
	return out
}

func TestPlanDrop(t *testing.T) {
	inv, other := fact("invoice_paid", "in_1"), fact("invoice_paid", "in_2")
	member := Update{Entity: "membership", Key: "cus_1", Set: map[string]any{"a": 1}, After: inv.ID()}
	sub := Update{Entity: "subscription", Key: "sub_1", Set: map[string]any{"a": 1}}
	receipt := Outbound{Target: "receipt", Key: "r1", Of: inv.ID()}
	notice := Outbound{Target: "notice", Key: "n1", Of: member.ID()}
	subNotice := Outbound{Target: "notice", Key: "n2", Of: sub.ID()}
	free := Outbound{Target: "audit", Key: "a1"}
	plan := Plan{Facts: []Fact{inv, other}, Updates: []Update{member, sub}, Outbound: []Outbound{receipt, notice, subNotice, free}}
	tests := []struct {
		name        string
		ids         []string
		want        []string
		wantDropped []string
	}{
		{"nothing", nil, plan.IDs(), nil},
		{"unknown id", []string{"fact#k#z"}, plan.IDs(), []string{"fact#k#z"}},
		{"a fact and everything that belongs to it, through an update", []string{inv.ID()},
			[]string{other.ID(), sub.ID(), subNotice.ID(), free.ID()},
			[]string{inv.ID(), member.ID(), receipt.ID(), notice.ID()}},
		{"a stale update and its row", []string{sub.ID()},
			[]string{inv.ID(), other.ID(), member.ID(), receipt.ID(), notice.ID(), free.ID()},
			[]string{sub.ID(), subNotice.ID()}},
		{"a row alone", []string{receipt.ID()},
			[]string{inv.ID(), other.ID(), member.ID(), sub.ID(), notice.ID(), subNotice.ID(), free.ID()},
			[]string{receipt.ID()}},
		{"listed twice", []string{other.ID(), other.ID()},
			[]string{inv.ID(), member.ID(), sub.ID(), receipt.ID(), notice.ID(), subNotice.ID(), free.ID()},
			[]string{other.ID()}},
		{"all", plan.IDs(), []string{}, plan.IDs()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rest, dropped := plan.Drop(tt.ids...)
			if got := rest.IDs(); !slices.Equal(got, tt.want) {
				t.Errorf("rest: got %v, want %v", got, tt.want)
			}
			if !slices.Equal(dropped, tt.wantDropped) {
				t.Errorf("dropped: got %v, want %v", dropped, tt.wantDropped)
			}
		})
	}
	if plan.Len() != 8 {
		t.Errorf("Drop changed the receiver: got %d parts, want 8", plan.Len())
	}
}

func TestPermanent(t *testing.T) {
	base := errors.New("bad payload")
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", base, false},
		{"wrapped plain", fmt.Errorf("handler: %w", base), false},
		{"permanent", Permanent(base), true},
		{"wrapped permanent", fmt.Errorf("handler: %w", Permanent(base)), true},
		{"twice wrapped permanent", fmt.Errorf("process: %w", fmt.Errorf("handler: %w", Permanent(base))), true},
		{"joined", errors.Join(io.EOF, Permanent(base)), true},
		{"formatted with %v", fmt.Errorf("handler: %v", Permanent(base)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsPermanent(tt.err); got != tt.want {
				t.Errorf("IsPermanent(%v): got %t, want %t", tt.err, got, tt.want)
			}
		})
	}
}

func TestPermanentKeepsCause(t *testing.T) {
	err := fmt.Errorf("handler: %w", Permanent(io.ErrUnexpectedEOF))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("errors.Is(%v, io.ErrUnexpectedEOF): got false, want true", err)
	}
	if got, want := err.Error(), "handler: unexpected EOF"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestPermanentNil(t *testing.T) {
	if err := Permanent(nil); err != nil {
		t.Errorf("got %v, want nil", err)
	}
}

func TestRefusedError(t *testing.T) {
	tests := []struct {
		name string
		err  RefusedError
		want string
	}{
		{"exists", RefusedError{Exists: []string{"fact#invoice_paid#in_1"}}, "effects refused: already recorded: fact#invoice_paid#in_1"},
		{"stale", RefusedError{Stale: []string{"entity#subscription#sub_1"}}, "effects refused: stale: entity#subscription#sub_1"},
		{"both", RefusedError{Exists: []string{"fact#a#1", "outbox#r"}, Stale: []string{"entity#b#2"}}, "effects refused: already recorded: fact#a#1, outbox#r; stale: entity#b#2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error = fmt.Errorf("commit: %w", &tt.err)
			var re *RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("errors.As(%v, *RefusedError): got false, want true", err)
			}
			if got := re.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if !reflect.DeepEqual(*re, tt.err) {
				t.Errorf("got %+v, want %+v", *re, tt.err)
			}
			if IsPermanent(err) {
				t.Errorf("IsPermanent(%v): got true, want false", err)
			}
		})
	}
}
