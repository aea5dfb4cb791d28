package membership

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strconv"
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
// host, and a port from 1 to 65535 if it names one. Otherwise it returns
// an *EndpointError, which matches ErrConfig.
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
	if u.Hostname() == "" {
		return "no host"
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("port %s; want 1 to 65535", port)
		}
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
// the authority after its user info. The others are as written, with
// their delimiters ("user:password@", "/path", "?query", "#fragment"),
// "" when the address has none.
type addressParts struct {
	scheme, host                string
	user, path, query, fragment string
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
			p.fragment, rest = rest[f:], rest[:f]
		}
		if q := strings.IndexByte(rest, '?'); q >= 0 {
			p.query, rest = rest[q:], rest[:q]
		}
		p.path = rest
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		p.user, authority = authority[:i+1], authority[i+1:]
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
	if p.user != "" {
		b.WriteString(redacted + "@")
	}
	b.WriteString(p.host)
	if p.path != "" && p.path != "/" {
		b.WriteString("/" + redacted)
	}
	if p.query != "" {
		b.WriteString("?" + redacted)
	}
	if p.fragment != "" {
		b.WriteString("#" + redacted)
	}
	return b.String()
}

// minSecretLen is the shortest part of an endpoint address (a path
// segment, a query value, the fragment, the user name or password) that
// redactError also removes on its own from an error's text, wherever it
// appears: API keys are longer, and shorter parts ("v3", "1") would cut
// words out of the text.
const minSecretLen = 8

// addressError is an error of a call to an endpoint with the endpoint's
// secret parts removed from its text. It unwraps to the original error, so
// that errors.Is and errors.As see through it, except that errors.As to
// any target the chain's *url.Error would fill (*url.Error, net.Error,
// error) gets a copy whose URL is redacted.
type addressError struct {
	msg string
	err error
}

func (e *addressError) Error() string { return e.msg }

// Unwrap returns the original error, whose text may hold the address.
func (e *addressError) Unwrap() error { return e.err }

// As sets target to a copy of the chain's first *url.Error with its URL as
// showAddress has it, when errors.As would set target to that *url.Error.
// errors.As has checked that target is a non-nil pointer.
func (e *addressError) As(target any) bool {
	var ue *url.Error
	if !errors.As(e.err, &ue) {
		return false
	}
	t := reflect.ValueOf(target).Elem()
	found := reflect.New(t.Type())
	if !errors.As(e.err, found.Interface()) || found.Elem().Interface() != any(ue) {
		return false
	}
	c := *ue
	c.URL = showAddress(ue.URL)
	t.Set(reflect.ValueOf(&c))
	return true
}

// redactError returns err with every occurrence of address removed from
// its text, as the transports write it: the address itself, the URL of
// each *url.Error in err's tree (net/http writes the request's URL, its
// password as "***"), and each secret part of the address at least
// minSecretLen long. Each is replaced with the address as showAddress has
// it. nil stays nil, and err is returned as it is when its text holds
// none of them.
func redactError(address string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*addressError); ok {
		return err
	}
	shown := showAddress(address)
	if !strings.Contains(shown, redacted) {
		return err // nothing secret in the address
	}
	msg := err.Error()
	olds := append(urlErrorURLs(err, nil), address)
	if u, perr := url.Parse(address); perr == nil {
		olds = append(olds, u.String(), u.Redacted())
	}
	var reps []replacement
	for _, old := range olds {
		if old != "" && old != shown {
			reps = append(reps, replacement{old, shown})
		}
	}
	for _, s := range secretParts(address) {
		reps = append(reps, replacement{s, redacted})
	}
	out := longestFirst(reps).Replace(msg)
	if out == msg {
		return err
	}
	return &addressError{msg: out, err: err}
}

// replacement is one old, new pair of a strings.Replacer.
type replacement struct{ old, new string }

// longestFirst returns the strings.Replacer of reps with the longest old
// strings first, so that an address is replaced whole before any part of
// it.
func longestFirst(reps []replacement) *strings.Replacer {
	slices.SortStableFunc(reps, func(a, b replacement) int { return len(b.old) - len(a.old) })
	args := make([]string, 0, 2*len(reps))
	for _, r := range reps {
		args = append(args, r.old, r.new)
	}
	return strings.NewReplacer(args...)
}

// urlErrorURLs appends to urls the URL of each *url.Error in err's tree.
func urlErrorURLs(err error, urls []string) []string {
	if ue, ok := err.(*url.Error); ok {
		urls = append(urls, ue.URL)
	}
	switch w := err.(type) {
	case interface{ Unwrap() error }:
		if inner := w.Unwrap(); inner != nil {
			urls = urlErrorURLs(inner, urls)
		}
	case interface{ Unwrap() []error }:
		for _, inner := range w.Unwrap() {
			urls = urlErrorURLs(inner, urls)
		}
	}
	return urls
}

// secretParts returns the parts of address that may be keys, raw and
// unescaped, of at least minSecretLen bytes: the user name and password,
// each path segment, each query parameter's value (and the whole query)
// and the fragment.
func secretParts(address string) []string {
	var parts []string
	add := func(ss ...string) {
		for _, s := range ss {
			if len(s) >= minSecretLen && !slices.Contains(parts, s) {
				parts = append(parts, s)
			}
		}
	}
	p := splitAddress(address)
	user, pass, _ := strings.Cut(strings.TrimSuffix(p.user, "@"), ":")
	add(user, pass, unescape(user), unescape(pass))
	fragment := strings.TrimPrefix(p.fragment, "#")
	add(fragment, unescape(fragment))
	for _, seg := range strings.Split(p.path, "/") {
		add(seg, unescape(seg))
	}
	query := strings.TrimPrefix(p.query, "?")
	add(query)
	for _, kv := range strings.FieldsFunc(query, func(r rune) bool { return r == '&' || r == ';' }) {
		_, v, _ := strings.Cut(kv, "=")
		add(v, unescape(v))
	}
	return parts
}

// unescape is s with its %-escapes decoded, or s when it has a bad one.
func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}
