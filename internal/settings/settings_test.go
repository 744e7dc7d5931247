package settings

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/problem"
)

const (
	testDBURL     = "postgres://occ_app:app-password@127.0.0.1:5432/occ"
	testSecret    = "0123456789abcdef0123456789abcdef-prod"
	testKeyFile   = "/run/occ/bootstrap/service-key.json"
	testPassFile  = "/run/occ/bootstrap/admin-password"
	testConfig    = "/etc/openclaw/installation/installation.yaml"
	testProdBase  = "https://occ.example.com"
	testProdHost  = "10.1.2.3"
	testProdPort  = "8080"
	testAdminMail = "ops@example.com"
)

// messagePattern is the log sanitizer's accepted message shape.
var messagePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._: /@-]{0,511}$`)

type env map[string]string

func (e env) with(set env, unset ...string) env {
	out := env{}
	for k, v := range e {
		out[k] = v
	}
	for k, v := range set {
		out[k] = v
	}
	for _, k := range unset {
		delete(out, k)
	}
	return out
}

func apiDev() env {
	return env{"NODE_ENV": "development", "OCC_HOST": "127.0.0.1", "OCC_PORT": "3000", "OCC_DATABASE_URL": testDBURL}
}

func apiProd() env {
	return env{
		"NODE_ENV": "production", "OCC_HOST": testProdHost, "OCC_PORT": testProdPort, "OCC_DATABASE_URL": testDBURL,
		"OCC_CONFIG_PATH": testConfig, "OCC_AUTH_SECRET": testSecret, "OCC_AUTH_BASE_URL": testProdBase,
	}
}

func workerDev() env {
	return env{"NODE_ENV": "development", "OCC_DATABASE_URL": testDBURL}
}

func workerProd() env {
	return env{"NODE_ENV": "production", "OCC_DATABASE_URL": testDBURL, "OCC_CONFIG_PATH": testConfig}
}

func bootDev() env {
	return env{"NODE_ENV": "development", "OCC_DATABASE_URL": testDBURL, "OCC_BOOTSTRAP_SERVICE_KEY_FILE": testKeyFile}
}

func bootProd() env {
	return env{
		"NODE_ENV": "production", "OCC_DATABASE_URL": testDBURL, "OCC_AUTH_SECRET": testSecret,
		"OCC_AUTH_BASE_URL": testProdBase, "OCC_BOOTSTRAP_SERVICE_KEY_FILE": testKeyFile,
		"OCC_BOOTSTRAP_PASSWORD_FILE": testPassFile, "OCC_BOOTSTRAP_ADMIN_EMAIL": testAdminMail,
		"OCC_BOOTSTRAP_INSTALLATION_NAME": "Acme Production",
	}
}

func migration() env {
	return env{"OCC_MIGRATION_DATABASE_URL": "postgresql://occ_migrator:pw@db.internal:5432/occ"}
}

type loader struct {
	name string
	load func(Lookup) error
}

var (
	ldAPI       = loader{"api", func(l Lookup) error { _, err := LoadAPI(l); return err }}
	ldWorker    = loader{"worker", func(l Lookup) error { _, err := LoadWorker(l); return err }}
	ldBootstrap = loader{"bootstrap", func(l Lookup) error { _, err := LoadBootstrap(l); return err }}
	ldMigration = loader{"migration", func(l Lookup) error { _, err := LoadMigration(l); return err }}
)

type failCase struct {
	name     string
	ld       loader
	env      env
	variable string
	code     string
	detail   string
}

func fc(name string, ld loader, e env, variable, code, detail string) failCase {
	return failCase{name: name, ld: ld, env: e, variable: variable, code: code, detail: detail}
}

const (
	cfg  = CodeConfigEnvInvalid
	dbc  = CodeDatabaseConfigurationInvalid
	sec  = CodeAuthSecretInvalid
	burl = CodeAuthBaseURLInvalid
	inst = CodeInstallationNameInvalid
	req  = problem.DetailRequired
	fmtE = problem.DetailInvalidFormat
	val  = problem.DetailInvalidValue
	long = problem.DetailTooLong
)

func failCases() []failCase {
	var cs []failCase
	add := func(c ...failCase) { cs = append(cs, c...) }

	// NODE_ENV, for every process that reads it.
	for _, p := range []struct {
		ld   loader
		base env
	}{{ldAPI, apiDev()}, {ldWorker, workerDev()}, {ldBootstrap, bootDev()}} {
		const n = "NODE_ENV"
		add(
			fc("missing", p.ld, p.base.with(nil, n), n, cfg, req),
			fc("blank", p.ld, p.base.with(env{n: ""}), n, cfg, req),
			fc("spaces", p.ld, p.base.with(env{n: "  "}), n, cfg, req),
			fc("capitalized", p.ld, p.base.with(env{n: "Production"}), n, cfg, val),
			fc("test", p.ld, p.base.with(env{n: "test"}), n, cfg, val),
			fc("padded", p.ld, p.base.with(env{n: " development"}), n, cfg, val),
		)
	}

	// Database URLs.
	for _, p := range []struct {
		ld   loader
		base env
		name string
	}{
		{ldMigration, migration(), "OCC_MIGRATION_DATABASE_URL"},
		{ldAPI, apiDev(), "OCC_DATABASE_URL"},
		{ldWorker, workerProd(), "OCC_DATABASE_URL"},
		{ldBootstrap, bootProd(), "OCC_DATABASE_URL"},
	} {
		n := p.name
		add(
			fc("missing", p.ld, p.base.with(nil, n), n, dbc, req),
			fc("blank", p.ld, p.base.with(env{n: ""}), n, dbc, req),
			fc("mysql", p.ld, p.base.with(env{n: "mysql://root:pw@db/occ"}), n, dbc, val),
			fc("http", p.ld, p.base.with(env{n: "http://db.internal/occ"}), n, dbc, val),
			fc("no scheme", p.ld, p.base.with(env{n: "db.internal/occ"}), n, dbc, fmtE),
			fc("garbage", p.ld, p.base.with(env{n: "not a url at all"}), n, dbc, fmtE),
			fc("opaque", p.ld, p.base.with(env{n: "postgres:occ"}), n, dbc, fmtE),
			fc("scheme only", p.ld, p.base.with(env{n: "postgres:"}), n, dbc, fmtE),
			fc("padded", p.ld, p.base.with(env{n: testDBURL + " "}), n, dbc, fmtE),
		)
	}

	// OCC_DATABASE_APP_ROLE.
	{
		const n = "OCC_DATABASE_APP_ROLE"
		m := migration()
		add(
			fc("blank", ldMigration, m.with(env{n: ""}), n, cfg, req),
			fc("uppercase", ldMigration, m.with(env{n: "Occ_App"}), n, cfg, fmtE),
			fc("leading digit", ldMigration, m.with(env{n: "1occ"}), n, cfg, fmtE),
			fc("hyphen", ldMigration, m.with(env{n: "occ-app"}), n, cfg, fmtE),
			fc("quoted", ldMigration, m.with(env{n: `"occ_app"`}), n, cfg, fmtE),
			fc("too long", ldMigration, m.with(env{n: strings.Repeat("a", 64)}), n, cfg, long),
			fc("pg prefix", ldMigration, m.with(env{n: "pg_monitor"}), n, cfg, val),
			fc("public", ldMigration, m.with(env{n: "public"}), n, cfg, val),
		)
	}

	// OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR and OCC_HOST.
	{
		const c, h = "OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR", "OCC_HOST"
		d, p := apiDev(), apiProd()
		add(
			fc("cidr blank", ldAPI, d.with(env{c: ""}), c, cfg, req),
			fc("cidr garbage beats host", ldAPI, d.with(env{c: "bridge", h: "0.0.0.0"}), c, cfg, fmtE),
			fc("cidr without mask", ldAPI, d.with(env{c: "172.30.41.0"}), c, cfg, fmtE),
			fc("cidr bad mask", ldAPI, d.with(env{c: "172.30.41.0/33"}), c, cfg, fmtE),

			fc("host missing", ldAPI, d.with(nil, h), h, cfg, req),
			fc("host blank", ldAPI, d.with(env{h: ""}), h, cfg, req),
			fc("dev wildcard without cidr", ldAPI, d.with(env{h: "0.0.0.0"}), h, cfg, val),
			fc("dev ipv6 wildcard", ldAPI, d.with(env{h: "::", c: "172.30.41.0/24"}), h, cfg, val),
			fc("dev non-loopback", ldAPI, d.with(env{h: "10.0.0.5"}), h, cfg, val),
			fc("dev other loopback", ldAPI, d.with(env{h: "127.0.0.2"}), h, cfg, val),
			fc("dev hostname", ldAPI, d.with(env{h: "localhost"}), h, cfg, fmtE),
			fc("dev bracketed", ldAPI, d.with(env{h: "[::1]"}), h, cfg, fmtE),
			fc("prod loopback", ldAPI, p.with(env{h: "127.0.0.1"}), h, cfg, val),
			fc("prod ipv6 loopback", ldAPI, p.with(env{h: "::1"}), h, cfg, val),
			fc("prod mapped loopback", ldAPI, p.with(env{h: "::ffff:127.0.0.1"}), h, cfg, val),
			fc("prod wildcard", ldAPI, p.with(env{h: "0.0.0.0"}), h, cfg, val),
			fc("prod wildcard with cidr", ldAPI, p.with(env{h: "0.0.0.0", c: "172.30.41.0/24"}), h, cfg, val),
			fc("prod ipv6 wildcard", ldAPI, p.with(env{h: "::"}), h, cfg, val),
			fc("prod multicast", ldAPI, p.with(env{h: "224.0.0.1"}), h, cfg, val),
			fc("prod zone", ldAPI, p.with(env{h: "fe80::1%eth0"}), h, cfg, val),
			fc("prod hostname", ldAPI, p.with(env{h: "occ-api.default.svc"}), h, cfg, fmtE),
			fc("prod two ips", ldAPI, p.with(env{h: "10.0.0.1,10.0.0.2"}), h, cfg, fmtE),
			fc("prod short ipv4", ldAPI, p.with(env{h: "10.1"}), h, cfg, fmtE),
			fc("prod octal ipv4", ldAPI, p.with(env{h: "010.1.2.3"}), h, cfg, fmtE),
		)
	}

	// OCC_PORT.
	{
		const n = "OCC_PORT"
		d := apiDev()
		add(
			fc("missing", ldAPI, d.with(nil, n), n, cfg, req),
			fc("blank", ldAPI, d.with(env{n: ""}), n, cfg, req),
			fc("word", ldAPI, d.with(env{n: "http"}), n, cfg, fmtE),
			fc("negative", ldAPI, d.with(env{n: "-1"}), n, cfg, fmtE),
			fc("plus", ldAPI, d.with(env{n: "+80"}), n, cfg, fmtE),
			fc("decimal point", ldAPI, d.with(env{n: "3000.0"}), n, cfg, fmtE),
			fc("padded", ldAPI, d.with(env{n: " 3000"}), n, cfg, fmtE),
			fc("zero", ldAPI, d.with(env{n: "0"}), n, cfg, val),
			fc("too high", ldAPI, d.with(env{n: "65536"}), n, cfg, val),
			fc("overflow", ldAPI, d.with(env{n: "99999999999999999999999"}), n, cfg, val),
		)
	}

	// Positive safe integers.
	for _, p := range []struct {
		ld   loader
		base env
		name string
	}{
		{ldAPI, apiDev(), "OCC_DATABASE_POOL_MAX"},
		{ldWorker, workerDev(), "OCC_WORKER_POLL_INTERVAL_MS"},
		{ldWorker, workerDev(), "OCC_WORKER_LEASE_DURATION_MS"},
		{ldWorker, workerDev(), "OCC_WORKER_MAX_ATTEMPTS"},
		{ldWorker, workerDev(), "OCC_WORKER_CONVERGENCE_TIMEOUT_MS"},
		{ldWorker, workerProd(), "OCC_WORKER_DATABASE_TIMEOUT_MS"},
	} {
		n := p.name
		add(
			fc("blank", p.ld, p.base.with(env{n: ""}), n, cfg, req),
			fc("spaces", p.ld, p.base.with(env{n: "   "}), n, cfg, req),
			fc("word", p.ld, p.base.with(env{n: "ten"}), n, cfg, fmtE),
			fc("negative", p.ld, p.base.with(env{n: "-5"}), n, cfg, fmtE),
			fc("fraction", p.ld, p.base.with(env{n: "1.5"}), n, cfg, fmtE),
			fc("exponent", p.ld, p.base.with(env{n: "1e3"}), n, cfg, fmtE),
			fc("padded", p.ld, p.base.with(env{n: " 5"}), n, cfg, fmtE),
			fc("hex", p.ld, p.base.with(env{n: "0x10"}), n, cfg, fmtE),
			fc("zero", p.ld, p.base.with(env{n: "0"}), n, cfg, val),
			fc("zeros", p.ld, p.base.with(env{n: "000"}), n, cfg, val),
			fc("above safe", p.ld, p.base.with(env{n: "9007199254740992"}), n, cfg, val),
			fc("overflow", p.ld, p.base.with(env{n: "99999999999999999999999"}), n, cfg, val),
		)
	}
	add(fc("duration overflow", ldWorker, workerDev().with(env{"OCC_WORKER_POLL_INTERVAL_MS": "9223372036855"}),
		"OCC_WORKER_POLL_INTERVAL_MS", cfg, val))

	// OCC_WORKER_CONCURRENCY.
	{
		const n = "OCC_WORKER_CONCURRENCY"
		w := workerDev()
		add(
			fc("blank", ldWorker, w.with(env{n: ""}), n, cfg, req),
			fc("word", ldWorker, w.with(env{n: "four"}), n, cfg, fmtE),
			fc("negative", ldWorker, w.with(env{n: "-1"}), n, cfg, fmtE),
			fc("zero", ldWorker, w.with(env{n: "0"}), n, cfg, val),
			fc("too high", ldWorker, w.with(env{n: "257"}), n, cfg, val),
		)
	}

	// Absolute paths.
	for _, p := range []struct {
		ld   loader
		base env
		name string
	}{
		{ldAPI, apiDev(), "OCC_CONFIG_PATH"},
		{ldAPI, apiProd(), "OCC_CONFIG_PATH"},
		{ldWorker, workerDev(), "OCC_CONFIG_PATH"},
		{ldWorker, workerProd(), "OCC_CONFIG_PATH"},
		{ldAPI, apiDev(), "OCC_DEVELOPMENT_CONFIGURATION_ROOT"},
		{ldAPI, apiProd(), "OCC_DEVELOPMENT_SECRET_ROOT"},
		{ldWorker, workerDev(), "OCC_DEVELOPMENT_CONFIGURATION_ROOT"},
		{ldWorker, workerDev(), "OCC_DEVELOPMENT_SECRET_ROOT"},
		{ldWorker, workerDev(), "OCC_WORKER_READINESS_PATH"},
		{ldWorker, workerDev(), "OCC_WORKER_LIVENESS_PATH"},
	} {
		n := p.name
		add(
			fc("blank", p.ld, p.base.with(env{n: ""}), n, cfg, req),
			fc("relative", p.ld, p.base.with(env{n: "etc/openclaw/file"}), n, cfg, val),
			fc("dot relative", p.ld, p.base.with(env{n: "./file"}), n, cfg, val),
		)
	}
	add(
		fc("production config missing", ldAPI, apiProd().with(nil, "OCC_CONFIG_PATH"), "OCC_CONFIG_PATH", cfg, req),
		fc("production config missing", ldWorker, workerProd().with(nil, "OCC_CONFIG_PATH"), "OCC_CONFIG_PATH", cfg, req),
		fc("liveness equals readiness", ldWorker, workerDev().with(env{
			"OCC_WORKER_READINESS_PATH": "/tmp/occ-worker", "OCC_WORKER_LIVENESS_PATH": "/tmp/occ-worker",
		}), "OCC_WORKER_LIVENESS_PATH", cfg, val),
	)

	// OCC_AUTH_SECRET.
	for _, p := range []struct {
		ld        loader
		dev, prod env
	}{{ldAPI, apiDev(), apiProd()}, {ldBootstrap, bootDev(), bootProd()}} {
		const n = "OCC_AUTH_SECRET"
		short := strings.Repeat("s", 31)
		add(
			fc("production missing", p.ld, p.prod.with(nil, n), n, sec, req),
			fc("production blank", p.ld, p.prod.with(env{n: ""}), n, sec, req),
			fc("production whitespace", p.ld, p.prod.with(env{n: strings.Repeat(" ", 40)}), n, sec, req),
			fc("development blank", p.ld, p.dev.with(env{n: ""}), n, sec, req),
			fc("production short", p.ld, p.prod.with(env{n: short}), n, sec, val),
			fc("development short", p.ld, p.dev.with(env{n: short}), n, sec, val),
			fc("short in characters", p.ld, p.dev.with(env{n: strings.Repeat("é", 20)}), n, sec, val),
		)
	}

	// OCC_AUTH_BASE_URL, shared rules.
	for _, p := range []struct {
		ld        loader
		dev, prod env
	}{{ldAPI, apiDev(), apiProd()}, {ldBootstrap, bootDev(), bootProd()}} {
		const n = "OCC_AUTH_BASE_URL"
		add(
			fc("production missing", p.ld, p.prod.with(nil, n), n, burl, req),
			fc("production blank", p.ld, p.prod.with(env{n: ""}), n, burl, req),
			fc("development blank", p.ld, p.dev.with(env{n: " "}), n, burl, req),
			fc("path", p.ld, p.dev.with(env{n: "http://127.0.0.1:3000/console"}), n, burl, val),
			fc("path production", p.ld, p.prod.with(env{n: "https://occ.example.com/occ/"}), n, burl, val),
			fc("encoded path", p.ld, p.prod.with(env{n: "https://occ.example.com/%2F"}), n, burl, val),
			fc("query", p.ld, p.dev.with(env{n: "http://127.0.0.1:3000/?next=1"}), n, burl, val),
			fc("empty query", p.ld, p.dev.with(env{n: "http://127.0.0.1:3000?"}), n, burl, val),
			fc("fragment", p.ld, p.dev.with(env{n: "http://127.0.0.1:3000/#top"}), n, burl, val),
			fc("empty fragment", p.ld, p.prod.with(env{n: "https://occ.example.com#"}), n, burl, val),
			fc("userinfo", p.ld, p.dev.with(env{n: "http://admin:pw@127.0.0.1:3000"}), n, burl, val),
			fc("user only", p.ld, p.prod.with(env{n: "https://admin@occ.example.com"}), n, burl, val),
			fc("ftp", p.ld, p.dev.with(env{n: "ftp://127.0.0.1"}), n, burl, val),
			fc("ws", p.ld, p.prod.with(env{n: "wss://occ.example.com"}), n, burl, val),
			fc("no scheme", p.ld, p.dev.with(env{n: "127.0.0.1:3000"}), n, burl, fmtE),
			fc("relative", p.ld, p.dev.with(env{n: "/console"}), n, burl, fmtE),
			fc("no host", p.ld, p.dev.with(env{n: "http:///"}), n, burl, fmtE),
			fc("port only", p.ld, p.dev.with(env{n: "http://:3000"}), n, burl, fmtE),
			fc("opaque", p.ld, p.dev.with(env{n: "http:127.0.0.1"}), n, burl, fmtE),
			fc("padded", p.ld, p.dev.with(env{n: " http://127.0.0.1:3000"}), n, burl, fmtE),
			fc("backslash", p.ld, p.prod.with(env{n: `https:\\occ.example.com`}), n, burl, fmtE),
			fc("space in host", p.ld, p.prod.with(env{n: "https://occ example.com"}), n, burl, fmtE),
			fc("bad host char", p.ld, p.prod.with(env{n: "https://occ!example.com"}), n, burl, fmtE),
			fc("empty label", p.ld, p.prod.with(env{n: "https://occ..example.com"}), n, burl, fmtE),
			fc("trailing dot", p.ld, p.prod.with(env{n: "https://occ.example.com."}), n, burl, fmtE),
			fc("unicode host", p.ld, p.prod.with(env{n: "https://bücher.example"}), n, burl, fmtE),
			fc("ipv6 zone", p.ld, p.dev.with(env{n: "http://[fe80::1%25eth0]:3000"}), n, burl, fmtE),
			fc("bad ipv6", p.ld, p.dev.with(env{n: "http://[::g]:3000"}), n, burl, fmtE),
			fc("port zero", p.ld, p.dev.with(env{n: "http://127.0.0.1:0"}), n, burl, val),
			fc("port too high", p.ld, p.dev.with(env{n: "http://127.0.0.1:65536"}), n, burl, val),
			fc("bad port", p.ld, p.dev.with(env{n: "http://127.0.0.1:30a0"}), n, burl, fmtE),
			fc("development non-loopback", p.ld, p.dev.with(env{n: "http://10.0.0.5:3000"}), n, burl, val),
			fc("development public name", p.ld, p.dev.with(env{n: "https://occ.example.com"}), n, burl, val),
			fc("development other loopback", p.ld, p.dev.with(env{n: "http://127.0.0.2:3000"}), n, burl, val),
			fc("development mapped loopback", p.ld, p.dev.with(env{n: "http://[::ffff:127.0.0.1]:3000"}), n, burl, val),
			fc("production http", p.ld, p.prod.with(env{n: "http://occ.example.com"}), n, burl, val),
			fc("production http ip", p.ld, p.prod.with(env{n: "http://10.1.2.3:3000"}), n, burl, val),
		)
	}
	// OCC_AUTH_BASE_URL, API variant.
	{
		const n = "OCC_AUTH_BASE_URL"
		add(
			fc("api development localhost", ldAPI, apiDev().with(env{n: "http://localhost:3000"}), n, burl, val),
			fc("api invalid ipv4", ldAPI, apiDev().with(env{n: "http://256.0.0.1:3000"}), n, burl, fmtE),
			fc("api invalid octal", ldAPI, apiDev().with(env{n: "http://08.0.0.1:3000"}), n, burl, fmtE),
			fc("api five parts", ldAPI, apiDev().with(env{n: "http://1.2.3.4.5:3000"}), n, burl, fmtE),
			fc("api huge hex label", ldAPI, apiProd().with(env{n: "https://occ.0xffffffffffffffffff"}), n, burl, fmtE),
			fc("api numeric last label", ldAPI, apiProd().with(env{n: "https://occ.example.123"}), n, burl, fmtE),
			fc("api number hides public ip", ldAPI, apiDev().with(env{n: "http://167772161:3000"}), n, burl, val),
		)
	}
	// OCC_AUTH_BASE_URL, bootstrap refuses non-canonical IPv4.
	for _, host := range []string{"127.1", "0177.0.0.1", "0x7f.0.0.1", "2130706433", "127.0.0.01", "127.0.1", "127.0.0.1.", "0x7f000001"} {
		const n = "OCC_AUTH_BASE_URL"
		add(
			fc("bootstrap development "+host, ldBootstrap, bootDev().with(env{n: "http://" + host + ":3000"}), n, burl, fmtE),
			fc("bootstrap production "+host, ldBootstrap, bootProd().with(env{n: "https://" + host}), n, burl, fmtE),
		)
	}

	// Metrics.
	for _, p := range []struct {
		ld        loader
		dev, prod env
	}{{ldAPI, apiDev(), apiProd()}, {ldWorker, workerDev(), workerProd()}} {
		const e, h, pt = "OCC_METRICS_ENABLED", "OCC_METRICS_HOST", "OCC_METRICS_PORT"
		on := env{e: "true", h: "127.0.0.1", pt: "9464"}
		onProd := env{e: "true", h: "10.1.2.3", pt: "9464"}
		add(
			fc("enabled blank", p.ld, p.dev.with(env{e: ""}), e, cfg, req),
			fc("enabled TRUE", p.ld, p.dev.with(env{e: "TRUE"}), e, cfg, val),
			fc("enabled 1", p.ld, p.dev.with(env{e: "1"}), e, cfg, val),
			fc("enabled yes", p.ld, p.prod.with(env{e: "yes"}), e, cfg, val),
			fc("host while unset", p.ld, p.dev.with(env{h: "127.0.0.1"}), h, cfg, val),
			fc("host while false", p.ld, p.prod.with(env{e: "false", h: "10.1.2.3"}), h, cfg, val),
			fc("blank host while false", p.ld, p.dev.with(env{e: "false", h: ""}), h, cfg, val),
			fc("port while unset", p.ld, p.dev.with(env{pt: "9464"}), pt, cfg, val),
			fc("port while false", p.ld, p.prod.with(env{e: "false", pt: "9464"}), pt, cfg, val),
			fc("host missing", p.ld, p.dev.with(on, h), h, cfg, req),
			fc("host blank", p.ld, p.dev.with(on.with(env{h: ""})), h, cfg, req),
			fc("port missing", p.ld, p.dev.with(on, pt), pt, cfg, req),
			fc("port blank", p.ld, p.dev.with(on.with(env{pt: ""})), pt, cfg, req),
			fc("port word", p.ld, p.dev.with(on.with(env{pt: "metrics"})), pt, cfg, fmtE),
			fc("port zero", p.ld, p.dev.with(on.with(env{pt: "0"})), pt, cfg, val),
			fc("port too high", p.ld, p.prod.with(onProd.with(env{pt: "70000"})), pt, cfg, val),
			fc("development non-loopback", p.ld, p.dev.with(on.with(env{h: "10.1.2.3"})), h, cfg, val),
			fc("development wildcard", p.ld, p.dev.with(on.with(env{h: "0.0.0.0"})), h, cfg, val),
			fc("development hostname", p.ld, p.dev.with(on.with(env{h: "localhost"})), h, cfg, fmtE),
			fc("production wildcard", p.ld, p.prod.with(onProd.with(env{h: "0.0.0.0"})), h, cfg, val),
			fc("production ipv6 wildcard", p.ld, p.prod.with(onProd.with(env{h: "::"})), h, cfg, val),
			fc("production hostname", p.ld, p.prod.with(onProd.with(env{h: "metrics.local"})), h, cfg, fmtE),
			fc("production cidr", p.ld, p.prod.with(onProd.with(env{h: "10.0.0.0/8"})), h, cfg, fmtE),
		)
	}
	add(
		fc("metrics port equals OCC_PORT", ldAPI, apiDev().with(env{
			"OCC_METRICS_ENABLED": "true", "OCC_METRICS_HOST": "127.0.0.1", "OCC_METRICS_PORT": "3000",
		}), "OCC_METRICS_PORT", cfg, val),
		fc("metrics port equals OCC_PORT numerically", ldAPI, apiProd().with(env{
			"OCC_METRICS_ENABLED": "true", "OCC_METRICS_HOST": "10.1.2.3", "OCC_METRICS_PORT": "08080",
		}), "OCC_METRICS_PORT", cfg, val),
	)

	// Bootstrap files.
	{
		const k, pw = "OCC_BOOTSTRAP_SERVICE_KEY_FILE", "OCC_BOOTSTRAP_PASSWORD_FILE"
		for _, base := range []env{bootDev(), bootProd()} {
			add(
				fc("key missing", ldBootstrap, base.with(nil, k), k, cfg, req),
				fc("key blank", ldBootstrap, base.with(env{k: ""}), k, cfg, req),
				fc("key relative", ldBootstrap, base.with(env{k: "service-key.json"}), k, cfg, val),
				fc("key unclean", ldBootstrap, base.with(env{k: "/run/occ/../occ/key.json"}), k, cfg, val),
				fc("key double slash", ldBootstrap, base.with(env{k: "/run//occ/key.json"}), k, cfg, val),
				fc("key trailing slash", ldBootstrap, base.with(env{k: "/run/occ/"}), k, cfg, val),
				fc("key root", ldBootstrap, base.with(env{k: "/"}), k, cfg, val),
			)
		}
		p := bootProd()
		add(
			fc("password missing", ldBootstrap, p.with(nil, pw), pw, cfg, req),
			fc("password blank", ldBootstrap, p.with(env{pw: ""}), pw, cfg, req),
			fc("password relative", ldBootstrap, p.with(env{pw: "admin-password"}), pw, cfg, val),
			fc("password unclean", ldBootstrap, p.with(env{pw: "/run/occ/bootstrap/./admin-password"}), pw, cfg, val),
			fc("password same as key", ldBootstrap, p.with(env{pw: testKeyFile}), pw, cfg, val),
			fc("password other directory", ldBootstrap, p.with(env{pw: "/run/occ/admin-password"}), pw, cfg, val),
			fc("password sub directory", ldBootstrap, p.with(env{pw: "/run/occ/bootstrap/x/admin-password"}), pw, cfg, val),
		)
	}

	// Bootstrap emails.
	for _, p := range []struct {
		base env
		name string
	}{{bootProd(), "OCC_BOOTSTRAP_ADMIN_EMAIL"}, {bootDev(), "OPENCLAW_DEV_EMAIL"}} {
		n := p.name
		add(
			fc("blank", ldBootstrap, p.base.with(env{n: ""}), n, cfg, req),
			fc("spaces", ldBootstrap, p.base.with(env{n: "   "}), n, cfg, req),
			fc("no at", ldBootstrap, p.base.with(env{n: "admin.example.com"}), n, cfg, fmtE),
			fc("no dot", ldBootstrap, p.base.with(env{n: "admin@localhost"}), n, cfg, fmtE),
			fc("dot last", ldBootstrap, p.base.with(env{n: "admin@example."}), n, cfg, fmtE),
			fc("dot first", ldBootstrap, p.base.with(env{n: "admin@.com"}), n, cfg, fmtE),
			fc("two ats", ldBootstrap, p.base.with(env{n: "ad@min@example.com"}), n, cfg, fmtE),
			fc("empty local", ldBootstrap, p.base.with(env{n: "@example.com"}), n, cfg, fmtE),
			fc("inner space", ldBootstrap, p.base.with(env{n: "ad min@example.com"}), n, cfg, fmtE),
			fc("unicode space", ldBootstrap, p.base.with(env{n: "ad\u00a0min@example.com"}), n, cfg, fmtE),
			fc("control", ldBootstrap, p.base.with(env{n: "ad\x01min@example.com"}), n, cfg, fmtE),
			fc("invalid utf8", ldBootstrap, p.base.with(env{n: "ad\xffmin@example.com"}), n, cfg, fmtE),
			fc("too long", ldBootstrap, p.base.with(env{n: strings.Repeat("a", 309) + "@example.com"}), n, cfg, long),
		)
	}
	add(fc("production email missing", ldBootstrap, bootProd().with(nil, "OCC_BOOTSTRAP_ADMIN_EMAIL"),
		"OCC_BOOTSTRAP_ADMIN_EMAIL", cfg, req))

	// Installation names.
	for _, p := range []struct {
		base env
		name string
	}{{bootProd(), "OCC_BOOTSTRAP_INSTALLATION_NAME"}, {bootDev(), "OPENCLAW_DEV_INSTALLATION_NAME"}} {
		n := p.name
		add(
			fc("blank", ldBootstrap, p.base.with(env{n: ""}), n, inst, req),
			fc("spaces", ldBootstrap, p.base.with(env{n: "  "}), n, inst, req),
			fc("leading space", ldBootstrap, p.base.with(env{n: " Acme"}), n, inst, fmtE),
			fc("trailing space", ldBootstrap, p.base.with(env{n: "Acme "}), n, inst, fmtE),
			fc("trailing nbsp", ldBootstrap, p.base.with(env{n: "Acme\u00a0"}), n, inst, fmtE),
			fc("leading bom", ldBootstrap, p.base.with(env{n: "\ufeffAcme"}), n, inst, fmtE),
			fc("newline", ldBootstrap, p.base.with(env{n: "Ac\nme"}), n, inst, fmtE),
			fc("c0", ldBootstrap, p.base.with(env{n: "Ac\x01me"}), n, inst, fmtE),
			fc("del", ldBootstrap, p.base.with(env{n: "Ac\x7fme"}), n, inst, fmtE),
			fc("c1", ldBootstrap, p.base.with(env{n: "Ac\u0085me"}), n, inst, fmtE),
			fc("line separator", ldBootstrap, p.base.with(env{n: "Ac\u2028me"}), n, inst, fmtE),
			fc("paragraph separator", ldBootstrap, p.base.with(env{n: "Ac\u2029me"}), n, inst, fmtE),
			fc("invalid utf8", ldBootstrap, p.base.with(env{n: "Ac\xffme"}), n, inst, fmtE),
			fc("too long", ldBootstrap, p.base.with(env{n: strings.Repeat("n", 201)}), n, inst, long),
			fc("too long runes", ldBootstrap, p.base.with(env{n: strings.Repeat("é", 201)}), n, inst, long),
		)
	}
	add(fc("production name missing", ldBootstrap, bootProd().with(nil, "OCC_BOOTSTRAP_INSTALLATION_NAME"),
		"OCC_BOOTSTRAP_INSTALLATION_NAME", inst, req))

	// OPENCLAW_DEV_PASSWORD.
	{
		const n = "OPENCLAW_DEV_PASSWORD"
		d := bootDev()
		add(
			fc("blank", ldBootstrap, d.with(env{n: ""}), n, cfg, req),
			fc("spaces", ldBootstrap, d.with(env{n: strings.Repeat(" ", 20)}), n, cfg, req),
			fc("short", ldBootstrap, d.with(env{n: strings.Repeat("p", 11)}), n, cfg, val),
			fc("long", ldBootstrap, d.with(env{n: strings.Repeat("p", 129)}), n, cfg, long),
		)
	}

	// The first failing variable in declaration order wins.
	add(
		fc("order NODE_ENV first", ldAPI, apiDev().with(env{"NODE_ENV": "staging", "OCC_PORT": "x"}), "NODE_ENV", cfg, val),
		fc("order port before metrics", ldAPI, apiDev().with(env{"OCC_PORT": "x", "OCC_METRICS_HOST": "127.0.0.1"}), "OCC_PORT", cfg, fmtE),
		fc("order database before secret", ldAPI, apiProd().with(env{"OCC_AUTH_SECRET": "short"}, "OCC_DATABASE_URL"), "OCC_DATABASE_URL", dbc, req),
		fc("order secret before base url", ldBootstrap, bootProd().with(env{"OCC_AUTH_BASE_URL": "http://x"}, "OCC_AUTH_SECRET"), "OCC_AUTH_SECRET", sec, req),
		fc("order key before password", ldBootstrap, bootProd().with(env{"OCC_BOOTSTRAP_SERVICE_KEY_FILE": "rel"}, "OCC_BOOTSTRAP_PASSWORD_FILE"), "OCC_BOOTSTRAP_SERVICE_KEY_FILE", cfg, val),
		fc("order poll before concurrency", ldWorker, workerDev().with(env{"OCC_WORKER_POLL_INTERVAL_MS": "0", "OCC_WORKER_CONCURRENCY": "0"}), "OCC_WORKER_POLL_INTERVAL_MS", cfg, val),
		fc("order url before role", ldMigration, env{"OCC_DATABASE_APP_ROLE": "BAD"}, "OCC_MIGRATION_DATABASE_URL", dbc, req),
	)
	return cs
}

func docFor(name string) (VariableDoc, bool) {
	for _, d := range Variables {
		if d.Name == name {
			return d, true
		}
	}
	return VariableDoc{}, false
}

func TestLoadFailures(t *testing.T) {
	t.Parallel()
	for _, c := range failCases() {
		t.Run(c.ld.name+"/"+c.variable+"/"+c.name, func(t *testing.T) {
			t.Parallel()
			err := c.ld.load(MapLookup(c.env))
			if err == nil {
				t.Fatalf("expected %s on %s, got success", c.code, c.variable)
			}
			var se *problem.Error
			if !errors.As(err, &se) {
				t.Fatalf("error is %T, want *settings.Error", err)
			}
			if se.Code != c.code {
				t.Errorf("Code = %s, want %s (message %q)", se.Code, c.code, se.Message)
			}
			want := []problem.Detail{{Path: "/env/" + c.variable, Code: c.detail}}
			if !slices.Equal(se.Details, want) {
				t.Errorf("Details = %+v, want %+v (message %q)", se.Details, want, se.Message)
			}
			if !messagePattern.MatchString(se.Message) {
				t.Errorf("message %q does not pass the log sanitizer", se.Message)
			}
			if !strings.Contains(se.Message, c.variable) && se.Message != DatabaseURLMessage {
				t.Errorf("message %q does not name %s", se.Message, c.variable)
			}
			// Messages may name the allowed values, never anything else that was submitted.
			allowed := []string{"development", "production", "0.0.0.0", "127.0.0.1"}
			if v := strings.TrimSpace(c.env[c.variable]); len(v) >= 4 && !slices.Contains(allowed, v) && strings.Contains(se.Message, v) {
				t.Errorf("message %q contains the submitted value", se.Message)
			}
			if d, ok := docFor(c.variable); !ok {
				t.Errorf("%s is not documented in Variables", c.variable)
			} else if d.Code != se.Code {
				t.Errorf("Variables says %s fails with %s, loader said %s", c.variable, d.Code, se.Code)
			}
			if se.Error() != se.Code+": "+se.Message {
				t.Errorf("Error() = %q", se.Error())
			}
		})
	}
}

func TestDatabaseURLMessageIsTheSeedText(t *testing.T) {
	t.Parallel()
	_, err := LoadWorker(MapLookup(workerDev().with(nil, "OCC_DATABASE_URL")))
	var se *problem.Error
	if !errors.As(err, &se) || se.Message != "A valid PostgreSQL connection URL must be explicitly configured." {
		t.Fatalf("got %v", err)
	}
}

func TestNilLookupIsEmptyEnvironment(t *testing.T) {
	t.Parallel()
	_, err := LoadAPI(nil)
	var se *problem.Error
	if !errors.As(err, &se) || se.Details[0].Path != "/env/NODE_ENV" || se.Details[0].Code != problem.DetailRequired {
		t.Fatalf("got %v", err)
	}
}

func TestAPIDefaults(t *testing.T) {
	t.Parallel()
	a, err := LoadAPI(MapLookup(apiDev()))
	if err != nil {
		t.Fatal(err)
	}
	want := API{
		Mode: Development, Host: "127.0.0.1", Port: 3000, DatabaseURL: testDBURL, DatabasePoolMax: 10,
		AuthSecret:  "openclaw-development-auth-secret-minimum-32-bytes",
		AuthBaseURL: "http://127.0.0.1:3000", SignIn: defaultSignIn,
	}
	if a != want {
		t.Fatalf("got  %#v\nwant %#v", plainAPI(a), plainAPI(want))
	}
	if a.DevelopmentTrustedBridgeCIDR.IsValid() || a.Metrics.Enabled || a.Metrics.ListenAddress() != "" {
		t.Fatalf("unexpected optional settings: %+v", plainAPI(a))
	}
	if got := a.ListenAddress(); got != "127.0.0.1:3000" {
		t.Fatalf("ListenAddress = %q", got)
	}
}

type rawAPI API

func plainAPI(a API) rawAPI { return rawAPI(a) }

func TestAPIValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		env   env
		check func(t *testing.T, a API)
	}{
		{"production", apiProd().with(env{
			"OCC_DATABASE_POOL_MAX": "25", "OCC_DEVELOPMENT_CONFIGURATION_ROOT": "/var/lib/occ/configurations",
			"OCC_DEVELOPMENT_SECRET_ROOT": "/var/lib/occ/secrets", "OCC_METRICS_ENABLED": "true",
			"OCC_METRICS_HOST": "10.1.2.3", "OCC_METRICS_PORT": "9464",
		}), func(t *testing.T, a API) {
			want := API{
				Mode: Production, Host: testProdHost, Port: 8080, DatabaseURL: testDBURL, DatabasePoolMax: 25,
				ConfigPath: testConfig, AuthSecret: testSecret, AuthBaseURL: testProdBase,
				DevelopmentConfigurationRoot: "/var/lib/occ/configurations", DevelopmentSecretRoot: "/var/lib/occ/secrets",
				Metrics: Metrics{Enabled: true, Host: "10.1.2.3", Port: 9464}, SignIn: defaultSignIn,
			}
			if a != want {
				t.Fatalf("got  %+v\nwant %+v", plainAPI(a), plainAPI(want))
			}
			if a.ListenAddress() != "10.1.2.3:8080" || a.Metrics.ListenAddress() != "10.1.2.3:9464" {
				t.Fatalf("listen addresses %q %q", a.ListenAddress(), a.Metrics.ListenAddress())
			}
		}},
		{"production ipv6 host", apiProd().with(env{"OCC_HOST": "FD00:0:0::1"}), func(t *testing.T, a API) {
			if a.Host != "fd00::1" || a.ListenAddress() != "[fd00::1]:8080" {
				t.Fatalf("host %q listen %q", a.Host, a.ListenAddress())
			}
		}},
		{"production http on loopback base url", apiProd().with(env{"OCC_AUTH_BASE_URL": "http://127.0.0.1:8080/"}), func(t *testing.T, a API) {
			if a.AuthBaseURL != "http://127.0.0.1:8080" {
				t.Fatal(a.AuthBaseURL)
			}
		}},
		{"production http on localhost base url", apiProd().with(env{"OCC_AUTH_BASE_URL": "http://localhost:8080"}), func(t *testing.T, a API) {
			if a.AuthBaseURL != "http://localhost:8080" {
				t.Fatal(a.AuthBaseURL)
			}
		}},
		{"development bridge", apiDev().with(env{"OCC_HOST": "0.0.0.0", "OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR": "172.30.41.7/24"}), func(t *testing.T, a API) {
			if a.Host != "0.0.0.0" || a.DevelopmentTrustedBridgeCIDR != netip.MustParsePrefix("172.30.41.0/24") {
				t.Fatalf("host %q cidr %v", a.Host, a.DevelopmentTrustedBridgeCIDR)
			}
		}},
		{"development ipv6 loopback and metrics", apiDev().with(env{
			"OCC_HOST": "::1", "OCC_METRICS_ENABLED": "true", "OCC_METRICS_HOST": "::1", "OCC_METRICS_PORT": "9464",
			"OCC_AUTH_BASE_URL": "http://[::1]:3000",
		}), func(t *testing.T, a API) {
			if a.ListenAddress() != "[::1]:3000" || a.Metrics.ListenAddress() != "[::1]:9464" || a.AuthBaseURL != "http://[::1]:3000" {
				t.Fatalf("%+v", plainAPI(a))
			}
		}},
		{"metrics explicitly disabled", apiDev().with(env{"OCC_METRICS_ENABLED": "false"}), func(t *testing.T, a API) {
			if a.Metrics != (Metrics{}) {
				t.Fatalf("%+v", a.Metrics)
			}
		}},
		{"explicit secret", apiDev().with(env{"OCC_AUTH_SECRET": strings.Repeat("x", 32)}), func(t *testing.T, a API) {
			if a.AuthSecret != strings.Repeat("x", 32) {
				t.Fatal(a.AuthSecret)
			}
		}},
		{"uppercase database scheme", apiDev().with(env{"OCC_DATABASE_URL": "PostgreSQL://app@db/occ"}), func(t *testing.T, a API) {
			if a.DatabaseURL != "postgresql://app@db/occ" {
				t.Fatal(a.DatabaseURL)
			}
		}},
		{"unix socket database url", apiDev().with(env{"OCC_DATABASE_URL": "postgres:///occ?host=/var/run/postgresql"}), func(t *testing.T, a API) {
			if a.DatabaseURL != "postgres:///occ?host=/var/run/postgresql" {
				t.Fatal(a.DatabaseURL)
			}
		}},
		{"leading zero port", apiDev().with(env{"OCC_PORT": "03000"}), func(t *testing.T, a API) {
			if a.Port != 3000 {
				t.Fatal(a.Port)
			}
		}},
		{"largest safe pool", apiDev().with(env{"OCC_DATABASE_POOL_MAX": "9007199254740991"}), func(t *testing.T, a API) {
			if a.DatabasePoolMax != 9007199254740991 {
				t.Fatal(a.DatabasePoolMax)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := LoadAPI(MapLookup(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, a)
		})
	}
}

func TestAuthBaseURLNormalization(t *testing.T) {
	t.Parallel()
	tests := []struct {
		loader string
		mode   Mode
		raw    string
		want   string
	}{
		{"api", Development, "http://127.0.0.1:3000/", "http://127.0.0.1:3000"},
		{"api", Development, "HTTP://127.0.0.1:3000", "http://127.0.0.1:3000"},
		{"api", Development, "http://127.0.0.1:80/", "http://127.0.0.1"},
		{"api", Development, "http://127.0.0.1:", "http://127.0.0.1"},
		{"api", Development, "http://127.0.0.1:03000", "http://127.0.0.1:3000"},
		{"api", Development, "http://127.1:3000", "http://127.0.0.1:3000"},
		{"api", Development, "http://0177.0.0.1:3000", "http://127.0.0.1:3000"},
		{"api", Development, "http://0x7f.0.0.1:3000", "http://127.0.0.1:3000"},
		{"api", Development, "http://2130706433:3000", "http://127.0.0.1:3000"},
		{"api", Development, "http://127.0.0.1.:3000", "http://127.0.0.1:3000"},
		{"api", Development, "http://[0:0:0:0:0:0:0:1]:3000", "http://[::1]:3000"},
		{"api", Production, "https://OCC.Example.COM:443/", "https://occ.example.com"},
		{"api", Production, "https://occ.example.com:8443", "https://occ.example.com:8443"},
		{"api", Production, "https://[2001:DB8:0:0:1:0:0:1]", "https://[2001:db8::1:0:0:1]"},
		{"api", Production, "https://[::ffff:10.0.0.1]", "https://[::ffff:a00:1]"},
		{"api", Production, "https://10.1.2.3", "https://10.1.2.3"},
		{"api", Production, "https://occ_internal.example.com", "https://occ_internal.example.com"},
		{"api", Production, "https://occ.0xample.com", "https://occ.0xample.com"},
		{"api", Production, "https://0x7f.example.com", "https://0x7f.example.com"},
		{"api", Production, "http://[::1]:3000", "http://[::1]:3000"},
		{"bootstrap", Development, "http://localhost:3000/", "http://localhost:3000"},
		{"bootstrap", Development, "http://LOCALHOST:3000", "http://localhost:3000"},
		{"bootstrap", Development, "http://127.0.0.1:3000", "http://127.0.0.1:3000"},
		{"bootstrap", Development, "http://[::1]:3000", "http://[::1]:3000"},
		{"bootstrap", Production, "https://occ.example.com/", "https://occ.example.com"},
		{"bootstrap", Production, "http://localhost:3000", "http://localhost:3000"},
		{"bootstrap", Production, "http://127.0.0.1:3000", "http://127.0.0.1:3000"},
		{"bootstrap", Production, "https://10.1.2.3", "https://10.1.2.3"},
	}
	for _, tc := range tests {
		t.Run(tc.loader+"/"+string(tc.mode)+"/"+tc.raw, func(t *testing.T) {
			t.Parallel()
			var got string
			if tc.loader == "api" {
				base := apiDev()
				if tc.mode == Production {
					base = apiProd()
				}
				a, err := LoadAPI(MapLookup(base.with(env{"OCC_AUTH_BASE_URL": tc.raw})))
				if err != nil {
					t.Fatal(err)
				}
				got = a.AuthBaseURL
			} else {
				base := bootDev()
				if tc.mode == Production {
					base = bootProd()
				}
				b, err := LoadBootstrap(MapLookup(base.with(env{"OCC_AUTH_BASE_URL": tc.raw})))
				if err != nil {
					t.Fatal(err)
				}
				got = b.AuthBaseURL
			}
			if got != tc.want {
				t.Fatalf("AuthBaseURL = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWorkerDefaults(t *testing.T) {
	t.Parallel()
	w, err := LoadWorker(MapLookup(workerDev()))
	if err != nil {
		t.Fatal(err)
	}
	want := Worker{
		Mode: Development, DatabaseURL: testDBURL,
		PollInterval: 250 * time.Millisecond, LeaseDuration: 5 * time.Second, MaxAttempts: 5,
		ConvergenceTimeout: 15 * time.Minute, DatabaseTimeout: time.Minute, Concurrency: 4,
	}
	if w != want {
		t.Fatalf("got  %+v\nwant %+v", rawWorker(w), rawWorker(want))
	}
}

type rawWorker Worker

func TestWorkerValues(t *testing.T) {
	t.Parallel()
	w, err := LoadWorker(MapLookup(workerProd().with(env{
		"OCC_WORKER_POLL_INTERVAL_MS": "100", "OCC_WORKER_LEASE_DURATION_MS": "030000", "OCC_WORKER_MAX_ATTEMPTS": "9",
		"OCC_WORKER_CONVERGENCE_TIMEOUT_MS": "1", "OCC_WORKER_DATABASE_TIMEOUT_MS": "9223372036854",
		"OCC_WORKER_CONCURRENCY": "256", "OCC_WORKER_READINESS_PATH": "/tmp/ready", "OCC_WORKER_LIVENESS_PATH": "/tmp/live",
		"OCC_DEVELOPMENT_CONFIGURATION_ROOT": "/c", "OCC_DEVELOPMENT_SECRET_ROOT": "/s",
		"OCC_METRICS_ENABLED": "true", "OCC_METRICS_HOST": "10.9.8.7", "OCC_METRICS_PORT": "3000",
	})))
	if err != nil {
		t.Fatal(err)
	}
	want := Worker{
		Mode: Production, DatabaseURL: testDBURL, ConfigPath: testConfig,
		PollInterval: 100 * time.Millisecond, LeaseDuration: 30 * time.Second, MaxAttempts: 9,
		ConvergenceTimeout: time.Millisecond, DatabaseTimeout: 9223372036854 * time.Millisecond, Concurrency: 256,
		ReadinessPath: "/tmp/ready", LivenessPath: "/tmp/live",
		DevelopmentConfigurationRoot: "/c", DevelopmentSecretRoot: "/s",
		Metrics: Metrics{Enabled: true, Host: "10.9.8.7", Port: 3000},
	}
	if w != want {
		t.Fatalf("got  %+v\nwant %+v", rawWorker(w), rawWorker(want))
	}
}

type rawBootstrap Bootstrap

func TestBootstrapDefaults(t *testing.T) {
	t.Parallel()
	b, err := LoadBootstrap(MapLookup(bootDev()))
	if err != nil {
		t.Fatal(err)
	}
	want := Bootstrap{
		Mode: Development, DatabaseURL: testDBURL,
		AuthSecret: "openclaw-development-auth-secret-minimum-32-bytes", AuthBaseURL: "http://127.0.0.1:3000",
		ServiceKeyFile: testKeyFile, AdminEmail: "admin@openclaw.local", DevPassword: "openclaw-development-password",
		InstallationName: "OpenClaw Local Development", Source: "development-installation-job",
	}
	if b != want {
		t.Fatalf("got  %+v\nwant %+v", rawBootstrap(b), rawBootstrap(want))
	}
}

func TestBootstrapValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  env
		want Bootstrap
	}{
		{"production", bootProd().with(env{
			"OCC_BOOTSTRAP_ADMIN_EMAIL": "  Ops@Example.COM\t",
			// Development-only variables are not read in production.
			"OPENCLAW_DEV_PASSWORD": "x", "OPENCLAW_DEV_EMAIL": "", "OPENCLAW_DEV_INSTALLATION_NAME": " ",
		}), Bootstrap{
			Mode: Production, DatabaseURL: testDBURL, AuthSecret: testSecret, AuthBaseURL: testProdBase,
			ServiceKeyFile: testKeyFile, PasswordFile: testPassFile, AdminEmail: "ops@example.com",
			InstallationName: "Acme Production", Source: "production-installation-job",
		}},
		{"development overrides", bootDev().with(env{
			"OPENCLAW_DEV_EMAIL": "Dev@Example.test", "OPENCLAW_DEV_PASSWORD": "twelve-chars",
			"OPENCLAW_DEV_INSTALLATION_NAME": "Ünïcode Dev ✓", "OCC_AUTH_BASE_URL": "http://localhost:3000",
			// Production-only variables are not read in development.
			"OCC_BOOTSTRAP_PASSWORD_FILE": "relative", "OCC_BOOTSTRAP_ADMIN_EMAIL": "", "OCC_BOOTSTRAP_INSTALLATION_NAME": "",
		}), Bootstrap{
			Mode: Development, DatabaseURL: testDBURL,
			AuthSecret: DevelopmentAuthSecret, AuthBaseURL: "http://localhost:3000",
			ServiceKeyFile: testKeyFile, AdminEmail: "dev@example.test", DevPassword: "twelve-chars",
			InstallationName: "Ünïcode Dev ✓", Source: SourceDevelopment,
		}},
		{"longest values", bootDev().with(env{
			"OPENCLAW_DEV_EMAIL":             strings.Repeat("a", 308) + "@example.com",
			"OPENCLAW_DEV_PASSWORD":          strings.Repeat("p", 128),
			"OPENCLAW_DEV_INSTALLATION_NAME": strings.Repeat("é", 200),
		}), Bootstrap{
			Mode: Development, DatabaseURL: testDBURL,
			AuthSecret: DevelopmentAuthSecret, AuthBaseURL: DevelopmentAuthBaseURL,
			ServiceKeyFile: testKeyFile, AdminEmail: strings.Repeat("a", 308) + "@example.com",
			DevPassword: strings.Repeat("p", 128), InstallationName: strings.Repeat("é", 200), Source: SourceDevelopment,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := LoadBootstrap(MapLookup(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if b != tc.want {
				t.Fatalf("got  %+v\nwant %+v", rawBootstrap(b), rawBootstrap(tc.want))
			}
		})
	}
}

func TestMigration(t *testing.T) {
	t.Parallel()
	m, err := LoadMigration(MapLookup(migration()))
	if err != nil {
		t.Fatal(err)
	}
	if m != (Migration{DatabaseURL: "postgresql://occ_migrator:pw@db.internal:5432/occ", AppRole: "occ_app"}) {
		t.Fatalf("%+v", rawMigration(m))
	}
	m, err = LoadMigration(MapLookup(migration().with(env{"OCC_DATABASE_APP_ROLE": "_" + strings.Repeat("r", 62), "NODE_ENV": "bogus"})))
	if err != nil {
		t.Fatal(err)
	}
	if m.AppRole != "_"+strings.Repeat("r", 62) {
		t.Fatal(m.AppRole)
	}
}

type rawMigration Migration

// recordingLookup records every variable name a loader asks for.
type recordingLookup struct {
	mu    sync.Mutex
	env   env
	names map[string]bool
}

func (r *recordingLookup) lookup(name string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names[name] = true
	v, ok := r.env[name]
	return v, ok
}

// TestVariablesMatchLoaders checks that Variables lists exactly the variables each loader reads,
// per process and mode.
func TestVariablesMatchLoaders(t *testing.T) {
	t.Parallel()
	metricsOn := env{"OCC_METRICS_ENABLED": "true", "OCC_METRICS_PORT": "9464"}
	tests := []struct {
		process Process
		mode    Mode
		env     env
		load    func(Lookup) error
	}{
		{ProcessMigrate, "", migration(), ldMigration.load},
		{ProcessBootstrap, Development, bootDev(), ldBootstrap.load},
		{ProcessBootstrap, Production, bootProd(), ldBootstrap.load},
		{ProcessAPI, Development, apiDev().with(metricsOn.with(env{"OCC_METRICS_HOST": "127.0.0.1"})), ldAPI.load},
		{ProcessAPI, Production, apiProd().with(metricsOn.with(env{"OCC_METRICS_HOST": "10.1.2.3"})), ldAPI.load},
		{ProcessWorker, Development, workerDev().with(metricsOn.with(env{"OCC_METRICS_HOST": "127.0.0.1"})), ldWorker.load},
		{ProcessWorker, Production, workerProd().with(metricsOn.with(env{"OCC_METRICS_HOST": "10.1.2.3"})), ldWorker.load},
	}
	for _, tc := range tests {
		t.Run(string(tc.process)+"/"+string(tc.mode), func(t *testing.T) {
			t.Parallel()
			rec := &recordingLookup{env: tc.env, names: map[string]bool{}}
			if err := tc.load(rec.lookup); err != nil {
				t.Fatal(err)
			}
			var read, documented []string
			for n := range rec.names {
				read = append(read, n)
			}
			for _, d := range Variables {
				if slices.Contains(d.Processes, tc.process) && (d.Modes == nil || slices.Contains(d.Modes, tc.mode)) {
					documented = append(documented, d.Name)
				}
			}
			sort.Strings(read)
			sort.Strings(documented)
			if !slices.Equal(read, documented) {
				t.Fatalf("loader reads\n  %v\nVariables documents\n  %v", read, documented)
			}
		})
	}
}

func TestVariablesWellFormed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	codes := []string{CodeConfigEnvInvalid, CodeDatabaseConfigurationInvalid, CodeAuthSecretInvalid, CodeAuthBaseURLInvalid, CodeInstallationNameInvalid}
	for _, d := range Variables {
		if seen[d.Name] {
			t.Errorf("%s documented twice", d.Name)
		}
		seen[d.Name] = true
		if len(d.Processes) == 0 || d.Rule == "" || !slices.Contains(codes, d.Code) {
			t.Errorf("%s: incomplete doc %+v", d.Name, d)
		}
		switch d.Requirement {
		case Optional, Required, RequiredInProduction, RequiredWithMetrics:
		default:
			t.Errorf("%s: unknown requirement %q", d.Name, d.Requirement)
		}
		if d.Requirement == Required && (d.Default != "" || d.DevelopmentDefault != "") {
			t.Errorf("%s: required variable with a default", d.Name)
		}
	}
}

// TestVariablesDefaults checks every documented default against what the loaders produce when the
// variable is unset.
func TestVariablesDefaults(t *testing.T) {
	t.Parallel()
	a, err := LoadAPI(MapLookup(apiDev()))
	if err != nil {
		t.Fatal(err)
	}
	w, err := LoadWorker(MapLookup(workerDev()))
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadBootstrap(MapLookup(bootDev()))
	if err != nil {
		t.Fatal(err)
	}
	m, err := LoadMigration(MapLookup(migration()))
	if err != nil {
		t.Fatal(err)
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	actual := map[string]string{
		"OCC_DATABASE_APP_ROLE":             m.AppRole,
		"OCC_DATABASE_POOL_MAX":             strconv.Itoa(a.DatabasePoolMax),
		"OCC_AUTH_SECRET":                   a.AuthSecret,
		"OCC_AUTH_BASE_URL":                 a.AuthBaseURL,
		"OCC_WORKER_POLL_INTERVAL_MS":       ms(w.PollInterval),
		"OCC_WORKER_LEASE_DURATION_MS":      ms(w.LeaseDuration),
		"OCC_WORKER_MAX_ATTEMPTS":           strconv.Itoa(w.MaxAttempts),
		"OCC_WORKER_CONVERGENCE_TIMEOUT_MS": ms(w.ConvergenceTimeout),
		"OCC_WORKER_DATABASE_TIMEOUT_MS":    ms(w.DatabaseTimeout),
		"OCC_WORKER_CONCURRENCY":            strconv.Itoa(w.Concurrency),
		"OCC_METRICS_ENABLED":               strconv.FormatBool(w.Metrics.Enabled),
		"OPENCLAW_DEV_EMAIL":                b.AdminEmail,
		"OPENCLAW_DEV_PASSWORD":             b.DevPassword,
		"OPENCLAW_DEV_INSTALLATION_NAME":    b.InstallationName,
	}
	for k, v := range signInDefaults(a.SignIn) {
		actual[k] = v
	}
	if b.AuthSecret != a.AuthSecret || b.AuthBaseURL != a.AuthBaseURL {
		t.Errorf("bootstrap and api development defaults differ")
	}
	documented := map[string]string{}
	for _, d := range Variables {
		switch {
		case d.Default != "" && d.DevelopmentDefault != "":
			t.Errorf("%s has both defaults", d.Name)
		case d.Default != "":
			documented[d.Name] = d.Default
		case d.DevelopmentDefault != "":
			documented[d.Name] = d.DevelopmentDefault
		}
	}
	if fmt.Sprint(documented) != fmt.Sprint(actual) {
		t.Fatalf("documented defaults\n  %v\nactual defaults\n  %v", documented, actual)
	}
}

func TestStringRedactsSecrets(t *testing.T) {
	t.Parallel()
	a, err := LoadAPI(MapLookup(apiProd()))
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadBootstrap(MapLookup(bootDev().with(env{"OPENCLAW_DEV_PASSWORD": "dev-password-sentinel"})))
	if err != nil {
		t.Fatal(err)
	}
	w, err := LoadWorker(MapLookup(workerDev()))
	if err != nil {
		t.Fatal(err)
	}
	m, err := LoadMigration(MapLookup(migration()))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{a, b, w, m, &a} {
		for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
			out := fmt.Sprintf(f, v)
			for _, secret := range []string{"app-password", "occ_migrator:pw", testSecret, DevelopmentAuthSecret, "dev-password-sentinel"} {
				if strings.Contains(out, secret) {
					t.Errorf("%s of %T leaks %q: %s", f, v, secret, out)
				}
			}
			if !strings.Contains(out, "[redacted]") {
				t.Errorf("%s of %T shows no redaction: %s", f, v, out)
			}
		}
	}
}

// The worker event log grows without bound: a verification aid, refused in production with a
// coded startup error and accepted in development.
func TestWorkerEventLogIsRefusedInProduction(t *testing.T) {
	t.Parallel()
	_, err := LoadWorker(MapLookup(workerProd().with(env{"OCC_WORKER_EVENT_LOG": "/tmp/events.jsonl"})))
	var se *problem.Error
	if !errors.As(err, &se) || se.Code != CodeConfigEnvInvalid || se.Details[0].Path != "/env/OCC_WORKER_EVENT_LOG" {
		t.Fatalf("got %v", err)
	}
	w, err := LoadWorker(MapLookup(workerDev().with(env{"OCC_WORKER_EVENT_LOG": "/tmp/events.jsonl"})))
	if err != nil || w.EventLogPath != "/tmp/events.jsonl" {
		t.Fatalf("development: %+v %v", w, err)
	}
}
