package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
	"gopkg.in/yaml.v3"
)

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
