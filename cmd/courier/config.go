package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
	"gopkg.in/yaml.v3"
)

// applyEnvAndFile sets every flag not given on the command line from the
// environment (COURIER_<NAME>, dashes as underscores), else from the config
// file (TOML, or YAML for .yaml/.yml), keys named like the flags.
func applyEnvAndFile(fs *flag.FlagSet, path string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	file, err := readConfigFile(path)
	if err != nil {
		return err
	}
	for key, v := range file {
		f := fs.Lookup(key)
		if f == nil || key == "config-file" {
			return fmt.Errorf("config file %s: unknown key %q", path, key)
		}
		if _, isList := v.([]any); isList && !repeatable(f) {
			return fmt.Errorf("config file %s: %s takes one value, not a list", path, key)
		}
	}
	var setErr error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || setErr != nil {
			return
		}
		env := "COURIER_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			for _, item := range splitList(f, v) {
				if err := fs.Set(f.Name, item); err != nil {
					setErr = fmt.Errorf("%s=%q: %w", env, v, err)
					return
				}
			}
			return
		}
		if v, ok := file[f.Name]; ok {
			for _, item := range fileValues(v) {
				if err := fs.Set(f.Name, item); err != nil {
					setErr = fmt.Errorf("config file %s: %s = %v: %w", path, f.Name, v, err)
					return
				}
			}
		}
	})
	return setErr
}

// splitList splits a repeatable flag's environment value at commas.
func splitList(f *flag.Flag, v string) []string {
	if repeatable(f) {
		return strings.Split(v, ",")
	}
	return []string{v}
}

func repeatable(f *flag.Flag) bool {
	switch f.Value.(type) {
	case *stringList, *uintList:
		return true
	}
	return false
}

func fileValues(v any) []string {
	if list, ok := v.([]any); ok {
		out := make([]string, len(list))
		for i, x := range list {
			out[i] = fmt.Sprint(x)
		}
		return out
	}
	return []string{fmt.Sprint(v)}
}

func readConfigFile(path string) (map[string]any, error) {
	out := map[string]any{}
	if path == "" {
		return out, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		err = yaml.Unmarshal(data, &out)
	default:
		err = toml.Unmarshal(data, &out)
	}
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return out, nil
}
