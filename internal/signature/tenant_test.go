package signature

import "testing"

func TestTenant(t *testing.T) {
	stripe, slack := &Stripe{}, &Slack{}
	for _, c := range []struct {
		s    Tenanter
		body string
		want string
		ok   bool
	}{
		{stripe, `{"id":"evt_1","object":"event","account":"acct_1Abc","type":"x"}`, "acct_1Abc", true},
		{stripe, `{"id":"evt_1","object":"event","type":"x"}`, "", false},
		{stripe, `{"id":"evt_1","account":null}`, "", false},
		{stripe, `{"id":"evt_1","account":""}`, "", false},
		{stripe, `{"id":"evt_1","account":7}`, "", false},
		{stripe, `{"data":{"account":"acct_nested"}}`, "", false},
		{stripe, `not json`, "", false},
		{slack, `{"token":"x","team_id":"T0001","type":"event_callback","event_id":"Ev1"}`, "T0001", true},
		{slack, `team_id=T0002&command=%2Fdo&trigger_id=1`, "T0002", true},
		{slack, `team_id=T1&team_id=T2`, "", false},
		{slack, `payload=%7B%7D`, "", false},
		{slack, `{"type":"url_verification"}`, "", false},
	} {
		got, ok := c.s.Tenant(Request{Body: []byte(c.body)})
		if got != c.want || ok != c.ok {
			t.Errorf("%T %s: got %q %t, want %q %t", c.s, c.body, got, ok, c.want, c.ok)
		}
	}
}
