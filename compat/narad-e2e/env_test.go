// Replaces Narad's tests/e2e/env_test.go when compat/narad-e2e/run.ts runs
// Narad's black-box suite against this repository's broker. Every
// newTestEnv starts a fresh `narad serve` process (own data dir, own port)
// with the env's options translated to broker settings, so the suite's
// per-test isolation holds. The helpers the suite reaches into in-process
// (Broker.GetTopicDetails, ms.ListAssignments, Registry.Gather) are served
// over HTTP instead; the few tests that need Narad internals are skipped
// by the runner (skips.json) with the reason recorded there.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/debanganthakuria/narad/internal/broker"
	"github.com/debanganthakuria/narad/internal/domain/topic"
	obsmetrics "github.com/debanganthakuria/narad/internal/platform/observability/metrics"
)

// envOpts mirrors the options of Narad's env; each becomes a broker setting.
type envOpts struct {
	defaultParts               int
	maxParts                   int
	defaultRetentionMs         int64
	defaultVisibilityTimeoutMs int64
	maxConsumeWait             time.Duration
	metrics                    bool
	security                   bool
}

// The same defaults as Narad's env, so a test sees the policy it expects.
func defaultOpts() envOpts {
	return envOpts{
		defaultParts:               4,
		maxParts:                   128,
		defaultRetentionMs:         7 * 24 * 3600 * 1000,
		defaultVisibilityTimeoutMs: 30_000,
		maxConsumeWait:             5 * time.Second,
	}
}

type envOption func(*envOpts)

// Metrics are always on in this broker; the option only exists so the
// suite compiles.
func withMetrics() envOption { return func(o *envOpts) { o.metrics = true } }

func withPolicy(p broker.TopicPolicy) envOption {
	return func(o *envOpts) {
		if p.DefaultPartitions > 0 {
			o.defaultParts = p.DefaultPartitions
		}
		if p.MaxPartitions > 0 {
			o.maxParts = p.MaxPartitions
		}
		if p.DefaultRetentionMs > 0 {
			o.defaultRetentionMs = p.DefaultRetentionMs
		}
	}
}

func withMaxConsumeWait(d time.Duration) envOption {
	return func(o *envOpts) { o.maxConsumeWait = d }
}

func withSecurity() envOption { return func(o *envOpts) { o.security = true } }

// externalServer stands in for *httptest.Server: the suite only reads URL.
type externalServer struct{ URL string }

type env struct {
	t        *testing.T
	Server   *externalServer
	Broker   *httpBroker
	ms       *httpAssignments
	Registry *scrapedRegistry
	// Metrics is a throwaway in-process collector set: a test that sets a
	// gauge on it compiles and runs, but the broker never sees the value.
	Metrics *obsmetrics.Metrics

	adminUser string
	adminPass string

	cmd       *exec.Cmd
	exited    chan struct{}
	logPath   string
	closeOnce sync.Once
}

const (
	adminUser = "admin"
	adminPass = "admin-secret"
)

func newTestEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	o := defaultOpts()
	for _, opt := range opts {
		opt(&o)
	}
	e := startBroker(t, o)
	t.Cleanup(e.close)
	return e
}

// brokerCommand is the broker's node binary and entry point, given by the
// runner (NARAD_E2E_NODE, NARAD_E2E_MAIN).
func brokerCommand(t *testing.T) (string, string) {
	t.Helper()
	node, main := os.Getenv("NARAD_E2E_NODE"), os.Getenv("NARAD_E2E_MAIN")
	if node == "" || main == "" {
		t.Fatal("NARAD_E2E_NODE and NARAD_E2E_MAIN must name the node binary and broker/src/main.ts (run through compat/narad-e2e/run.ts)")
	}
	return node, main
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startBroker(t *testing.T, o envOpts) *env {
	t.Helper()
	node, main := brokerCommand(t)
	dataDir := t.TempDir()
	port := freePort(t)
	args := []string{
		main, "serve",
		"--addr", fmt.Sprintf("127.0.0.1:%d", port),
		"--cluster-addr", "127.0.0.1:0",
		"--data-dir", dataDir,
		"--node-id", "test-0",
		"--log-level", "warn",
		"--drain-timeout-ms", "2000",
	}
	e := &env{t: t, Metrics: obsmetrics.New(prometheus.NewRegistry())}
	if o.security {
		authFile := filepath.Join(dataDir, "users.json")
		users := fmt.Sprintf(`{"users":[{"name":%q,"password":%q}]}`, adminUser, adminPass)
		if err := os.WriteFile(authFile, []byte(users), 0o600); err != nil {
			t.Fatalf("write users file: %v", err)
		}
		args = append(args, "--auth", "on", "--auth-file", authFile)
		e.adminUser, e.adminPass = adminUser, adminPass
	}
	// Narad's own variable names (the broker reads them as aliases of its
	// settings), and environment rather than flags: a broker that lacks a
	// setting ignores the variable instead of refusing to start.
	env := append(os.Environ(),
		"NARAD_TOPIC_DEFAULT_PARTITIONS="+strconv.Itoa(o.defaultParts),
		"NARAD_TOPIC_MAX_PARTITIONS="+strconv.Itoa(o.maxParts),
		"NARAD_TOPIC_DEFAULT_RETENTION_AGE_MS="+strconv.FormatInt(o.defaultRetentionMs, 10),
		"NARAD_TOPIC_DEFAULT_VISIBILITY_TIMEOUT_MS="+strconv.FormatInt(o.defaultVisibilityTimeoutMs, 10),
		"NARAD_HTTP_MAX_CONSUME_WAIT="+o.maxConsumeWait.String(),
	)
	e.logPath = filepath.Join(dataDir, "broker.log")
	logFile, err := os.Create(e.logPath)
	if err != nil {
		t.Fatalf("broker log: %v", err)
	}
	cmd := exec.Command(node, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	dieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start broker: %v", err)
	}
	e.cmd = cmd
	e.exited = make(chan struct{})
	go func() { _ = cmd.Wait(); logFile.Close(); close(e.exited) }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	e.Server = &externalServer{URL: base}
	e.Broker = &httpBroker{t: t, base: base}
	e.ms = &httpAssignments{b: e.Broker}
	e.Registry = &scrapedRegistry{base: base, user: e.adminUser, pass: e.adminPass}
	e.Broker.user, e.Broker.pass = e.adminUser, e.adminPass

	// Generous: on a loaded machine a broker start takes tens of seconds.
	deadline := time.Now().Add(180 * time.Second)
	for {
		select {
		case <-e.exited:
			log, _ := os.ReadFile(e.logPath)
			t.Fatalf("broker exited before it was ready:\n%s", log)
		default:
		}
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return e
			}
		}
		if time.Now().After(deadline) {
			e.close()
			t.Fatalf("broker not ready after 180s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) close() {
	e.closeOnce.Do(func() {
		if e.cmd == nil || e.cmd.Process == nil {
			return
		}
		_ = e.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-e.exited:
		case <-time.After(10 * time.Second):
			_ = e.cmd.Process.Kill()
			<-e.exited
		}
		if e.t.Failed() {
			if log, err := os.ReadFile(e.logPath); err == nil && len(log) > 0 {
				e.t.Logf("broker log:\n%s", tail(log, 4000))
			}
		}
	})
}

func tail(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[len(b)-n:]
}

// httpBroker answers the suite's in-process broker calls over the API.
type httpBroker struct {
	t          *testing.T
	base       string
	user, pass string
}

func (b *httpBroker) get(path string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, b.base+path, nil)
	if err != nil {
		return nil, err
	}
	if b.user != "" {
		req.SetBasicAuth(b.user, b.pass)
	}
	return http.DefaultClient.Do(req)
}

// GetTopicDetails is GET /v1/topics/{t}, decoded into Narad's own type: a
// field this broker shapes differently fails the decode, as it would for
// any typed Go client.
func (b *httpBroker) GetTopicDetails(_ context.Context, name string) (topic.Details, error) {
	res, err := b.get("/v1/topics/" + url.PathEscape(name))
	if err != nil {
		return topic.Details{}, err
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	if res.StatusCode != http.StatusOK {
		return topic.Details{}, fmt.Errorf("GET topic %q: %d %s", name, res.StatusCode, buf.String())
	}
	var d topic.Details
	if err := json.Unmarshal(buf.Bytes(), &d); err != nil {
		return topic.Details{}, fmt.Errorf("decode topic %q: %w (%s)", name, err, buf.String())
	}
	return d, nil
}

// Snapshot is Narad's in-process metrics poller; there is no wire
// equivalent (the test using it is skipped).
func (b *httpBroker) Snapshot(context.Context) ([]obsmetrics.TopicSnapshot, error) {
	return nil, errors.New("Snapshot is in-process only")
}

// httpAssignments stands in for the metastore: a partition is assigned
// once the topic's stats name an owner for it.
type httpAssignments struct{ b *httpBroker }

func (a *httpAssignments) ListAssignments(name string) ([]string, error) {
	d, err := a.b.GetTopicDetails(context.Background(), name)
	if err != nil {
		return nil, err
	}
	owners := make([]string, 0, len(d.Partitions))
	for _, p := range d.Partitions {
		owners = append(owners, p.OwnerNode)
	}
	return owners, nil
}

// scrapedRegistry is Registry.Gather over /metrics.
type scrapedRegistry struct{ base, user, pass string }

func (r *scrapedRegistry) Gather() ([]*dto.MetricFamily, error) {
	req, err := http.NewRequest(http.MethodGet, r.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	if r.user != "" {
		req.SetBasicAuth(r.user, r.pass)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %d", res.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		return nil, err
	}
	out := make([]*dto.MetricFamily, 0, len(families))
	for _, mf := range families {
		out = append(out, mf)
	}
	return out, nil
}
