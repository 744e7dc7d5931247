package settings

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/openclaw/occ/internal/problem"
)

const (
	baseURLName            = "OCC_AUTH_BASE_URL"
	baseURLShapeMessage    = "OCC_AUTH_BASE_URL must be an absolute HTTP or HTTPS origin without credentials path query or fragment."
	baseURLIPv4Message     = "OCC_AUTH_BASE_URL must write an IPv4 host in canonical dotted decimal form."
	baseURLLoopbackMessage = "OCC_AUTH_BASE_URL must use a loopback host in development."
	baseURLHTTPSMessage    = "OCC_AUTH_BASE_URL must use HTTPS in production unless its host is loopback."
)

// authBaseURL reads OCC_AUTH_BASE_URL and returns the normalized origin (scheme://host[:port], no
// trailing slash). bootstrap selects the bootstrap variant: localhost counts as loopback in
// development and non-canonical IPv4 spellings are refused instead of normalized.
func (r *reader) authBaseURL(mode Mode, bootstrap bool) string {
	v, ok := r.get(baseURLName)
	if r.failed() {
		return ""
	}
	switch {
	case !ok && mode == Development:
		v = DevelopmentAuthBaseURL
	case !ok || isBlank(v):
		r.fail(baseURLName, CodeAuthBaseURLInvalid, problem.DetailRequired, configuredMessage(baseURLName))
		return ""
	}
	o, detail, message := parseOrigin(v, bootstrap)
	if detail != "" {
		r.fail(baseURLName, CodeAuthBaseURLInvalid, detail, message)
		return ""
	}
	if mode == Development {
		if !(o.host == "127.0.0.1" || o.host == "[::1]" || (bootstrap && o.host == "localhost")) {
			r.fail(baseURLName, CodeAuthBaseURLInvalid, problem.DetailInvalidValue, baseURLLoopbackMessage)
			return ""
		}
	} else if o.scheme != "https" && o.host != "127.0.0.1" && o.host != "localhost" && o.host != "[::1]" {
		r.fail(baseURLName, CodeAuthBaseURLInvalid, problem.DetailInvalidValue, baseURLHTTPSMessage)
		return ""
	}
	return o.String()
}

// origin is a parsed, normalized web origin.
type origin struct {
	scheme string // "http" or "https"
	host   string // lowercase name, dotted IPv4, or bracketed IPv6
	port   string // "" for the scheme's default port
}

func (o origin) String() string {
	s := o.scheme + "://" + o.host
	if o.port != "" {
		s += ":" + o.port
	}
	return s
}

// parseOrigin checks that raw is an absolute http(s) URL that names only an origin: no userinfo, a
// path of "" or "/", no query and no fragment. On failure it returns a detail code and message.
// strictIPv4 refuses IPv4 hosts not written in canonical dotted decimal; otherwise they are
// normalized the way browsers do (127.1 and 0177.0.0.1 become 127.0.0.1).
func parseOrigin(raw string, strictIPv4 bool) (o origin, detail, message string) {
	if raw != strings.TrimSpace(raw) || strings.ContainsRune(raw, '\\') {
		return origin{}, problem.DetailInvalidFormat, baseURLShapeMessage
	}
	u, err := url.Parse(raw)
	if err != nil {
		return origin{}, problem.DetailInvalidFormat, baseURLShapeMessage
	}
	if u.Scheme == "" {
		return origin{}, problem.DetailInvalidFormat, baseURLShapeMessage
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return origin{}, problem.DetailInvalidValue, baseURLShapeMessage
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return origin{}, problem.DetailInvalidFormat, baseURLShapeMessage
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawPath != "" ||
		u.RawQuery != "" || u.ForceQuery || strings.ContainsRune(raw, '#') {
		return origin{}, problem.DetailInvalidValue, baseURLShapeMessage
	}
	o.scheme = u.Scheme

	hostname := u.Hostname()
	if strings.HasPrefix(u.Host, "[") {
		addr, err := netip.ParseAddr(hostname)
		if err != nil || !addr.Is6() || addr.Zone() != "" {
			return origin{}, problem.DetailInvalidFormat, baseURLShapeMessage
		}
		o.host = "[" + formatIPv6(addr) + "]"
	} else {
		host := strings.ToLower(hostname)
		if !isHostnameASCII(host) {
			return origin{}, problem.DetailInvalidFormat, baseURLShapeMessage
		}
		switch {
		case endsInNumber(host) && strictIPv4:
			addr, err := netip.ParseAddr(host)
			if err != nil || !addr.Is4() || addr.String() != host {
				return origin{}, problem.DetailInvalidFormat, baseURLIPv4Message
			}
			o.host = host
		case endsInNumber(host):
			addr, ok := parseWHATWGIPv4(host)
			if !ok {
				return origin{}, problem.DetailInvalidFormat, baseURLShapeMessage
			}
			o.host = addr.String()
		default:
			for _, label := range strings.Split(host, ".") {
				if label == "" {
					return origin{}, problem.DetailInvalidFormat, baseURLShapeMessage
				}
			}
			o.host = host
		}
	}

	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil || n < 1 || n > 65535 {
			return origin{}, problem.DetailInvalidValue, baseURLShapeMessage
		}
		if !(o.scheme == "http" && n == 80) && !(o.scheme == "https" && n == 443) {
			o.port = strconv.FormatUint(n, 10)
		}
	}
	return o, "", ""
}

// isHostnameASCII accepts lowercase letters, digits, '-', '_' and '.'.
func isHostnameASCII(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// endsInNumber is the URL Standard's "ends in a number" test: the last label (ignoring one trailing
// empty label) is all digits or 0x followed by hex digits (for example 0x7f). Such a host must then
// parse as IPv4; it is never a domain name.
func endsInNumber(host string) bool {
	parts := strings.Split(host, ".")
	if parts[len(parts)-1] == "" {
		if len(parts) == 1 {
			return false
		}
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if isDecimal(last) {
		return true
	}
	if len(last) < 2 || (last[:2] != "0x" && last[:2] != "0X") {
		return false
	}
	for i := 2; i < len(last); i++ {
		c := last[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// parseIPv4Number parses one part of a URL Standard IPv4 address: 0x-prefixed hex, 0-prefixed octal
// or decimal. Values above 2^32 fail (they can never form an address).
func parseIPv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, s = 16, s[2:]
		if s == "" {
			return 0, true
		}
	case len(s) >= 2 && s[0] == '0':
		base, s = 8, s[1:]
	}
	n, err := strconv.ParseUint(s, base, 64)
	if err != nil || n > 1<<32 {
		return 0, false
	}
	return n, true
}

// parseWHATWGIPv4 parses host with the URL Standard's IPv4 parser (1 to 4 parts, each decimal,
// octal or hex, the last part filling the remaining bytes).
func parseWHATWGIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseIPv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
	}
	last := nums[len(nums)-1]
	if last >= uint64(1)<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v := last
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// formatIPv6 serializes an IPv6 address as the URL Standard does: lowercase hex pieces without
// leading zeros, the first longest run of two or more zero pieces compressed, never a dotted IPv4
// tail (so ::ffff:127.0.0.1 becomes ::ffff:7f00:1).
func formatIPv6(addr netip.Addr) string {
	b := addr.As16()
	var pieces [8]uint16
	for i := range pieces {
		pieces[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	bestStart, bestLen := -1, 1
	for i := 0; i < 8; {
		if pieces[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && pieces[j] == 0 {
			j++
		}
		if j-i > bestLen {
			bestStart, bestLen = i, j-i
		}
		i = j
	}
	var sb strings.Builder
	for i := 0; i < 8; i++ {
		if i == bestStart {
			sb.WriteString("::")
			i += bestLen - 1
			continue
		}
		if i > 0 && i != bestStart+bestLen {
			sb.WriteByte(':')
		}
		sb.WriteString(strconv.FormatUint(uint64(pieces[i]), 16))
	}
	return sb.String()
}
