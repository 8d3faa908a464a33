// metricslint runs the two promtool checks Narad's tests need, with
// Prometheus's own code, without building promtool itself (whose cold build
// compiles about 1,300 packages; this one compiles about 300):
//
//	metricslint check metrics < exposition   like `promtool check metrics`
//	metricslint check rules FILE...          like `promtool check rules --lint-fatal`
//
// The output and exit codes are promtool's: one "<metric> <problem>" line on
// stderr per lint problem; "Checking FILE", then "  SUCCESS: N rules found"
// or "  FAILED:" and the errors. Exit 0 when clean, 1 when the input cannot
// be read or parsed (or a rule is invalid), 3 for lint problems.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// promtool's exit codes (cmd/promtool/main.go).
const (
	successExitCode = 0
	failureExitCode = 1
	lintErrExitCode = 3
)

const usage = `usage:
  metricslint check metrics < exposition
  metricslint check rules FILE...`

func main() {
	args := os.Args[1:]
	switch {
	case len(args) == 2 && args[0] == "check" && args[1] == "metrics":
		os.Exit(checkMetrics(os.Stdin, os.Stderr))
	case len(args) >= 3 && args[0] == "check" && args[1] == "rules":
		os.Exit(checkRules(args[2:], os.Stdout, os.Stderr))
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(failureExitCode)
	}
}

// checkMetrics lints a text exposition with promlint, the linter promtool
// uses, and prints each problem as promtool does.
func checkMetrics(in io.Reader, stderr io.Writer) int {
	problems, err := promlint.New(in).Lint()
	if err != nil {
		fmt.Fprintln(stderr, "error while linting:", err)
		return failureExitCode
	}
	for _, p := range problems {
		fmt.Fprintln(stderr, p.Metric, p.Text)
	}
	if len(problems) > 0 {
		return lintErrExitCode
	}
	return successExitCode
}

// checkRules parses each file as Prometheus does when it loads rules
// (rulefmt validates the YAML, the rule fields, each PromQL expression and
// the templates), then looks for duplicate rules as promtool's default lint.
func checkRules(files []string, stdout, stderr io.Writer) int {
	// promtool's defaults: UTF-8 metric and label names, no parser features.
	p := parser.NewParser(parser.Options{})
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	code := successExitCode
	for _, f := range files {
		fmt.Fprintln(stdout, "Checking", f)
		rgs, errs := rulefmt.ParseFile(f, false, model.UTF8Validation, p, logger)
		if len(errs) > 0 {
			fmt.Fprintln(stderr, "  FAILED:")
			for _, e := range errs {
				fmt.Fprintln(stderr, e.Error())
			}
			code = failureExitCode
			fmt.Fprintln(stdout)
			continue
		}
		if dups := duplicateRules(rgs.Groups); len(dups) > 0 {
			fmt.Fprintln(stderr, "  FAILED:")
			fmt.Fprintf(stderr, "%d duplicate rule(s) found.\n", len(dups))
			for _, d := range dups {
				fmt.Fprintln(stderr, d)
			}
			if code == successExitCode {
				code = lintErrExitCode
			}
			fmt.Fprintln(stdout)
			continue
		}
		n := 0
		for _, g := range rgs.Groups {
			n += len(g.Rules)
		}
		fmt.Fprintf(stdout, "  SUCCESS: %d rules found\n", n)
		fmt.Fprintln(stdout)
	}
	return code
}

// duplicateRules names the rules that share an alert or record name and
// their labels (the group's merged with the rule's, the rule's winning), the
// same test as promtool's duplicate-rules lint: two such rules write the
// same series.
func duplicateRules(groups []rulefmt.RuleGroup) []string {
	seen := map[string]int{}
	var keys []string
	for _, g := range groups {
		for _, r := range g.Rules {
			merged := map[string]string{}
			for k, v := range g.Labels {
				merged[k] = v
			}
			for k, v := range r.Labels {
				merged[k] = v
			}
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			key := "Metric: " + name + " Labels: " + labels.FromMap(merged).String()
			if seen[key] == 1 {
				keys = append(keys, key)
			}
			seen[key]++
		}
	}
	sort.Strings(keys)
	return keys
}
