#!/bin/sh
# Downloads nwaku v0.38.1's node dashboards next to courier.json, so that
# Grafana (deploy/compose.yaml) loads them too, and checks that each is the
# file of that release. Run it from anywhere: sh fetch-nwaku.sh
set -eu
cd "$(dirname "$0")"
base=https://raw.githubusercontent.com/logos-messaging/logos-delivery/v0.38.1/metrics
while read -r sum name; do
	curl -fsSL -o "$name.tmp" "$base/$name"
	echo "$sum  $name.tmp" | sha256sum -c --quiet - || { rm -f "$name.tmp"; exit 1; }
	mv "$name.tmp" "$name"
	echo "$name"
done <<'LIST'
24ed5cbfe249d6ec07b60ddf30387a9d369e5b4a023b7d6c988837c352cb27f6 waku-single-node-dashboard.json
a27bdb74aef10d1e3eadc5ebde56b4ea2a3c7615e90a09c6b82f78c4cc9000df waku-fleet-dashboard.json
22efacdab5e90b89f0a0afefaa1f49f7db4b4e796aac43d65369bf874f71e3ba waku-rln-relay-single-node-dashboard.json
b7ea4a5b2106d3c1c84e922a7da682ff88fbd7be6bf3092e48cd6b7801e5dc96 waku-rln-relay-fleet-dashboard.json
LIST
