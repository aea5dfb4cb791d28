package peers

import (
	"fmt"
	"math"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"

	"github.com/couriernet/courier/mplex"
)

// resourceLimits are go-libp2p's resource manager limits for a node with
// maxConns connections (--max-connections) and at most coloc peers per IP
// address (--ip-colocation-limit, negative: none): go-libp2p's defaults
// autoscaled to the machine, except
//
//   - connections: at most maxConns in all, inbound and outbound together,
//     as nim-libp2p's switch bounds them (nwaku factory/builder.nim passes
//     --max-connections to the switch);
//   - per IP address (IPv4 /32, IPv6 /56): at most 2*coloc connections,
//     refused before the handshake (the peer manager then keeps coloc
//     peers; twice as many lets a peer dial while its inbound connection
//     is open, and static peers exceed the colocation limit). Loopback is
//     unlimited, as go-libp2p's default;
//   - streams a peer opens: mplex.DefaultMaxInboundStreams (1024), the
//     bound mplex itself resets streams at, on every muxer, so the two
//     agree (go-libp2p's default is 256 plus 128 per GiB of memory).
func resourceLimits(maxConns, coloc int) (rcmgr.ConcreteLimitConfig, rcmgr.Option) {
	scaling := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&scaling)
	scaled := scaling.AutoScale()
	conns := rcmgr.LimitVal(maxConns)
	streams := rcmgr.LimitVal(mplex.DefaultMaxInboundStreams)
	peer := scaled.ToPartialLimitConfig().PeerDefault
	partial := rcmgr.PartialLimitConfig{
		System:      rcmgr.ResourceLimits{Conns: conns, ConnsInbound: conns, ConnsOutbound: conns},
		PeerDefault: rcmgr.ResourceLimits{StreamsInbound: streams, Streams: streams + peer.StreamsOutbound},
	}
	perIP := math.MaxInt
	if coloc > 0 {
		perIP = 2 * coloc
	}
	subnets := rcmgr.WithLimitPerSubnet(
		[]rcmgr.ConnLimitPerSubnet{{PrefixLength: 32, ConnCount: perIP}},
		[]rcmgr.ConnLimitPerSubnet{{PrefixLength: 56, ConnCount: perIP}})
	return partial.Build(scaled), subnets
}

// ResourceManager builds the host's resource manager
// (HostConfig.ResourceManager) for maxConns connections
// (--max-connections) and at most coloc peers per IP address
// (--ip-colocation-limit, negative: none), with the limits resourceLimits
// describes. The error is go-libp2p's, wrapped.
func ResourceManager(maxConns, coloc int) (network.ResourceManager, error) {
	limits, subnets := resourceLimits(maxConns, coloc)
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(limits), subnets)
	if err != nil {
		return nil, fmt.Errorf("node: resource manager: %w", err)
	}
	return rm, nil
}
