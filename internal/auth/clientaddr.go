package auth

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/openclaw/occ/internal/settings"
)

// maxForwardedHops bounds how far back a forwarded chain is read.
const maxForwardedHops = 32

// ClientAddress is the address sign-in budgets key on. Only a trusted proxy's header is read: its
// values are walked right to left, trusted proxies skipped, and the first untrusted address wins.
// Anything malformed falls back to the socket peer. trusted reports whether the address came
// through a trusted proxy (without one, every browser behind an ingress shares its address).
func ClientAddress(proxy *settings.TrustedProxy, r *http.Request) (address string, trusted bool) {
	peer := peerAddress(r.RemoteAddr)
	if proxy == nil || !peer.IsValid() || !proxyTrusts(proxy, peer) {
		return addressText(peer, r.RemoteAddr), false
	}
	values := r.Header.Values(proxy.Header)
	if len(values) == 0 {
		return addressText(peer, r.RemoteAddr), false
	}
	hops := strings.Split(strings.Join(values, ","), ",")
	for i := len(hops) - 1; i >= 0 && i >= len(hops)-maxForwardedHops; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil || hop.Zone() != "" {
			return addressText(peer, r.RemoteAddr), false
		}
		hop = hop.Unmap()
		if !proxyTrusts(proxy, hop) {
			return hop.String(), true
		}
	}
	return addressText(peer, r.RemoteAddr), false
}

// ForwardedHeaderTrusted reports whether the request's forwarded headers come from a trusted
// proxy (and may therefore be present in production).
func ForwardedHeaderTrusted(proxy *settings.TrustedProxy, r *http.Request) bool {
	peer := peerAddress(r.RemoteAddr)
	return proxy != nil && peer.IsValid() && proxyTrusts(proxy, peer)
}

func proxyTrusts(proxy *settings.TrustedProxy, a netip.Addr) bool {
	for _, p := range proxy.CIDRs {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func peerAddress(remote string) netip.Addr {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		a, err := netip.ParseAddr(remote)
		if err != nil {
			return netip.Addr{}
		}
		return a.Unmap()
	}
	return ap.Addr().Unmap()
}

func addressText(a netip.Addr, remote string) string {
	if a.IsValid() {
		return a.String()
	}
	if remote == "" {
		return "unknown"
	}
	if len(remote) > 64 {
		return remote[:64]
	}
	return remote
}
