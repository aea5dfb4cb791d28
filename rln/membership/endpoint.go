package membership

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// redacted stands for the parts of an endpoint address that CheckEndpoint's
// errors do not show: user info, path, query and fragment, where RPC
// providers put API keys.
const redacted = "<redacted>"

// Redact returns an endpoint address fit for logs and /health: its scheme
// and host, without the path, query or user info that RPC providers put
// API keys in. An address that does not parse is cut the same way, by its
// "://", "@", "/", "?" and "#".
func Redact(address string) string {
	u, err := url.Parse(address)
	if err != nil || u.Host == "" {
		p := splitAddress(address)
		if p.scheme == "" {
			return p.host
		}
		return p.scheme + "://" + p.host
	}
	return u.Scheme + "://" + u.Host
}

// EndpointError is an endpoint address that CheckEndpoint refuses. Its
// text is the address as Shown, quoted, and the Reason.
type EndpointError struct {
	// Shown is the address's scheme and host, "<redacted>" in place of
	// each of its user info, path, query and fragment.
	Shown string
	// Reason says what is wrong; it quotes nothing but the scheme and host.
	Reason string
}

func (e *EndpointError) Error() string { return fmt.Sprintf("%q: %s", e.Shown, e.Reason) }

// Is makes an EndpointError match ErrConfig.
func (e *EndpointError) Is(target error) bool { return target == ErrConfig }

// CheckEndpoint reports whether address is an Ethereum JSON-RPC endpoint
// this package dials: an http://, https://, ws:// or wss:// URL with a
// host. Otherwise it returns an *EndpointError, which matches ErrConfig.
func CheckEndpoint(address string) error {
	why := endpointProblem(address)
	if why == "" {
		return nil
	}
	return &EndpointError{Shown: showAddress(address), Reason: why}
}

// endpointProblem returns what is wrong with address as an endpoint, ""
// when nothing is. The reasons quote nothing beyond the scheme and host.
func endpointProblem(address string) string {
	if strings.TrimSpace(address) == "" {
		return "empty; want an http://, https://, ws:// or wss:// URL"
	}
	if strings.TrimSpace(address) != address {
		return "spaces around it"
	}
	p := splitAddress(address)
	if p.scheme == "" {
		return "no scheme; want an http://, https://, ws:// or wss:// URL"
	}
	switch strings.ToLower(p.scheme) {
	case "http", "https", "ws", "wss":
	default:
		return fmt.Sprintf("scheme %q; want http, https, ws or wss", p.scheme)
	}
	u, err := url.Parse(address)
	if err != nil {
		return "not a URL: " + parseReason(err)
	}
	if u.Host == "" {
		return "no host"
	}
	return ""
}

// parseReason is url.Parse's reason without the address it quotes. An
// invalid %-escape is not quoted either: it may sit in a path or query.
func parseReason(err error) string {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return "it does not parse"
	}
	var esc url.EscapeError
	if errors.As(ue.Err, &esc) {
		return "a % not followed by two hex digits"
	}
	return strings.TrimPrefix(ue.Err.Error(), "net/url: ")
}

// addressParts are the parts of an address as RFC 3986 delimits them,
// found without parsing it: scheme is what comes before "://" ("" when
// there is none, and then the address starts with its authority), host is
// the authority after its user info; the others report which parts there
// are.
type addressParts struct {
	scheme, host                string
	user, path, query, fragment bool
}

func splitAddress(address string) addressParts {
	var p addressParts
	rest := strings.TrimSpace(address)
	if s, r, ok := strings.Cut(rest, "://"); ok && isScheme(s) {
		p.scheme, rest = s, r
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, rest = rest[:i], rest[i:]
		if f := strings.IndexByte(rest, '#'); f >= 0 {
			p.fragment, rest = true, rest[:f]
		}
		if q := strings.IndexByte(rest, '?'); q >= 0 {
			p.query, rest = true, rest[:q]
		}
		p.path = rest != "" && rest != "/"
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		p.user, authority = true, authority[i+1:]
	}
	p.host = authority
	return p
}

// isScheme reports whether s is an RFC 3986 scheme: a letter, then
// letters, digits, "+", "-" or ".".
func isScheme(s string) bool {
	for i, c := range s {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// showAddress returns address as CheckEndpoint's errors show it: scheme
// and host, with "<redacted>" in place of each of the user info, path,
// query and fragment that it has.
func showAddress(address string) string {
	p := splitAddress(address)
	var b strings.Builder
	if p.scheme != "" {
		b.WriteString(p.scheme + "://")
	}
	if p.user {
		b.WriteString(redacted + "@")
	}
	b.WriteString(p.host)
	if p.path {
		b.WriteString("/" + redacted)
	}
	if p.query {
		b.WriteString("?" + redacted)
	}
	if p.fragment {
		b.WriteString("#" + redacted)
	}
	return b.String()
}
