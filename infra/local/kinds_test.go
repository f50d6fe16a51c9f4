package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
)

// TestEverySourceEndToEnd sends each local source's sample, signed by its
// scheme's own signer as `make send` does, through the local API: the first
// delivery is accepted, the same delivery again is a duplicate (for every
// kind but Dropbox, whose deliveries are each an event), and every event
// ends processed. This is what a user sees with `make send SOURCE=…`.
func TestEverySourceEndToEnd(t *testing.T) {
	e := mustEnv(t)
	sources, err := local.LoadSources(filepath.Join(repoRoot, "infra/local/sources.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range sources.Sources {
		t.Run(src.Name, func(t *testing.T) {
			sample, err := local.LoadSample(repoRoot, src.Name)
			if err != nil {
				t.Fatal(err)
			}
			req, err := sample.Signed(repoRoot, src, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			post := func() (int, map[string]any) {
				hr, err := http.NewRequest(http.MethodPost, e.api.URL+"/webhooks/"+src.Name, bytes.NewReader(req.Body))
				if err != nil {
					t.Fatal(err)
				}
				hr.Header = req.Header.Clone()
				resp, err := http.DefaultClient.Do(hr)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				var out map[string]any
				if src.Kind == "adyen" {
					// Adyen's answer is its own "[accepted]" (signature.Acknowledger),
					// whatever ingest's status.
					if string(b) != "[accepted]" {
						t.Fatalf("answer %q, want [accepted]", b)
					}
					status := map[int]string{http.StatusAccepted: "accepted", http.StatusOK: "duplicate"}[resp.StatusCode]
					return resp.StatusCode, map[string]any{"status": status}
				}
				if err := json.Unmarshal(b, &out); err != nil {
					t.Fatalf("answer %q: %v", b, err)
				}
				return resp.StatusCode, out
			}
			if status, out := post(); status != http.StatusAccepted || out["status"] != "accepted" {
				t.Fatalf("first delivery: got %d %v, want 202 accepted", status, out)
			}
			// Dropbox's notifications carry nothing that tells two apart,
			// so each delivery is its own event (see signature.Dropbox).
			again, dup := http.StatusOK, "duplicate"
			if src.Kind == "dropbox" {
				again, dup = http.StatusAccepted, "accepted"
			}
			if status, out := post(); status != again || out["status"] != dup {
				t.Fatalf("same delivery again: got %d %v, want %d %s", status, out, again, dup)
			}
		})
	}
	e.drain(t)
	out, err := e.db.Scan(context.Background(), &dynamodb.ScanInput{
		TableName:                 aws.String(e.stack.Resources.TableName),
		FilterExpression:          aws.String("begins_with(pk, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "event#"}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	bySource := map[string]int{}
	for _, it := range out.Items {
		// event#<source>#<account>#<id>
		src, _, _ := strings.Cut(strings.TrimPrefix(it["pk"].(*types.AttributeValueMemberS).Value, "event#"), "#")
		bySource[src]++
		if st := it["status"].(*types.AttributeValueMemberS).Value; st != "processed" {
			t.Errorf("%s: status %s, want processed", it["pk"].(*types.AttributeValueMemberS).Value, st)
		}
	}
	for _, src := range sources.Sources {
		if bySource[src.Name] == 0 {
			t.Errorf("%s: no stored event", src.Name)
		}
	}
}

// TestDropboxChallengeThroughTheAPI: Dropbox's verification GET reaches
// the scheme through the local API's route and is echoed; a challenge that
// is not a word is refused with the bad signature's answer, and nothing
// is stored either way.
func TestDropboxChallengeThroughTheAPI(t *testing.T) {
	e := mustEnv(t)
	get := func(q string) (int, string) {
		resp, err := http.Get(e.api.URL + "/webhooks/dropbox?" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get("challenge=Zk3-p_9"); status != http.StatusOK || body != "Zk3-p_9" {
		t.Errorf("challenge: got %d %q, want 200 Zk3-p_9", status, body)
	}
	if status, body := get("challenge=%3Cscript%3E"); status != http.StatusUnauthorized {
		t.Errorf("a challenge that is not a word: got %d %q, want 401", status, body)
	}
}

// TestXeroIntentToReceiveThroughTheAPI: Xero's intent to receive through
// the local API, as Xero sends it: the correctly signed delivery with no
// events is answered 200, the badly signed one 401.
func TestXeroIntentToReceiveThroughTheAPI(t *testing.T) {
	e := mustEnv(t)
	sources, err := local.LoadSources(filepath.Join(repoRoot, "infra/local/sources.json"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := sources.Source("xero")
	if err != nil {
		t.Fatal(err)
	}
	intent := local.Sample{ContentType: "application/json", Body: `{"events":[],"firstEventSequence":0,"lastEventSequence":0,"entropy":"RCQXONLTEJHMPLKDXEWV"}`}
	req, err := intent.Signed(repoRoot, src, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	post := func(sig string) (int, string) {
		hr, err := http.NewRequest(http.MethodPost, e.api.URL+"/webhooks/xero", bytes.NewReader(req.Body))
		if err != nil {
			t.Fatal(err)
		}
		hr.Header = req.Header.Clone()
		hr.Header.Set("X-Xero-Signature", sig)
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	good := req.Header.Get("X-Xero-Signature")
	if status, body := post(good); status != http.StatusOK || body != "" {
		t.Errorf("signed intent: got %d %q, want 200 and no body", status, body)
	}
	bad := "A" + good[1:]
	if good[0] == 'A' {
		bad = "B" + good[1:]
	}
	if status, _ := post(bad); status != http.StatusUnauthorized {
		t.Errorf("badly signed intent: got %d, want 401", status)
	}
}

// TestWooCommercePingThroughTheAPI: WooCommerce's unsigned ping, as it
// sends it when a webhook is saved, is answered 200 through the local API
// and stores nothing; the same body with another field is a bad signature.
func TestWooCommercePingThroughTheAPI(t *testing.T) {
	e := mustEnv(t)
	post := func(body string) int {
		resp, err := http.Post(e.api.URL+"/webhooks/woocommerce", "application/x-www-form-urlencoded", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := post("webhook_id=12"); status != http.StatusOK {
		t.Errorf("ping: got %d, want 200", status)
	}
	if status := post("webhook_id=12&status=active"); status != http.StatusUnauthorized {
		t.Errorf("not the ping: got %d, want 401", status)
	}
}

// TestSNSSubscriptionThroughTheAPI: SNS's subscription confirmation,
// signed as SNS signs it, is confirmed through the local stand-in for SNS
// once it verifies, and stores nothing; one for a topic the source does
// not accept is refused and never confirmed.
func TestSNSSubscriptionThroughTheAPI(t *testing.T) {
	e := mustEnv(t)
	sources, err := local.LoadSources(filepath.Join(repoRoot, "infra/local/sources.json"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := sources.Source("sns")
	if err != nil {
		t.Fatal(err)
	}
	before := len(e.stack.Providers.Confirmed())
	post := func(topic string) int {
		sample := local.Sample{ContentType: "text/plain; charset=UTF-8", Body: `{"Type":"SubscriptionConfirmation","MessageId":"{uuid}","Token":"2336412f37fb687f5d51e6e2425c464de12884d3","TopicArn":"` + topic + `","Message":"You have chosen to subscribe to the topic.","SubscribeURL":"https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=` + topic + `&Token=2336412f37fb687f5d51e6e2425c464de12884d3","SigningCertURL":"` + src.CertificateURL + `"}`}
		req, err := sample.Signed(repoRoot, src, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(e.api.URL+"/webhooks/sns", sample.ContentType, bytes.NewReader(req.Body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := post("arn:aws:sns:us-east-1:999999999999:someone-elses"); status != http.StatusUnauthorized {
		t.Fatalf("another account's topic: got %d, want 401", status)
	}
	if status := post(src.Secrets[0]); status != http.StatusOK {
		t.Fatalf("confirmation: got %d, want 200", status)
	}
	got := e.stack.Providers.Confirmed()[before:]
	if len(got) != 1 || !strings.Contains(got[0], "TopicArn="+src.Secrets[0]+"&") {
		t.Fatalf("confirmed %v, want the source's topic once", got)
	}
}
