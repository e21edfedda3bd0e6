package image

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"

	"github.com/docker/cli/cli/config/configfile"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"slipway.dev/slipway/internal/netaddr"
	"slipway.dev/slipway/internal/redact"
)

// registryClient holds what every registry call shares: name parsing rules, credentials and
// a transport that refuses plain HTTP off loopback. The Puller is shared so that the ping and
// token exchange happen once per registry and repository, not once per request.
type registryClient struct {
	opts     Options
	nameOpts []name.Option
	remote   []remote.Option
	puller   *remote.Puller
}

func newRegistryClient(opts Options) (*registryClient, error) {
	kc, err := fileKeychain(opts.AuthFile, opts.AuthFileSetting)
	if err != nil {
		return nil, err
	}
	rc := &registryClient{opts: opts}
	if opts.Insecure {
		rc.nameOpts = append(rc.nameOpts, name.Insecure)
	}
	rc.remote = []remote.Option{
		remote.WithAuthFromKeychain(kc),
		remote.WithTransport(newPingCache(&plainHTTPGuard{base: remote.DefaultTransport, insecure: opts.Insecure})),
		remote.WithUserAgent("slipway"),
	}
	rc.puller, err = remote.NewPuller(rc.remote...)
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	return rc, nil
}

func (rc *registryClient) parse(ref string) (name.Reference, error) {
	r, err := name.ParseReference(ref, append([]name.Option{name.StrictValidation}, rc.nameOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("reference %q: %w", ref, err)
	}
	return r, nil
}

// explain names the registry in err when the registry could not be reached at all, which is
// what an operator must fix first. The URL of a failed request loses its query values (see
// redactURLError).
func (rc *registryClient) explain(err error) error {
	redactURLError(err)
	var ue *url.Error
	var oe *net.OpError
	if errors.As(err, &ue) && errors.As(err, &oe) {
		host := ue.URL
		if u, perr := url.Parse(ue.URL); perr == nil {
			host = u.Host
		}
		return fmt.Errorf("registry %s unreachable: %w", host, oe)
	}
	return err
}

// plainHTTPGuard refuses plain HTTP to anything but loopback unless insecure is set. The
// registry library itself falls back to HTTP for private (RFC 1918) addresses too, and a
// credential sent in clear over a network is what --insecure-registry must opt into.
type plainHTTPGuard struct {
	base     http.RoundTripper
	insecure bool
}

func (g *plainHTTPGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !g.insecure && !netaddr.Loopback(req.URL.Hostname()) {
		return nil, fmt.Errorf("registry %s: plain HTTP is used only for loopback registries (set --insecure-registry to allow it)", req.URL.Host)
	}
	return g.base.RoundTrip(req)
}

// fileKeychain reads credentials from exactly one docker config file, not from the usual
// search path, so that --registry-auth / REGISTRY_AUTH_FILE mean what they say. A missing
// default file means anonymous access; credential helpers named in the file are honoured.
func fileKeychain(path, setting string) (authn.Keychain, error) {
	if path == "" {
		return authn.NewMultiKeychain(), nil
	}
	cf, err := readAuthFile(path, setting)
	if err != nil || cf == nil {
		return authn.NewMultiKeychain(), err
	}
	return &configKeychain{cf: cf}, nil
}

type configKeychain struct{ cf *configfile.ConfigFile }

func (k *configKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	key := r.RegistryStr()
	if key == name.DefaultRegistry {
		key = authn.DefaultAuthKey
	}
	ac, err := k.cf.GetAuthConfig(key)
	if err != nil {
		return nil, fmt.Errorf("registry %s: credentials from %s: %w", r.RegistryStr(), k.cf.Filename, err)
	}
	cfg := authn.AuthConfig{
		Username:      ac.Username,
		Password:      ac.Password,
		Auth:          ac.Auth,
		IdentityToken: ac.IdentityToken,
		RegistryToken: ac.RegistryToken,
	}
	if cfg == (authn.AuthConfig{}) {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(cfg), nil
}

// registryPublisher publishes to a registry with credentials from the auth file.
type registryPublisher struct{ rc *registryClient }

var _ Publisher = (*registryPublisher)(nil)

// NewPublisher returns a Publisher for opts, its upload progress thinned to ProgressEvery. It
// fails when no registry is set (naming K8S_REGISTRY) or the auth file cannot be read.
func NewPublisher(opts Options) (Publisher, error) {
	if opts.Registry == "" {
		return nil, ErrNoRegistry
	}
	rc, err := newRegistryClient(opts)
	if err != nil {
		return nil, err
	}
	return Throttle(&registryPublisher{rc: rc}, ProgressEvery), nil
}

// Lookup HEADs ref; a 404 is "not there", anything else that fails is an error.
func (p *registryPublisher) Lookup(ctx context.Context, ref string) (v1.Hash, bool, error) {
	r, err := p.rc.parse(ref)
	if err != nil {
		return v1.Hash{}, false, err
	}
	desc, err := p.rc.puller.Head(ctx, r)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
			return v1.Hash{}, false, nil
		}
		return v1.Hash{}, false, fmt.Errorf("image %s: %w", ref, p.rc.explain(err))
	}
	return desc.Digest, true, nil
}

// Publish writes img as ref. remote.Write HEADs every blob and uploads only the missing ones;
// layers of a base image in the same registry are mounted rather than copied.
func (p *registryPublisher) Publish(ctx context.Context, ref string, img v1.Image, progress func(done, total int64)) (name.Digest, error) {
	r, err := p.rc.parse(ref)
	if err != nil {
		return name.Digest{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return name.Digest{}, fmt.Errorf("image %s: %w", ref, err)
	}
	opts := append([]remote.Option{remote.WithContext(ctx)}, p.rc.remote...)
	done := make(chan struct{})
	if progress != nil {
		// The channel is buffered and drained at once: a slow consumer must not stall uploads.
		updates := make(chan v1.Update, 64)
		opts = append(opts, remote.WithProgress(updates))
		go func() {
			defer close(done)
			for u := range updates {
				if u.Error == nil {
					progress(u.Complete, u.Total)
				}
			}
		}()
	} else {
		close(done)
	}
	if ix, ok := img.(*indexImage); ok {
		err = remote.WriteIndex(r, ix.Index(), opts...)
	} else {
		err = remote.Write(r, img, opts...)
	}
	<-done
	if err != nil {
		return name.Digest{}, fmt.Errorf("image %s: push: %w", ref, p.rc.explain(err))
	}
	return r.Context().Digest(digest.String()), nil
}

// registryParams are the query parameters of the registry protocol itself, safe to show; any
// other value (an upload's _state, a signed redirect's token) may grant access and is
// redacted, as the registry library does in the errors it makes itself.
var registryParams = map[string]bool{"scope": true, "service": true, "mount": true, "from": true, "digest": true, "n": true, "last": true}

// redactURLError rewrites, in place, the URL of the *url.Error inside err (a request that
// failed without an answer: an upload interrupted, a connection reset) so that it shows no
// credential: no password, and REDACTED for every query value but the protocol's own.
func redactURLError(err error) {
	redact.URLErrors(err, func(k string) bool { return registryParams[k] })
}
