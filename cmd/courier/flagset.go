package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/couriernet/courier/shard"
)

// kind is how a flag's text is parsed.
type kind int

const (
	kindString kind = iota
	kindBool        // true|false (also 1, t, TRUE, 0, f, FALSE); alone means true
	kindInt         // a decimal integer
	kindList        // repeatable; the environment and files may give a list
)

// flagDef is one row of the node's flag table (nodeFlags in flags.go).
//
// A row is implemented when apply is set: apply receives the flag's value
// (the default when the flag was not given) and sets it on the options.
// Otherwise the row is accepted but not implemented: refuse is the reason
// printed when the value asks for what courier does not do, and quiet says
// which values ask for nothing (nil: only the nwaku default). A row whose value
// matters only together with another, refused, row names that row in with
// and takes any value quietly.
type flagDef struct {
	name  string
	kind  kind
	usage string
	// nwaku is nwaku v0.38.1's default as text ("" for none; lists
	// comma-separated), checked against testdata/nwaku-v0.38.1-flags.txt.
	// courierOnly rows are not nwaku's and have no such line.
	nwaku       string
	courierOnly bool
	// def, when set, is courier's default where it differs from nwaku's on
	// purpose; the reason is in the row's comment and in the help text.
	def *string

	// bounds is the range of a kindInt row's values, that of nwaku's type
	// for the flag or a tighter rule of the node (every kindInt row of
	// nodeFlags has one; TestNodeFlagsIntRanges lists them). Set refuses a
	// number outside it as out of range, naming the range, so that apply
	// sees only values within it.
	bounds *intRange

	apply  func(o *nodeOptions, v flagVal) error
	refuse string
	quiet  func(v flagVal) bool
	with   string
}

// intRange is the range lo..hi, both included, of a kindInt row; unit,
// when set, follows it in errors ("seconds"). lo is signed and hi
// unsigned so that one range type covers nwaku's int (Nim's, 64 bits) and
// its uint and uint64 flags.
type intRange struct {
	lo   int64
	hi   uint64
	unit string
}

func (r intRange) String() string {
	s := fmt.Sprintf("%d..%d", r.lo, r.hi)
	if r.unit != "" {
		s += " " + r.unit
	}
	return s
}

// The ranges of nwaku's integer types (tools/confutils/cli_args.nim): a
// Nim int is 64 bits, a Port a uint16. The uint32 rows whose 0 the node
// does not take (a count or time that must be there) start at 1.
var (
	nimInt         = intRange{lo: math.MinInt64, hi: math.MaxInt64}
	nimUint16      = intRange{hi: math.MaxUint16}
	nimUint64      = intRange{hi: math.MaxUint64}
	portRange      = nimUint16
	positiveUint32 = intRange{lo: 1, hi: math.MaxUint32}
	secondsUint32  = intRange{lo: 1, hi: math.MaxUint32, unit: "seconds"}
	// nimUint32Seconds is a uint32 of seconds whose 0 means something.
	nimUint32Seconds = intRange{hi: math.MaxUint32, unit: "seconds"}
	shardRange       = intRange{hi: shard.MaxShardID}
)

// defaultText returns the text the flag takes when it is not given.
func (d *flagDef) defaultText() string {
	if d.def != nil {
		return *d.def
	}
	return d.nwaku
}

// flagVal is a flag's value as text: one element, or several for lists.
type flagVal struct {
	given bool // set on the command line, in the environment or in the file
	vals  []string
}

// str returns the last value ("" when none).
func (v flagVal) str() string {
	if len(v.vals) == 0 {
		return ""
	}
	return v.vals[len(v.vals)-1]
}

func (v flagVal) bool() bool {
	b, _ := strconv.ParseBool(v.str()) // checked by flagValue.Set
	return b
}

// int returns the value of a kindInt row whose range is within an int's.
func (v flagVal) int() int {
	i, _ := strconv.ParseInt(v.str(), 10, 64) // checked by flagValue.Set
	return int(i)
}

// uint returns the value of a kindInt row whose range is 0..something.
func (v flagVal) uint() uint64 {
	u, _ := strconv.ParseUint(strings.TrimPrefix(v.str(), "+"), 10, 64) // checked by flagValue.Set
	return u
}

// flagValue is the flag.Value of every row: it checks the text against the
// row's kind and keeps it.
type flagValue struct {
	def  *flagDef
	val  flagVal
	list bool
	// origin names where a value not from the command line came from, as
	// errors name it: `ENV="value"` or `config file PATH: key = value`;
	// "" for the command line and the default.
	origin string
	// bad, when set, receives the error of a failed Set: the flag package
	// reports it with the flag's name after one dash; parse reports it
	// after two, as courier's other messages name flags.
	bad *error
}

func (f *flagValue) String() string {
	if f == nil {
		return ""
	}
	return strings.Join(f.val.vals, ",")
}

func (f *flagValue) Set(s string) error {
	var err error
	switch f.def.kind {
	case kindBool:
		if _, e := strconv.ParseBool(s); e != nil {
			err = fmt.Errorf("%q is not true or false", s)
		}
	case kindInt:
		err = checkInt(s, f.def.bounds)
	}
	if err != nil {
		if f.bad != nil {
			*f.bad = fmt.Errorf("--%s=%s: %w", f.def.name, s, err)
		}
		return err
	}
	if f.def.kind == kindList && f.val.given {
		f.val.vals = append(f.val.vals, s)
	} else {
		f.val = flagVal{given: true, vals: []string{s}}
	}
	return nil
}

// checkInt checks the text of a kindInt row: a decimal integer within
// bounds (nimInt when nil). A number too large for any integer is out of
// range too, not "not a number", and the message gives the range either
// way.
func checkInt(s string, bounds *intRange) error {
	r := nimInt
	if bounds != nil {
		r = *bounds
	}
	var in bool
	var err error
	if strings.HasPrefix(s, "-") {
		var n int64
		n, err = strconv.ParseInt(s, 10, 64)
		in = n >= r.lo
	} else {
		var u uint64
		u, err = strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, 64)
		in = u <= r.hi && (r.lo <= 0 || u >= uint64(r.lo))
	}
	switch {
	case errors.Is(err, strconv.ErrRange) || err == nil && !in:
		return fmt.Errorf("%q is out of range: want %s", s, r)
	case err != nil:
		return fmt.Errorf("%q is not a number", s)
	}
	return nil
}

func (f *flagValue) IsBoolFlag() bool { return f.def.kind == kindBool }

// refusedError is a flag whose value asks for something courier does not
// do. main prints it as one line and exits 1, as for every error. origin,
// when set, names the environment variable or config file key the value
// came from (flagValue.origin) in place of --flag=value.
type refusedError struct{ flag, value, reason, origin string }

func (e *refusedError) Error() string {
	switch {
	case e.origin != "":
		return e.origin + ": " + e.reason
	case e.flag == "":
		return e.value + ": " + e.reason
	}
	return fmt.Sprintf("--%s=%s: %s", e.flag, e.value, e.reason)
}

// describe names a row's value in errors as the value's source does: the
// environment variable or config file key it came from, else
// --name=value (vals: the value, or the default when not given).
func (f *flagValue) describe(vals []string) string {
	if f.origin != "" {
		return f.origin
	}
	return fmt.Sprintf("--%s=%s", f.def.name, strings.Join(vals, ","))
}

// usageError is a command line that cannot be parsed, or a value the
// configuration refuses; main exits 1, as for every error.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// parsedFlags holds the values of one parse of the table.
type parsedFlags struct {
	fs     *flag.FlagSet
	values map[string]*flagValue
	badSet error // the failed Set of the command line, if any
}

// newFlagSet registers every row of defs on a new flag set.
func newFlagSet(name string, defs []flagDef) *parsedFlags {
	p := &parsedFlags{fs: flag.NewFlagSet(name, flag.ContinueOnError), values: map[string]*flagValue{}}
	p.fs.SetOutput(io.Discard)
	for i := range defs {
		d := &defs[i]
		v := &flagValue{def: d, bad: &p.badSet}
		p.values[d.name] = v
		usage := d.usage
		switch {
		case d.with != "":
			usage += " [only with --" + d.with + "]"
		case d.apply == nil:
			usage += " [" + d.refuse + "]"
		}
		p.fs.Var(v, d.name, usage)
		p.fs.Lookup(d.name).DefValue = d.defaultText()
	}
	return p
}

// parse reads the command line. nwaku's `--name:value` form is taken as
// `--name=value`. An unknown flag is a usageError that names it.
func (p *parsedFlags) parse(args []string) error {
	args = colonForms(args, p.fs)
	if err := p.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		if p.badSet != nil {
			return &usageError{p.badSet}
		}
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
			msg = fmt.Sprintf("unknown flag --%s (neither an nwaku v0.38.1 flag nor courier's; see --help)", strings.TrimPrefix(name, "-"))
		} else if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
			msg = fmt.Sprintf("flag needs an argument: --%s", strings.TrimPrefix(name, "-"))
		}
		return &usageError{errors.New(msg)}
	}
	if p.fs.NArg() > 0 {
		return &usageError{fmt.Errorf("unexpected argument %q", p.fs.Arg(0))}
	}
	return nil
}

// colonForms rewrites `--name:value` into `--name=value` where name is a
// flag of fs (confutils, which nwaku uses, takes both separators).
func colonForms(args []string, fs *flag.FlagSet) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		body := strings.TrimLeft(a, "-")
		if body == a || strings.Contains(strings.SplitN(body, ":", 2)[0], "=") {
			continue
		}
		if name, val, ok := strings.Cut(body, ":"); ok && fs.Lookup(name) != nil {
			out[i] = "--" + name + "=" + val
		}
	}
	return out
}

// envPrefixes are the environment variable prefixes, strongest first: a
// COURIER_ variable wins over its WAKUNODE2_ twin (nwaku's confutils reads
// WAKUNODE2_<FLAG>, tools/confutils/cli_args.nim load).
var envPrefixes = []string{"COURIER_", "WAKUNODE2_"}

// applyEnvAndFile sets every flag not given on the command line from the
// environment (COURIER_<NAME> or WAKUNODE2_<NAME>, dashes as underscores),
// else from the config file (TOML, or YAML for .yaml/.yml), keys named like
// the flags.
func (p *parsedFlags) applyEnvAndFile(path string) error {
	given := map[string]bool{}
	p.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	file, err := readConfigFile(path)
	if err != nil {
		return err
	}
	for key, v := range file {
		fv := p.values[key]
		if fv == nil || key == "config-file" {
			return &usageError{fmt.Errorf("config file %s: unknown key %q", path, key)}
		}
		if _, isList := v.([]any); isList && fv.def.kind != kindList {
			return &usageError{fmt.Errorf("config file %s: %s takes one value, not a list", path, key)}
		}
	}
	for name, fv := range p.values {
		if given[name] {
			continue
		}
		if env, v, ok := lookupEnv(name); ok {
			fv.origin = fmt.Sprintf("%s=%q", env, v)
			items, err := envItems(fv.def, v)
			if err != nil {
				return &usageError{fmt.Errorf("%s: %w", fv.origin, err)}
			}
			for _, item := range items {
				if err := fv.Set(item); err != nil {
					return &usageError{fmt.Errorf("%s: %w", fv.origin, err)}
				}
			}
			continue
		}
		if v, ok := file[name]; ok {
			fv.origin = fmt.Sprintf("config file %s: %s = %v", path, name, v)
			for _, item := range fileValues(v) {
				if err := fv.Set(item); err != nil {
					return &usageError{fmt.Errorf("%s: %w", fv.origin, err)}
				}
			}
		}
	}
	return nil
}

func lookupEnv(flagName string) (name, value string, ok bool) {
	suffix := strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
	for _, prefix := range envPrefixes {
		if v, ok := os.LookupEnv(prefix + suffix); ok {
			return prefix + suffix, v, true
		}
	}
	return "", "", false
}

// envItems splits a list flag's environment value: a JSON array
// (`["a","b"]`, as nwaku's parser of sequences takes) or a comma-separated
// list. Other flags take the value whole.
func envItems(d *flagDef, v string) ([]string, error) {
	if d.kind != kindList {
		return []string{v}, nil
	}
	if strings.HasPrefix(strings.TrimSpace(v), "[") {
		var raw []any
		if err := json.Unmarshal([]byte(v), &raw); err != nil {
			return nil, fmt.Errorf("not a JSON array: %w", err)
		}
		return fileValues(raw), nil
	}
	return strings.Split(v, ","), nil
}

// splitDefault splits a row's default text into values.
func splitDefault(d *flagDef) []string {
	t := d.defaultText()
	if t == "" {
		return nil
	}
	if d.kind == kindList {
		return strings.Split(t, ",")
	}
	return []string{t}
}

// resolve applies every row to o, in table order: implemented rows get
// their value or default; other rows are checked, and the first one given
// a value that is not quiet is returned as a *refusedError.
func (p *parsedFlags) resolve(defs []flagDef, o *nodeOptions) error {
	for i := range defs {
		d := &defs[i]
		fv := p.values[d.name]
		v := fv.val
		if !v.given {
			v.vals = splitDefault(d)
		}
		if d.apply != nil {
			var refused *refusedError
			if err := d.apply(o, v); errors.As(err, &refused) {
				if refused.flag == d.name {
					refused.origin = fv.origin
				}
				return err
			} else if err != nil {
				return &usageError{fmt.Errorf("%s: %w", fv.describe(v.vals), err)}
			}
			continue
		}
		if !v.given || isQuiet(d, v) {
			continue
		}
		return &refusedError{flag: d.name, value: strings.Join(v.vals, ","), reason: d.refuse, origin: fv.origin}
	}
	return nil
}

func isQuiet(d *flagDef, v flagVal) bool {
	if d.with != "" {
		return true
	}
	if d.quiet != nil {
		return d.quiet(v)
	}
	return sameText(d, strings.Join(v.vals, ","), d.nwaku)
}

// sameText compares a value with a default, as booleans for bool rows.
func sameText(d *flagDef, a, b string) bool {
	if d.kind == kindBool {
		x, err1 := strconv.ParseBool(a)
		y, err2 := strconv.ParseBool(b)
		return err1 == nil && err2 == nil && x == y
	}
	return a == b
}

// Helpers for quiet.

// whenFalse: only false asks for nothing (a feature switch).
func whenFalse(v flagVal) bool { return !v.bool() }

// whenEmpty: only an empty value asks for nothing.
func whenEmpty(v flagVal) bool { return strings.Join(v.vals, "") == "" }

// oneOf returns a quiet that accepts the listed values.
func oneOf(values ...string) func(flagVal) bool {
	return func(v flagVal) bool {
		for _, x := range values {
			if strings.EqualFold(v.str(), x) {
				return true
			}
		}
		return false
	}
}

func strPtr(s string) *string { return &s }
