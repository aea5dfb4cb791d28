package discovery

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"

	"github.com/ethereum/go-ethereum/p2p/enode"
	"github.com/ethereum/go-ethereum/p2p/enr"
	ma "github.com/multiformats/go-multiaddr"
)

// RecordConfig describes a node's own record.
type RecordConfig struct {
	// IP is the address others reach the node at: the ip key for IPv4, ip6
	// for IPv6. Nil leaves both out (and then TCPPort too).
	IP net.IP
	// TCPPort is the libp2p TCP port (tcp or tcp6 key); 0 leaves it out.
	TCPPort int
	// UDPPort is the discv5 port (udp key); 0 leaves it out.
	UDPPort int
	// Caps is the waku2 bitfield, written always (nwaku writes it even
	// when it is 0).
	Caps Capabilities
	// Shards, when it has any shard, goes in rs or rsv (Encode).
	Shards RelayShards
	// Multiaddrs are the addresses the standard keys cannot carry (/ws,
	// /wss, /dns4, ...). They are dropped from the end until the record
	// fits in MaxRecordSize bytes.
	Multiaddrs []ma.Multiaddr
	// AutoUpdate lets discv5 replace IP with the address peers report
	// seeing (--discv5-enr-auto-update); otherwise IP is fixed.
	AutoUpdate bool
}

// LocalRecord is a node's own signed record, re-signed with a higher
// sequence number whenever discv5 updates its endpoint or SetShards changes
// its relay shards. It is safe for concurrent use.
type LocalRecord struct {
	*enode.LocalNode
	db *enode.DB
	// Dropped are the multiaddrs left out so that the record fits.
	Dropped []ma.Multiaddr

	key  *ecdsa.PrivateKey
	mu   sync.Mutex
	rc   RecordConfig   // as built, Shards as last set
	kept []ma.Multiaddr // the multiaddrs in the record
}

// NewLocalRecord builds and signs the record of key described by rc. It
// fails when the record without any multiaddrs is over MaxRecordSize. The
// caller closes it.
func NewLocalRecord(key *ecdsa.PrivateKey, rc RecordConfig) (*LocalRecord, error) {
	entries, err := rc.entries()
	if err != nil {
		return nil, err
	}
	keep := len(rc.Multiaddrs)
	for ; keep >= 0; keep-- {
		trial := entries
		if keep > 0 {
			trial = append(trial[:len(trial):len(trial)], enr.WithEntry(MultiaddrsKey, EncodeMultiaddrs(rc.Multiaddrs[:keep])))
		}
		if err = fits(key, trial); err == nil {
			break
		}
	}
	if keep < 0 {
		return nil, fmt.Errorf("discovery: own record: %w", err)
	}
	db, err := enode.OpenDB("")
	if err != nil {
		return nil, fmt.Errorf("discovery: node database: %w", err)
	}
	ln := enode.NewLocalNode(db, key)
	for _, e := range entries {
		ln.Set(e)
	}
	if keep > 0 {
		ln.Set(enr.WithEntry(MultiaddrsKey, EncodeMultiaddrs(rc.Multiaddrs[:keep])))
	}
	if rc.IP != nil {
		if rc.AutoUpdate {
			ln.SetFallbackIP(rc.IP)
		} else {
			ln.SetStaticIP(rc.IP)
		}
	}
	if rc.UDPPort != 0 {
		ln.SetFallbackUDP(rc.UDPPort)
	}
	return &LocalRecord{LocalNode: ln, db: db, Dropped: rc.Multiaddrs[keep:], key: key, rc: rc, kept: rc.Multiaddrs[:keep]}, nil
}

// SetShards replaces the relay shards the record announces, as nwaku's
// discv5 does when the node's relay subscriptions change
// (waku/discovery/waku_discv5.nim updateENRShards): the rs or rsv entry
// (Encode's choice; the other key is removed, and both when rs has no
// shard). The record is re-signed with the next sequence number when it is
// next read, and only when the shards changed. It fails, changing nothing,
// when a shard id is over 1023 (ErrMalformed) or the record would be over
// MaxRecordSize.
func (r *LocalRecord) SetShards(rs RelayShards) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	rc := r.rc
	rc.Shards = RelayShards{ClusterID: rs.ClusterID, Shards: slices.Clone(rs.Shards)}
	entries, err := rc.entries()
	if err != nil {
		return err
	}
	trial := entries
	if len(r.kept) > 0 {
		trial = append(trial[:len(trial):len(trial)], enr.WithEntry(MultiaddrsKey, EncodeMultiaddrs(r.kept)))
	}
	if err := fits(r.key, trial); err != nil {
		return fmt.Errorf("discovery: own record with shards %v: %w", rs.Shards, err)
	}
	r.rc = rc
	if len(rc.Shards.Shards) == 0 {
		r.Delete(enr.WithEntry(ShardListKey, nil))
		r.Delete(enr.WithEntry(ShardVectorKey, nil))
		return nil
	}
	k, v, _ := rc.Shards.Encode() // checked by entries
	other := ShardVectorKey
	if k == ShardVectorKey {
		other = ShardListKey
	}
	r.Set(enr.WithEntry(k, v))
	r.Delete(enr.WithEntry(other, nil))
	return nil
}

// Text returns the record's text form, "enr:" and unpadded base64url.
func (r *LocalRecord) Text() string { return r.Node().String() }

// Close releases the record's node database.
func (r *LocalRecord) Close() { r.db.Close() }

// entries are the record's fields other than multiaddrs, with ip and udp
// as the LocalNode will set them, so that fits measures the real size.
func (rc RecordConfig) entries() ([]enr.Entry, error) {
	es := []enr.Entry{enr.WithEntry(CapabilitiesKey, []byte{byte(rc.Caps)})}
	if rc.IP != nil {
		if ip4 := rc.IP.To4(); ip4 != nil {
			es = append(es, enr.IPv4(ip4))
			if rc.TCPPort != 0 {
				es = append(es, enr.TCP(rc.TCPPort))
			}
		} else {
			es = append(es, enr.IPv6(rc.IP))
			if rc.TCPPort != 0 {
				es = append(es, enr.TCP6(rc.TCPPort))
			}
		}
	}
	if rc.UDPPort != 0 {
		es = append(es, enr.UDP(rc.UDPPort))
	}
	if len(rc.Shards.Shards) > 0 {
		k, v, err := rc.Shards.Encode()
		if err != nil {
			return nil, err
		}
		es = append(es, enr.WithEntry(k, v))
	}
	return es, nil
}

// fits signs a record of entries and reports whether it is within
// MaxRecordSize. The sequence number is set to its largest value so that
// later increments never grow the record.
func fits(key *ecdsa.PrivateKey, entries []enr.Entry) error {
	var r enr.Record
	for _, e := range entries {
		r.Set(e)
	}
	r.SetSeq(^uint64(0))
	if err := enode.SignV4(&r, key); err != nil {
		return err
	}
	if r.Size() > MaxRecordSize {
		return errors.New("record over 300 bytes")
	}
	return nil
}
