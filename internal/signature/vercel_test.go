package signature

import (
	"crypto/sha1"
	"encoding/json"
	"testing"
	"time"
)

// vercelDeploymentCreated is shaped like Vercel's deployment.created
// webhook (values made up here).
const vercelDeploymentCreated = `{"id":"uqKc6wjTAjjk4YSrnjh7aLTnzh4s","type":"deployment.created","createdAt":1721954400123,"payload":{"team":{"id":"team_2XbMlS7o3mT"},"user":{"id":"2pSPUBRXPTzOSK4nJcTC"},"deployment":{"id":"dpl_8cN7LuBuTCpvhA2pxW1o8Ks3bhCP","meta":{},"url":"app-git-main-octo.vercel.app","name":"app"},"links":{"deployment":"https://vercel.com/octo/app/8cN7LuBuTCpvhA2pxW1o8Ks3bhCP","project":"https://vercel.com/octo/app"},"target":"production","project":{"id":"prj_ndlgr43fadlPyCtREAqxxdyFK"},"plan":"pro","regions":["iad1"]},"region":"iad1"}`

var vercelKind = bodyHMACKind{
	newScheme: func(o Options) (Scheme, error) { return NewVercel(o) },
	header:    VercelSignatureHeader,
	enc:       encHex,
	hash:      sha1.New,
	size:      sha1.Size,
	secret:    []byte("vercel-webhook-secret-6Zp1Kx8Wq3"),
	secretOld: []byte("vercel-webhook-secret-old-4Tn7Lm"),
	bodies: []identifyCase{{name: "deployment.created", body: vercelDeploymentCreated, want: Identity{
		ID: "uqKc6wjTAjjk4YSrnjh7aLTnzh4s", Type: "deployment.created", Created: time.UnixMilli(1721954400123)}}},
	identify: []identifyCase{
		{name: "minimal", body: `{"id":"e1","type":"project.created"}`, want: Identity{ID: "e1", Type: "project.created"}},
		{name: "the deployment's id is not the event's", body: `{"payload":{"deployment":{"id":"dpl_1"}},"id":"e1","type":"t"}`, want: Identity{ID: "e1", Type: "t"}},
		{name: "empty", body: ``},
		{name: "null", body: `null`},
		{name: "missing id", body: `{"type":"t"}`},
		{name: "numeric id", body: `{"id":1,"type":"t"}`},
		{name: "missing type", body: `{"id":"e1"}`},
		{name: "createdAt a string", body: `{"id":"e1","type":"t","createdAt":"1721954400123"}`},
		{name: "createdAt negative", body: `{"id":"e1","type":"t","createdAt":-5}`},
	},
}

func TestVercel(t *testing.T) { runBodyHMACKind(t, vercelKind) }

func vercelMalformedRuns(tb testing.TB) []malformedRun { return bodyHMACMalformedRuns(tb, vercelKind) }

func TestVercelVerifyMalformed(t *testing.T) { runMalformed(t, vercelMalformedRuns(t)) }

func FuzzVercelVerify(f *testing.F) { fuzzBodyHMACVerify(f, vercelKind) }

func FuzzVercelIdentify(f *testing.F) {
	fuzzBodyHMACIdentify(f, vercelKind, func(body []byte, id Identity) bool {
		var doc struct{ ID, Type string }
		return json.Unmarshal(body, &doc) == nil && doc.ID == id.ID && doc.Type == id.Type
	})
}

func BenchmarkVercel(b *testing.B) { benchBodyHMAC(b, vercelKind) }
