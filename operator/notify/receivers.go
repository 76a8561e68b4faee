package notify

import (
	"bufio"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/nicholas-fedor/shoutrrr/pkg/router"
	"github.com/nicholas-fedor/shoutrrr/pkg/types"
)

// receiver is one configured URL's service. Its name says where it is in
// the file and which service it is, never the URL, which holds a token.
type receiver struct {
	name    string
	service types.Service
	// pending is the result of a send still running, nil when none runs:
	// at most one send per receiver is ever in flight, so a receiver that
	// hangs holds one goroutine, not one per message.
	pending   chan error
	busySince time.Time
}

// parseURLs builds a receiver per URL of the file's content, and says,
// without the URL, why each one that cannot be used cannot.
func parseURLs(content string) ([]*receiver, []error) {
	var (
		rs   []*receiver
		errs []error
		r    router.ServiceRouter
		pos  int
	)
	sc := bufio.NewScanner(strings.NewReader(content))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pos++
		if pos > MaxURLs {
			errs = append(errs, fmt.Errorf("URL %d: more than %d URLs; the rest are left out", pos, MaxURLs))
			break
		}
		u, err := url.Parse(line)
		if err != nil || u.Scheme == "" {
			errs = append(errs, fmt.Errorf("URL %d: not a URL (want service://..., e.g. slack://token@channel)", pos))
			continue
		}
		scheme := strings.ToLower(u.Scheme)
		svc, err := r.Locate(line)
		if err != nil {
			errs = append(errs, fmt.Errorf("URL %d (%s): %s", pos, scheme, locateProblem(err)))
			continue
		}
		rs = append(rs, &receiver{name: fmt.Sprintf("%d-%s", pos, strings.SplitN(scheme, "+", 2)[0]), service: svc})
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("read the URLs: %w", err))
	}
	return rs, errs
}

// locateProblem says what shoutrrr found wrong with a URL, in words that
// do not repeat the URL: some of its errors quote it whole.
func locateProblem(err error) string {
	switch {
	case errors.Is(err, router.ErrUnknownService):
		return "unknown service (the schemes are listed in github.com/nicholas-fedor/shoutrrr, docs/services)"
	case errors.Is(err, router.ErrCustomURLsNotSupported), errors.Is(err, router.ErrCustomURLConversion):
		return "the service takes no custom URL (scheme+http://...)"
	case errors.Is(err, router.ErrInitializeFailed):
		return "the service cannot use this URL (a missing or malformed token, channel or option)"
	}
	return "cannot be used"
}

// urlPattern finds URLs in an error message, which a failed HTTP request
// quotes whole, token included.
var urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// redact keeps only the scheme and host of the URLs in s.
func redact(s string) string {
	return urlPattern.ReplaceAllStringFunc(s, func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return "<url>"
		}
		return u.Scheme + "://" + u.Hostname() + "/…"
	})
}
