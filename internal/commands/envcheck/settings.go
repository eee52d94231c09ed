package envcheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/timelake/timelake/internal/config"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/tablename"
)

// From renders " from KEY (source)" for a detail.
func From(s config.Setting) string { return " from " + s.Describe() }

// MissingFix tells how to set a missing setting.
func MissingFix(flag, key, example string) string {
	return fmt.Sprintf("set %s=%s in the env file (or pass --%s); see docs/configuration.md", key, example, flag)
}

// notSet is the detail of a required setting that is not set: "not set",
// and each variable set under a misspelled name of one of spec's
// (settings.MissingError.NoteMisspelled): "not set; LANDING_BUCKT (env
// file) is set: did you mean LANDING_BUCKET?".
func (c *Checker) notSet(spec *settings.Spec) string {
	me := &settings.MissingError{Spec: spec}
	me.NoteMisspelled(c.opts.Settings.Unknown)
	d := "not set"
	for _, u := range me.Misspelled {
		d += fmt.Sprintf("; %s (%s) is set: did you mean %s?", u.Name, u.Source, u.Meant)
	}
	return d
}

// settings checks that each setting is present and well formed (no I/O but
// reading the AWS shared config files to build the S3 client).
func (c *Checker) settings(ctx context.Context) {
	s := c.opts.Settings

	// The warehouse side: not in the gateway binary, which checks the
	// landing side only.
	if c.opts.Lake != nil {
		c.warehouseSettings()
	}

	// Landing.
	switch loc, err := storage.ParseLocation(s.Landing.Value, true); {
	case s.Landing.Value == "":
		c.Fail(CheckLanding, c.notSet(&settings.Landing.Spec), MissingFix("landing", "LANDING_BUCKET", "my-lake-landing"))
	case err != nil:
		c.Fail(CheckLanding, fmt.Sprintf("%v%s", err, From(s.Landing)),
			"use a bucket name, s3://bucket/prefix, or a local folder such as ./landing")
	default:
		c.landing, c.landingOK = loc, true
		c.OK(CheckLanding, describeLocation(loc)+From(s.Landing))
		var kinds *settings.LocationKindsError
		if c.opts.Lake != nil && errors.As(settings.CheckLocationKinds(s.Warehouse, s.Landing), &kinds) {
			// The relative side would be used as a folder: fail its row.
			name := CheckWarehouse
			if kinds.LocalWhat == "landing" {
				name = CheckLanding
			} else {
				c.warehouseOK = false
			}
			for i := range c.rep.Checks {
				if ch := &c.rep.Checks[i]; ch.Name == name {
					ch.Result, ch.Detail, ch.Fix = Fail, kinds.Error(), kinds.FixHint()
				}
			}
			if name == CheckLanding {
				c.landingOK = false
			}
		}
		if c.warehouseOK && c.landingOK && contains(loc, c.warehouse) {
			last := &c.rep.Checks[len(c.rep.Checks)-1]
			last.Result, last.Fix = Fail, "use a separate landing bucket or folder, or landing and warehouse prefixes that do not contain each other"
			last.Detail += fmt.Sprintf("; the warehouse %s lies inside it, so ingest would take the lake's own files for landed files", c.warehouse)
		}
	}

	// Where upload writes: the gateway binary's probes go there.
	if c.opts.Lake == nil {
		c.uploadKeys()
	}

	// Every other value of the registry: numbers, durations, sizes, names.
	if len(s.Invalid) == 0 {
		c.OK(CheckSettings, fmt.Sprintf("%d other settings valid (docs/configuration.md)", s.Checked))
	} else {
		msgs := make([]string, len(s.Invalid))
		for i, err := range s.Invalid {
			msgs[i] = err.Error()
		}
		c.Fail(CheckSettings, strings.Join(msgs, "; "), "correct the values named, or remove them to use the defaults; see docs/configuration.md")
	}

	// TIMELAKE_* variables no setting reads, and AWS_* or LANDING_*
	// variables that misspell one a setting reads: a misspelling is
	// otherwise ignored, and the default used instead.
	if len(s.Unknown) == 0 {
		c.OK(CheckVariables, "every TIMELAKE_* variable is a setting, and no AWS_* or LANDING_* variable misspells one")
	} else {
		msgs := make([]string, len(s.Unknown))
		for i, u := range s.Unknown {
			msgs[i] = u.String()
		}
		c.Fail(CheckVariables, strings.Join(msgs, "; "),
			"rename each to the variable meant, or remove it; every variable is in docs/configuration.md (see its section Unknown variables)")
	}

	if c.opts.Lake != nil {
		c.restCatalog = c.opts.Lake.CatalogSettings(c)
	}

	c.s3Needed = (c.landingOK && c.landing.IsS3()) || (c.warehouseOK && c.warehouse.IsS3())
	if !c.s3Needed {
		reason := "not used: no S3 location"
		if c.landingOK && c.warehouseOK {
			reason = "not used: landing and warehouse are local folders"
		}
		for _, n := range []string{CheckEndpoint, CheckRegion, CheckCredentials} {
			c.Skip(n, reason)
		}
		c.s3Blocked = reason
		return
	}
	c.endpoint()
	c.region()
	c.credentials(ctx)
}

// warehouseSettings checks the warehouse and the table name.
func (c *Checker) warehouseSettings() {
	s := c.opts.Settings
	// Warehouse.
	switch loc, err := storage.ParseLocation(s.Warehouse.Value, false); {
	case s.Warehouse.Value == "":
		c.Fail(CheckWarehouse, c.notSet(&settings.Warehouse.Spec), MissingFix("warehouse", "TIMELAKE_WAREHOUSE", "s3://my-lake/warehouse"))
	case err != nil:
		c.Fail(CheckWarehouse, fmt.Sprintf("%v%s", err, From(s.Warehouse)),
			"use s3://bucket/prefix or a local folder such as ./lake")
	default:
		c.warehouse, c.warehouseOK = loc, true
		c.OK(CheckWarehouse, describeLocation(loc)+From(s.Warehouse))
	}

	// Table name, or the routes that name the tables.
	if s.Routes.Value != "" {
		c.routeSettings()
		return
	}
	switch n, err := tablename.Parse(s.Table.Value); {
	case s.Table.Value == "":
		c.Fail(CheckTableName, c.notSet(&settings.Table.Spec), MissingFix("table", "TIMELAKE_TABLE", "iot.readings"))
	case err != nil:
		c.Fail(CheckTableName, fmt.Sprintf("%v%s", err, From(s.Table)),
			"use namespace.table, each part letters, digits, _ or -, e.g. iot.readings")
	default:
		c.tableName, c.tableOK = n, true
		c.OK(CheckTableName, n.String()+From(s.Table))
	}
	c.OK(CheckRoutes, "none: every file loads into the table of "+settings.Table.Env[0]+" (docs/routing.md)")
}

// contains reports whether inner lies inside (or is) outer.
func contains(outer, inner storage.Location) bool {
	switch {
	case outer.IsS3() && inner.IsS3():
		return outer.Bucket == inner.Bucket && (outer.Prefix == "" || inner.Prefix == outer.Prefix ||
			strings.HasPrefix(inner.Prefix, outer.Prefix+"/"))
	case !outer.IsS3() && !inner.IsS3():
		return inner.Dir == outer.Dir || strings.HasPrefix(inner.Dir, strings.TrimSuffix(outer.Dir, string(filepath.Separator))+string(filepath.Separator))
	}
	return false
}

func describeLocation(l storage.Location) string {
	if l.IsS3() {
		return l.String()
	}
	return l.Dir + " (local folder)"
}

// endpoint checks the endpoint URL and names the variable it came from.
func (c *Checker) endpoint() {
	s := c.opts.Settings
	e := s.Endpoint
	c.tigris = storage.IsTigrisEndpoint(e.Value)
	if s.S3Err != nil {
		c.Fail(CheckEndpoint, s.S3Err.Error(), "see docs/configuration.md")
		c.s3Blocked = "S3 settings invalid"
		return
	}
	if e.Value == "" {
		c.OK(CheckEndpoint, "not set: AWS S3 (for Tigris set AWS_ENDPOINT_URL_S3=https://t3.storage.dev)")
		return
	}
	u, err := url.Parse(e.Value)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.Fail(CheckEndpoint, fmt.Sprintf("%q%s is not an http(s) URL", e.Value, From(e)),
			"use a URL such as https://t3.storage.dev (Tigris) or http://127.0.0.1:9000")
		c.s3Blocked = "endpoint invalid"
		return
	}
	detail := e.Value + From(e)
	if c.tigris {
		detail += " (Tigris)"
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		c.Warn(CheckEndpoint, detail+": plain HTTP, so data travels unencrypted",
			"use https:// unless the server is on a trusted network")
		return
	}
	c.OK(CheckEndpoint, detail)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// region checks the signing region (SigV4 signs it, so a wrong one is an
// authentication error on AWS; Tigris expects "auto").
func (c *Checker) region() {
	r := c.opts.Settings.Region
	switch {
	case r.Value == "" && c.tigris:
		c.OK(CheckRegion, "not set: auto (Tigris)")
	case r.Value == "":
		c.OK(CheckRegion, "not set: from the AWS config files, else us-east-1")
	case c.tigris && r.Value != "auto":
		c.Warn(CheckRegion, fmt.Sprintf("%s%s, but Tigris uses auto", r.Value, From(r)), "set AWS_REGION=auto")
	default:
		c.OK(CheckRegion, r.Value+From(r))
	}
}

// credentials names where the credentials come from and builds the client.
func (c *Checker) credentials(ctx context.Context) {
	cr := c.opts.Settings.Credentials
	var detail string
	switch cr.Kind {
	case CredStatic:
		if cr.Missing != "" {
			c.Fail(CheckCredentials, fmt.Sprintf("static keys from %s, but %s is not set", cr.From, cr.Missing),
				fmt.Sprintf("set both %s and %s in the env file", AccessKeyEnv, SecretKeyEnv))
			c.blockS3("credentials incomplete")
			return
		}
		detail = fmt.Sprintf("static keys from %s: key id %s, secret %s", cr.From,
			settings.MaskKeyID(cr.AccessKeyID), settings.MaskSecret(cr.SecretAccessKey))
		if cr.SessionToken != "" {
			detail += ", session token " + settings.MaskSecret(cr.SessionToken)
		}
	case CredProfile:
		detail = fmt.Sprintf("shared config profile %q from %s", cr.Profile, cr.From)
	default:
		detail = "default AWS chain (" + cr.From + "); no " + AccessKeyEnv + " or " + ProfileEnv + " set"
	}
	if c.s3Blocked != "" {
		c.OK(CheckCredentials, detail)
		return
	}
	cfg := c.opts.Settings.S3
	cfg.MaxAttempts = 1 // report what happens; ingest itself retries
	newClient := c.opts.NewS3Client
	if newClient == nil {
		newClient = storage.NewS3Client
	}
	client, err := newClient(ctx, cfg)
	if err != nil {
		c.Fail(CheckCredentials, fmt.Sprintf("%s: %v", detail, err), "check AWS_PROFILE and ~/.aws/config, or set the keys in the env file")
		c.blockS3("S3 client not built")
		return
	}
	c.client = client
	c.OK(CheckCredentials, detail)
}

func (c *Checker) blockS3(reason string) {
	if c.s3Blocked == "" {
		c.s3Blocked = reason
	}
}

// routeFix is the fix of rules of TIMELAKE_ROUTES that do not read.
const routeFix = "write each rule as PATTERN=TABLE, such as readings/**=iot.readings, or */**=iot.{1} to name the table from the key's first folder; several rules one per line or separated by commas; options after the table, ;NAME=VALUE with the name of an ingest flag (;partition=hour), a value with commas between braces (;series-key={device,site}) (docs/routing.md)"

// routeSettings checks TIMELAKE_ROUTES and lists each route with its
// table. The table setting must not be set with it: ingest refuses both.
func (c *Checker) routeSettings() {
	s := c.opts.Settings
	if s.Table.Value != "" {
		c.Fail(CheckTableName, fmt.Sprintf("%s%s and the routes of %s both name tables, which ingest refuses", s.Table.Value, From(s.Table), s.Routes.Describe()),
			fmt.Sprintf("remove %s (the routes name the tables), or %s (docs/routing.md)", s.Table.Describe(), s.Routes.Describe()))
	} else {
		c.OK(CheckTableName, "none: the routes of "+s.Routes.Describe()+" name the tables")
	}
	if s.RoutesErr != nil {
		c.Fail(CheckRoutes, s.RoutesErr.Error(), routeFix)
		return
	}
	var list []string
	for _, r := range s.RouteRules {
		if t, ok := r.Fixed(); ok {
			list = append(list, fmt.Sprintf("%s (table %s)", r, t))
		} else {
			list = append(list, fmt.Sprintf("%s (a table per key, named from its folders)", r))
		}
	}
	c.routes = s.RouteRules
	if t := c.Tables(); len(t) > 0 && s.Table.Value == "" {
		c.tableName, c.tableOK = t[0], true
	}
	c.OK(CheckRoutes, fmt.Sprintf("%s%s: %s", iostreams.Plural(int64(len(list)), "route"), From(s.Routes), strings.Join(list, "; ")))
}
