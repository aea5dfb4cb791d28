package main

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// deployDir is the folder of the compose file and its configuration.
const deployDir = "../../deploy"

type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   yaml.Node         `yaml:"depends_on"`
}

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

// reVar is compose's interpolation: ${NAME}, ${NAME:-default}, $$.
var reVar = regexp.MustCompile(`\$\$|\$\{([A-Z0-9_]+)(?::-([^}]*))?\}`)

// interpolate replaces every variable by its default, as compose does
// with none of them set.
func interpolate(s string) string {
	return reVar.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		return reVar.FindStringSubmatch(m)[2]
	})
}

// readCompose parses deploy/compose.yaml with its variables at their
// defaults.
func readCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal([]byte(interpolate(string(b))), &f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return f
}

// published parses a compose port, [host_ip:]host:container[/proto], and
// returns the host address, the container port and the protocol.
func published(t *testing.T, p string) (hostIP string, host, container int, proto string) {
	t.Helper()
	spec, proto, _ := strings.Cut(p, "/")
	if proto == "" {
		proto = "tcp"
	}
	parts := strings.Split(spec, ":")
	if len(parts) == 3 {
		hostIP, parts = parts[0], parts[1:]
	}
	if len(parts) != 2 {
		t.Fatalf("port %q is not [ip:]host:container", p)
	}
	h, err1 := strconv.Atoi(parts[0])
	c, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		t.Fatalf("port %q", p)
	}
	return hostIP, h, c, proto
}

func dependsOn(t *testing.T, s composeService) []string {
	t.Helper()
	var out []string
	switch s.DependsOn.Kind {
	case 0:
	case yaml.SequenceNode:
		if err := s.DependsOn.Decode(&out); err != nil {
			t.Fatal(err)
		}
	case yaml.MappingNode:
		var m map[string]any
		if err := s.DependsOn.Decode(&m); err != nil {
			t.Fatal(err)
		}
		for k := range m {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestComposeFile checks deploy/compose.yaml without running it: the
// services nwaku-compose has (the node, Postgres, its exporter,
// Prometheus, Grafana) with pinned images; the courier service's command
// is a command line this binary accepts, and what it configures agrees
// with the ports published, the volume, the Postgres service's
// credentials, Prometheus's scrape targets and Grafana's data source.
func TestComposeFile(t *testing.T) {
	f := readCompose(t)
	var names []string
	for name := range f.Services {
		names = append(names, name)
	}
	slices.Sort(names)
	if want := []string{"courier", "grafana", "postgres", "postgres-exporter", "prometheus"}; !slices.Equal(names, want) {
		t.Fatalf("services %q, want %q", names, want)
	}
	for name, s := range f.Services {
		if s.Image == "" || strings.HasSuffix(s.Image, ":latest") && name != "courier" || !strings.Contains(s.Image, ":") {
			t.Errorf("%s: image %q, want a pinned tag", name, s.Image)
		}
	}
	if img := f.Services["courier"].Image; img != "localhost/courier:latest" {
		t.Errorf("courier image %q, want the locally built localhost/courier:latest", img)
	}
	for name, want := range map[string][]string{
		"courier": {"postgres"}, "postgres-exporter": {"postgres"},
		"prometheus": {"courier", "postgres-exporter"}, "grafana": {"prometheus"},
	} {
		if got := dependsOn(t, f.Services[name]); !slices.Equal(got, want) {
			t.Errorf("%s depends on %q, want %q", name, got, want)
		}
	}

	// The node's command line, parsed as the node parses it.
	clearNodeEnv(t)
	c := f.Services["courier"]
	o, err := parseNodeFlags(c.Command)
	if err != nil {
		t.Fatalf("courier command %q: %v", c.Command, err)
	}
	cfg := o.cfg
	if !cfg.Relay || !cfg.Filter || !cfg.Lightpush || !cfg.Store || !cfg.REST || !cfg.RESTAdmin || !cfg.MetricsServer || !cfg.Discovery.Discv5 || !cfg.Discovery.PeerExchange {
		t.Errorf("courier config %+v: want relay, filter, lightpush, store, REST (admin), metrics, discv5 and peer exchange", cfg)
	}
	if cfg.ClusterID != 0 || !slices.Equal(cfg.Shards, []uint16{0}) || cfg.DataDir != "/data" {
		t.Errorf("cluster %d shards %v data dir %q, want 0, [0], /data", cfg.ClusterID, cfg.Shards, cfg.DataDir)
	}
	for what, addr := range map[string]string{"REST": cfg.RESTAddress, "metrics": cfg.MetricsAddress} {
		if ip := net.ParseIP(addr); ip == nil || !ip.IsUnspecified() {
			t.Errorf("%s listens on %q: not reachable from other containers", what, addr)
		}
	}

	// Every port the node listens on is published, and nothing else.
	if !cfg.WebSocket {
		t.Error("WebSocket is off")
	}
	key := func(proto string, port int) string { return proto + "/" + strconv.Itoa(port) }
	want := []string{key("tcp", cfg.TCPPort), key("udp", cfg.Discovery.Discv5UDPPort), key("tcp", cfg.WebSocketPort), key("tcp", cfg.RESTPort), key("tcp", cfg.MetricsPort)}
	var got []string
	for _, p := range c.Ports {
		ip, host, container, proto := published(t, p)
		got = append(got, key(proto, container))
		if host != container {
			t.Errorf("port %q publishes on another port", p)
		}
		if (container == cfg.RESTPort || container == cfg.MetricsPort) && ip != "127.0.0.1" {
			t.Errorf("port %q: the REST API and metrics are published on 127.0.0.1 only", p)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("published %q, the node listens on %q", got, want)
	}

	// The data volume is the named volume at --data-dir.
	if !slices.Contains(c.Volumes, "courier-data:"+cfg.DataDir) {
		t.Errorf("courier volumes %q, want courier-data at %s", c.Volumes, cfg.DataDir)
	}
	if _, ok := f.Volumes["courier-data"]; !ok {
		t.Error("volume courier-data not declared")
	}

	// The archive is the postgres service's database.
	u, err := url.Parse(cfg.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	pg := f.Services["postgres"]
	pass, _ := u.User.Password()
	if u.Scheme != "postgres" || u.Hostname() != "postgres" || u.Port() != "5432" || u.User.Username() != pg.Environment["POSTGRES_USER"] || pass != pg.Environment["POSTGRES_PASSWORD"] {
		t.Errorf("store URL %s does not match the postgres service %v", cfg.DBURL, pg.Environment)
	}
	if ex := f.Services["postgres-exporter"].Environment; ex["DATA_SOURCE_USER"] != pg.Environment["POSTGRES_USER"] || !strings.HasPrefix(ex["DATA_SOURCE_URI"], "postgres:5432/") {
		t.Errorf("postgres-exporter environment %v", ex)
	}

	// Every file mounted from the host is in deploy/.
	for name, s := range f.Services {
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if !strings.HasPrefix(src, "./") || src == "./postgresql" {
				continue // a named volume, or Postgres's data folder
			}
			if _, err := os.Stat(filepath.Join(deployDir, src)); err != nil {
				t.Errorf("%s mounts %s: %v", name, src, err)
			}
		}
	}

	checkMonitoring(t, "courier:"+strconv.Itoa(cfg.MetricsPort))
}

// checkMonitoring checks that Prometheus scrapes the node at target and
// the exporter, under the labels nwaku's dashboards select by, and that
// Grafana's provisioned data source is that Prometheus under the uid the
// dashboards name.
func checkMonitoring(t *testing.T, target string) {
	t.Helper()
	var prom struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string          `yaml:"targets"`
				Labels  map[string]string `yaml:"labels"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, "monitoring/prometheus.yml", &prom)
	targets := map[string]map[string]string{}
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, tg := range st.Targets {
				targets[tg] = st.Labels
			}
		}
	}
	labels, ok := targets[target]
	if !ok {
		t.Fatalf("Prometheus scrapes %v, not the node at %s", targets, target)
	}
	if _, ok := targets["postgres-exporter:9187"]; !ok {
		t.Errorf("Prometheus does not scrape the exporter: %v", targets)
	}
	// nwaku's dashboards: instance=~"[[host]].([[dc:pipe]]).([[fleet:pipe]])",
	// host node-.*, dc and fleet from label_values(libp2p_peers, ...).
	dash := regexp.MustCompile(`^node-.*\.(` + regexp.QuoteMeta(labels["datacenter"]) + `)\.(` + regexp.QuoteMeta(labels["fleet"]) + `)$`)
	if labels["datacenter"] == "" || labels["fleet"] == "" || !dash.MatchString(labels["instance"]) {
		t.Errorf("node's labels %v do not match nwaku's dashboards' instance selector", labels)
	}

	var ds struct {
		Datasources []struct {
			Type, UID, URL string
			IsDefault      bool `yaml:"isDefault"`
		}
	}
	readYAML(t, "monitoring/grafana/provisioning/datasources/prometheus.yaml", &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL != "http://prometheus:9090" ||
		ds.Datasources[0].UID != "P6693426190CB2316" || !ds.Datasources[0].IsDefault {
		t.Errorf("Grafana data sources %+v, want the prometheus service as uid P6693426190CB2316 (nwaku's dashboards)", ds.Datasources)
	}
	var dp struct {
		Providers []struct {
			Type    string
			Options struct{ Path string }
		}
	}
	readYAML(t, "monitoring/grafana/provisioning/dashboards/dashboards.yaml", &dp)
	if len(dp.Providers) != 1 || dp.Providers[0].Type != "file" || dp.Providers[0].Options.Path != "/var/lib/grafana/dashboards" {
		t.Errorf("Grafana dashboard providers %+v", dp.Providers)
	}
	if g := readCompose(t).Services["grafana"]; !slices.Contains(g.Volumes, "./monitoring/grafana/dashboards:/var/lib/grafana/dashboards:Z") {
		t.Errorf("grafana does not mount the dashboards folder at the provider's path: %q", g.Volumes)
	}
}

func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}
