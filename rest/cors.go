package rest

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// originMatcher decides which Origin headers a request may carry, as
// nwaku's origin middleware (waku/rest_api/endpoint/origin_handler.nim):
// the allowed origins, joined with commas, are "*" for any origin, or a
// list of [scheme://]host[:port] patterns where * matches any run of
// characters and ? at most one; a pattern without a scheme matches http
// and https; the match ignores case.
type originMatcher struct {
	any bool
	re  *regexp.Regexp // nil: no origin check
}

func newOriginMatcher(allowed []string) (originMatcher, error) {
	joined := strings.Join(allowed, ",")
	switch joined {
	case "":
		return originMatcher{}, nil
	case "*":
		return originMatcher{any: true, re: regexp.MustCompile(".*")}, nil
	}
	var exprs []string
	for _, o := range strings.Split(joined, ",") {
		prefix := `https?://`
		switch {
		case strings.HasPrefix(o, "http://"):
			prefix, o = `http://`, o[len("http://"):]
		case strings.HasPrefix(o, "https://"):
			prefix, o = `https://`, o[len("https://"):]
		}
		o = strings.ReplaceAll(o, ".", `\.`)
		o = strings.ReplaceAll(o, "*", ".*")
		o = strings.ReplaceAll(o, "?", ".?")
		exprs = append(exprs, "^"+prefix+o+"$")
	}
	re, err := regexp.Compile("(?i)" + strings.Join(exprs, "|"))
	if err != nil {
		return originMatcher{}, fmt.Errorf("%w: allowed origins %q: %w", ErrConfig, joined, err)
	}
	return originMatcher{re: re}, nil
}

// check answers a request whose Origin is not allowed (403 "Origin not
// allowed", or 400 for several Origin headers) and reports false; for an
// allowed one it sets the CORS headers and reports true. Without allowed
// origins every request passes untouched.
func (m originMatcher) check(w http.ResponseWriter, r *http.Request) bool {
	if m.re == nil {
		return true
	}
	origins := r.Header.Values("Origin")
	switch {
	case len(origins) == 0:
		return true
	case len(origins) > 1:
		writeText(w, http.StatusBadRequest, "Only a single Origin header must be specified")
		return false
	case m.any:
		w.Header().Set("Access-Control-Allow-Origin", "*")
	case m.re.MatchString(origins[0]):
		w.Header().Set("Vary", "Origin")
		w.Header().Set("Access-Control-Allow-Origin", origins[0])
	default:
		writeText(w, http.StatusForbidden, "Origin not allowed")
		return false
	}
	w.Header().Set("Access-Control-Allow-Headers", "Content-Type")
	return true
}
