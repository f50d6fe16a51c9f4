package source

import (
	"reflect"
	"testing"
)

func TestParseKeys(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr bool
	}{
		{name: "empty", in: "", wantErr: true},
		{name: "blank", in: "   ", wantErr: true},
		{name: "empty object", in: "{}", wantErr: true},
		{name: "empty list", in: `{"signing_secrets":[]}`, wantErr: true},
		{name: "only empty strings", in: `{"signing_secrets":[""]}`, wantErr: true},
		{name: "bad JSON", in: `{"signing_secrets":["a"`, wantErr: true},
		{name: "wrong type", in: `{"signing_secrets":"a"}`, wantErr: true},
		{name: "plain", in: "whsec_abc", want: []string{"whsec_abc"}},
		{name: "plain trimmed", in: " \twhsec_abc\r\n", want: []string{"whsec_abc"}},
		{name: "list", in: `{"signing_secrets":["a","b"]}`, want: []string{"a", "b"}},
		{name: "list trimmed", in: "\n {\"signing_secrets\":[\"a\"]} \n", want: []string{"a"}},
		{name: "empty entries dropped", in: `{"signing_secrets":["","b"]}`, want: []string{"b"}},
		{name: "other fields ignored", in: `{"signing_secrets":["a"],"note":"rotated"}`, want: []string{"a"}},
		{name: "verify token only", in: `{"verify_token":"v"}`, want: nil},
		{name: "JSON that is not an object", in: `["a","b"]`, want: []string{`["a","b"]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseKeys(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Errorf("got %q, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
			if !reflect.DeepEqual(strs(got.Signing), tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseKeysVerifyTokens(t *testing.T) {
	got, err := ParseKeys(`{"signing_secrets":["app-secret"],"verify_token":"t1","verify_tokens":["t0"]}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"app-secret"}; !reflect.DeepEqual(strs(got.Signing), want) {
		t.Errorf("signing: got %q, want %q", got.Signing, want)
	}
	if want := []string{"t0", "t1"}; !reflect.DeepEqual(strs(got.VerifyTokens), want) {
		t.Errorf("verify tokens: got %q, want %q", got.VerifyTokens, want)
	}
}

func strs(bs [][]byte) []string {
	var out []string
	for _, b := range bs {
		out = append(out, string(b))
	}
	return out
}
