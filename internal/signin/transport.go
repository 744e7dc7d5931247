package signin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"

	"golang.org/x/oauth2"
)

var (
	errRedirect  = errors.New("signin: provider redirect refused")
	errOversized = errors.New("signin: provider response too large")
)

// probe remembers what the bounded transport saw during one provider step, because the client
// libraries flatten some errors into text: a refused redirect, an oversized body, the last status.
type probe struct {
	mu        sync.Mutex
	redirect  bool
	oversized bool
	status    int
}

func (p *probe) set(f func(p *probe)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (p *probe) snapshot() (redirect, oversized bool, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.redirect, p.oversized, p.status
}

// boundedClient is an HTTP client for one provider step: no redirects, bodies cut at
// ResponseLimit, everything it saw recorded in the returned probe.
func (o Options) boundedClient() (*http.Client, *probe) {
	p := &probe{}
	return &http.Client{
		Transport: &boundedTransport{base: o.transport(), probe: p},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			p.set(func(p *probe) { p.redirect = true })
			return errRedirect
		},
	}, p
}

// withClient carries client to oauth2 and go-oidc.
func withClient(ctx context.Context, c *http.Client) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, c)
}

type boundedTransport struct {
	base  http.RoundTripper
	probe *probe
}

func (t *boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	t.probe.set(func(p *probe) { p.status = res.StatusCode })
	if res.ContentLength > ResponseLimit {
		res.Body.Close()
		t.probe.set(func(p *probe) { p.oversized = true })
		return nil, errOversized
	}
	res.Body = &limitedBody{body: res.Body, left: ResponseLimit, probe: t.probe}
	return res, nil
}

type limitedBody struct {
	body  io.ReadCloser
	left  int64
	probe *probe
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte past the limit proves the body is larger.
		var one [1]byte
		if n, _ := b.body.Read(one[:]); n > 0 {
			b.probe.set(func(p *probe) { p.oversized = true })
			return 0, errOversized
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.body.Close() }

// transportFailure classifies a failed call by error types only: messages can carry URLs.
func transportFailure(err error, step Step, p *probe) Failure {
	redirect, oversized, _ := p.snapshot()
	switch {
	case redirect || errors.Is(err, errRedirect):
		return Failure{Step: step, Cause: CauseRedirect}
	case oversized || errors.Is(err, errOversized):
		return Failure{Step: step, Cause: CauseOversized}
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return Failure{Step: step, Cause: CauseTimeout}
	case errors.Is(err, syscall.ECONNREFUSED):
		return Failure{Step: step, Cause: CauseConnectRefused, Code: "ECONNREFUSED"}
	case errors.Is(err, syscall.ECONNRESET):
		return Failure{Step: step, Cause: CauseConnectionReset, Code: "ECONNRESET"}
	case errors.Is(err, syscall.EPIPE):
		return Failure{Step: step, Cause: CauseConnectionReset, Code: "EPIPE"}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return Failure{Step: step, Cause: CauseConnectionReset}
	}
	var dnsErr *net.DNSError
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &dnsErr):
		return Failure{Step: step, Cause: CauseDNS}
	case errors.As(err, &certErr), errors.As(err, &recordErr), errors.As(err, &unknownAuthority),
		errors.As(err, &hostname), errors.As(err, &invalid):
		return Failure{Step: step, Cause: CauseTLS}
	case errors.As(err, &netErr) && netErr.Timeout():
		return Failure{Step: step, Cause: CauseTimeout, Code: "ETIMEDOUT"}
	}
	return Failure{Step: step, Cause: CauseNetwork}
}

// refusedClientErrors refuse this Installation's OAuth client rather than the person: RFC 6749's
// invalid_client, unauthorized_client and unsupported_grant_type, and GitHub's codes for a wrong
// client secret or callback registration (answered with HTTP 200). Every sign-in fails until the
// operator fixes the client, so they are provider failures, not rejections.
var refusedClientErrors = map[string]bool{
	"invalid_client": true, "unauthorized_client": true, "unsupported_grant_type": true,
	"incorrect_client_credentials": true, "redirect_uri_mismatch": true,
}

// tokenFailure classifies a failed code exchange: a transport failure, a status or body the
// provider should not have sent, or a refused client is unavailability; a well-formed refusal of
// the code (invalid_grant, bad_verification_code, ...) is a rejection.
func tokenFailure(err error, p *probe) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return unavailable(transportFailure(err, StepToken, p))
	}
	if _, oversized, _ := p.snapshot(); oversized {
		return unavailable(Failure{Step: StepToken, Cause: CauseOversized})
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		switch {
		case refusedClientErrors[re.ErrorCode]:
			return unavailable(Failure{Step: StepToken, Cause: CauseClientRejected})
		case re.ErrorCode == "server_error" || re.ErrorCode == "temporarily_unavailable":
			return unavailable(Failure{Step: StepToken, Cause: CauseProviderError})
		case status == http.StatusTooManyRequests || status >= 500:
			return unavailable(Failure{Step: StepToken, Cause: CauseHTTPStatus, Status: status})
		case status >= 400 && re.ErrorCode == "":
			return unavailable(Failure{Step: StepToken, Cause: CauseMalformed})
		}
		return rejected()
	}
	return unavailable(Failure{Step: StepToken, Cause: CauseMalformed})
}

// getJSON reads one bounded JSON document with a GET. A 2xx with a body that is not JSON, a 429
// or 5xx is unavailability; another status is returned for the caller to judge.
func (o Options) getJSON(ctx context.Context, step Step, rawURL string, header http.Header, v any) (int, error) {
	client, p := o.boundedClient()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return 0, unavailable(Failure{Step: step, Cause: CauseMisconfiguredSite})
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, unavailable(transportFailure(err, step, p))
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500 {
		return res.StatusCode, unavailable(Failure{Step: step, Cause: CauseHTTPStatus, Status: res.StatusCode})
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, unavailable(transportFailure(err, step, p))
	}
	if res.StatusCode/100 != 2 {
		return res.StatusCode, nil
	}
	if err := decodeJSON(body, v); err != nil {
		return res.StatusCode, unavailable(Failure{Step: step, Cause: CauseMalformed})
	}
	return res.StatusCode, nil
}
