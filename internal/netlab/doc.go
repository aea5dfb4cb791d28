// Package netlab runs processes, courier nodes above all, in Linux network
// namespaces joined by veth pairs and bridges, and injects faults between
// them: per-link delay and jitter through a userspace hop (a TUN device in
// a router namespace, served by this package, since the kernel may lack
// netem), loss by iptables statistic, bandwidth by tc tbf, partitions and
// heals, SIGSTOP and kill -9 with restarts, and full or read-only disks. A
// History records what a scenario published, delivered and archived and
// checks it by message hash.
//
// A lab needs root, iproute2 (ip, tc), iptables-restore and /dev/net/tun;
// Require skips a test without them and fails it under CI=true.
//
//	l := netlab.New(t, netlab.Config{Name: "mesh", Link: netlab.LinkSpec{Delay: 80 * time.Millisecond}})
//	a, b := l.AddHost("a"), l.AddHost("b")
//	na := a.StartNode(bin, t.TempDir())
//	nb := b.StartNode(bin, t.TempDir(), "--staticnode", na.Addr)
//	l.Partition([]*netlab.Host{a}, []*netlab.Host{b})
//
// A test's own server (a chain's JSON-RPC endpoint, say) is reached from
// a host through Forward: the host's loopback port is served by the test
// process, which joins each connection to the server's loopback address
// in its own namespace; the host keeps no route out. NewPeer is an
// in-test libp2p host on a lab host (a flooder, a measured peer), and
// DialGossip a raw gossipsub stream from it to a node.
//
// Addresses are 10.77.<segment>.<host>; hosts route only 10.77.0.0/16 and
// no namespace has a default route, so no packet leaves the lab. Every
// namespace, mount and process is removed by the test's cleanup, on
// SIGINT or SIGTERM, or, after a crash, by the next run's Sweep. Names
// start with Prefix and the creating process id, so concurrent test
// binaries leave each other's labs alone.
package netlab
