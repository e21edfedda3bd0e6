package state

// One request to an http backend: retried with backoff, bounded by the request timeout
// (--state-timeout), and reported while the server keeps the operator waiting.

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"slipway.dev/slipway/internal/redact"
)

// httpResult is one answer of the server.
type httpResult struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request, retrying connection errors and 5xx answers with backoff.
func (b *httpBackend) do(ctx context.Context, method string, u *url.URL, body []byte) (*httpResult, error) {
	wait := b.o.retryWaitMin
	for attempt := 0; ; attempt++ {
		res, err := b.once(ctx, method, u, body)
		retry := err != nil || res.status >= 500
		if !retry || attempt >= b.retryMax || ctx.Err() != nil {
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", method, shownURL(u), err)
			}
			return res, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s %s: %w", method, shownURL(u), ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, b.o.retryWaitMax)
	}
}

func (b *httpBackend) once(ctx context.Context, method string, u *url.URL, body []byte) (*httpResult, error) {
	reqCtx, cancel := ctx, context.CancelFunc(func() {})
	if b.o.requestTimeout > 0 {
		reqCtx, cancel = context.WithTimeout(ctx, b.o.requestTimeout)
	}
	defer cancel()
	defer b.reportSlow(method, u)()
	res, err := b.send(reqCtx, method, u, body)
	if err != nil && ctx.Err() == nil && errors.Is(reqCtx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("the state server did not answer within %s (--state-timeout)", b.o.requestTimeout)
	}
	return res, err
}

// reportSlow tells the operator, once the request has gone unanswered for slowAfter, that
// slipway is waiting for the state server rather than hung; the returned func stops it.
func (b *httpBackend) reportSlow(method string, u *url.URL) (stop func()) {
	if b.o.slowAfter <= 0 {
		return func() {}
	}
	limit := "no time limit"
	if b.o.requestTimeout > 0 {
		limit = "gives up after " + b.o.requestTimeout.String()
	}
	t := time.AfterFunc(b.o.slowAfter, func() {
		b.o.notify(Notice{Kind: NoticeWaiting, Group: b.group, Message: fmt.Sprintf(
			"state %s: waiting for the state server: %s %s has not answered in %s (%s, --state-timeout)",
			b.group, method, shownURL(u), b.o.slowAfter, limit)})
	})
	return func() { t.Stop() }
}

func (b *httpBackend) send(ctx context.Context, method string, u *url.URL, body []byte) (*httpResult, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		redact.URLErrors(err, nil)
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		sum := md5.Sum(body)
		req.Header.Set("Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
	}
	if b.username != "" || b.password != "" {
		req.SetBasicAuth(b.username, b.password)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is named by the caller, without credentials
		}
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	return &httpResult{status: resp.StatusCode, header: resp.Header, body: data}, nil
}
